//! The Node service on the local controller's socket: launchers attach jobs.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio_stream::Stream;
use tonic::{Code, Request, Response, Status};

use super::{Caller, Shared, refusal};
use crate::proto::node_server::Node;
use crate::proto::{AttachEvent, AttachRequest};
use crate::transport::peer_cred;

/// Attaches jobs for launchers that reach the local controller's UNIX socket.
pub struct NodeService {
    local: Shared,
}

impl NodeService {
    /// The service over `local`.
    pub fn new(local: Shared) -> Self {
        NodeService { local }
    }
}

/// The stream a launcher holds: the segment's path, then nothing until the launcher
/// goes; dropping it (the connection closed) detaches the launcher.
pub struct Attached {
    first: Option<AttachEvent>,
    local: Shared,
    job: String,
    pid: u32,
}

impl Stream for Attached {
    type Item = Result<AttachEvent, Status>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.first.take() {
            Some(event) => Poll::Ready(Some(Ok(event))),
            // Held open: the connection's end drops the stream.
            None => Poll::Pending,
        }
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        if let Ok(mut local) = self.local.lock() {
            local.detach(&self.job, self.pid);
        }
    }
}

#[tonic::async_trait]
impl Node for NodeService {
    type AttachStream = Attached;

    async fn attach(
        &self,
        request: Request<AttachRequest>,
    ) -> Result<Response<Self::AttachStream>, Status> {
        let peer = peer_cred(&request);
        let mut req = request.into_inner();
        // What the log shows of the id before it is checked: printable, and short.
        let shown: String = req
            .job
            .chars()
            .filter(|c| !c.is_control())
            .take(64)
            .collect();
        let Some(peer) = peer else {
            let why = "jobs are attached over the local UNIX socket only".to_owned();
            return Err(refusal(&shown, None, Code::PermissionDenied, why));
        };
        let caller = Caller {
            uid: peer.uid,
            pid: peer.pid.unwrap_or(0),
        };
        if req.job.is_empty() || req.job.len() > 256 || req.job.chars().any(char::is_control) {
            let why = "job: an id of 1 to 256 printable characters".to_owned();
            return Err(refusal(&shown, Some(caller), Code::InvalidArgument, why));
        }
        let uid = if peer.uid == 0 { req.uid } else { peer.uid };
        if peer.uid != 0 && req.uid != peer.uid {
            let why = format!(
                "uid {} may attach only its own jobs, not one of uid {}",
                peer.uid, req.uid
            );
            return Err(refusal(&req.job, Some(caller), Code::PermissionDenied, why));
        }
        let gid = if uid == peer.uid {
            peer.gid
        } else {
            crate::identity::primary_gid(uid).unwrap_or(uid)
        };
        // A tree's user level shares by this name: only root (the Slurm plugin, a
        // prolog) may say it; anyone else's job is its uid's.
        if req.user.is_empty() || peer.uid != 0 {
            req.user = crate::identity::user_name(uid).unwrap_or_else(|| uid.to_string());
        }
        let (job, path) = self
            .local
            .lock()
            .map_err(|_| Status::internal("local controller state poisoned"))?
            .attach(&req, caller, uid, gid)?;
        Ok(Response::new(Attached {
            first: Some(AttachEvent {
                segment: path.display().to_string(),
            }),
            local: self.local.clone(),
            job,
            pid: caller.pid,
        }))
    }
}
