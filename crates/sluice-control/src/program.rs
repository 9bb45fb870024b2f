//! A job's program started and waited for, as `sluice run` and `sluice supervise` do it
//! (and, for `sluice attach`, a holder that outlives its caller):
//! with the signals an exec would keep, under the seccomp filter and a supervisor when
//! the stage cannot enter it, the launcher's signals forwarded, and its counters written
//! when it ends.

use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use sluice_core::stats::Stats;

use crate::supervise::{Filter, IoUring, SuperviseError, Supervised, Supervisor};

/// Why a program could not be started, watched or accounted for.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    /// The seccomp filter could not be built.
    #[error("cannot prepare the seccomp filter")]
    Filter(#[source] std::io::Error),
    /// The supervisor could not start.
    #[error(transparent)]
    Supervise(#[from] SuperviseError),
    /// Waiting for the program failed.
    #[error("cannot wait for the command")]
    Wait(#[source] std::io::Error),
    /// This binary's own path is unknown, so the stage beside it is too.
    #[error("cannot find the sluice binary")]
    Exe(#[source] std::io::Error),
    /// No stage library where it was looked for.
    #[error("stage library {} not found (build it with `make`, or set SLUICE_STAGE)", .0.display())]
    NoStage(PathBuf),
    /// The stage library's path could not be resolved.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The counters could not be put in JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The counters could not be written.
    #[error("cannot write --stats {}", .0.display())]
    Stats(PathBuf, #[source] std::io::Error),
}

/// The program signals are forwarded to (0: none yet).
static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int) {
    let pid = CHILD.load(Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, sig) };
    }
}

/// A job's program started: the child, and the supervisor holding its calls when it is
/// one the stage cannot enter.
pub struct Held {
    /// The program.
    pub child: Child,
    /// Its supervisor, when it runs under the filter.
    pub supervisor: Option<Supervisor>,
}

/// The signals a program starts with, as an exec keeps them: this blocked mask, these
/// signals ignored, every other at its default (bit `n - 1` for signal `n`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Signals {
    /// The blocked mask.
    pub blocked: u64,
    /// The ignored signals.
    pub ignored: u64,
}

/// `BLOCKED:IGNORED`, two masks in hex, as the stage passes them to `sluice supervise`.
impl std::str::FromStr for Signals {
    type Err = String;

    fn from_str(text: &str) -> Result<Signals, String> {
        let (b, i) = text
            .split_once(':')
            .ok_or_else(|| format!("'{text}': expected BLOCKED:IGNORED, two masks in hex"))?;
        let mask = |m: &str| u64::from_str_radix(m, 16).map_err(|e| format!("'{m}': {e}"));
        Ok(Signals {
            blocked: mask(b)?,
            ignored: mask(i)?,
        })
    }
}

impl Signals {
    /// What this process would pass on if it exec'ed the program itself: its blocked mask
    /// and ignored signals, read before it sets handlers of its own, less SIGPIPE, which
    /// Rust's runtime ignores in every program (a command started from a shell that
    /// ignored SIGPIPE gets it at its default, as before).
    pub fn of_this_process() -> Signals {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let mask = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
                .unwrap_or(0)
        };
        Signals {
            blocked: mask("SigBlk:"),
            ignored: mask("SigIgn:") & !(1 << (libc::SIGPIPE - 1)),
        }
    }
}

/// How long a supervisor waits for the listener of the child started after it: the child
/// sends it between its fork and its exec, so a deadline that is never reached.
const LISTENER_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// Starts `cmd` with `signals`; under the seccomp filter, with a supervisor admitting its
/// calls through the job's segment at `segment`, when `supervise` (the stage cannot enter
/// it), and with io_uring denied when `io_uring` says so. A program that cannot be started
/// is the exit code the shells give (127 not found, 126 not runnable) and why.
pub fn start(
    cmd: &mut Command,
    supervise: bool,
    io_uring: IoUring,
    segment: &Path,
    uid: u32,
    signals: Signals,
) -> Result<Result<Held, (i32, std::io::Error)>, ProgramError> {
    if supervise {
        // The mark the local controller's scan reads to name the program held (and that
        // tells the stage in its descendants that a supervisor holds them already).
        cmd.env("SLUICE_SUPERVISED", "1");
    }
    let (filter, port) = match Filter::new(supervise, io_uring).map_err(ProgramError::Filter)? {
        Some((f, port)) => (Some(f), port),
        None => (None, None),
    };
    // Started before the child: its own calls between the filter and the exec are held
    // too, and a failed exec reports itself with a `write` that must be answered.
    let supervisor = match port {
        Some(port) => {
            let log = std::env::var_os("SLUICE_LOG").map(PathBuf::from);
            let prepared = Supervisor::prepare(segment, uid, log)?;
            Some(prepared.start_on(port, LISTENER_DEADLINE)?)
        }
        None => None,
    };
    // SAFETY: the closure sets signal dispositions and the mask and installs the filter,
    // which makes only async-signal-safe calls (prctl, seccomp, sendmsg, close).
    unsafe {
        cmd.pre_exec(move || {
            as_exec(signals);
            match &filter {
                Some(f) => f.install(),
                None => Ok(()),
            }
        })
    };
    let child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Err((127, e))),
        Err(e) => return Ok(Err((126, e))),
    };
    CHILD.store(child.id() as i32, Ordering::Relaxed);
    Ok(Ok(Held { child, supervisor }))
}

/// Sets every catchable signal's disposition to ignored (a bit of `ignored`) or the
/// default, and the blocked mask to `blocked`: what an exec keeps. Async-signal-safe (a
/// child between fork and exec): raw system calls only.
fn as_exec(Signals { blocked, ignored }: Signals) {
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        let handler = match ignored >> (sig - 1) & 1 {
            1 => libc::SIG_IGN,
            _ => libc::SIG_DFL,
        };
        // The kernel's sigaction: handler, flags, restorer, mask.
        let act: [u64; 4] = [handler as u64, 0, 0, 0];
        // SAFETY: a valid kernel sigaction of 8-byte masks; an invalid signal number
        // (none of 1..=64 is) would only fail.
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                sig,
                act.as_ptr(),
                std::ptr::null_mut::<u64>(),
                8,
            )
        };
    }
    // SAFETY: the mask is 8 bytes, as the call is told.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &blocked,
            std::ptr::null_mut::<u64>(),
            8,
        )
    };
}

/// Forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT to `child` and waits for it: its exit
/// code, 128 + the signal when it was killed.
pub fn wait_forwarding(child: &mut Child) -> Result<i32, ProgramError> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: `forward` is an async-signal-safe handler.
        unsafe { libc::signal(sig, forward as *const () as libc::sighandler_t) };
    }
    let status = child.wait().map_err(ProgramError::Wait)?;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

/// The stage library: `SLUICE_STAGE`, else `libsluice_stage.so` next to this binary.
pub fn stage_path() -> Result<PathBuf, ProgramError> {
    let path = match std::env::var_os("SLUICE_STAGE") {
        Some(p) => PathBuf::from(p),
        None => std::env::current_exe()
            .map_err(ProgramError::Exe)?
            .with_file_name("libsluice_stage.so"),
    };
    if !path.is_file() {
        return Err(ProgramError::NoStage(path));
    }
    Ok(path.canonicalize()?)
}

/// The file `command` runs, found as execvp would find it.
pub fn find_command(command: &str) -> Option<PathBuf> {
    if command.contains('/') {
        return Some(PathBuf::from(command));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|p| p.is_file())
}

/// The job's counters, and the programs supervised (one per executable: pid, exe, why).
pub fn write_stats(
    out: &Path,
    stats: &Stats,
    supervised: &[Supervised],
) -> Result<(), ProgramError> {
    let mut value = serde_json::to_value(stats)?;
    if let Some(map) = value.as_object_mut().filter(|_| !supervised.is_empty()) {
        let list: Vec<serde_json::Value> = supervised
            .iter()
            .map(|s| serde_json::json!({"pid": s.pid, "exe": s.exe, "why": s.why.name()}))
            .collect();
        map.insert("supervised".into(), list.into());
    }
    let text = serde_json::to_string_pretty(&value)? + "\n";
    if out == Path::new("-") {
        print!("{text}");
        return Ok(());
    }
    std::fs::write(out, text).map_err(|e| ProgramError::Stats(out.to_owned(), e))
}

/// `LD_PRELOAD` for a job's programs: the stage first, then what was preloaded already.
pub fn preload(stage: &Path) -> String {
    let mut preload = stage.display().to_string();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload = format!("{preload}:{}", old.to_string_lossy());
    }
    preload
}

/// A pipe, both ends closed on exec: a background holder's answer to its caller.
pub fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Points stdin, stdout and stderr at /dev/null, so that whoever reads the caller's output
/// (Slurm reads a TaskProlog's to its end) is not held by the holder.
pub fn detach_stdio() {
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
pub fn alive(pid: i32) -> bool {
    u32::try_from(pid).is_ok_and(|p| p > 0 && crate::local::alive(p))
}

/// Returns once process `pid` has ended: woken by a pidfd where the kernel has them, else
/// checking every half second.
pub fn wait_for_exit(pid: i32) {
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
