//! The scenario runner behind `sluice experiment`: a scenario's set-ups run one after
//! another with the real control plane and real processes under the stage, then measured
//! and compared (docs/experiments.md).
//!
//! - `scenario`: the TOML file, read and checked.
//! - `run`: each set-up's controllers and jobs started at their times, sampled each
//!   second, their figures read back.
//! - `summary` and `iosets`: per-set-up CSV and PNG, the summary and the comparison of runs.
//! - `worker` and `command`: the processes a data job and a command job run (`sluice
//!   experiment data|command`, started by the runner under the stage).
//! - `fs`: the scenario's own file systems (a loop device, a single-node CephFS).

mod command;
mod fs;
mod iosets;
mod run;
mod scenario;
mod summary;
mod worker;

pub use command::CommandOptions;
pub use run::run;
pub use summary::compare;
pub use worker::DataOptions;

/// Why a scenario did not run.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// The scenario file or the set-ups asked for are wrong: nothing ran.
    #[error("{0}")]
    Scenario(String),
    /// A failure while running it.
    #[error(transparent)]
    Run(#[from] anyhow::Error),
}

impl ExperimentError {
    /// Whether the administrator's input is at fault (nothing was run).
    pub fn is_input(&self) -> bool {
        matches!(self, ExperimentError::Scenario(_))
    }
}
