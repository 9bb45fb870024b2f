//! The global controller: one bidirectional stream per local controller, and the control
//! cycle over all of them.
//!
//! Locals report on aligned timers: cycle `k` closes at `k·interval` of the wall clock on
//! every node. The global computes cycle `k` as soon as every connected local has
//! reported it, or half an interval later with what it has, and pushes only the rates
//! that changed. Pools and rules go to a local when it connects and to every local when
//! an administrator changes them.
//!
//! - `sessions`: what is known of the streams, under one lock: who is live, which cycle
//!   is open and who owes it, what was received.
//! - `stream`: one local's stream ([`ControlService`]); what it does wrong is a
//!   [`Refused`], a gRPC status only at the edge.
//! - `step`: one cycle, pure: the received applied in order, the cycle due computed.
//! - `cycle`: the loop around it (wait, take, step, push, figures) and the timer that
//!   closes each cycle at its deadline; `push`: the rates out to the streams.
//!
//! The wall clock is passed in ([`WallClock`]), so that the tests run all of it on
//! tokio's paused time.

mod cycle;
mod push;
mod sessions;
mod step;
mod stream;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crate::clock::{SystemWallClock, WallClock};
use crate::coordinator::Coordinator;
use crate::held_file::HeldFile;
use crate::metrics::Metrics;
use crate::proto::{GlobalMessage, global_message};

pub use cycle::{run_deadlines, start_cycles};
use sessions::Sessions;
pub use stream::{ControlService, Refused};

/// Events the cycle thread is woken for before a cycle is due: it applies reports in
/// batches as they come, so that little is left to apply once the last one arrives,
/// without a wake-up (a system call and a context switch) per report.
const BATCH: usize = 256;

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
    /// The same for a cycle driven from a task (see `cycle::run_cycles_on_task`).
    woken: tokio::sync::Notify,
    /// The clock the cycles are numbered by.
    clock: Arc<dyn WallClock>,
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

impl Global {
    /// A global controller over `coordinator`, its cycles numbered by `clock`, keeping
    /// `metrics` when given. With `held`, the rates its nodes enforced before this start
    /// (kept there by the global before it) stay counted until each node reconnects, and
    /// the record is kept up.
    pub fn new(
        mut coordinator: Coordinator,
        clock: Arc<dyn WallClock>,
        metrics: Option<Arc<Metrics>>,
        held: Option<HeldFile>,
    ) -> Arc<Global> {
        let interval = coordinator.config().interval;
        if let Some(file) = &held {
            let (cycle, _) = clock.cycle_at(interval);
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
            woken: tokio::sync::Notify::new(),
            clock,
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
            self.woken.notify_one();
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

    /// The `/metrics` text, with the connected locals and dropped messages as of now.
    pub fn scrape(&self) -> Option<String> {
        let m = self.metrics.as_ref()?;
        m.set_control(self.locals(), self.dropped.load(Ordering::Relaxed));
        Some(m.encode())
    }
}

/// The policy in force as locals receive it.
fn policy_message(c: &Coordinator) -> GlobalMessage {
    GlobalMessage {
        body: Some(global_message::Body::Policy(c.policy())),
    }
}

/// The cycle of `interval` the system's wall clock is in, and how long until the next
/// begins (see [`WallClock::cycle_at`]).
pub fn cycle_at(interval: Duration) -> (u64, Duration) {
    SystemWallClock.cycle_at(interval)
}
