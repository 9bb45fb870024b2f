//! A launcher's side of attaching a job to the node's local controller (`sluice run`, the
//! Slurm plugin): the job's segment comes from the controller, shared by every launcher of
//! the job on the node, and the connection held open for as long as the launcher's
//! processes run is the controller's sign that the job is alive.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use tokio_stream::StreamExt;

/// What a controller that refuses an attachment answers (the source of [`attach`]'s error).
pub use tonic::Status;

use crate::proto::node_client::NodeClient;
use crate::proto::{AttachEvent, AttachRequest};
use crate::transport::{ConnectOptions, Endpoint, connect};

/// A launcher's attachment: dropping it closes the connection, which detaches it.
pub struct Attachment {
    /// The job's segment.
    pub segment: PathBuf,
    _events: tonic::Streaming<AttachEvent>,
    // A runtime of one thread, never driven after the attachment: it owns the connection
    // and starts no thread of its own, so it may live inside a host process (slurmstepd).
    _runtime: tokio::runtime::Runtime,
}

/// Attaches to the local controller at `socket`. `Ok(None)` when no controller listens
/// there (the launcher then runs standalone); an error when one does and refuses, whose
/// source is the controller's [`tonic::Status`].
pub fn attach(socket: &Path, request: AttachRequest) -> Result<Option<Attachment>> {
    if !socket.exists() {
        return Ok(None);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let endpoint = Endpoint::Unix(socket.to_owned());
    let options = ConnectOptions {
        connect_timeout: Duration::from_secs(2),
        ..ConnectOptions::default()
    };
    let attached = runtime.block_on(async {
        let Ok(channel) = connect(&endpoint, &options).await else {
            return Ok(None);
        };
        let mut client = NodeClient::new(channel);
        let mut events = client.attach(request).await?.into_inner();
        match events.next().await {
            Some(Ok(event)) => Ok(Some((event, events))),
            Some(Err(status)) => Err(anyhow::Error::from(status)),
            None => anyhow::bail!("the local controller closed the attachment"),
        }
    })?;
    Ok(attached.map(|(event, events)| Attachment {
        segment: PathBuf::from(event.segment),
        _events: events,
        _runtime: runtime,
    }))
}
