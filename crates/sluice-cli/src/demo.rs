//! `sluice demo`: [`sluice_workload::demo`].

use std::path::PathBuf;

use anyhow::Result;

/// Show the control plane dividing a pool among four jobs, against the same jobs run
/// without control.
///
/// Runs a scenario bundled into the binary (crates/sluice-workload/src/demo.toml in the
/// sources; `sluice experiment run --live FILE` runs a copy) with the scenario runner:
/// one pool of getattr calls (20k/s) and four jobs that arrive 5 s apart, each a stat
/// loop under `sluice run` keeping a pace of its own (what it would make if left
/// alone). First a local controller divides the pool by PSFA every 500 ms, estimating
/// each job's demand from what it is admitted and how long its calls wait on the pool;
/// then the same jobs, arriving at the same times, run without control. Prints each
/// job's rate (and allocation) every second, and serves the live dashboard during the
/// controlled run (it prints the URL); then each job's mean rate with all four running,
/// both runs side by side. About a minute in all. Writes to OUT: timelines.png (both
/// runs, one panel each), PSFA.csv and Uncontrolled.csv (each job's calls and
/// allocation per second), a PNG per run, summary.md and summary.json. Nothing to set
/// up; everything it starts is stopped and removed on exit or Ctrl-C.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Where to write the results.
    #[arg(long, value_name = "OUT", default_value = "experiments/demo")]
    out: PathBuf,
    /// Where the live dashboard listens during the controlled run (default: a free port
    /// on 127.0.0.1; e.g. 0.0.0.0:7402 to watch from another machine).
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
}

impl DemoArgs {
    /// Runs the demo; 130 when interrupted.
    pub fn run(self) -> Result<i32> {
        Ok(sluice_workload::demo::run(&self.out, self.http)?)
    }
}
