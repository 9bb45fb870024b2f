//! The global controller: one bidirectional stream per local controller, and the control
//! cycle over all of them.
//!
//! Locals report on aligned timers: cycle `k` closes at `k·interval` of the wall clock on
//! every node. The global computes cycle `k` as soon as every connected local has
//! reported it, or half an interval later with what it has, and pushes only the rates
//! that changed. Pools and rules go to a local when it connects and to every local when
//! an administrator changes them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::cluster::{ChannelObs, NodeJob, NodeRates};
use crate::coordinator::Coordinator;
use crate::proto::control_server::Control;
use crate::proto::{self, GlobalMessage, LocalMessage, global_message, local_message};

/// Messages queued to one local before it counts as too slow (it is then sent every rate
/// afresh once it drains).
const QUEUE: usize = 64;
/// How long a new stream may take to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// The global controller's state, shared by its streams, its timer and its admin API.
pub struct Global {
    /// Pools, rules, settings and the computation.
    pub coordinator: Arc<Mutex<Coordinator>>,
    sessions: Mutex<Sessions>,
    next_session: AtomicU64,
    /// Messages not sent because a local's queue was full.
    pub dropped: AtomicU64,
    /// Durations of recent cycles, microseconds (from the cycle's boundary to the rates
    /// queued to every local).
    pub cycle_us: Mutex<Vec<f64>>,
}

#[derive(Default)]
struct Sessions {
    /// By node.
    live: BTreeMap<String, Session>,
    /// The last cycle computed.
    computed: u64,
}

struct Session {
    id: u64,
    tx: mpsc::Sender<Result<GlobalMessage, Status>>,
    /// The last cycle it reported.
    reported: u64,
}

impl Global {
    /// A global controller over `coordinator`.
    pub fn new(coordinator: Coordinator) -> Arc<Global> {
        Arc::new(Global {
            coordinator: Arc::new(Mutex::new(coordinator)),
            sessions: Mutex::new(Sessions::default()),
            next_session: AtomicU64::new(1),
            dropped: AtomicU64::new(0),
            cycle_us: Mutex::new(Vec::new()),
        })
    }

    /// Locals connected now.
    pub fn locals(&self) -> usize {
        self.sessions.lock().expect("sessions").live.len()
    }

    /// The last cycle computed.
    pub fn computed(&self) -> u64 {
        self.sessions.lock().expect("sessions").computed
    }

    /// Sends the policy in force to every local (after an admin change).
    pub fn broadcast_policy(&self) {
        let policy = self.coordinator.lock().expect("coordinator").policy();
        let message = GlobalMessage {
            body: Some(global_message::Body::Policy(policy)),
        };
        let sessions = self.sessions.lock().expect("sessions");
        for s in sessions.live.values() {
            if s.tx.try_send(Ok(message.clone())).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Computes cycle `cycle` unless it was: when `force` (the deadline passed), or when
    /// every connected local has reported it.
    pub fn maybe_compute(&self, cycle: u64, boundary: Instant, force: bool) {
        let mut sessions = self.sessions.lock().expect("sessions");
        if cycle <= sessions.computed {
            return;
        }
        if !force && sessions.live.values().any(|s| s.reported < cycle) {
            return;
        }
        sessions.computed = cycle;
        let rates = {
            let mut c = self.coordinator.lock().expect("coordinator");
            match c.compute(cycle) {
                Ok(rates) => rates,
                Err(e) => {
                    tracing::error!("cycle {cycle}: {e}");
                    return;
                }
            }
        };
        let mut slow = Vec::new();
        for NodeRates { node, jobs } in rates {
            let Some(s) = sessions.live.get(&node) else {
                continue;
            };
            let message = GlobalMessage {
                body: Some(global_message::Body::Rates(proto::Rates {
                    cycle,
                    jobs: jobs
                        .into_iter()
                        .map(|(job, pools)| proto::JobRates { job, pools })
                        .collect(),
                })),
            };
            if s.tx.try_send(Ok(message)).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                slow.push(node);
            }
        }
        drop(sessions);
        if !slow.is_empty() {
            let mut c = self.coordinator.lock().expect("coordinator");
            for node in slow {
                c.cluster().node_connected(&node);
            }
        }
        let mut times = self.cycle_us.lock().expect("cycle times");
        if times.len() >= 256 {
            times.remove(0);
        }
        times.push(boundary.elapsed().as_secs_f64() * 1e6);
    }

    fn report(&self, node: &str, id: u64, report: proto::Report) -> Result<(), Status> {
        if !(report.interval_s.is_finite() && report.interval_s >= 0.0) {
            return Err(Status::invalid_argument(
                "report: interval_s must be a finite number ≥ 0",
            ));
        }
        let jobs = report
            .jobs
            .into_iter()
            .map(|j| NodeJob {
                job: j.job,
                user: j.user,
                nodes: j.nodes,
                launchers: j.launchers,
                pools: j
                    .pools
                    .into_iter()
                    .map(|(k, c)| {
                        let obs = ChannelObs {
                            arrivals: c.arrivals,
                            admitted: c.admitted,
                            wait: c.wait,
                            waiting: c.waiting,
                            demand: c.demand,
                        };
                        (k, obs)
                    })
                    .collect(),
            })
            .collect();
        self.coordinator
            .lock()
            .expect("coordinator")
            .cluster()
            .report(node, report.cycle, report.full, jobs, report.ended);
        let all = {
            let mut sessions = self.sessions.lock().expect("sessions");
            if let Some(s) = sessions.live.get_mut(node).filter(|s| s.id == id) {
                s.reported = s.reported.max(report.cycle);
            }
            report.cycle > sessions.computed
        };
        if all {
            self.maybe_compute(report.cycle, Instant::now(), false);
        }
        Ok(())
    }

    async fn serve(
        self: Arc<Self>,
        mut inbound: Streaming<LocalMessage>,
        tx: mpsc::Sender<Result<GlobalMessage, Status>>,
    ) {
        let hello = match tokio::time::timeout(HELLO_TIMEOUT, inbound.message()).await {
            Ok(Ok(Some(LocalMessage {
                body: Some(local_message::Body::Hello(h)),
            }))) if !h.node.is_empty() && h.node.len() <= 256 => h,
            _ => {
                let _ = tx
                    .send(Err(Status::invalid_argument(
                        "expected Hello with a node name first",
                    )))
                    .await;
                return;
            }
        };
        if hello.version != 1 {
            let why = format!("protocol version {} not spoken here (1 is)", hello.version);
            let _ = tx.send(Err(Status::failed_precondition(why))).await;
            return;
        }
        let node = hello.node;
        let id = self.next_session.fetch_add(1, Ordering::Relaxed);
        let policy = {
            let mut c = self.coordinator.lock().expect("coordinator");
            c.cluster().node_connected(&node);
            c.policy()
        };
        let _ = tx
            .send(Ok(GlobalMessage {
                body: Some(global_message::Body::Policy(policy)),
            }))
            .await;
        {
            let mut sessions = self.sessions.lock().expect("sessions");
            let reported = sessions.computed;
            // A node that reconnects replaces its older stream.
            sessions.live.insert(
                node.clone(),
                Session {
                    id,
                    tx: tx.clone(),
                    reported,
                },
            );
        }
        tracing::info!(%node, "local controller connected");
        let why = loop {
            match inbound.message().await {
                Ok(Some(LocalMessage {
                    body: Some(local_message::Body::Report(r)),
                })) => {
                    if let Err(status) = self.report(&node, id, r) {
                        let _ = tx.send(Err(status)).await;
                        break "a malformed report".to_owned();
                    }
                }
                Ok(Some(_)) => {
                    let _ = tx
                        .send(Err(Status::invalid_argument("expected a Report")))
                        .await;
                    break "an unexpected message".to_owned();
                }
                Ok(None) => break "stream closed".to_owned(),
                Err(e) => break e.message().to_owned(),
            }
        };
        let mut sessions = self.sessions.lock().expect("sessions");
        if sessions.live.get(&node).is_some_and(|s| s.id == id) {
            sessions.live.remove(&node);
            let cycle = sessions.computed;
            drop(sessions);
            self.coordinator
                .lock()
                .expect("coordinator")
                .cluster()
                .node_disconnected(&node, cycle);
            tracing::warn!(%node, "local controller gone: {why}");
        }
    }
}

/// The Control service over a [`Global`].
pub struct ControlService(pub Arc<Global>);

#[tonic::async_trait]
impl Control for ControlService {
    type SessionStream = ReceiverStream<Result<GlobalMessage, Status>>;

    async fn session(
        &self,
        request: Request<Streaming<LocalMessage>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        let inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(self.0.clone().serve(inbound, tx));
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}

/// The cycle of the wall clock at `now`, and the instant the next one begins.
pub fn cycle_at(interval: Duration) -> (u64, Duration) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let step = interval.as_nanos().max(1);
    let cycle = now.as_nanos() / step;
    let next = Duration::from_nanos(((cycle + 1) * step - now.as_nanos()) as u64);
    (cycle as u64, next)
}

/// The global's timer: at each cycle's deadline, computes it with what was reported.
pub async fn run_deadlines(global: Arc<Global>) {
    loop {
        let interval = global
            .coordinator
            .lock()
            .expect("coordinator")
            .config()
            .interval;
        let (_, until_next) = cycle_at(interval);
        tokio::time::sleep(until_next + interval / 2).await;
        let boundary = Instant::now() - interval / 2;
        let (cycle, _) = cycle_at(interval);
        // The cycle that closed half an interval ago.
        global.maybe_compute(cycle, boundary, true);
    }
}
