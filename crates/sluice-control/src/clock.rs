//! The controller's clocks: the admission clock of its processes, and the wall clock its
//! cycles are numbered by.

use std::sync::atomic::AtomicU32;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_core::gate::Clock;

/// The clock a process other than the stage admits calls by (the supervisor, the stage's
/// benchmark): the stage's (CLOCK_MONOTONIC, and a shared futex wait on the bucket's
/// generation, so that a rate change wakes it).
pub struct MonotonicClock;

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Clock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        clock_ns(libc::CLOCK_MONOTONIC)
    }
    fn coarse_ns(&self) -> u64 {
        clock_ns(libc::CLOCK_MONOTONIC_COARSE)
    }
    fn coarse_resolution_ns(&self) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec.
        match unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) } {
            0 => ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
            _ => 10_000_000,
        }
    }
    fn wait_until(&self, deadline: u64, word: &AtomicU32, seen: u32) {
        let ts = libc::timespec {
            tv_sec: (deadline / 1_000_000_000) as libc::time_t,
            tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: `word` is a valid, aligned 32-bit word of the mapped segment; with
        // FUTEX_WAIT_BITSET the timeout is an absolute CLOCK_MONOTONIC time.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT_BITSET,
                seen,
                &ts as *const libc::timespec,
                std::ptr::null::<u32>(),
                libc::FUTEX_BITSET_MATCH_ANY,
            )
        };
    }
}

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
