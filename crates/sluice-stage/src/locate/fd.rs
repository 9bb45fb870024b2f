//! What a descriptor or a directory stream refers to: from the descriptor table, or, the
//! first time a descriptor is seen (inherited across exec, a shell redirect, received over
//! a socket), once from `/proc/self/fd`.

use std::ffi::{CStr, c_int, c_void};

use sluice_core::path::PATH_MAX;

use super::path::entry_of_normal;
use crate::hot::HOT;
use crate::memory::probe::{self, Unreadable};
use crate::state::State;
use crate::sys;
use crate::tables::fdtable::{self, Entry};

/// The descriptor under a `DIR*`, through the real `dirfd` (`DIR` is opaque), once a probe
/// has read the word `dirfd` reads; [`Unreadable`] for a stream that cannot be read
/// (null, or an address the application should not have passed), which libc is left to
/// fault on or refuse as it would without the stage.
///
/// clippy cannot know that the pointer is only passed on, never dereferenced here.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
#[inline]
pub(crate) fn dir_fd(dir: *mut c_void) -> Result<Option<c_int>, Unreadable> {
    probe::readable(dir)?;
    let Some(f) = HOT.slots.dirfd.get() else {
        return Ok(None);
    };
    // SAFETY: the slot holds dirfd, whose signature this is; the stream is the
    // application's, valid for the call it made. dirfd may set errno: the application
    // must not see that.
    let fd = sys::keep_errno(|| unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void) -> c_int>(f)(dir)
    });
    Ok((fd >= 0).then_some(fd))
}

/// What `fd` refers to, from the table or, the first time, from `/proc/self/fd`.
#[inline]
pub(crate) fn fd_entry(st: &State, fd: c_int) -> Option<Entry> {
    if fd < 0 {
        return None;
    }
    if let Some(e) = fdtable::get(fd) {
        return Some(e);
    }
    classify_fd(st, fd)
}

#[cold]
#[inline(never)]
fn classify_fd(st: &State, fd: c_int) -> Option<Entry> {
    let mut buf = [0u8; PATH_MAX];
    let e = match fd_link(fd, &mut buf)? {
        Some(n) => entry_of_normal(st, &buf[..n], true),
        None => Entry::NotAFile,
    };
    fdtable::set(fd, e);
    Some(e)
}

/// The path `fd` was opened at, when it is a file.
pub(super) fn fd_path(fd: c_int, buf: &mut [u8; PATH_MAX]) -> Option<usize> {
    fd_link(fd, buf)?
}

/// Reads `/proc/self/fd/FD`: `None` when the descriptor is not open, `Some(None)` when it
/// is no file (socket, pipe, anonymous inode), else the path's length in `buf`.
fn fd_link(fd: c_int, buf: &mut [u8; PATH_MAX]) -> Option<Option<usize>> {
    let mut name = *b"/proc/self/fd/\0\0\0\0\0\0\0\0\0\0\0\0";
    let mut digits = [0u8; 10];
    let mut k = 0;
    let mut v = fd as u32;
    loop {
        digits[k] = b'0' + (v % 10) as u8;
        k += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for (i, d) in digits[..k].iter().rev().enumerate() {
        name[14 + i] = *d;
    }
    let cname = CStr::from_bytes_until_nul(&name).ok()?;
    let n = sys::keep_errno(|| sys::readlink(cname, buf)).ok()?;
    // Memory files and SysV shared memory show as paths under "/" but are no files.
    if buf.first() != Some(&b'/')
        || buf[..n].starts_with(b"/memfd:")
        || buf[..n].starts_with(b"/SYSV")
    {
        return Some(None);
    }
    let deleted = b" (deleted)";
    let n = if buf[..n].ends_with(deleted) {
        n - deleted.len()
    } else {
        n
    };
    Some(Some(n))
}
