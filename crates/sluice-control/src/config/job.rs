//! Job settings: a job's limit (reservation) and weight, in one pool or in every pool.

use sluice_core::rule::{Cond, Rate, parse_rule};
use sluice_policy::Problem;

use super::pool::{FieldError, PoolSpec, pool_names};

/// A job's reservation and weight, in one pool or in every pool.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// The job identifier, as in a rule's `job=`.
    pub job: String,
    /// The pool this entry is for; `None` for every pool (a limit then applies to the
    /// pools counting its unit, see [`ControlConfig::job_terms`](super::ControlConfig::job_terms)).
    pub pool: Option<String>,
    /// The job's limit (reservation), in its pool's unit.
    pub limit: Option<Rate>,
    /// The job's weight, a finite number above zero.
    pub weight: Option<f64>,
    /// The job's I/O period when known (`set10` places it by it instead of detecting
    /// it), more than zero.
    pub period: Option<std::time::Duration>,
}

impl JobSpec {
    /// Checks the entry against the pools it may name.
    pub(super) fn check(&self, pools: &[PoolSpec]) -> Result<(), FieldError> {
        // A job identifier is whatever a rule's job= takes as one value.
        let one_job = [Cond::Job(vec![self.job.clone()])];
        let is_job_id = parse_rule(&format!("job={} rate=0/s", self.job))
            .is_ok_and(|rule| rule.conds == one_job);
        if !is_job_id {
            return Err(FieldError::new(
                "job",
                format_args!(
                    "{:?} is not a job identifier (e.g. 4242 or 4242_7: printable, \
                     without spaces or commas)",
                    self.job
                ),
            ));
        }
        if let Some(name) = &self.pool {
            let Some(pool) = pools.iter().find(|pool| pool.name == *name) else {
                return Err(FieldError::new(
                    "pool",
                    format_args!("no pool is named {name:?} ({})", pool_names(pools)),
                ));
            };
            if let Some(limit) = self.limit
                && limit.unit != pool.capacity.unit
            {
                return Err(FieldError::new(
                    "limit",
                    format_args!(
                        "{limit} counts {}, but pool {name:?} counts {} (its capacity is {})",
                        limit.unit, pool.capacity.unit, pool.capacity
                    ),
                ));
            }
        }
        if let Some(weight) = self.weight
            && !(weight.is_finite() && weight > 0.0)
        {
            return Err(FieldError::new("weight", Problem::NotPositive));
        }
        if self.period.is_some_and(|p| p.is_zero()) {
            return Err(FieldError::new("period", "must be more than zero"));
        }
        if self.limit.is_none() && self.weight.is_none() && self.period.is_none() {
            return Err(FieldError::whole(
                "expected a limit, a weight or a period (or several)",
            ));
        }
        Ok(())
    }
}

/// Reads a job's limit.
pub(super) fn parse_limit(text: &str) -> Result<Rate, FieldError> {
    text.parse().map_err(|e| FieldError::new("limit", e))
}
