//! `sluice experiment command`: a `command` job's program, as the runner starts it under
//! `sluice run`. It runs the program (which inherits the stage) and counts, once a
//! second, the calls the stage admitted for the job: the job's pool share when attached to
//! a local controller, else its rules (the runner gives an uncontrolled set-up's command
//! jobs one rule that never holds, so that their calls are counted the same way).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use sluice_control::segment_file::SegmentFile;
use sluice_core::config::StageConfig;
use sluice_core::stats::Stats;

/// `sluice experiment command`.
#[derive(Debug)]
pub struct CommandOptions {
    /// Each second's calls: `unix_s,calls` (the second's start, in seconds since the
    /// epoch, so that the runner places it on its own clock; the first and last rows
    /// are the parts of a second from the program's start and up to its exit).
    pub csv: PathBuf,
    /// The program's run: `start,end,status` (seconds since the epoch; its exit status).
    pub times: PathBuf,
    /// The program's working directory.
    pub dir: PathBuf,
    /// The clock whose whole seconds the rows are (seconds since the epoch: the
    /// set-up's start); default: the program's start.
    pub clock: Option<f64>,
    /// The program and its arguments.
    pub argv: Vec<String>,
}

impl CommandOptions {
    /// Runs the program to its end, counting; returns its exit status.
    pub fn run(&self) -> Result<i32> {
        // Without a stage (started bare) there is nothing to count: the CSV stays empty.
        let seg = std::env::var_os("SLUICE_SEGMENT")
            .map(|p| SegmentFile::open(PathBuf::from(p)))
            .transpose()
            .context("the job's segment")?;
        let counted = || seg.as_ref().map_or(Ok(0), admitted);
        let mut csv = String::from("unix_s,calls\n");
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
            .with_context(|| format!("cannot run {:?}", self.argv[0]))?;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if unix_now() >= second + 1.0 {
                let now = counted()?;
                let _ = writeln!(csv, "{second:.6},{}", now.saturating_sub(last));
                last = now;
                second += 1.0;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let end = unix_now();
        let now = counted()?;
        let _ = writeln!(csv, "{second:.6},{}", now.saturating_sub(last));
        write(&self.csv, &csv)?;
        let code = status.code().unwrap_or_else(|| {
            use std::os::unix::process::ExitStatusExt as _;
            128 + status.signal().unwrap_or(0)
        });
        write(
            &self.times,
            &format!("start,end,status\n{start:.4},{end:.4},{code}\n"),
        )?;
        Ok(code)
    }
}

/// Calls admitted so far for the job: on its pools' shares when it has any (attached),
/// else on its rules.
fn admitted(seg: &SegmentFile) -> Result<u64> {
    let (text, _) = seg.segment().config()?;
    let config = StageConfig::from_text(&text)?;
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

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
