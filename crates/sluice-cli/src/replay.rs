//! `sluice replay`: a metadata trace replayed with real calls.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use sluice_workload::replay::{CSV_HEADER, ReplaySpec, replay};
use sluice_workload::trace::Trace;

use crate::Usage;

/// Replay a metadata trace with real calls, and print the rates achieved every second.
///
/// The trace (CSV `second,op,rate`; see docs/workloads.md, or make one with `sluice trace
/// synth`) gives each operation's calls per second. Threads of each operation make its
/// calls (open, close, getattr, setattr, rename, mkdir, unlink, …) on files of their own
/// under --dir, evenly through each second. Held back by a limit, an operation keeps a
/// backlog and catches up as soon as it is let: a throttled replay ends later than its
/// trace. Each line shows the calls made in a second, the calls that fell due in it,
/// the backlog at its end, and each operation's calls.
///
/// Example: sluice run --mount /scratch --rule 'op=getattr rate=20k/s' -- sluice replay t.csv --dir /scratch/r
#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// The trace.
    #[arg(value_name = "TRACE")]
    trace: PathBuf,
    /// Directory to work in (must exist).
    #[arg(long)]
    dir: PathBuf,
    /// Threads of each operation (each operation of the trace has threads of its own, so
    /// that a limit on one holds that one only); more for a slow file system.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Multiply every rate by X.
    #[arg(long, value_name = "X", default_value_t = 1.0)]
    scale: f64,
    /// Play Y trace seconds per second, at the trace's rates (60: each minute of the
    /// trace in one second, as PADLL did).
    #[arg(long, value_name = "Y", default_value_t = 1.0)]
    speedup: f64,
    /// Also write every second's figures as CSV: second,op,due,done,backlog.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
}

impl ReplayArgs {
    /// Runs the replay.
    pub fn run(&self) -> Result<i32> {
        if self.threads == 0 {
            return Err(Usage("--threads must be at least 1".into()).into());
        }
        for (name, x) in [("--scale", self.scale), ("--speedup", self.speedup)] {
            if !(x.is_finite() && x > 0.0) {
                return Err(Usage(format!("{name} {x}: must be a number above 0")).into());
            }
        }
        let trace = Trace::read(&self.trace).map_err(|e| Usage(e.to_string()))?;
        let spec = ReplaySpec {
            dir: self.dir.clone(),
            threads: self.threads,
            scale: self.scale,
            speedup: self.speedup,
        };
        let ops = trace.ops.clone();
        let writing = |path: &std::path::Path| format!("cannot write {}", path.display());
        let mut csv = match &self.csv {
            Some(path) => {
                let mut f = std::fs::File::create(path).with_context(|| writing(path))?;
                f.write_all(CSV_HEADER.as_bytes())
                    .with_context(|| writing(path))?;
                Some((path, f))
            }
            None => None,
        };
        let mut failed = None;
        let report = replay(&trace, &spec, |s| {
            println!("{}", s.line(&ops));
            // A line at a time, so that a pipe sees each second as it ends, and each
            // second's rows in one write, so that a runner watching the file live does.
            let _ = std::io::stdout().flush();
            if let Some((_, f)) = &mut csv
                && failed.is_none()
            {
                failed = f.write_all(s.csv_rows(&ops).as_bytes()).err();
            }
        })?;
        println!("{report}");
        if let (Some((path, _)), Some(e)) = (csv, failed) {
            return Err(e).with_context(|| writing(path));
        }
        Ok(0)
    }
}
