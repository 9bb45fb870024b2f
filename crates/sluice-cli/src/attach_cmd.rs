//! `sluice attach`: a job attached for processes that another program launches, for sites
//! that will not load the SPANK plugin (a Slurm TaskProlog).

use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use sluice_control::launcher::{Attach, Held};
use sluice_control::program::stage_path;

use crate::Usage;
use crate::run::JobSpec;

/// Attach a job to the node's local controller for a process launched by someone else,
/// e.g. from a Slurm TaskProlog.
///
/// Prints the lines `export LD_PRELOAD=…` and `export SLUICE_SEGMENT=…` that put the
/// process under the stage (a TaskProlog's exports go into the task's environment), and
/// holds the attachment in the background until process PID ends. With no local
/// controller on the node it prints nothing: the process runs untouched. A controller
/// that does not answer within --deadline is passed by: the process runs standalone,
/// under the job's own rules (or, with --unreachable refuse, this command fails).
///
/// Example, as a TaskProlog: exec sluice attach --fs-type lustre --while-pid "$SLURM_TASK_PID"
#[derive(clap::Args, Debug)]
pub struct AttachArgs {
    #[command(flatten)]
    spec: JobSpec,
    /// The process whose life the attachment lasts (in a TaskProlog: $SLURM_TASK_PID).
    #[arg(long, value_name = "PID")]
    while_pid: i32,
}

impl AttachArgs {
    /// Attaches in a background process that holds the attachment; prints the exports.
    pub fn run(&self) -> Result<i32> {
        let config = self.spec.config("attach")?;
        let stage = stage_path()?;
        if !alive(self.while_pid) {
            return Err(Usage(format!("--while-pid {}: no such process", self.while_pid)).into());
        }
        let (read, write) = pipe()?;
        // SAFETY: this process has one thread (nothing has started another yet), so the
        // child may go on running Rust.
        match unsafe { libc::fork() } {
            -1 => bail!("cannot fork: {}", std::io::Error::last_os_error()),
            // The holder returns its status to main, which exits with it.
            0 => {
                drop(read);
                return Ok(self.hold(&config, write));
            }
            _ => drop(write),
        }
        let mut answer = String::new();
        std::fs::File::from(read)
            .read_to_string(&mut answer)
            .context("cannot read the attachment's answer")?;
        if let Some(error) = answer.strip_prefix('!') {
            bail!("{}", error.trim_end());
        }
        let segment = answer.trim_end();
        if segment.is_empty() {
            return Ok(0);
        }
        let mut preload = stage.display().to_string();
        if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
            preload = format!("{preload}:{}", old.to_string_lossy());
        }
        println!("export LD_PRELOAD={preload}\nexport SLUICE_SEGMENT={segment}");
        Ok(0)
    }

    /// The background process: attaches (or, past a silent controller, makes a segment
    /// of the job's own), answers on `answer` (the segment, nothing when no controller
    /// listens, `!` and the error), lets go of the caller's terminal and pipes, and holds
    /// the attachment or the segment until the process ends. Returns its exit status.
    fn hold(&self, config: &sluice_core::config::StageConfig, answer: OwnedFd) -> i32 {
        // SAFETY: setsid has no preconditions; the holder must outlive its caller's
        // session (a TaskProlog's).
        unsafe { libc::setsid() };
        let held = self
            .spec
            .attach(config)
            .and_then(|attached| match attached {
                Attach::Attached(a) => Ok(Some(Held::Attached(a))),
                Attach::Unanswered(_) => {
                    (self.spec.standalone_segment(config)).map(|s| Some(Held::Alone(s)))
                }
                Attach::Absent => Ok(None),
            });
        let mut answer = std::fs::File::from(answer);
        let _ = match &held {
            Ok(Some(h)) => writeln!(answer, "{}", h.segment().display()),
            Ok(None) => Ok(()),
            Err(e) => writeln!(answer, "!{e:#}"),
        };
        drop(answer);
        detach_stdio();
        if let Ok(Some(_)) = held {
            wait_for_exit(self.while_pid);
        }
        i32::from(held.is_err())
    }
}

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("cannot create a pipe: {}", std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Points stdin, stdout and stderr at /dev/null, so that whoever reads the caller's output
/// (Slurm reads a TaskProlog's to its end) is not held by the holder.
fn detach_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for fd in 0..3 {
            // SAFETY: dup2 onto the standard descriptors of this process.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}

/// Whether process `pid` exists (it may be another user's).
fn alive(pid: i32) -> bool {
    u32::try_from(pid).is_ok_and(|p| p > 0 && sluice_control::local::alive(p))
}

/// Returns once process `pid` has ended: woken by a pidfd where the kernel has them, else
/// checking every half second.
fn wait_for_exit(pid: i32) {
    // SAFETY: pidfd_open takes a pid and flags.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd >= 0 {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, ours; the descriptor becomes readable when the process ends.
        while unsafe { libc::poll(&mut p, 1, -1) } < 0 {}
        // SAFETY: the descriptor is ours.
        unsafe { libc::close(fd) };
        return;
    }
    while alive(pid) {
        std::thread::sleep(Duration::from_millis(500));
    }
}
