//! Pools and job settings, and the checks that make one valid, shared by the file reader
//! and the admin mutations so that both accept exactly the same things.

use std::collections::BTreeMap;
use std::fmt;

use sluice_core::op::Op;
use sluice_core::rule::{ParseError, Rate, Rule, Unit, parse_conditions, parse_rule};
use sluice_policy::registry::{self, INTERVAL_S};
use sluice_policy::tree::TreeShape;
use sluice_policy::{Estimator, ParamValue, Params};

/// A pool: a shared resource (a file system's metadata rate, its bandwidth, one
/// operation's rate) whose capacity an algorithm divides among the jobs using it.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolSpec {
    /// The pool's name: 1 to 64 letters, digits, `_`, `.` or `-`.
    pub name: String,
    /// The conditions a call meets to count against the pool, in normal form (as a rule
    /// prints them); empty for every call.
    pub filter: String,
    /// What the pool can take per second, more than zero; for an automatic pool, the
    /// capacity it starts from.
    pub capacity: Rate,
    /// The algorithm dividing it, by its name in [`registry::ALGORITHMS`].
    pub algorithm: String,
    /// The algorithm's parameters, accepted by it; `interval_s` is the configuration's
    /// interval, never set here.
    pub params: BTreeMap<String, ParamValue>,
    /// The fraction of the capacity, in [0, 0.5], kept as a floor shared by all jobs.
    pub min_share: f64,
    /// The figure fed to the algorithm as each job's load, as the administrator set it;
    /// `None`: the algorithm's default ([`PoolSpec::estimator_in_force`]). Set only for
    /// an algorithm that reads a load.
    pub estimator: Option<Estimator>,
    /// `capacity = "auto"`: the capacity is found from the latency of the pool's calls.
    pub auto: Option<AutoSpec>,
    /// `tree = "account,user,job"`: the pool is divided down this tree of job attributes,
    /// weighted max-min at every level; its algorithm is then `drf` (the same division
    /// with a single level).
    pub tree: Option<TreeShape>,
    /// `costs = { open = 4, unlink = 4, getattr = 1 }`: what each operation costs the
    /// pool, in its units (a pool of calls only); `None`, one unit a call.
    pub costs: Option<sluice_core::cost::Costs>,
    /// `costs_from = "ceph-mds:PATH"`: the costs of the operations `costs` does not name
    /// are learned from the server's latency per operation (a pool of calls only).
    pub costs_from: Option<crate::source::SourceSpec>,
}

/// How an automatic pool (`capacity = "auto"`) finds its capacity: see
/// docs/control-plane.md, "Capacity found on its own".
#[derive(Clone, Debug, PartialEq)]
pub struct AutoSpec {
    /// The p99 latency of the pool's calls to keep.
    pub target_p99: std::time::Duration,
    /// The capacity never goes below this.
    pub min: Rate,
    /// Nor above this.
    pub max: Rate,
    /// Added each interval while the target holds and the jobs use what they get.
    pub step: Rate,
    /// The capacity is multiplied by this when the target is missed, in (0, 1).
    pub backoff: f64,
    /// The calls whose latency counts (conditions in normal form, as a filter): a call of
    /// the pool is timed only if it also meets these; empty for every call of the pool.
    pub watch: String,
    /// Where the latency is read instead of the stages' samples: the server's own mean
    /// reply latency (`source = "ceph-mds:PATH"`), kept within `target_p99` (then
    /// written `target`, as it is a mean).
    pub source: Option<crate::source::SourceSpec>,
}

impl AutoSpec {
    /// The backoff of a pool that names none (TCP Reno halves; a file system's queue
    /// empties faster than a network's, so a gentler cut settles sooner).
    pub const DEFAULT_BACKOFF: f64 = 0.7;

    /// Checks an automatic pool's settings against its `start` capacity and its filter
    /// (`pool`, the pool as a rule); `None` fields take their defaults: min a tenth of
    /// start, max a hundred times start, step a tenth of start, every call watched.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check(
        pool: &Rule,
        start: &Rate,
        target: Target<'_>,
        min: Option<&str>,
        max: Option<&str>,
        step: Option<&str>,
        backoff: Option<f64>,
        watch: Option<&str>,
    ) -> Result<AutoSpec, FieldError> {
        let (key, text, source) = match target {
            Target::P99(text) => ("target_p99", text, None),
            Target::Server { source, target } => {
                let source = source
                    .parse()
                    .map_err(|e| FieldError::new("auto", format_args!("source: {e}")))?;
                if watch.is_some() {
                    return Err(FieldError::new(
                        "auto",
                        "watch names the stages' sampled calls; a pool read from its server's source has none",
                    ));
                }
                ("target", target, Some(source))
            }
        };
        // A metadata call's p99 is often under a millisecond: both targets in whole µs.
        let target_p99 = crate::source::parse_target(text)
            .map_err(|e| FieldError::new("auto", format_args!("{key}: {e}")))?;
        let rate = |key: &str, text: Option<&str>, default: u64| -> Result<Rate, FieldError> {
            let Some(text) = text else {
                return Ok(Rate {
                    per_sec: default.max(1),
                    ..*start
                });
            };
            let r: Rate = text
                .parse()
                .map_err(|e| FieldError::new("auto", format_args!("{key}: {e}")))?;
            if r.unit != start.unit || r.per_sec == 0 {
                return Err(FieldError::new(
                    "auto",
                    format_args!(
                        "{key} = {text:?}: a rate above zero counted as start ({start}) is"
                    ),
                ));
            }
            Ok(r)
        };
        let spec = AutoSpec {
            target_p99,
            min: rate("min", min, start.per_sec / 10)?,
            max: rate("max", max, start.per_sec.saturating_mul(100))?,
            step: rate("step", step, start.per_sec / 10)?,
            backoff: backoff.unwrap_or(Self::DEFAULT_BACKOFF),
            watch: watch.map_or(Ok(String::new()), |w| checked_watch(pool, w))?,
            source,
        };
        if spec.max.per_sec < spec.min.per_sec {
            return Err(FieldError::new(
                "auto",
                format_args!("max ({}) is below min ({})", spec.max, spec.min),
            ));
        }
        if !(spec.backoff > 0.0 && spec.backoff < 1.0) {
            return Err(FieldError::new(
                "auto",
                format_args!("backoff = {}: must be in (0, 1)", spec.backoff),
            ));
        }
        Ok(spec)
    }
}

/// What an automatic pool keeps: the p99 of the calls its stages sample, or its server's
/// mean reply latency read from a source.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// `target_p99 = "5ms"`.
    P99(&'a str),
    /// `source = "ceph-mds:PATH", target = "2ms"`.
    Server {
        /// The source, as written.
        source: &'a str,
        /// The mean latency to keep, as written.
        target: &'a str,
    },
}

/// Checks an automatic pool's `watch`: conditions only, and at least one operation the
/// pool holds meets them (else the pool would time nothing and never find its capacity).
fn checked_watch(pool: &Rule, watch: &str) -> Result<String, FieldError> {
    let error =
        |why: &dyn fmt::Display| FieldError::new("auto", format_args!("watch = {watch:?}: {why}"));
    if let Some(key) = watch
        .split_whitespace()
        .filter_map(|token| token.split(['<', '>', '=']).next())
        .find(|key| ["rate", "burst"].contains(key))
    {
        return Err(error(&format_args!("conditions only, no {key}=")));
    }
    let conds = parse_conditions(watch).map_err(|e| error(&e))?;
    let watched = Rule {
        conds,
        ..pool.clone()
    };
    if !Op::ALL
        .iter()
        .any(|&op| pool.matches_op(op) && watched.matches_op(op))
    {
        return Err(error(&format_args!(
            "no operation of the pool ({}) meets it",
            pool.filter()
        )));
    }
    Ok(watched.filter())
}

/// What is wrong with one field of an item; the caller names the item.
#[derive(Debug)]
pub(super) struct FieldError {
    /// The field, for finding its line in a file; `None` for the item as a whole.
    pub field: Option<&'static str>,
    /// `field: why`, or why alone for the item as a whole.
    pub text: String,
}

impl FieldError {
    pub fn new(field: &'static str, why: impl fmt::Display) -> FieldError {
        FieldError {
            field: Some(field),
            text: format!("{field}: {why}"),
        }
    }

    /// An error about the item as a whole.
    pub fn whole(text: impl fmt::Display) -> FieldError {
        FieldError {
            field: None,
            text: text.to_string(),
        }
    }

    /// An error whose text already names its field, as sluice-policy's do.
    fn named(field: &'static str, text: impl fmt::Display) -> FieldError {
        FieldError {
            field: Some(field),
            text: text.to_string(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PoolSpec {
    /// The `min_share` of a pool that names none.
    pub const DEFAULT_MIN_SHARE: f64 = 0.01;

    /// The largest `min_share`: beyond half, the floor would decide more than the
    /// algorithm does.
    pub const MAX_MIN_SHARE: f64 = 0.5;

    /// The algorithm of a pool with a tree: the tree water-fills by weight at every
    /// level, which is `drf` on one resource.
    pub const TREE_ALGORITHM: &'static str = "drf";

    /// Checks every field, in the order a file writes them, and builds the pool.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check(
        name: &str,
        filter: &str,
        capacity: &str,
        algorithm: &str,
        params: BTreeMap<String, ParamValue>,
        min_share: f64,
        estimator: Option<&str>,
        tree: Option<&str>,
    ) -> Result<PoolSpec, FieldError> {
        let valid_name = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
        if !valid_name {
            return Err(FieldError::new(
                "name",
                format_args!(
                    "{name:?} is not a pool name (1 to 64 letters, digits, '_', '.' or '-')"
                ),
            ));
        }
        if capacity == "auto" {
            return Err(FieldError::new(
                "capacity",
                "\"auto\" is set in the configuration file, with its auto = { … } settings",
            ));
        }
        let capacity_rate: Rate = capacity
            .parse()
            .map_err(|e| FieldError::new("capacity", e))?;
        let rule = checked_rule(name, filter, capacity)?;
        if capacity_rate.per_sec == 0 {
            return Err(FieldError::new(
                "capacity",
                format_args!(
                    "{capacity:?} must be more than zero (there would be nothing to divide)"
                ),
            ));
        }
        let spec = registry::find(algorithm).map_err(|e| FieldError::named("algorithm", e))?;
        if params.contains_key(INTERVAL_S.name) {
            return Err(FieldError::new(
                "params",
                format_args!(
                    "{} is the configuration's interval, not a pool's",
                    INTERVAL_S.name
                ),
            ));
        }
        let mut pool = PoolSpec {
            name: name.to_owned(),
            filter: rule.filter(),
            capacity: capacity_rate,
            algorithm: algorithm.to_owned(),
            params,
            min_share,
            estimator: None,
            auto: None,
            tree: None,
            costs: None,
            costs_from: None,
        };
        if let Some(text) = tree {
            if algorithm != Self::TREE_ALGORITHM {
                return Err(FieldError::new(
                    "algorithm",
                    format_args!(
                        "{algorithm:?} with a tree: a tree divides by weight up to demand at                          every level, so its algorithm is {:?} (or leave it out)",
                        Self::TREE_ALGORITHM
                    ),
                ));
            }
            pool.tree = Some(text.parse().map_err(|e| FieldError::named("tree", e))?);
        }
        spec.build(&pool.policy_params())
            .map_err(|e| FieldError::named("params", e))?;
        if let Some(text) = estimator {
            let given = text
                .parse::<Estimator>()
                .map_err(|e| FieldError::new("estimator", e))?;
            spec.estimator(Some(given))
                .map_err(|e| FieldError::named("estimator", e))?;
            pool.estimator = Some(given);
        }
        if !(0.0..=Self::MAX_MIN_SHARE).contains(&min_share) {
            return Err(FieldError::new(
                "min_share",
                format_args!("{min_share} is outside [0, {}]", Self::MAX_MIN_SHARE),
            ));
        }
        Ok(pool)
    }

    /// The pool as a rule named after it, whose rate is the capacity: the form local
    /// controllers get, `NAME: FILTER rate=CAPACITY`.
    ///
    /// # Panics
    ///
    /// If `name` or `filter` were changed after the pool was checked into something
    /// that is not valid.
    pub fn rule(&self) -> Rule {
        parse_rule(&rule_text(
            &self.name,
            &self.filter,
            &self.capacity.to_string(),
        ))
        .expect("a pool's name and filter are checked when it is made")
    }

    /// The algorithm's parameters; the caller adds `interval_s`.
    pub fn policy_params(&self) -> Params {
        let mut params = Params::new();
        for (name, value) in &self.params {
            params.set(name.clone(), *value);
        }
        params
    }

    /// The figure its algorithm is fed as each job's load: the one set, else the
    /// algorithm's default; `None` for an algorithm that reads no load.
    pub fn estimator_in_force(&self) -> Option<Estimator> {
        registry::find(&self.algorithm)
            .ok()
            .and_then(|spec| spec.estimator(self.estimator).ok().flatten())
    }

    /// Whether the pool counts bytes (a bandwidth) rather than operations.
    pub fn is_bytes(&self) -> bool {
        self.capacity.unit == Unit::Bytes
    }
}

/// The text of a pool's rule; its name goes first so that nothing in the filter can be
/// read as a name, and the capacity last so that the rule language checks its unit
/// against the conditions.
fn rule_text(name: &str, filter: &str, capacity: &str) -> String {
    format!("{name}: {filter} rate={capacity}")
}

/// Checks a pool's filter with the rule language, placing errors in `match` (columns of
/// the filter) or in `capacity` (a bytes capacity on calls that move no data).
fn checked_rule(name: &str, filter: &str, capacity: &str) -> Result<Rule, FieldError> {
    for token in filter.split_whitespace() {
        let why = match token.split(['<', '>', '=']).next() {
            Some("rate") => "conditions only: a pool's rate is its capacity (capacity = \"…\")",
            Some("burst") => "conditions only: a pool has no burst",
            _ => continue,
        };
        let error = ParseError {
            offset: token.as_ptr().addr() - filter.as_ptr().addr(),
            token: token.to_owned(),
            expected: why.to_owned(),
        };
        return Err(FieldError::new("match", error));
    }
    let prefix = name.len() + 2;
    parse_rule(&rule_text(name, filter, capacity)).map_err(|e| {
        if e.offset >= prefix + filter.len() {
            let token = capacity.to_owned();
            return FieldError::new(
                "capacity",
                ParseError {
                    offset: 0,
                    token,
                    ..e
                },
            );
        }
        // In a rule line a key could also be rate=; in a filter it cannot.
        let expected = e.expected.strip_suffix(" or rate=").unwrap_or(&e.expected);
        let error = ParseError {
            offset: e.offset - prefix,
            expected: expected.to_owned(),
            token: e.token,
        };
        FieldError::new("match", error)
    })
}

/// The pools' names for an error message: `pools: a, b`, or `there are no pools`.
pub(super) fn pool_names(pools: &[PoolSpec]) -> String {
    if pools.is_empty() {
        return "there are no pools".to_owned();
    }
    let names: Vec<&str> = pools.iter().map(|pool| pool.name.as_str()).collect();
    format!("pools: {}", names.join(", "))
}
