//! The node's clock as [`Clock`] needs it, read from the kernel: CLOCK_MONOTONIC (shared
//! by every process of a node, so one job's processes agree on a bucket's times), its
//! coarse reading, and the shared futex a held call sleeps on until its turn or until a
//! controller changes the rate and wakes it.
//!
//! The gate itself reads no clock (a test drives it with its own); these are the pieces
//! every real clock shares. The stage keeps its own reading of the time (through the
//! vDSO, without glibc's wrapper) and its own errno (which the futex may set): it uses
//! [`timespec_ns`], [`resolution_ns`] and [`futex_wait_until`] under its own clock.
//! Each is a system call or less: nothing allocates, starts a thread or takes a lock.

use std::sync::atomic::AtomicU32;

use crate::gate::Clock;

/// What [`resolution_ns`] answers when the kernel will not say: the coarsest tick a
/// kernel configures (HZ=100).
const UNKNOWN_RESOLUTION_NS: u64 = 10_000_000;

/// Nanoseconds in `ts`.
#[inline(always)]
pub fn timespec_ns(ts: &libc::timespec) -> u64 {
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds on `clock`, read through glibc.
#[inline]
pub fn now_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec; the monotonic clocks always exist.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    timespec_ns(&ts)
}

/// The resolution of `clock` in nanoseconds (10 ms if the kernel will not say).
pub fn resolution_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    match unsafe { libc::clock_getres(clock, &mut ts) } {
        0 => timespec_ns(&ts),
        _ => UNKNOWN_RESOLUTION_NS,
    }
}

/// Sleeps until CLOCK_MONOTONIC reads `deadline` or until another process changes `word`
/// from `seen` and wakes it (a shared futex: the word lives in a segment mapped by several
/// processes). Returns early on a wake-up, on a signal (its handler has run) or if `word`
/// had already changed; the caller re-checks. May set errno: a caller that must leave it
/// alone (the stage) saves it around the call.
pub fn futex_wait_until(word: &AtomicU32, seen: u32, deadline: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `word` is a valid, aligned 32-bit word for the life of the call; with
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

/// The clock a process other than the stage admits calls by (the supervisor, the stage's
/// benchmark): the stage's (CLOCK_MONOTONIC, and a shared futex wait on the bucket's
/// generation, so that a rate change wakes it), read through glibc.
#[derive(Clone, Copy, Debug, Default)]
pub struct MonotonicClock;

impl Clock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        now_ns(libc::CLOCK_MONOTONIC)
    }
    fn coarse_ns(&self) -> u64 {
        now_ns(libc::CLOCK_MONOTONIC_COARSE)
    }
    fn coarse_resolution_ns(&self) -> u64 {
        resolution_ns(libc::CLOCK_MONOTONIC_COARSE)
    }
    fn wait_until(&self, deadline: u64, word: &AtomicU32, seen: u32) {
        futex_wait_until(word, seen, deadline)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// The coarse clock never reads ahead of the precise one, and ticks at most every
    /// 10 ms.
    #[test]
    fn the_coarse_reading_never_leads_the_precise_one() {
        let c = MonotonicClock;
        let res = c.coarse_resolution_ns();
        assert!(res > 0 && res <= UNKNOWN_RESOLUTION_NS, "{res}");
        for _ in 0..1000 {
            let coarse = c.coarse_ns();
            let now = c.now_ns();
            assert!(coarse <= now, "{coarse} {now}");
        }
    }

    /// A wait ends at its deadline when nothing changes the word, and at once when the
    /// word no longer holds what the caller saw.
    #[test]
    fn a_futex_wait_ends_at_its_deadline_or_at_once_on_a_changed_word() {
        let c = MonotonicClock;
        let word = AtomicU32::new(7);
        let t = Instant::now();
        c.wait_until(c.now_ns() + 20_000_000, &word, 7);
        assert!(
            t.elapsed() >= Duration::from_millis(19),
            "{:?}",
            t.elapsed()
        );
        let t = Instant::now();
        c.wait_until(c.now_ns() + 10_000_000_000, &word, 6);
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }
}
