//! The admin commands: `sluice status | jobs | job set | pool … | rule start|change|stop|list`.
//! Each talks to a controller's Admin service; a refused change exits 2 with the
//! controller's one line, and nothing changed.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use serde_json::{Value, json};
use sluice_control::admin::{jobs_json, pools_json, status_json};
use sluice_control::cluster::SegmentNote;
use sluice_control::config::format_duration;
use sluice_control::proto::{
    Empty, JobSetRequest, NameRequest, PoolInfo, PoolListReply, PoolSetRequest, RuleChangeRequest,
    RuleStartRequest, ShareSetRequest, StatusReply,
};
use sluice_core::hostlist;
use sluice_core::rule::{Rate, Unit, format_rate_approx};

use crate::client::ServerArgs;

/// `sluice job …`.
#[derive(clap::Subcommand, Debug)]
pub enum JobCmd {
    /// Set a job's reservation (PSFA's and PSharing's demand) and weight in a pool.
    ///
    /// Example: sluice job set 4242 --pool scratch-md --limit 5k/s --weight 2
    Set {
        /// The job id.
        job: String,
        /// The pool (default: every pool counting the limit's unit).
        #[arg(long)]
        pool: Option<String>,
        /// The job's reservation, e.g. 5k/s or 200MiB/s.
        #[arg(long, value_name = "RATE")]
        limit: Option<String>,
        /// The job's weight (default: its node count).
        #[arg(long, value_name = "W")]
        weight: Option<f64>,
        /// Remove the job's limit (back to its demand).
        #[arg(long, conflicts_with = "limit")]
        clear_limit: bool,
        /// Remove the job's weight (back to its node count).
        #[arg(long, conflicts_with = "weight")]
        clear_weight: bool,
        #[command(flatten)]
        server: ServerArgs,
    },
}

/// `sluice pool …`.
#[derive(clap::Subcommand, Debug)]
pub enum PoolCmd {
    /// Create or replace a pool: a capacity shared by every job whose calls match.
    ///
    /// Example: sluice pool set scratch-md --match 'class=metadata mount=/scratch'
    ///          --capacity 10k/s --algorithm psfa
    #[command(verbatim_doc_comment)]
    Set {
        /// The pool's name.
        name: String,
        /// The calls it counts: a rule without its rate (empty: every call).
        #[arg(long = "match", value_name = "FILTER", default_value = "")]
        filter: String,
        /// Its capacity, e.g. 10k/s or 2GiB/s.
        #[arg(long, value_name = "RATE")]
        capacity: String,
        /// The algorithm dividing it: static, uniform, uniform-share, priority,
        /// priority-share, psharing, psfa, psfa-held, adaptbf, adaptbf-bounded,
        /// adaptbf-need, set10, reservations, drf (`sluice alloc --help`). With
        /// --tree: drf, or leave it out.
        #[arg(long, value_name = "ALGO", required_unless_present = "tree")]
        algorithm: Option<String>,
        /// An algorithm parameter, K=V (repeatable).
        #[arg(long = "param", value_name = "K=V")]
        params: Vec<String>,
        /// The figure fed to the algorithm as each job's load: usage (the rate it was
        /// admitted), arrivals (the calls that reached the gate) or wait-inflated
        /// (sluice's estimate of its unthrottled demand). Default: the one the
        /// algorithm's paper measures (psfa: usage, adaptbf: arrivals), else
        /// wait-inflated; refused for algorithms that read no load.
        #[arg(long, value_name = "ESTIMATOR")]
        estimator: Option<String>,
        /// Divide the pool down a tree of job attributes, top first, ending with job:
        /// account, user, qos, partition, job, each LEVEL or LEVEL:RULE with RULE
        /// share (the node's share, `sluice share set`; default but for job), equal,
        /// or nodes (node count; default for job). Each level water-fills what its
        /// parent got by weight up to demand: what a subtree leaves unused goes to its
        /// siblings first, then up. E.g. account,user,job or
        /// account:share,user:equal,job:nodes.
        #[arg(long, value_name = "LEVELS")]
        tree: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List the pools with their allocated and used rates.
    List {
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Remove a pool (and the job settings made for it).
    Rm {
        /// The pool's name.
        name: String,
        #[command(flatten)]
        server: ServerArgs,
    },
}

/// `sluice share …`.
#[derive(clap::Subcommand, Debug)]
pub enum ShareCmd {
    /// Set the share of a node of pools' trees, kept in the configuration (and beating
    /// Slurm's share for the same node).
    ///
    /// Example: sluice share set account=physics 7
    ///          sluice share set user=physics/alice 2   (alice under physics only)
    ///          sluice share set account=physics --clear
    #[command(verbatim_doc_comment)]
    Set {
        /// LEVEL=NAME or LEVEL=PARENT/NAME; LEVEL is account, user, qos or partition.
        node: String,
        /// The share, a number > 0; siblings divide their parent's part by share.
        #[arg(required_unless_present = "clear")]
        share: Option<f64>,
        /// Remove the share: the node weighs 1 again (or what Slurm says).
        #[arg(long, conflicts_with = "share")]
        clear: bool,
        #[command(flatten)]
        server: ServerArgs,
    },
}

impl ShareCmd {
    /// Runs the subcommand.
    pub fn run(&self) -> Result<i32> {
        let ShareCmd::Set {
            node,
            share,
            clear,
            server,
        } = self;
        let request = ShareSetRequest {
            node: node.clone(),
            share: share.unwrap_or(0.0),
            clear: *clear,
        };
        server.ask(async |c| c.share_set(request).await)?;
        Ok(0)
    }
}

/// The rule verbs Lustre administrators know from NRS TBF.
#[derive(clap::Subcommand, Debug)]
pub enum RuleAdmin {
    /// Start a rule on every job it matches: 'NAME: FILTER rate=R [burst=N]'.
    Start {
        /// The rule, quoted as one argument.
        rule: String,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Change a running rule's rate: sluice rule change NAME rate=R [burst=N].
    Change {
        /// The rule's name.
        name: String,
        /// rate=R [burst=N].
        #[arg(num_args = 1.., required = true)]
        change: Vec<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Stop a rule.
    Stop {
        /// The rule's name.
        name: String,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List the administrator's rules, in the order they are tried.
    List {
        #[command(flatten)]
        server: ServerArgs,
    },
}

/// `sluice status`: the controller's role and links, its jobs, pools and rules, and how
/// long ago its last cycle was.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    server: ServerArgs,
}

/// `sluice jobs`: every job with its nodes and, per pool, allocation, rate and demand.
#[derive(clap::Args, Debug)]
pub struct JobsArgs {
    /// Show the pools that have a tree as trees: per account, user, … and job, the
    /// allocation, rate, demand and weight of each node, as of the last cycle.
    #[arg(long)]
    tree: bool,
    #[command(flatten)]
    server: ServerArgs,
}

fn print(json: bool, value: Value, table: impl FnOnce(&Value) -> String) {
    if json {
        println!("{}", serde_json::to_string_pretty(&value).expect("JSON"));
    } else {
        print!("{}", table(&value));
    }
}

impl StatusArgs {
    /// Prints the status.
    pub fn run(&self) -> Result<i32> {
        let s = self.server.ask(async |c| c.status(Empty {}).await)?;
        let value = status_json(&s);
        print(self.server.json, value, |_| {
            status_lines(&s, SystemTime::now())
                .iter()
                .map(|l| format!("{l}\n"))
                .chain(s.warnings.iter().map(|w| format!("warning: {w}\n")))
                .collect()
        });
        Ok(0)
    }
}

/// `n` and `thing`, plural when `n` is not 1: `1 job`, `3 locals`.
fn count(n: u32, thing: &str) -> String {
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

/// The status as an administrator reads it, `now` being the wall clock: who answers and
/// what it holds, then how its cycles go. Cycles are numbered by the wall clock (cycle `k`
/// closes at `k` intervals since the epoch), so the last one's age needs no other field.
pub(crate) fn status_lines(s: &StatusReply, now: SystemTime) -> [String; 2] {
    let links = match (s.role.as_str(), s.single_node) {
        (_, true) => " (single node)".to_owned(),
        ("global", _) => format!(": {} connected", count(s.locals, "local")),
        _ if s.global_connected => ": its global connected".to_owned(),
        _ => ": its global NOT connected".to_owned(),
    };
    let what = format!(
        "{} controller{links}, {}, {}, {}",
        s.role,
        count(s.jobs, "job"),
        count(s.pools, "pool"),
        count(s.rules, "rule")
    );
    let every = Duration::try_from_secs_f64(s.interval_s).unwrap_or_default();
    let boundary = Duration::try_from_secs_f64(s.cycle as f64 * s.interval_s).unwrap_or_default();
    let age = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .saturating_sub(boundary);
    let cycles = if s.cycle == 0 {
        format!("no cycle yet; one every {}", format_duration(every))
    } else {
        // Three intervals and a second of slack: a global waits half an interval for
        // late reports, and a busy machine wakes late.
        let late = if age > every * 3 + Duration::from_secs(1) {
            " (late)"
        } else {
            ""
        };
        format!(
            "last cycle {} ago{late}, one every {}; a cycle takes {} (median {})",
            age_text(age),
            format_duration(every),
            micros_text(s.cycle_us_last),
            micros_text(s.cycle_us_median)
        )
    };
    [what, cycles]
}

/// `0.4 s`, `12 s`, `5 min`, `3 h`: as precise as a glance needs.
fn age_text(age: Duration) -> String {
    let s = age.as_secs_f64();
    match s {
        ..10.0 => format!("{s:.1} s"),
        ..120.0 => format!("{s:.0} s"),
        ..7200.0 => format!("{:.0} min", s / 60.0),
        _ => format!("{:.0} h", s / 3600.0),
    }
}

/// `350 µs`, `12 ms`.
fn micros_text(us: f64) -> String {
    if us < 10_000.0 {
        format!("{us:.0} µs")
    } else {
        format!("{:.0} ms", us / 1e3)
    }
}

/// What each pool counts, by name, read from its capacity (`10k/s`, `auto 50MiB/s`); a
/// pool whose capacity cannot be read counts operations.
pub(crate) fn pool_units(pools: &PoolListReply) -> BTreeMap<String, Unit> {
    pools
        .pools
        .iter()
        .map(|p| {
            (
                p.name.clone(),
                capacity_rate(p).map_or(Unit::Ops, |r| r.unit),
            )
        })
        .collect()
}

fn capacity_rate(p: &PoolInfo) -> Option<Rate> {
    let typed = p.capacity.strip_prefix("auto ").unwrap_or(&p.capacity);
    typed.parse().ok()
}

/// A pool's capacity as shown: as the administrator set it, or for an automatic pool the
/// one it found, rounded (`auto 12k/s`).
pub(crate) fn capacity_text(p: &PoolInfo) -> String {
    match capacity_rate(p) {
        Some(r) if p.capacity.starts_with("auto ") => {
            format!("auto {}", format_rate_approx(r.per_sec as f64, r.unit))
        }
        _ => p.capacity.clone(),
    }
}

/// A figure of `pool` for reading, in the pool's unit (operations when unknown).
pub(crate) fn rate_in(units: &BTreeMap<String, Unit>, pool: &str, per_sec: f64) -> String {
    let unit = units.get(pool).copied().unwrap_or(Unit::Ops);
    format_rate_approx(per_sec, unit)
}

impl JobsArgs {
    /// Prints the jobs.
    pub fn run(&self) -> Result<i32> {
        if self.tree {
            let pools = self.server.ask(async |c| c.pool_list(Empty {}).await)?;
            if self.server.json {
                print(true, pools_json(&pools), |_| String::new());
            } else {
                print!("{}", tree_table(&pools));
            }
            return Ok(0);
        }
        let reply = self.server.ask(async |c| c.jobs(Empty {}).await)?;
        if self.server.json {
            print(true, jobs_json(&reply), |_| String::new());
            return Ok(0);
        }
        let units = pool_units(&self.server.ask(async |c| c.pool_list(Empty {}).await)?);
        let mut out = format!(
            "{:<12} {:<10} {:<10} {:>10} {:>9} {:>9} {:>5}  NODES\n",
            "JOB", "USER", "POOL", "ALLOCATION", "RATE", "DEMAND", "WAIT"
        );
        for j in &reply.jobs {
            let nodes = hostlist::compress(&j.nodes);
            if j.pools.is_empty() {
                out += &format!(
                    "{:<12} {:<10} {:<10} {:>10} {:>9} {:>9} {:>5}  {nodes}\n",
                    j.job, j.user, "-", "-", "-", "-", "-"
                );
            }
            for (pool, s) in &j.pools {
                let rate = |v| rate_in(&units, pool, v);
                out += &format!(
                    "{:<12} {:<10} {:<10} {:>10} {:>9} {:>9} {:>5.2}  {nodes}\n",
                    j.job,
                    j.user,
                    pool,
                    rate(s.allocation),
                    rate(s.rate),
                    rate(s.demand),
                    s.wait
                );
            }
        }
        for j in &reply.jobs {
            for n in &j.segments {
                out += &format!("job {} on {}: {}\n", j.job, n.node, SegmentNote::from(n));
            }
        }
        print!("{out}");
        Ok(0)
    }
}

/// The pools with a tree, each node on a line indented by its depth.
fn tree_table(pools: &PoolListReply) -> String {
    let units = pool_units(pools);
    let mut out = String::new();
    for p in pools.pools.iter().filter(|p| !p.tree.is_empty()) {
        let rate = |v| rate_in(&units, &p.name, v);
        out += &format!(
            "pool {} ({}), tree {}\n{:<32} {:>10} {:>9} {:>9} {:>7}\n",
            p.name,
            capacity_text(p),
            p.tree,
            "NODE",
            "ALLOCATION",
            "RATE",
            "DEMAND",
            "WEIGHT"
        );
        for n in &p.nodes {
            let label = format!("{}{}={}", "  ".repeat(n.depth as usize), n.level, n.name);
            out += &format!(
                "{label:<32} {:>10} {:>9} {:>9} {:>7.3}\n",
                rate(n.allocation),
                rate(n.rate),
                rate(n.demand),
                n.weight
            );
        }
    }
    if out.is_empty() {
        out = "no pool has a tree (sluice pool set NAME … --tree account,user,job)\n".to_owned();
    }
    out
}

impl JobCmd {
    /// Runs the subcommand.
    pub fn run(&self) -> Result<i32> {
        let JobCmd::Set {
            job,
            pool,
            limit,
            weight,
            clear_limit,
            clear_weight,
            server,
        } = self;
        let request = JobSetRequest {
            job: job.clone(),
            pool: pool.clone().unwrap_or_default(),
            limit: limit.clone().unwrap_or_default(),
            weight: *weight,
            clear_limit: *clear_limit,
            clear_weight: *clear_weight,
        };
        server.ask(async |c| c.job_set(request).await)?;
        Ok(0)
    }
}

impl PoolCmd {
    /// Runs the subcommand.
    pub fn run(&self) -> Result<i32> {
        match self {
            PoolCmd::Set {
                name,
                filter,
                capacity,
                algorithm,
                params,
                estimator,
                tree,
                server,
            } => {
                let request = PoolSetRequest {
                    name: name.clone(),
                    filter: filter.clone(),
                    capacity: capacity.clone(),
                    algorithm: algorithm.clone().unwrap_or_default(),
                    params: params.clone(),
                    estimator: estimator.clone().unwrap_or_default(),
                    tree: tree.clone().unwrap_or_default(),
                };
                server.ask(async |c| c.pool_set(request).await)?;
            }
            PoolCmd::Rm { name, server } => {
                let request = NameRequest { name: name.clone() };
                server.ask(async |c| c.pool_rm(request).await)?;
            }
            PoolCmd::List { server } => {
                let reply = server.ask(async |c| c.pool_list(Empty {}).await)?;
                let units = pool_units(&reply);
                print(server.json, pools_json(&reply), |_| {
                    let mut out = format!(
                        "{:<14} {:>10} {:<15} {:<13} {:>9} {:>9} {:>5}  MATCH\n",
                        "POOL", "CAPACITY", "ALGORITHM", "ESTIMATOR", "ALLOCATED", "USED", "JOBS"
                    );
                    for p in &reply.pools {
                        // An automatic pool: the capacity found, the latency that steers it
                        // (the p99 of sampled calls, or the server's mean reply), its target.
                        let capacity = if p.target_p99_s > 0.0 {
                            let what = if p.latency_from_server { "mean" } else { "p99" };
                            format!(
                                "{} ({what} {:.2}ms, target {}ms)",
                                capacity_text(p),
                                p.latency_p99_s * 1e3,
                                p.target_p99_s * 1e3
                            )
                        } else {
                            capacity_text(p)
                        };
                        let rate = |v| rate_in(&units, &p.name, v);
                        let estimator = if p.estimator.is_empty() {
                            "-"
                        } else {
                            &p.estimator
                        };
                        out += &format!(
                            "{:<14} {:>10} {:<15} {:<13} {:>9} {:>9} {:>5}  {}\n",
                            p.name,
                            capacity,
                            p.algorithm,
                            estimator,
                            rate(p.allocated),
                            rate(p.used),
                            p.jobs,
                            p.filter
                        );
                    }
                    out
                });
            }
        }
        Ok(0)
    }
}

impl RuleAdmin {
    /// Runs the subcommand.
    pub fn run(&self) -> Result<i32> {
        match self {
            RuleAdmin::Start { rule, server } => {
                let request = RuleStartRequest { rule: rule.clone() };
                server.ask(async |c| c.rule_start(request).await)?;
            }
            RuleAdmin::Change {
                name,
                change,
                server,
            } => {
                let request = RuleChangeRequest {
                    name: name.clone(),
                    change: change.join(" "),
                };
                server.ask(async |c| c.rule_change(request).await)?;
            }
            RuleAdmin::Stop { name, server } => {
                let request = NameRequest { name: name.clone() };
                server.ask(async |c| c.rule_stop(request).await)?;
            }
            RuleAdmin::List { server } => {
                let reply = server.ask(async |c| c.rule_list(Empty {}).await)?;
                print(server.json, json!({ "rules": reply.rules }), |_| {
                    reply.rules.iter().map(|r| format!("{r}\n")).collect()
                });
            }
        }
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use clap::Subcommand;

    use super::*;

    /// The algorithms and estimators `sluice pool set --help` lists are the registry's:
    /// its list is written by hand, so a renamed or new algorithm must fail here.
    #[test]
    fn pool_set_help_names_every_algorithm_and_estimator() {
        let cmd = PoolCmd::augment_subcommands(clap::Command::new("pool"));
        let set = cmd.find_subcommand("set").expect("pool set");
        let help = |arg: &str| {
            set.get_arguments()
                .find(|a| a.get_id() == arg)
                .and_then(|a| a.get_help())
                .map(ToString::to_string)
                .unwrap_or_default()
        };
        let algorithm = help("algorithm");
        let listed: Vec<&str> = algorithm
            .split(':')
            .nth(1)
            .and_then(|list| list.split('(').next())
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .collect();
        let known: Vec<&str> = sluice_policy::registry::ALGORITHMS
            .iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(listed, known, "{algorithm}");
        let estimator = help("estimator");
        for e in sluice_policy::Estimator::ALL {
            assert!(estimator.contains(e.name()), "{e}: {estimator}");
        }
    }
}
