//! The admin commands: `sluice status | jobs | job set | pool … | rule start|change|stop|list`.
//! Each talks to a controller's Admin service; a refused change exits 2 with the
//! controller's one line, and nothing changed.

use anyhow::Result;
use serde_json::{Value, json};
use sluice_control::admin::{jobs_json, pools_json, status_json};
use sluice_control::cluster::SegmentNote;
use sluice_control::proto::{
    Empty, JobSetRequest, NameRequest, PoolSetRequest, RuleChangeRequest, RuleStartRequest,
};

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
        /// The algorithm dividing it: static, uniform, priority, psharing, psfa, adaptbf,
        /// adaptbf-need, set10, reservations, drf (`sluice alloc --help`).
        #[arg(long, value_name = "ALGO")]
        algorithm: String,
        /// An algorithm parameter, K=V (repeatable).
        #[arg(long = "param", value_name = "K=V")]
        params: Vec<String>,
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

/// `sluice status`: the controller's role, its jobs, pools and cycle.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    server: ServerArgs,
}

/// `sluice jobs`: every job with its nodes and, per pool, allocation, rate and demand.
#[derive(clap::Args, Debug)]
pub struct JobsArgs {
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
            format!(
                "{} controller{}: {} local(s), {} job(s), {} pool(s), {} rule(s)\n\
                 interval {}s, cycle {}, cycle time median {:.0} µs, last {:.0} µs\n",
                s.role,
                if s.single_node { " (single node)" } else { "" },
                s.locals,
                s.jobs,
                s.pools,
                s.rules,
                s.interval_s,
                s.cycle,
                s.cycle_us_median,
                s.cycle_us_last
            ) + &s
                .warnings
                .iter()
                .map(|w| format!("warning: {w}\n"))
                .collect::<String>()
        });
        Ok(0)
    }
}

impl JobsArgs {
    /// Prints the jobs.
    pub fn run(&self) -> Result<i32> {
        let reply = self.server.ask(async |c| c.jobs(Empty {}).await)?;
        print(self.server.json, jobs_json(&reply), |_| {
            let mut out = format!(
                "{:<16} {:<10} {:<12} {:>12} {:>12} {:>12}  NODES\n",
                "JOB", "USER", "POOL", "ALLOCATION", "RATE", "DEMAND"
            );
            for j in &reply.jobs {
                let nodes = j.nodes.join(",");
                if j.pools.is_empty() {
                    out += &format!(
                        "{:<16} {:<10} {:<12} {:>12} {:>12} {:>12}  {nodes}\n",
                        j.job, j.user, "-", "-", "-", "-"
                    );
                }
                for (pool, s) in &j.pools {
                    out += &format!(
                        "{:<16} {:<10} {:<12} {:>12.0} {:>12.0} {:>12.0}  {nodes}\n",
                        j.job, j.user, pool, s.allocation, s.rate, s.demand
                    );
                }
            }
            for j in &reply.jobs {
                for n in &j.segments {
                    out += &format!("job {} on {}: {}\n", j.job, n.node, SegmentNote::from(n));
                }
            }
            out
        });
        Ok(0)
    }
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
                server,
            } => {
                let request = PoolSetRequest {
                    name: name.clone(),
                    filter: filter.clone(),
                    capacity: capacity.clone(),
                    algorithm: algorithm.clone(),
                    params: params.clone(),
                };
                server.ask(async |c| c.pool_set(request).await)?;
            }
            PoolCmd::Rm { name, server } => {
                let request = NameRequest { name: name.clone() };
                server.ask(async |c| c.pool_rm(request).await)?;
            }
            PoolCmd::List { server } => {
                let reply = server.ask(async |c| c.pool_list(Empty {}).await)?;
                print(server.json, pools_json(&reply), |_| {
                    let mut out = format!(
                        "{:<14} {:>10} {:<10} {:>12} {:>12} {:>5}  MATCH\n",
                        "POOL", "CAPACITY", "ALGORITHM", "ALLOCATED", "USED", "JOBS"
                    );
                    for p in &reply.pools {
                        // An automatic pool: the capacity found, its last p99 and target.
                        let capacity = if p.target_p99_s > 0.0 {
                            format!(
                                "{} (p99 {:.2}ms, target {}ms)",
                                p.capacity,
                                p.latency_p99_s * 1e3,
                                p.target_p99_s * 1e3
                            )
                        } else {
                            p.capacity.clone()
                        };
                        out += &format!(
                            "{:<14} {:>10} {:<10} {:>12.0} {:>12.0} {:>5}  {}\n",
                            p.name, capacity, p.algorithm, p.allocated, p.used, p.jobs, p.filter
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
