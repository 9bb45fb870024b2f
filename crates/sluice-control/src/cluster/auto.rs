//! A pool whose capacity is found from the latency of its calls (`capacity = "auto"`):
//! no published system sets Max_R without an administrator. The stage samples the
//! latency of one real call in N, the locals report it per pool, and each cycle the
//! capacity moves as TCP's congestion window does: up by a step while the p99 holds
//! the target and the jobs use what they get, down by a factor when it does not.

use sluice_core::segment::{LATENCY_BUCKETS, Latency, latency_bucket_floor};

/// How an automatic pool's capacity moves; every rate is per second, in the pool's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AutoCapacity {
    /// The p99 latency of the pool's calls to keep, in seconds (finite, > 0).
    pub target_p99_s: f64,
    /// The capacity it starts from.
    pub start: f64,
    /// It never goes below this (> 0).
    pub min: f64,
    /// Nor above this (≥ min).
    pub max: f64,
    /// Added each interval while the target holds and the pool is busy (> 0).
    pub step: f64,
    /// The capacity is multiplied by this when the target is missed (in (0, 1)).
    pub backoff: f64,
    /// Steered by the server's mean reply latency, read from its source (module
    /// `crate::source`) and given with [`super::Cluster::report_server_latency`], instead
    /// of the p99 the stages sample; `target_p99_s` is then that mean's target.
    pub from_server: bool,
}

/// Samples below which an interval's p99 says too little to act on: the capacity holds.
pub const MIN_SAMPLES: u64 = 20;

/// A pool is busy when its jobs asked for at least this fraction of its capacity (their
/// demand, which counts what the pool held back): only then does a held target say the
/// capacity could be higher. Demand rather than use: a job starved by a slow server uses
/// little, and use alone would keep a capacity cut to its floor there for good.
pub const BUSY: f64 = 0.9;

/// The capacity grows only while the latency is under this fraction of the target, and
/// holds between it and the target: a pool that grew whenever the target held would
/// probe past it every few intervals (each probe a second over the target, then a cut),
/// a sawtooth in which the other jobs lose what the probe lends; with the band the
/// capacity rests where the latency is near the target and under it.
pub const GROW_BELOW: f64 = 0.8;

/// Intervals that must each hold the target after one that missed it before the
/// capacity grows again. A latency read each interval swings by a fifth around its
/// median on a busy node (the MDS's per-second mean: p90 1.1-1.3 times the median), so a
/// pool that grew whenever one interval came in under the band rested with its median in
/// the band and missed the target in a fifth of the intervals (2026-11-28, CephFS); after
/// a miss it now cuts and holds for this long, and rests where a miss is rare.
pub const GROW_AFTER: u64 = 10;

/// Intervals after a cut before another: the cut's effect shows in the next interval's
/// latencies only (rates reach the stages during it), so cutting again at once would
/// answer the same overload twice.
pub const CUT_SPACING: u64 = 2;

/// An automatic pool's state between cycles.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AutoState {
    /// The capacity in force, units per second.
    pub capacity: f64,
    /// The last interval's latency that steered it, seconds: the p99 of the sampled
    /// calls (`None` without enough samples), or the server's mean reply latency (`None`
    /// without a reading or a reply).
    pub p99_s: Option<f64>,
    /// Samples in the last interval.
    pub samples: u64,
    /// The cycle of the last cut.
    cut_at: Option<u64>,
    /// The cycle of the last interval over the target.
    missed_at: Option<u64>,
}

impl AutoState {
    /// The state of a pool starting at `spec.start`.
    pub fn new(spec: &AutoCapacity) -> Self {
        AutoState {
            capacity: spec.start.clamp(spec.min, spec.max),
            ..AutoState::default()
        }
    }

    /// Numbers the cycle of the last cut by `f` (the controller's interval changed).
    pub(super) fn renumber(&mut self, f: impl Fn(u64) -> u64) {
        self.cut_at = self.cut_at.map(&f);
        self.missed_at = self.missed_at.map(f);
    }

    /// Moves the capacity after `cycle`, given the latencies sampled over the interval
    /// and what the pool's jobs asked for (units per second).
    pub fn update(&mut self, spec: &AutoCapacity, cycle: u64, latency: &Latency, asked: f64) {
        self.samples = latency.count();
        self.p99_s = (self.samples >= MIN_SAMPLES)
            .then(|| quantile_ns(latency, 0.99))
            .flatten()
            .map(|ns| ns / 1e9);
        if let Some(p99) = self.p99_s {
            self.steer(spec, cycle, p99, asked);
        }
    }

    /// Moves the capacity after `cycle` by the server's mean reply latency over the
    /// interval (`None`: no reading, or no reply in it: the capacity holds).
    pub fn update_from_server(
        &mut self,
        spec: &AutoCapacity,
        cycle: u64,
        latency_s: Option<f64>,
        asked: f64,
    ) {
        self.samples = u64::from(latency_s.is_some());
        self.p99_s = latency_s.filter(|l| l.is_finite() && *l >= 0.0);
        if let Some(latency) = self.p99_s {
            self.steer(spec, cycle, latency, asked);
        }
    }

    /// AIMD on one latency figure against the target, with a band under the target in
    /// which the capacity holds, and no growth for [`GROW_AFTER`] intervals after a miss.
    fn steer(&mut self, spec: &AutoCapacity, cycle: u64, latency: f64, asked: f64) {
        if latency > spec.target_p99_s {
            self.missed_at = Some(cycle);
            if self.cut_at.is_none_or(|at| cycle >= at + CUT_SPACING) {
                self.capacity = (self.capacity * spec.backoff).max(spec.min);
                self.cut_at = Some(cycle);
            }
        } else if latency <= GROW_BELOW * spec.target_p99_s
            && asked >= BUSY * self.capacity
            && self.missed_at.is_none_or(|at| cycle >= at + GROW_AFTER)
        {
            self.capacity = (self.capacity + spec.step).min(spec.max);
        }
    }
}

/// The `q` quantile of `l` in nanoseconds, interpolated linearly inside its log2 bucket
/// (the bucket's upper end alone would move in steps of two, too coarse to hold a
/// target); `None` with no sample.
pub fn quantile_ns(l: &Latency, q: f64) -> Option<f64> {
    let n = l.count();
    if n == 0 {
        return None;
    }
    let rank = (q.clamp(0.0, 1.0) * n as f64).max(1.0);
    let mut seen = 0.0;
    for (b, &c) in l.buckets.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let c = c as f64;
        if seen + c >= rank {
            let low = latency_bucket_floor(b) as f64;
            let high = if b + 1 < LATENCY_BUCKETS {
                latency_bucket_floor(b + 1) as f64
            } else {
                low * 2.0
            };
            return Some(low + (high - low) * (rank - seen) / c);
        }
        seen += c;
    }
    None
}

#[cfg(test)]
mod tests {
    use sluice_core::segment::latency_bucket;

    use super::*;

    fn spec() -> AutoCapacity {
        AutoCapacity {
            target_p99_s: 0.004,
            start: 1000.0,
            min: 100.0,
            max: 10_000.0,
            step: 100.0,
            backoff: 0.5,
            from_server: false,
        }
    }

    /// `n` samples of `ns` each.
    fn samples(n: u64, ns: u64) -> Latency {
        let mut l = Latency::default();
        l.buckets[latency_bucket(ns)] = n;
        l.sum_ns = n * ns;
        l
    }

    #[test]
    fn quantile_is_interpolated_inside_its_bucket() {
        // 100 samples in [2^21, 2^22) ns: p50 halfway, p99 near the top.
        let l = samples(100, 3_000_000);
        let p50 = quantile_ns(&l, 0.5).unwrap();
        assert!((p50 - 3_145_728.0).abs() < 1.0, "{p50}");
        let p99 = quantile_ns(&l, 0.99).unwrap();
        assert!(p99 > 4_150_000.0 && p99 <= 4_194_304.0, "{p99}");
        assert_eq!(quantile_ns(&Latency::default(), 0.99), None);
    }

    #[test]
    fn rises_while_busy_and_fast_cuts_when_slow_and_holds_otherwise() {
        let s = spec();
        let mut a = AutoState::new(&s);
        let fast = samples(100, 1_000_000);
        let slow = samples(100, 6_000_000);
        a.update(&s, 1, &fast, 950.0);
        assert_eq!(a.capacity, 1100.0);
        // Idle: the target holds only because nobody asks.
        a.update(&s, 2, &fast, 100.0);
        assert_eq!(a.capacity, 1100.0);
        // Too few samples: nothing learned.
        a.update(&s, 3, &samples(5, 6_000_000), 1100.0);
        assert_eq!((a.capacity, a.p99_s), (1100.0, None));
        a.update(&s, 4, &slow, 1100.0);
        assert_eq!(a.capacity, 550.0);
        // The next interval still shows the overload the cut answers.
        a.update(&s, 5, &slow, 550.0);
        assert_eq!(a.capacity, 550.0);
        a.update(&s, 6, &slow, 550.0);
        assert_eq!(a.capacity, 275.0);
        for cycle in 7..20 {
            a.update(&s, cycle, &slow, 0.0);
        }
        assert_eq!(a.capacity, s.min);
        for cycle in 20..1000 {
            a.update(&s, cycle, &fast, a.capacity);
        }
        assert_eq!(a.capacity, s.max);
    }

    #[test]
    fn after_a_miss_the_capacity_grows_only_once_the_target_held_for_a_stretch() {
        let s = AutoCapacity {
            from_server: true,
            ..spec()
        };
        let mut a = AutoState::new(&s);
        a.update_from_server(&s, 1, Some(0.005), 1000.0);
        assert_eq!(a.capacity, 500.0);
        for cycle in 2..1 + GROW_AFTER {
            a.update_from_server(&s, cycle, Some(0.001), 500.0);
            assert_eq!(a.capacity, 500.0, "cycle {cycle}");
        }
        a.update_from_server(&s, 1 + GROW_AFTER, Some(0.001), 500.0);
        assert_eq!(a.capacity, 600.0);
        // A miss inside the cut's spacing cuts nothing, but still holds the growth.
        a.update_from_server(&s, 20, Some(0.005), 600.0);
        a.update_from_server(&s, 21, Some(0.005), 300.0);
        assert_eq!(a.capacity, 300.0);
        a.update_from_server(&s, 21 + GROW_AFTER - 1, Some(0.001), 300.0);
        assert_eq!(a.capacity, 300.0);
        a.update_from_server(&s, 21 + GROW_AFTER, Some(0.001), 300.0);
        assert_eq!(a.capacity, 400.0);
    }

    #[test]
    fn a_latency_near_the_target_holds_the_capacity() {
        let s = spec();
        let mut a = AutoState::new(&s);
        // 3.5 ms against a 4-ms target: within it, but above 80% of it.
        a.update_from_server(&s, 1, Some(0.0035), 1000.0);
        assert_eq!(a.capacity, 1000.0);
        a.update_from_server(&s, 2, Some(0.003), 1000.0);
        assert_eq!(a.capacity, 1100.0);
    }

    #[test]
    fn a_server_reading_steers_as_a_sampled_p99_does_and_none_holds() {
        let s = AutoCapacity {
            from_server: true,
            ..spec()
        };
        let mut a = AutoState::new(&s);
        a.update_from_server(&s, 1, Some(0.001), 1000.0);
        assert_eq!((a.capacity, a.p99_s), (1100.0, Some(0.001)));
        a.update_from_server(&s, 2, Some(0.009), 1100.0);
        assert_eq!(a.capacity, 550.0);
        // The source failed, or the server answered nothing: the capacity holds.
        a.update_from_server(&s, 5, None, 550.0);
        assert_eq!((a.capacity, a.p99_s), (550.0, None));
    }
}
