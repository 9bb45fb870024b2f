//! `psfa`: proportional sharing without false allocation, Algorithm 1 of the PADLL
//! paper (Macedo et al.), exactly as printed.

use super::Allocator;
use crate::error::{PolicyError, Problem};
use crate::obs::{Observation, Round};
use crate::share::proportional;

/// PADLL's PSFA (Algorithm 1): jobs in increasing order of `limit` (the paper's
/// demandᵢ), each given, within its fair share of what is left, its usage plus a fraction
/// ε of the gap to its limit when it uses no more than its limit (lines 5–7), or its
/// limit (line 9); what is left then goes to every job in proportion to its usage (lines
/// 11–14), so the whole capacity is handed out.
///
/// Its input is `usage`, the rate each job was admitted at in the last interval; it
/// reads neither `arrivals` nor any memory of earlier intervals. Where every usage is 0
/// (the paper assumes usageᵢ > 0, and line 13 would divide by zero) the leftover is
/// split equally. sluice's variant that also reads `arrivals` and remembers is
/// [`super::PsfaHeld`] (`psfa-held`).
#[derive(Debug, Clone, Copy)]
pub struct Psfa {
    epsilon: f64,
}

impl Psfa {
    /// The fraction of the gap between usage and limit that PADLL grants: 0.25.
    pub const DEFAULT_EPSILON: f64 = 0.25;

    /// PSFA with growth fraction `epsilon` in [0, 1].
    pub fn new(epsilon: f64) -> Result<Self, PolicyError> {
        Ok(Psfa {
            epsilon: checked_epsilon(epsilon)?,
        })
    }
}

impl Default for Psfa {
    fn default() -> Self {
        Psfa {
            epsilon: Self::DEFAULT_EPSILON,
        }
    }
}

/// ε as given, if it is in [0, 1].
pub(crate) fn checked_epsilon(epsilon: f64) -> Result<f64, PolicyError> {
    if (0.0..=1.0).contains(&epsilon) {
        Ok(epsilon)
    } else {
        Err(PolicyError::Param {
            name: "epsilon",
            problem: Problem::NotFraction,
        })
    }
}

/// Lines 2–10 of Algorithm 1: the rate of every job before the leftover, and the
/// leftover left_R. A job for which `at_limit` holds is given its limit (line 9) even
/// when its usage is below it: the paper's rule is `usage > limit`, which `psfa` passes;
/// `psfa-held` widens it.
pub(crate) fn first_pass(
    round: &Round<'_>,
    epsilon: f64,
    at_limit: impl Fn(&Observation) -> bool,
) -> (Vec<f64>, f64) {
    let jobs = round.jobs();
    let mut rates = vec![0.0; jobs.len()];
    let mut left = round.capacity();
    for (served, &i) in round.by_limit_then_id().iter().enumerate() {
        let fair = left / (jobs.len() - served) as f64;
        let job = &jobs[i];
        let want = if job.usage <= job.limit && !at_limit(job) {
            job.usage + (job.limit - job.usage) * epsilon
        } else {
            job.limit
        };
        rates[i] = want.min(fair);
        left = (left - rates[i]).max(0.0);
    }
    (rates, left)
}

impl Allocator for Psfa {
    fn allocate(&mut self, round: &Round<'_>) -> Vec<f64> {
        let (mut rates, left) = first_pass(round, self.epsilon, |_| false);
        let usage = round.column(|job| job.usage);
        for (rate, extra) in rates.iter_mut().zip(proportional(left, &usage)) {
            *rate += extra;
        }
        rates
    }
}
