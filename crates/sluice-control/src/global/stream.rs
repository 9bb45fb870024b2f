//! One local's stream: its hello, its reports recorded for the cycle thread, its end.
//! What a stream does wrong is a [`Refused`]; it becomes a gRPC status here, at the edge,
//! and nowhere else.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use sluice_core::segment::{LATENCY_BUCKETS, Latency};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::cluster::{NodeJob, with_job_names};
use crate::link_auth::{Admission, refuse};
use crate::proto::control_server::Control;
use crate::proto::{self, GlobalMessage, LocalMessage, local_message};

use super::sessions::{Event, Outbox, Session};
use super::{BATCH, Global};

/// Messages queued to one local before it counts as too slow (it is then sent every rate
/// afresh once it drains).
const QUEUE: usize = 64;
/// How long a new stream may take to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a stream is ended by the global.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The first message was not a hello with a usable node name.
    #[error("expected Hello with a node name first")]
    NoHello,
    /// The local speaks another version of the protocol.
    #[error("protocol version {0} not spoken here (1 is)")]
    Version(u32),
    /// A message other than a report after the hello.
    #[error("expected a Report")]
    NotAReport,
    /// A report's interval is not a finite number ≥ 0.
    #[error("report: interval_s must be a finite number ≥ 0")]
    Interval,
    /// A report's latency histogram has more buckets than a segment keeps.
    #[error("report: a latency histogram has at most {LATENCY_BUCKETS} buckets")]
    Buckets,
    /// A report on a stream its node replaced since: its figures are stale.
    #[error("node {0} connected again on a newer stream; this one is closed")]
    Stale(String),
    /// The node connected again, from `from`: its older stream is ended.
    #[error("node {node} connected again on a newer stream from {from}")]
    Replaced {
        /// The node's name.
        node: String,
        /// Where the newer stream comes from.
        from: String,
    },
}

impl From<Refused> for Status {
    fn from(r: Refused) -> Status {
        let message = r.to_string();
        match r {
            Refused::NoHello | Refused::NotAReport | Refused::Interval | Refused::Buckets => {
                Status::invalid_argument(message)
            }
            Refused::Version(_) => Status::failed_precondition(message),
            Refused::Stale(_) | Refused::Replaced { .. } => Status::aborted(message),
        }
    }
}

impl Global {
    pub(super) fn report(&self, node: &str, id: u64, report: proto::Report) -> Result<(), Refused> {
        if !(report.interval_s.is_finite() && report.interval_s >= 0.0) {
            return Err(Refused::Interval);
        }
        let jobs = report
            .jobs
            .into_iter()
            .map(|j| {
                with_job_names!(NodeJob {
                    pools: j.pools.into_iter().map(|(k, c)| (k, c.into())).collect(),
                    segment: j.segment.as_ref().map(Into::into),
                    outside: bounded_outside(j.outside),
                } from j)
            })
            .collect();
        let latency = report
            .latency
            .into_iter()
            .map(|(pool, h)| Ok((pool, latency_of(h)?)))
            .collect::<Result<_, Refused>>()?;
        let mut sessions = self.sessions();
        if !sessions.is_live(node, id) {
            // Its node connected again on a newer stream: this one's figures are stale.
            return Err(Refused::Stale(node.to_owned()));
        }
        let said = sessions.local_cycle(report.cycle, report.interval_s);
        let now = self.clock.cycle_at(sessions.unit).0;
        let cycle = sessions.counted(said, now);
        if cycle < said
            && let Some(s) = sessions
                .live
                .get_mut(node)
                .filter(|s| s.id == id && !s.told_ahead)
        {
            s.told_ahead = true;
            tracing::warn!(
                %node,
                "reports cycle {said}, {} intervals ahead of this global's clock: counted as \
                 {cycle} (is its clock right, or this one's?)",
                said.saturating_sub(now)
            );
        }
        sessions.events.push(Event::Report {
            node: node.to_owned(),
            cycle,
            full: report.full,
            jobs,
            ended: report.ended,
            latency,
            finished: report.finished,
        });
        sessions.reported(node, id, cycle);
        if sessions.close_if_complete() || sessions.events.len() >= BATCH {
            self.wake(&mut sessions);
        }
        Ok(())
    }

    pub(super) async fn serve(
        self: Arc<Self>,
        mut inbound: Streaming<LocalMessage>,
        tx: Outbox,
        peer: Option<IpAddr>,
    ) {
        let hello = match tokio::time::timeout(HELLO_TIMEOUT, inbound.message()).await {
            Ok(Ok(Some(LocalMessage {
                body: Some(local_message::Body::Hello(h)),
            }))) if !h.node.is_empty() && h.node.len() <= 256 => h,
            _ => {
                let _ = tx.send(Err(Refused::NoHello.into())).await;
                return;
            }
        };
        if hello.version != 1 {
            let _ = tx.send(Err(Refused::Version(hello.version).into())).await;
            return;
        }
        let id = self.next_session.fetch_add(1, Ordering::Relaxed);
        let (node, replaced) = {
            let mut sessions = self.sessions();
            let node = sessions.name_for(&hello.node, peer);
            sessions.events.push(Event::Connected(node.clone()));
            let reported = sessions.computed;
            let session = Session {
                id,
                tx: tx.clone(),
                peer,
                reported,
                told_ahead: false,
                policy: None,
            };
            let replaced = sessions.insert(node.clone(), session);
            self.wake(&mut sessions);
            (node, replaced)
        };
        // Once live, not before: a change made meanwhile would have missed it. Rates
        // computed before it has the policy wait for it (see `push`).
        self.broadcast_policy();
        let from = peer.map_or_else(|| "an unknown address".to_owned(), |ip| ip.to_string());
        if node != hello.node {
            tracing::warn!(
                %node,
                "a second local controller calls itself {} (from {from}, while one from \
                 another address is connected): counted as node {node}; give each local \
                 controller its own --node (the default is the host name)",
                hello.node
            );
        }
        // A node that reconnects replaces its older stream, which is ended rather than
        // left open unfed: that local then connects again too, and has the policy.
        if let Some(old) = replaced {
            let why = Refused::Replaced {
                node: node.clone(),
                from: from.clone(),
            };
            tracing::warn!(%node, "{why}: its older stream is closed");
            let _ = old.tx.try_send(Err(why.into()));
        }
        tracing::info!(%node, "local controller connected from {from}");
        let why = loop {
            match inbound.message().await {
                Ok(Some(LocalMessage {
                    body: Some(local_message::Body::Report(r)),
                })) => {
                    if let Err(refused) = self.report(&node, id, r) {
                        let why = format!("report refused: {refused}");
                        let _ = tx.send(Err(refused.into())).await;
                        break why;
                    }
                }
                Ok(Some(_)) => {
                    let _ = tx.send(Err(Refused::NotAReport.into())).await;
                    break "an unexpected message".to_owned();
                }
                Ok(None) => break "stream closed".to_owned(),
                Err(e) => break e.message().to_owned(),
            }
        };
        let mut sessions = self.sessions();
        if sessions.remove(&node, id) {
            let cycle = sessions.computed;
            sessions
                .events
                .push(Event::Disconnected(node.clone(), cycle));
            // It may have been the last one the open cycle waited for.
            sessions.close_if_complete();
            self.wake(&mut sessions);
            drop(sessions);
            tracing::warn!(%node, "local controller gone: {why}");
        }
    }
}

/// The Control service over a [`Global`], open to the locals that [`Admission`] admits.
pub struct ControlService(pub Arc<Global>, pub Admission);

#[tonic::async_trait]
impl Control for ControlService {
    type SessionStream = ReceiverStream<Result<GlobalMessage, Status>>;

    async fn session(
        &self,
        request: Request<Streaming<LocalMessage>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        if let Err(refused) = self.1.check(&request) {
            let peer = request.remote_addr();
            return Err(refuse(peer, request.into_inner(), refused).await);
        }
        let peer = request.remote_addr().map(|a| a.ip());
        let inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(self.0.clone().serve(inbound, tx, peer));
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}

/// A reported latency histogram, checked.
fn latency_of(h: proto::LatencyHistogram) -> Result<Latency, Refused> {
    if h.buckets.len() > LATENCY_BUCKETS {
        return Err(Refused::Buckets);
    }
    let mut l = Latency {
        sum_ns: h.sum_ns,
        ..Latency::default()
    };
    l.buckets[..h.buckets.len()].copy_from_slice(&h.buckets);
    Ok(l)
}

/// A node's list of processes outside the stage, bounded as the local bounds it: a
/// local of another build, or a broken one, cannot grow the registry or `sluice jobs`.
fn bounded_outside(mut list: Vec<proto::OutsideStage>) -> Vec<proto::OutsideStage> {
    const MAX_EXE: usize = 4096;
    list.truncate(crate::local::unstaged::MAX_ENTRIES);
    for o in &mut list {
        if o.exe.len() > MAX_EXE {
            let mut end = MAX_EXE;
            while !o.exe.is_char_boundary(end) {
                end -= 1;
            }
            o.exe.truncate(end);
        }
        if o.why.len() > 32 {
            o.why = "?".to_owned();
        }
        o.node.clear();
    }
    list
}
