//! The global controller: one bidirectional stream per local controller, and the control
//! cycle over all of them.
//!
//! Locals report on aligned timers: cycle `k` closes at `k·interval` of the wall clock on
//! every node. The global computes cycle `k` as soon as every connected local has
//! reported it, or half an interval later with what it has, and pushes only the rates
//! that changed. Pools and rules go to a local when it connects and to every local when
//! an administrator changes them.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_core::segment::{LATENCY_BUCKETS, Latency};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::cluster::{NodeJob, NodeRates, renumber};
use crate::config::{MAX_INTERVAL, MIN_INTERVAL, format_duration};
use crate::coordinator::Coordinator;
use crate::held_file::HeldFile;
use crate::link_auth::{Admission, refuse};
use crate::metrics::Metrics;
use crate::proto::control_server::Control;
use crate::proto::{self, GlobalMessage, LocalMessage, global_message, local_message};

/// Messages queued to one local before it counts as too slow (it is then sent every rate
/// afresh once it drains).
const QUEUE: usize = 64;
/// Events the cycle thread is woken for before a cycle is due: it applies reports in
/// batches as they come, so that little is left to apply once the last one arrives,
/// without a wake-up (a system call and a context switch) per report.
const BATCH: usize = 256;
/// How long a new stream may take to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// The global controller's state, shared by its streams, its cycle thread, its timer and
/// its admin API.
///
/// The streams only record what they receive (under the sessions lock, briefly) and
/// leave it to one thread, [`run_deadlines`]'s, to apply to the computation and to run
/// the cycle: a cycle over tens of thousands of jobs takes a while, and the streams'
/// I/O must keep flowing meanwhile rather than wait on a lock in the runtime's workers.
pub struct Global {
    /// Pools, rules, settings and the computation.
    pub coordinator: Arc<Mutex<Coordinator>>,
    sessions: Mutex<Sessions>,
    /// Wakes the cycle thread when it sleeps and there is work.
    wake: Condvar,
    /// The control interval, ns, as the cycle thread last read it from the
    /// configuration: the timer reads it here so as never to wait on a cycle.
    interval_ns: AtomicU64,
    next_session: AtomicU64,
    /// Messages not sent because a local's queue was full.
    pub dropped: AtomicU64,
    /// Durations of recent cycles, microseconds (from the cycle's boundary to the rates
    /// queued to every local).
    pub cycle_us: Mutex<Vec<f64>>,
    /// What `/metrics` exports, when it is served: kept up by the cycle thread after
    /// each cycle's rates are out, so that it never delays them.
    pub metrics: Option<Arc<Metrics>>,
    /// Where the rates the nodes enforce are kept for the next start, when anywhere.
    held: Option<HeldFile>,
}

#[derive(Default)]
struct Sessions {
    /// By node.
    live: HashMap<String, Session>,
    /// The last cycle computed, or handed to the cycle thread to compute.
    computed: u64,
    /// The latest cycle a local reported: the one being gathered.
    open: u64,
    /// Live sessions that have not reported `open` yet: counted, so that a report need
    /// not look at every session to know whether it was the last.
    missing: usize,
    /// What the streams received, in order, for the cycle thread to apply.
    events: Vec<Event>,
    /// The cycle the cycle thread is to compute next.
    due: Option<u64>,
    /// Whether the cycle thread waits for work (and must be woken).
    idle: bool,
    /// The interval every cycle number here counts in: the global's, as the cycle thread
    /// last read it from the configuration.
    unit: Duration,
}

struct Session {
    id: u64,
    tx: mpsc::Sender<Result<GlobalMessage, Status>>,
    /// The address its stream comes from, when known.
    peer: Option<IpAddr>,
    /// The last cycle it reported.
    reported: u64,
    /// Whether the log said yet that its reports come from ahead of this global's clock.
    told_ahead: bool,
    /// The version of the policy last queued to it; `None` before the first.
    policy: Option<u64>,
}

impl Session {
    /// Whether it was sent the policy of `version`, or a later one.
    fn has_policy(&self, version: u64) -> bool {
        self.policy.is_some_and(|v| v >= version)
    }
}

/// What a stream tells the computation; applied in order by the cycle thread.
enum Event {
    Connected(String),
    Report {
        node: String,
        cycle: u64,
        full: bool,
        jobs: Vec<NodeJob>,
        ended: Vec<String>,
        latency: BTreeMap<String, Latency>,
        finished: Vec<crate::proto::JobSummary>,
    },
    Disconnected(String, u64),
}

impl Event {
    /// Numbers the event's cycle in an interval of `to` instead of `from`.
    fn renumber(&mut self, from: Duration, to: Duration) {
        match self {
            Event::Connected(_) => {}
            Event::Report { cycle, .. } | Event::Disconnected(_, cycle) => {
                *cycle = renumber(*cycle, from, to);
            }
        }
    }
}

impl Sessions {
    /// Sessions counting cycles of `unit`.
    fn new(unit: Duration) -> Self {
        Sessions {
            unit,
            ..Sessions::default()
        }
    }

    /// Counts cycles of `to` from now on: every cycle kept or queued is renumbered.
    fn renumber(&mut self, to: Duration) {
        let from = std::mem::replace(&mut self.unit, to);
        let r = |c| renumber(c, from, to);
        self.computed = r(self.computed);
        self.open = r(self.open);
        self.due = self.due.map(r);
        for s in self.live.values_mut() {
            s.reported = r(s.reported);
        }
        for e in &mut self.events {
            e.renumber(from, to);
        }
        let open = self.open;
        self.missing = self.live.values().filter(|s| s.reported < open).count();
    }

    /// A local's cycle `cycle` of its interval `interval_s` (0: not said), numbered in
    /// this unit: a local reports in the interval it runs at, which lags the global's by
    /// the policy's trip when an administrator changes it.
    fn local_cycle(&self, cycle: u64, interval_s: f64) -> u64 {
        if interval_s <= 0.0 {
            return cycle;
        }
        // Intervals are whole milliseconds in a known range; the float carries them only
        // approximately.
        let theirs = Duration::from_millis((interval_s * 1e3).round() as u64)
            .clamp(MIN_INTERVAL, MAX_INTERVAL);
        renumber(cycle, theirs, self.unit)
    }

    /// The cycle a report of cycle `said` counts as while this global's clock is in cycle
    /// `now`. A node whose clock runs ahead (a bad RTC, NTP gone) must not move the cycles
    /// past this global's clock: computed up to a cycle of the future, the global would
    /// wait for it and compute nothing until then. Nor may this global's own clock,
    /// stepped back, hold the cycles: the one after the last computed is always allowed.
    fn counted(&self, said: u64, now: u64) -> u64 {
        said.min(now.max(self.computed) + 1)
    }

    /// Hands `cycle` to the cycle thread unless it was already.
    fn close(&mut self, cycle: u64) -> bool {
        if cycle <= self.computed {
            return false;
        }
        self.computed = cycle;
        self.due = Some(cycle);
        true
    }

    /// Closes the open cycle when no live session still owes its report.
    fn close_if_complete(&mut self) -> bool {
        self.missing == 0 && self.close(self.open)
    }

    /// `node`'s session `id` reported `cycle`.
    fn reported(&mut self, node: &str, id: u64, cycle: u64) {
        if !self.is_live(node, id) {
            return;
        }
        if cycle > self.open {
            // A new cycle: once per cycle, every session owes it.
            self.open = cycle;
            self.missing = self.live.values().filter(|s| s.reported < cycle).count();
        }
        let open = self.open;
        let session = self.live.get_mut(node).expect("checked above");
        let owed = session.reported < open;
        session.reported = session.reported.max(cycle);
        if owed && session.reported >= open {
            self.missing -= 1;
        }
    }

    /// The name a new stream of a local calling itself `node`, from `peer`, is counted
    /// under: `node`, unless a live stream from another address holds that name (two
    /// local controllers with one name: the host name, their default, is the same on
    /// machines cloned alike and in every network namespace of one host). It is then
    /// `node@ADDRESS`: replacing the other's stream would leave that local connected
    /// but never sent a policy or a rate again, its new jobs without the pools.
    fn name_for(&self, node: &str, peer: Option<IpAddr>) -> String {
        match (self.live.get(node).and_then(|s| s.peer), peer) {
            (Some(theirs), Some(ours)) if theirs != ours => format!("{node}@{ours}"),
            _ => node.to_owned(),
        }
    }

    /// Adds a session, replacing `node`'s older one, which is returned.
    fn insert(&mut self, node: String, session: Session) -> Option<Session> {
        if session.reported < self.open {
            self.missing += 1;
        }
        let old = self.live.insert(node, session);
        if old.as_ref().is_some_and(|o| o.reported < self.open) {
            self.missing -= 1;
        }
        old
    }

    /// Queues `policy`, of version `version`, to every live session not sent it or a later
    /// one; returns how many it could not be queued to (their queue is full).
    fn offer_policy(&mut self, version: u64, policy: &GlobalMessage) -> u64 {
        let mut full = 0;
        for s in self.live.values_mut().filter(|s| !s.has_policy(version)) {
            match s.tx.try_send(Ok(policy.clone())) {
                Ok(()) => s.policy = Some(version),
                Err(_) => full += 1,
            }
        }
        full
    }

    /// Whether a live session was not sent the policy of `version` yet.
    fn owe_policy(&self, version: u64) -> bool {
        self.live.values().any(|s| !s.has_policy(version))
    }

    /// Whether `node`'s live stream is session `id`.
    fn is_live(&self, node: &str, id: u64) -> bool {
        self.live.get(node).is_some_and(|s| s.id == id)
    }

    /// Removes `node`'s session if it is still `id`; whether it was.
    fn remove(&mut self, node: &str, id: u64) -> bool {
        if !self.is_live(node, id) {
            return false;
        }
        if let Some(old) = self.live.remove(node)
            && old.reported < self.open
        {
            self.missing -= 1;
        }
        true
    }
}

impl Global {
    /// A global controller over `coordinator`, keeping `metrics` when given. With `held`,
    /// the rates its nodes enforced before this start (kept there by the global before
    /// it) stay counted until each node reconnects, and the record is kept up.
    pub fn new(
        mut coordinator: Coordinator,
        metrics: Option<Arc<Metrics>>,
        held: Option<HeldFile>,
    ) -> Arc<Global> {
        let interval = coordinator.config().interval;
        if let Some(file) = &held {
            let (cycle, _) = cycle_at(interval);
            let nodes = coordinator.cluster().restore(file.load(), cycle);
            if nodes > 0 {
                tracing::info!(
                    nodes,
                    "the rates these nodes enforce stay counted until each reconnects"
                );
            }
        }
        Arc::new(Global {
            coordinator: Arc::new(Mutex::new(coordinator)),
            sessions: Mutex::new(Sessions::new(interval)),
            wake: Condvar::new(),
            interval_ns: AtomicU64::new(interval.as_nanos() as u64),
            next_session: AtomicU64::new(1),
            dropped: AtomicU64::new(0),
            cycle_us: Mutex::new(Vec::new()),
            metrics,
            held,
        })
    }

    /// Locals connected now.
    pub fn locals(&self) -> usize {
        self.sessions().live.len()
    }

    /// The last cycle computed (or being computed).
    pub fn computed(&self) -> u64 {
        self.sessions().computed
    }

    fn sessions(&self) -> MutexGuard<'_, Sessions> {
        self.sessions.lock().expect("sessions")
    }

    /// Wakes the cycle thread if it sleeps.
    fn wake(&self, sessions: &mut Sessions) {
        if sessions.idle {
            sessions.idle = false;
            self.wake.notify_one();
        }
    }

    /// Queues the policy in force to every local not sent it yet: on connect, after an
    /// admin change or a reload. Its version is read with it, so that a local is never
    /// sent a policy older than one it has (two changes in quick succession queue theirs
    /// in either order); one whose queue is full is offered it again at each cycle,
    /// before any rate.
    pub fn broadcast_policy(&self) {
        let (version, message) = {
            let c = self.coordinator.lock().expect("coordinator");
            (c.policy_version(), policy_message(&c))
        };
        let full = self.sessions().offer_policy(version, &message);
        self.dropped.fetch_add(full, Ordering::Relaxed);
    }

    /// The cycle thread: applies what the streams received, as it comes, and computes
    /// each cycle handed to it. Never returns.
    fn run_cycles(&self) {
        let mut events = Vec::new();
        loop {
            let mut due = {
                let mut sessions = self.sessions();
                while sessions.events.is_empty() && sessions.due.is_none() {
                    sessions.idle = true;
                    sessions = self.wake.wait(sessions).expect("sessions");
                }
                std::mem::swap(&mut events, &mut sessions.events);
                sessions.due.take()
            };
            let mut c = self.coordinator.lock().expect("coordinator");
            let interval = c.config().interval;
            let from = {
                let mut sessions = self.sessions();
                let from = sessions.unit;
                if from != interval {
                    sessions.renumber(interval);
                }
                from
            };
            if from != interval {
                // The events taken out and the cycle due were numbered in the old unit.
                for event in &mut events {
                    event.renumber(from, interval);
                }
                due = due.map(|d| renumber(d, from, interval));
                c.cluster().renumber_cycles(from, interval);
                tracing::info!(
                    "interval {} → {}: cycles renumbered",
                    format_duration(from),
                    format_duration(interval)
                );
            }
            self.interval_ns
                .store(interval.as_nanos() as u64, Ordering::Relaxed);
            for event in events.drain(..) {
                match event {
                    Event::Connected(node) => c.cluster().node_connected(&node),
                    Event::Report {
                        node,
                        cycle,
                        full,
                        jobs,
                        ended,
                        latency,
                        finished,
                    } => {
                        let cluster = c.cluster();
                        cluster.report_latency(&node, latency);
                        cluster.report(&node, cycle, full, jobs, ended);
                        // Named by the session, whatever the rows say.
                        c.finished(&node, finished);
                    }
                    Event::Disconnected(node, cycle) => c.cluster().node_disconnected(&node, cycle),
                }
            }
            let Some(cycle) = due else {
                continue;
            };
            let rates = match c.compute(cycle) {
                Ok(rates) => rates,
                Err(e) => {
                    tracing::error!("cycle {cycle}: {e}");
                    continue;
                }
            };
            // The rates were computed under this policy: a local not sent it yet is sent it
            // first, as pools it does not know would drop their rates.
            let version = c.policy_version();
            let policy = self
                .sessions()
                .owe_policy(version)
                .then(|| policy_message(&c));
            let held = (!rates.is_empty() && self.held.is_some()).then(|| c.cluster().held());
            drop(c);
            self.push(cycle, rates, version, policy);
            // Written after the push, which must not wait on a disk.
            if let (Some(file), Some(held)) = (&self.held, held) {
                file.save(&held);
            }
            let boundary_ns = u128::from(cycle) * interval.as_nanos();
            let since_ns = wall_clock().as_nanos().saturating_sub(boundary_ns);
            let mut times = self.cycle_us.lock().expect("cycle times");
            if times.len() >= 256 {
                times.remove(0);
            }
            times.push(since_ns as f64 / 1e3);
            drop(times);
            let mut c = self.coordinator.lock().expect("coordinator");
            c.cluster().record_history(interval.as_secs_f64());
            drop(c);
            if let Some(m) = &self.metrics {
                m.cycle_took(since_ns as f64 / 1e9);
                let c = self.coordinator.lock().expect("coordinator");
                m.record_cycle(cycle, &c.jobs(), &c.pools(), interval.as_secs_f64());
            }
        }
    }

    /// The `/metrics` text, with the connected locals and dropped messages as of now.
    pub fn scrape(&self) -> Option<String> {
        let m = self.metrics.as_ref()?;
        m.set_control(self.locals(), self.dropped.load(Ordering::Relaxed));
        Some(m.encode())
    }

    /// Queues cycle `cycle`'s changed rates to their locals, computed under the policy of
    /// `version`; `policy` is that policy when some local was not sent it yet, offered
    /// first. A local still without it is sent no rate: every rate goes to it again once
    /// it has the policy, rather than a new pool's rate lost on a segment without it.
    fn push(&self, cycle: u64, rates: Vec<NodeRates>, version: u64, policy: Option<GlobalMessage>) {
        // The senders are taken under the lock and used outside it: queueing wakes each
        // stream's task, and the streams' reports must not wait for that.
        let targets: Vec<_> = {
            let mut sessions = self.sessions();
            if let Some(policy) = &policy {
                let full = sessions.offer_policy(version, policy);
                self.dropped.fetch_add(full, Ordering::Relaxed);
            }
            rates
                .into_iter()
                .filter_map(|r| {
                    let s = sessions.live.get(&r.node)?;
                    Some((s.tx.clone(), s.has_policy(version), r))
                })
                .collect()
        };
        let mut slow = Vec::new();
        for (tx, current, NodeRates { node, jobs }) in targets {
            if !current {
                slow.push(node);
                continue;
            }
            let message = GlobalMessage {
                body: Some(global_message::Body::Rates(proto::Rates {
                    cycle,
                    jobs: jobs
                        .into_iter()
                        .map(|(job, pools)| proto::JobRates { job, pools })
                        .collect(),
                })),
            };
            if tx.try_send(Ok(message)).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                slow.push(node);
            }
        }
        if !slow.is_empty() {
            let mut c = self.coordinator.lock().expect("coordinator");
            for node in slow {
                c.cluster().node_connected(&node);
            }
        }
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
                account: j.account,
                qos: j.qos,
                partition: j.partition,
                nodes: j.nodes,
                launchers: j.launchers,
                pools: j.pools.into_iter().map(|(k, c)| (k, c.into())).collect(),
                segment: j.segment.as_ref().map(Into::into),
            })
            .collect();
        let latency = report
            .latency
            .into_iter()
            .map(|(pool, h)| Ok((pool, latency_of(h)?)))
            .collect::<Result<_, Status>>()?;
        let mut sessions = self.sessions();
        if !sessions.is_live(node, id) {
            // Its node connected again on a newer stream: this one's figures are stale.
            return Err(Status::aborted(format!(
                "node {node} connected again on a newer stream; this one is closed"
            )));
        }
        let said = sessions.local_cycle(report.cycle, report.interval_s);
        let now = cycle_at(sessions.unit).0;
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

    async fn serve(
        self: Arc<Self>,
        mut inbound: Streaming<LocalMessage>,
        tx: mpsc::Sender<Result<GlobalMessage, Status>>,
        peer: Option<IpAddr>,
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
            let why = format!("node {node} connected again on a newer stream from {from}");
            tracing::warn!(%node, "{why}: its older stream is closed");
            let _ = old.tx.try_send(Err(Status::aborted(why)));
        }
        tracing::info!(%node, "local controller connected from {from}");
        let why = loop {
            match inbound.message().await {
                Ok(Some(LocalMessage {
                    body: Some(local_message::Body::Report(r)),
                })) => {
                    if let Err(status) = self.report(&node, id, r) {
                        let why = format!("report refused: {}", status.message());
                        let _ = tx.send(Err(status)).await;
                        break why;
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

/// The policy in force as locals receive it.
fn policy_message(c: &Coordinator) -> GlobalMessage {
    GlobalMessage {
        body: Some(global_message::Body::Policy(c.policy())),
    }
}

/// A reported latency histogram, checked.
fn latency_of(h: proto::LatencyHistogram) -> Result<Latency, Status> {
    if h.buckets.len() > LATENCY_BUCKETS {
        return Err(Status::invalid_argument(format!(
            "report: a latency histogram has at most {LATENCY_BUCKETS} buckets"
        )));
    }
    let mut l = Latency {
        sum_ns: h.sum_ns,
        ..Latency::default()
    };
    l.buckets[..h.buckets.len()].copy_from_slice(&h.buckets);
    Ok(l)
}

/// The time since the epoch.
fn wall_clock() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// The cycle of the wall clock at `now`, and the instant the next one begins.
pub fn cycle_at(interval: Duration) -> (u64, Duration) {
    let now = wall_clock();
    let step = interval.as_nanos().max(1);
    let cycle = now.as_nanos() / step;
    let next = Duration::from_nanos(((cycle + 1) * step - now.as_nanos()) as u64);
    (cycle as u64, next)
}

/// Starts the thread that applies reports and computes the global's cycles; without it
/// nothing is ever computed, so a failure to start it fails the daemon's start.
pub fn start_cycles(global: &Arc<Global>) -> std::io::Result<()> {
    let cycles = global.clone();
    std::thread::Builder::new()
        .name("sluice-cycles".into())
        .spawn(move || cycles.run_cycles())
        .map(drop)
}

/// The timer of the global's cycles ([`start_cycles`] runs them): at each cycle's
/// deadline (half an interval after its boundary), has it computed with what was
/// reported.
pub async fn run_deadlines(global: Arc<Global>) {
    loop {
        let interval = Duration::from_nanos(global.interval_ns.load(Ordering::Relaxed));
        let (_, until_next) = cycle_at(interval);
        tokio::time::sleep(until_next + interval / 2).await;
        // The cycle that closed half an interval ago, in the unit the sessions count in
        // (the interval may have changed during the sleep).
        let mut sessions = global.sessions();
        let (cycle, _) = cycle_at(sessions.unit);
        if sessions.close(cycle) {
            global.wake(&mut sessions);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: u64, reported: u64) -> Session {
        Session {
            id,
            tx: mpsc::channel(1).0,
            peer: None,
            reported,
            told_ahead: false,
            policy: None,
        }
    }

    #[test]
    fn a_cycle_closes_when_the_last_live_session_reports_it() {
        let mut s = Sessions::default();
        s.insert("a".into(), session(1, 0));
        s.insert("b".into(), session(2, 0));
        s.reported("a", 1, 5);
        assert!(!s.close_if_complete(), "b still owes cycle 5");
        // A report of an older stream of b's does not count.
        s.reported("b", 9, 5);
        assert!(!s.close_if_complete());
        s.reported("b", 2, 5);
        assert!(s.close_if_complete());
        assert_eq!((s.due, s.computed), (Some(5), 5));
        // Once closed, not again.
        assert!(!s.close_if_complete());
    }

    /// The interval grows from 250 ms to 1 s: what was computed and reported is
    /// renumbered, the next cycle of 1 s opens and closes as usual, and a local still on
    /// 250 ms is heard in the new unit.
    #[test]
    fn a_new_interval_renumbers_the_cycles_kept_and_reported() {
        let ms = Duration::from_millis;
        let mut s = Sessions::new(ms(250));
        s.insert("a".into(), session(1, 0));
        s.insert("b".into(), session(2, 0));
        s.reported("a", 1, 401);
        s.reported("b", 2, 401);
        assert!(s.close_if_complete());
        s.due = None;
        s.reported("a", 1, 402);
        s.renumber(ms(1000));
        assert_eq!((s.computed, s.open, s.missing), (100, 100, 0));
        // a runs at 1 s already; b, on 250 ms still, reports cycle 404 (101 s).
        s.reported("a", 1, s.local_cycle(101, 1.0));
        assert!(!s.close_if_complete(), "b owes cycle 101");
        s.reported("b", 2, s.local_cycle(404, 0.25));
        assert!(s.close_if_complete());
        assert_eq!(s.due, Some(101));
    }

    #[test]
    fn a_report_from_ahead_of_the_clock_counts_as_of_the_next_cycle() {
        let mut s = Sessions::new(Duration::from_secs(1));
        // A node a year ahead of this global's clock (cycle 100).
        assert_eq!(s.counted(100 + 31_536_000, 100), 101);
        assert_eq!(s.counted(100, 100), 100);
        // This global's clock stepped back an hour after cycle 5000: reports still move
        // the cycles on, one at a time.
        s.computed = 5000;
        assert_eq!(s.counted(5001, 1400), 5001);
        assert_eq!(s.counted(5002, 1400), 5001);
    }

    /// Two locals that call themselves alike from two addresses are two nodes; one that
    /// connects again from its address replaces its older stream.
    #[test]
    fn a_second_local_of_one_name_from_another_address_is_counted_apart() {
        let ip = |a: &str| a.parse::<IpAddr>().ok();
        let mut s = Sessions::default();
        assert_eq!(s.name_for("n", ip("10.0.0.1")), "n");
        let first = Session {
            peer: ip("10.0.0.1"),
            ..session(1, 0)
        };
        assert!(s.insert("n".into(), first).is_none());
        assert_eq!(s.name_for("n", ip("10.0.0.1")), "n");
        assert_eq!(s.name_for("n", ip("10.0.0.2")), "n@10.0.0.2");
        assert_eq!(s.name_for("m", ip("10.0.0.2")), "m");
        let again = Session {
            peer: ip("10.0.0.1"),
            ..session(2, 0)
        };
        assert_eq!(s.insert("n".into(), again).map(|o| o.id), Some(1));
        assert!(s.is_live("n", 2) && !s.is_live("n", 1));
    }

    /// The pools of the policies `rx` holds, in order.
    fn policies(rx: &mut mpsc::Receiver<Result<GlobalMessage, Status>>) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|m| match m.ok().and_then(|m| m.body) {
                Some(global_message::Body::Policy(p)) => p.pools.join(","),
                _ => "not a policy".to_owned(),
            })
            .collect()
    }

    /// The sessions of one local, `a`, whose queue holds `queue` messages; and that queue.
    fn one_local(queue: usize) -> (Sessions, mpsc::Receiver<Result<GlobalMessage, Status>>) {
        let (tx, rx) = mpsc::channel(queue);
        let mut s = Sessions::default();
        s.insert(
            "a".into(),
            Session {
                tx,
                ..session(1, 0)
            },
        );
        (s, rx)
    }

    fn policy(pool: &str) -> GlobalMessage {
        GlobalMessage {
            body: Some(global_message::Body::Policy(proto::Policy {
                pools: vec![pool.to_owned()],
                ..proto::Policy::default()
            })),
        }
    }

    /// Two admin changes in quick succession may offer their policies in either order:
    /// a local keeps the later one.
    #[test]
    fn a_local_is_never_sent_a_policy_older_than_it_has() {
        let (mut s, mut rx) = one_local(8);
        assert_eq!(s.offer_policy(2, &policy("v2")), 0);
        assert_eq!(s.offer_policy(1, &policy("v1")), 0);
        assert_eq!(s.offer_policy(2, &policy("v2")), 0);
        assert_eq!(policies(&mut rx), ["v2"]);
        assert!(!s.owe_policy(2) && s.owe_policy(3));
    }

    /// A local whose queue was full when the policy changed is owed it until it drains.
    #[test]
    fn a_policy_that_found_a_full_queue_is_offered_again() {
        let (mut s, mut rx) = one_local(1);
        s.live["a"].tx.try_send(Ok(policy("v0"))).unwrap();
        assert_eq!(s.offer_policy(1, &policy("v1")), 1);
        assert!(s.owe_policy(1));
        assert_eq!(policies(&mut rx), ["v0"]);
        assert_eq!(s.offer_policy(1, &policy("v1")), 0);
        assert_eq!(policies(&mut rx), ["v1"]);
        assert!(!s.owe_policy(1));
    }

    #[test]
    fn a_session_that_goes_or_is_replaced_is_no_longer_waited_for() {
        let mut s = Sessions::default();
        s.insert("a".into(), session(1, 0));
        s.insert("b".into(), session(2, 0));
        s.reported("a", 1, 7);
        // b reconnects: its new stream owes cycle 7 as the old one did.
        s.insert("b".into(), session(3, 0));
        assert_eq!(s.missing, 1);
        assert!(!s.remove("b", 2), "the old stream is gone already");
        assert!(s.remove("b", 3));
        assert!(s.close_if_complete());
        // A stream that joins once cycle 7 is computed owes only the next one.
        s.insert("c".into(), session(4, s.computed));
        assert_eq!(s.missing, 0);
        s.reported("a", 1, 8);
        assert_eq!(s.missing, 1);
    }
}
