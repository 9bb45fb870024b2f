//! `sluice experiment`: the scenario runner of sluice-workload ([`sluice_workload::experiment`]).

use std::path::PathBuf;

use anyhow::Result;
use sluice_workload::experiment::{self, CommandOptions, DataOptions, RunOptions};

/// Run scenarios and compare their set-ups.
#[derive(clap::Subcommand, Debug)]
pub enum ExperimentCmd {
    /// Run every set-up of a scenario (TOML; docs/experiments.md): for each, a local
    /// controller with the pool and the set-up's algorithm (none for `none`), and each
    /// job's processes (trace replayers, data writers, real programs) arriving at their
    /// times under `sluice run`. Writes
    /// OUT/SETUP.csv (each job's calls and allocation per second), OUT/SETUP.png (the
    /// timeline against the pool's capacity), OUT/summary.json and OUT/summary.md
    /// (completion time per job, makespan, seconds over capacity, Jain's index, total;
    /// each job's slowdown when every job's work is a fixed amount), and OUT/timelines.png
    /// (every set-up's timeline, one under another). With --live, shows each second every
    /// job's rate and allocation as it runs, and serves the dashboard (`sluice demo` is a
    /// scenario run so).
    Run(RunArgs),
    /// Put the summaries of several runs side by side (markdown on stdout); for several
    /// runs of one scenario with IO-SETS' measures or the jobs' slowdowns, also each
    /// measure's mean, range and number of runs per set-up, and its change against the
    /// first set-up.
    Compare(CompareArgs),
    /// One process of a data job (started by `run`, under the stage): writes or reads
    /// as its workload says, each second's bytes and each stretch of I/O to CSV.
    #[command(hide = true)]
    Data(DataOptions),
    /// A command job's program (started by `run`, under the stage): runs it, and writes
    /// the calls the stage admitted for the job each second and the program's run.
    #[command(hide = true)]
    Command(CommandOptions),
}

/// `sluice experiment run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The scenario file.
    scenario: PathBuf,
    /// Where to write the results (default: experiments/NAME, NAME the scenario's).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run only these set-ups (repeatable; default: all).
    #[arg(long = "setup", value_name = "NAME")]
    setups: Vec<String>,
    /// Show the run as it goes: the scenario, then each second every job's rate (and
    /// allocation, under control) against the pool's capacity, the dashboard's URL, and
    /// at the end each job's mean rate with all jobs running, set-ups side by side.
    #[arg(long)]
    live: bool,
    /// Serve the controllers' dashboard here during the controlled set-ups (with --live,
    /// default: a free port on 127.0.0.1).
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
}

/// `sluice experiment compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Directories written by `sluice experiment run` (each holds summary.json).
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
}

impl ExperimentCmd {
    /// Runs the subcommand.
    pub fn run(self) -> Result<i32> {
        match self {
            ExperimentCmd::Run(a) => {
                let options = RunOptions {
                    out: a.out.as_deref(),
                    only: &a.setups,
                    live: a.live,
                    http: a.http,
                };
                Ok(experiment::run(&a.scenario, &options)?)
            }
            ExperimentCmd::Compare(a) => Ok(experiment::compare(&a.dirs)?),
            ExperimentCmd::Data(a) => Ok(a.run()?),
            ExperimentCmd::Command(a) => Ok(a.run()?),
        }
    }
}
