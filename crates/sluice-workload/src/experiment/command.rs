//! `sluice experiment command`: a `command` job's program, as the runner starts it under
//! `sluice run`. It runs the program (which inherits the stage) and counts, once a
//! second, the calls the stage admitted for the job: the job's pool share when attached to
//! a local controller, else its rules (the runner gives an uncontrolled set-up's command
//! jobs one rule that never holds, after the job's own, so that their calls are counted the
//! same way: a call is held by the first rule it meets, so each is counted once).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use sluice_control::segment_file::SegmentFile;
use sluice_core::config::StageConfig;
use sluice_core::stats::Stats;

use super::{ExperimentError, Result};
use crate::error::Doing as _;

/// `sluice experiment command`: its arguments, as the runner gives them.
#[derive(clap::Args, Debug)]
pub struct CommandOptions {
    /// Each second's calls: `unix_s,calls` (the second's start, in seconds since the
    /// epoch, so that the runner places it on its own clock; the first and last rows
    /// are the parts of a second from the program's start and up to its exit), written
    /// as each second ends, so that the runner can show it live.
    #[arg(long)]
    pub csv: PathBuf,
    /// The program's run: `start,end,status` (seconds since the epoch; its exit status).
    #[arg(long)]
    pub times: PathBuf,
    /// The program's working directory.
    #[arg(long)]
    pub dir: PathBuf,
    /// The clock whose whole seconds the rows are (seconds since the epoch: the
    /// set-up's start); default: the program's start.
    #[arg(long, value_name = "UNIX_S")]
    pub clock: Option<f64>,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub argv: Vec<String>,
}

impl CommandOptions {
    /// Runs the program to its end, counting; returns its exit status.
    pub fn run(&self) -> Result<i32> {
        // Without a stage (started bare) there is nothing to count: the CSV stays empty.
        let seg = std::env::var_os("SLUICE_SEGMENT")
            .map(|p| SegmentFile::open(PathBuf::from(p)))
            .transpose()
            .map_err(|e| ExperimentError::Failed(format!("the job's segment: {e}")))?;
        let counted = || seg.as_ref().map_or(Ok(0), admitted);
        let writing = || format!("write {}", self.csv.display());
        let mut csv = std::fs::File::create(&self.csv).doing(writing)?;
        // One write a row, so that the runner, reading as it goes, sees whole rows.
        let mut row = |text: String| csv.write_all(text.as_bytes()).doing(writing);
        row("unix_s,calls\n".into())?;
        let mut last = counted()?;
        let start = unix_now();
        // Seconds are the clock's (the set-up's, when given): each row is one of its
        // whole seconds, the first and the last cut by the program's start and exit.
        let clock = self.clock.unwrap_or(start);
        let mut second = clock + (start - clock).max(0.0).floor();
        let mut child = Command::new(&self.argv[0])
            .args(&self.argv[1..])
            .current_dir(&self.dir)
            .spawn()
            .doing(|| format!("run {:?}", self.argv[0]))?;
        let status = loop {
            if let Some(status) = child
                .try_wait()
                .doing(|| format!("wait for {:?}", self.argv[0]))?
            {
                break status;
            }
            if unix_now() >= second + 1.0 {
                let now = counted()?;
                row(format!("{second:.6},{}\n", now.saturating_sub(last)))?;
                last = now;
                second += 1.0;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let end = unix_now();
        let now = counted()?;
        row(format!("{second:.6},{}\n", now.saturating_sub(last)))?;
        let code = status.code().unwrap_or_else(|| {
            use std::os::unix::process::ExitStatusExt as _;
            128 + status.signal().unwrap_or(0)
        });
        std::fs::write(
            &self.times,
            format!("start,end,status\n{start:.4},{end:.4},{code}\n"),
        )
        .doing(|| format!("write {}", self.times.display()))?;
        Ok(code)
    }
}

/// Calls admitted so far for the job: on its pools' shares when it has any (attached),
/// else on its rules.
fn admitted(seg: &SegmentFile) -> Result<u64> {
    let unreadable = |e: &dyn std::fmt::Display| {
        ExperimentError::Failed(format!("the job's segment's configuration: {e}"))
    };
    let (text, _) = seg.segment().config().map_err(|e| unreadable(&e))?;
    let config = StageConfig::from_text(&text).map_err(|e| unreadable(&e))?;
    let stats = Stats::new(
        &config.job,
        &config.rules,
        &config.pools,
        &seg.segment().totals(),
    );
    let channels = if stats.pools.is_empty() {
        &stats.rules
    } else {
        &stats.pools
    };
    Ok(channels.iter().map(|c| c.admitted).sum())
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
