//! The controller's clocks: the admission clock of its processes, and the wall clock its
//! cycles are numbered by.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The clock a process other than the stage admits calls by (the supervisor, the stage's
/// benchmark): sluice-core's, which the stage shares but for its reading through the vDSO.
pub use sluice_core::clock::MonotonicClock;

/// The wall clock the control cycles are numbered by: cycle `k` of an interval closes at
/// `k·interval` after the epoch on every node, so that the nodes' reports of one cycle
/// meet at the global without a message to agree on it. Passed in rather than read, so
/// that a test runs the cycles on tokio's paused time, and skews one node's clock.
pub trait WallClock: Send + Sync {
    /// The time since the UNIX epoch.
    fn since_epoch(&self) -> Duration;

    /// The cycle of `interval` the clock is in, and how long until the next begins.
    fn cycle_at(&self, interval: Duration) -> (u64, Duration) {
        let now = self.since_epoch().as_nanos();
        let step = interval.as_nanos().max(1);
        let cycle = now / step;
        let next = Duration::from_nanos(((cycle + 1) * step - now) as u64);
        (cycle as u64, next)
    }
}

/// The system's wall clock (`CLOCK_REALTIME`), which NTP keeps alike across nodes.
pub struct SystemWallClock;

impl WallClock for SystemWallClock {
    fn since_epoch(&self) -> Duration {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
    }
}
