//! `sluice supervise` (hidden): how the stage starts a program it cannot enter.
//!
//! A managed process that execs a statically linked or Go program execs this instead
//! (the `sluice` beside the stage, docs/limitations.md): it starts the program under the
//! seccomp filter, admits its file calls through the job's segment (`SLUICE_SEGMENT`, in
//! the environment the stage gave it), forwards signals to it, and exits as it exits. The
//! program's descendants inherit the filter, and the mark `SLUICE_SUPERVISED` tells the
//! stage in them not to start another supervisor.

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use sluice_control::program::{Held, Signals, start, wait_forwarding};

use crate::run::IoUringArg;

/// Start a program the stage cannot enter (static, Go) under the job's budget, through
/// seccomp. Started by the stage when a managed process execs such a program; not meant
/// to be typed.
#[derive(clap::Args, Debug)]
pub struct SuperviseArgs {
    /// The program's file.
    #[arg(long, value_name = "PATH")]
    exe: PathBuf,
    #[command(flatten)]
    io_uring: IoUringArg,
    /// The signals the program starts with, as the exec the stage replaced would have
    /// kept them: `BLOCKED:IGNORED`, two masks in hex (bit n-1 for signal n). Default: none
    /// blocked, none ignored.
    #[arg(long, value_name = "BLOCKED:IGNORED", value_parser = signal_masks)]
    signals: Option<(u64, u64)>,
    /// The program's argv[0] and its arguments.
    #[arg(last = true, required = true, value_name = "ARGV")]
    argv: Vec<OsString>,
}

impl SuperviseArgs {
    /// Runs the program; returns its exit status (128 + signal when it was killed).
    pub fn run(&self) -> Result<i32> {
        let segment = std::env::var_os("SLUICE_SEGMENT")
            .context("SLUICE_SEGMENT is not set: sluice supervise runs a job's program, started by the stage")?;
        let mut cmd = Command::new(&self.exe);
        cmd.arg0(&self.argv[0])
            .args(&self.argv[1..])
            .env("SLUICE_SUPERVISED", "1");
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let (blocked, ignored) = self.signals.unwrap_or_default();
        let signals = Signals { blocked, ignored };
        let held = start(
            &mut cmd,
            true,
            self.io_uring.io_uring,
            Path::new(&segment),
            uid,
            signals,
        )?;
        match held {
            Ok(Held { mut child, .. }) => Ok(wait_forwarding(&mut child)?),
            Err((code, e)) => {
                eprintln!("sluice: cannot run '{}': {e}", self.exe.display());
                Ok(code)
            }
        }
    }
}

/// `BLOCKED:IGNORED`, two masks in hex.
fn signal_masks(text: &str) -> Result<(u64, u64), String> {
    let (b, i) = text
        .split_once(':')
        .ok_or_else(|| format!("'{text}': expected BLOCKED:IGNORED, two masks in hex"))?;
    let mask = |m: &str| u64::from_str_radix(m, 16).map_err(|e| format!("'{m}': {e}"));
    Ok((mask(b)?, mask(i)?))
}
