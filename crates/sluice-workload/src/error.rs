//! Whose fault each error of the laboratory is ([`sluice_core::error`] says why this
//! matters), and [`fault`]: the list the binary consults, for this crate and every crate
//! below it.

use std::error::Error;

use sluice_core::error::{Blame, Fault};
use sluice_core::{blame_all, blame_of};

use crate::experiment::ExperimentError;
use crate::harness::HarnessError;
use crate::load::LoadError;
use crate::plot::PlotError;
use crate::trace::TraceError;

/// Whose fault `cause` is, for the error types of sluice's libraries; `None` for any
/// other type. The binary asks this once per cause of an error's chain.
pub fn fault(cause: &(dyn Error + 'static)) -> Option<Fault> {
    blame_of!(cause; LoadError, TraceError, ExperimentError, HarnessError, PlotError)
        .or_else(|| sluice_control::error::fault(cause))
}

// An operation that cannot be generated, a directory or a trace the administrator named.
blame_all!(Input: LoadError, TraceError);
// Processes of the harness, a chart that cannot be drawn.
blame_all!(System: HarnessError, PlotError);

impl Blame for ExperimentError {
    fn fault(&self) -> Fault {
        match self.is_input() {
            true => Fault::Input,
            false => Fault::System,
        }
    }
}
