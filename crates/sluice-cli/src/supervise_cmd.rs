//! `sluice supervise` (hidden): how the stage starts a program it cannot enter.
//!
//! A managed process that execs a statically linked or Go program execs this instead
//! (the `sluice` beside the stage, docs/limitations.md): it starts the program under the
//! seccomp filter, admits its file calls through the job's segment (`SLUICE_SEGMENT`, in
//! the environment the stage gave it), forwards signals to it, and exits as it exits. The
//! program's descendants inherit the filter, and the mark `SLUICE_SUPERVISED` tells the
//! stage in them not to start another supervisor.
//!
//! With `--serve FD`, it supervises a process that installs the filter itself: the Slurm
//! plugin starts it (detached, as the task's user) for a task whose program is static or
//! Go, says it is ready on the port `FD`, receives the task's listener there, and serves
//! it until the last process under the filter has gone.

use std::ffi::OsString;
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use sluice_control::program::{Held, Signals, start, wait_forwarding};
use sluice_control::supervise::ListenerPort;
use sluice_control::supervise::task::serve_task;

use crate::run::IoUringArg;

/// Start a program the stage cannot enter (static, Go) under the job's budget, through
/// seccomp. Started by the stage when a managed process execs such a program; not meant
/// to be typed.
#[derive(clap::Args, Debug)]
pub struct SuperviseArgs {
    /// The program's file.
    #[arg(long, value_name = "PATH", required_unless_present = "serve")]
    exe: Option<PathBuf>,
    /// Serve the listener that will arrive on this descriptor (a socket of a pair whose
    /// other end installs the filter), instead of starting a program.
    #[arg(long, value_name = "FD", conflicts_with_all = ["exe", "argv"])]
    serve: Option<i32>,
    /// With --serve: calls of processes running this executable (the launcher, before
    /// it execs the program) pass uncounted.
    #[arg(long, value_name = "PATH", requires = "serve")]
    exempt: Option<PathBuf>,
    #[command(flatten)]
    io_uring: IoUringArg,
    /// The signals the program starts with, as the exec the stage replaced would have
    /// kept them: `BLOCKED:IGNORED`, two masks in hex (bit n-1 for signal n). Default: none
    /// blocked, none ignored.
    #[arg(long, value_name = "BLOCKED:IGNORED")]
    signals: Option<Signals>,
    /// The program's argv[0] and its arguments.
    #[arg(last = true, required_unless_present = "serve", value_name = "ARGV")]
    argv: Vec<OsString>,
}

impl SuperviseArgs {
    /// Runs the program; returns its exit status (128 + signal when it was killed).
    pub fn run(&self) -> Result<i32> {
        let segment = std::env::var_os("SLUICE_SEGMENT")
            .context("SLUICE_SEGMENT is not set: sluice supervise runs a job's program, started by the stage")?;
        if let Some(fd) = self.serve {
            // SAFETY: the descriptor was handed over by the plugin, for this process alone.
            let port = ListenerPort::from_fd(unsafe { OwnedFd::from_raw_fd(fd) });
            serve_task(port, Path::new(&segment), self.exempt.clone(), || {
                std::process::exit(0)
            })?;
            return Ok(0);
        }
        let exe = self.exe.as_deref().context("--exe is required")?;
        let mut cmd = Command::new(exe);
        cmd.arg0(&self.argv[0])
            .args(&self.argv[1..])
            .env("SLUICE_SUPERVISED", "1");
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let signals = self.signals.unwrap_or_default();
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
                eprintln!("sluice: cannot run '{}': {e}", exe.display());
                Ok(code)
            }
        }
    }
}
