//! A supervisor in a process of its own for a task that installs the filter itself (the
//! Slurm plugin's static or Go task, `sluice supervise --serve`): it says ready, takes the
//! task's listener and serves it until the last process under the filter has gone.

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{ListenerPort, SuperviseError, Supervisor};

/// How long a served supervisor waits for the listener once it said it was ready: the
/// task sends it at once, unless it gave up waiting (then it runs unheld and sends none).
const LISTENER_WAIT: Duration = Duration::from_secs(10);

/// Signals a task's supervisor ignores: job control and Slurm's (SIGINT, SIGTERM, …) would
/// end it before the task's last call, and it ends on the listener's hang-up.
const IGNORED: [libc::c_int; 10] = [
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
];

/// Says ready (or that it cannot) on `port`, then serves the listener that arrives there
/// for the job's segment at `segment`, with the calls of processes running `exempt` (the
/// launcher, before its exec) uncounted. Returns when no listener came; otherwise calls
/// `gone` (on another thread) once the last process under the filter has gone, which a
/// blocked receive never sees: the binary ends the process there.
pub fn serve_task(
    port: ListenerPort,
    segment: &Path,
    exempt: Option<PathBuf>,
    gone: fn() -> !,
) -> Result<(), SuperviseError> {
    for sig in IGNORED {
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
            return Err(e);
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
            gone()
        });
    if let Err(e) = watcher {
        let _ = port.ready(0);
        return Err(SuperviseError::Thread(e));
    }
    port.ready(std::process::id())
        .map_err(SuperviseError::Port)?;
    let Some(listener) = port
        .receive_within(LISTENER_WAIT)
        .map_err(SuperviseError::Port)?
    else {
        return Ok(());
    };
    // The watcher holds a copy; if it cannot have one, the served loop still ends when
    // its receive fails after the hang-up.
    if let Ok(copy) = listener.try_clone() {
        let _ = tx.send(copy);
    }
    prepared.serve(listener);
    Ok(())
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
