//! `sluice attach`: a job attached for processes that another program launches, for sites
//! that will not load the SPANK plugin (a Slurm TaskProlog).

use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;

use anyhow::{Context, Result, bail};

use sluice_control::launcher::{Attach, Held};
use sluice_control::program::{alive, detach_stdio, pipe, preload, stage_path, wait_for_exit};

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
        let (read, write) = pipe().context("cannot create a pipe")?;
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
        let preload = preload(&stage);
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
