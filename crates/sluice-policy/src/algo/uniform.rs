//! `uniform`: the same rate for every active job (PADLL's uniform policy).

use super::Allocator;
use crate::error::{PolicyError, Problem};
use crate::obs::{Round, is_positive};

/// Every active job gets the same rate: the fixed `rate` when one is set, otherwise
/// capacity / number of active jobs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Uniform {
    rate: Option<f64>,
}

impl Uniform {
    /// A fixed per-job rate (finite, > 0), or `None` for an equal split of the capacity.
    pub fn new(rate: Option<f64>) -> Result<Self, PolicyError> {
        if rate.is_some_and(|r| !is_positive(r)) {
            return Err(PolicyError::Param {
                name: "rate",
                problem: Problem::NotPositive,
            });
        }
        Ok(Uniform { rate })
    }
}

impl Allocator for Uniform {
    fn allocate(&mut self, round: &Round<'_>) -> Vec<f64> {
        let jobs = round.jobs().len();
        let each = self
            .rate
            .unwrap_or_else(|| round.capacity() / jobs.max(1) as f64);
        vec![each; jobs]
    }
}
