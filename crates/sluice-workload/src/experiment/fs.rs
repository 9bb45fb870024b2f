//! The file systems a scenario runs on. A real shared bandwidth for data experiments: an
//! ext4 file system on a loop device, its bandwidth throttled with cgroup v1's blkio
//! controller on the root cgroup, so that
//! the device's whole traffic (every process's, and the kernel's writeback) shares one
//! limit, as a file system's servers do. Made when a scenario's run starts, and removed
//! (throttle lifted, unmounted, device detached, image deleted) when it ends, also on
//! error. A real metadata server for metadata experiments: a single-node CephFS
//! ([`CephFs`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::scenario::FsSpec;
use super::{ExperimentError, Result};
use crate::error::{Doing as _, fail};

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
    let o = cmd.output().doing(|| format!("run {cmd:?}"))?;
    if !o.status.success() {
        fail!(
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
        std::fs::create_dir_all(&base).doing(|| format!("create {}", base.display()))?;
        let mut fs = LoopFs {
            image: base.join("image"),
            device: None,
            mount: base.join("mnt"),
            mounted: false,
            throttled: None,
        };
        fs.set_up(spec).map_err(|e| {
            ExperimentError::Failed(format!(
                "cannot make the scenario's [filesystem] (needs root, losetup, mkfs.ext4 and \
                 cgroup v1 blkio at /sys/fs/cgroup/blkio): {e}"
            ))
        })?;
        Ok(fs)
    }

    fn set_up(&mut self, spec: &FsSpec) -> Result<()> {
        let making = || format!("make the image {}", self.image.display());
        let image = std::fs::File::create(&self.image).doing(making)?;
        image.set_len(spec.size).doing(making)?;
        drop(image);
        let device = run(Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&self.image))?;
        self.device = Some(device.clone());
        run(Command::new("mkfs.ext4").args(["-q", "-F", &device]))?;
        std::fs::create_dir_all(&self.mount)
            .doing(|| format!("create {}", self.mount.display()))?;
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
                .doing(|| format!("write {}", path.display()))?;
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

/// A single-node CephFS for a scenario's run, brought up by experiments/cephfs/up.sh
/// (which installs the packages when missing) in a work dir of its own, and taken down by
/// down.sh when dropped, also on error: every daemon stopped by its pid, every mount
/// removed.
pub struct CephFs {
    scripts: PathBuf,
    work: PathBuf,
    root: PathBuf,
}

impl CephFs {
    /// Brings it up with one ceph-fuse mount per name of `clients` (`small_cache`'s
    /// with a cache of 100 inodes), its monitor on a free port of 127.0.0.1.
    pub fn make(clients: &[String], small_cache: &[String]) -> Result<CephFs> {
        let scripts = std::env::current_dir()
            .doing(|| "find the working directory".into())?
            .join("experiments/cephfs");
        if !scripts.join("up.sh").is_file() {
            fail!(
                "[cephfs] needs experiments/cephfs/up.sh: run `sluice experiment run` from the \
                 repository's top directory"
            );
        }
        let base =
            std::env::temp_dir().join(format!("sluice-experiment-ceph.{}", std::process::id()));
        let port =
            crate::harness::free_port().doing(|| "find a free port for the monitor".into())?;
        let fs = CephFs {
            scripts,
            work: base.join("cluster"),
            root: base.join("mnt"),
        };
        let t = std::time::Instant::now();
        let o = Command::new("bash")
            .arg(fs.scripts.join("up.sh"))
            .arg("--work-dir")
            .arg(&fs.work)
            .arg("--mount-root")
            .arg(&fs.root)
            .args(["--port", &port.to_string()])
            .args(["--clients", &clients.join(" ")])
            .args(["--small-cache", &small_cache.join(" ")])
            .stdin(std::process::Stdio::null())
            .output()
            .doing(|| "run experiments/cephfs/up.sh".into())?;
        if !o.status.success() {
            fail!(
                "experiments/cephfs/up.sh failed ({}): {}",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            );
        }
        println!("cephfs: up in {:.1} s", t.elapsed().as_secs_f64());
        Ok(fs)
    }

    /// Where client `name` is mounted.
    pub fn mount(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// The directory holding every mount (managed by the jobs' stage).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The MDS's admin socket.
    pub fn mds_socket(&self) -> PathBuf {
        self.work.join("run/ceph-mds.a.asok")
    }
}

impl Drop for CephFs {
    fn drop(&mut self) {
        let t = std::time::Instant::now();
        match Command::new("bash")
            .arg(self.scripts.join("down.sh"))
            .arg("--work-dir")
            .arg(&self.work)
            .arg("--mount-root")
            .arg(&self.root)
            .stdin(std::process::Stdio::null())
            .output()
        {
            Ok(o) if o.status.success() => {
                println!("cephfs: down in {:.1} s", t.elapsed().as_secs_f64());
            }
            Ok(o) => eprintln!(
                "cephfs: down.sh failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => eprintln!("cephfs: cannot run down.sh: {e}"),
        }
        if let Some(base) = self.work.parent() {
            let _ = std::fs::remove_dir_all(base);
        }
    }
}
