//! `sluice alloc` and `sluice bench alloc`: evaluate a control algorithm offline over
//! a sequence of intervals, and time every algorithm.
//!
//! The input is walked by hand rather than deserialised so that every complaint can
//! name the exact field (`intervals[0].jobs[1].limit`), and so that the fields an
//! algorithm does not read can be left out while those it reads are required.

use std::fmt;
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};
use sluice_control::config::{PoolSpec, parse_share_node};
use sluice_policy::registry::{self, ALGORITHMS, INTERVAL_S, ParamValue, Params, Spec};
use sluice_policy::tree::{Attr, JobAttrs, Shares, TreeError, TreeShape};
use sluice_policy::{Amount, Estimator, JobField, Observation, PolicyError, Problem, Round};

use crate::bench_alloc as bench;
use crate::error::{Doing as _, IoFailure};
use sluice_core::error::{Blame, Fault};

/// Evaluate a control algorithm offline: give it a sequence of control intervals and
/// see the rate it would set for every job, before deploying it as a policy.
#[derive(clap::Args, Debug)]
#[command(after_long_help = alloc_help())]
pub struct AllocArgs {
    /// Read the input from FILE instead of standard input
    /// (example: docs/examples/alloc-psfa.json).
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,
}

/// Time every control algorithm for one control interval at 10, 1,000 and 100,000
/// active jobs: how long the global controller spends deciding the rates.
#[derive(clap::Args, Debug)]
pub struct BenchAllocArgs {
    /// Print the figures as JSON: [{"algorithm":…, "jobs":…, "intervals":…,
    /// "us_per_interval":…, "us_per_job":…}, …].
    #[arg(long)]
    json: bool,
}

/// Why `sluice alloc` or `sluice bench alloc` did not print its figures.
#[derive(Debug, thiserror::Error)]
pub enum AllocError {
    /// The input named (a file, or standard input) cannot be read.
    #[error(transparent)]
    Read(#[from] IoFailure),
    /// The figures cannot be written as JSON.
    #[error("cannot write the figures as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl Blame for AllocError {
    fn fault(&self) -> Fault {
        match self {
            AllocError::Read(_) => Fault::Input,
            AllocError::Json(_) => Fault::System,
        }
    }
}

impl AllocArgs {
    /// Evaluates the input and prints the rates as JSON on stdout; returns the exit
    /// code: 0, or 2 for bad input after one line on stderr that names the field.
    pub fn run(&self) -> Result<i32, AllocError> {
        let text = match &self.input {
            Some(path) => {
                std::fs::read_to_string(path).doing(|| format!("read {}", path.display()))?
            }
            None => {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .doing(|| "read standard input".into())?;
                text
            }
        };
        match evaluate(&text) {
            Ok(output) => {
                println!("{output}");
                Ok(0)
            }
            Err(bad) => {
                eprintln!("sluice alloc: {bad}");
                Ok(2)
            }
        }
    }
}

impl BenchAllocArgs {
    /// Runs the timing and prints a table, or JSON with `--json`.
    pub fn run(&self) -> Result<(), AllocError> {
        let rows = bench::run(&bench::SIZES, Duration::from_millis(200));
        if self.json {
            println!("{}", serde_json::to_string(&rows)?);
        } else {
            println!(
                "{:<13} {:>8} {:>14} {:>10}",
                "algorithm", "jobs", "µs/interval", "µs/job"
            );
            for row in &rows {
                println!(
                    "{:<13} {:>8} {:>14.1} {:>10.3}",
                    row.algorithm, row.jobs, row.us_per_interval, row.us_per_job
                );
            }
        }
        Ok(())
    }
}

/// The input format and the algorithms, for `sluice alloc --help`, from the registry's
/// table so that it lists exactly what exists.
fn alloc_help() -> String {
    let mut help = String::from(
        "Input (JSON, from --input FILE or standard input):
  {\"algorithm\": \"psfa\", \"capacity\": 110000, \"params\": {\"epsilon\": 0.25},
   \"intervals\": [{\"jobs\": [{\"id\": \"j1\", \"limit\": 15000, \"usage\": 12000,
                              \"arrivals\": 12000, \"nodes\": 4}, …]}, …]}

  capacity    the pool: ops/s of a metadata server, or bytes/s of bandwidth (> 0)
  params      the algorithm's parameters (optional); every algorithm takes
              {interval}
  estimator   \"usage\" or \"arrivals\" (optional): the field the algorithm reads as
              each job's load (psfa's usage, the others' arrivals) is given the
              value of that field instead, as a pool's estimator does live; by
              default each field is read as given
  intervals   one entry per control interval, in order; its jobs are the jobs active
              in that interval (a job left out is inactive)
    id        job id (string, unique within an interval)
    limit     the administrator's limit, demand or reservation for the job
    usage     the rate the job was admitted at in the last interval
    arrivals  the rate the job asked for in the last interval (admitted + held)
    weight    priority weight (> 0, default 1)
    nodes     compute nodes the job holds (whole number ≥ 1, default 1)
    period_s  the job's I/O period in seconds (optional; set10 detects it otherwise)
    account, user, qos, partition
              the job's attributes a tree groups it by (strings, with a tree only;
              a job without one shares the group \"\" with the others without)
  tree        divide down this tree of job attributes instead of by an algorithm
              (optional), as a pool's tree = \"account,user,job\" does live; the
              algorithm is then drf or left out, and the capacity one number
  shares      with a tree, the shares of its nodes (optional; default 1), as the
              configuration's [shares.LEVEL] gives them:
              {\"account\": {\"physics\": 7, \"chem\": 3}, \"user\": {\"physics/alice\": 2}}
  Rates are per second and ≥ 0. limit, usage and arrivals are required by the
  algorithms that read them (below) and default to 0 otherwise. A capacity
  {\"ops\": …, \"bytes\": …} divides a metadata rate and a bandwidth together (with
  {pairs} only); limit, usage and arrivals are then such objects too.

Output: {\"intervals\": [{\"rates\": {\"j1\": …, \"j2\": …}}, …]}, one rate per job and
interval ({\"ops\": …, \"bytes\": …} when the capacity is). With a tree, each interval
also has \"nodes\": [{\"depth\", \"level\", \"name\", \"allocation\", \"usage\",
\"demand\", \"weight\"}, …], the tree's nodes depth first, as sluice jobs --tree shows them.

Algorithms (docs/algorithms.md gives each one's formula and a worked example):
",
    )
    .replace(
        "{pairs}",
        &ALGORITHMS
            .iter()
            .filter(|spec| spec.builds_ops_bytes())
            .map(|spec| spec.name)
            .collect::<Vec<_>>()
            .join(", "),
    )
    .replace(
        "{interval}",
        &format!(
            "{} = {}: {}",
            INTERVAL_S.name, INTERVAL_S.default, INTERVAL_S.help
        ),
    );
    for spec in &ALGORITHMS {
        let reads: Vec<&str> = spec.requires.iter().map(|f| f.name()).collect();
        let params: Vec<String> = spec
            .params
            .iter()
            .map(|p| format!("{} = {}: {}", p.name, p.default, p.help))
            .collect();
        help.push_str(&format!("  {:<13} {}\n", spec.name, spec.summary));
        if !reads.is_empty() {
            let load = match spec.load {
                Some(load) => format!(
                    "; load in {}, live fed {} by default",
                    load.field, load.estimator
                ),
                None => String::new(),
            };
            help.push_str(&format!(
                "  {:<13}   reads: {}{load}\n",
                "",
                reads.join(", ")
            ));
        }
        if !params.is_empty() {
            help.push_str(&format!("  {:<13}   {}\n", "", params.join("; ")));
        }
    }
    help.push_str(
        "
Exit status: 0 when the rates were printed; 2 for bad input, after one line on
stderr that names the field, e.g.
  sluice alloc: intervals[0].jobs[1].limit: must be a finite number ≥ 0

Examples: sluice alloc --input docs/examples/alloc-psfa.json
          sluice alloc --input docs/examples/alloc-tree.json",
    );
    help
}

/// Bad input: one line that starts with the field's path.
#[derive(Debug)]
struct BadInput(String);

impl BadInput {
    fn at(path: &str, problem: impl fmt::Display) -> Self {
        BadInput(format!("{path}: {problem}"))
    }
}

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The library's errors already name their field; those about a job are relative to
/// its interval.
fn located(error: PolicyError, interval: &str) -> BadInput {
    match error {
        PolicyError::Job { .. } => BadInput(format!("{interval}.{error}")),
        _ => BadInput(error.to_string()),
    }
}

/// `base.key`, or `key` at the top.
fn join(base: &str, key: &str) -> String {
    if base.is_empty() {
        key.to_owned()
    } else {
        format!("{base}.{key}")
    }
}

fn object<'v>(value: &'v Value, path: &str) -> Result<&'v Map<String, Value>, BadInput> {
    value
        .as_object()
        .ok_or_else(|| BadInput::at(path, "must be an object"))
}

/// Rejects keys other than `known`: a misspelt field would otherwise be silently
/// replaced by its default.
fn only(map: &Map<String, Value>, path: &str, known: &[&str]) -> Result<(), BadInput> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => Err(BadInput::at(
            &join(path, key),
            format!("unknown field (expected one of: {})", known.join(", ")),
        )),
        None => Ok(()),
    }
}

fn required<'v>(map: &'v Map<String, Value>, path: &str, key: &str) -> Result<&'v Value, BadInput> {
    map.get(key)
        .ok_or_else(|| BadInput::at(&join(path, key), "missing"))
}

fn number(value: &Value, path: &str) -> Result<f64, BadInput> {
    value
        .as_f64()
        .ok_or_else(|| BadInput::at(path, "must be a number"))
}

/// A plain number, or `{"ops": …, "bytes": …}` for two-resource pools.
fn amount<A: Amount>(value: &Value, path: &str) -> Result<A, BadInput> {
    if let [""] = A::PARTS {
        return Ok(A::from_parts(&[number(value, path)?]));
    }
    let shape = || {
        let parts: Vec<String> = A::PARTS.iter().map(|p| format!("\"{p}\": …")).collect();
        format!("must be an object {{{}}}", parts.join(", "))
    };
    let map = value
        .as_object()
        .ok_or_else(|| BadInput::at(path, shape()))?;
    only(map, path, A::PARTS)?;
    let parts = A::PARTS
        .iter()
        .map(|part| number(required(map, path, part)?, &join(path, part)))
        .collect::<Result<Vec<f64>, _>>()?;
    Ok(A::from_parts(&parts))
}

fn amount_json<A: Amount>(amount: A) -> Value {
    if let [""] = A::PARTS {
        return Value::from(amount.part(0));
    }
    let parts = A::PARTS
        .iter()
        .enumerate()
        .map(|(i, part)| (part.to_string(), Value::from(amount.part(i))));
    Value::Object(parts.collect())
}

fn params(value: Option<&Value>) -> Result<Params, BadInput> {
    let mut params = Params::new();
    let Some(value) = value else {
        return Ok(params);
    };
    for (name, value) in object(value, "params")? {
        let value = match value {
            Value::Bool(b) => ParamValue::Bool(*b),
            Value::Number(_) => ParamValue::Number(number(value, &join("params", name))?),
            _ => {
                return Err(BadInput::at(
                    &join("params", name),
                    "must be a number or true/false",
                ));
            }
        };
        params.set(name.clone(), value);
    }
    Ok(params)
}

/// The input field the algorithm's load is read from, when an `estimator` names one
/// other than the field itself: `usage` or `arrivals` (the measured figures an input
/// gives; sluice's wait-inflated demand is the live controllers' own).
fn load_source(spec: &Spec, value: Option<&Value>) -> Result<Option<JobField>, BadInput> {
    let Some(value) = value else {
        return Ok(None);
    };
    let text = value
        .as_str()
        .ok_or_else(|| BadInput::at("estimator", "must be a string"))?;
    let estimator: Estimator = text.parse().map_err(|e| BadInput::at("estimator", e))?;
    spec.estimator(Some(estimator))
        .map_err(|e| located(e, ""))?;
    match estimator {
        Estimator::Usage => Ok(Some(JobField::Usage)),
        Estimator::Arrivals => Ok(Some(JobField::Arrivals)),
        Estimator::WaitInflated => Err(BadInput::at(
            "estimator",
            "wait-inflated is measured by the live controllers: give that figure as arrivals",
        )),
    }
}

/// One job's observation; `limit`, `usage` and `arrivals` are required when `spec`
/// reads them and 0 otherwise. With a `source` (see [`load_source`]) the field the
/// algorithm reads its load in is that field's value, which is then the one required.
/// Their values are checked by [`Round::new`].
fn observation<A: Amount>(
    value: &Value,
    path: &str,
    spec: &Spec,
    source: Option<JobField>,
    attrs: Option<&mut JobAttrs>,
) -> Result<Observation<A>, BadInput> {
    let map = object(value, path)?;
    let mut names: Vec<&str> = JobField::ALL.iter().map(|f| f.name()).collect();
    if let Some(attrs) = attrs {
        for attr in GROUPED {
            names.push(attr.name());
            let Some(value) = map.get(attr.name()) else {
                continue;
            };
            let text = value
                .as_str()
                .ok_or_else(|| BadInput::at(&join(path, attr.name()), "must be a string"))?;
            let field = match attr {
                Attr::Account => &mut attrs.account,
                Attr::User => &mut attrs.user,
                Attr::Qos => &mut attrs.qos,
                _ => &mut attrs.partition,
            };
            text.clone_into(field);
        }
    }
    only(map, path, &names)?;
    let id = required(map, path, JobField::Id.name())?
        .as_str()
        .ok_or_else(|| BadInput::at(&join(path, "id"), "must be a string"))?;
    let load = spec.load.map(|l| l.field).filter(|_| source.is_some());
    let needed = |field: JobField| {
        source == Some(field) || (spec.requires.contains(&field) && load != Some(field))
    };
    let rate = |field: JobField| -> Result<A, BadInput> {
        match map.get(field.name()) {
            Some(value) => amount(value, &join(path, field.name())),
            None if needed(field) => Err(BadInput::at(
                &join(path, field.name()),
                format!("missing ({} needs it)", spec.name),
            )),
            None => Ok(A::from_parts(&[])),
        }
    };
    let optional = |field: JobField| {
        map.get(field.name())
            .map(|v| number(v, &join(path, field.name())))
            .transpose()
    };
    let nodes = match optional(JobField::Nodes)? {
        None => None,
        Some(n) if n.fract() == 0.0 && (1.0..=f64::from(u32::MAX)).contains(&n) => Some(n as u32),
        Some(_) => return Err(BadInput::at(&join(path, "nodes"), Problem::NotCount)),
    };
    let mut obs = Observation {
        weight: optional(JobField::Weight)?,
        nodes,
        period_s: optional(JobField::PeriodS)?,
        ..Observation::new(
            id,
            rate(JobField::Limit)?,
            rate(JobField::Usage)?,
            rate(JobField::Arrivals)?,
        )
    };
    if let (Some(load), Some(source)) = (load, source) {
        let figure = if source == JobField::Usage {
            obs.usage
        } else {
            obs.arrivals
        };
        if load == JobField::Usage {
            obs.usage = figure;
        } else {
            obs.arrivals = figure;
        }
    }
    Ok(obs)
}

/// The job attributes a tree groups by (the job level is the jobs themselves).
const GROUPED: [Attr; 4] = [Attr::Account, Attr::User, Attr::Qos, Attr::Partition];

/// The input's `tree` and `shares`.
fn tree(top: &Map<String, Value>) -> Result<Option<(TreeShape, Shares)>, BadInput> {
    let Some(shape) = top.get("tree") else {
        return match top.get("shares") {
            Some(_) => Err(BadInput::at(
                "shares",
                "shares are the nodes' of a tree: give one",
            )),
            None => Ok(None),
        };
    };
    let shape: TreeShape = shape
        .as_str()
        .ok_or_else(|| BadInput::at("tree", "must be a string"))?
        .parse()
        // Its errors start with "tree:".
        .map_err(|e: TreeError| BadInput(e.to_string()))?;
    let mut shares = Shares::new();
    if let Some(levels) = top.get("shares") {
        for (level, names) in object(levels, "shares")? {
            let path = join("shares", level);
            for (node, share) in object(names, &path)? {
                let path = join(&path, node);
                let share = number(share, &path)?;
                let text = format!("{level}={node}");
                let (attr, name, parent) =
                    parse_share_node(&text).map_err(|e| BadInput::at(&path, e))?;
                shares
                    .set(attr, name, parent, Some(share))
                    .map_err(|_| BadInput::at(&path, "must be a finite number > 0"))?;
            }
        }
    }
    Ok(Some((shape, shares)))
}

/// The whole evaluation: input text in, output JSON text out.
fn evaluate(text: &str) -> Result<String, BadInput> {
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| BadInput::at("input", format!("not valid JSON ({e})")))?;
    let top = object(&doc, "input")?;
    only(
        top,
        "",
        &[
            "algorithm",
            "capacity",
            "params",
            "estimator",
            "intervals",
            "tree",
            "shares",
        ],
    )?;
    let tree = tree(top)?;
    // A tree water-fills by weight at every level: drf on one resource, as a live
    // pool's tree is.
    let name = match top.get("algorithm") {
        None if tree.is_some() => PoolSpec::TREE_ALGORITHM,
        _ => required(top, "", "algorithm")?
            .as_str()
            .ok_or_else(|| BadInput::at("algorithm", "must be a string"))?,
    };
    if tree.is_some() && name != PoolSpec::TREE_ALGORITHM {
        return Err(BadInput::at(
            "algorithm",
            format!(
                "{name:?} with a tree: a tree divides by weight up to demand at every level, \
                 so its algorithm is {:?} (or leave it out)",
                PoolSpec::TREE_ALGORITHM
            ),
        ));
    }
    let spec = registry::find(name).map_err(|e| located(e, ""))?;
    let params = params(top.get("params"))?;
    let source = load_source(spec, top.get("estimator"))?;
    // Built for one resource first, so that its parameters are judged before the pool.
    let mut one = spec.build(&params).map_err(|e| located(e, ""))?;
    let interval_s = params.interval_s().map_err(|e| located(e, ""))?;
    let capacity = required(top, "", "capacity")?;
    let intervals = required(top, "", "intervals")?
        .as_array()
        .ok_or_else(|| BadInput::at("intervals", "must be an array"))?;
    let run = Run {
        spec,
        source,
        interval_s,
        capacity,
        intervals,
        tree: tree.is_some(),
    };
    // The capacity's shape says what the pool divides: one number, or ops and bytes.
    let out = if let Some((shape, shares)) = &tree {
        if capacity.is_object() {
            return Err(BadInput::at(
                "capacity",
                "must be a number (a tree divides one resource at a time)",
            ));
        }
        run.through(&mut |round: &Round<'_>, attrs: &[JobAttrs]| {
            let attrs: Vec<&JobAttrs> = attrs.iter().collect();
            let division = shape.divide(shares, round, &attrs);
            let nodes: Vec<Value> = division
                .nodes
                .iter()
                .map(|node| {
                    let level = shape.levels()[node.depth].attr;
                    let name = match level {
                        Attr::Job => round.jobs()[node.job].id.as_str(),
                        attr => attrs[node.job].get(attr),
                    };
                    serde_json::json!({
                        "depth": node.depth, "level": level.name(), "name": name,
                        "allocation": node.allocation, "usage": node.usage,
                        "demand": node.demand, "weight": node.weight,
                    })
                })
                .collect();
            (division.rates, Some(Value::Array(nodes)))
        })?
    } else if !capacity.is_object() {
        run.through(&mut |round: &Round<'_>, _: &[JobAttrs]| (one.allocate(round), None))?
    } else if spec.builds_ops_bytes() {
        let mut both = spec.build_ops_bytes(&params).map_err(|e| located(e, ""))?;
        run.through(&mut |round: &Round<'_, _>, _: &[JobAttrs]| (both.allocate(round), None))?
    } else {
        return Err(BadInput::at(
            "capacity",
            format!("must be a number ({name} divides one resource at a time)"),
        ));
    };
    serde_json::to_string(&out).map_err(|e| BadInput::at("output", e))
}

/// The parts of the input that every interval is evaluated with.
struct Run<'v> {
    spec: &'static Spec,
    /// The input field the algorithm's load is read from, if not its own.
    source: Option<JobField>,
    interval_s: f64,
    capacity: &'v Value,
    intervals: &'v [Value],
    /// Whether the jobs are divided down a tree (and have attributes).
    tree: bool,
}

/// One interval's division: the rates by job, and the tree's nodes (a tree's only).
type Divide<'f, A> = dyn FnMut(&Round<'_, A>, &[JobAttrs]) -> (Vec<A>, Option<Value>) + 'f;

impl Run<'_> {
    /// Feeds every interval to `divide` (an algorithm's allocator, or a tree), in order;
    /// the output document.
    fn through<A: Amount>(&self, divide: &mut Divide<'_, A>) -> Result<Value, BadInput> {
        let capacity: A = amount(self.capacity, "capacity")?;
        // The pool is checked once up front, so a bad capacity is reported even with
        // no intervals.
        Round::new(capacity, self.interval_s, &[]).map_err(|e| located(e, ""))?;
        let mut out = Vec::with_capacity(self.intervals.len());
        for (i, interval) in self.intervals.iter().enumerate() {
            let path = format!("intervals[{i}]");
            let map = object(interval, &path)?;
            only(map, &path, &["jobs"])?;
            let listed = required(map, &path, "jobs")?
                .as_array()
                .ok_or_else(|| BadInput::at(&join(&path, "jobs"), "must be an array"))?;
            let mut attrs = vec![JobAttrs::default(); listed.len()];
            let jobs = listed
                .iter()
                .zip(&mut attrs)
                .enumerate()
                .map(|(j, (job, attrs))| {
                    let path = format!("{path}.jobs[{j}]");
                    let attrs = Some(attrs).filter(|_| self.tree);
                    observation(job, &path, self.spec, self.source, attrs)
                })
                .collect::<Result<Vec<Observation<A>>, _>>()?;
            let round =
                Round::new(capacity, self.interval_s, &jobs).map_err(|e| located(e, &path))?;
            let (rates, nodes) = divide(&round, &attrs);
            let rates: Map<String, Value> = jobs
                .iter()
                .zip(rates)
                .map(|(job, rate)| (job.id.clone(), amount_json(rate)))
                .collect();
            out.push(match nodes {
                Some(nodes) => serde_json::json!({ "rates": rates, "nodes": nodes }),
                None => serde_json::json!({ "rates": rates }),
            });
        }
        Ok(serde_json::json!({ "intervals": out }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(input: &str) -> String {
        evaluate(input)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn the_example_file_evaluates() {
        let text = include_str!("../../../docs/examples/alloc-psfa.json");
        let out: Value =
            serde_json::from_str(&evaluate(text).expect("valid example")).expect("json");
        assert_eq!(out["intervals"].as_array().map(Vec::len), Some(3));
        assert_eq!(out["intervals"][0]["rates"]["j4"], 40_000.0);
    }

    #[test]
    fn drf_takes_and_gives_ops_and_bytes() {
        let out = evaluate(
            r#"{"algorithm":"drf","capacity":{"ops":100,"bytes":1000},
                "intervals":[{"jobs":[{"id":"a","arrivals":{"ops":10,"bytes":10}}]}]}"#,
        )
        .expect("valid input");
        assert_eq!(
            out,
            r#"{"intervals":[{"rates":{"a":{"bytes":10.0,"ops":10.0}}}]}"#
        );
    }

    #[test]
    fn drf_divides_one_number_by_max_min() {
        let out = evaluate(
            r#"{"algorithm":"drf","capacity":100,"intervals":[{"jobs":[
                {"id":"a","arrivals":10},{"id":"b","arrivals":80},{"id":"c","arrivals":80}]}]}"#,
        )
        .expect("valid input");
        assert_eq!(
            out,
            r#"{"intervals":[{"rates":{"a":10.0,"b":45.0,"c":45.0}}]}"#
        );
    }

    #[test]
    fn bad_input_is_one_line_naming_the_field() {
        let job = |fields: &str| {
            format!(
                r#"{{"algorithm":"psfa","capacity":110000,"intervals":[{{"jobs":[
                    {{"id":"j0","limit":1,"usage":1}},{{"id":"j1",{fields}}}]}}]}}"#
            )
        };
        let cases = [
            (
                job(r#""limit":-5,"usage":1"#),
                "intervals[0].jobs[1].limit: must be a finite number ≥ 0",
            ),
            (
                job(r#""usage":1"#),
                "intervals[0].jobs[1].limit: missing (psfa needs it)",
            ),
            (
                job(r#""limit":1,"usage":1,"nodes":2.5"#),
                "intervals[0].jobs[1].nodes: must be a whole number ≥ 1",
            ),
            (
                job(r#""limit":1,"usage":1,"limt":2"#),
                "intervals[0].jobs[1].limt: unknown field (expected one of: id, limit, usage, arrivals, weight, nodes, period_s)",
            ),
            (
                job(r#""limit":"x","usage":1"#),
                "intervals[0].jobs[1].limit: must be a number",
            ),
            (
                r#"{"algorithm":"psfa","capacity":0,"intervals":[]}"#.to_owned(),
                "capacity: must be a finite number > 0",
            ),
            (
                r#"{"algorithm":"fifo","capacity":1,"intervals":[]}"#.to_owned(),
                "algorithm: unknown algorithm \"fifo\" (one of: static, uniform, uniform-share, priority, priority-share, psharing, psfa, psfa-held, adaptbf, adaptbf-bounded, adaptbf-need, set10, set10-silence, set10-ftio, reservations, drf)",
            ),
            (
                r#"{"algorithm":"psfa","capacity":1,"params":{"epsilon":true},"intervals":[]}"#
                    .to_owned(),
                "params.epsilon: must be a number",
            ),
            (
                r#"{"algorithm":"drf","capacity":{"ops":1},"intervals":[]}"#.to_owned(),
                "capacity.bytes: missing",
            ),
            (
                r#"{"algorithm":"psfa","capacity":{"ops":1,"bytes":1},"intervals":[]}"#.to_owned(),
                "capacity: must be a number (psfa divides one resource at a time)",
            ),
            (
                r#"{"algorithm":"priority-share","params":{"epsilon":1}}"#.to_owned(),
                "params.epsilon: not a parameter of priority-share (it takes: interval_s)",
            ),
            (
                r#"{"algorithm":"psfa","capacity":1,"params":{"interval_s":0},"intervals":[]}"#
                    .to_owned(),
                "params.interval_s: must be a finite number > 0",
            ),
            (
                r#"{"algorithm":"psfa","capacity":1}"#.to_owned(),
                "intervals: missing",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(error(&input), expected);
        }
        assert!(error("{").starts_with("input: not valid JSON"));
        assert!(!error("{").contains('\n'));
    }

    /// PSFA fed arrivals is Algorithm 1 with usageᵢ = arrivalsᵢ; `usage` is then not
    /// needed, `arrivals` is.
    #[test]
    fn an_estimator_feeds_the_load_field_from_the_field_it_names() {
        let input = |estimator: &str, j1: &str, j2: &str| {
            format!(
                r#"{{"algorithm":"psfa","capacity":100,{estimator}"intervals":[{{"jobs":[
                    {{"id":"j1","limit":40,{j1}}},{{"id":"j2","limit":40,{j2}}}]}}]}}"#
            )
        };
        let fed_arrivals = evaluate(&input(
            r#""estimator":"arrivals","#,
            r#""usage":10,"arrivals":30"#,
            r#""arrivals":20"#,
        ))
        .expect("valid");
        let on_usage = evaluate(&input("", r#""usage":30"#, r#""usage":20"#)).expect("valid");
        assert_eq!(fed_arrivals, on_usage);
        assert_eq!(
            on_usage,
            r#"{"intervals":[{"rates":{"j1":58.0,"j2":42.0}}]}"#
        );
        assert_eq!(
            error(&input(
                r#""estimator":"arrivals","#,
                r#""arrivals":1"#,
                r#""usage":20"#
            )),
            "intervals[0].jobs[1].arrivals: missing (psfa needs it)"
        );
        let cases = [
            (
                r#""estimator":"wait-inflated","#,
                "estimator: wait-inflated is measured by the live controllers: give that figure \
                 as arrivals",
            ),
            (
                r#""estimator":"demand","#,
                "estimator: unknown estimator \"demand\" (one of: usage, arrivals, wait-inflated)",
            ),
        ];
        for (estimator, expected) in cases {
            assert_eq!(
                error(&input(estimator, r#""usage":1"#, r#""usage":1"#)),
                expected
            );
        }
        assert_eq!(
            error(
                r#"{"algorithm":"uniform","params":{"jobs":4},"estimator":"usage","capacity":1,
                    "intervals":[]}"#
            ),
            "estimator: uniform reads no load, so no estimator applies"
        );
    }

    /// algorithms.md's worked example of a tree, and its nodes.
    #[test]
    fn a_tree_divides_the_example_and_shows_its_nodes() {
        let text = include_str!("../../../docs/examples/alloc-tree.json");
        let out: Value =
            serde_json::from_str(&evaluate(text).expect("valid example")).expect("json");
        let rates = &out["intervals"][0]["rates"];
        let expected = [("x1", 10.0), ("x2", 465.0), ("y1", 475.0), ("c1", 50.0)];
        for (job, rate) in expected {
            assert_eq!(rates[job], rate, "{job}");
        }
        let nodes = out["intervals"][0]["nodes"].as_array().expect("nodes");
        let names: Vec<&str> = nodes.iter().filter_map(|n| n["name"].as_str()).collect();
        assert_eq!(
            names,
            ["chem", "carol", "c1", "physics", "x", "x1", "x2", "y", "y1"]
        );
        assert_eq!(nodes[3]["allocation"], 950.0);
        assert_eq!(nodes[3]["weight"], 7.0);
        // The second interval: chem idle, physics takes it all.
        let rates = &out["intervals"][1]["rates"];
        assert_eq!(rates["c1"], 0.0);
        assert_eq!(rates["x2"].as_f64().map(f64::round), Some(490.0));
        assert_eq!(rates["y1"].as_f64().map(f64::round), Some(500.0));
    }

    #[test]
    fn a_tree_refuses_what_it_cannot_use() {
        let input = |top: &str, job: &str| {
            format!(
                r#"{{{top}"capacity":100,"intervals":[{{"jobs":[
                    {{"id":"a","arrivals":1{job}}}]}}]}}"#
            )
        };
        let cases = [
            (
                input(r#""tree":"account,job","algorithm":"psfa","#, ""),
                "algorithm: \"psfa\" with a tree: a tree divides by weight up to demand at \
                 every level, so its algorithm is \"drf\" (or leave it out)",
            ),
            (
                input(r#""algorithm":"drf","shares":{"account":{"a":1}},"#, ""),
                "shares: shares are the nodes' of a tree: give one",
            ),
            (
                input(r#""tree":"account,user","#, ""),
                "tree: the last level, and only it, is job (e.g. \"account,user,job\")",
            ),
            (
                input(r#""tree":"account,job","shares":{"account":{"a":0}},"#, ""),
                "shares.account.a: must be a finite number > 0",
            ),
            (
                input(r#""tree":"account,job","#, r#","account":7"#),
                "intervals[0].jobs[0].account: must be a string",
            ),
            (
                input(r#""algorithm":"drf","#, r#","account":"x""#),
                "intervals[0].jobs[0].account: unknown field (expected one of: id, limit, \
                 usage, arrivals, weight, nodes, period_s)",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(error(&input), expected);
        }
        assert_eq!(
            error(r#"{"tree":"job","capacity":{"ops":1,"bytes":1},"intervals":[]}"#),
            "capacity: must be a number (a tree divides one resource at a time)"
        );
    }

    #[test]
    fn help_lists_every_algorithm_and_the_common_parameter() {
        let help = alloc_help();
        assert!(ALGORITHMS.iter().all(|s| help.contains(s.name)));
        assert!(help.contains(INTERVAL_S.name));
    }
}
