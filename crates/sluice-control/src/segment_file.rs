//! A job's segment as a file under `/dev/shm`: created for its user, initialised, mapped,
//! adopted again after a restart, changed live, removed.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use memmap2::{MmapMut, MmapOptions};
use sluice_core::bucket::Limit;
use sluice_core::config::StageConfig;
use sluice_core::segment::{Header, MAX_RULES, Segment};

/// Where segments live: a tmpfs every process of the node sees.
pub const SHM_DIR: &str = "/dev/shm";

/// A mapped segment file. A standalone `sluice run` removes its segment when done
/// ([`SegmentFile::remove_on_drop`]); a local controller keeps its segments across its own
/// restarts and removes one when its job ends.
pub struct SegmentFile {
    path: PathBuf,
    map: MmapMut,
    remove_on_drop: bool,
}

/// `job` as a safe file-name part: letters, digits, `-` and `_` kept, the rest `_`.
pub fn file_safe(job: &str) -> String {
    job.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl SegmentFile {
    /// Creates `path` (mode 0600, owned by `owner` when given) and writes `config` into
    /// it, with each rule's limit in its bucket and each pool's bucket at `pool_rates`
    /// (by pool slot).
    pub fn create(
        path: PathBuf,
        config: &StageConfig,
        pool_rates: &[(usize, Limit)],
        owner: Option<(u32, u32)>,
    ) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("cannot create the job's segment {}", path.display()))?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::fchown(&file, Some(uid), Some(gid))
                .with_context(|| format!("cannot give {} to uid {uid}", path.display()))?;
        }
        let seg = Self::map(path, &file, true)?;
        let mut limits: Vec<(usize, Limit)> = config
            .rules
            .iter()
            .map(|s| (s.slot as usize, rule_limit(&s.rule)))
            .collect();
        limits.extend(pool_rates.iter().map(|(slot, l)| (MAX_RULES + slot, *l)));
        seg.segment()
            .init(&config.to_text(), &limits, monotonic_ns())
            .context("cannot write the job's segment")?;
        Ok(seg)
    }

    /// Maps an existing segment (a restarted controller adopting its jobs, a launcher
    /// the segment it was handed); it is kept when dropped. A segment of a layout this
    /// build does not read is an error that downcasts to
    /// [`SegmentError`](sluice_core::segment::SegmentError) (see
    /// [`HeaderFile`] for what can still be read of it).
    pub fn open(path: PathBuf) -> Result<Self> {
        let file = open_rw(&path)?;
        let header = HeaderFile::map(&path, &file)?;
        header
            .header()
            .layout()
            .with_context(|| path.display().to_string())?;
        let len = file.metadata()?.len();
        if len < Segment::SIZE as u64 {
            bail!(
                "{} is {len} bytes, shorter than a segment ({} bytes)",
                path.display(),
                Segment::SIZE
            );
        }
        let seg = Self::map(path, &file, false)?;
        seg.segment().config()?;
        Ok(seg)
    }

    fn map(path: PathBuf, file: &File, fresh: bool) -> Result<Self> {
        if fresh {
            file.set_len(Segment::SIZE as u64)
                .with_context(|| format!("cannot size {}", path.display()))?;
        }
        // SAFETY: a segment file of ours, of the right size; others change it only
        // through atomics.
        let map = unsafe { MmapMut::map_mut(file) }
            .with_context(|| format!("cannot map {}", path.display()))?;
        Ok(SegmentFile {
            path,
            map,
            remove_on_drop: fresh,
        })
    }

    /// Whether the file is removed when this is dropped (by default: when it was created
    /// here).
    pub fn remove_on_drop(&mut self, remove: bool) {
        self.remove_on_drop = remove;
    }

    /// The segment.
    pub fn segment(&self) -> &Segment {
        // SAFETY: the mapping is page-aligned, SIZE bytes long and lives as long as self.
        unsafe { Segment::from_ptr(self.map.as_ptr()) }
    }

    /// The file's path, which the stage finds in `SLUICE_SEGMENT`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sets channel `channel`'s limit and wakes every thread asleep on it, in every
    /// process of the job, so that they re-plan at the new rate at once.
    pub fn set_limit(&self, channel: usize, limit: Limit) {
        let bucket = self.segment().bucket(channel);
        if bucket.limit() == limit {
            return;
        }
        bucket.set_limit(limit, monotonic_ns());
        // SAFETY: the word is a valid, aligned u32 in a shared mapping; FUTEX_WAKE (not
        // private) reaches waiters of every process mapping the same file.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                bucket.generation_word().as_ptr(),
                libc::FUTEX_WAKE,
                i32::MAX,
            )
        };
    }
}

/// The header of a segment file, whatever the segment's layout: enough to tell its layout
/// and its refusals, and to leave the rest untouched (a segment of a layout this build
/// does not read, whose job runs on at the rates last written).
pub struct HeaderFile {
    map: MmapMut,
}

impl HeaderFile {
    /// Maps the header of the segment file at `path`.
    pub fn open(path: &Path) -> Result<Self> {
        Self::map(path, &open_rw(path)?)
    }

    fn map(path: &Path, file: &File) -> Result<Self> {
        let len = file.metadata()?.len();
        if len < Header::SIZE as u64 {
            bail!("{} is {len} bytes, not a segment", path.display());
        }
        // SAFETY: the file holds at least the header's bytes; others change them only
        // through atomics.
        let map = unsafe { MmapOptions::new().len(Header::SIZE).map_mut(file) }
            .with_context(|| format!("cannot map {}", path.display()))?;
        Ok(HeaderFile { map })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        // SAFETY: the mapping is page-aligned, Header::SIZE bytes long and lives as long
        // as self.
        unsafe { Header::from_ptr(self.map.as_ptr()) }
    }
}

fn open_rw(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open the segment {}", path.display()))
}

impl Drop for SegmentFile {
    fn drop(&mut self) {
        if self.remove_on_drop {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A rule's limit: its rate and its burst.
pub fn rule_limit(rule: &sluice_core::rule::Rule) -> Limit {
    Limit::new(rule.rate.per_sec, rule.burst_or_default())
}

/// CLOCK_MONOTONIC in nanoseconds: the clock the stage admits by.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
