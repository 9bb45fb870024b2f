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
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use sluice_control::program::{Held, Signals, start, wait_forwarding};
use sluice_control::supervise::{ListenerPort, Supervisor};

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
    #[arg(long, value_name = "BLOCKED:IGNORED", value_parser = signal_masks)]
    signals: Option<(u64, u64)>,
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
            return serve(fd, Path::new(&segment), self.exempt.clone());
        }
        let exe = self.exe.as_deref().context("--exe is required")?;
        let mut cmd = Command::new(exe);
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
                eprintln!("sluice: cannot run '{}': {e}", exe.display());
                Ok(code)
            }
        }
    }
}

/// How long a served supervisor waits for the listener once it said it was ready: the
/// task sends it at once, unless it gave up waiting (then it runs unheld and sends none).
const LISTENER_WAIT: Duration = Duration::from_secs(10);

/// `--serve FD`: says ready (or that it cannot) on the port `fd`, then serves the
/// listener that arrives there until the last process under the filter has gone. Job
/// control and Slurm's signals (SIGINT, SIGTERM, …) are ignored: the supervisor must
/// outlive the task's last call, and ends on the listener's hang-up.
fn serve(fd: i32, segment: &Path, exempt: Option<PathBuf>) -> Result<i32> {
    // SAFETY: the descriptor was handed over by the plugin, for this process alone.
    let port = ListenerPort::from_fd(unsafe { OwnedFd::from_raw_fd(fd) });
    for sig in [
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGTSTP,
        libc::SIGTTIN,
        libc::SIGTTOU,
        libc::SIGPIPE,
    ] {
        // SAFETY: ignoring a signal has no preconditions.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let log = std::env::var_os("SLUICE_LOG").map(PathBuf::from);
    let prepared = match Supervisor::prepare(segment, uid, log) {
        Ok(p) => p,
        Err(e) => {
            // The task runs unheld; it logs why it was not held.
            let _ = port.ready(0);
            return Err(e.into());
        }
    };
    let prepared = match exempt {
        Some(exe) => prepared.exempt(exe),
        None => prepared,
    };
    // The watcher is started before saying ready: once the task has the word, nothing
    // may fail here that would leave its listener unserved.
    let (tx, rx) = std::sync::mpsc::channel::<OwnedFd>();
    let watcher = std::thread::Builder::new()
        .name("sluice-hangup".into())
        .spawn(move || {
            if let Ok(listener) = rx.recv() {
                wait_hangup(&listener);
            }
            std::process::exit(0);
        });
    if watcher.is_err() {
        let _ = port.ready(0);
        anyhow::bail!("cannot start the supervisor's watcher");
    }
    port.ready(std::process::id())?;
    let Some(listener) = port.receive_within(LISTENER_WAIT)? else {
        return Ok(0);
    };
    tx.send(listener.try_clone()?)?;
    prepared.serve(listener);
    Ok(0)
}

/// Returns once no process is left under the listener's filter (`POLLHUP`), which a
/// blocked receive does not see.
fn wait_hangup(listener: &OwnedFd) {
    let mut p = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: 0,
        revents: 0,
    };
    loop {
        // SAFETY: one pollfd, ours; with no events asked, only a hang-up or an error
        // wakes it.
        let n = unsafe { libc::poll(&mut p, 1, -1) };
        if n > 0 && p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            return;
        }
        if n < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
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
