//! IOR-like sequential reads and writes, and periodic applications.
//!
//! Like IOR with its POSIX back end, every thread (IOR's process, or rank) opens its file,
//! moves its share of the volume in `transfer`-sized `pwrite`s or `pread`s from the start
//! of its block to its end, and closes the file; with a shared file, rank `r`'s block is
//! the `r`-th slice of the one file, with a file per process each rank's file is its
//! block. A periodic application repeats this: each phase computes (sleeps: the CPU is not
//! what is measured) for `compute`, then all ranks start their I/O together, and the next
//! phase starts when the last rank is done, as in a bulk-synchronous program.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt as _;
use std::path::PathBuf;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::data::{DataError, joined};
use crate::error::{Doing as _, fail};
use crate::load::LoadError;

type Result<T, E = DataError> = std::result::Result<T, E>;
use crate::meter::Seconds;

/// Reading or writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Sequential `pread`s.
    Read,
    /// Sequential `pwrite`s.
    Write,
}

/// Where the ranks' blocks are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// A file per rank: `sluice-ior.RANK`.
    FilePerProcess,
    /// One file, `sluice-ior`, rank `r` owning its `r`-th slice.
    Shared,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct IorSpec {
    /// Directory of the files (use one per job: the file names are fixed, so that a read
    /// can follow a write with `keep`).
    pub dir: PathBuf,
    /// Read or write.
    pub access: Access,
    /// File per process or shared file.
    pub layout: Layout,
    /// Bytes per call.
    pub transfer: usize,
    /// Bytes each I/O phase moves, all ranks together, split evenly among them.
    pub volume: u64,
    /// Ranks (threads).
    pub threads: usize,
    /// Compute-then-I/O phases.
    pub phases: u32,
    /// Compute time before each I/O phase.
    pub compute: Duration,
    /// Leave the files in place at the end (else they are removed).
    pub keep: bool,
}

/// One I/O phase.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseReport {
    /// When the ranks started it, in seconds from the start of the run.
    pub start_s: f64,
    /// Seconds from then until the last rank was done.
    pub io_s: f64,
    /// Bytes moved.
    pub bytes: u64,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct IorReport {
    /// Calls and bytes in each whole second.
    pub per_second: Vec<(u64, u64)>,
    /// Every phase.
    pub phases: Vec<PhaseReport>,
    /// Bytes moved in all.
    pub bytes: u64,
    /// Seconds the run took.
    pub elapsed_s: f64,
}

impl IorSpec {
    /// The file of rank `r` and where its block starts in it, and the block's length.
    fn block(&self, r: usize) -> (PathBuf, u64, u64) {
        let n = self.threads.max(1) as u64;
        let (r, base, extra) = (r as u64, self.volume / n, self.volume % n);
        let len = base + u64::from(r < extra);
        match self.layout {
            Layout::FilePerProcess => (self.dir.join(format!("sluice-ior.{r}")), 0, len),
            Layout::Shared => (self.dir.join("sluice-ior"), r * base + r.min(extra), len),
        }
    }

    /// For a read: makes every file at least as long as the blocks in it (sparse where it
    /// was shorter), before the run's clock starts.
    fn prepare(&self) -> Result<(), LoadError> {
        for r in 0..self.threads {
            let (path, offset, len) = self.block(r);
            let grow = || -> std::io::Result<()> {
                let f = OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&path)?;
                if f.metadata()?.len() < offset + len {
                    f.set_len(offset + len)?;
                }
                Ok(())
            };
            grow().map_err(|source| LoadError::Dir {
                path: path.clone(),
                source,
            })?;
        }
        Ok(())
    }

    /// Rank `r`'s I/O of one phase; adds to the counters as each call returns.
    fn io(&self, r: usize, buf: &mut [u8], calls: &AtomicU64, bytes: &AtomicU64) -> Result<()> {
        let (path, start, len) = self.block(r);
        let file: File = match self.access {
            Access::Read => File::open(&path),
            Access::Write => OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path),
        }
        .doing(|| format!("open {}", path.display()))?;
        let mut at = start;
        while at < start + len {
            let want = buf.len().min((start + len - at) as usize);
            let n = match self.access {
                Access::Read => file.read_at(&mut buf[..want], at),
                Access::Write => file.write_at(&buf[..want], at),
            }
            .doing(|| format!("move a transfer of {} at byte {at}", path.display()))?;
            if n == 0 {
                fail!("{}: ended at byte {at}", path.display());
            }
            calls.fetch_add(1, Ordering::Relaxed);
            bytes.fetch_add(n as u64, Ordering::Relaxed);
            at += n as u64;
        }
        Ok(())
    }

    /// Rank `r`'s whole run: per phase, when its I/O started and ended.
    fn rank(
        &self,
        r: usize,
        start: Instant,
        barrier: &Barrier,
        calls: &AtomicU64,
        bytes: &AtomicU64,
    ) -> Result<Vec<(Duration, Duration)>> {
        let mut buf = vec![0x5a_u8; self.transfer.max(1)];
        let mut times = Vec::new();
        let mut failed = None;
        for _ in 0..self.phases {
            std::thread::sleep(self.compute);
            barrier.wait();
            let begun = start.elapsed();
            // A failed rank keeps meeting the others at the barriers, so that none waits
            // forever; the failure is reported at the end.
            if failed.is_none() {
                failed = self.io(r, &mut buf, calls, bytes).err();
            }
            times.push((begun, start.elapsed()));
            barrier.wait();
        }
        failed.map_or(Ok(times), Err)
    }
}

/// Runs the load; `each_second` is called with (second, calls, bytes) as each ends.
pub fn run(spec: &IorSpec, mut each_second: impl FnMut(u64, u64, u64)) -> Result<IorReport> {
    let threads = spec.threads.max(1);
    if !spec.dir.is_dir() {
        return Err(LoadError::Dir {
            path: spec.dir.clone(),
            source: std::io::ErrorKind::NotADirectory.into(),
        }
        .into());
    }
    if spec.access == Access::Read {
        spec.prepare()?;
    }
    let (calls, bytes) = (AtomicU64::new(0), AtomicU64::new(0));
    let barrier = Barrier::new(threads);
    let mut seconds = Seconds::start();
    let start = seconds.started();
    let mut report = IorReport::default();
    let ranks = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|r| {
                let (barrier, calls, bytes) = (&barrier, &calls, &bytes);
                s.spawn(move || spec.rank(r, start, barrier, calls, bytes))
            })
            .collect();
        let mut last = (0, 0);
        while let Some(sec) = seconds.next(|| workers.iter().all(|w| w.is_finished())) {
            let now = (calls.load(Ordering::Relaxed), bytes.load(Ordering::Relaxed));
            report.per_second.push((now.0 - last.0, now.1 - last.1));
            each_second(sec, now.0 - last.0, now.1 - last.1);
            last = now;
        }
        joined(workers, "rank")
    });
    report.elapsed_s = start.elapsed().as_secs_f64();
    report.bytes = bytes.load(Ordering::Relaxed);
    if !spec.keep {
        for r in 0..threads {
            // A shared file is named by every rank: removed once, the rest is NotFound.
            let _ = std::fs::remove_file(spec.block(r).0);
        }
    }
    let ranks = ranks?;
    report.phases = (0..spec.phases as usize)
        .map(|p| {
            let begun = ranks.iter().map(|t| t[p].0).min().unwrap_or_default();
            let ended = ranks.iter().map(|t| t[p].1).max().unwrap_or_default();
            PhaseReport {
                start_s: begun.as_secs_f64(),
                io_s: (ended - begun).as_secs_f64(),
                bytes: spec.volume,
            }
        })
        .collect();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(layout: Layout, volume: u64, threads: usize) -> IorSpec {
        IorSpec {
            dir: PathBuf::from("/d"),
            access: Access::Write,
            layout,
            transfer: 1,
            volume,
            threads,
            phases: 1,
            compute: Duration::ZERO,
            keep: false,
        }
    }

    #[test]
    fn blocks_split_the_volume_evenly_and_tile_a_shared_file() {
        let s = spec(Layout::Shared, 10, 3);
        let blocks: Vec<_> = (0..3).map(|r| s.block(r)).collect();
        let shared = PathBuf::from("/d/sluice-ior");
        assert_eq!(
            blocks,
            [
                (shared.clone(), 0, 4),
                (shared.clone(), 4, 3),
                (shared, 7, 3)
            ]
        );
        let s = spec(Layout::FilePerProcess, 10, 3);
        assert_eq!(s.block(2), (PathBuf::from("/d/sluice-ior.2"), 0, 3));
    }
}
