//! `sluice load`: a closed-loop file-system load.

use std::path::PathBuf;

use anyhow::Result;
use sluice_workload::load::{LoadSpec, loadable, run};

use crate::Usage;

/// Drive a closed-loop file-system load and print the achieved rate every second.
///
/// Every thread makes the operations in turn, as fast as it is let, in files of its own
/// under --dir. Run it under `sluice run` to watch a rule hold it.
///
/// Example: sluice run --rule 'op=getattr rate=2000/s' -- sluice load --dir /scratch/t --ops getattr --threads 2 --duration 5
#[derive(clap::Args, Debug)]
pub struct LoadArgs {
    /// Directory to work in (must exist).
    #[arg(long)]
    dir: PathBuf,
    /// Operations, comma-separated: getattr, open, access, setattr, rename, statfs, mkdir,
    /// readdir, getxattr, read, write.
    #[arg(long, value_delimiter = ',', default_value = "getattr")]
    ops: Vec<String>,
    /// Threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seconds to run.
    #[arg(long, conflicts_with = "count")]
    duration: Option<f64>,
    /// Operations per thread, then stop.
    #[arg(long)]
    count: Option<u64>,
    /// Bytes per read or write.
    #[arg(long, default_value_t = 4096)]
    block: usize,
    /// Print `second,operations` lines only (for scripts and `sluice demo`).
    #[arg(long)]
    csv: bool,
}

impl LoadArgs {
    /// Runs the load.
    pub fn run(&self) -> Result<i32> {
        let ops = self
            .ops
            .iter()
            .map(|o| loadable(o))
            .collect::<Result<Vec<_>, _>>()?;
        if self.threads == 0 {
            return Err(Usage("--threads must be at least 1".into()).into());
        }
        let duration = match (self.duration, self.count) {
            (Some(d), _) if !(d.is_finite() && d > 0.0) => {
                return Err(Usage(format!(
                    "--duration {d}: must be a positive number of seconds"
                ))
                .into());
            }
            (Some(d), _) => Some(std::time::Duration::from_secs_f64(d)),
            (None, None) => Some(std::time::Duration::from_secs(5)),
            (None, Some(_)) => None,
        };
        let spec = LoadSpec {
            dir: self.dir.clone(),
            ops,
            threads: self.threads,
            duration,
            count: self.count,
            block: self.block,
        };
        let csv = self.csv;
        let report = run(&spec, |sec, n| {
            if csv {
                println!("{sec},{n}");
            } else {
                println!("{sec:>4}s {n:>10} ops/s");
            }
        })?;
        if !csv {
            println!(
                "total {} ops in {:.2} s: {:.0} ops/s",
                report.total,
                report.elapsed_s,
                report.rate()
            );
        }
        Ok(0)
    }
}
