//! The stage's log: a file named by `SLUICE_LOG`, never the application's stdout or stderr.
//!
//! Lines are formatted into a stack buffer and written with one raw `write` on an
//! `O_APPEND` descriptor, so lines from several processes do not interleave and logging
//! never allocates. Without `SLUICE_LOG` the stage is silent.

use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicI32, Ordering};

use crate::sys;

static LOG_FD: AtomicI32 = AtomicI32::new(-1);

/// Opens the log file named by `path`, if any.
pub fn open(path: Option<&std::ffi::CStr>) {
    let Some(path) = path else { return };
    if let Ok(fd) = sys::open(path, libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT, 0o600) {
        LOG_FD.store(fd as i32, Ordering::Relaxed);
    }
}

struct Line {
    buf: [u8; 1024],
    len: usize,
}

impl fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = s.len().min(self.buf.len() - 1 - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Writes one line, prefixed with the pid, when a log is open.
pub fn line(args: fmt::Arguments<'_>) {
    let fd = LOG_FD.load(Ordering::Relaxed);
    if fd < 0 {
        return;
    }
    let mut l = Line {
        buf: [0; 1024],
        len: 0,
    };
    // SAFETY: getpid has no preconditions.
    let _ = write!(l, "sluice-stage[{}]: {}", unsafe { libc::getpid() }, args);
    l.buf[l.len] = b'\n';
    sys::keep_errno(|| sys::write_all(fd, &l.buf[..l.len + 1]));
}

/// Logs a formatted line to the stage's log file, if one is open.
macro_rules! log {
    ($($arg:tt)*) => { $crate::log::line(format_args!($($arg)*)) };
}
pub(crate) use log;
