//! `sluice run` attached to the node's local controller: the job's segment comes from the
//! controller, shared by every launcher of the job on the node, and the connection held
//! open for as long as the command runs is the controller's sign that the job is alive.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use sluice_control::proto::node_client::NodeClient;
use sluice_control::proto::{AttachEvent, AttachRequest};
use sluice_control::transport::{ConnectOptions, Endpoint, connect};
use tokio_stream::StreamExt;

use crate::client::refused;

/// A launcher's attachment: dropping it closes the connection, which detaches it.
pub struct Attachment {
    /// The job's segment.
    pub segment: PathBuf,
    _events: tonic::Streaming<AttachEvent>,
    _runtime: tokio::runtime::Runtime,
}

/// Attaches to the local controller at `socket`. `Ok(None)` when no controller listens
/// there (the launcher then runs standalone); an error when one does and refuses.
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
        let mut events = client.attach(request).await.map_err(refused)?.into_inner();
        match events.next().await {
            Some(Ok(event)) => Ok(Some((event, events))),
            Some(Err(status)) => Err(refused(status)),
            None => anyhow::bail!("the local controller closed the attachment"),
        }
    });
    match attached? {
        Some((event, events)) => Ok(Some(Attachment {
            segment: PathBuf::from(event.segment),
            _events: events,
            _runtime: runtime,
        })),
        None => {
            eprintln!(
                "sluice: no local controller answers on {}; running standalone",
                socket.display()
            );
            Ok(None)
        }
    }
}
