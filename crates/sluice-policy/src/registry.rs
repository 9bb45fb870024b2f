//! Choosing an algorithm by name, with parameters: one table, [`ALGORITHMS`], says what
//! each algorithm is called, what it reads and what it takes, and builds it. The
//! command line, the daemons and the docs all read this table, so a new algorithm is
//! one entry here.

use std::collections::BTreeMap;

use crate::algo::{
    AdapTbf, AdapTbfNeed, Allocator, Drf, Priority, ProportionalSharing, Psfa, Reservations, Set10,
    StaticLimits, Uniform,
};
use crate::error::{PolicyError, Problem};
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
    /// Its own parameters (besides [`INTERVAL_S`]).
    pub params: &'static [ParamSpec],
    build: Build<f64>,
    /// How it is built for a pool of a metadata rate and a bandwidth together, if it
    /// divides such pools.
    build_ops_bytes: Option<Build<OpsBytes>>,
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

/// Every algorithm, in the order the docs present them.
pub static ALGORITHMS: [Spec; 10] = [
    Spec {
        name: "static",
        summary: "each job gets its limit",
        requires: &[JobField::Limit],
        limit_is_guarantee: false,
        params: &[],
        build: |_| boxed(StaticLimits),
        build_ops_bytes: None,
    },
    Spec {
        name: "uniform",
        summary: "the same rate for every active job",
        requires: &[],
        limit_is_guarantee: false,
        params: &[ParamSpec {
            name: "rate",
            default: "capacity / active jobs",
            help: "fixed rate per job",
        }],
        build: |p| boxed(Uniform::new(p.number("rate")?)?),
        build_ops_bytes: None,
    },
    Spec {
        name: "priority",
        summary: "fixed shares by weight, no redistribution",
        requires: &[],
        limit_is_guarantee: false,
        params: &[],
        build: |_| boxed(Priority),
        build_ops_bytes: None,
    },
    Spec {
        name: "psharing",
        summary: "max-min fair share with limits as reservations, leftover by limit",
        requires: &[JobField::Limit],
        limit_is_guarantee: false,
        params: &[],
        build: |_| boxed(ProportionalSharing),
        build_ops_bytes: None,
    },
    Spec {
        name: "psfa",
        summary: "PADLL's proportional sharing without false allocation",
        requires: &[JobField::Limit, JobField::Usage],
        limit_is_guarantee: false,
        params: &[ParamSpec {
            name: "epsilon",
            default: "0.25",
            help: "share of the usage-to-limit gap granted for growth",
        }],
        build: |p| {
            boxed(Psfa::new(
                p.number("epsilon")?.unwrap_or(Psfa::DEFAULT_EPSILON),
            )?)
        },
        build_ops_bytes: None,
    },
    Spec {
        name: "adaptbf",
        summary: "AdapTBF as published: node shares, surplus to all, lenders paid back",
        requires: &[JobField::Arrivals],
        limit_is_guarantee: false,
        params: &[],
        build: |_| boxed(AdapTbf::new()),
        build_ops_bytes: None,
    },
    Spec {
        name: "adaptbf-need",
        summary: "AdapTBF variant: lends only what borrowers need, pays back what lenders lack",
        requires: &[JobField::Arrivals],
        limit_is_guarantee: false,
        params: &[],
        build: |_| boxed(AdapTbfNeed::new()),
        build_ops_bytes: None,
    },
    Spec {
        name: "set10",
        summary: "IO-SETS SET-10: sets by I/O period, exclusive inside a set",
        requires: &[JobField::Arrivals],
        limit_is_guarantee: false,
        params: &[],
        build: |_| boxed(Set10::new()),
        build_ops_bytes: None,
    },
    Spec {
        name: "reservations",
        summary: "SDQoS-style guaranteed reservations, unused capacity handed on",
        requires: &[JobField::Limit, JobField::Arrivals],
        limit_is_guarantee: true,
        params: &[ParamSpec {
            name: "work_conserving",
            default: "true",
            help: "lend unused reservations to jobs that want more",
        }],
        build: |p| {
            boxed(Reservations::new(
                p.flag("work_conserving")?.unwrap_or(true),
            ))
        },
        build_ops_bytes: None,
    },
    Spec {
        name: "drf",
        summary: "dominant resource fairness over ops/s and bytes/s together; on one resource, max-min by weight up to demand",
        requires: &[JobField::Arrivals],
        limit_is_guarantee: false,
        params: &[],
        build: |_| boxed(Drf),
        build_ops_bytes: Some(|_| Ok(Box::new(Drf))),
    },
];

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
                "algorithm: unknown algorithm \"fifo\" (one of: static, uniform, priority, \
                 psharing, psfa, adaptbf, adaptbf-need, set10, reservations, drf)"
            )
        );
        let mut params = Params::new();
        params.set("epsilon", ParamValue::Number(2.0));
        let bad = find("psfa").and_then(|s| s.build(&params)).err();
        assert_eq!(
            bad.map(|e| e.to_string()).as_deref(),
            Some("params.epsilon: must be a number between 0 and 1")
        );
        let bad = find("priority").and_then(|s| s.build(&params)).err();
        assert_eq!(
            bad.map(|e| e.to_string()).as_deref(),
            Some("params.epsilon: not a parameter of priority (it takes: interval_s)")
        );
    }

    #[test]
    fn every_algorithm_builds_with_its_defaults() {
        for spec in &ALGORITHMS {
            assert!(spec.build(&Params::new()).is_ok(), "{}", spec.name);
        }
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
