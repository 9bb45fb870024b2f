//! Supervision of the programs the stage cannot enter: statically linked programs, Go
//! programs, and dynamic programs started without the stage in their environment.
//!
//! The launcher puts such a program under a seccomp filter before it execs
//! ([`Filter`]): its file-system calls ([`calls::CALLS`]) stop in the kernel and are sent
//! to a supervisor as user notifications. The supervisor ([`Supervisor`], a thread of the
//! launcher) reads the call's path from the process's memory (`/proc/PID/mem`), or for a
//! read or write the path its descriptor names (`/proc/PID/fd/N`), checks
//! that the notification still stands (the process did not die and its pid was not
//! reused meanwhile), judges the path against the job's managed places as the stage
//! would, admits the call through the job's own buckets in its segment (one budget for
//! the job's dynamic and supervised processes alike), counts it there, and lets the
//! kernel carry it on (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`). The call itself is the
//! program's: the supervisor never makes it, so its result, errno and side effects are
//! those of the call unsupervised.
//!
//! The filter is inherited by every descendant. A descendant that carries the stage (a
//! dynamic program with the stage and the segment in its environment) is let through
//! uncounted, as the stage holds it; any other is held by the supervisor.

pub mod calls;
pub mod elf;
pub mod filter;
pub mod task;

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Write as _;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sluice_core::classify::Compiled;
use sluice_core::config::{StageConfig, latency_sample_of};
use sluice_core::gate::{Gate, MAX_IO, Size, ThreadState};
use sluice_core::op::Op;

use crate::clock::MonotonicClock;
use sluice_core::path::{PATH_MAX, mounts_of_types, resolve_into};
use sluice_core::rule::Identity;

use crate::segment_file::SegmentFile;

pub use elf::{Why, inspect};
pub use filter::{Filter, IoUring, ListenerPort};

use calls::{Moves, Named, call_of};

/// `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP` (linux/seccomp.h, Linux 6.6), which the libc crate
/// does not name yet.
const SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: libc::c_ulong = 1;

/// A process the supervisor held, as reported: the first of its executable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Supervised {
    /// Its pid (the thread that made its first supervised call).
    pub pid: u32,
    /// Its executable's path.
    pub exe: String,
    /// Why the stage could not hold it.
    pub why: Why,
}

/// A supervisor thread serving one listener.
pub struct Supervisor {
    seen: Arc<Mutex<BTreeMap<String, Supervised>>>,
}

/// Why supervision could not start.
#[derive(Debug, thiserror::Error)]
pub enum SuperviseError {
    /// The job's segment could not be mapped or read.
    #[error("cannot supervise: {0}")]
    Segment(String),
    /// The thread could not be started.
    #[error("cannot start the supervisor: {0}")]
    Thread(#[from] std::io::Error),
    /// The port to the task that installs the filter failed.
    #[error("the supervisor's port to its task: {0}")]
    Port(std::io::Error),
}

impl Supervisor {
    /// Everything a supervisor needs but the listener (the job's segment mapped, its
    /// rules read): a supervisor in a process of its own says it is ready only once this
    /// succeeded, so that no listener is handed to one that cannot serve it. Calls are
    /// admitted through the job's segment at `segment`; one line per executable first
    /// held is appended to `log` when given.
    pub fn prepare(
        segment: &Path,
        uid: u32,
        log: Option<PathBuf>,
    ) -> Result<Prepared, SuperviseError> {
        let seg = SegmentFile::open(segment.to_owned())
            .map_err(|e| SuperviseError::Segment(format!("{e:#}")))?;
        let judge = Judge::new(seg, uid).map_err(SuperviseError::Segment)?;
        Ok(Prepared {
            judge,
            log,
            exempt: None,
        })
    }

    /// The processes held so far, one per executable.
    pub fn supervised(&self) -> Vec<Supervised> {
        self.seen
            .lock()
            .map(|s| s.values().cloned().collect())
            .unwrap_or_default()
    }
}

/// A supervisor ready to serve a listener ([`Supervisor::prepare`]).
pub struct Prepared {
    judge: Judge,
    log: Option<PathBuf>,
    exempt: Option<PathBuf>,
}

impl Prepared {
    /// Lets through uncounted the calls of processes running `exe`: the launcher's own
    /// code between the filter's installation and the program's exec (slurmstepd, when
    /// the Slurm plugin installs the filter in a task), which is not the job's.
    pub fn exempt(mut self, exe: PathBuf) -> Prepared {
        self.exempt = Some(exe);
        self
    }

    /// Serves the listener a child will send to `port` once it installed the filter, on a
    /// thread of its own started now, before the child is: the child's own calls between
    /// the filter and its exec are supervised (a failed exec reports its errno to the
    /// launcher with a `write`), so they must be served before the launcher waits for
    /// the exec. The thread gives up when no listener came within `deadline`.
    pub fn start_on(
        self,
        port: ListenerPort,
        deadline: std::time::Duration,
    ) -> Result<Supervisor, SuperviseError> {
        let seen = Arc::new(Mutex::new(BTreeMap::new()));
        let ours = seen.clone();
        std::thread::Builder::new()
            .name("sluice-supervisor".into())
            // Detached: it serves the job's processes until the launcher exits.
            .spawn(move || {
                if let Ok(Some(listener)) = port.receive_within(deadline) {
                    self.serve_with(listener, ours).run();
                }
            })?;
        Ok(Supervisor { seen })
    }

    /// Serves `listener` on the calling thread. A receive does not return once the last
    /// process under the filter has gone: whoever calls this watches the listener for
    /// its hang-up (`POLLHUP`) on another thread.
    pub fn serve(self, listener: OwnedFd) {
        self.serve_with(listener, Arc::default()).run();
    }

    fn serve_with(
        self,
        listener: OwnedFd,
        seen: Arc<Mutex<BTreeMap<String, Supervised>>>,
    ) -> Serve {
        // The supervisor answers each call at once, and the program waits for nothing
        // else: the kernel may then switch straight from one to the other on the same
        // processor (Linux 6.6; a few times faster than a wake-up through the scheduler).
        // SAFETY: the listener and an integer flag argument.
        unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS,
                SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP,
            )
        };
        Serve {
            listener,
            judge: self.judge,
            procs: HashMap::new(),
            ts: ThreadState::new(),
            seen,
            log: self.log,
            exempt: self.exempt,
        }
    }
}

/// The job's rules, compiled per executable name (rules may name `exe=`).
struct Judge {
    seg: SegmentFile,
    config: StageConfig,
    text: String,
    generation: u64,
    uid: u32,
    mounts: Option<Vec<String>>,
    compiled: HashMap<String, Compiled>,
}

impl Judge {
    fn new(seg: SegmentFile, uid: u32) -> Result<Judge, String> {
        let (text, generation) = seg.segment().config().map_err(|e| e.to_string())?;
        let config = StageConfig::from_text(&text).map_err(|e| e.to_string())?;
        let mounts = match (config.mounts.is_empty(), config.fs_types.is_empty()) {
            (true, true) => None,
            _ => {
                let mut m = config.mounts.clone();
                let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
                m.extend(mounts_of_types(&info, &config.fs_types));
                Some(m)
            }
        };
        Ok(Judge {
            seg,
            config,
            text,
            generation,
            uid,
            mounts,
            compiled: HashMap::new(),
        })
    }

    /// The rules in force for a process whose executable is named `exe`.
    fn compiled(&mut self, exe: &str) -> Result<&Compiled, String> {
        let segment = self.seg.segment();
        if segment.config_generation() != self.generation {
            // A controller changed the job's rules: compile them again as each
            // executable next needs them (the places stay those of the start, as the
            // stage keeps them).
            let (text, generation) = segment.config().map_err(|e| e.to_string())?;
            let config = StageConfig::from_text(&text).map_err(|e| e.to_string())?;
            self.config.rules = config.rules;
            self.config.pools = config.pools;
            self.config.watches = config.watches;
            self.config.costs = config.costs;
            self.text = text;
            self.generation = generation;
            self.compiled.clear();
        }
        if !self.compiled.contains_key(exe) {
            let id = Identity {
                job: self.config.job.clone(),
                uid: self.uid,
                user: self.config.user.clone(),
                exe: exe.to_owned(),
            };
            let c = &self.config;
            let mut compiled =
                Compiled::new(&c.rules, &c.pools, &c.watches, &id, self.mounts.as_deref())
                    .map_err(|e| e.to_string())?;
            compiled.set_latency_sample(latency_sample_of(&self.text));
            compiled.set_costs(&c.costs);
            self.compiled.insert(exe.to_owned(), compiled);
        }
        Ok(&self.compiled[exe])
    }
}

/// What the supervisor knows of one thread that made calls.
struct Proc {
    /// Its memory; reads return nothing once it execs (a new memory) or dies.
    mem: File,
    /// `None`: it carries the stage, which holds its calls, or it is exempt.
    held: Option<Held>,
    /// It runs the exempt executable ([`Prepared::exempt`]).
    exempt: bool,
}

struct Held {
    /// The executable's file name, for rules that name `exe=`.
    name: String,
}

/// At most this many threads are remembered; past it the table starts afresh (each
/// costs a descriptor, and threads that ended are not otherwise noticed).
const MAX_PROCS: usize = 256;

struct Serve {
    listener: OwnedFd,
    judge: Judge,
    procs: HashMap<u32, Proc>,
    ts: ThreadState,
    seen: Arc<Mutex<BTreeMap<String, Supervised>>>,
    log: Option<PathBuf>,
    /// Processes running this executable are let through uncounted ([`Prepared::exempt`]).
    exempt: Option<PathBuf>,
}

/// What became of one notification's target.
enum Target {
    /// An absolute, lexically normal path.
    Path(usize),
    /// Its target could not be read (a bad address, a descriptor not open).
    Unjudged,
    /// A descriptor that names no place of the file system (a pipe, a socket, an
    /// anonymous inode).
    Elsewhere,
    /// The thread is gone, or has exec'ed since its table entry was made.
    Stale,
}

impl Serve {
    /// Receives and answers notifications for as long as the launcher runs. A blocking
    /// receive, without a poll before it: one system call and one wake-up per call. The
    /// thread ends with the launcher (a receive does not return when the last process
    /// under the filter has gone).
    fn run(&mut self) {
        loop {
            // SAFETY: seccomp_notif is plain data; the kernel requires it zeroed.
            let mut req: libc::seccomp_notif = unsafe { std::mem::zeroed() };
            // SAFETY: the listener and a struct of the size the ioctl names.
            let r = unsafe {
                libc::ioctl(
                    self.listener.as_raw_fd(),
                    libc::SECCOMP_IOCTL_NOTIF_RECV,
                    &mut req,
                )
            };
            if r < 0 {
                match errno() {
                    // Interrupted, or the caller was gone before we received it.
                    libc::EINTR | libc::ENOENT => continue,
                    _ => return,
                }
            }
            self.handle(&req);
            self.answer(req.id);
        }
    }

    /// Judges, admits and counts one call (everything but the answer).
    fn handle(&mut self, req: &libc::seccomp_notif) {
        let args = &req.data.args;
        let Some((op, named, moves)) = call_of(req.data.nr as i64, args) else {
            return;
        };
        let mut buf = [0u8; PATH_MAX];
        let mut target = Target::Stale;
        for _ in 0..2 {
            let Some(p) = self.proc_of(req.pid) else {
                return;
            };
            if p.held.is_none() {
                if p.exempt {
                    // Not remembered: the exempt process is about to exec the program.
                    self.procs.remove(&req.pid);
                }
                return;
            }
            let null_is_fd = req.data.nr as i64 == libc::SYS_utimensat;
            target = read_target(&p.mem, req.pid, named, args, null_is_fd, &mut buf);
            if !matches!(target, Target::Stale) {
                break;
            }
            self.procs.remove(&req.pid);
        }
        if !self.valid(req.id) {
            return;
        }
        let Some(name) = self
            .procs
            .get(&req.pid)
            .and_then(|p| p.held.as_ref())
            .map(|h| h.name.clone())
        else {
            return;
        };
        let segment = self.judge.seg.segment() as *const sluice_core::segment::Segment;
        // SAFETY: the segment is mapped for as long as the judge lives, which is longer
        // than this call; the reference is taken apart from the judge's borrow only.
        let segment = unsafe { &*segment };
        let n = match target {
            Target::Path(n) => n,
            Target::Elsewhere => {
                Gate::count_unmanaged(segment, &mut self.ts);
                return;
            }
            Target::Unjudged | Target::Stale => {
                Gate::count_unjudged(segment, &mut self.ts);
                return;
            }
        };
        let Ok(compiled) = self.judge.compiled(&name) else {
            Gate::count_unjudged(segment, &mut self.ts);
            return;
        };
        let place = compiled.places().lookup(&buf[..n]);
        let gate = Gate { segment, compiled };
        if !compiled.places().is_managed(place) {
            gate.unmanaged(&mut self.ts);
            return;
        }
        let bytes = match moves {
            Moves::Nothing => 0,
            Moves::Count(c) => args[c].min(MAX_IO),
            Moves::Iov(iov, cnt) => {
                // Read only now, for a managed descriptor: an unmanaged `writev` pays
                // no second read of the program's memory. What was read is the
                // thread's own only if its call still stands.
                let mem = self.procs.get(&req.pid).map(|p| &p.mem);
                let len = mem.map_or(0, |m| iov_len(m, args[iov], args[cnt]));
                if !id_valid(&self.listener, req.id) {
                    return;
                }
                len
            }
        };
        // As the stage charges them: a write the bytes it asks to write before it runs;
        // a read up to the burst before, the rest after. The supervisor does not see
        // what the call moved (the kernel carries it on), so both settle on the count
        // asked: a read cut short by the end of a file is charged in full.
        let size = match op {
            Op::Read => Size::UpTo(bytes),
            _ => Size::Known(bytes),
        };
        let ticket = gate.admit(&mut self.ts, &MonotonicClock, op, place, size);
        gate.finish(&mut self.ts, &MonotonicClock, ticket, bytes);
    }

    /// The thread `tid`'s entry, made on its first call (or after it exec'ed).
    fn proc_of(&mut self, tid: u32) -> Option<&Proc> {
        if !self.procs.contains_key(&tid) {
            if self.procs.len() >= MAX_PROCS {
                self.procs.clear();
            }
            let mem = File::open(format!("/proc/{tid}/mem")).ok()?;
            let exempt = self.exempt.as_deref().is_some_and(|e| {
                std::fs::read_link(format!("/proc/{tid}/exe")).is_ok_and(|exe| exe == e)
            });
            let held = if exempt { None } else { self.held(tid) };
            self.procs.insert(tid, Proc { mem, held, exempt });
        }
        self.procs.get(&tid)
    }

    /// Whether the supervisor holds `tid`'s calls: unless it carries the stage.
    fn held(&mut self, tid: u32) -> Option<Held> {
        let exe_link = format!("/proc/{tid}/exe");
        let exe = std::fs::read_link(&exe_link)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let why = match inspect(Path::new(&exe_link)) {
            Ok(Some(why)) => why,
            _ if carries_stage(tid) => return None,
            _ => Why::ClearedEnv,
        };
        let name = exe.rsplit('/').next().unwrap_or(&exe).to_owned();
        let first = self.seen.lock().map(|mut seen| {
            let new = !seen.contains_key(&exe);
            seen.entry(exe.clone()).or_insert(Supervised {
                pid: tid,
                exe: exe.clone(),
                why,
            });
            new
        });
        if first.unwrap_or(false)
            && let Some(log) = &self.log
            && let Ok(mut f) = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(log)
        {
            let _ = writeln!(
                f,
                "sluice supervisor: job '{}': pid {tid} runs {exe} ({why}): its file calls are held through seccomp",
                self.judge.config.job
            );
        }
        Some(Held { name })
    }

    /// Whether notification `id` still stands: its thread is alive and waiting in that
    /// call, so what was read of it is its own (its pid was not reused meanwhile).
    fn valid(&self, id: u64) -> bool {
        id_valid(&self.listener, id)
    }

    /// Lets the call run as the program made it.
    fn answer(&self, id: u64) {
        let mut resp = libc::seccomp_notif_resp {
            id,
            val: 0,
            error: 0,
            flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
        };
        // SAFETY: the listener and a response struct. ENOENT (the caller was killed or
        // interrupted meanwhile) needs nothing more.
        unsafe {
            libc::ioctl(
                self.listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_SEND,
                &mut resp,
            )
        };
    }
}

/// Whether notification `id` of `listener` still stands ([`Serve::valid`]).
fn id_valid(listener: &OwnedFd, id: u64) -> bool {
    // SAFETY: the listener and a u64, as the ioctl names.
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &id,
        ) == 0
    }
}

/// Whether thread `tid` runs with the stage and a segment in its environment.
fn carries_stage(tid: u32) -> bool {
    let Ok(env) = std::fs::read(format!("/proc/{tid}/environ")) else {
        return false;
    };
    let var = |name: &[u8]| {
        env.split(|&b| b == 0)
            .find_map(|kv| kv.strip_prefix(name).filter(|v| !v.is_empty()))
    };
    var(b"LD_PRELOAD=").is_some_and(|v| v.windows(16).any(|w| w == b"libsluice_stage."))
        && var(b"SLUICE_SEGMENT=").is_some()
}

/// Reads the target of a call of `tid` into `out` as an absolute, normal path.
/// A null path is a bad address (EFAULT), except where `null_is_fd` (`utimensat`).
fn read_target(
    mem: &File,
    tid: u32,
    named: Named,
    args: &[u64; 6],
    null_is_fd: bool,
    out: &mut [u8; PATH_MAX],
) -> Target {
    let (dirfd, addr) = match named {
        Named::Path(p) => (libc::AT_FDCWD, args[p]),
        Named::At(d, p) => (args[d] as i32, args[p]),
        Named::Fd(d) => return read_fd_target(tid, args[d] as i32, out),
    };
    let mut path = [0u8; PATH_MAX];
    let len = match addr {
        0 if null_is_fd => 0,
        0 => return Target::Unjudged,
        _ => match read_string(mem, addr, &mut path) {
            Ok(n) => n,
            Err(t) => return t,
        },
    };
    let rel = &path[..len];
    if rel.first() == Some(&b'/') {
        return resolve_into(out, b"/", rel).map_or(Target::Unjudged, Target::Path);
    }
    let base = match dirfd {
        libc::AT_FDCWD => format!("/proc/{tid}/cwd"),
        fd => format!("/proc/{tid}/fd/{fd}"),
    };
    let Ok(base) = std::fs::read_link(&base) else {
        return Target::Unjudged;
    };
    let base = base.as_os_str().as_encoded_bytes();
    if base.first() != Some(&b'/') {
        // A pipe, a socket, an anonymous inode: not a place of the file system.
        out[..5].copy_from_slice(b"/proc");
        return Target::Path(5);
    }
    resolve_into(out, base, rel).map_or(Target::Unjudged, Target::Path)
}

/// Reads the path descriptor `fd` of thread `tid` was opened at into `out`, as the
/// thread's descriptor table names it now (`/proc/TID/fd/FD`).
///
/// Read at every call, never remembered: the table is read while the call is stopped,
/// so a descriptor closed, `dup2`ed over, replaced by `close_range`, received over a
/// socket or reused by a later `open` is judged by what it names now, without the
/// supervisor having to see any of the calls that changed it. A remembered answer would
/// need a check per call all the same (the file's identity through the same `/proc`
/// entry), which costs what this read costs.
fn read_fd_target(tid: u32, fd: i32, out: &mut [u8; PATH_MAX]) -> Target {
    if fd < 0 {
        return Target::Unjudged;
    }
    let mut link = [0u8; 64];
    let len = {
        let mut w = &mut link[..63];
        if write!(w, "/proc/{tid}/fd/{fd}").is_err() {
            return Target::Unjudged;
        }
        63 - w.len()
    };
    link[len] = 0;
    // SAFETY: a NUL-terminated path and a buffer of the length given.
    let n = unsafe { libc::readlink(link.as_ptr().cast(), out.as_mut_ptr().cast(), PATH_MAX) };
    match n {
        n if n < 0 || n as usize >= PATH_MAX => Target::Unjudged,
        _ if out[0] != b'/' => Target::Elsewhere,
        n => Target::Path(n as usize),
    }
}

/// The bytes the `cnt` entries of the `iovec` array at `addr` of the memory `mem` ask to
/// move (0 when it cannot be read, or `cnt` is past `IOV_MAX`: the call then fails).
fn iov_len(mem: &File, addr: u64, cnt: u64) -> u64 {
    const IOV_MAX: u64 = 1024;
    if cnt == 0 || cnt > IOV_MAX {
        return 0;
    }
    let mut raw = [0u8; IOV_MAX as usize * 16];
    let want = &mut raw[..cnt as usize * 16];
    if mem.read_exact_at(want, addr).is_err() {
        return 0;
    }
    want.chunks_exact(16)
        .map(|v| u64::from_ne_bytes(v[8..16].try_into().unwrap_or_default()))
        .fold(0u64, u64::saturating_add)
        .min(MAX_IO)
}

/// Reads the NUL-terminated string at `addr` of the memory `mem`, a page at a time (a
/// string that ends just before an unmapped page is read whole).
fn read_string(mem: &File, addr: u64, out: &mut [u8; PATH_MAX]) -> Result<usize, Target> {
    let mut len = 0;
    while len < PATH_MAX {
        let at = addr + len as u64;
        let page_left = 4096 - (at % 4096) as usize;
        let want = page_left.min(PATH_MAX - len);
        match mem.read_at(&mut out[len..len + want], at) {
            Ok(0) if len == 0 => return Err(Target::Stale),
            Ok(0) => return Err(Target::Unjudged),
            Ok(n) => {
                if let Some(end) = out[len..len + n].iter().position(|&b| b == 0) {
                    return Ok(len + end);
                }
                len += n;
            }
            Err(_) => return Err(Target::Unjudged),
        }
    }
    Err(Target::Unjudged)
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}
