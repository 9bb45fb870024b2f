//! `sluice experiment data`: one process of a data job, as the runner starts it.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::data::{Access, DataSpec, Pattern, run};
use crate::error::Doing as _;

use super::scenario::Workload;
use super::{ExperimentError, Result};

/// A `--spec` the runner should not have given.
fn bad_spec(why: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Scenario(format!("--spec: {why}"))
}

/// `sluice experiment data`: its arguments, as the runner gives them.
#[derive(clap::Args, Debug)]
pub struct DataOptions {
    /// The part of the job's workload, as JSON (the scenario's table).
    #[arg(long)]
    pub spec: String,
    /// The directory of its files.
    #[arg(long)]
    pub dir: PathBuf,
    /// Each second's bytes: `unix_s,bytes` (the second's start, in seconds since the
    /// epoch, so that the runner places it on its own clock).
    #[arg(long)]
    pub csv: PathBuf,
    /// Each stretch of I/O and of computing: `kind,start,end,bytes` (kind `io` or
    /// `compute`, times in seconds since the epoch).
    #[arg(long)]
    pub phases: PathBuf,
    /// Use O_DIRECT (else fdatasync at the end of each stretch of I/O).
    #[arg(long)]
    pub direct: bool,
    /// Offsets in a file wrap at this many bytes.
    #[arg(long, default_value_t = 256 << 20)]
    pub file_size: u64,
    /// Stop this many seconds after the start, mid-phase if need be.
    #[arg(long, value_name = "SECONDS")]
    pub until: Option<f64>,
}

impl DataOptions {
    /// Runs the part; writes the CSVs as it goes (seconds) and at the end (phases).
    pub fn run(&self) -> Result<i32> {
        let workload: Workload = serde_json::from_str(&self.spec).map_err(bad_spec)?;
        let pattern = match &workload {
            Workload::Trace => return Err(bad_spec("a trace part is replayed by `sluice replay`")),
            Workload::Command { .. } => return Err(bad_spec("a command part is run by `command`")),
            Workload::Continuous {
                volume, seconds, ..
            } => Pattern::Continuous {
                volume: *volume,
                seconds: *seconds,
            },
            Workload::Bursty {
                on, off, seconds, ..
            } => Pattern::Bursty {
                on: Duration::from_secs_f64(*on),
                off: Duration::from_secs_f64(*off),
                seconds: *seconds,
            },
            Workload::Periodic {
                compute,
                volume,
                iterations,
                ..
            } => Pattern::Periodic {
                compute: Duration::from_secs_f64(*compute),
                volume: *volume,
                iterations: *iterations,
            },
        };
        let Some(io) = workload.data() else {
            return Err(bad_spec("not a data part"));
        };
        let spec = DataSpec {
            dir: self.dir.clone(),
            access: if io.access == "read" {
                Access::Read
            } else {
                Access::Write
            },
            block: usize::try_from(io.block).map_err(bad_spec)?,
            threads: io.threads as usize,
            direct: self.direct,
            file_size: self.file_size,
            pattern,
            until: self.until.map(Duration::from_secs_f64),
        };
        let writing = || format!("write {}", self.csv.display());
        let mut csv = std::fs::File::create(&self.csv).doing(writing)?;
        writeln!(csv, "unix_s,bytes").doing(writing)?;
        let mut started = None;
        let report = run(&spec, |second, bytes| {
            // The clock's start is known only once the run has begun: each second's
            // start is filled in from the first report on.
            let start = *started.get_or_insert_with(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64())
                    - 1.0
            });
            // One write a row, so that the runner, reading as it goes, sees whole rows.
            let row = format!("{:.3},{bytes}\n", start + (second - 1) as f64);
            let _ = csv.write_all(row.as_bytes());
        })?;
        // The exact start, from the report: rewrite the seconds with it.
        let mut text = String::from("unix_s,bytes\n");
        for (k, bytes) in report.per_second.iter().enumerate() {
            let _ = writeln!(text, "{:.3},{bytes}", report.started + k as f64);
        }
        std::fs::write(&self.csv, text).doing(writing)?;
        let mut text = String::from("kind,start,end,bytes\n");
        let mut last = report.started;
        for p in &report.phases {
            if matches!(workload, Workload::Periodic { .. }) {
                let _ = writeln!(text, "compute,{last:.4},{:.4},0", p.start);
            }
            let _ = writeln!(text, "io,{:.4},{:.4},{}", p.start, p.end, p.bytes);
            last = p.end;
        }
        // Stopped while computing: that compute phase counts up to the stop.
        if let Some(stopped) = report.stopped.filter(|s| *s > last)
            && matches!(workload, Workload::Periodic { .. })
        {
            let _ = writeln!(text, "compute,{last:.4},{stopped:.4},0");
        }
        std::fs::write(&self.phases, text).doing(|| format!("write {}", self.phases.display()))?;
        Ok(0)
    }
}
