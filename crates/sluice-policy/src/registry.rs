//! Choosing an algorithm by name, with parameters: one table, [`ALGORITHMS`], says what
//! each algorithm is called, what it reads and what it takes, and builds it. The
//! command line, the daemons and the docs all read this table, so a new algorithm is
//! one entry here.

use std::collections::BTreeMap;

use crate::algo::{
    AdapTbf, AdapTbfNeed, Allocator, Drf, FixedRate, Priority, PriorityShare, ProportionalSharing,
    Psfa, PsfaHeld, Reservations, Set10, StaticLimits, Uniform, UniformShare,
};
use crate::error::{PolicyError, Problem};
use crate::estimator::Estimator;
use crate::obs::{JobField, OpsBytes, is_positive};

/// A parameter's value as an administrator writes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamValue {
    /// A number.
    Number(f64),
    /// A flag.
    Bool(bool),
}

/// The parameters given to an algorithm, by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params(BTreeMap<String, ParamValue>);

impl Params {
    /// No parameters: every algorithm's defaults.
    pub fn new() -> Self {
        Params::default()
    }

    /// Sets parameter `name`.
    pub fn set(&mut self, name: impl Into<String>, value: ParamValue) -> &mut Self {
        self.0.insert(name.into(), value);
        self
    }

    /// The control interval's length in seconds (`interval_s`, default 1), which every
    /// algorithm is given with each round.
    pub fn interval_s(&self) -> Result<f64, PolicyError> {
        let interval_s = self.number(INTERVAL_S.name)?.unwrap_or(1.0);
        if !is_positive(interval_s) {
            return Err(PolicyError::Param {
                name: INTERVAL_S.name,
                problem: Problem::NotPositive,
            });
        }
        Ok(interval_s)
    }

    fn number(&self, name: &'static str) -> Result<Option<f64>, PolicyError> {
        match self.0.get(name) {
            None => Ok(None),
            Some(ParamValue::Number(x)) => Ok(Some(*x)),
            Some(ParamValue::Bool(_)) => Err(PolicyError::Param {
                name,
                problem: Problem::NotNumber,
            }),
        }
    }

    fn flag(&self, name: &'static str) -> Result<Option<bool>, PolicyError> {
        match self.0.get(name) {
            None => Ok(None),
            Some(ParamValue::Bool(b)) => Ok(Some(*b)),
            Some(ParamValue::Number(_)) => Err(PolicyError::Param {
                name,
                problem: Problem::NotBool,
            }),
        }
    }
}

/// A parameter an algorithm takes.
#[derive(Debug)]
pub struct ParamSpec {
    /// Its name.
    pub name: &'static str,
    /// Its default, as text for help and docs.
    pub default: &'static str,
    /// What it does.
    pub help: &'static str,
}

/// The parameter every algorithm takes.
pub const INTERVAL_S: ParamSpec = ParamSpec {
    name: "interval_s",
    default: "1",
    help: "the control interval in seconds",
};

/// One algorithm: its name, what it is for, what it reads, what it takes.
pub struct Spec {
    /// The name it is chosen by.
    pub name: &'static str,
    /// One line on what it is for.
    pub summary: &'static str,
    /// The observation fields among `limit`, `usage` and `arrivals` it reads: input
    /// for it must give them (the others default to 0).
    pub requires: &'static [JobField],
    /// Whether a job's `limit` is a guarantee (a reservation) rather than its demand: a
    /// controller then gives a job whose administrator set no limit 0 (it shares what the
    /// reservations leave), not its estimated demand, which would reserve it all it asks.
    pub limit_is_guarantee: bool,
    /// Whether it holds each job to a rate of the job's own, whatever the others do
    /// (`static`, `uniform`, `priority`): a controller then hands it the whole capacity,
    /// counts a job's disconnected nodes against that job's own rate rather than the
    /// pool's, and adds no floor (every job has its rate already).
    pub fixed_rate: bool,
    /// Where it reads a job's load, and the figure a controller puts there unless the
    /// pool names another ([`Estimator`]): `None` for the algorithms that read no load.
    pub load: Option<Load>,
    /// Its own parameters (besides [`INTERVAL_S`]).
    pub params: &'static [ParamSpec],
    /// Parameters that build it where its defaults do not (a fixed rate it must be
    /// given), for timing and tests; empty when the defaults build it.
    pub sample: &'static [(&'static str, f64)],
    build: Build<f64>,
    /// How it is built for a pool of a metadata rate and a bandwidth together, if it
    /// divides such pools.
    build_ops_bytes: Option<Build<OpsBytes>>,
}

/// The field in which an algorithm reads a job's load, and the measured figure a
/// controller puts there by default: for a published algorithm the one its paper
/// measures, for sluice's variants the one sluice gave them before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Load {
    /// `usage` or `arrivals`.
    pub field: JobField,
    /// The default figure.
    pub estimator: Estimator,
}

/// Builds an algorithm for pools whose amounts are `A`, from checked parameters.
type Build<A> = fn(&Params) -> Result<Box<dyn Allocator<A>>, PolicyError>;

impl Spec {
    /// Builds the algorithm for a pool of one resource (ops/s or bytes/s), which every
    /// algorithm divides; a parameter it does not take, or a bad value, is an error
    /// that names the parameter.
    pub fn build(&self, params: &Params) -> Result<Box<dyn Allocator<f64>>, PolicyError> {
        self.check(params)?;
        (self.build)(params)
    }

    /// Builds the algorithm for a pool of a metadata rate and a bandwidth together
    /// (`{ops, bytes}`); an algorithm that divides one resource at a time is an error.
    pub fn build_ops_bytes(
        &self,
        params: &Params,
    ) -> Result<Box<dyn Allocator<OpsBytes>>, PolicyError> {
        self.check(params)?;
        let build = self.build_ops_bytes.ok_or(PolicyError::OneResourceOnly {
            algorithm: self.name,
        })?;
        build(params)
    }

    /// The figure a controller feeds it as a job's load: `given` (the pool's setting),
    /// else its default; `None` when it reads no load. An estimator given to an
    /// algorithm that reads no load is an error, so that a setting never silently does
    /// nothing.
    pub fn estimator(&self, given: Option<Estimator>) -> Result<Option<Estimator>, PolicyError> {
        match (self.load, given) {
            (None, Some(_)) => Err(PolicyError::NoLoad {
                algorithm: self.name,
            }),
            (None, None) => Ok(None),
            (Some(load), given) => Ok(Some(given.unwrap_or(load.estimator))),
        }
    }

    /// [`Spec::sample`] as parameters.
    pub fn sample_params(&self) -> Params {
        let mut params = Params::new();
        for &(name, value) in self.sample {
            params.set(name, ParamValue::Number(value));
        }
        params
    }

    /// Whether it divides a metadata rate and a bandwidth together as well as one
    /// resource ([`Spec::build_ops_bytes`]).
    pub fn builds_ops_bytes(&self) -> bool {
        self.build_ops_bytes.is_some()
    }

    /// A parameter it does not take, or a bad `interval_s`, is an error that names the
    /// parameter.
    fn check(&self, params: &Params) -> Result<(), PolicyError> {
        let takes = || {
            self.params
                .iter()
                .chain([&INTERVAL_S])
                .map(|p| p.name)
                .collect::<Vec<_>>()
        };
        if let Some(name) = params
            .0
            .keys()
            .find(|name| !takes().contains(&name.as_str()))
        {
            return Err(PolicyError::UnknownParam {
                name: name.clone(),
                algorithm: self.name,
                takes: takes().join(", "),
            });
        }
        params.interval_s()?;
        Ok(())
    }
}

fn boxed(allocator: impl Allocator<f64> + 'static) -> Result<Box<dyn Allocator<f64>>, PolicyError> {
    Ok(Box::new(allocator))
}

/// The choice `uniform` and `priority` need, in their errors and help.
const UNIFORM_CHOICES: &str = "rate (ops/s or bytes/s per job) or jobs (the capacity / jobs)";
const PRIORITY_CHOICES: &str = "rate (ops/s or bytes/s per unit of weight) or total_weight (the capacity × weight / total_weight)";

const UNIFORM_PARAMS: [ParamSpec; 2] = rate_or(
    "jobs",
    "none: give rate or jobs",
    "the fixed rate of every job",
    "the jobs the pool is set up for: each gets capacity / jobs",
);
const PRIORITY_PARAMS: [ParamSpec; 2] = rate_or(
    "total_weight",
    "none: give rate or total_weight",
    "the fixed rate per unit of weight",
    "the weights of the jobs the pool is set up for, summed: a job gets capacity × weight / total_weight",
);

/// The parameters of a fixed-rate algorithm: `rate`, or the capacity in `parts`, one
/// of the two required (both have the same `default`: there is none).
const fn rate_or(
    parts: &'static str,
    default: &'static str,
    rate_help: &'static str,
    parts_help: &'static str,
) -> [ParamSpec; 2] {
    [
        ParamSpec {
            name: "rate",
            default,
            help: rate_help,
        },
        ParamSpec {
            name: parts,
            default,
            help: parts_help,
        },
    ]
}

// How the table is written: each entry says only what differs from `Spec::new`.
impl Spec {
    /// An algorithm that reads nothing but its jobs' weights, takes no parameter, shares
    /// the capacity (no fixed rate, no guarantee) and divides one resource.
    const fn new(name: &'static str, summary: &'static str, build: Build<f64>) -> Spec {
        Spec {
            name,
            summary,
            requires: &[],
            limit_is_guarantee: false,
            fixed_rate: false,
            load: None,
            params: &[],
            sample: &[],
            build,
            build_ops_bytes: None,
        }
    }

    const fn reads(self, requires: &'static [JobField]) -> Spec {
        Spec { requires, ..self }
    }

    const fn load(self, field: JobField, estimator: Estimator) -> Spec {
        let load = Some(Load { field, estimator });
        Spec { load, ..self }
    }

    /// Reads a job's arrivals, fed its wait-inflated arrivals: sluice's default for the
    /// algorithms that read a load.
    const fn on_arrivals(self) -> Spec {
        self.reads(&[JobField::Arrivals])
            .load(JobField::Arrivals, Estimator::WaitInflated)
    }

    const fn takes(self, params: &'static [ParamSpec]) -> Spec {
        Spec { params, ..self }
    }

    const fn sample(self, sample: &'static [(&'static str, f64)]) -> Spec {
        Spec { sample, ..self }
    }

    const fn fixed_rate(self) -> Spec {
        Spec {
            fixed_rate: true,
            ..self
        }
    }

    const fn limit_is_guarantee(self) -> Spec {
        Spec {
            limit_is_guarantee: true,
            ..self
        }
    }

    const fn ops_bytes(self, build: Build<OpsBytes>) -> Spec {
        Spec {
            build_ops_bytes: Some(build),
            ..self
        }
    }
}

/// Every algorithm, in the order the docs present them: each published one, then
/// sluice's variants of it.
pub static ALGORITHMS: [Spec; 16] = [
    Spec::new("static", "each job gets its limit", |_| boxed(StaticLimits))
        .reads(&[JobField::Limit])
        .fixed_rate(),
    Spec::new(
        "uniform",
        "PADLL's uniform: every job held to one fixed rate, never more when others are idle or gone",
        |p| {
            let rate = fixed_rate(p, "uniform", ("jobs", true), UNIFORM_CHOICES)?;
            boxed(Uniform::new(rate))
        },
    )
    .fixed_rate()
    .takes(&UNIFORM_PARAMS)
    .sample(&[("jobs", 4.0)]),
    Spec::new(
        "uniform-share",
        "sluice's uniform: capacity / active jobs, so a job alone gets the whole pool",
        |_| boxed(UniformShare),
    ),
    Spec::new(
        "priority",
        "PADLL's priority: a fixed rate per job by weight, never more when others are idle or gone",
        |p| {
            let rate = fixed_rate(p, "priority", ("total_weight", false), PRIORITY_CHOICES)?;
            boxed(Priority::new(rate))
        },
    )
    .fixed_rate()
    .takes(&PRIORITY_PARAMS)
    .sample(&[("total_weight", 10.0)]),
    Spec::new(
        "priority-share",
        "sluice's priority: the capacity by weight among the active jobs, no lending",
        |_| boxed(PriorityShare),
    ),
    Spec::new(
        "psharing",
        "max-min fair share with limits as reservations, leftover by limit",
        |_| boxed(ProportionalSharing),
    )
    .reads(&[JobField::Limit]),
    Spec::new(
        "psfa",
        "PADLL's Algorithm 1: proportional sharing without false allocation, on usage",
        |p| boxed(Psfa::new(epsilon(p)?)?),
    )
    .reads(&[JobField::Limit, JobField::Usage])
    .load(JobField::Usage, Estimator::Usage)
    .takes(&[EPSILON]),
    Spec::new(
        "psfa-held",
        "sluice's PSFA: a job asking for its limit keeps it, leftover first to held jobs by rounds held",
        |p| boxed(PsfaHeld::new(epsilon(p)?)?),
    )
    .reads(&[JobField::Limit, JobField::Usage, JobField::Arrivals])
    .load(JobField::Arrivals, Estimator::WaitInflated)
    .takes(&[EPSILON]),
    Spec::new(
        "adaptbf",
        "AdapTBF as published: node shares, surplus to all, lenders paid back",
        |_| boxed(AdapTbf::new()),
    )
    .reads(&[JobField::Arrivals])
    .load(JobField::Arrivals, Estimator::Arrivals),
    Spec::new(
        "adaptbf-bounded",
        "sluice's AdapTBF: a debtor pays back no more than it owes after redistribution",
        |_| boxed(AdapTbf::new().bounded()),
    )
    .on_arrivals(),
    Spec::new(
        "adaptbf-need",
        "sluice's AdapTBF lending only what borrowers need, paying back what lenders lack",
        |_| boxed(AdapTbfNeed::new()),
    )
    .on_arrivals(),
    Spec::new(
        "set10",
        "IO-SETS SET-10: sets by I/O period, exclusive inside a set",
        |_| boxed(Set10::new()),
    )
    .on_arrivals(),
    Spec::new(
        "set10-silence",
        "sluice's SET-10: until detected, a job's longest silence bounds its period and can place it",
        |_| boxed(Set10::new().with_silence_bound()),
    )
    .on_arrivals(),
    Spec::new(
        "set10-ftio",
        "SET-10 fed as the IO-SETS paper's experiment was: FTIO's own rule, no test against noise",
        |_| boxed(Set10::new().with_ftio()),
    )
    .on_arrivals(),
    Spec::new(
        "reservations",
        "SDQoS-style guaranteed reservations, unused capacity handed on",
        |p| {
            boxed(Reservations::new(
                p.flag("work_conserving")?.unwrap_or(true),
            ))
        },
    )
    .reads(&[JobField::Limit, JobField::Arrivals])
    .load(JobField::Arrivals, Estimator::WaitInflated)
    .limit_is_guarantee()
    .takes(&[ParamSpec {
        name: "work_conserving",
        default: "true",
        help: "lend unused reservations to jobs that want more",
    }]),
    Spec::new(
        "drf",
        "dominant resource fairness over ops/s and bytes/s together; on one resource, max-min by weight up to demand",
        |_| boxed(Drf),
    )
    .on_arrivals()
    .ops_bytes(|_| Ok(Box::new(Drf))),
];

/// The fixed rate of `uniform` or `priority`: `rate`, or the capacity in parts (`jobs`,
/// `total_weight`; a whole number when `parts.1`).
fn fixed_rate(
    p: &Params,
    algorithm: &'static str,
    parts: (&'static str, bool),
    choices: &'static str,
) -> Result<FixedRate, PolicyError> {
    FixedRate::from_params(
        algorithm,
        p.number("rate")?,
        p.number(parts.0)?,
        parts,
        choices,
    )
}

/// PSFA's growth fraction, which `psfa` and `psfa-held` both take.
const EPSILON: ParamSpec = ParamSpec {
    name: "epsilon",
    default: "0.25",
    help: "share of the usage-to-limit gap granted for growth",
};

/// [`EPSILON`] as given, or its default.
fn epsilon(p: &Params) -> Result<f64, PolicyError> {
    Ok(p.number(EPSILON.name)?.unwrap_or(Psfa::DEFAULT_EPSILON))
}

/// The algorithm called `name`.
pub fn find(name: &str) -> Result<&'static Spec, PolicyError> {
    ALGORITHMS
        .iter()
        .find(|spec| spec.name == name)
        .ok_or_else(|| PolicyError::UnknownAlgorithm {
            name: name.to_owned(),
            known: ALGORITHMS
                .iter()
                .map(|spec| spec.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_field() {
        let unknown = find("fifo").err().map(|e| e.to_string());
        assert_eq!(
            unknown.as_deref(),
            Some(
                "algorithm: unknown algorithm \"fifo\" (one of: static, uniform, uniform-share, \
                 priority, priority-share, psharing, psfa, psfa-held, adaptbf, adaptbf-bounded, \
                 adaptbf-need, set10, set10-silence, set10-ftio, reservations, drf)"
            )
        );
        let mut params = Params::new();
        params.set("epsilon", ParamValue::Number(2.0));
        let bad = find("psfa").and_then(|s| s.build(&params)).err();
        assert_eq!(
            bad.map(|e| e.to_string()).as_deref(),
            Some("params.epsilon: must be a number between 0 and 1")
        );
        let bad = find("priority-share").and_then(|s| s.build(&params)).err();
        assert_eq!(
            bad.map(|e| e.to_string()).as_deref(),
            Some("params.epsilon: not a parameter of priority-share (it takes: interval_s)")
        );
    }

    #[test]
    fn every_algorithm_builds_with_its_defaults_or_its_sample() {
        for spec in &ALGORITHMS {
            let defaults = spec.build(&Params::new());
            assert_eq!(defaults.is_ok(), spec.sample.is_empty(), "{}", spec.name);
            assert!(spec.build(&spec.sample_params()).is_ok(), "{}", spec.name);
        }
    }

    #[test]
    fn a_fixed_rate_is_given_exactly_one_way() {
        let error = |name: &str, given: &[(&str, f64)]| {
            let mut params = Params::new();
            for &(param, value) in given {
                params.set(param, ParamValue::Number(value));
            }
            find(name)
                .and_then(|s| s.build(&params))
                .err()
                .map(|e| e.to_string())
        };
        assert_eq!(
            error("uniform", &[]).as_deref(),
            Some(
                "params: uniform needs exactly one of rate (ops/s or bytes/s per job) or jobs \
                 (the capacity / jobs)"
            )
        );
        assert!(error("uniform", &[("rate", 1.0), ("jobs", 4.0)]).is_some());
        assert_eq!(
            error("uniform", &[("jobs", 2.5)]).as_deref(),
            Some("params.jobs: must be a whole number ≥ 1")
        );
        assert_eq!(
            error("priority", &[("total_weight", 0.0)]).as_deref(),
            Some("params.total_weight: must be a finite number > 0")
        );
        assert_eq!(error("priority", &[("rate", 1000.0)]), None);
    }

    #[test]
    fn each_paper_feeds_its_algorithm_the_figure_it_measures() {
        let default = |name: &str| find(name).and_then(|s| s.estimator(None));
        assert_eq!(default("psfa"), Ok(Some(Estimator::Usage)));
        assert_eq!(default("adaptbf"), Ok(Some(Estimator::Arrivals)));
        for variant in ["psfa-held", "adaptbf-bounded", "adaptbf-need"] {
            assert_eq!(default(variant), Ok(Some(Estimator::WaitInflated)));
        }
        let psfa = find("psfa").and_then(|s| s.estimator(Some(Estimator::Arrivals)));
        assert_eq!(psfa, Ok(Some(Estimator::Arrivals)));
        for spec in &ALGORITHMS {
            // An algorithm reads its load in a field it requires, and one that reads none
            // refuses an estimator; the fixed rates read none.
            match spec.load {
                Some(load) => assert!(spec.requires.contains(&load.field), "{}", spec.name),
                None => assert!(spec.estimator(Some(Estimator::Usage)).is_err()),
            }
            assert!(!spec.fixed_rate || spec.load.is_none(), "{}", spec.name);
        }
        let uniform = find("uniform").and_then(|s| s.estimator(Some(Estimator::Usage)));
        assert_eq!(
            uniform.map_err(|e| e.to_string()),
            Err("estimator: uniform reads no load, so no estimator applies".to_owned())
        );
    }

    #[test]
    fn only_drf_divides_ops_and_bytes_together() {
        for spec in &ALGORITHMS {
            let both = spec.build_ops_bytes(&Params::new());
            assert_eq!(spec.builds_ops_bytes(), both.is_ok(), "{}", spec.name);
            assert_eq!(spec.builds_ops_bytes(), spec.name == "drf", "{}", spec.name);
        }
        let psfa = find("psfa")
            .and_then(|s| s.build_ops_bytes(&Params::new()))
            .err();
        assert_eq!(
            psfa.map(|e| e.to_string()).as_deref(),
            Some(
                "algorithm: psfa divides one resource at a time, not a metadata rate and a \
                 bandwidth together"
            )
        );
    }
}
