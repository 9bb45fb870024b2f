//! `sluice demo`: [`sluice_workload::demo`].

use std::path::PathBuf;

use anyhow::Result;
use sluice_workload::demo::DemoOptions;

use crate::Usage;

/// Show the control plane dividing a pool among four jobs, against the same jobs run
/// without control.
///
/// Starts a local controller in single-node mode inside this process, with one pool of
/// getattr calls (20k/s, divided by PSFA every 500 ms), and four jobs that arrive one
/// after another, each a stat loop under `sluice run` that would make its own number of
/// calls a second if left alone; the controller estimates each job's demand from what it
/// is admitted and how long its threads wait on the pool. Prints each job's rate and
/// allocation every second, and serves the live dashboard (it prints the URL). Then
/// runs the same four jobs, arriving at the same times, without the controller, and
/// writes both runs to OUT/demo.csv and OUT/demo.png. Nothing to set up; everything it
/// starts is stopped and removed on exit or Ctrl-C.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Seconds each of the two runs lasts; the jobs arrive a fifth of that apart.
    #[arg(long, default_value_t = 25)]
    seconds: u64,
    /// Where to make the demo's temporary directory (socket, state, load files; default:
    /// the system's temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Where to write demo.csv and demo.png.
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
        if self.seconds < 10 {
            return Err(Usage("--seconds must be at least 10".into()).into());
        }
        DemoOptions {
            seconds: self.seconds,
            dir: self.dir,
            out: self.out,
            http: self.http,
        }
        .run()
    }
}
