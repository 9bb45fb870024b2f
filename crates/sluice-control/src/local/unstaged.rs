//! Which processes of each attached job run without the stage, and which use io_uring: what
//! `sluice jobs`, the metrics and the log name (docs/limitations.md, "What the local
//! controller sees").
//!
//! The stage is socket-free and thread-free, so it cannot tell anyone it is missing: the
//! local controller looks instead, in `/proc`, once per interval, outside its lock. A
//! process belongs to a job when it descends from one of the job's launchers (`sluice run`,
//! slurmstepd), or when its environment names the job's segment (`sluice attach`'s exports;
//! read only for processes of the job's user). A process of a job is fine when the stage is
//! mapped in it (`/proc/PID/maps`); otherwise it is *held* when it runs under a seccomp
//! filter with the supervisor's mark (`Seccomp: 2`, `SLUICE_SUPERVISED=1`), else *unheld*;
//! why comes from its executable (no interpreter: static; `.go.buildinfo`: Go), from the
//! kernel's secure-execution flag (`AT_SECURE`: setuid, setgid or file capabilities, for
//! which the loader drops `LD_PRELOAD`), or else a dynamic program whose environment lost
//! the stage (cleared-env).
//!
//! Cost: each interval reads `/proc`'s directory and every process's `/proc/PID/stat`
//! (the process tree, and whether a pid exec'd or was reused), and the descriptor table of
//! each process of a job (io_uring). A process is judged once per executable it runs (its
//! maps, status, auxv, environment and ELF headers), twice when it is outside the stage (a
//! process caught between its exec and its loader's preload is judged again next interval
//! before it is named). At most [`MAX_JUDGED`] processes are judged per interval; the rest
//! wait for the next.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use crate::proto::OutsideStage;

/// Processes judged (maps, status, environment, ELF) per interval at most: a burst of new
/// processes is judged over the next intervals rather than in one long scan.
pub const MAX_JUDGED: usize = 256;
/// Descriptors of one process looked at per interval for an io_uring.
const MAX_FDS: usize = 1024;
/// Entries per job reported at most (executables × reasons).
pub const MAX_ENTRIES: usize = 32;
/// Parents followed at most.
const MAX_DEPTH: usize = 64;
/// The stage's file name, as it appears in the maps of a process that carries it.
const STAGE: &[u8] = b"libsluice_stage";
/// `AT_SECURE` in the auxiliary vector: the loader runs in secure-execution mode.
const AT_SECURE: u64 = 23;

/// A job as the scan needs it.
#[derive(Clone, Debug)]
pub struct Target {
    /// The job's id.
    pub job: String,
    /// Its user.
    pub uid: u32,
    /// Its launchers' pids.
    pub launchers: Vec<u32>,
    /// Its segment's path, as `SLUICE_SEGMENT` names it.
    pub segment: PathBuf,
}

/// What a process of a job was judged to be.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Class {
    /// Not judged yet.
    Unjudged,
    /// A launcher, a supervisor or a zombie: not a program of the job.
    Ignored,
    /// The stage holds it.
    Staged,
    /// Outside the stage; `seen` times judged so (named from the second).
    Outside {
        exe: String,
        why: &'static str,
        held: bool,
        seen: u8,
    },
}

/// One process as last seen.
#[derive(Debug)]
struct Proc {
    /// Its start time and command name, which change when the pid is reused or it execs.
    start: u64,
    comm: Vec<u8>,
    /// The job it belongs to; `None`: none of the jobs attached when it was first seen.
    job: Option<String>,
    class: Class,
    /// An io_uring descriptor was seen in it.
    ring: bool,
}

/// `/proc/PID/stat`'s fields the scan uses.
struct Stat {
    comm: Vec<u8>,
    state: u8,
    ppid: u32,
    start: u64,
}

/// The scan's memory from one interval to the next.
#[derive(Default)]
pub struct Scanner {
    procs: HashMap<u32, Proc>,
    /// By job: the executables, reasons and whether held, already logged.
    logged: HashMap<String, HashSet<(String, &'static str, bool)>>,
    buf: Vec<u8>,
}

impl Scanner {
    /// Looks at every process of the node once: for each job of `targets`, its processes
    /// outside the stage and those using io_uring, one entry per executable and reason.
    /// Logs each executable once per job, when it is first named.
    pub fn scan(&mut self, targets: &[Target]) -> BTreeMap<String, Vec<OutsideStage>> {
        if targets.is_empty() {
            // No job, nothing to look for: a node between jobs reads nothing.
            self.procs.clear();
            self.logged.clear();
            return BTreeMap::new();
        }
        let mut present: HashMap<u32, Stat> = HashMap::new();
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for entry in dir.flatten() {
                let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                    continue;
                };
                if let Some(stat) = read_stat(pid, &mut self.buf) {
                    present.insert(pid, stat);
                }
            }
        }
        self.procs.retain(|pid, p| {
            present
                .get(pid)
                .is_some_and(|s| s.start == p.start && s.comm == p.comm)
        });
        let launcher_of: HashMap<u32, usize> = targets
            .iter()
            .enumerate()
            .flat_map(|(i, t)| t.launchers.iter().map(move |&p| (p, i)))
            .collect();
        let mut judged = 0;
        let mut pids: Vec<u32> = present.keys().copied().collect();
        pids.sort_unstable();
        for &pid in &pids {
            let stat = &present[&pid];
            if !self.procs.contains_key(&pid) {
                let job = descent(pid, &present, &launcher_of)
                    .or_else(|| by_environment(pid, targets, &mut self.buf));
                let class = match job {
                    Some(i) if targets[i].launchers.contains(&pid) => Class::Ignored,
                    _ => Class::Unjudged,
                };
                self.procs.insert(
                    pid,
                    Proc {
                        start: stat.start,
                        comm: stat.comm.clone(),
                        job: job.map(|i| targets[i].job.clone()),
                        class,
                        ring: false,
                    },
                );
            }
            let Some(p) = self.procs.get_mut(&pid) else {
                continue;
            };
            if p.job.is_none() || stat.state == b'Z' {
                continue;
            }
            let again = match &p.class {
                Class::Unjudged => true,
                Class::Outside { seen, .. } => *seen < 2,
                _ => false,
            };
            if again && judged < MAX_JUDGED {
                judged += 1;
                if let Some(class) = judge(pid, &mut self.buf) {
                    p.class = match (class, &p.class) {
                        (
                            Class::Outside { exe, why, held, .. },
                            Class::Outside {
                                exe: e,
                                why: w,
                                held: h,
                                seen,
                            },
                        ) if (&exe, why, held) == (e, *w, *h) => Class::Outside {
                            exe,
                            why,
                            held,
                            seen: seen + 1,
                        },
                        (c, _) => c,
                    };
                }
            }
            if !p.ring && p.class != Class::Ignored {
                p.ring = has_ring(pid);
            }
        }
        let known: HashSet<&str> = targets.iter().map(|t| t.job.as_str()).collect();
        self.logged.retain(|job, _| known.contains(job.as_str()));
        self.report(&pids)
    }

    /// Processes of the node the last scan read (none when no job is attached).
    pub fn processes(&self) -> usize {
        self.procs.len()
    }

    /// The entries of every job, from what the processes were judged; logs the new ones.
    fn report(&mut self, pids: &[u32]) -> BTreeMap<String, Vec<OutsideStage>> {
        // By job, by (exe, why, held): the lowest pid and the processes.
        type Key = (String, &'static str, bool);
        let mut found: BTreeMap<String, BTreeMap<Key, (u32, u32)>> = BTreeMap::new();
        for &pid in pids {
            let Some(p) = self.procs.get(&pid) else {
                continue;
            };
            let Some(job) = &p.job else { continue };
            let mut add = |key: Key| {
                let e = found
                    .entry(job.clone())
                    .or_default()
                    .entry(key)
                    .or_insert((pid, 0));
                e.1 += 1;
            };
            if let Class::Outside {
                exe,
                why,
                held,
                seen: 2..,
            } = &p.class
            {
                add((exe.clone(), *why, *held));
            }
            if p.ring {
                add((exe_of(pid), "io_uring", false));
            }
        }
        let mut out = BTreeMap::new();
        for (job, entries) in found {
            let logged = self.logged.entry(job.clone()).or_default();
            let list: Vec<OutsideStage> = entries
                .into_iter()
                .take(MAX_ENTRIES)
                .map(|((exe, why, held), (pid, processes))| {
                    if logged.insert((exe.clone(), why, held)) {
                        log_first(&job, pid, &exe, why, held);
                    }
                    OutsideStage {
                        pid,
                        exe,
                        why: why.to_owned(),
                        held,
                        processes,
                        node: String::new(),
                    }
                })
                .collect();
            out.insert(job, list);
        }
        out
    }
}

/// Adds `found` to the executables and reasons of `list` (the most processes seen at
/// once of each), up to [`MAX_ENTRIES`]: what a job's report names.
pub fn merge(list: &mut Vec<OutsideStage>, found: OutsideStage) {
    let same = |s: &OutsideStage| (&s.exe, &s.why, s.held) == (&found.exe, &found.why, found.held);
    match list.iter().position(same) {
        Some(i) => list[i].processes = list[i].processes.max(found.processes),
        None if list.len() < MAX_ENTRIES => list.push(found),
        None => {}
    }
}

/// Says once per job and executable what the scan found.
fn log_first(job: &str, pid: u32, exe: &str, why: &str, held: bool) {
    match (why, held) {
        ("io_uring", _) => tracing::warn!(
            job = %job, pid, exe = %exe,
            "uses io_uring: the requests that go through its ring are not held \
             (sluice run --io-uring deny refuses it)"
        ),
        (_, true) => tracing::info!(
            job = %job, pid, exe = %exe, why = %why,
            "runs without the stage, held by a supervisor"
        ),
        (_, false) => tracing::warn!(
            job = %job, pid, exe = %exe, why = %why,
            "runs without the stage, unheld: its file calls pass every limit"
        ),
    }
}

/// The job whose launcher `pid` is or descends from.
fn descent(
    pid: u32,
    present: &HashMap<u32, Stat>,
    launcher_of: &HashMap<u32, usize>,
) -> Option<usize> {
    let mut at = pid;
    for _ in 0..MAX_DEPTH {
        if let Some(&i) = launcher_of.get(&at) {
            return Some(i);
        }
        match present.get(&at) {
            Some(s) if s.ppid > 1 => at = s.ppid,
            _ => return None,
        }
    }
    None
}

/// The job whose segment `SLUICE_SEGMENT` names in the environment of `pid`, when `pid`
/// runs as that job's user (`sluice attach`'s processes descend from no launcher).
fn by_environment(pid: u32, targets: &[Target], buf: &mut Vec<u8>) -> Option<usize> {
    let owner = std::fs::metadata(format!("/proc/{pid}")).ok()?.uid();
    if !targets.iter().any(|t| t.uid == owner) {
        return None;
    }
    read_into(&format!("/proc/{pid}/environ"), buf, 1 << 20)?;
    let segment = env_value(buf, b"SLUICE_SEGMENT=")?;
    targets
        .iter()
        .position(|t| t.uid == owner && t.segment.as_os_str().as_encoded_bytes() == segment)
}

/// What process `pid` is, as far as the stage goes; `None` when it went meanwhile.
fn judge(pid: u32, buf: &mut Vec<u8>) -> Option<Class> {
    let exe = exe_of(pid);
    // The launcher's child before its exec, and `sluice supervise`: sluice's own.
    if Path::new(&exe).file_name().is_some_and(|n| n == "sluice") {
        return Some(Class::Ignored);
    }
    read_into(&format!("/proc/{pid}/maps"), buf, 64 << 20)?;
    if buf.windows(STAGE.len()).any(|w| w == STAGE) {
        return Some(Class::Staged);
    }
    read_into(&format!("/proc/{pid}/environ"), buf, 1 << 20)?;
    let marked = env_value(buf, b"SLUICE_SUPERVISED=") == Some(b"1".as_slice());
    read_into(&format!("/proc/{pid}/status"), buf, 1 << 16)?;
    let filtered = String::from_utf8_lossy(buf)
        .lines()
        .find_map(|l| l.strip_prefix("Seccomp:"))
        .is_some_and(|v| v.trim() == "2");
    read_into(&format!("/proc/{pid}/auxv"), buf, 1 << 12)?;
    let secure = buf.chunks_exact(16).any(|pair| {
        let word = |b: &[u8]| u64::from_ne_bytes(b.try_into().unwrap_or_default());
        word(&pair[..8]) == AT_SECURE && word(&pair[8..]) != 0
    });
    let why = match crate::supervise::inspect(Path::new(&format!("/proc/{pid}/exe"))) {
        _ if secure => "setuid",
        Ok(Some(w)) => w.name(),
        // A dynamic program without the stage: its environment lost it.
        Ok(None) => "cleared-env",
        Err(_) => return None,
    };
    Some(Class::Outside {
        exe,
        why,
        held: filtered && marked,
        seen: 1,
    })
}

/// Whether one of the first [`MAX_FDS`] descriptors of `pid` is an io_uring.
fn has_ring(pid: u32) -> bool {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    dir.flatten().take(MAX_FDS).any(|fd| {
        std::fs::read_link(fd.path())
            .is_ok_and(|target| target.as_os_str().as_encoded_bytes() == b"anon_inode:[io_uring]")
    })
}

/// The executable of `pid`, as the kernel names it (empty when it cannot be read).
fn exe_of(pid: u32) -> String {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The fields of `/proc/PID/stat` the scan uses.
fn read_stat(pid: u32, buf: &mut Vec<u8>) -> Option<Stat> {
    read_into(&format!("/proc/{pid}/stat"), buf, 4096)?;
    // The command name is in parentheses and may hold anything, spaces and ')' included:
    // the fields that follow start after the last ')'.
    let open = buf.iter().position(|&b| b == b'(')?;
    let close = buf.iter().rposition(|&b| b == b')')?;
    let comm = buf.get(open + 1..close)?.to_vec();
    let rest = std::str::from_utf8(buf.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    let ppid = fields.next()?.parse().ok()?;
    // starttime is the 22nd field; state the 3rd, ppid the 4th.
    let start = fields.nth(17)?.parse().ok()?;
    Some(Stat {
        comm,
        state,
        ppid,
        start,
    })
}

/// Reads at most `max` bytes of `path` into `buf`.
fn read_into(path: &str, buf: &mut Vec<u8>, max: u64) -> Option<()> {
    buf.clear();
    File::open(path).ok()?.take(max).read_to_end(buf).ok()?;
    Some(())
}

/// The value of the variable whose `NAME=` is `prefix` in an environment block.
fn env_value<'a>(environ: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    environ
        .split(|&b| b == 0)
        .find_map(|entry| entry.strip_prefix(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_and_environment_are_read() {
        let mut buf = Vec::new();
        let s = read_stat(std::process::id(), &mut buf).expect("own stat");
        assert!(s.start > 0 && s.ppid > 0);
        let env = b"A=1\0SLUICE_SEGMENT=/dev/shm/x\0SLUICE_SUPERVISED=1\0";
        assert_eq!(
            env_value(env, b"SLUICE_SEGMENT="),
            Some(b"/dev/shm/x".as_slice())
        );
        assert_eq!(env_value(env, b"SLUICE_SUPERVISED="), Some(b"1".as_slice()));
        assert_eq!(env_value(env, b"B="), None);
    }
}
