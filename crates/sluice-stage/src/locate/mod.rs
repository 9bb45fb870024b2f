//! Where a call's target lies: from a path, a directory descriptor and a path, a file
//! descriptor, a `FILE*` or a `DIR*`, to an [`Entry`] of the mount table, or whether it is
//! in a managed place at all.
//!
//! Two answers, one for each step of a hook: [`glance()`] (unmanaged, in a managed place,
//! or needs resolving), from one pass over a path or one byte of the descriptor table;
//! and [`Target::resolve`], the full lookup ([`path`], [`fd`]) for what a glance cannot
//! tell. A path or a stream is read only through the probe ([`crate::memory::probe`]):
//! one the kernel could not read either is [`Unreadable`], and its call is passed through
//! unjudged.

mod fd;
mod glance;
mod path;

use std::ffi::{c_char, c_int, c_void};

use sluice_core::path::PATH_MAX;

pub(crate) use fd::{dir_fd, fd_entry};
pub(crate) use glance::{Located, glance};
use path::{base_entry, entry_of_normal, path_entry};

use crate::memory::probe::{self, Unreadable};
use crate::state::State;
use crate::sys;
use crate::tables::cwd;
use crate::tables::fdtable::Entry;

/// What a call names as its target.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target {
    /// No file at all (`sync`, an anonymous mapping): passed through, not counted.
    Nothing,
    /// A path, relative to the current directory.
    Path(*const c_char),
    /// A path relative to a directory descriptor (`*at` calls; AT_FDCWD allowed).
    At(c_int, *const c_char),
    /// A file descriptor.
    Fd(c_int),
    /// A stdio stream.
    File(*mut c_void),
    /// A directory stream.
    Dir(*mut c_void),
    /// Two descriptors, source and destination (`sendfile`, `copy_file_range`): each end
    /// is judged, and the managed ones are admitted, the source as a read.
    Copy(c_int, c_int),
}

impl Target {
    /// Where the target lies, or `None` when it names nothing the stage can judge (a
    /// closed descriptor, a stream over none); [`Unreadable`] for a path or a stream the
    /// stage cannot read. `want_below` asks whether managed places lie below it, needed
    /// only when the result is remembered (an open, a chdir).
    #[inline(always)]
    pub(crate) fn resolve(self, st: &State, want_below: bool) -> Result<Option<Entry>, Unreadable> {
        match self {
            Target::Nothing => Ok(None),
            Target::Path(p) => path_entry(st, None, p, want_below),
            // A null or empty path with a directory names the directory (AT_EMPTY_PATH;
            // without it the kernel refuses the call, which then changes nothing).
            Target::At(dirfd, p) if p.is_null() => Ok(base_entry(st, dirfd)),
            Target::At(libc::AT_FDCWD, p) => path_entry(st, None, p, want_below),
            Target::At(dirfd, p) => path_entry(st, Some(dirfd), p, want_below),
            // The destination; `hooks::judge` judges the source on its own.
            Target::Fd(fd) | Target::Copy(_, fd) => Ok(fd_entry(st, fd)),
            Target::File(f) => Ok(probe::stream_fd(f)?.and_then(|fd| fd_entry(st, fd))),
            Target::Dir(d) => Ok(dir_fd(d)?.and_then(|fd| fd_entry(st, fd))),
        }
    }
}

/// Reads the current directory from the kernel (after a chdir, a fork, or at start): the
/// kernel's answer follows symbolic links, as the calls that use it will.
pub(crate) fn learn_cwd(state: &State) {
    let mut buf = [0u8; PATH_MAX];
    if let Ok(n) = sys::getcwd(&mut buf) {
        cwd::set(&buf[..n], entry_of_normal(state, &buf[..n], true));
    }
}
