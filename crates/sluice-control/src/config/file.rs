//! The file: its TOML schema as written, reading it into a checked [`ControlConfig`] with
//! every error placed on its line, and writing a configuration back.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Deserialize;
use sluice_core::rule::parse_rule;
use sluice_core::toml_text::{self, line_and_column};
use sluice_policy::ParamValue;
use toml::Spanned;

use super::duration::{format_duration, parse_duration, parse_millis};
use super::job::{JobSpec, parse_limit};
use super::pool::{AutoSpec, FieldError, PoolSpec, Target};
use super::{AdminConfig, ConfigError, ControlConfig, REPORT_RETENTION_RANGE, STALE_AFTER_RANGE};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    interval: Option<Spanned<String>>,
    stale_after: Option<Spanned<String>>,
    report_retention: Option<Spanned<String>>,
    #[serde(default)]
    slurm_shares: bool,
    admin: Option<Spanned<AdminConfig>>,
    #[serde(default)]
    pool: Vec<Spanned<RawPool>>,
    #[serde(default)]
    rule: Vec<Spanned<RawRule>>,
    #[serde(default)]
    job: Vec<Spanned<RawJob>>,
    /// `[shares.LEVEL]`: `NAME = SHARE` or `"PARENT/NAME" = SHARE`.
    shares: Option<BTreeMap<String, BTreeMap<String, toml::Value>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPool {
    name: Spanned<String>,
    #[serde(rename = "match")]
    filter: Option<Spanned<String>>,
    capacity: Spanned<String>,
    /// Required unless a tree is given.
    algorithm: Option<Spanned<String>>,
    params: Option<Spanned<BTreeMap<String, toml::Value>>>,
    min_share: Option<Spanned<f64>>,
    estimator: Option<Spanned<String>>,
    auto: Option<Spanned<RawAuto>>,
    tree: Option<Spanned<String>>,
    /// `{ OP_OR_CLASS = UNITS, … }`.
    costs: Option<Spanned<RawCosts>>,
    /// `"ceph-mds:PATH"`: a source whose per-operation latencies give the costs.
    costs_from: Option<Spanned<String>>,
}

/// A pool's `costs`: a table; text is read only to say where a source goes.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawCosts {
    Table(BTreeMap<String, toml::Value>),
    Text(String),
}

/// `auto = { … }` of a pool whose capacity is "auto".
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuto {
    target_p99: Option<String>,
    target: Option<String>,
    source: Option<String>,
    start: String,
    min: Option<String>,
    max: Option<String>,
    step: Option<String>,
    backoff: Option<f64>,
    watch: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    rule: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJob {
    job: Spanned<String>,
    pool: Option<Spanned<String>>,
    limit: Option<Spanned<String>>,
    weight: Option<Spanned<f64>>,
    period: Option<Spanned<String>>,
}

/// Reads and checks a configuration; `file` names it in errors.
pub(super) fn parse(text: &str, file: &str) -> Result<ControlConfig, ConfigError> {
    let raw: RawConfig = toml_text::parse(text, file)?;
    let invalid = |at: usize, item: &str, error: FieldError| ConfigError::Invalid {
        file: file.to_owned(),
        line: line_and_column(text, at).0,
        problem: format!("{item}: {error}"),
    };
    let mut config = ControlConfig::default();
    if let Some(interval) = &raw.interval {
        config.interval = parse_duration(interval.get_ref())
            .map_err(|e| invalid(interval.span().start, "interval", FieldError::whole(e)))?;
    }
    if let Some(stale) = &raw.stale_after {
        config.stale_after = parse_stale_after(stale.get_ref())
            .map_err(|e| invalid(stale.span().start, "stale_after", FieldError::whole(e)))?;
    }
    if let Some(keep) = &raw.report_retention {
        config.report_retention = parse_retention(keep.get_ref())
            .map_err(|e| invalid(keep.span().start, "report_retention", FieldError::whole(e)))?;
    }
    config.slurm_shares = raw.slurm_shares;
    if let Some(admin) = raw.admin {
        check_admin(admin.get_ref()).map_err(|e| invalid(admin.span().start, "admin", e))?;
        config.admin = admin.into_inner();
    }
    for (i, entry) in raw.pool.iter().enumerate() {
        let pool = entry.get_ref();
        let item = format!("pool[{}] {:?}", i + 1, pool.name.get_ref());
        let at = |e: &FieldError| pool.at(e.field).unwrap_or(entry.span()).start;
        let spec = pool.check().map_err(|e| invalid(at(&e), &item, e))?;
        if let Some(first) = config.pools.iter().position(|p| p.name == spec.name) {
            let e = FieldError::new("name", format_args!("pool[{}] has this name", first + 1));
            return Err(invalid(at(&e), &item, e));
        }
        config.pools.push(spec);
    }
    for (i, entry) in raw.rule.iter().enumerate() {
        let given = &entry.get_ref().rule;
        let item = format!("rule[{}]", i + 1);
        let fail = |e: FieldError| invalid(given.span().start, &item, e);
        let rule = parse_rule(given.get_ref()).map_err(|e| fail(FieldError::new("rule", e)))?;
        if let Some(name) = &rule.name
            && let Some(first) = config.rules.iter().position(|r| r.name == rule.name)
        {
            let why = format_args!("rule[{}] is named {name:?} too", first + 1);
            return Err(fail(FieldError::new("rule", why)));
        }
        config.rules.push(rule);
    }
    for (i, entry) in raw.job.iter().enumerate() {
        let job = entry.get_ref();
        let item = format!("job[{}] {:?}", i + 1, job.job.get_ref());
        let at = |e: &FieldError| job.at(e.field).unwrap_or(entry.span()).start;
        let spec = job
            .check(&config.pools)
            .map_err(|e| invalid(at(&e), &item, e))?;
        let same = |other: &JobSpec| other.job == spec.job && other.pool == spec.pool;
        if let Some(first) = config.jobs.iter().position(same) {
            let e = FieldError::whole(format_args!("job[{}] sets this job already", first + 1));
            return Err(invalid(at(&e), &item, e));
        }
        config.jobs.push(spec);
    }
    if let Some(shares) = &raw.shares {
        // The table's own line: where `[shares` first appears.
        let at = text.find("[shares").unwrap_or(0);
        let fail = |e: String| ConfigError::Invalid {
            file: file.to_owned(),
            line: line_and_column(text, at).0,
            problem: format!("shares: {e}"),
        };
        for (level, names) in shares {
            for (node, value) in names {
                let share = match value {
                    toml::Value::Integer(n) => *n as f64,
                    toml::Value::Float(x) => *x,
                    other => {
                        return Err(fail(format!(
                            "{level}.{node} = {other}: expected a number > 0"
                        )));
                    }
                };
                config
                    .share_set(&format!("{level}={node}"), Some(share))
                    .map_err(|e| fail(e.message))?;
            }
        }
    }
    Ok(config)
}

/// The certificate and the key make sense only together, client certificates only over
/// TLS; an empty group is a slip.
fn check_admin(admin: &AdminConfig) -> Result<(), FieldError> {
    if admin.group.as_deref() == Some("") {
        return Err(FieldError::new("group", "expected a group name"));
    }
    if admin.users.iter().any(String::is_empty) {
        return Err(FieldError::new("users", "expected login names"));
    }
    match (&admin.tls_cert, &admin.tls_key) {
        (Some(_), None) => Err(FieldError::new("tls_key", "missing (tls_cert is set)")),
        (None, Some(_)) => Err(FieldError::new("tls_cert", "missing (tls_key is set)")),
        (None, None) if admin.client_ca.is_some() => Err(FieldError::new(
            "client_ca",
            "needs tls_cert and tls_key (client certificates are checked in TLS)",
        )),
        _ => Ok(()),
    }
}

/// A pool's `costs`: whole units per operation or class, for a pool of calls.
fn checked_costs(
    spec: &PoolSpec,
    costs: &RawCosts,
) -> Result<sluice_core::cost::Costs, FieldError> {
    let costs = match costs {
        RawCosts::Table(table) => table,
        RawCosts::Text(text) => {
            return Err(FieldError::new(
                "costs",
                format_args!(
                    "{text:?}: costs are a table ({{ mknod = 4, unlink = 4 }}); to learn them from the server, costs_from = \"ceph-mds:ADMIN_SOCKET\""
                ),
            ));
        }
    };
    if spec.capacity.unit == sluice_core::rule::Unit::Bytes {
        return Err(FieldError::new(
            "costs",
            "a pool of bytes charges what each call moves; costs weigh the calls of a pool of calls",
        ));
    }
    let units: Vec<(&str, String)> = costs
        .iter()
        .map(|(name, value)| match value {
            toml::Value::Integer(n) => Ok((name.as_str(), n.to_string())),
            other => Err(FieldError::new(
                "costs",
                format_args!("{name} = {other}: a cost is a whole number of units (unlink = 4)"),
            )),
        })
        .collect::<Result<_, _>>()?;
    let costs = sluice_core::cost::Costs::new(units.iter().map(|(n, u)| (*n, u.as_str())))
        .map_err(|e| FieldError::new("costs", e))?;
    Ok(costs)
}

/// A pool's `costs_from`: a source that reports each operation's latency, for a pool of
/// calls.
fn checked_costs_from(
    spec: &PoolSpec,
    source: &str,
) -> Result<crate::source::SourceSpec, FieldError> {
    if spec.is_bytes() {
        return Err(FieldError::new(
            "costs_from",
            "a pool of bytes charges what each call moves; learned costs weigh the calls of a pool of calls",
        ));
    }
    let rule = spec.rule();
    let metadata = |op: &sluice_core::op::Op| op.class() != sluice_core::op::Class::Data;
    if !sluice_core::op::Op::ALL
        .iter()
        .any(|op| metadata(op) && rule.matches_op(*op))
    {
        return Err(FieldError::new(
            "costs_from",
            format_args!(
                "the pool holds no metadata operation (match = {:?}): a server's latencies would weigh none of its calls",
                spec.filter
            ),
        ));
    }
    source.parse().map_err(|e| FieldError::new("costs_from", e))
}

impl RawPool {
    fn check(&self) -> Result<PoolSpec, FieldError> {
        let params = match &self.params {
            Some(params) => params
                .get_ref()
                .iter()
                .map(|(name, value)| Ok((name.clone(), param_value(name, value)?)))
                .collect::<Result<_, FieldError>>()?,
            None => BTreeMap::new(),
        };
        let auto = self.auto.as_ref().map(Spanned::get_ref);
        let capacity = match (self.capacity.get_ref().as_str(), auto) {
            ("auto", Some(auto)) => auto.start.as_str(),
            ("auto", None) => {
                return Err(FieldError::new(
                    "capacity",
                    "\"auto\" needs its settings: auto = { target_p99 = \"5ms\", start = \"1k/s\" }",
                ));
            }
            (_, Some(_)) => {
                return Err(FieldError::new(
                    "auto",
                    "only for a pool whose capacity is \"auto\"",
                ));
            }
            (capacity, None) => capacity,
        };
        let tree = self.tree.as_ref().map(|t| t.get_ref().as_str());
        let algorithm = match (&self.algorithm, tree) {
            (Some(given), _) => given.get_ref().as_str(),
            (None, Some(_)) => PoolSpec::TREE_ALGORITHM,
            (None, None) => {
                return Err(FieldError::whole(
                    "missing field `algorithm` (or a tree = \"account,user,job\")",
                ));
            }
        };
        let mut spec = PoolSpec::check(
            self.name.get_ref(),
            self.filter.as_ref().map_or("", |filter| filter.get_ref()),
            capacity,
            algorithm,
            params,
            self.min_share
                .as_ref()
                .map_or(PoolSpec::DEFAULT_MIN_SHARE, |share| *share.get_ref()),
            self.estimator.as_ref().map(|e| e.get_ref().as_str()),
            tree,
        )?;
        if let Some(costs) = &self.costs {
            spec.costs = Some(checked_costs(&spec, costs.get_ref())?);
        }
        if let Some(source) = &self.costs_from {
            spec.costs_from = Some(checked_costs_from(&spec, source.get_ref())?);
        }
        if let Some(a) = auto {
            let target = match (&a.target_p99, &a.source, &a.target) {
                (Some(p99), None, None) => Target::P99(p99),
                (None, Some(source), Some(target)) => Target::Server { source, target },
                (_, None, Some(_)) => {
                    return Err(FieldError::new(
                        "auto",
                        "target is the server's mean latency, with a source; without one, target_p99",
                    ));
                }
                (None, None, _) => {
                    return Err(FieldError::new(
                        "auto",
                        "needs target_p99 = \"5ms\" (the stages' sampled p99), or source = \"ceph-mds:PATH\" with target = \"2ms\" (the server's mean reply latency)",
                    ));
                }
                (Some(_), Some(_), _) => {
                    return Err(FieldError::new(
                        "auto",
                        "a pool read from a source keeps the server's mean latency: target = \"…\", not target_p99",
                    ));
                }
                (None, Some(_), None) => {
                    return Err(FieldError::new(
                        "auto",
                        "source needs target = \"…\": the server's mean reply latency to keep",
                    ));
                }
            };
            spec.auto = Some(AutoSpec::check(
                &spec.rule(),
                &spec.capacity,
                target,
                a.min.as_deref(),
                a.max.as_deref(),
                a.step.as_deref(),
                a.backoff,
                a.watch.as_deref(),
            )?);
        }
        Ok(spec)
    }

    /// Where `field` is written, if it is.
    fn at(&self, field: Option<&str>) -> Option<std::ops::Range<usize>> {
        match field? {
            "name" => Some(self.name.span()),
            "match" => self.filter.as_ref().map(Spanned::span),
            "capacity" => Some(self.capacity.span()),
            "algorithm" => self.algorithm.as_ref().map(Spanned::span),
            "tree" => self.tree.as_ref().map(Spanned::span),
            "params" => self.params.as_ref().map(Spanned::span),
            "min_share" => self.min_share.as_ref().map(Spanned::span),
            "estimator" => self.estimator.as_ref().map(Spanned::span),
            "auto" => self.auto.as_ref().map(Spanned::span),
            "costs" => self.costs.as_ref().map(Spanned::span),
            "costs_from" => self.costs_from.as_ref().map(Spanned::span),
            _ => None,
        }
    }
}

/// A parameter's value: a TOML number or boolean.
fn param_value(name: &str, value: &toml::Value) -> Result<ParamValue, FieldError> {
    match value {
        toml::Value::Integer(n) => Ok(ParamValue::Number(*n as f64)),
        toml::Value::Float(x) => Ok(ParamValue::Number(*x)),
        toml::Value::Boolean(b) => Ok(ParamValue::Bool(*b)),
        other => Err(FieldError::new(
            "params",
            format_args!("{name} = {other}: expected a number or true/false"),
        )),
    }
}

impl RawJob {
    fn check(&self, pools: &[PoolSpec]) -> Result<JobSpec, FieldError> {
        let spec = JobSpec {
            job: self.job.get_ref().clone(),
            pool: self.pool.as_ref().map(|pool| pool.get_ref().clone()),
            limit: match &self.limit {
                Some(limit) => Some(parse_limit(limit.get_ref())?),
                None => None,
            },
            weight: self.weight.as_ref().map(|weight| *weight.get_ref()),
            period: match &self.period {
                Some(period) => {
                    Some(parse_millis(period.get_ref()).map_err(|e| FieldError::new("period", e))?)
                }
                None => None,
            },
        };
        spec.check(pools)?;
        Ok(spec)
    }

    /// Where `field` is written, if it is.
    fn at(&self, field: Option<&str>) -> Option<std::ops::Range<usize>> {
        match field? {
            "job" => Some(self.job.span()),
            "pool" => self.pool.as_ref().map(Spanned::span),
            "limit" => self.limit.as_ref().map(Spanned::span),
            "weight" => self.weight.as_ref().map(Spanned::span),
            "period" => self.period.as_ref().map(Spanned::span),
            _ => None,
        }
    }
}

/// Fails unless the admin group and every admin user named exist on this host; the error
/// is placed on the line that names them.
pub(super) fn check_identities(
    admin: &AdminConfig,
    text: &str,
    file: &str,
) -> Result<(), ConfigError> {
    /// Where the `[admin]` table names its group and users.
    #[derive(Deserialize)]
    struct Places {
        admin: Option<AdminPlaces>,
    }
    #[derive(Deserialize)]
    struct AdminPlaces {
        group: Option<Spanned<String>>,
        users: Option<Spanned<Vec<String>>>,
    }
    let places = toml::from_str::<Places>(text).ok().and_then(|p| p.admin);
    let line = |span: Option<std::ops::Range<usize>>| {
        span.map_or(1, |span| line_and_column(text, span.start).0)
    };
    let unknown = |line: usize, problem: String| ConfigError::Invalid {
        file: file.to_owned(),
        line,
        problem,
    };
    if let Some(group) = &admin.group
        && !crate::identity::group_exists(group)
    {
        let at = line(
            places
                .as_ref()
                .and_then(|p| p.group.as_ref())
                .map(Spanned::span),
        );
        let why = format!("admin: group: no group {group:?} on this host (getent group {group})");
        return Err(unknown(at, why));
    }
    if let Some(user) = admin
        .users
        .iter()
        .find(|user| !crate::identity::user_exists(user))
    {
        let at = line(
            places
                .as_ref()
                .and_then(|p| p.users.as_ref())
                .map(Spanned::span),
        );
        let why = format!("admin: users: no user {user:?} on this host (getent passwd {user})");
        return Err(unknown(at, why));
    }
    Ok(())
}

/// Reads `stale_after`: a duration in [`STALE_AFTER_RANGE`].
fn parse_stale_after(text: &str) -> Result<std::time::Duration, String> {
    let d = parse_millis(text).map_err(|e| e.to_string())?;
    if !STALE_AFTER_RANGE.contains(&d) {
        return Err(format!(
            "{text:?} is out of range (from {} to {})",
            format_duration(*STALE_AFTER_RANGE.start()),
            format_duration(*STALE_AFTER_RANGE.end())
        ));
    }
    Ok(d)
}

/// Reads `report_retention`: days (`7d`) or a duration (`12h`), in
/// [`REPORT_RETENTION_RANGE`].
fn parse_retention(text: &str) -> Result<std::time::Duration, String> {
    let d = match text.strip_suffix('d') {
        Some(days) => parse_millis(&format!("{days}h"))
            .map(|h| h * 24)
            .map_err(|_| format!("{text:?} is not a duration (e.g. 7d, 12h)"))?,
        None => parse_millis(text).map_err(|e| e.to_string())?,
    };
    if !REPORT_RETENTION_RANGE.contains(&d) {
        return Err(format!(
            "{text:?} is out of range (from 1s to {}d)",
            REPORT_RETENTION_RANGE.end().as_secs() / 86400
        ));
    }
    Ok(d)
}

/// `report_retention` as [`parse_retention`] reads it: whole days as days.
fn format_retention(d: std::time::Duration) -> String {
    match d.as_millis() % 86_400_000 {
        0 => format!("{}d", d.as_secs() / 86400),
        _ => format_duration(d),
    }
}

/// Writes `config` in the file format, every value as [`parse`] reads it back.
pub(super) fn render(config: &ControlConfig) -> String {
    let quote = |text: &str| toml::Value::String(text.to_owned()).to_string();
    let float = |x: f64| toml::Value::Float(x).to_string();
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "interval = {}",
        quote(&format_duration(config.interval))
    );
    let _ = writeln!(
        out,
        "stale_after = {}",
        quote(&format_duration(config.stale_after))
    );
    if config.report_retention != crate::report::DEFAULT_RETENTION {
        let _ = writeln!(
            out,
            "report_retention = {}",
            quote(&format_retention(config.report_retention))
        );
    }
    if config.slurm_shares {
        let _ = writeln!(out, "slurm_shares = true");
    }
    let admin = &config.admin;
    let paths = [
        ("token_file", &admin.token_file),
        ("tls_cert", &admin.tls_cert),
        ("tls_key", &admin.tls_key),
        ("client_ca", &admin.client_ca),
    ];
    let mut admin_lines: Vec<String> = admin
        .group
        .iter()
        .map(|group| format!("group = {}", quote(group)))
        .collect();
    if !admin.users.is_empty() {
        let users: Vec<String> = admin.users.iter().map(|user| quote(user)).collect();
        admin_lines.push(format!("users = [{}]", users.join(", ")));
    }
    for (key, path) in paths {
        if let Some(path) = path {
            admin_lines.push(format!("{key} = {}", quote(&path.to_string_lossy())));
        }
    }
    if !admin_lines.is_empty() {
        let _ = write!(out, "\n[admin]\n{}\n", admin_lines.join("\n"));
    }
    for pool in &config.pools {
        let _ = writeln!(out, "\n[[pool]]\nname = {}", quote(&pool.name));
        if !pool.filter.is_empty() {
            let _ = writeln!(out, "match = {}", quote(&pool.filter));
        }
        match &pool.auto {
            None => {
                let _ = writeln!(out, "capacity = {}", quote(&pool.capacity.to_string()));
            }
            Some(a) => {
                let value = quote(&crate::source::format_target(a.target_p99));
                let target = match &a.source {
                    None => format!("target_p99 = {value}"),
                    Some(source) => {
                        format!("source = {}, target = {value}", quote(&source.to_string()))
                    }
                };
                let _ = writeln!(
                    out,
                    "capacity = \"auto\"\nauto = {{ {target}, start = {}, min = {}, max = {}, step = {}, backoff = {}{} }}",
                    quote(&pool.capacity.to_string()),
                    quote(&a.min.to_string()),
                    quote(&a.max.to_string()),
                    quote(&a.step.to_string()),
                    float(a.backoff),
                    if a.watch.is_empty() {
                        String::new()
                    } else {
                        format!(", watch = {}", quote(&a.watch))
                    }
                );
            }
        }
        let _ = writeln!(out, "algorithm = {}", quote(&pool.algorithm));
        if let Some(tree) = &pool.tree {
            let _ = writeln!(out, "tree = {}", quote(&tree.to_string()));
        }
        if !pool.params.is_empty() {
            // Parameter names are the algorithm's own, bare TOML keys all.
            let params: Vec<String> = pool
                .params
                .iter()
                .map(|(name, value)| match value {
                    ParamValue::Number(x) => format!("{name} = {}", float(*x)),
                    ParamValue::Bool(b) => format!("{name} = {b}"),
                })
                .collect();
            let _ = writeln!(out, "params = {{ {} }}", params.join(", "));
        }
        let _ = writeln!(out, "min_share = {}", float(pool.min_share));
        if let Some(costs) = pool.costs.as_ref().filter(|c| c.entries().next().is_some()) {
            let entries: Vec<String> = costs
                .entries()
                .map(|(name, units)| format!("{name} = {units}"))
                .collect();
            let _ = writeln!(out, "costs = {{ {} }}", entries.join(", "));
        }
        if let Some(source) = &pool.costs_from {
            let _ = writeln!(out, "costs_from = {}", quote(&source.to_string()));
        }
        // Only as set: a pool left to its algorithm's default follows a new algorithm's.
        if let Some(estimator) = pool.estimator {
            let _ = writeln!(out, "estimator = {}", quote(estimator.name()));
        }
    }
    for rule in &config.rules {
        let _ = writeln!(out, "\n[[rule]]\nrule = {}", quote(&rule.to_string()));
    }
    for job in &config.jobs {
        let _ = writeln!(out, "\n[[job]]\njob = {}", quote(&job.job));
        if let Some(pool) = &job.pool {
            let _ = writeln!(out, "pool = {}", quote(pool));
        }
        if let Some(limit) = job.limit {
            let _ = writeln!(out, "limit = {}", quote(&limit.to_string()));
        }
        if let Some(weight) = job.weight {
            let _ = writeln!(out, "weight = {}", float(weight));
        }
        if let Some(period) = job.period {
            let _ = writeln!(out, "period = {}", quote(&format_duration(period)));
        }
    }
    let mut level = None;
    for (attr, name, parent, share) in config.shares.iter() {
        if level != Some(attr) {
            let _ = writeln!(out, "\n[shares.{attr}]");
            level = Some(attr);
        }
        let key = match parent {
            Some(parent) => format!("{parent}/{name}"),
            None => name.to_owned(),
        };
        let _ = writeln!(out, "{} = {}", quote(&key), float(share));
    }
    out
}
