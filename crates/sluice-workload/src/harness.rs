//! The processes of the laboratory: the one way the scenario runner, the demo, the control
//! benchmark and the integration tests start `sluice global` and `sluice local`, wait
//! until they answer, and stop them.
//!
//! Every process is started in a process group of its own and the whole group is killed
//! when its [`Process`] is dropped: a job is `sluice run` and the program it started, and
//! a program left behind by its launcher would keep loading the file system (or hold a
//! port) after the run that started it, however that run ended.

use std::io;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// Why the harness could not give what was asked.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A process or a file the harness needs could not be made.
    #[error("cannot {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The system's reason.
        source: io::Error,
    },
    /// A controller did not answer in time; the last lines of the logs say why.
    #[error("{what} did not start in {limit:?}:\n{logs}")]
    NotReady {
        /// Which controllers.
        what: String,
        /// How long they were given.
        limit: Duration,
        /// The last lines of their logs.
        logs: String,
    },
}

/// An [`io::Result`] with what was being done.
fn doing<T>(what: impl Into<String>, r: io::Result<T>) -> Result<T, HarnessError> {
    r.map_err(|source| HarnessError::Io {
        what: what.into(),
        source,
    })
}

/// A process in a group of its own, the group killed (SIGKILL) and the process reaped
/// when dropped.
#[derive(Debug)]
pub struct Process {
    /// The process.
    pub child: Child,
    /// Where its standard error goes, when it was started with [`Process::logged`].
    pub log: PathBuf,
    /// Killed already: its group id may since name another group.
    killed: bool,
}

impl Process {
    /// Starts `cmd` in a process group of its own, standard input from /dev/null.
    pub fn start(cmd: &mut Command) -> io::Result<Process> {
        let child = cmd.stdin(Stdio::null()).process_group(0).spawn()?;
        Ok(Process {
            child,
            log: PathBuf::new(),
            killed: false,
        })
    }

    /// [`Process::start`], standard output dropped and standard error written to `log`.
    pub fn logged(cmd: &mut Command, log: &Path) -> io::Result<Process> {
        let err = std::fs::File::create(log)?;
        let mut p = Self::start(cmd.stdout(Stdio::null()).stderr(err))?;
        p.log = log.to_owned();
        Ok(p)
    }

    /// Whether it still runs (it is reaped here if it ended).
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends `sig` to the process itself (not its group).
    pub fn signal(&self, sig: i32) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill(2) on a child of ours not yet reaped; no memory is involved.
            unsafe { libc::kill(pid, sig) };
        }
    }

    /// Its log so far (empty when it has none).
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills its whole group (SIGKILL) and reaps it: the members left when the process
    /// itself has ended go too (a daemon a shell put in the background). A group id
    /// stays reserved while any member lives, so it names no stranger's group.
    pub fn kill(&mut self) {
        if !std::mem::replace(&mut self.killed, true)
            && let Ok(pid) = i32::try_from(self.child.id())
        {
            // SAFETY: kill(2) with the id of a group we made; no memory is involved.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Asks its whole group to stop (SIGTERM), without waiting for it.
    fn terminate_group(&self) {
        if !self.killed
            && let Ok(pid) = i32::try_from(self.child.id())
        {
            // SAFETY: kill(2) with the id of a group we made; no memory is involved.
            unsafe { libc::kill(-pid, libc::SIGTERM) };
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// How long [`Processes`] lets its processes end on SIGTERM before it kills them.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// Processes stopped together when dropped: every group is sent SIGTERM at once, and
/// what still runs after [`STOP_GRACE`] is killed ([`Process::kill`]). A launcher that
/// cleans up on SIGTERM gets to: `sluice run --standalone` removes its segment from
/// /dev/shm once its program has ended, which SIGKILL alone would leave behind.
#[derive(Debug, Default)]
pub struct Processes(Vec<Process>);

impl Processes {
    /// Stops them all (see [`Processes`]); none is left afterwards.
    pub fn stop(&mut self) {
        for p in &self.0 {
            p.terminate_group();
        }
        let deadline = Instant::now() + STOP_GRACE;
        for p in &mut self.0 {
            while p.running() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            p.kill();
        }
        self.0.clear();
    }
}

impl std::ops::Deref for Processes {
    type Target = Vec<Process>;
    fn deref(&self) -> &Vec<Process> {
        &self.0
    }
}

impl std::ops::DerefMut for Processes {
    fn deref_mut(&mut self) -> &mut Vec<Process> {
        &mut self.0
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A TCP port of 127.0.0.1 free a moment ago, released for a daemon to bind.
///
/// It is taken outside the kernel's ephemeral range (`ip_local_port_range`): a port the
/// kernel chose (bind to port 0) is one it also gives outgoing connections as their source
/// port, and one of those (a client probing another daemon, that daemon's own connection
/// to its database) could take it between this choice and the daemon's bind. Calls in one
/// process walk the range from a start drawn per process, so none repeats another's port.
pub fn free_port() -> io::Result<u16> {
    static CURSOR: std::sync::OnceLock<AtomicUsize> = std::sync::OnceLock::new();
    let ranges = ports_outside(ephemeral_range());
    let span: usize = ranges.iter().map(ExactSizeIterator::len).sum();
    if span == 0 {
        return Ok(std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port());
    }
    let cursor = CURSOR.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        AtomicUsize::new((std::process::id().wrapping_mul(2_654_435_761) ^ nanos) as usize)
    });
    for _ in 0..span.min(4096) {
        let at = cursor.fetch_add(1, Ordering::Relaxed) % span;
        let port = ranges
            .iter()
            .flat_map(Clone::clone)
            .nth(at)
            .expect("at < span");
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrInUse,
        "no free port of 127.0.0.1 outside the ephemeral range",
    ))
}

/// The kernel's range of ports for outgoing connections (Linux's default when unreadable).
fn ephemeral_range() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(str::parse::<u16>);
            Some((it.next()?.ok()?, it.next()?.ok()?))
        })
        .unwrap_or((32768, 60999))
}

/// The unprivileged ports below and above `(low, high)`, inclusive bounds.
fn ports_outside((low, high): (u16, u16)) -> Vec<std::ops::Range<u16>> {
    [
        1024..low.max(1024),
        high.saturating_add(1).max(1024)..u16::MAX,
    ]
    .into_iter()
    .filter(|r| r.start < r.end)
    .collect()
}

/// A new directory `PREFIX.XXXXXX` under `parent` (the system's temporary directory when
/// `None`), removed with all it holds when dropped.
pub fn temp_dir(parent: Option<&Path>, prefix: &str) -> Result<TempDir, HarnessError> {
    let mut b = tempfile::Builder::new();
    b.prefix(prefix);
    let parent = parent.map_or_else(std::env::temp_dir, Path::to_owned);
    doing(
        format!("make a directory in {}", parent.display()),
        b.tempdir_in(&parent),
    )
}

/// Polls `cond` every `every` until it holds (true) or `limit` has passed (its last
/// answer).
pub fn wait_until(limit: Duration, every: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(every);
    }
    cond()
}

/// The last lines of a process's output, for a failure's message: at most 15 lines and
/// 2,000 bytes.
pub fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let from = lines.len().saturating_sub(15);
    let mut t = lines[from..].join("\n");
    if t.len() > 2000 {
        let mut cut = t.len() - 2000;
        while !t.is_char_boundary(cut) {
            cut += 1;
        }
        t = format!("…{}", &t[cut..]);
    }
    t
}

/// A `sluice` binary and how to start it: the program every daemon and job of a run is.
#[derive(Clone, Debug)]
pub struct Sluice {
    /// The binary.
    pub bin: PathBuf,
    /// The stage library its launchers preload (`SLUICE_STAGE`); default: the binary's own.
    pub stage: Option<PathBuf>,
    /// A network namespace to run it in (`ip netns exec NS`).
    pub netns: Option<String>,
    /// Variables added to its environment.
    pub env: Vec<(String, String)>,
}

impl Sluice {
    /// This very binary.
    pub fn current() -> Result<Sluice, HarnessError> {
        Ok(Self::at(doing(
            "find the sluice binary",
            std::env::current_exe(),
        )?))
    }

    /// The binary at `bin`.
    pub fn at(bin: impl Into<PathBuf>) -> Sluice {
        Sluice {
            bin: bin.into(),
            stage: None,
            netns: None,
            env: Vec::new(),
        }
    }

    /// `sluice ARGS…`, to complete and start.
    pub fn command<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Command {
        let mut c = match &self.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(&self.bin);
                c
            }
            None => Command::new(&self.bin),
        };
        if let Some(stage) = &self.stage {
            c.env("SLUICE_STAGE", stage);
        }
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c.args(args);
        c
    }

    /// `sluice ARGS…` started in a group of its own, its standard error in `log`.
    pub fn start<S: AsRef<std::ffi::OsStr>>(
        &self,
        args: &[S],
        log: &Path,
    ) -> Result<Process, HarnessError> {
        let what = format!("start sluice {}", first(args));
        doing(what, Process::logged(&mut self.command(args), log))
    }

    /// `sluice status --json` of the controller at `socket`, when it answers.
    pub fn status(&self, socket: &Path) -> Option<serde_json::Value> {
        let o = self
            .command(&["status", "--json", "--socket"])
            .arg(socket)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())?;
        serde_json::from_slice(&o.stdout).ok()
    }

    /// `sluice global` listening on a free port of 127.0.0.1, its state in
    /// `dir/global-state`, with `extra` arguments, logging to `dir/global.log`; returns
    /// once `sluice status` answers from it, with its URL.
    pub fn start_global(
        &self,
        dir: &Path,
        extra: &[&str],
    ) -> Result<(Process, String), HarnessError> {
        let port = doing("find a free port for sluice global", free_port())?;
        let listen = format!("127.0.0.1:{port}");
        let state = dir.join("global-state");
        let mut args: Vec<std::ffi::OsString> = vec![
            "global".into(),
            "--listen".into(),
            listen.as_str().into(),
            "--state-dir".into(),
            state.into(),
        ];
        args.extend(extra.iter().map(Into::into));
        let mut global = self.start(&args, &dir.join("global.log"))?;
        let url = format!("http://{listen}");
        let answers = wait_until(Duration::from_secs(20), Duration::from_millis(50), || {
            global.running()
                && self
                    .command(&["status", "--server", &url])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
        });
        if !answers {
            return Err(not_ready(
                "sluice global",
                Duration::from_secs(20),
                &[&global],
            ));
        }
        Ok((global, url))
    }

    /// `sluice local` on `socket` with its state in `state` and its segments in `shm`,
    /// with `extra` arguments, logging to `log`; returns at once (see
    /// [`Sluice::wait_ready`]).
    pub fn start_local(&self, l: &LocalPlace<'_>, extra: &[&str]) -> Result<Process, HarnessError> {
        let mut args: Vec<std::ffi::OsString> = vec![
            "local".into(),
            "--socket".into(),
            l.socket.into(),
            "--state-dir".into(),
            l.state.into(),
            "--shm-dir".into(),
            l.shm.into(),
        ];
        args.extend(extra.iter().map(Into::into));
        self.start(&args, l.log)
    }

    /// Waits up to `limit` until every local controller of `sockets` answers and the
    /// first counts `locals` local controllers (a standalone one counts itself or none:
    /// 1 asks only that it answers). Fails with the last lines of `procs`' logs, at once
    /// when one of them has exited.
    pub fn wait_ready(
        &self,
        sockets: &[PathBuf],
        locals: u32,
        procs: &mut [Process],
        limit: Duration,
    ) -> Result<(), HarnessError> {
        let mut exited = false;
        let answered = wait_until(limit, Duration::from_millis(50), || {
            // One that exited will not answer: no use waiting for it.
            exited = !procs.iter_mut().all(Process::running);
            exited
                || sockets.iter().all(|s| self.status(s).is_some())
                    && (locals <= 1
                        || sockets
                            .first()
                            .and_then(|s| self.status(s))
                            .is_some_and(|v| v["locals"].as_u64() == Some(locals.into())))
        });
        if answered && !exited {
            return Ok(());
        }
        let procs: Vec<&Process> = procs.iter().collect();
        Err(not_ready(
            &format!("the controllers ({locals} local(s) wanted)"),
            limit,
            &procs,
        ))
    }
}

/// Where a local controller keeps its socket, state, segments and log.
#[derive(Clone, Copy, Debug)]
pub struct LocalPlace<'a> {
    /// Its admin and launcher socket.
    pub socket: &'a Path,
    /// Its state directory.
    pub state: &'a Path,
    /// Its segments' directory (on tmpfs).
    pub shm: &'a Path,
    /// Its standard error.
    pub log: &'a Path,
}

/// The first argument, to name what is started.
fn first<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> String {
    args.first()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// [`HarnessError::NotReady`] with the tails of `procs`' logs.
fn not_ready(what: &str, limit: Duration, procs: &[&Process]) -> HarnessError {
    let mut logs = String::new();
    for p in procs {
        logs += &format!("{}:\n{}\n", p.log.display(), tail(&p.log_text()));
    }
    HarnessError::NotReady {
        what: what.to_owned(),
        limit,
        logs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_outside_the_ephemeral_range_and_never_repeat() {
        let (low, high) = ephemeral_range();
        let ports: Vec<u16> = (0..200).map(|_| free_port().unwrap()).collect();
        for p in &ports {
            assert!(*p >= 1024 && (*p < low || *p > high), "{p} in {low}-{high}");
        }
        let mut distinct = ports.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), ports.len());
    }

    #[test]
    fn the_ports_outside_a_range_leave_out_the_privileged_ones() {
        assert_eq!(
            ports_outside((32768, 60999)),
            vec![1024..32768, 61000..u16::MAX]
        );
        assert_eq!(ports_outside((1024, 65535)), vec![]);
        assert_eq!(ports_outside((500, 40000)), vec![40001..u16::MAX]);
    }
}
