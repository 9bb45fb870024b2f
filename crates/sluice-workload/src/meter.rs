//! The ends of whole seconds of a run, for per-second reports.

use std::time::{Duration, Instant};

/// Wall-clock seconds since a run started, ended one at a time.
pub(crate) struct Seconds {
    start: Instant,
    ended: u64,
}

impl Seconds {
    /// Seconds from now.
    pub(crate) fn start() -> Self {
        Seconds {
            start: Instant::now(),
            ended: 0,
        }
    }

    /// When the run started.
    pub(crate) fn started(&self) -> Instant {
        self.start
    }

    /// Waits for the end of the next whole second and returns its number (1 for the
    /// first), or returns `None` as soon as `finished()` says the run is over (checked
    /// every 5 ms, so that a run's end is seen promptly).
    pub(crate) fn next(&mut self, finished: impl Fn() -> bool) -> Option<u64> {
        let tick = self.start + Duration::from_secs(self.ended + 1);
        loop {
            if finished() {
                return None;
            }
            let left = tick.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.ended += 1;
                return Some(self.ended);
            }
            std::thread::sleep(left.min(Duration::from_millis(5)));
        }
    }
}
