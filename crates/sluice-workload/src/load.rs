//! A closed-loop load: each thread makes one call after another, as fast as it is let.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sluice_core::op::Op;

/// Errors setting a load up.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// An operation the load generator cannot drive.
    #[error("operation '{0}' cannot be generated (try: {ops})", ops = LOADABLE.iter().map(|o| o.name()).collect::<Vec<_>>().join(", "))]
    Unsupported(String),
    /// The directory is unusable.
    #[error("{path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The operations the load can drive.
pub const LOADABLE: [Op; 11] = [
    Op::Getattr,
    Op::Open,
    Op::Access,
    Op::Setattr,
    Op::Rename,
    Op::Statfs,
    Op::Mkdir,
    Op::Readdir,
    Op::Getxattr,
    Op::Read,
    Op::Write,
];

/// What to run.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    /// Directory the load works in (a file per thread is created there).
    pub dir: PathBuf,
    /// Operations, made in turn by every thread.
    pub ops: Vec<Op>,
    /// Threads.
    pub threads: usize,
    /// Stop after this long…
    pub duration: Option<Duration>,
    /// …or after this many operations per thread.
    pub count: Option<u64>,
    /// Bytes per read or write.
    pub block: usize,
}

/// What a load achieved.
#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    /// Operations made in each whole second.
    pub per_second: Vec<u64>,
    /// Operations made in all.
    pub total: u64,
    /// Seconds the load ran.
    pub elapsed_s: f64,
}

impl LoadReport {
    /// Operations per second over the whole run.
    pub fn rate(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.total as f64 / self.elapsed_s
        } else {
            0.0
        }
    }
}

/// Parses an operation the load can drive.
pub fn loadable(name: &str) -> Result<Op, LoadError> {
    name.parse::<Op>()
        .ok()
        .filter(|o| LOADABLE.contains(o))
        .ok_or_else(|| LoadError::Unsupported(name.to_owned()))
}

struct Files {
    file: CString,
    other: CString,
    sub: CString,
    dir: CString,
    buf: Vec<u8>,
    fd: i32,
}

impl Files {
    fn new(dir: &Path, t: usize, block: usize) -> Result<Self, LoadError> {
        let err = |source| LoadError::Dir {
            path: dir.to_owned(),
            source,
        };
        let name = |s: &str| {
            CString::new(
                dir.join(format!("sluice-load.{}.{t}.{s}", std::process::id()))
                    .into_os_string()
                    .into_encoded_bytes(),
            )
            .unwrap_or_default()
        };
        let file = name("f");
        std::fs::write(file.to_str().unwrap_or_default(), vec![7u8; block.max(1)]).map_err(err)?;
        // SAFETY: a valid path; the descriptor is closed in Drop.
        let fd = unsafe { libc::open(file.as_ptr(), libc::O_RDWR) };
        if fd < 0 {
            return Err(err(std::io::Error::last_os_error()));
        }
        let dir = CString::new(dir.as_os_str().as_encoded_bytes()).unwrap_or_default();
        Ok(Files {
            other: name("g"),
            sub: name("d"),
            file,
            dir,
            buf: vec![0u8; block.max(1)],
            fd,
        })
    }

    /// Makes one `op`; returns the calls it made of that operation (always 1).
    fn once(&mut self, op: Op) {
        // SAFETY: every pointer is a valid C string or a buffer of the size passed.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            match op {
                Op::Getattr => {
                    libc::stat(self.file.as_ptr(), &mut st);
                }
                Op::Open => {
                    let fd = libc::open(self.file.as_ptr(), libc::O_RDONLY);
                    if fd >= 0 {
                        libc::close(fd);
                    }
                }
                Op::Access => {
                    libc::access(self.file.as_ptr(), libc::R_OK);
                }
                Op::Setattr => {
                    libc::chmod(self.file.as_ptr(), 0o644);
                }
                Op::Rename => {
                    libc::rename(self.file.as_ptr(), self.other.as_ptr());
                    std::mem::swap(&mut self.file, &mut self.other);
                }
                Op::Statfs => {
                    let mut s: libc::statfs = std::mem::zeroed();
                    libc::statfs(self.dir.as_ptr(), &mut s);
                }
                Op::Mkdir => {
                    libc::mkdir(self.sub.as_ptr(), 0o755);
                    libc::rmdir(self.sub.as_ptr());
                }
                Op::Readdir => {
                    let d = libc::opendir(self.dir.as_ptr());
                    if !d.is_null() {
                        libc::readdir(d);
                        libc::closedir(d);
                    }
                }
                Op::Getxattr => {
                    libc::getxattr(
                        self.file.as_ptr(),
                        c"user.sluice".as_ptr(),
                        std::ptr::null_mut(),
                        0,
                    );
                }
                Op::Read => {
                    libc::pread(self.fd, self.buf.as_mut_ptr().cast(), self.buf.len(), 0);
                }
                Op::Write => {
                    libc::pwrite(self.fd, self.buf.as_ptr().cast(), self.buf.len(), 0);
                }
                _ => {}
            }
        }
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        // SAFETY: our own descriptor and paths.
        unsafe {
            libc::close(self.fd);
            libc::unlink(self.file.as_ptr());
            libc::unlink(self.other.as_ptr());
        }
    }
}

/// Runs the load; `each_second` is called with (second, operations in it) as they end.
pub fn run(
    spec: &LoadSpec,
    mut each_second: impl FnMut(u64, u64),
) -> Result<LoadReport, LoadError> {
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut files = (0..spec.threads.max(1))
        .map(|t| Files::new(&spec.dir, t, spec.block))
        .collect::<Result<Vec<_>, _>>()?;
    let start = Instant::now();
    let mut report = LoadReport::default();
    std::thread::scope(|s| {
        let workers: Vec<_> = files
            .iter_mut()
            .map(|f| {
                let (done, stop, ops, count) = (done.clone(), stop.clone(), &spec.ops, spec.count);
                s.spawn(move || {
                    let mut n = 0u64;
                    'outer: while !stop.load(Ordering::Relaxed) {
                        for &op in ops {
                            if count.is_some_and(|c| n >= c) {
                                break 'outer;
                            }
                            f.once(op);
                            n += 1;
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        let mut last = 0u64;
        let mut sec = 0u64;
        loop {
            sec += 1;
            let tick = start + Duration::from_secs(sec);
            while Instant::now() < tick && !workers.iter().all(|w| w.is_finished()) {
                std::thread::sleep(
                    Duration::from_millis(5).min(tick.saturating_duration_since(Instant::now())),
                );
            }
            let finished = workers.iter().all(|w| w.is_finished());
            if Instant::now() >= tick {
                let now = done.load(Ordering::Relaxed);
                report.per_second.push(now - last);
                each_second(sec, now - last);
                last = now;
            }
            if finished || spec.duration.is_some_and(|d| Duration::from_secs(sec) >= d) {
                stop.store(true, Ordering::Relaxed);
                break;
            }
        }
    });
    report.elapsed_s = start.elapsed().as_secs_f64();
    report.total = done.load(Ordering::Relaxed);
    Ok(report)
}
