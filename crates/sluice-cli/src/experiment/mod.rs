//! `sluice experiment`: a scenario's set-ups run one after another with the real control
//! plane and real processes under the stage, then measured and compared.

mod command;
mod fs;
mod iosets;
mod run;
mod scenario;
mod summary;
mod worker;

use std::path::PathBuf;

use anyhow::Result;

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
    /// each job's slowdown when every job's work is a fixed amount).
    Run(RunArgs),
    /// Put the summaries of several runs side by side (markdown on stdout); for several
    /// runs of one scenario with IO-SETS' measures or the jobs' slowdowns, also each
    /// measure's mean, range and number of runs per set-up, and its change against the
    /// first set-up.
    Compare(CompareArgs),
    /// One process of a data job (started by `run`, under the stage): writes or reads
    /// as its workload says, each second's bytes and each stretch of I/O to CSV.
    #[command(hide = true)]
    Data(worker::DataArgs),
    /// A command job's program (started by `run`, under the stage): runs it, and writes
    /// the calls the stage admitted for the job each second and the program's run.
    #[command(hide = true)]
    Command(command::CommandArgs),
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
    pub fn run(&self) -> Result<i32> {
        match self {
            ExperimentCmd::Run(a) => run::run(&a.scenario, a.out.as_deref(), &a.setups),
            ExperimentCmd::Compare(a) => summary::compare(&a.dirs),
            ExperimentCmd::Data(a) => a.run(),
            ExperimentCmd::Command(a) => a.run(),
        }
    }
}
