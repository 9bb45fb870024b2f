//! The stage's log: a file named by `SLUICE_LOG`, never the application's stdout or stderr.
//!
//! Each line is formatted into a stack buffer and written by opening the file, one raw
//! `write` with `O_APPEND`, and closing it: the stage keeps no descriptor that a program
//! closing every descriptor at start could take over, lines from several processes do
//! not interleave, and logging never allocates. Without `SLUICE_LOG` the stage is silent.

use std::cell::UnsafeCell;
use std::ffi::CStr;
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::sys;

const PATH_LEN: usize = 1024;

struct LogPath(UnsafeCell<[u8; PATH_LEN]>);

// SAFETY: written once by `open` before `ENABLED` is published with Release, read only
// after it is observed with Acquire.
unsafe impl Sync for LogPath {}

static PATH: LogPath = LogPath(UnsafeCell::new([0; PATH_LEN]));
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Remembers the log file `path`, if any (called once, from the constructor).
pub fn open(path: Option<&CStr>) {
    let Some(path) = path else { return };
    let bytes = path.to_bytes_with_nul();
    if bytes.len() > PATH_LEN {
        return;
    }
    // SAFETY: nobody reads PATH before ENABLED is set below.
    unsafe { (&mut *PATH.0.get())[..bytes.len()].copy_from_slice(bytes) };
    ENABLED.store(true, Ordering::Release);
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

/// Writes one line, prefixed with the pid, when a log was named.
pub fn line(args: fmt::Arguments<'_>) {
    if !ENABLED.load(Ordering::Acquire) {
        return;
    }
    // SAFETY: published before ENABLED and never written again.
    let Ok(path) = CStr::from_bytes_until_nul(unsafe { &*PATH.0.get() }) else {
        return;
    };
    let mut l = Line {
        buf: [0; 1024],
        len: 0,
    };
    // SAFETY: getpid has no preconditions.
    let _ = write!(l, "sluice-stage[{}]: {}", unsafe { libc::getpid() }, args);
    l.buf[l.len] = b'\n';
    sys::keep_errno(|| {
        if let Ok(fd) = sys::open(path, libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT, 0o600) {
            sys::write_all(fd as i32, &l.buf[..l.len + 1]);
            sys::close(fd as i32);
        }
    });
}

/// Logs a formatted line to the stage's log file, if one is named.
macro_rules! log {
    ($($arg:tt)*) => { $crate::log::line(format_args!($($arg)*)) };
}
pub(crate) use log;
