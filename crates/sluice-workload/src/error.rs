//! Whose fault each error of the laboratory is ([`sluice_core::error`] says why this
//! matters), and [`fault`]: the list the binary consults, for this crate and every crate
//! below it. Also [`IoFailure`], a file or a process the laboratory could not make, read
//! or write, named by what was being done, and [`Doing`], which gives an
//! [`std::io::Result`] that name.

use sluice_core::error::{Blame, Fault};

use crate::alloc::AllocError;
use crate::bench_control::BenchError;
use crate::data::DataError;
use crate::experiment::ExperimentError;
use crate::harness::HarnessError;
use crate::load::LoadError;
use crate::plot::PlotError;
use crate::trace::TraceError;

sluice_core::faults! {
    /// Whose fault `cause` is, for the error types of sluice's libraries; `None` for any
    /// other type. The binary asks this once per cause of an error's chain.
    pub fn fault;
    // An operation that cannot be generated, a directory or a trace the administrator
    // named.
    Input: LoadError, TraceError;
    // Processes of the harness, a chart that cannot be drawn, files of a run, a
    // benchmark's processes.
    System: HarnessError, PlotError, IoFailure, BenchError;
    // Whose fault these are depends on the error: each says it (below, or beside the
    // type).
    own: ExperimentError, DataError, AllocError;
    below: sluice_control::error::fault;
}

/// A file, a directory or a process the laboratory could not make, read or write:
/// `cannot write experiments/demo/summary.md: Permission denied`.
#[derive(Debug, thiserror::Error)]
#[error("cannot {what}: {source}")]
pub struct IoFailure {
    /// What was being done (`write experiments/demo/summary.md`).
    pub what: String,
    /// The system's reason.
    #[source]
    pub source: std::io::Error,
}

/// Names what an [`std::io::Result`] was doing, as an [`IoFailure`].
pub trait Doing<T> {
    /// `Err(e)` as an [`IoFailure`] of `what()`.
    fn doing(self, what: impl FnOnce() -> String) -> Result<T, IoFailure>;
}

impl<T> Doing<T> for std::io::Result<T> {
    fn doing(self, what: impl FnOnce() -> String) -> Result<T, IoFailure> {
        self.map_err(|source| IoFailure {
            what: what(),
            source,
        })
    }
}

/// An error with a variant for a failure told in the laboratory's own words (a child that
/// said what it should not, a file that moved nothing): what `fail!` returns.
pub(crate) trait Failure {
    /// The failure `message`.
    fn failed(message: String) -> Self;
}

/// Returns a failure of the function's own error type ([`Failure`]), in its own words:
/// `fail!("the simulator has no standard output")`.
macro_rules! fail {
    ($($arg:tt)*) => {
        return Err($crate::error::Failure::failed(format!($($arg)*)))
    };
}
pub(crate) use fail;

impl Blame for ExperimentError {
    /// A scenario written wrongly is the administrator's (nothing was run), and so is a
    /// data job asked for wrongly; the rest happened while running.
    fn fault(&self) -> Fault {
        match self {
            ExperimentError::Scenario(_) => Fault::Input,
            ExperimentError::Data(e) => e.fault(),
            _ => Fault::System,
        }
    }
}

impl Blame for DataError {
    fn fault(&self) -> Fault {
        match self {
            DataError::Spec(_) | DataError::Load(_) => Fault::Input,
            _ => Fault::System,
        }
    }
}
