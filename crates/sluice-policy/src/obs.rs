//! What an algorithm sees of one interval: the pool's capacity, the interval's length
//! and one [`Observation`] per active job, checked once by [`Round::new`] so that no
//! algorithm has to guard against NaN, negative rates or duplicate ids.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{PolicyError, Problem};

/// A quantity of a pool: a plain number (ops/s or bytes/s) for single-resource pools,
/// [`OpsBytes`] for the two-resource pool that `drf` divides.
pub trait Amount: Copy + fmt::Debug + PartialEq + Send + Sync + 'static {
    /// Names of the components, in order; a single empty name for a plain number.
    const PARTS: &'static [&'static str];
    /// Component `i` (in [`Self::PARTS`] order).
    fn part(&self, i: usize) -> f64;
    /// Builds a value from its components in [`Self::PARTS`] order; missing ones are 0.
    fn from_parts(parts: &[f64]) -> Self;
}

impl Amount for f64 {
    const PARTS: &'static [&'static str] = &[""];

    fn part(&self, _: usize) -> f64 {
        *self
    }

    fn from_parts(parts: &[f64]) -> Self {
        parts.first().copied().unwrap_or(0.0)
    }
}

/// A metadata rate and a bandwidth together, for pools divided with `drf`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct OpsBytes {
    /// Metadata operations per second.
    pub ops: f64,
    /// Bytes per second.
    pub bytes: f64,
}

impl Amount for OpsBytes {
    const PARTS: &'static [&'static str] = &["ops", "bytes"];

    fn part(&self, i: usize) -> f64 {
        if i == 0 { self.ops } else { self.bytes }
    }

    fn from_parts(parts: &[f64]) -> Self {
        let at = |i: usize| parts.get(i).copied().unwrap_or(0.0);
        OpsBytes {
            ops: at(0),
            bytes: at(1),
        }
    }
}

/// The fields of an [`Observation`], as named in errors and in `sluice alloc` input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JobField {
    /// The job's id.
    Id,
    /// The administrator's limit, demand or reservation.
    Limit,
    /// The rate admitted in the last interval.
    Usage,
    /// The rate asked for in the last interval (admitted + held).
    Arrivals,
    /// Priority weight.
    Weight,
    /// Compute nodes held.
    Nodes,
    /// Characteristic I/O period in seconds.
    PeriodS,
}

impl JobField {
    /// Every field, in the order `sluice alloc` documents them.
    pub const ALL: [JobField; 7] = [
        JobField::Id,
        JobField::Limit,
        JobField::Usage,
        JobField::Arrivals,
        JobField::Weight,
        JobField::Nodes,
        JobField::PeriodS,
    ];

    /// The field's name in input files and error messages.
    pub fn name(self) -> &'static str {
        match self {
            JobField::Id => "id",
            JobField::Limit => "limit",
            JobField::Usage => "usage",
            JobField::Arrivals => "arrivals",
            JobField::Weight => "weight",
            JobField::Nodes => "nodes",
            JobField::PeriodS => "period_s",
        }
    }
}

impl fmt::Display for JobField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One job's activity over the last interval, as the control plane measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation<A = f64> {
    /// The job's id (the resource manager's job id, or any unique string).
    pub id: String,
    /// The administrator's limit, demand or reservation for the job.
    pub limit: A,
    /// The rate the job was admitted at in the last interval.
    pub usage: A,
    /// The rate the job asked for in the last interval (admitted + held).
    pub arrivals: A,
    /// Priority weight; 1 when not given.
    pub weight: Option<f64>,
    /// Compute nodes the job holds; 1 when not given.
    pub nodes: Option<u32>,
    /// The job's characteristic I/O period in seconds, when known.
    pub period_s: Option<f64>,
}

impl<A: Amount> Observation<A> {
    /// An observation with no weight, node count or period given.
    pub fn new(id: impl Into<String>, limit: A, usage: A, arrivals: A) -> Self {
        Observation {
            id: id.into(),
            limit,
            usage,
            arrivals,
            weight: None,
            nodes: None,
            period_s: None,
        }
    }

    /// The weight, 1 when not given.
    pub fn weight_or_one(&self) -> f64 {
        self.weight.unwrap_or(1.0)
    }

    /// Whether the job asked for anything in the last interval.
    pub fn has_arrivals(&self) -> bool {
        (0..A::PARTS.len()).any(|i| self.arrivals.part(i) > 0.0)
    }

    fn check(&self, index: usize) -> Result<(), PolicyError> {
        let job_error = |field, part, problem| PolicyError::Job {
            index,
            field,
            part,
            problem,
        };
        for (field, amount) in [
            (JobField::Limit, self.limit),
            (JobField::Usage, self.usage),
            (JobField::Arrivals, self.arrivals),
        ] {
            for (i, part) in A::PARTS.iter().enumerate() {
                if !is_rate(amount.part(i)) {
                    return Err(job_error(field, part, Problem::NotNonNegative));
                }
            }
        }
        if self.weight.is_some_and(|w| !is_positive(w)) {
            return Err(job_error(JobField::Weight, "", Problem::NotPositive));
        }
        if self.nodes == Some(0) {
            return Err(job_error(JobField::Nodes, "", Problem::NotCount));
        }
        if self.period_s.is_some_and(|p| !is_positive(p)) {
            return Err(job_error(JobField::PeriodS, "", Problem::NotPositive));
        }
        Ok(())
    }
}

/// A finite number ≥ 0: what every rate and amount must be.
pub(crate) fn is_rate(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

/// A finite number > 0: what capacities, weights, periods and lengths must be.
pub(crate) fn is_positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// One control interval, validated: every algorithm takes one of these.
///
/// Jobs absent from `jobs` are inactive for the interval. Rates come back in the order
/// of `jobs`.
#[derive(Debug, Clone, Copy)]
pub struct Round<'a, A = f64> {
    capacity: A,
    interval_s: f64,
    jobs: &'a [Observation<A>],
    /// Whether `jobs` come in increasing order of id, as the controllers give them:
    /// their order by id is then their index order, and no id need be compared again.
    by_id: bool,
}

impl<'a, A: Amount> Round<'a, A> {
    /// Checks the pool's capacity (finite, > 0), the interval's length (finite, > 0) and
    /// every observation (finite rates ≥ 0, weight and period > 0, nodes ≥ 1, ids unique).
    pub fn new(
        capacity: A,
        interval_s: f64,
        jobs: &'a [Observation<A>],
    ) -> Result<Self, PolicyError> {
        for (i, part) in A::PARTS.iter().enumerate() {
            if !is_positive(capacity.part(i)) {
                return Err(PolicyError::Capacity {
                    part,
                    problem: Problem::NotPositive,
                });
            }
        }
        if !is_positive(interval_s) {
            return Err(PolicyError::Param {
                name: "interval_s",
                problem: Problem::NotPositive,
            });
        }
        for (index, job) in jobs.iter().enumerate() {
            job.check(index)?;
        }
        // Strictly increasing ids are unique: a set of them is needed only otherwise.
        let by_id = jobs.windows(2).all(|w| w[0].id < w[1].id);
        if !by_id {
            let mut seen = HashSet::with_capacity(jobs.len());
            if let Some(index) = jobs.iter().position(|job| !seen.insert(job.id.as_str())) {
                return Err(PolicyError::Job {
                    index,
                    field: JobField::Id,
                    part: "",
                    problem: Problem::DuplicateId(jobs[index].id.clone()),
                });
            }
        }
        Ok(Round {
            capacity,
            interval_s,
            jobs,
            by_id,
        })
    }

    /// The pool's capacity per second.
    pub fn capacity(&self) -> A {
        self.capacity
    }

    /// The interval's length in seconds.
    pub fn interval_s(&self) -> f64 {
        self.interval_s
    }

    /// The active jobs' observations.
    pub fn jobs(&self) -> &'a [Observation<A>] {
        self.jobs
    }

    /// Jobs `a` and `b` (indices) in order of id: the tie-break that makes every
    /// service order independent of the order the jobs came in.
    pub(crate) fn cmp_ids(&self, a: usize, b: usize) -> Ordering {
        if self.by_id {
            a.cmp(&b)
        } else {
            self.jobs[a].id.cmp(&self.jobs[b].id)
        }
    }
}

impl Round<'_, f64> {
    /// Job indices in increasing order of `limit`, ties by id: the service order of the
    /// reservation-first algorithms (PADLL's proportional sharing and PSFA).
    pub(crate) fn by_limit_then_id(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.jobs.len()).collect();
        // Ids are unique, so no two jobs tie: an unstable sort gives the one order.
        order.sort_unstable_by(|&a, &b| {
            let limit = self.jobs[a].limit.total_cmp(&self.jobs[b].limit);
            limit.then_with(|| self.cmp_ids(a, b))
        });
        order
    }

    /// One field of every job, in job order.
    pub(crate) fn column(&self, field: impl Fn(&Observation) -> f64) -> Vec<f64> {
        self.jobs.iter().map(field).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(ids_and_limits: &[(&str, f64)]) -> Vec<Observation> {
        ids_and_limits
            .iter()
            .map(|&(id, limit)| Observation::new(id, limit, 0.0, 0.0))
            .collect()
    }

    #[test]
    fn a_duplicate_id_is_refused_in_order_or_not() {
        for list in [
            &[("a", 1.0), ("a", 1.0)][..],
            &[("b", 1.0), ("a", 1.0), ("b", 1.0)],
        ] {
            let err = Round::new(10.0, 1.0, &jobs(list)).expect_err("duplicate");
            assert!(
                matches!(
                    err,
                    PolicyError::Job {
                        field: JobField::Id,
                        ..
                    }
                ),
                "{err:?}"
            );
        }
    }

    #[test]
    fn the_service_order_breaks_ties_by_id_whatever_the_order_given() {
        let sorted = jobs(&[("a", 2.0), ("b", 1.0), ("c", 2.0), ("d", 1.0)]);
        let shuffled = jobs(&[("c", 2.0), ("d", 1.0), ("a", 2.0), ("b", 1.0)]);
        let ids = |list: &[Observation]| {
            let round = Round::new(10.0, 1.0, list).expect("valid");
            let order = round.by_limit_then_id();
            order
                .iter()
                .map(|&i| list[i].id.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&sorted), ["b", "d", "a", "c"]);
        assert_eq!(ids(&shuffled), ["b", "d", "a", "c"]);
    }
}
