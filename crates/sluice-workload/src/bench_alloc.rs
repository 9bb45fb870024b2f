//! `sluice bench alloc`: how long one interval takes, per algorithm and job count.
//!
//! It lives here rather than in sluice-policy because it reads a clock, which the
//! algorithms never do.
//! The workload is generated from a fixed seed, so two runs time the same work.

use std::time::{Duration, Instant};

use serde::Serialize;

use sluice_policy::Allocator;
use sluice_policy::registry::ALGORITHMS;
use sluice_policy::{Amount, Observation, OpsBytes, Round};

/// The job counts `sluice bench alloc` reports.
pub const SIZES: [usize; 3] = [10, 1_000, 100_000];

/// Distinct intervals the workload cycles through, so stateful algorithms see change.
const VARIANTS: usize = 4;
/// Intervals run before timing starts, so stateful algorithms have a past.
const WARM_UP: usize = 2;
/// Intervals timed at least, however long they take.
const MIN_TIMED: u32 = 3;

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct BenchRow {
    /// The algorithm.
    pub algorithm: &'static str,
    /// Active jobs per interval.
    pub jobs: usize,
    /// Intervals timed.
    pub intervals: u32,
    /// Mean wall time of one interval (validation of the observations included), in µs.
    pub us_per_interval: f64,
    /// The same, per job, in µs.
    pub us_per_job: f64,
}

/// Times every algorithm at every size in `sizes`, each for at least `budget` (and
/// at least three intervals).
pub fn run(sizes: &[usize], budget: Duration) -> Vec<BenchRow> {
    let mut rows = Vec::new();
    for &jobs in sizes {
        let scalar = Workload::new(jobs, |rng| rng.below(100_000.0));
        let dual = Workload::new(jobs, |rng| OpsBytes {
            ops: rng.below(100_000.0),
            bytes: rng.below(1e9),
        });
        for spec in &ALGORITHMS {
            // An algorithm that divides both resources is timed at its harder task.
            let params = spec.sample_params();
            let timed = if spec.builds_ops_bytes() {
                spec.build_ops_bytes(&params)
                    .map(|mut a| dual.time(a.as_mut(), budget))
            } else {
                spec.build(&params)
                    .map(|mut a| scalar.time(a.as_mut(), budget))
            };
            let Ok((intervals, elapsed)) = timed else {
                continue;
            };
            let us_per_interval = elapsed.as_secs_f64() * 1e6 / f64::from(intervals);
            rows.push(BenchRow {
                algorithm: spec.name,
                jobs,
                intervals,
                us_per_interval,
                us_per_job: us_per_interval / jobs.max(1) as f64,
            });
        }
    }
    rows
}

/// A pool and a few intervals of observations of `n` jobs.
struct Workload<A> {
    capacity: A,
    intervals: Vec<Vec<Observation<A>>>,
}

impl<A: Amount> Workload<A> {
    fn new(n: usize, mut draw: impl FnMut(&mut SplitMix) -> A) -> Self {
        let mut rng = SplitMix(0x5EED);
        let limits: Vec<A> = (0..n).map(|_| draw(&mut rng)).collect();
        // Oversubscribed by a quarter: the interesting regime for every algorithm.
        let sums: Vec<f64> = (0..A::PARTS.len())
            .map(|p| 0.8 * limits.iter().map(|l| l.part(p)).sum::<f64>().max(1.0))
            .collect();
        let capacity = A::from_parts(&sums);
        let intervals = (0..VARIANTS)
            .map(|_| {
                limits
                    .iter()
                    .enumerate()
                    .map(|(i, &limit)| Observation {
                        weight: Some(1.0 + rng.below(3.0).floor()),
                        nodes: Some(1 + rng.below(64.0) as u32),
                        // One job in a hundred has a period still to be detected.
                        period_s: (i % 100 != 0).then(|| 0.5 + rng.below(100.0)),
                        ..Observation::new(format!("job{i}"), limit, draw(&mut rng), draw(&mut rng))
                    })
                    .collect()
            })
            .collect();
        Workload {
            capacity,
            intervals,
        }
    }

    fn time(&self, allocator: &mut dyn Allocator<A>, budget: Duration) -> (u32, Duration) {
        let mut one = |k: usize| {
            let jobs = &self.intervals[k % VARIANTS];
            // The workload is valid by construction; an error would only shorten the work.
            Round::new(self.capacity, 1.0, jobs).map_or(0, |round| allocator.allocate(&round).len())
        };
        for k in 0..WARM_UP {
            std::hint::black_box(one(k));
        }
        let start = Instant::now();
        let mut timed = 0;
        while timed < MIN_TIMED || start.elapsed() < budget {
            std::hint::black_box(one(WARM_UP + timed as usize));
            timed += 1;
        }
        (timed, start.elapsed())
    }
}

/// A small deterministic generator (SplitMix64): the workload must not vary by run.
struct SplitMix(u64);

impl SplitMix {
    /// Uniform in [0, max).
    fn below(&mut self, max: f64) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64 * max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_is_timed_at_every_size() {
        let rows = run(&[3, 20], Duration::ZERO);
        assert_eq!(rows.len(), 2 * ALGORITHMS.len());
        assert!(
            rows.iter()
                .all(|r| r.intervals >= MIN_TIMED && r.us_per_job.is_finite())
        );
    }
}
