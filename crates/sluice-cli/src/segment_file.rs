//! A job's segment as a file under `/dev/shm`: created, initialised, mapped, removed.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use memmap2::MmapMut;
use sluice_core::bucket::Limit;
use sluice_core::config::StageConfig;
use sluice_core::segment::Segment;

/// Where segments live: a tmpfs every process of the node sees.
pub const SHM_DIR: &str = "/dev/shm";

/// A mapped segment file that is removed when dropped (processes that still map it keep
/// their mapping).
pub struct SegmentFile {
    path: PathBuf,
    map: MmapMut,
}

impl SegmentFile {
    /// Creates `dir/sluice.JOB.PID`, mode 0600, and writes `config` into it.
    pub fn create(dir: &Path, config: &StageConfig) -> Result<Self> {
        let safe_job: String = config
            .job
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("sluice.{safe_job}.{}", std::process::id()));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("cannot create the job's segment {}", path.display()))?;
        let seg = Self::map(path, &file)?;
        let limits: Vec<(usize, Limit)> = config
            .rules
            .iter()
            .map(|s| {
                let r = &s.rule;
                (
                    s.slot as usize,
                    Limit::new(r.rate.per_sec, r.burst_or_default()),
                )
            })
            .collect();
        seg.segment()
            .init(&config.to_text(), &limits, 0)
            .context("cannot write the job's segment")?;
        Ok(seg)
    }

    fn map(path: PathBuf, file: &File) -> Result<Self> {
        file.set_len(Segment::SIZE as u64)
            .with_context(|| format!("cannot size {}", path.display()))?;
        // SAFETY: a file of ours, sized above; others change it only through atomics.
        let map = unsafe { MmapMut::map_mut(file) }
            .with_context(|| format!("cannot map {}", path.display()))?;
        Ok(SegmentFile { path, map })
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
}

impl Drop for SegmentFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
