//! A job's segment as a file under `/dev/shm`: created for its user, initialised, mapped,
//! adopted again after a restart, changed live, removed.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use memmap2::{MmapMut, MmapOptions};
use sluice_core::bucket::Limit;
use sluice_core::config::StageConfig;
use sluice_core::error::{Blame, Fault};
use sluice_core::segment::{Header, MAX_RULES, Segment, SegmentError};

/// Why a job's segment file cannot be made or used.
#[derive(Debug, thiserror::Error)]
pub enum SegmentFileError {
    /// A system call on the file failed: `doing` says which and on what.
    #[error("{doing}")]
    Io {
        /// "cannot create the job's segment /dev/shm/…", "cannot map …".
        doing: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is shorter than what it should hold.
    #[error("{} is {len} bytes, {what}", path.display())]
    Short {
        /// The file.
        path: PathBuf,
        /// Its length.
        len: u64,
        /// "not a segment", "shorter than a segment (… bytes)".
        what: String,
    },
    /// The segment's contents: a layout this build does not read, a configuration that
    /// does not parse.
    #[error("{}", path.display())]
    Layout {
        /// The file.
        path: PathBuf,
        /// What the segment's reader says.
        source: SegmentError,
    },
    /// The configuration could not be written into the segment.
    #[error("cannot write the job's segment")]
    Init(#[source] SegmentError),
}

impl SegmentFileError {
    /// The segment's own complaint (a layout too new or too old), if that is the cause.
    pub fn segment(&self) -> Option<&SegmentError> {
        match self {
            SegmentFileError::Layout { source, .. } | SegmentFileError::Init(source) => {
                Some(source)
            }
            _ => None,
        }
    }
}

impl Blame for SegmentFileError {
    fn fault(&self) -> Fault {
        Fault::System
    }
}

fn io(doing: String) -> impl FnOnce(std::io::Error) -> SegmentFileError {
    move |source| SegmentFileError::Io { doing, source }
}

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

/// Fails unless `dir` (created if need be, as the state directory is) is a directory in
/// which this process can create a segment (a probe file, created and removed).
pub fn check_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".sluice-probe.{}", std::process::id()));
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&probe)?;
    std::fs::remove_file(&probe)
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
    ) -> Result<Self, SegmentFileError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io(format!(
                "cannot create the job's segment {}",
                path.display()
            )))?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::fchown(&file, Some(uid), Some(gid))
                .map_err(io(format!("cannot give {} to uid {uid}", path.display())))?;
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
            .map_err(SegmentFileError::Init)?;
        Ok(seg)
    }

    /// Maps an existing segment (a restarted controller adopting its jobs, a launcher
    /// the segment it was handed); it is kept when dropped. A segment of a layout this
    /// build does not read is a [`SegmentFileError::Layout`] (see [`HeaderFile`] for
    /// what can still be read of it).
    pub fn open(path: PathBuf) -> Result<Self, SegmentFileError> {
        let file = open_rw(&path)?;
        let header = HeaderFile::map(&path, &file)?;
        let layout = |source| SegmentFileError::Layout {
            path: path.clone(),
            source,
        };
        header.header().layout().map_err(layout)?;
        holds(&path, &file, Segment::SIZE, || {
            format!("shorter than a segment ({} bytes)", Segment::SIZE)
        })?;
        let seg = Self::map(path.clone(), &file, false)?;
        seg.segment().config().map_err(layout)?;
        Ok(seg)
    }

    fn map(path: PathBuf, file: &File, fresh: bool) -> Result<Self, SegmentFileError> {
        if fresh {
            file.set_len(Segment::SIZE as u64)
                .map_err(io(format!("cannot size {}", path.display())))?;
        }
        // SAFETY: a segment file of ours, of the right size; others change it only
        // through atomics.
        let map = unsafe { MmapMut::map_mut(file) }
            .map_err(io(format!("cannot map {}", path.display())))?;
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
    pub fn open(path: &Path) -> Result<Self, SegmentFileError> {
        Self::map(path, &open_rw(path)?)
    }

    fn map(path: &Path, file: &File) -> Result<Self, SegmentFileError> {
        holds(path, file, Header::SIZE, || "not a segment".into())?;
        // SAFETY: the file holds at least the header's bytes; others change them only
        // through atomics.
        let map = unsafe { MmapOptions::new().len(Header::SIZE).map_mut(file) }
            .map_err(io(format!("cannot map {}", path.display())))?;
        Ok(HeaderFile { map })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        // SAFETY: the mapping is page-aligned, Header::SIZE bytes long and lives as long
        // as self.
        unsafe { Header::from_ptr(self.map.as_ptr()) }
    }
}

/// Refuses a segment file (`file`, at `path`) shorter than `size` bytes, as
/// [`SegmentFileError::Short`] with `what()` saying what it is then: mapping more than the
/// file holds would fault on the first access past its end.
fn holds(
    path: &Path,
    file: &File,
    size: usize,
    what: impl FnOnce() -> String,
) -> Result<(), SegmentFileError> {
    let len = file
        .metadata()
        .map_err(io(format!("cannot stat {}", path.display())))?
        .len();
    if len < size as u64 {
        return Err(SegmentFileError::Short {
            path: path.to_owned(),
            len,
            what: what(),
        });
    }
    Ok(())
}

fn open_rw(path: &Path) -> Result<File, SegmentFileError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io(format!("cannot open the segment {}", path.display())))
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
