//! Data jobs for bandwidth experiments: writes or reads of one block size to files of
//! the job's own in a shared directory, in one of three patterns.
//!
//! - [`Pattern::Continuous`]: as fast as allowed, until a volume is moved or a time is up
//!   (SDQoS' IOR runs; AdapTBF's continuous low-priority job).
//! - [`Pattern::Bursty`]: on for a while as fast as allowed, then idle, repeated
//!   (AdapTBF's bursty high-priority jobs).
//! - [`Pattern::Periodic`]: compute (a sleep: the CPU is not what is measured), then an
//!   I/O phase of a fixed volume, repeated (IO-SETS' IOR applications).
//!
//! Every stretch of I/O is recorded as a [`Phase`] with its start and end, which is what
//! IO-SETS' stretch and I/O slowdown are computed from. Calls go to the file system with
//! `O_DIRECT` (an aligned buffer, whole blocks) so that every byte reaches the device when
//! the call returns: a page-cache write would return at memory speed and reach a
//! throttled device later, in the kernel's writeback, where no job is charged for it.
//! Without `direct`, each phase ends with `fdatasync` of the files it wrote, for file
//! systems that refuse `O_DIRECT` (tmpfs).
//!
//! Each thread has its own file, `DIR/data.THREAD`, whose offsets wrap at `file_size`, so
//! that a long run fits a small file system. A read first fills its files (before the
//! clock starts), since a read of a hole never reaches the device.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::PathBuf;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::{Doing as _, IoFailure, fail};
pub use crate::ior::Access;
use crate::load::LoadError;

/// Why a data job (or an IOR-like load, [`crate::ior`]) did not run to its end.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The job as asked cannot run (a block of zero bytes, no volume and no time):
    /// nothing was moved.
    #[error("{0}")]
    Spec(String),
    /// The job's directory is unusable.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A file of the job could not be opened, read or written.
    #[error(transparent)]
    Io(#[from] IoFailure),
    /// A call moved nothing, a buffer could not be had, a thread panicked.
    #[error("{0}")]
    Failed(String),
}

impl crate::error::Failure for DataError {
    fn failed(message: String) -> Self {
        DataError::Failed(message)
    }
}

type Result<T, E = DataError> = std::result::Result<T, E>;

/// What each of a scope's `workers` returned, in their order: the first failure, or a
/// worker that panicked as a failure of its own (`a thread panicked`).
pub(crate) fn joined<T>(
    workers: Vec<std::thread::ScopedJoinHandle<'_, Result<T>>>,
    worker: &str,
) -> Result<Vec<T>> {
    workers
        .into_iter()
        .map(|w| {
            w.join()
                .unwrap_or_else(|_| Err(DataError::Failed(format!("a {worker} panicked"))))
        })
        .collect()
}

/// When a job does its I/O.
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    /// As fast as allowed until `volume` bytes are moved (all threads together) or
    /// `seconds` are up, whichever comes first; at least one of the two is given.
    Continuous {
        /// Bytes to move.
        volume: Option<u64>,
        /// Seconds to run.
        seconds: Option<f64>,
    },
    /// `on` seconds as fast as allowed, then `off` seconds idle, until `seconds` are up.
    Bursty {
        /// Length of a burst.
        on: Duration,
        /// Idle time after each burst.
        off: Duration,
        /// Seconds to run in all.
        seconds: f64,
    },
    /// `iterations` times: compute for `compute`, then move `volume` bytes (all threads
    /// together, split evenly; the phase ends when the last thread is done).
    Periodic {
        /// The compute phase.
        compute: Duration,
        /// Bytes of each I/O phase.
        volume: u64,
        /// Compute-then-I/O iterations.
        iterations: u32,
    },
}

/// What to run.
#[derive(Clone, Debug)]
pub struct DataSpec {
    /// Directory of the job's files (one per job and process: names are fixed).
    pub dir: PathBuf,
    /// Read or write.
    pub access: Access,
    /// Bytes per call; a multiple of 4096 with `direct`.
    pub block: usize,
    /// Threads, each with a file of its own.
    pub threads: usize,
    /// `O_DIRECT`; else `fdatasync` at the end of each phase.
    pub direct: bool,
    /// Offsets in a file wrap at this many bytes (rounded down to whole blocks).
    pub file_size: u64,
    /// When to do I/O.
    pub pattern: Pattern,
    /// Stop this long after the start, mid-phase if need be (an experiment whose
    /// measures end at a time needs nothing after it); `None`: the pattern's own end.
    pub until: Option<Duration>,
}

/// One stretch of I/O: a periodic job's I/O phase, a burst, or a continuous run.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// When it started, in seconds since the UNIX epoch.
    pub start: f64,
    /// When its last call returned, in seconds since the UNIX epoch.
    pub end: f64,
    /// Bytes it moved.
    pub bytes: u64,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct DataReport {
    /// When the clock started, in seconds since the UNIX epoch.
    pub started: f64,
    /// Bytes moved in each whole second from `started`.
    pub per_second: Vec<u64>,
    /// Every stretch of I/O.
    pub phases: Vec<Phase>,
    /// When `until` stopped the run before its pattern's end, in seconds since the UNIX
    /// epoch; `None` when the pattern ran to its end.
    pub stopped: Option<f64>,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A page-aligned buffer, as `O_DIRECT` requires.
struct Aligned {
    ptr: *mut u8,
    len: usize,
}

impl Aligned {
    fn new(len: usize) -> Result<Aligned> {
        let layout = std::alloc::Layout::from_size_align(len.max(1), 4096)
            .map_err(|e| DataError::Spec(format!("a buffer of {len} bytes: {e}")))?;
        // SAFETY: the layout has a non-zero size; the memory is freed in Drop with the
        // same layout.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            fail!("cannot allocate a buffer of {len} bytes");
        }
        // SAFETY: `ptr` is valid for `len` bytes, written only through this buffer.
        unsafe { std::ptr::write_bytes(ptr, 0x5a, len) };
        Ok(Aligned { ptr, len })
    }

    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is valid for `len` bytes and borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        if let Ok(layout) = std::alloc::Layout::from_size_align(self.len.max(1), 4096) {
            // SAFETY: allocated in `new` with this layout.
            unsafe { std::alloc::dealloc(self.ptr, layout) };
        }
    }
}

/// One thread's file and where its next call goes.
struct Cursor {
    file: File,
    at: u64,
    wrap: u64,
    path: PathBuf,
}

impl DataSpec {
    fn path(&self, thread: usize) -> PathBuf {
        self.dir.join(format!("data.{thread}"))
    }

    fn wrap(&self) -> u64 {
        let block = self.block as u64;
        (self.file_size / block).max(1) * block
    }

    fn open(&self, thread: usize) -> Result<Cursor> {
        let path = self.path(thread);
        let mut options = OpenOptions::new();
        match self.access {
            Access::Read => options.read(true),
            Access::Write => options.write(true).create(true).truncate(false),
        };
        if self.direct {
            options.custom_flags(libc::O_DIRECT);
        }
        let file = options
            .open(&path)
            .doing(|| format!("open {}", path.display()))?;
        Ok(Cursor {
            file,
            at: 0,
            wrap: self.wrap(),
            path,
        })
    }

    /// Fills the files a read will read, with real blocks.
    fn prepare(&self) -> Result<()> {
        let block = Aligned::new(self.block);
        let mut block = block?;
        for t in 0..self.threads.max(1) {
            let path = self.path(t);
            let mut fill = || -> std::io::Result<()> {
                let file = OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&path)?;
                let mut at = file.metadata()?.len() / self.block as u64 * self.block as u64;
                while at < self.wrap() {
                    file.write_all_at(block.bytes(), at)?;
                    at += self.block as u64;
                }
                file.sync_data()
            };
            fill().doing(|| format!("fill {} for reading", path.display()))?;
        }
        Ok(())
    }
}

impl Cursor {
    /// One call of a whole block; the bytes it moved.
    fn call(&mut self, access: Access, buf: &mut [u8]) -> Result<u64> {
        let n = match access {
            Access::Read => self.file.read_at(buf, self.at),
            Access::Write => self.file.write_at(buf, self.at),
        }
        .doing(|| {
            format!(
                "move a block of {} at byte {}",
                self.path.display(),
                self.at
            )
        })?;
        if n == 0 {
            fail!("{}: nothing moved at byte {}", self.path.display(), self.at);
        }
        self.at = (self.at + n as u64) % self.wrap;
        Ok(n as u64)
    }
}

/// The shared state of a run's threads.
struct Shared<'a> {
    spec: &'a DataSpec,
    bytes: AtomicU64,
    /// Set when a thread fails, so that the others stop at their next call.
    failed: AtomicBool,
    barrier: Barrier,
    /// Bytes claimed so far by `Continuous { volume }` threads.
    claimed: AtomicU64,
    started: Instant,
    /// `started + until`.
    deadline: Option<Instant>,
}

impl Shared<'_> {
    /// Moves blocks until `more()` says stop; the bytes moved.
    fn io(&self, c: &mut Cursor, buf: &mut Aligned, more: &mut dyn FnMut() -> bool) -> Result<u64> {
        let mut moved = 0;
        while !self.failed.load(Ordering::Relaxed) && !self.past_deadline() && more() {
            let n = c.call(self.spec.access, buf.bytes())?;
            moved += n;
            self.bytes.fetch_add(n, Ordering::Relaxed);
        }
        if !self.spec.direct && self.spec.access == Access::Write {
            c.file
                .sync_data()
                .doing(|| format!("sync {}", c.path.display()))?;
        }
        Ok(moved)
    }

    fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// The end of a stretch that would end at `end`, or at the deadline if sooner.
    fn cut(&self, end: Instant) -> Instant {
        self.deadline.map_or(end, |d| end.min(d))
    }

    /// One thread's whole run: its stretches of I/O as (start, end, bytes), in seconds
    /// from `started`.
    fn thread(&self, t: usize) -> Result<Vec<(f64, f64, u64)>> {
        let mut c = self.spec.open(t)?;
        let mut buf = Aligned::new(self.spec.block)?;
        let block = self.spec.block as u64;
        let since = |i: Instant| i.duration_since(self.started).as_secs_f64();
        let mut phases = Vec::new();
        match &self.spec.pattern {
            Pattern::Continuous { volume, seconds } => {
                let deadline = seconds.map(|s| self.started + Duration::from_secs_f64(s));
                let begun = Instant::now();
                let moved = self.io(&mut c, &mut buf, &mut || {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return false;
                    }
                    // Threads claim blocks from the one volume, so that it is moved
                    // exactly whatever their speeds.
                    volume.is_none_or(|v| self.claimed.fetch_add(block, Ordering::Relaxed) < v)
                })?;
                phases.push((since(begun), since(Instant::now()), moved));
            }
            Pattern::Bursty { on, off, seconds } => {
                let end = self.cut(self.started + Duration::from_secs_f64(*seconds));
                let mut next = self.started;
                while next < end {
                    let stop = (next + *on).min(end);
                    let begun = Instant::now();
                    let moved = self.io(&mut c, &mut buf, &mut || Instant::now() < stop)?;
                    phases.push((since(begun), since(Instant::now()), moved));
                    next = stop + *off;
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                }
            }
            Pattern::Periodic {
                compute,
                volume,
                iterations,
            } => {
                let n = self.spec.threads.max(1) as u64;
                // This thread's whole blocks of each phase.
                let blocks = (volume / block).div_ceil(n);
                for _ in 0..*iterations {
                    // Past the deadline every thread still goes round (moving nothing),
                    // so that all meet at every barrier: none decides alone to leave.
                    let until = self.cut(Instant::now() + *compute);
                    std::thread::sleep(until.saturating_duration_since(Instant::now()));
                    self.barrier.wait();
                    let begun = Instant::now();
                    let mut left = blocks;
                    let result = self.io(&mut c, &mut buf, &mut || {
                        let more = left > 0;
                        left = left.saturating_sub(1);
                        more
                    });
                    // Every thread meets the others at the barrier even after a failure,
                    // so that none waits forever.
                    let moved = result.inspect_err(|_| self.failed.store(true, Ordering::Relaxed));
                    if self.deadline.is_none_or(|d| begun < d) {
                        phases.push((since(begun), since(Instant::now()), moved.unwrap_or(0)));
                    }
                    self.barrier.wait();
                }
            }
        }
        Ok(phases)
    }
}

/// Runs the job; `each_second(second, bytes)` is called as each whole second ends (1 for
/// the first).
pub fn run(spec: &DataSpec, mut each_second: impl FnMut(u64, u64)) -> Result<DataReport> {
    if !spec.dir.is_dir() {
        return Err(LoadError::Dir {
            path: spec.dir.clone(),
            source: std::io::ErrorKind::NotADirectory.into(),
        }
        .into());
    }
    if spec.block == 0 || spec.direct && !spec.block.is_multiple_of(4096) {
        return Err(DataError::Spec(format!(
            "a block of {} bytes: must be above zero, and a multiple of 4096 with O_DIRECT",
            spec.block
        )));
    }
    if let Pattern::Continuous {
        volume: None,
        seconds: None,
    } = spec.pattern
    {
        return Err(DataError::Spec(
            "a continuous job needs a volume or a number of seconds".into(),
        ));
    }
    if spec.access == Access::Read {
        spec.prepare()?;
    }
    let threads = spec.threads.max(1);
    let now = Instant::now();
    let shared = Shared {
        spec,
        bytes: AtomicU64::new(0),
        failed: AtomicBool::new(false),
        barrier: Barrier::new(threads),
        claimed: AtomicU64::new(0),
        started: now,
        deadline: spec.until.map(|u| now + u),
    };
    let started = unix_now();
    let mut report = DataReport {
        started,
        ..DataReport::default()
    };
    let per_thread = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let shared = &shared;
                s.spawn(move || {
                    shared
                        .thread(t)
                        .inspect_err(|_| shared.failed.store(true, Ordering::Relaxed))
                })
            })
            .collect();
        let mut last = 0;
        let mut second = 0;
        loop {
            let tick = shared.started + Duration::from_secs(second + 1);
            while Instant::now() < tick && !workers.iter().all(|w| w.is_finished()) {
                std::thread::sleep(Duration::from_millis(5));
            }
            let now = shared.bytes.load(Ordering::Relaxed);
            let done = workers.iter().all(|w| w.is_finished());
            // A last partial second is kept: its bytes count, at their second.
            if Instant::now() >= tick || now > last {
                second += 1;
                report.per_second.push(now - last);
                each_second(second, now - last);
                last = now;
            }
            if done {
                break;
            }
        }
        joined(workers, "thread")
    })?;
    // A phase is the threads' stretches of the same index together: from the first
    // start to the last end (the threads of a periodic job meet at barriers).
    let count = per_thread.iter().map(Vec::len).max().unwrap_or(0);
    for k in 0..count {
        let parts: Vec<&(f64, f64, u64)> = per_thread.iter().filter_map(|p| p.get(k)).collect();
        let start = parts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let end = parts.iter().map(|p| p.1).fold(0.0, f64::max);
        report.phases.push(Phase {
            start: started + start,
            end: started + end,
            bytes: parts.iter().map(|p| p.2).sum(),
        });
    }
    // The threads leave at the deadline only when the pattern had not ended before it.
    if let Some(until) = spec.until.filter(|_| shared.past_deadline()) {
        report.stopped = Some(started + until.as_secs_f64());
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory of this test's own under the system's temporary directory.
    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sluice-data-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn periodic(dir: PathBuf, until: Option<Duration>) -> DataSpec {
        DataSpec {
            dir,
            access: Access::Write,
            block: 4096,
            threads: 2,
            direct: false,
            file_size: 1 << 20,
            // 0.2 s of compute then 64 KiB, ten times: about 2 s to its end.
            pattern: Pattern::Periodic {
                compute: Duration::from_millis(200),
                volume: 64 << 10,
                iterations: 10,
            },
            until,
        }
    }

    #[test]
    fn until_stops_a_periodic_run_mid_pattern_and_says_when() {
        let dir = scratch("until");
        let begun = Instant::now();
        let report = run(
            &periodic(dir.clone(), Some(Duration::from_millis(500))),
            |_, _| {},
        )
        .unwrap();
        let took = begun.elapsed();
        assert!(took < Duration::from_millis(1200), "ran {took:?}");
        let stopped = report.stopped.expect("stopped before the pattern's end");
        assert!((stopped - report.started - 0.5).abs() < 1e-6);
        // Two I/O phases began before 0.5 s (at 0.2 and about 0.4 s); none after it.
        assert_eq!(report.phases.len(), 2, "{:?}", report.phases);
        assert!(report.phases.iter().all(|p| p.start < stopped));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_run_that_ends_before_until_is_not_stopped() {
        let dir = scratch("natural");
        let mut spec = periodic(dir.clone(), Some(Duration::from_secs(30)));
        spec.pattern = Pattern::Periodic {
            compute: Duration::from_millis(50),
            volume: 64 << 10,
            iterations: 2,
        };
        let report = run(&spec, |_, _| {}).unwrap();
        assert_eq!(report.stopped, None);
        assert_eq!(report.phases.len(), 2);
        assert_eq!(
            report.phases.iter().map(|p| p.bytes).sum::<u64>(),
            2 * (64 << 10)
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
