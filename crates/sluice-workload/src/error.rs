//! Whose fault each error of the laboratory is ([`sluice_core::error`] says why this
//! matters), and [`fault`]: the list the binary consults, for this crate and every crate
//! below it. Also [`IoFailure`], a file or a process the laboratory could not make, read
//! or write, named by what was being done, and [`Doing`], which gives an
//! [`std::io::Result`] that name.

use std::error::Error;

use sluice_core::error::{Blame, Fault};
use sluice_core::{blame_all, blame_of};

use crate::alloc::AllocError;
use crate::bench_control::BenchError;
use crate::data::DataError;
use crate::experiment::ExperimentError;
use crate::harness::HarnessError;
use crate::load::LoadError;
use crate::plot::PlotError;
use crate::trace::TraceError;

/// Whose fault `cause` is, for the error types of sluice's libraries; `None` for any
/// other type. The binary asks this once per cause of an error's chain.
pub fn fault(cause: &(dyn Error + 'static)) -> Option<Fault> {
    blame_of!(cause;
        LoadError,
        TraceError,
        ExperimentError,
        HarnessError,
        PlotError,
        IoFailure,
        DataError,
        AllocError,
        BenchError,
    )
    .or_else(|| sluice_control::error::fault(cause))
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

// An operation that cannot be generated, a directory or a trace the administrator named.
blame_all!(Input: LoadError, TraceError);
// Processes of the harness, a chart that cannot be drawn, files of a run, a benchmark's
// processes.
blame_all!(System: HarnessError, PlotError, IoFailure, BenchError);

impl Blame for ExperimentError {
    fn fault(&self) -> Fault {
        match self.is_input() {
            true => Fault::Input,
            false => Fault::System,
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
