//! The admission clock of the controller's processes.

use std::sync::atomic::AtomicU32;

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
