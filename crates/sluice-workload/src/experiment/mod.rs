//! The scenario runner behind `sluice experiment` and `sluice demo`: a scenario's set-ups
//! run one after another with the real control plane and real processes under the stage,
//! then measured and compared (docs/experiments.md).
//!
//! - `scenario`: the TOML file, read and checked.
//! - `run`: each set-up's controllers and jobs started at their times, sampled each
//!   second, their figures read back.
//! - `live`: what an administrator watching sees while it runs (`--live`, the demo):
//!   each second every job's rate and allocation, the dashboard's address.
//! - `summary` and `iosets`: per-set-up CSV and PNG, the summary and the comparison of runs.
//! - `worker` and `command`: the processes a data job and a command job run (`sluice
//!   experiment data|command`, started by the runner under the stage).
//! - `fs`: the scenario's own file systems (a loop device, a single-node CephFS).

mod command;
mod fs;
mod iosets;
mod live;
mod run;
mod scenario;
mod summary;
mod worker;

pub use command::CommandOptions;
pub use run::{RunOptions, run, run_text};
pub use summary::compare;
pub use worker::DataOptions;

use crate::data::DataError;
use crate::error::IoFailure;
use crate::harness::HarnessError;
use crate::plot::PlotError;

/// Why a scenario did not run, or not to its end.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// The scenario file or the set-ups asked for are wrong: nothing ran.
    #[error("{0}")]
    Scenario(String),
    /// A file or a process of the run could not be made, read or written.
    #[error(transparent)]
    Io(#[from] IoFailure),
    /// A controller of a set-up did not start.
    #[error(transparent)]
    Harness(#[from] HarnessError),
    /// A chart could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// A data process's work failed (`sluice experiment data`).
    #[error(transparent)]
    Data(#[from] DataError),
    /// A summary could not be written or read as JSON.
    #[error("{what}: {source}")]
    Json {
        /// What was being written or read.
        what: String,
        /// Why.
        source: serde_json::Error,
    },
    /// A job's process, a set-up's command or the scenario's file system failed.
    #[error("{0}")]
    Failed(String),
    /// Stopped by SIGINT or SIGTERM (the jobs stopped, the temporary files removed).
    #[error("interrupted")]
    Interrupted,
}

impl crate::error::Failure for ExperimentError {
    fn failed(message: String) -> Self {
        ExperimentError::Failed(message)
    }
}

/// A result of the runner.
type Result<T, E = ExperimentError> = std::result::Result<T, E>;
