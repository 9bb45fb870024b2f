//! The stage's admission path, measured in process.
//!
//! The same code the hooks run after their guard ([`sluice_core::gate::Gate`]): resolve
//! an absolute path against the managed places, find the rule, reserve on its bucket in a
//! segment, count. "Managed" uses a catch-all rule whose rate is never reached, so the
//! figure is the cost of admission itself, not of waiting; "unmanaged" is a path under
//! /proc, judged and counted only.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use sluice_control::clock::MonotonicClock;
use sluice_core::bucket::Limit;
use sluice_core::classify::Compiled;
use sluice_core::config::StageConfig;
use sluice_core::gate::{Gate, Size, ThreadState};
use sluice_core::op::Op;
use sluice_core::path::is_normal;
use sluice_core::rule::{Identity, parse_rule};
use sluice_core::segment::Segment;

/// Figures of one run.
#[derive(Clone, Debug)]
pub struct StageBench {
    /// Nanoseconds per managed, unthrottled admission (one thread).
    pub managed_ns_per_op: f64,
    /// Nanoseconds per unmanaged call (one thread).
    pub unmanaged_ns_per_op: f64,
    /// Managed admissions per second with 1..=N threads.
    pub threads: Vec<ThreadFigure>,
}

/// Admissions per second with `n` threads.
#[derive(Clone, Debug)]
pub struct ThreadFigure {
    /// Threads.
    pub n: usize,
    /// Millions of admissions per second, all threads together.
    pub mops: f64,
}

struct Bench {
    segment: Box<Segment>,
    compiled: Compiled,
}

impl Bench {
    fn new() -> Self {
        let rule = parse_rule("rate=1000000M/s").expect("a valid rule");
        let mut segment = Box::<Segment>::new_uninit();
        // SAFETY: all-zero bytes are a valid segment.
        let segment = unsafe {
            std::ptr::write_bytes(segment.as_mut_ptr() as *mut u8, 0, Segment::SIZE);
            segment.assume_init()
        };
        let limit = Limit::new(rule.rate.per_sec, rule.burst_or_default());
        segment
            .init("job bench\n", &[(0, limit)], 0)
            .expect("config fits");
        let rules = StageConfig::slot_in_order(vec![rule]);
        let compiled = Compiled::new(&rules, &[], &[], &Identity::default(), None)
            .expect("no places to check");
        Bench { segment, compiled }
    }

    fn gate(&self) -> Gate<'_> {
        Gate {
            segment: &self.segment,
            compiled: &self.compiled,
        }
    }

    /// One call as a hook makes it: judge the path, then admit and count, or count it
    /// as unmanaged.
    #[inline]
    fn call(&self, ts: &mut ThreadState, path: &[u8]) {
        let places = self.compiled.places();
        let place = if is_normal(path) {
            places.lookup(path)
        } else {
            0
        };
        let gate = self.gate();
        if places.is_managed(place) {
            // The hooks' managed lane, and the full admission when it cannot take the call.
            if let Some(lone) = self.compiled.lone_count_channel(Op::Getattr, place)
                && gate.pass_from_batch(ts, &MonotonicClock, Op::Getattr, lone)
            {
                return;
            }
            let t = gate.admit(ts, &MonotonicClock, Op::Getattr, place, Size::Known(0));
            gate.finish(ts, &MonotonicClock, t, 0);
        } else {
            gate.unmanaged(ts);
        }
    }

    fn ns_per_op(&self, path: &[u8], iters: u64) -> f64 {
        let mut ts = ThreadState::new();
        let start = Instant::now();
        for _ in 0..iters {
            self.call(&mut ts, black_box(path));
        }
        start.elapsed().as_nanos() as f64 / iters as f64
    }

    fn mops(&self, threads: usize, window: Duration) -> f64 {
        let barrier = Barrier::new(threads);
        let total: u64 = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut ts = ThreadState::new();
                        let path: &[u8] = b"/scratch/bench/file";
                        barrier.wait();
                        let end = Instant::now() + window;
                        let mut n = 0u64;
                        while Instant::now() < end {
                            for _ in 0..1024 {
                                self.call(&mut ts, black_box(path));
                            }
                            n += 1024;
                        }
                        n
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap_or(0)).sum()
        });
        total as f64 / window.as_secs_f64() / 1e6
    }
}

/// Measures the admission path with 1..=`max_threads` threads.
pub fn run(max_threads: usize) -> StageBench {
    let b = Bench::new();
    let iters = 2_000_000;
    b.ns_per_op(b"/scratch/warm", iters / 4);
    let managed = b.ns_per_op(b"/scratch/bench/file", iters);
    let unmanaged = b.ns_per_op(b"/proc/self/status", iters);
    let threads = (1..=max_threads.max(1))
        .map(|n| ThreadFigure {
            n,
            mops: b.mops(n, Duration::from_millis(1000)),
        })
        .collect();
    StageBench {
        managed_ns_per_op: managed,
        unmanaged_ns_per_op: unmanaged,
        threads,
    }
}
