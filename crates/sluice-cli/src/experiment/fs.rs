//! A real shared bandwidth for data experiments: an ext4 file system on a loop device,
//! its bandwidth throttled with cgroup v1's blkio controller on the root cgroup, so that
//! the device's whole traffic (every process's, and the kernel's writeback) shares one
//! limit, as a file system's servers do. Made when a scenario's run starts, and removed
//! (throttle lifted, unmounted, device detached, image deleted) when it ends, also on
//! error.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::scenario::FsSpec;

/// The root blkio cgroup: a throttle there holds the whole device.
const BLKIO: &str = "/sys/fs/cgroup/blkio";

/// The file system, torn down when dropped.
pub struct LoopFs {
    image: PathBuf,
    device: Option<String>,
    mount: PathBuf,
    mounted: bool,
    /// `major:minor` of the device, once throttled.
    throttled: Option<String>,
}

fn run(cmd: &mut Command) -> Result<String> {
    let o = cmd
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !o.status.success() {
        bail!(
            "{cmd:?} failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_owned())
}

impl LoopFs {
    /// Makes, mounts and throttles the file system, in a directory of its own under the
    /// system's temporary directory (the image is as large as `spec.size`, so it is not
    /// put among the results).
    pub fn make(spec: &FsSpec) -> Result<LoopFs> {
        let base =
            std::env::temp_dir().join(format!("sluice-experiment-fs.{}", std::process::id()));
        std::fs::create_dir_all(&base)?;
        let mut fs = LoopFs {
            image: base.join("image"),
            device: None,
            mount: base.join("mnt"),
            mounted: false,
            throttled: None,
        };
        fs.set_up(spec).context(
            "cannot make the scenario's [filesystem] (needs root, losetup, mkfs.ext4 and \
             cgroup v1 blkio at /sys/fs/cgroup/blkio)",
        )?;
        Ok(fs)
    }

    fn set_up(&mut self, spec: &FsSpec) -> Result<()> {
        let image = std::fs::File::create(&self.image)?;
        image.set_len(spec.size)?;
        drop(image);
        let device = run(Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&self.image))?;
        self.device = Some(device.clone());
        run(Command::new("mkfs.ext4").args(["-q", "-F", &device]))?;
        std::fs::create_dir_all(&self.mount)?;
        run(Command::new("mount").arg(&device).arg(&self.mount))?;
        self.mounted = true;
        let numbers = run(Command::new("lsblk").args(["-dno", "MAJ:MIN", &device]))?;
        let numbers = numbers.trim().to_owned();
        self.throttled = Some(numbers.clone());
        let read = spec.read.unwrap_or(spec.write);
        for (file, rate) in [
            ("blkio.throttle.write_bps_device", spec.write),
            ("blkio.throttle.read_bps_device", read),
        ] {
            let path = Path::new(BLKIO).join(file);
            std::fs::write(&path, format!("{numbers} {}\n", rate.per_sec))
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        Ok(())
    }

    /// Where the file system is mounted.
    pub fn mount(&self) -> &Path {
        &self.mount
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        if let Some(numbers) = &self.throttled {
            for file in [
                "blkio.throttle.write_bps_device",
                "blkio.throttle.read_bps_device",
            ] {
                // 0 removes the device's rule.
                let _ = std::fs::write(Path::new(BLKIO).join(file), format!("{numbers} 0\n"));
            }
        }
        if self.mounted && run(Command::new("umount").arg(&self.mount)).is_err() {
            // Busy (a process still writing): detached now, released when it ends.
            let _ = run(Command::new("umount").arg("-l").arg(&self.mount));
        }
        if let Some(device) = &self.device {
            let _ = run(Command::new("losetup").args(["-d", device]));
        }
        if let Some(base) = self.image.parent() {
            let _ = std::fs::remove_dir_all(base);
        }
    }
}
