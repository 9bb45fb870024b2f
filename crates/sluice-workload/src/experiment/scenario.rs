//! A scenario file: jobs, the pool they share, what each job does (a workload), the
//! file system they may share, the set-ups to compare (docs/experiments.md has the
//! schema).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sluice_control::config::parse_duration;
use sluice_core::rule::{Rate, parse_rule, parse_size};

use super::ExperimentError;
use crate::error::Doing as _;

/// What is wrong with a scenario, in the administrator's words.
macro_rules! bad {
    ($($arg:tt)*) => {
        return Err(format!($($arg)*))
    };
}

/// A whole scenario.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Its name, in titles and file names.
    pub name: String,
    /// What it shows, printed before it runs with `--live`.
    pub description: Option<String>,
    /// The control interval of the controlled set-ups (default 1s).
    #[serde(default = "one_second", deserialize_with = "duration")]
    pub interval: Duration,
    /// Each set-up ends when its jobs have ended, or after this many seconds.
    #[serde(deserialize_with = "seconds")]
    pub timeout: Duration,
    /// Nodes of the controlled set-ups (default 1): with more than one, a global
    /// controller and a local controller per node, all on this machine, each node's
    /// processes attached through its own local.
    #[serde(default = "one")]
    pub nodes: u32,
    /// The shared capacity.
    pub pool: Pool,
    /// The trace every `trace` job replays (scaled by its load); needed only by them.
    pub trace: Option<TraceSpec>,
    /// A real file system whose bandwidth the jobs share; without it the data jobs write
    /// to the results' working directory, and the pool's capacity stands in for a file
    /// system's.
    pub filesystem: Option<FsSpec>,
    /// A single-node CephFS brought up for each set-up (experiments/cephfs/up.sh) and
    /// taken down at its end: each job's files on the ceph-fuse mount of its `client`,
    /// and the MDS's requests, reply latency and queue read from its admin socket each
    /// second.
    pub cephfs: Option<CephSpec>,
    /// What the summary measures beyond the defaults.
    #[serde(default)]
    pub metrics: Metrics,
    /// Shares of the nodes of a set-up's tree (`[shares.account]`, `[shares.user]`), as
    /// in the controller's configuration; used by set-ups with a `tree`.
    pub shares: Option<toml::value::Table>,
    /// The jobs, in order of arrival.
    #[serde(rename = "job")]
    pub jobs: Vec<Job>,
    /// The set-ups, run one after another.
    #[serde(rename = "setup")]
    pub setups: Vec<Setup>,
}

/// The pool the jobs share (Max_R).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    /// The pool's name.
    pub name: String,
    /// Which calls count against it (a rule's conditions, e.g. `class=metadata`).
    #[serde(rename = "match")]
    pub matches: String,
    /// Its capacity: calls per second, or bytes per second for data (`64MiB/s`).
    #[serde(deserialize_with = "rate")]
    pub capacity: Rate,
    /// The floor shared by all jobs (the controller's default when not given): 0 for a
    /// reservation to be exactly what was asked.
    pub min_share: Option<f64>,
}

/// A loop-device file system made for the run, its bandwidth throttled by the kernel's
/// blkio controller on the root cgroup, so that every byte reaching the device, from any
/// process, shares one bandwidth (needs root and cgroup v1's blkio).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsSpec {
    /// The image's size (`2GiB`).
    #[serde(deserialize_with = "size")]
    pub size: u64,
    /// The device's write bandwidth.
    #[serde(deserialize_with = "rate")]
    pub write: Rate,
    /// The device's read bandwidth (default: the write bandwidth).
    #[serde(default, deserialize_with = "some_rate")]
    pub read: Option<Rate>,
}

/// A scenario's CephFS (`[cephfs]`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CephSpec {
    /// Clients whose cache holds 100 inodes, so that each of their calls is a request
    /// to the MDS (a victim's: on a warm cache its calls would never reach the server).
    #[serde(default)]
    pub small_cache: Vec<String>,
    /// The MDS's mean reply latency to keep: the summary counts the seconds within it,
    /// and a set-up's `auto` has it as `{target}`.
    #[serde(default, deserialize_with = "some_latency_target")]
    pub target: Option<LatencyTarget>,
    /// Seconds after the last job's arrival before the MDS's figures count as settled
    /// (default 10).
    #[serde(default = "ten")]
    pub settle: f64,
}

fn ten() -> f64 {
    10.0
}

/// The MDS's latency to keep, as `[cephfs] target` gives it.
#[derive(Debug, Clone, PartialEq)]
pub enum LatencyTarget {
    /// A fixed latency (`"150us"`).
    Fixed(Duration),
    /// `factor` times the MDS's median reply latency over the settled seconds of the
    /// set-up `reference`, run before in the same run (`"1.5x Aggressors held"`): the
    /// server's latency with the protected jobs alone, on the day, as an administrator
    /// would measure it before setting a target. A fixed target tuned on one machine is
    /// out of reach on a slower one, where the protected jobs alone come near it.
    Relative {
        /// The multiple of the reference's latency (1 or more).
        factor: f64,
        /// The set-up whose latency is the reference.
        reference: String,
    },
}

impl std::str::FromStr for LatencyTarget {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let Some((factor, reference)) = text.split_once("x ") else {
            return sluice_control::source::parse_target(text).map(LatencyTarget::Fixed);
        };
        let bad = || {
            format!(
                "{text:?}: a latency (150us) or a multiple of a set-up's, FACTOR (1 or more) then x and the set-up's name (1.5x Aggressors held)"
            )
        };
        let factor: f64 = factor.trim().parse().map_err(|_| bad())?;
        let reference = reference.trim();
        if !(factor.is_finite() && factor >= 1.0) || reference.is_empty() {
            return Err(bad());
        }
        Ok(LatencyTarget::Relative {
            factor,
            reference: reference.to_owned(),
        })
    }
}

/// The stand-in for the scenario's latency target in a set-up's `auto`.
pub const TARGET: &str = "{target}";

/// Measures computed only when asked for.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// IO-SETS' time frame [T_begin, T_end] (seconds from the set-up's start) over which
    /// stretch, I/O slowdown and utilization are computed from the periodic jobs' phases.
    pub window: Option<[f64; 2]>,
    /// Seconds from the set-up's start at which every job stops, mid-phase if need be
    /// (data jobs only): the measures of a window need nothing after its end. A job
    /// stopped then is shown as stopped, not with a completion time.
    pub stop: Option<f64>,
}

/// A synthetic trace with the published statistics (`sluice trace synth`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Mean calls per second of the whole trace.
    #[serde(deserialize_with = "rate")]
    pub mean: Rate,
    /// Its length in seconds.
    pub seconds: u32,
    /// The random seed.
    #[serde(default)]
    pub seed: u64,
}

/// One job: processes that arrive together, doing what its workload says.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// The job id.
    pub name: String,
    /// When it arrives, in seconds from the start of the set-up.
    #[serde(default, deserialize_with = "seconds")]
    pub start: Duration,
    /// Processes of each part of its workload (a trace replayer's each replays the
    /// trace × load ÷ processes; a data part's each moves what the part says).
    #[serde(default = "one")]
    pub processes: u32,
    /// The multiple of the trace it replays in all (Table 1's load proportion × jobs).
    #[serde(default = "unit")]
    pub load: f64,
    /// Its rate limit (reservation) in the pool, if it has one.
    #[serde(default, deserialize_with = "some_rate")]
    pub limit: Option<Rate>,
    /// The rate it wants (SDQoS' desired bandwidth): its achieved rate is compared with
    /// it. Default, for a data job: the limit, when a set-up's `limits` sets it.
    #[serde(default, deserialize_with = "some_rate")]
    pub desired: Option<Rate>,
    /// Its weight.
    #[serde(default = "unit")]
    pub weight: f64,
    /// Its nodes: a number, the compute nodes it holds as a resource manager reports
    /// them to the launcher (AdapTBF's priority), its processes all on node 0; or a list
    /// of the scenario's node indices its processes run on, round-robin (reported as
    /// that many nodes). Default: node 0, nothing reported.
    pub nodes: Option<Nodes>,
    /// What it does: one part, or several (`[[job.workload]]`) run side by side.
    #[serde(default)]
    pub workload: Parts,
    /// With `[cephfs]`: the ceph-fuse client (and mount) its files are on, `fuse` by
    /// default; a job on a mount of its own has a cache and a session of its own.
    pub client: Option<String>,
    /// Its account (`sluice run --account`), by which a set-up's tree groups it.
    pub account: Option<String>,
    /// The uid it is attached for (`sluice run --uid`, root only): its user in a tree.
    /// Default: whoever runs the scenario.
    pub uid: Option<u32>,
    /// Rules of its own, besides the pool, in every set-up (`sluice run --rule`): a pace
    /// it keeps whether controlled or not, so that each set-up asks for the same. The
    /// time its calls wait on them is not demand for the pool.
    #[serde(default)]
    pub rules: Vec<String>,
}

/// A job's `nodes`: a count reported to the controller, or the nodes it runs on.
#[derive(Debug, Deserialize)]
#[serde(
    untagged,
    expecting = "a number of nodes (e.g. 5) or a list of node indices (e.g. [0, 1])"
)]
pub enum Nodes {
    /// `nodes = 5`: reported as Slurm's `SLURM_JOB_NUM_NODES` would be; runs on node 0.
    Count(u32),
    /// `nodes = [0, 1]`: the scenario's nodes its processes are spread over.
    On(Vec<u32>),
}

impl Job {
    /// The node indices its processes run on, in turn (process `n` on the
    /// `n % len`-th): the listed ones, else node 0.
    pub fn placement(&self) -> Vec<u32> {
        match &self.nodes {
            Some(Nodes::On(list)) => list.clone(),
            _ => vec![0],
        }
    }

    /// The node count its launchers report (`SLURM_JOB_NUM_NODES`), if any.
    pub fn reported_nodes(&self) -> Option<u32> {
        match &self.nodes {
            Some(Nodes::Count(n)) => Some(*n),
            Some(Nodes::On(list)) => u32::try_from(list.len()).ok(),
            None => None,
        }
    }
}

/// A job's workload: one part or several.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Parts {
    /// `[job.workload]`.
    One(Workload),
    /// `[[job.workload]]`.
    Many(Vec<Workload>),
}

impl Default for Parts {
    fn default() -> Self {
        Parts::One(Workload::Trace)
    }
}

impl Parts {
    /// The parts, in order.
    pub fn list(&self) -> &[Workload] {
        match self {
            Parts::One(w) => std::slice::from_ref(w),
            Parts::Many(v) => v,
        }
    }
}

/// What a job's processes do. A new kind is a variant here, its command in
/// `run::command` and, when it records more than a rate per second, its reading in
/// `run::collect`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Workload {
    /// Replays the scenario's `[trace]` (metadata calls) × load ÷ processes.
    Trace,
    /// Data as fast as allowed until `volume` is moved or `seconds` are up.
    Continuous {
        /// The calls' shape.
        #[serde(flatten)]
        io: DataIo,
        /// Bytes to move (each process), e.g. `256MiB`.
        #[serde(
            default,
            deserialize_with = "some_size",
            skip_serializing_if = "Option::is_none"
        )]
        volume: Option<u64>,
        /// Seconds to run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seconds: Option<f64>,
    },
    /// Bursts of `on` seconds as fast as allowed, `off` seconds apart, for `seconds`.
    Bursty {
        /// The calls' shape.
        #[serde(flatten)]
        io: DataIo,
        /// Length of a burst (s).
        on: f64,
        /// Idle time after each burst (s).
        off: f64,
        /// Seconds to run in all.
        seconds: f64,
    },
    /// `iterations` × (compute for `compute` seconds, then move `volume`).
    Periodic {
        /// The calls' shape.
        #[serde(flatten)]
        io: DataIo,
        /// The compute phase (s).
        compute: f64,
        /// Bytes of each I/O phase (each process), e.g. `75MiB`.
        #[serde(deserialize_with = "size")]
        volume: u64,
        /// Compute-then-I/O iterations.
        iterations: u32,
    },
    /// A real program run once, under the stage like any other job: `argv`, after
    /// `setup` has prepared its files. In both, `{dir}` is the job's own directory (also
    /// their working directory) and `{sluice}` the sluice binary running the scenario.
    /// The job's completion time is the command's own run time; its calls per second
    /// are the stage's count of its calls in the pool.
    Command {
        /// The program and its arguments, e.g. `["python3", "-m", "compileall", "-q",
        /// "{dir}/stdlib"]`; a non-zero exit fails the set-up.
        argv: Vec<String>,
        /// A program run before the set-up's clock starts, outside the stage and not
        /// timed (copying the files the command works on); empty: none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        setup: Vec<String>,
    },
}

/// The shape of a data part's calls, and when it starts.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct DataIo {
    /// `write` (default) or `read`.
    #[serde(default = "write")]
    pub access: String,
    /// Bytes per call (default 1 MiB).
    #[serde(default = "mib", deserialize_with = "size")]
    pub block: u64,
    /// Threads of each process, each with a file of its own.
    #[serde(default = "one")]
    pub threads: u32,
    /// Seconds after the job's arrival at which this part starts.
    #[serde(default)]
    pub delay: f64,
}

/// One way of running the jobs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// Its name (Baseline, PSFA, …).
    pub name: String,
    /// The pool's algorithm (`sluice alloc --help`), or `none`: no controller, no stage
    /// (but a command job's program still runs under the stage, standalone, with a
    /// static rule at its limit in this set-up, or one that never holds, to be counted).
    pub algorithm: String,
    /// The algorithm's parameters (`{ work_conserving = false }`).
    #[serde(default)]
    pub params: BTreeMap<String, toml::Value>,
    /// Jobs' limits in this set-up, by job name (each also a data job's desired rate
    /// when it names none).
    #[serde(default)]
    pub limits: BTreeMap<String, String>,
    /// Jobs' I/O periods given to the controller in this set-up (`"19.2s"`), by job
    /// name: SET-10 with known periods, or with an error injected into them.
    #[serde(default)]
    pub periods: BTreeMap<String, String>,
    /// Skip the set-up, saying so, when its algorithm is not in this build (one being
    /// written elsewhere).
    #[serde(default)]
    pub optional: bool,
    /// The pool's capacity found on its own in this set-up: the controller's `auto = {
    /// … }` settings (docs/control-plane.md), `{mds}` in a string standing for the
    /// scenario's CephFS MDS admin socket and `{target}` for its latency target.
    pub auto: Option<toml::value::Table>,
    /// The pool's operations weighed in this set-up (`{ unlink = 8 }`,
    /// docs/control-plane.md "What a call costs"): its capacity, limits and allocations
    /// are then in cost units.
    #[serde(default)]
    pub costs: BTreeMap<String, u32>,
    /// The costs learned from the server in this set-up (`"ceph-mds:{mds}"`, `{mds}` as
    /// in `auto`).
    pub costs_from: Option<String>,
    /// The pool divided down a tree in this set-up (`"account,user,job"`; its algorithm
    /// then `drf`), with the scenario's `[shares]`.
    pub tree: Option<String>,
}

impl Setup {
    /// Whether its `auto` takes the scenario's latency target (`{target}`).
    pub fn uses_target(&self) -> bool {
        self.auto.as_ref().is_some_and(|a| {
            a.values()
                .any(|v| v.as_str().is_some_and(|s| s.contains(TARGET)))
        })
    }
}

fn one_second() -> Duration {
    Duration::from_secs(1)
}
fn one() -> u32 {
    1
}
fn write() -> String {
    "write".into()
}
fn mib() -> u64 {
    1 << 20
}
fn unit() -> f64 {
    1.0
}

fn rate<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Rate, D::Error> {
    let text = String::deserialize(d)?;
    text.parse().map_err(serde::de::Error::custom)
}

fn some_rate<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Rate>, D::Error> {
    rate(d).map(Some)
}

fn size<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Text {
        Number(u64),
        Text(String),
    }
    match Text::deserialize(d)? {
        Text::Number(n) => Ok(n),
        Text::Text(t) => parse_size(&t).map_err(serde::de::Error::custom),
    }
}

fn some_size<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    size(d).map(Some)
}

fn seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = f64::deserialize(d)?;
    Duration::try_from_secs_f64(s)
        .map_err(|_| serde::de::Error::custom(format!("{s}: not a number of seconds ≥ 0")))
}

fn duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    parse_duration(&text).map_err(serde::de::Error::custom)
}

fn some_latency_target<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<LatencyTarget>, D::Error> {
    let text = String::deserialize(d)?;
    text.parse().map(Some).map_err(serde::de::Error::custom)
}

impl Scenario {
    /// Reads and checks a scenario file; one that cannot be read is the one the
    /// administrator named, their input.
    pub fn load(path: &Path) -> Result<Scenario, ExperimentError> {
        let text = std::fs::read_to_string(path)
            .doing(|| format!("read {}", path.display()))
            .map_err(|e| ExperimentError::Scenario(e.to_string()))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Reads and checks a scenario's text; `origin` names it in complaints.
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ExperimentError> {
        let bad = |why: String| ExperimentError::Scenario(format!("{origin}: {why}"));
        let s: Scenario = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        s.check().map_err(bad)?;
        Ok(s)
    }

    fn check(&self) -> Result<(), String> {
        if self.jobs.is_empty() || self.setups.is_empty() {
            bad!("a scenario needs at least one [[job]] and one [[setup]]");
        }
        if self.nodes == 0 {
            bad!("nodes must be at least 1");
        }
        let positive = |x: f64| x.is_finite() && x > 0.0;
        let at_least_zero = |x: f64| x.is_finite() && x >= 0.0;
        for j in &self.jobs {
            if j.processes == 0 || !positive(j.load) || !positive(j.weight) {
                bad!(
                    "job {}: processes, load and weight must be above zero",
                    j.name
                );
            }
            if self.jobs.iter().filter(|o| o.name == j.name).count() > 1 {
                bad!("job {}: named twice", j.name);
            }
            for r in &j.rules {
                if let Err(e) = parse_rule(r) {
                    bad!("job {}: rule {r:?}: {e}", j.name);
                }
            }
            match &j.nodes {
                Some(Nodes::Count(0)) => bad!("job {}: nodes must be at least 1", j.name),
                Some(Nodes::On(list)) => {
                    if list.is_empty() {
                        bad!("job {}: nodes = []: list at least one node", j.name);
                    }
                    if let Some(bad) = list.iter().find(|&&k| k >= self.nodes) {
                        bad!(
                            "job {}: no node {bad}: the scenario has nodes 0 to {} (top-level nodes = {})",
                            j.name,
                            self.nodes - 1,
                            self.nodes
                        );
                    }
                    let mut seen = list.clone();
                    seen.sort_unstable();
                    seen.dedup();
                    if seen.len() != list.len() {
                        bad!("job {}: nodes {list:?}: a node is listed twice", j.name);
                    }
                    if list.len() > j.processes as usize {
                        bad!(
                            "job {}: {} processes cannot run on {} nodes",
                            j.name,
                            j.processes,
                            list.len()
                        );
                    }
                }
                _ => {}
            }
            for w in j.workload.list() {
                let why = match w {
                    Workload::Trace if self.trace.is_none() => "a trace job needs [trace]",
                    Workload::Trace => continue,
                    Workload::Command { argv, .. } if argv.is_empty() => {
                        "a command part needs a non-empty argv"
                    }
                    Workload::Command { .. }
                        if j.processes != 1 || j.workload.list().len() != 1 =>
                    {
                        "a command job runs its command once: one part, processes = 1"
                    }
                    Workload::Continuous {
                        volume: None,
                        seconds: None,
                        ..
                    } => "a continuous part needs a volume or seconds",
                    Workload::Continuous {
                        seconds: Some(s), ..
                    } if !positive(*s) => "seconds must be above zero",
                    Workload::Bursty {
                        on, off, seconds, ..
                    } if !(positive(*on) && at_least_zero(*off) && positive(*seconds)) => {
                        "on and seconds must be above zero, off at least zero"
                    }
                    Workload::Periodic {
                        compute,
                        volume,
                        iterations,
                        ..
                    } if !at_least_zero(*compute) || *volume == 0 || *iterations == 0 => {
                        "compute must be at least zero, volume and iterations above zero"
                    }
                    _ => "",
                };
                if !why.is_empty() {
                    bad!("job {}: {why}", j.name);
                }
                if let Some(io) = w.data() {
                    if !matches!(io.access.as_str(), "read" | "write") {
                        bad!("job {}: access must be read or write", j.name);
                    }
                    if io.block == 0 || !io.block.is_multiple_of(4096) || io.threads == 0 {
                        bad!(
                            "job {}: block must be a multiple of 4 KiB (O_DIRECT), threads above zero",
                            j.name
                        );
                    }
                    if !at_least_zero(io.delay) {
                        bad!("job {}: delay must be at least zero", j.name);
                    }
                }
            }
        }
        for s in &self.setups {
            if s.algorithm != "none"
                && !s.optional
                && let Err(e) = sluice_policy::registry::find(&s.algorithm)
            {
                bad!("setup {}: {e} (or algorithm = \"none\")", s.name);
            }
            for (job, limit) in &s.limits {
                if !self.jobs.iter().any(|j| &j.name == job) {
                    bad!("setup {}: limits: no job is named {job:?}", s.name);
                }
                if let Err(e) = limit.parse::<Rate>() {
                    bad!("setup {}: limits.{job}: {e}", s.name);
                }
            }
            for (job, period) in &s.periods {
                if !self.jobs.iter().any(|j| &j.name == job) {
                    bad!("setup {}: periods: no job is named {job:?}", s.name);
                }
                match sluice_control::config::parse_millis(period) {
                    Ok(p) if !p.is_zero() => {}
                    Ok(_) => bad!("setup {}: periods.{job}: must be more than zero", s.name),
                    Err(e) => bad!("setup {}: periods.{job}: {e}", s.name),
                }
            }
        }
        if self.cephfs.is_some() && self.filesystem.is_some() {
            bad!("[cephfs] and [filesystem]: one file system per scenario");
        }
        let name_ok = |c: &str| {
            !c.is_empty()
                && c != "admin"
                && c.chars()
                    .all(|x| x.is_ascii_alphanumeric() || x == '_' || x == '-')
        };
        for j in &self.jobs {
            match (&j.client, &self.cephfs) {
                (Some(_), None) => bad!("job {}: client is for a scenario with [cephfs]", j.name),
                (Some(c), Some(_)) if !name_ok(c) => bad!(
                    "job {}: client {c:?}: letters, digits, _ or - (and not admin, the CLI's own)",
                    j.name
                ),
                _ => {}
            }
        }
        if let Some(c) = &self.cephfs
            && let Some(bad) = c.small_cache.iter().find(|c| !name_ok(c))
        {
            bad!("cephfs.small_cache: client {bad:?}: letters, digits, _ or - (and not admin)");
        }
        self.check_latency_target()?;
        if let Some([a, b]) = self.metrics.window
            && !(at_least_zero(a) && b > a && b.is_finite())
        {
            bad!("metrics.window: [T_begin, T_end] with 0 ≤ T_begin < T_end");
        }
        if let Some(stop) = self.metrics.stop {
            let end = self.metrics.window.map_or(0.0, |[_, b]| b);
            if !(stop.is_finite() && stop > 0.0 && stop >= end) {
                bad!(
                    "metrics.stop = {stop}: must be a number of seconds, at or after the window's end"
                );
            }
            if let Some(j) = self
                .jobs
                .iter()
                .find(|j| j.workload.list().iter().any(|w| w.data().is_none()))
            {
                bad!(
                    "metrics.stop: job {} is not a data job (only data jobs can be stopped mid-run)",
                    j.name
                );
            }
        }
        Ok(())
    }

    /// `{target}` only where `[cephfs] target` gives it, and a relative target's
    /// reference a set-up that runs before every set-up using it and does not use it.
    fn check_latency_target(&self) -> Result<(), String> {
        let target = self.cephfs.as_ref().and_then(|c| c.target.as_ref());
        let first_user = self.setups.iter().position(Setup::uses_target);
        match (target, first_user) {
            (None, Some(i)) => bad!(
                "setup {}: auto uses {TARGET}, but [cephfs] has no target",
                self.setups[i].name
            ),
            (Some(LatencyTarget::Relative { reference, .. }), _) => {
                let Some(r) = self.setups.iter().position(|s| &s.name == reference) else {
                    bad!("cephfs.target: no set-up is named {reference:?}");
                };
                if let Some(i) = first_user
                    && i <= r
                {
                    bad!(
                        "setup {}: auto uses {TARGET}, relative to set-up {reference:?}, which must run before it (and not use it)",
                        self.setups[i].name
                    );
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The ceph-fuse clients the jobs use (with `[cephfs]`), each once.
    pub fn clients(&self) -> Vec<String> {
        let mut c: Vec<String> = self
            .jobs
            .iter()
            .map(|j| {
                j.client
                    .clone()
                    .unwrap_or_else(|| super::run::DEFAULT_CLIENT.into())
            })
            .collect();
        c.sort();
        c.dedup();
        c
    }

    /// Job `i`'s limit in `setup`: the set-up's, else the job's.
    pub fn limit(&self, setup: &Setup, i: usize) -> Option<Rate> {
        let job = &self.jobs[i];
        match setup.limits.get(&job.name) {
            // Checked when the scenario was read.
            Some(text) => text.parse().ok(),
            None => job.limit,
        }
    }

    /// Job `i`'s desired rate in `setup`: its own, else, for a job moving data (SDQoS'
    /// reservations), the set-up's limit for it. A command's or a replayer's limit is
    /// a share of the pool, not a rate it asks for.
    pub fn desired(&self, setup: &Setup, i: usize) -> Option<Rate> {
        let job = &self.jobs[i];
        let data = job.workload.list().iter().any(|w| w.data().is_some());
        job.desired.or_else(|| {
            setup
                .limits
                .get(&job.name)
                .filter(|_| data)
                .and_then(|text| text.parse().ok())
        })
    }

    /// Job `i`'s time with the whole pool to itself: each part's delay, its computing
    /// and its bytes (every process's) at the pool's capacity; the longest part.
    /// `None` when a part's work is not a fixed amount (a trace, a command, a part
    /// bounded by seconds): its completion time then says nothing of its slowdown.
    pub fn ideal(&self, i: usize) -> Option<f64> {
        let job = &self.jobs[i];
        let capacity = self.pool.capacity.per_sec as f64;
        let processes = f64::from(job.processes);
        let mut longest: f64 = 0.0;
        for part in job.workload.list() {
            let t = match part {
                Workload::Periodic {
                    io,
                    compute,
                    volume,
                    iterations,
                } => {
                    let n = f64::from(*iterations);
                    io.delay + n * (compute + processes * *volume as f64 / capacity)
                }
                Workload::Continuous {
                    io,
                    volume: Some(v),
                    seconds: None,
                } => io.delay + processes * *v as f64 / capacity,
                _ => return None,
            };
            longest = longest.max(t);
        }
        (longest > 0.0).then_some(longest)
    }

    /// Whether any job moves data (the timeline is then in bytes per second).
    pub fn has_data(&self) -> bool {
        self.jobs
            .iter()
            .any(|j| j.workload.list().iter().any(|w| w.data().is_some()))
    }

    /// The local controller's configuration for a controlled set-up; `mds`, the
    /// scenario's MDS admin socket, for `{mds}` in the set-up's `auto`, and `target`, the
    /// latency target in force, for `{target}`.
    pub fn local_config(
        &self,
        setup: &Setup,
        mds: Option<&Path>,
        target: Option<Duration>,
    ) -> String {
        let placed = |s: &str| {
            let s = match mds {
                Some(m) => s.replace("{mds}", &m.display().to_string()),
                None => s.to_string(),
            };
            match target {
                Some(t) => s.replace(TARGET, &sluice_control::source::format_target(t)),
                None => s,
            }
        };
        let capacity = match &setup.auto {
            None => format!("\"{}\"", self.pool.capacity),
            Some(auto) => {
                let mut auto = auto.clone();
                for (_, v) in auto.iter_mut() {
                    if let toml::Value::String(s) = v {
                        *s = placed(s);
                    }
                }
                format!("\"auto\"\nauto = {}", toml::Value::Table(auto))
            }
        };
        let mut c = format!(
            "interval = \"{}ms\"\n\n[[pool]]\nname = \"{}\"\nmatch = \"{}\"\ncapacity = {capacity}\nalgorithm = \"{}\"\n",
            self.interval.as_millis(),
            self.pool.name,
            self.pool.matches,
            setup.algorithm
        );
        if let Some(m) = self.pool.min_share {
            c += &format!("min_share = {m}\n");
        }
        if let Some(tree) = &setup.tree {
            c += &format!("tree = \"{tree}\"\n");
        }
        if !setup.costs.is_empty() {
            c += &format!("costs = {}\n", inline_table(&setup.costs));
        }
        if let Some(from) = &setup.costs_from {
            c += &format!("costs_from = {}\n", toml::Value::String(placed(from)));
        }
        if !setup.params.is_empty() {
            c += &format!("params = {}\n", inline_table(&setup.params));
        }
        for (i, j) in self.jobs.iter().enumerate() {
            c += &format!(
                "\n[[job]]\njob = \"{}\"\npool = \"{}\"\nweight = {}\n",
                j.name, self.pool.name, j.weight
            );
            if let Some(limit) = self.limit(setup, i) {
                c += &format!("limit = \"{limit}\"\n");
            }
            if let Some(period) = setup.periods.get(&j.name) {
                c += &format!("period = \"{period}\"\n");
            }
        }
        if let (Some(shares), Some(_)) = (&self.shares, &setup.tree) {
            let mut t = toml::value::Table::new();
            t.insert("shares".into(), toml::Value::Table(shares.clone()));
            c += &format!("\n{}", toml::to_string(&t).unwrap_or_default());
        }
        c
    }
}

/// `{ k = v, … }`: a set-up's table as one line of the controller's configuration.
fn inline_table<V: std::fmt::Display>(t: &BTreeMap<String, V>) -> String {
    let kv: Vec<String> = t.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    format!("{{ {} }}", kv.join(", "))
}

impl Workload {
    /// A data part's call shape; `None` for a trace replay or a command.
    pub fn data(&self) -> Option<&DataIo> {
        match self {
            Workload::Trace | Workload::Command { .. } => None,
            Workload::Continuous { io, .. }
            | Workload::Bursty { io, .. }
            | Workload::Periodic { io, .. } => Some(io),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_demo_is_a_valid_scenario_of_four_paced_jobs() {
        let sc = Scenario::parse(crate::demo::SCENARIO, "demo").expect("the demo's scenario");
        assert_eq!(sc.jobs.len(), 4);
        assert!(sc.jobs.iter().all(|j| j.rules.len() == 1));
        let algorithms: Vec<&str> = sc.setups.iter().map(|s| s.algorithm.as_str()).collect();
        assert_eq!(algorithms, ["psfa-held", "none"]);
    }

    #[test]
    fn a_job_rule_that_does_not_parse_is_the_administrators_input() {
        let text = crate::demo::SCENARIO.replace("rate=16000/s", "rat=16000/s");
        let e = Scenario::parse(&text, "s.toml").expect_err("a bad rule");
        let fault = sluice_core::error::Blame::fault(&e);
        assert_eq!(fault, sluice_core::error::Fault::Input, "{e}");
        assert!(e.to_string().contains("job sim: rule"), "{e}");
    }

    #[test]
    fn a_setups_costs_reach_the_controllers_pool_with_the_mds_named() {
        let text = format!(
            "{}\n[[setup]]\nname = \"Weighed\"\nalgorithm = \"psfa\"\ncosts = {{ unlink = 7, mknod = 4 }}\ncosts_from = \"ceph-mds:{{mds}}\"\n",
            crate::demo::SCENARIO
        );
        let sc = Scenario::parse(&text, "demo").expect("a scenario with costs");
        let setup = sc.setups.last().expect("the weighed set-up");
        let config = sc.local_config(setup, Some(Path::new("/run/mds.asok")), None);
        assert!(
            config.contains("costs = { mknod = 4, unlink = 7 }\n"),
            "{config}"
        );
        assert!(
            config.contains("costs_from = \"ceph-mds:/run/mds.asok\"\n"),
            "{config}"
        );
    }

    #[test]
    fn every_scenario_in_experiments_is_read_without_a_complaint() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
        let mut dirs = vec![root];
        let mut read = 0;
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("experiments/") {
                let path = entry.expect("an entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "toml") {
                    if let Err(e) = Scenario::load(&path) {
                        panic!("{}: {e}", path.display());
                    }
                    read += 1;
                }
            }
        }
        assert!(read >= 13, "only {read} scenarios under experiments/");
    }

    /// The demo with `[cephfs] target = TARGET` and two set-ups: a reference and one
    /// whose `auto` takes the target, the reference first or second.
    fn with_target(target: &str, reference_first: bool) -> Result<Scenario, ExperimentError> {
        let reference = "[[setup]]\nname = \"Held\"\nalgorithm = \"none\"\n";
        let auto = "[[setup]]\nname = \"Auto\"\nalgorithm = \"psfa\"\nauto = { source = \"ceph-mds:{mds}\", target = \"{target}\", start = \"5k/s\" }\n";
        let (a, b) = match reference_first {
            true => (reference, auto),
            false => (auto, reference),
        };
        let text = format!(
            "{}\n{a}{b}[cephfs]\ntarget = \"{target}\"\n",
            crate::demo::SCENARIO
        );
        Scenario::parse(&text, "s.toml")
    }

    #[test]
    fn a_latency_target_is_fixed_or_a_multiple_of_an_earlier_setups() {
        let sc = with_target("1.5x Held", true).expect("a relative target");
        let target = sc.cephfs.as_ref().and_then(|c| c.target.clone());
        assert_eq!(
            target,
            Some(LatencyTarget::Relative {
                factor: 1.5,
                reference: "Held".into()
            })
        );
        let auto = sc.setups.last().expect("the automatic set-up");
        assert!(auto.uses_target());
        let config = sc.local_config(
            auto,
            Some(Path::new("/run/mds.asok")),
            Some(Duration::from_micros(206)),
        );
        assert!(config.contains("target = \"206us\""), "{config}");
        assert!(
            config.contains("source = \"ceph-mds:/run/mds.asok\""),
            "{config}"
        );
        let sc = with_target("150us", false).expect("a fixed target");
        let target = sc.cephfs.as_ref().and_then(|c| c.target.clone());
        assert_eq!(
            target,
            Some(LatencyTarget::Fixed(Duration::from_micros(150)))
        );
    }

    #[test]
    fn a_relative_target_needs_its_reference_first_and_a_sensible_factor() {
        let e = with_target("1.5x Held", false).expect_err("the reference after");
        assert!(e.to_string().contains("must run before it"), "{e}");
        let e = with_target("1.5x Nobody", true).expect_err("no such set-up");
        assert!(
            e.to_string().contains("no set-up is named \"Nobody\""),
            "{e}"
        );
        for bad in ["0.5x Held", "x Held", "1.5x ", "fastx Held"] {
            let e = with_target(bad, true).expect_err(bad);
            assert!(e.to_string().contains("FACTOR (1 or more)"), "{bad}: {e}");
        }
        let no_target = format!(
            "{}\n[[setup]]\nname = \"Auto\"\nalgorithm = \"psfa\"\nauto = {{ source = \"ceph-mds:{{mds}}\", target = \"{{target}}\" }}\n",
            crate::demo::SCENARIO
        );
        let e = Scenario::parse(&no_target, "s.toml").expect_err("{target} without a target");
        assert!(e.to_string().contains("[cephfs] has no target"), "{e}");
    }
}
