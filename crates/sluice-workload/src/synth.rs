//! Synthetic metadata traces with the statistics of a production Lustre file system.
//!
//! §2.1 of the PADLL paper describes 30 days of the metadata load of ABCI's Lustre
//! file system: a mean of 200 kops/s; periods of more than 400 kops/s that last; bursts
//! that peak at 1 Mops/s; an extremely volatile load that often drops to 50 kops/s or less
//! and spikes straight back to 450 kops/s or more; `open`, `close`, `getattr` and `rename`
//! 98% of all operations, `getattr` about 47%. The original trace is not public, and the
//! paper's own replayer ran synthetic traces "that follow a variable metadata rate
//! distribution"; this module makes such traces, scaled to a mean, second by second.
//!
//! The load moves between four regimes, each lasting a few seconds: lulls (0.08–0.22 ×
//! the mean), normal load (0.45–1.1 ×), high load (1.9–2.6 ×) and bursts (3–5 ×). A lull
//! is often followed at once by high load or a burst. Every trace has at least one lull
//! and one burst, its busiest second is exactly 5 × the mean, and the mean is exact: the
//! normal and high seconds are scaled to make it so, and a draw that would need them
//! scaled by less than 0.6 or more than 1.6 is drawn again. Each second divides its load
//! among the operations by [`MIX`], each share varied by up to ±20% and the shares then
//! normalised, so that every operation's rate is volatile too. Rates are whole calls per
//! second, rounded with the remainder carried to the next second, so that each operation's
//! total is its exact share of the whole.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use sluice_core::op::Op;

use crate::trace::Trace;

/// Each operation's share of all calls, in percent. `open` (29 kops/s), `close`
/// (43.5 kops/s) and `getattr` (95.8 kops/s, "≈ 47%") of a 200 kops/s mean are the
/// paper's figures; `rename` is what brings the four to 98%. The paper does not divide
/// the other 2%: that split is ours.
pub const MIX: [(Op, f64); 11] = [
    (Op::Open, 14.5),
    (Op::Close, 21.75),
    (Op::Getattr, 47.0),
    (Op::Setattr, 0.4),
    (Op::Rename, 14.75),
    (Op::Unlink, 0.6),
    (Op::Statfs, 0.1),
    (Op::Sync, 0.1),
    (Op::Mkdir, 0.15),
    (Op::Rmdir, 0.15),
    (Op::Mknod, 0.5),
];

/// The shortest trace made: long enough to hold a lull, a burst and the mean.
pub const MIN_SECONDS: u32 = 10;

/// The busiest second of every trace, as a multiple of the mean (1 Mops/s over 200 kops/s).
pub const PEAK: f64 = 5.0;

/// What to make.
#[derive(Clone, Copy, Debug)]
pub struct SynthSpec {
    /// Mean calls per second over the trace.
    pub mean: f64,
    /// Length in seconds, at least [`MIN_SECONDS`].
    pub seconds: u32,
    /// The random seed: the same seed and spec give the same trace, byte for byte.
    pub seed: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Regime {
    Lull,
    Normal,
    High,
    Burst,
}

/// A regime's load (a multiple of the mean), how many seconds it lasts, and the
/// probability of each regime after it (in the order of [`Regime`]).
struct Shape {
    level: (f64, f64),
    dwell: (u32, u32),
    next: [f64; 4],
}

const REGIMES: [Regime; 4] = [Regime::Lull, Regime::Normal, Regime::High, Regime::Burst];

impl Regime {
    fn shape(self) -> Shape {
        // Over a long trace this spends about 20% of seconds in lulls, 60% normal, 16%
        // high and 4% in bursts, for a mean near 1 before scaling.
        match self {
            Regime::Lull => Shape {
                level: (0.08, 0.22),
                dwell: (2, 8),
                next: [0.0, 0.5, 0.35, 0.15],
            },
            Regime::Normal => Shape {
                level: (0.45, 1.1),
                dwell: (5, 20),
                next: [0.45, 0.0, 0.35, 0.2],
            },
            Regime::High => Shape {
                level: (1.9, 2.6),
                dwell: (2, 8),
                next: [0.3, 0.6, 0.0, 0.1],
            },
            Regime::Burst => Shape {
                level: (3.0, 5.0),
                dwell: (1, 3),
                next: [0.4, 0.45, 0.15, 0.0],
            },
        }
    }

    /// Whether the mean correction scales this regime's seconds.
    fn flexible(self) -> bool {
        matches!(self, Regime::Normal | Regime::High)
    }
}

fn uniform(rng: &mut Xoshiro256PlusPlus, (lo, hi): (f64, f64)) -> f64 {
    lo + (hi - lo) * rng.random::<f64>()
}

/// The next regime after `r`.
fn after(rng: &mut Xoshiro256PlusPlus, r: Regime) -> Regime {
    let mut x = rng.random::<f64>();
    let next = r.shape().next;
    for (i, p) in next.iter().enumerate() {
        if x < *p {
            return REGIMES[i];
        }
        x -= p;
    }
    // Rounding left x a hair above the last probability.
    REGIMES[next.iter().rposition(|p| *p > 0.0).unwrap_or(0)]
}

/// One draw of the load, second by second, as multiples of the mean: `None` when it
/// lacks a lull or a burst or would need too strong a correction of its mean.
fn draw(rng: &mut Xoshiro256PlusPlus, n: usize) -> Option<Vec<f64>> {
    let mut load = Vec::with_capacity(n);
    let mut kinds = Vec::with_capacity(n);
    let mut regime = Regime::Normal;
    while load.len() < n {
        let shape = regime.shape();
        let dwell = rng.random_range(shape.dwell.0..=shape.dwell.1) as usize;
        let level = uniform(rng, shape.level);
        for _ in 0..dwell.min(n - load.len()) {
            load.push(match regime {
                // Each second of a burst its own height: bursts are spiky, not plateaus.
                Regime::Burst => uniform(rng, shape.level),
                Regime::Lull => (level * uniform(rng, (0.85, 1.15))).min(0.24),
                _ => level * uniform(rng, (0.85, 1.15)),
            });
            kinds.push(regime);
        }
        regime = after(rng, regime);
    }
    if !kinds.contains(&Regime::Lull) {
        return None;
    }
    let peak = (0..n)
        .filter(|&i| kinds[i] == Regime::Burst)
        .max_by(|&a, &b| load[a].total_cmp(&load[b]))?;
    load[peak] = PEAK;
    let (fixed, flexible) = (0..n).fold((0.0, 0.0), |(f, x), i| {
        if kinds[i].flexible() {
            (f, x + load[i])
        } else {
            (f + load[i], x)
        }
    });
    let scale = (n as f64 - fixed) / flexible;
    // Within these bounds a normal second stays above a lull (0.45 × 0.85 × 0.6 > 0.22)
    // and a high one below the peak (2.6 × 1.15 × 1.6 < 5).
    if !(0.6..=1.6).contains(&scale) {
        return None;
    }
    for (x, k) in load.iter_mut().zip(&kinds) {
        if k.flexible() {
            *x *= scale;
        }
    }
    Some(load)
}

/// Makes a trace. `spec.seconds` below [`MIN_SECONDS`] is taken as [`MIN_SECONDS`].
pub fn synth(spec: &SynthSpec) -> Trace {
    let n = spec.seconds.max(MIN_SECONDS) as usize;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(spec.seed);
    // A draw is refused rarely for long traces and about half the time for the shortest.
    let load = loop {
        if let Some(load) = draw(&mut rng, n) {
            break load;
        }
    };
    let mut rates = vec![Vec::with_capacity(n); MIX.len()];
    let mut carry = [0.0; MIX.len()];
    for x in load {
        let weights: Vec<f64> = MIX
            .iter()
            .map(|(_, pct)| pct * uniform(&mut rng, (0.8, 1.2)))
            .collect();
        let sum: f64 = weights.iter().sum();
        for (k, w) in weights.iter().enumerate() {
            let exact = x * spec.mean * w / sum + carry[k];
            let whole = exact.round().max(0.0);
            carry[k] = exact - whole;
            rates[k].push(whole);
        }
    }
    Trace {
        ops: MIX.iter().map(|(op, _)| *op).collect(),
        rates,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_is_in_table_order_and_sums_to_100() {
        assert!(MIX.windows(2).all(|w| w[0].0 < w[1].0));
        assert!((MIX.iter().map(|m| m.1).sum::<f64>() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn short_and_long_traces_hold_mean_peak_and_lull() {
        for (seconds, seed) in [(10, 0), (10, 1), (37, 2), (600, 3)] {
            let t = synth(&SynthSpec {
                mean: 1000.0,
                seconds,
                seed,
            });
            let s = t.stats();
            assert_eq!(s.seconds, seconds as usize);
            // Whole calls: each of the 11 columns is off by less than one call in all.
            assert!((s.mean - 1000.0).abs() * seconds as f64 <= 11.0, "{s}");
            assert!((s.peak / 1000.0 - PEAK).abs() < 0.02, "{s}");
            assert!(s.low <= 250.0, "{s}");
        }
    }
}
