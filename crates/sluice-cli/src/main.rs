//! `sluice`: one binary for the whole of sluice.
//!
//! Every subcommand lives in a module of its own; this file only parses the command line
//! and maps errors to exit codes, in one place: 0 success, 1 a failure while working,
//! 2 bad input (nothing was changed or run), and for `sluice run` the command's own status.

mod admin_cmd;
mod attach_cmd;
mod bench;
mod client;
mod config_cmd;
mod daemons;
mod demo;
mod experiment;
mod generate;
mod load;
mod replay;
mod report_cmd;
mod rule_cmd;
mod run;
mod supervise_cmd;
mod top;
mod trace;

use clap::{Parser, Subcommand};
use sluice_core::error::{Chain, Fault, causes};

/// I/O quality of service for HPC clusters: hold the file-system requests of jobs to the
/// rates an administrator sets, per job, user, operation and class, from the compute
/// nodes, with no change to applications or file systems.
#[derive(Parser, Debug)]
#[command(name = "sluice", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    // The argument structs' own doc comments are the long help.
    Run(run::RunArgs),
    Attach(attach_cmd::AttachArgs),
    Local(daemons::LocalArgs),
    Global(daemons::GlobalArgs),
    /// The controller's role, its locals, jobs, pools and control cycle.
    Status(admin_cmd::StatusArgs),
    /// Running jobs: nodes, and per pool their allocation, rate and demand (in the pool's
    /// units; a pool that weighs its operations adds a CALLS column, calls per second).
    ///
    /// Under the table, a line per executable of a job that runs without the stage on a
    /// node (why: static, go, setuid, cleared-env; held by a supervisor, or unheld) or that
    /// uses io_uring, as the node's local controller last saw them; --json lists them in
    /// each job's "outside" (node, pid, exe, why, held, processes).
    Jobs(admin_cmd::JobsArgs),
    Report(report_cmd::ReportArgs),
    /// Set a job's reservation and weight.
    #[command(subcommand)]
    Job(admin_cmd::JobCmd),
    /// Pools: capacities shared by all jobs, divided by an algorithm.
    #[command(subcommand)]
    Pool(admin_cmd::PoolCmd),
    /// Shares of the accounts, users, QOS and partitions of pools' trees.
    #[command(subcommand)]
    Share(admin_cmd::ShareCmd),
    /// Controller configurations: check a global's or a local's file offline.
    #[command(subcommand)]
    Config(config_cmd::ConfigCmd),
    /// Rules: check them; start, change, stop and list the administrator's rules.
    #[command(subcommand)]
    Rule(rule_cmd::RuleCmd),
    Alloc(sluice_workload::alloc::AllocArgs),
    Load(load::LoadArgs),
    /// Run scenarios (jobs, a pool, set-ups to compare) and compare their results.
    #[command(subcommand)]
    Experiment(experiment::ExperimentCmd),
    Replay(replay::ReplayArgs),
    /// Metadata traces for `sluice replay`: make synthetic ones, check and summarise them.
    #[command(subcommand)]
    Trace(trace::TraceCmd),
    /// Measure sluice's own costs.
    #[command(subcommand)]
    Bench(bench::BenchCmd),
    Demo(demo::DemoArgs),
    Top(top::TopArgs),
    /// Man pages and shell completions, for packagers.
    #[command(subcommand, hide = true)]
    Generate(generate::GenerateCmd),
    #[command(hide = true)]
    Supervise(supervise_cmd::SuperviseArgs),
}

/// Bad input found by a subcommand itself: reported with exit code 2.
pub use sluice_core::error::Usage;

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => a.run(),
        Command::Supervise(a) => a.run(),
        Command::Attach(a) => a.run(),
        Command::Experiment(c) => c.run(),
        Command::Local(a) => a.run(),
        Command::Global(a) => a.run(),
        Command::Status(a) => a.run(),
        Command::Jobs(a) => a.run(),
        Command::Report(a) => a.run(),
        Command::Job(c) => c.run(),
        Command::Pool(c) => c.run(),
        Command::Share(c) => c.run(),
        Command::Rule(c) => c.run(),
        Command::Config(c) => c.run(),
        Command::Alloc(a) => a.run().map_err(Into::into),
        Command::Load(a) => a.run(),
        Command::Replay(a) => a.run(),
        Command::Trace(c) => c.run(),
        Command::Bench(c) => c.run(),
        Command::Demo(a) => a.run(),
        Command::Top(a) => a.run(),
        Command::Generate(c) => c.run(),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => failed(&*e),
    };
    std::process::exit(code);
}

/// Says why `e` failed on one line, and returns its exit code: 2 when it was the
/// administrator's input (nothing was changed or run), 1 when the system failed. Each
/// library error says whose fault it is (`sluice_core::error::Blame`); any error of the
/// chain that is the administrator's makes it theirs, whatever wraps it.
pub fn failed(e: &(dyn std::error::Error + 'static)) -> i32 {
    eprintln!("sluice: {}", Chain(e));
    exit_code(e)
}

/// The exit code of a failure (see [`failed`]).
pub fn exit_code(e: &(dyn std::error::Error + 'static)) -> i32 {
    let input = causes(e).any(|c| sluice_workload::error::fault(c) == Some(Fault::Input));
    if input { 2 } else { 1 }
}
