//! The administrator's changes, as the admin API and the command line make them. Each
//! checks everything it touches before changing anything: on error the configuration
//! is exactly as it was.

use std::collections::BTreeMap;
use std::fmt;

use sluice_core::rule::{Rule, parse_rule};
use sluice_policy::ParamValue;
use sluice_policy::tree::{Attr, TreeError};

use super::ControlConfig;
use super::job::{JobSpec, parse_limit};
use super::pool::{FieldError, PoolSpec, pool_names};

/// What kind of mistake an admin change was, for callers that answer differently (HTTP
/// 404 or 400; the command line exits with 2 for both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminErrorKind {
    /// The pool or rule to change or remove does not exist.
    NotFound,
    /// The input is not valid, or would leave the configuration invalid.
    Invalid,
}

/// Why an admin change was refused; nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AdminError {
    /// What kind of mistake it is.
    pub kind: AdminErrorKind,
    /// One line: which item, which field, why (`pool "x": algorithm: unknown …`).
    pub message: String,
}

impl AdminError {
    fn invalid(item: &str, why: impl fmt::Display) -> AdminError {
        AdminError {
            kind: AdminErrorKind::Invalid,
            message: format!("{item}: {why}"),
        }
    }

    fn not_found(item: &str, why: impl fmt::Display) -> AdminError {
        AdminError {
            kind: AdminErrorKind::NotFound,
            message: format!("{item}: {why}"),
        }
    }
}

impl ControlConfig {
    /// Creates pool `name`, or replaces it (keeping its `min_share`); `params` are
    /// `NAME=VALUE` with a number or `true`/`false`; `estimator` names the figure fed to
    /// the algorithm as a job's load (`None`: the algorithm's default); with a `tree`
    /// (`account,user,job`) the pool is divided down it, and `algorithm` must be `drf`
    /// (empty: `drf`). Refused if a job's limit would no longer match the pool's unit.
    #[allow(clippy::too_many_arguments)]
    pub fn pool_set(
        &mut self,
        name: &str,
        filter: &str,
        capacity: &str,
        algorithm: &str,
        params: &[impl AsRef<str>],
        estimator: Option<&str>,
        tree: Option<&str>,
    ) -> Result<(), AdminError> {
        let algorithm = match (algorithm, tree) {
            ("", Some(_)) => PoolSpec::TREE_ALGORITHM,
            (given, _) => given,
        };
        let item = format!("pool {name:?}");
        let invalid = |e: FieldError| AdminError::invalid(&item, e);
        let params = parse_params(params).map_err(invalid)?;
        let min_share = self
            .pool(name)
            .map_or(PoolSpec::DEFAULT_MIN_SHARE, |pool| pool.min_share);
        let spec = PoolSpec::check(
            name, filter, capacity, algorithm, params, min_share, estimator, tree,
        )
        .map_err(invalid)?;
        let mut pools = self.pools.clone();
        match pools.iter_mut().find(|pool| pool.name == name) {
            Some(pool) => *pool = spec,
            None => pools.push(spec),
        }
        for job in &self.jobs {
            job.check(&pools)
                .map_err(|e| AdminError::invalid(&job_item(job), e))?;
        }
        self.pools = pools;
        Ok(())
    }

    /// Removes pool `name` and the job settings made for it.
    pub fn pool_rm(&mut self, name: &str) -> Result<(), AdminError> {
        let Some(at) = self.pools.iter().position(|pool| pool.name == name) else {
            let why = format_args!("no such pool ({})", pool_names(&self.pools));
            return Err(AdminError::not_found(&format!("pool {name:?}"), why));
        };
        self.pools.remove(at);
        self.jobs.retain(|job| job.pool.as_deref() != Some(name));
        Ok(())
    }

    /// Adds a rule after the others; it needs a name of its own, by which it is later
    /// changed and stopped.
    pub fn rule_start(&mut self, text: &str) -> Result<(), AdminError> {
        let rule = parse_rule(text).map_err(|e| AdminError::invalid("rule", e))?;
        let Some(name) = &rule.name else {
            let why = "expected a name first ('NAME: …'): rules are changed and stopped by name";
            return Err(AdminError::invalid("rule", why));
        };
        if self.rule_index(name).is_some() {
            let why = "a rule has this name already (change it, or stop it first)";
            return Err(AdminError::invalid(&format!("rule {name:?}"), why));
        }
        self.rules.push(rule);
        Ok(())
    }

    /// Gives rule `name` a new rate and burst (`rate=RATE [burst=N]`, the burst back to
    /// its default when absent); its name, conditions and place stay, so the counters
    /// kept under its name carry on.
    pub fn rule_change(&mut self, name: &str, change: &str) -> Result<(), AdminError> {
        let item = format!("rule {name:?}");
        let at = self
            .rule_index(name)
            .ok_or_else(|| AdminError::not_found(&item, "no such rule"))?;
        let given = parse_rule(change).map_err(|e| AdminError::invalid(&item, e))?;
        if given.name.is_some() || !given.conds.is_empty() {
            let why = "expected rate=RATE [burst=N] alone (a change keeps the conditions)";
            return Err(AdminError::invalid(&item, why));
        }
        let changed = Rule {
            rate: given.rate,
            burst: given.burst,
            ..self.rules[at].clone()
        };
        // Reading the rule back checks the new rate's unit against its conditions.
        let changed = parse_rule(&changed.to_string())
            .map_err(|e| AdminError::invalid(&item, format_args!("expected {}", e.expected)))?;
        self.rules[at] = changed;
        Ok(())
    }

    /// Removes rule `name`.
    pub fn rule_stop(&mut self, name: &str) -> Result<(), AdminError> {
        let at = self
            .rule_index(name)
            .ok_or_else(|| AdminError::not_found(&format!("rule {name:?}"), "no such rule"))?;
        self.rules.remove(at);
        Ok(())
    }

    /// Sets `job`'s limit and weight in `pool` (`None`: every pool), keeping what an
    /// existing entry for the same job and pool has and this call does not give.
    pub fn job_set(
        &mut self,
        job: &str,
        pool: Option<&str>,
        limit: Option<&str>,
        weight: Option<f64>,
    ) -> Result<(), AdminError> {
        let existing = self
            .jobs
            .iter()
            .position(|spec| spec.job == job && spec.pool.as_deref() == pool);
        let mut spec = match existing {
            Some(at) => self.jobs[at].clone(),
            None => JobSpec {
                job: job.to_owned(),
                pool: pool.map(str::to_owned),
                limit: None,
                weight: None,
                period: None,
            },
        };
        let item = job_item(&spec);
        let invalid = |e: FieldError| AdminError::invalid(&item, e);
        if let Some(limit) = limit {
            spec.limit = Some(parse_limit(limit).map_err(invalid)?);
        }
        spec.weight = weight.or(spec.weight);
        spec.check(&self.pools).map_err(invalid)?;
        match existing {
            Some(at) => self.jobs[at] = spec,
            None => self.jobs.push(spec),
        }
        Ok(())
    }

    /// Clears `job`'s limit and/or weight in `pool` (`None`: every pool); an entry left
    /// with neither is removed.
    pub fn job_clear(&mut self, job: &str, pool: Option<&str>, limit: bool, weight: bool) {
        let Some(at) = self
            .jobs
            .iter()
            .position(|spec| spec.job == job && spec.pool.as_deref() == pool)
        else {
            return;
        };
        let spec = &mut self.jobs[at];
        if limit {
            spec.limit = None;
        }
        if weight {
            spec.weight = None;
        }
        if spec.limit.is_none() && spec.weight.is_none() {
            self.jobs.remove(at);
        }
    }

    /// Sets the share of a node of pools' trees: `LEVEL=NAME` (`account=physics`) or
    /// `LEVEL=PARENT/NAME` (`user=physics/alice`: alice under physics only); `None`
    /// removes it (the node then weighs 1, or what Slurm says).
    pub fn share_set(&mut self, node: &str, share: Option<f64>) -> Result<(), AdminError> {
        let item = format!("share {node:?}");
        let (level, name, parent) =
            parse_share_node(node).map_err(|e| AdminError::invalid(&item, e))?;
        let mut shares = self.shares.clone();
        shares
            .set(level, name, parent, share)
            .map_err(|e| AdminError::invalid(&item, e))?;
        self.shares = shares;
        Ok(())
    }

    fn rule_index(&self, name: &str) -> Option<usize> {
        self.rules
            .iter()
            .position(|rule| rule.name.as_deref() == Some(name))
    }
}

/// `LEVEL=NAME` or `LEVEL=PARENT/NAME` → (level, name, parent).
pub fn parse_share_node(node: &str) -> Result<(Attr, &str, Option<&str>), String> {
    let (level, path) = node
        .split_once('=')
        .ok_or("expected LEVEL=NAME or LEVEL=PARENT/NAME (account=physics)")?;
    let level: Attr = level.parse().map_err(|e: TreeError| e.to_string())?;
    if level == Attr::Job {
        return Err("a job's share is its weight: sluice job set JOB --weight W".to_owned());
    }
    let (parent, name) = match path.split_once('/') {
        Some((parent, name)) => (Some(parent), name),
        None => (None, path),
    };
    if name.is_empty() || parent == Some("") {
        return Err(format!("{path:?}: expected NAME or PARENT/NAME"));
    }
    Ok((level, name, parent))
}

/// `job "4242"`, or `job "4242" in pool "scratch-md"`.
fn job_item(spec: &JobSpec) -> String {
    match &spec.pool {
        Some(pool) => format!("job {:?} in pool {pool:?}", spec.job),
        None => format!("job {:?}", spec.job),
    }
}

/// Reads `NAME=VALUE` parameters, each value a number or `true`/`false`.
fn parse_params(params: &[impl AsRef<str>]) -> Result<BTreeMap<String, ParamValue>, FieldError> {
    let mut read = BTreeMap::new();
    for given in params {
        let given = given.as_ref();
        let parsed = given.split_once('=').and_then(|(name, value)| {
            let value = match value {
                "true" => ParamValue::Bool(true),
                "false" => ParamValue::Bool(false),
                number => ParamValue::Number(number.parse().ok()?),
            };
            Some((name, value))
        });
        let Some((name, value)) = parsed else {
            let why = format_args!("{given:?}: expected NAME=NUMBER or NAME=true|false");
            return Err(FieldError::new("params", why));
        };
        if read.insert(name.to_owned(), value).is_some() {
            return Err(FieldError::new(
                "params",
                format_args!("{name} is given twice"),
            ));
        }
    }
    Ok(read)
}
