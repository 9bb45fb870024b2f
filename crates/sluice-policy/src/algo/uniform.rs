//! `uniform`: PADLL's uniform rate distribution — every job held to one fixed rate,
//! whatever the others do.

use super::Allocator;
use crate::error::{PolicyError, Problem};
use crate::obs::{Round, is_positive};

/// How a fixed rate is set: outright, or as an equal part of the pool's capacity. The
/// part is the capacity over the number of parts the pool is set up for — not over the
/// jobs active now — so a job's rate never grows when others are idle or gone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FixedRate {
    /// This many ops/s or bytes/s per part.
    Rate(f64),
    /// The capacity divided into this many parts.
    Parts(f64),
}

impl FixedRate {
    /// From the two parameters an algorithm takes for it, exactly one of which is set:
    /// `rate` (finite, > 0) or `parts` (finite, > 0, and a whole number ≥ 1 when
    /// `whole`), named `parts_name`; `choices` says both for the error.
    pub(crate) fn from_params(
        algorithm: &'static str,
        rate: Option<f64>,
        parts: Option<f64>,
        (parts_name, whole): (&'static str, bool),
        choices: &'static str,
    ) -> Result<Self, PolicyError> {
        match (rate, parts) {
            (Some(rate), None) if is_positive(rate) => Ok(FixedRate::Rate(rate)),
            (Some(_), None) => Err(PolicyError::Param {
                name: "rate",
                problem: Problem::NotPositive,
            }),
            (None, Some(parts)) if whole && !(parts >= 1.0 && parts.fract() == 0.0) => {
                Err(PolicyError::Param {
                    name: parts_name,
                    problem: Problem::NotCount,
                })
            }
            (None, Some(parts)) if is_positive(parts) => Ok(FixedRate::Parts(parts)),
            (None, Some(_)) => Err(PolicyError::Param {
                name: parts_name,
                problem: Problem::NotPositive,
            }),
            _ => Err(PolicyError::ParamChoice { algorithm, choices }),
        }
    }

    /// The rate of one part in a pool of `capacity`.
    pub fn per_part(self, capacity: f64) -> f64 {
        match self {
            FixedRate::Rate(rate) => rate,
            FixedRate::Parts(parts) => capacity / parts,
        }
    }
}

/// Every active job gets the same fixed rate: `rate`, or capacity / `jobs`, the number
/// of jobs the pool is set up for (PADLL's §5.3: 110 kops/s / 4 = 27.5 kops/s per job).
/// What a job does not use is not lent, and a job alone keeps its rate: no work
/// conservation. More jobs than `jobs` at once take more than the capacity between them.
#[derive(Debug, Clone, Copy)]
pub struct Uniform {
    rate: FixedRate,
}

impl Uniform {
    /// Every job at `rate`.
    pub fn new(rate: FixedRate) -> Self {
        Uniform { rate }
    }
}

impl Allocator for Uniform {
    fn allocate(&mut self, round: &Round<'_>) -> Vec<f64> {
        vec![self.rate.per_part(round.capacity()); round.jobs().len()]
    }
}
