//! `sluice experiment`: the scenario runner of sluice-workload ([`sluice_workload::experiment`]).

use std::path::PathBuf;

use anyhow::Result;
use sluice_workload::experiment::{self, CommandOptions, DataOptions};

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
    Data(DataArgs),
    /// A command job's program (started by `run`, under the stage): runs it, and writes
    /// the calls the stage admitted for the job each second and the program's run.
    #[command(hide = true)]
    Command(CommandArgs),
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

/// `sluice experiment data`: the runner's arguments, as [`DataOptions`] documents them.
#[derive(clap::Args, Debug)]
pub struct DataArgs {
    /// The part of the workload (JSON).
    #[arg(long)]
    spec: String,
    /// Its files' directory.
    #[arg(long)]
    dir: PathBuf,
    /// Its per-second CSV.
    #[arg(long)]
    csv: PathBuf,
    /// Its phases' CSV.
    #[arg(long)]
    phases: PathBuf,
    /// O_DIRECT.
    #[arg(long)]
    direct: bool,
    /// Where offsets wrap, bytes.
    #[arg(long, default_value_t = 256 << 20)]
    file_size: u64,
    /// When to stop, s.
    #[arg(long, value_name = "SECONDS")]
    until: Option<f64>,
}

/// `sluice experiment command`: the runner's arguments, as [`CommandOptions`] documents
/// them.
#[derive(clap::Args, Debug)]
pub struct CommandArgs {
    /// Its per-second CSV.
    #[arg(long)]
    csv: PathBuf,
    /// Its run's CSV.
    #[arg(long)]
    times: PathBuf,
    /// Its working directory.
    #[arg(long)]
    dir: PathBuf,
    /// The set-up's start (seconds since the epoch).
    #[arg(long, value_name = "UNIX_S")]
    clock: Option<f64>,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    argv: Vec<String>,
}

impl ExperimentCmd {
    /// Runs the subcommand.
    pub fn run(self) -> Result<i32> {
        match self {
            ExperimentCmd::Run(a) => Ok(experiment::run(&a.scenario, a.out.as_deref(), &a.setups)?),
            ExperimentCmd::Compare(a) => experiment::compare(&a.dirs),
            ExperimentCmd::Data(a) => DataOptions {
                spec: a.spec,
                dir: a.dir,
                csv: a.csv,
                phases: a.phases,
                direct: a.direct,
                file_size: a.file_size,
                until: a.until,
            }
            .run(),
            ExperimentCmd::Command(a) => CommandOptions {
                csv: a.csv,
                times: a.times,
                dir: a.dir,
                clock: a.clock,
                argv: a.argv,
            }
            .run(),
        }
    }
}
