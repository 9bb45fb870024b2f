//! What a call does to the descriptors and the current directory the stage tracks.

use std::ffi::{c_int, c_uint, c_void};

use crate::admit::Ret;
use crate::locate::{self, Target, dir_fd};
use crate::state::{self, State};
use crate::tables::fdtable::{self, Entry};
use crate::tables::stream;

/// A call's effect on the stage's tables.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Effect {
    /// None.
    None,
    /// The result is a new descriptor for the target.
    OpenFd,
    /// The result is a new `FILE*` for the target.
    OpenFile,
    /// The result is a new `DIR*` for the target.
    OpenDir,
    /// `freopen`: this stream's descriptor is closed, the result is the target.
    Reopen(*mut c_void),
    /// This descriptor is being closed.
    Close(c_int),
    /// This stream's descriptor is being closed.
    CloseFile(*mut c_void),
    /// This directory stream's descriptor is being closed.
    CloseDir(*mut c_void),
    /// Descriptors `first..=last` are being closed.
    CloseRange(c_uint, c_uint),
    /// The result is a copy of this descriptor.
    Dup(c_int),
    /// The current directory changes (`chdir`).
    Chdir,
    /// The current directory changes (`fchdir`).
    Fchdir,
}

/// `fcntl` duplicates only for these commands.
#[cfg_attr(test, allow(dead_code))]
pub(crate) fn fcntl_effect(fd: c_int, cmd: c_int) -> Effect {
    match cmd {
        libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => Effect::Dup(fd),
        _ => Effect::None,
    }
}

/// `close_range` with CLOSE_RANGE_CLOEXEC only marks descriptors close-on-exec.
#[cfg_attr(test, allow(dead_code))]
pub(crate) fn close_range_effect(first: c_uint, last: c_uint, flags: c_int) -> Effect {
    if flags as c_uint & libc::CLOSE_RANGE_CLOEXEC != 0 {
        Effect::None
    } else {
        Effect::CloseRange(first, last)
    }
}

/// `mode` is there only when `flags` create a file; otherwise it is whatever the register
/// held, and must not be read.
#[cfg_attr(test, allow(dead_code))]
pub(crate) fn open_mode(flags: c_int, mode: c_uint) -> c_uint {
    if flags & libc::O_CREAT != 0 || flags & libc::O_TMPFILE == libc::O_TMPFILE {
        mode
    } else {
        0
    }
}

impl Effect {
    /// Whether a glance's answer is all that is needed to record this effect on `target`:
    /// a path opened, a descriptor closed, or no effect. (A glance places a path; only a
    /// full lookup says whether places lie below a directory a `chdir` enters.)
    #[inline(always)]
    pub(crate) fn recorded_at_a_glance(self, target: Target) -> bool {
        match target {
            Target::Path(_) | Target::At(libc::AT_FDCWD, _) => matches!(
                self,
                Effect::None | Effect::OpenFd | Effect::OpenFile | Effect::OpenDir
            ),
            Target::Fd(_) => matches!(self, Effect::None | Effect::Close(_)),
            _ => false,
        }
    }

    /// Whether the target's entry is remembered (so it must say what lies below it).
    #[inline]
    pub(crate) fn remembers(self) -> bool {
        matches!(
            self,
            Effect::OpenFd | Effect::OpenFile | Effect::OpenDir | Effect::Reopen(_)
        )
    }

    /// Before the real call: forget what is being closed, so that a descriptor number
    /// another thread reuses at once is not wiped after it was recorded.
    #[inline(always)]
    pub(crate) fn before(self) {
        match self {
            Effect::Close(fd) => fdtable::clear(fd),
            Effect::CloseFile(f) | Effect::Reopen(f) => {
                if let Some(fd) = stream::fd(f) {
                    fdtable::clear(fd)
                }
            }
            Effect::CloseDir(d) => {
                if let Ok(Some(fd)) = dir_fd(d) {
                    fdtable::clear(fd)
                }
            }
            Effect::CloseRange(first, last) => fdtable::clear_range(first, last),
            _ => {}
        }
    }

    /// After the real call: record what it opened, duplicated or moved to.
    #[inline(always)]
    pub(crate) fn after<R: Ret>(self, st: &State, ret: R, entry: Option<Entry>) {
        let record = |fd: Option<c_int>| {
            if let Some(fd) = fd {
                match entry {
                    Some(e) => fdtable::set(fd, e),
                    None => fdtable::clear(fd),
                }
            }
        };
        match self {
            Effect::OpenFd => record(ret.as_fd()),
            Effect::OpenFile | Effect::Reopen(_) => record(stream::fd(ret.as_ptr())),
            Effect::OpenDir => record(dir_fd(ret.as_ptr()).ok().flatten()),
            // A vfork()ed child shares the parent's memory until it execs: what it dups
            // or where it moves must not rewrite the parent's tables.
            Effect::Dup(from) if state::own_process() => {
                if let Some(to) = ret.as_fd() {
                    fdtable::copy(from, to)
                }
            }
            Effect::Chdir | Effect::Fchdir if ret.ok() && state::own_process() => {
                locate::learn_cwd(st)
            }
            _ => {}
        }
    }
}
