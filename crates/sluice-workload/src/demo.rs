//! `sluice demo`: a scenario bundled into the binary ([`SCENARIO`]), run by the
//! scenario runner ([`crate::experiment`]) with its live view: four jobs arrive one after
//! another into one pool divided by PSFA, then the same jobs run without control.

use std::net::SocketAddr;
use std::path::Path;

use crate::experiment::{ExperimentError, RunOptions, run_text};

/// The demo's scenario (crates/sluice-workload/src/demo.toml).
pub const SCENARIO: &str = include_str!("demo.toml");

/// Runs the demo, its results in `out`, its dashboard on `http` (a free port of 127.0.0.1
/// when `None`); returns the exit status, 130 when interrupted.
pub fn run(out: &Path, http: Option<SocketAddr>) -> Result<i32, ExperimentError> {
    run_text(
        SCENARIO,
        "the demo's scenario",
        &RunOptions {
            out: Some(out),
            only: &[],
            live: true,
            http,
        },
    )
}
