//! The admin commands: `sluice status | jobs | job set | pool … | rule start|change|stop|list`.
//! Each talks to a controller's Admin service; a refused change exits 2 with the
//! controller's one line, and nothing changed.

use std::time::SystemTime;

use anyhow::Result;
use serde_json::{Value, json};
use sluice_control::admin::{jobs_json, pools_json, status_json};
use sluice_control::proto::{
    Empty, JobSetRequest, NameRequest, PoolSetRequest, RuleChangeRequest, RuleStartRequest,
    ShareSetRequest,
};
use sluice_control::render::admin::{jobs_table, pool_units, pools_table, status_text, tree_table};

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
        /// adaptbf-need, set10, set10-silence, set10-ftio, reservations, drf (`sluice alloc
        /// --help`). With --tree: drf, or leave it out.
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
    /// List the pools with their allocated and used rates, then each pool's operation
    /// costs (fixed, or learned from its server with costs_from).
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
        server.change(async |c| c.share_set(request).await)?;
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
            status_text(&s, SystemTime::now())
        });
        Ok(0)
    }
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
        print!("{}", jobs_table(&reply, &units));
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
        server.change(async |c| c.job_set(request).await)?;
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
                server.change(async |c| c.pool_set(request).await)?;
            }
            PoolCmd::Rm { name, server } => {
                let request = NameRequest { name: name.clone() };
                server.change(async |c| c.pool_rm(request).await)?;
            }
            PoolCmd::List { server } => {
                let reply = server.ask(async |c| c.pool_list(Empty {}).await)?;
                print(server.json, pools_json(&reply), |_| pools_table(&reply));
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
                server.change(async |c| c.rule_start(request).await)?;
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
                server.change(async |c| c.rule_change(request).await)?;
            }
            RuleAdmin::Stop { name, server } => {
                let request = NameRequest { name: name.clone() };
                server.change(async |c| c.rule_stop(request).await)?;
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
