//! A launcher's side of attaching a job to the node's local controller (`sluice run`, the
//! Slurm plugin): the job's segment comes from the controller, shared by every launcher of
//! the job on the node, and the connection held open for as long as the launcher's
//! processes run is the controller's sign that the job is alive.
//!
//! The launcher waits for the controller no longer than its deadline: a stopped or
//! overloaded controller never holds a job back ([`Attach::Unanswered`]), and what to do
//! then is the site's choice ([`Unreachable`]).

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sluice_core::error::Chain;
use tokio_stream::StreamExt;

/// What a controller that refuses an attachment answers.
pub use tonic::Status;

use crate::proto::node_client::NodeClient;
use crate::proto::{AttachEvent, AttachRequest};
use crate::segment_file::SegmentFile;
use crate::transport::{CallError, ConnectOptions, Endpoint, connect, within};

/// A launcher's attachment: dropping it closes the connection, which detaches it.
pub struct Attachment {
    /// The job's segment.
    pub segment: PathBuf,
    _events: tonic::Streaming<AttachEvent>,
    // A runtime of one thread, never driven after the attachment: it owns the connection
    // and starts no thread of its own, so it may live inside a host process (slurmstepd).
    _runtime: tokio::runtime::Runtime,
}

/// What a launcher that hands the stage to processes it does not wait for (the plugin in
/// slurmstepd, `sluice attach`) holds while they run: the job's attachment, or, past a
/// silent controller, a segment of the job's own, removed when dropped.
pub enum Held {
    /// The job's attachment to the local controller.
    Attached(Box<Attachment>),
    /// A segment of the job's own, under its own rules only.
    Alone(SegmentFile),
}

impl Held {
    /// The segment the processes map (their `SLUICE_SEGMENT`).
    pub fn segment(&self) -> &Path {
        match self {
            Held::Attached(a) => &a.segment,
            Held::Alone(s) => s.path(),
        }
    }
}

/// How an attempt to attach ended, short of a refusal.
pub enum Attach {
    /// The controller attached the job.
    Attached(Box<Attachment>),
    /// No controller on this node: its socket is not there.
    Absent,
    /// A socket is there but nothing answered within the deadline (a stopped, hung or
    /// dead controller); the text says what happened, in one line.
    Unanswered(String),
}

/// What a launcher does when the node's controller does not answer: the site's setting
/// (`sluice run --unreachable`, the plugin's `unreachable=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Unreachable {
    /// Start the job standalone, held to its own rules only (the default: a broken
    /// controller never stops the cluster's work).
    #[default]
    Standalone,
    /// Refuse to start the job.
    Refuse,
}

impl FromStr for Unreachable {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "standalone" => Ok(Unreachable::Standalone),
            "refuse" => Ok(Unreachable::Refuse),
            _ => Err(format!("'{text}': expected standalone or refuse")),
        }
    }
}

/// Attaches to the local controller at `socket`, waiting at most `deadline` for the
/// connection and the controller's answer together. `Err` is the controller's refusal
/// (the job or its rules are not acceptable); a broken connection or a controller that
/// fails within itself is [`Attach::Unanswered`].
pub fn attach(socket: &Path, request: AttachRequest, deadline: Duration) -> Result<Attach, Status> {
    if !socket.exists() {
        return Ok(Attach::Absent);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return Ok(Attach::Unanswered(format!("cannot start a runtime: {e}"))),
    };
    let endpoint = Endpoint::Unix(socket.to_owned());
    let options = ConnectOptions {
        connect_timeout: deadline,
        ..ConnectOptions::default()
    };
    let answer = runtime.block_on(within(&endpoint, deadline, async {
        let channel = connect(&endpoint, &options).await?;
        let mut events = NodeClient::new(channel).attach(request).await?.into_inner();
        match events.next().await {
            Some(Ok(event)) => Ok((event, events)),
            Some(Err(status)) => Err(status.into()),
            None => Err(CallError::Closed {
                endpoint: endpoint.to_string(),
                what: "attachment",
            }),
        }
    }));
    match answer {
        Ok((event, events)) => Ok(Attach::Attached(Box::new(Attachment {
            segment: PathBuf::from(event.segment),
            _events: events,
            _runtime: runtime,
        }))),
        Err(CallError::Status(status)) if is_refusal(&status) => Err(status),
        Err(CallError::Status(status)) => Ok(Attach::Unanswered(format!(
            "the local controller at {endpoint} failed: {}",
            status.message()
        ))),
        Err(CallError::NoAnswer(late)) => Ok(Attach::Unanswered(format!(
            "the local controller at {late}"
        ))),
        Err(e) => Ok(Attach::Unanswered(format!(
            "the local controller does not answer: {}",
            Chain(&e)
        ))),
    }
}

/// Whether the controller said no to the job itself, as opposed to failing to answer.
fn is_refusal(status: &Status) -> bool {
    matches!(
        status.code(),
        tonic::Code::PermissionDenied | tonic::Code::InvalidArgument
    )
}

/// The report of `job` once it ended on every node, asked of the local controller at
/// `socket` by a launcher that has just let the job go (the Slurm plugin, as a step's last
/// task exits). Each call waits at most `deadline`; the question is asked again while the
/// local has yet to see the job end (it reaps a job at its next interval), for at most
/// `wait`. `Ok(None)`: the job runs on (another step or node holds it, as seen two cycles
/// after the first question), or it has no report and is not attached (it never was).
pub fn ended_report(
    socket: &Path,
    job: &str,
    deadline: Duration,
    wait: Duration,
) -> Result<Option<crate::proto::JobSummary>, String> {
    use crate::proto::admin_client::AdminClient;
    use crate::proto::{Empty, NameRequest};
    if !socket.exists() {
        return Ok(None);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    let endpoint = Endpoint::Unix(socket.to_owned());
    let options = ConnectOptions {
        connect_timeout: deadline,
        ..ConnectOptions::default()
    };
    let start = std::time::Instant::now();
    let mut first_cycle = None;
    runtime.block_on(async {
        loop {
            let asked = within(&endpoint, deadline, async {
                let mut admin = AdminClient::new(connect(&endpoint, &options).await?);
                // The cycle first: a view of a later cycle saw what was asked before it.
                let cycle = admin.status(Empty {}).await?.into_inner().cycle;
                let name = NameRequest {
                    name: job.to_owned(),
                };
                let report = match admin.summary(name).await {
                    Ok(r) => Some(r.into_inner()),
                    Err(s) if s.code() == tonic::Code::NotFound => None,
                    Err(s) => return Err(s.into()),
                };
                let jobs = admin.jobs(Empty {}).await?.into_inner().jobs;
                Ok((cycle, report, jobs.iter().any(|j| j.job == job)))
            })
            .await;
            let (cycle, report, listed) = asked.map_err(|e: CallError| Chain(&e).to_string())?;
            let first = *first_cycle.get_or_insert(cycle);
            // Two cycles on, the local has reaped what it was going to.
            let settled = cycle >= first + 2;
            match (report, listed) {
                (Some(r), _) if !r.running => return Ok(Some(r)),
                _ if settled || start.elapsed() >= wait => return Ok(None),
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    })
}
