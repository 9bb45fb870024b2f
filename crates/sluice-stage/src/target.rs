//! Where a call's target lies: from a path, a directory descriptor and a path, a file
//! descriptor, a `FILE*` or a `DIR*`, to an [`Entry`] of the mount table.
//!
//! The common cases cost a string scan and a table lookup: an absolute path already in
//! normal form is matched in place; a relative path without `..` takes its directory's
//! entry when no managed place lies below that directory. Everything else is joined and
//! normalised in a stack buffer. A descriptor the stage has not seen opened is classified
//! once from `/proc/self/fd`.
//!
//! A path or a stream is read only through [`probe`]: one the kernel could not read
//! either is [`Unreadable`], and its call is passed through unjudged.

use std::ffi::{CStr, c_char, c_int, c_void};

use sluice_core::path::{Glance, PATH_MAX, PlaceIdx, Prefix, resolve_into};

use crate::fdtable::{self, Entry};
use crate::probe::{self, Glanced, Unreadable};
use crate::state::State;
use crate::{cwd, sys};

/// What a call names as its target.
#[derive(Clone, Copy, Debug)]
pub enum Target {
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
    pub fn resolve(self, st: &State, want_below: bool) -> Result<Option<Entry>, Unreadable> {
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

/// Where a path the application passed lies, at a glance; see [`path_at_a_glance`].
#[derive(Clone, Copy, Debug)]
pub enum Seen {
    /// In no managed place: recorded as this entry.
    Unmanaged(Entry),
    /// In this managed place, and no other place lies below the path.
    Managed(PlaceIdx),
    /// A glance cannot tell (or the path cannot be read): the full lookup's.
    Unknown,
}

/// Where a path lies at a glance, from one pass over it ([`probe::scan`]) and no lookup:
///
/// - an absolute path whose byte after the slash starts no managed place, or that parts
///   from every managed place between components ([`Glance::Apart`]), lies in none: it is
///   recorded as under the root, with no managed place below;
/// - an absolute path in a managed place no other place lies below ([`Glance::In`]), or
///   any path under a managed root that the letter after its slash takes into no other
///   place, lies in that place;
/// - a relative path from an unmanaged current directory with no managed place below it
///   is recorded as that directory's place;
///
/// in every case with no component starting with a dot, the only way a path could lead
/// elsewhere than its letters say. The place recorded for an unmanaged file may be a
/// coarser one than a full lookup finds: only whether it is managed is ever asked of it.
#[allow(clippy::not_unsafe_ptr_arg_deref)] // read through the probe, which cannot fault
#[inline(always)]
pub fn path_at_a_glance(st: &State, p: *const c_char) -> Seen {
    let prefixes = st.prefixes();
    let root = Entry::File {
        place: 0,
        below: false,
    };
    let stand = match probe::glance(p, prefixes.first()) {
        Ok(Glanced::Elsewhere) => return Seen::Unmanaged(root),
        Ok(Glanced::Compared(stand)) => stand,
        Ok(Glanced::Relative) => {
            return match cwd::entry() {
                Some(
                    e @ Entry::File {
                        place,
                        below: false,
                    },
                ) if !st.places().is_managed(place) => Seen::Unmanaged(e),
                _ => Seen::Unknown,
            };
        }
        Ok(Glanced::Dotted) | Err(Unreadable) => return Seen::Unknown,
    };
    let glance = match prefixes.settled(stand) {
        Some(glance) => glance,
        // SAFETY: an absolute path the probe read.
        None => unsafe { among_places(st, p) },
    };
    match glance {
        Glance::Apart => Seen::Unmanaged(root),
        Glance::In(place) => Seen::Managed(place),
        // SAFETY: the probe read the path's first two bytes.
        Glance::Unknown => match st.managed_under_root(unsafe { *p.add(1) } as u8) {
            Some(place) => Seen::Managed(place),
            None => Seen::Unknown,
        },
    }
}

/// Where an absolute path lies among several managed places, each compared in turn:
/// out of line, the rare case.
///
/// # Safety
/// `p` is an absolute path a probe read.
#[cold]
#[inline(never)]
unsafe fn among_places(st: &State, p: *const c_char) -> Glance {
    st.prefixes()
        .glance(|x: &Prefix| match probe::glance(p, x) {
            Ok(Glanced::Compared(stand)) => Ok(Some(stand)),
            Ok(_) => Ok(None),
            Err(e) => Err(e),
        })
        .unwrap_or(Glance::Unknown)
}

/// The descriptor under a `DIR*`, through the real `dirfd` (`DIR` is opaque), once a probe
/// has read the word `dirfd` reads; [`Unreadable`] for a stream that cannot be read
/// (null, or an address the application should not have passed), which libc is left to
/// fault on or refuse as it would without the stage.
///
/// clippy cannot know that the pointer is only passed on, never dereferenced here.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
#[inline]
pub fn dir_fd(dir: *mut c_void) -> Result<Option<c_int>, Unreadable> {
    probe::readable(dir)?;
    let Some(f) = crate::hot::HOT.slots.dirfd.get() else {
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

/// The entry of an absolute path in normal form; whether managed places lie below it is
/// worked out only when `want_below` (an open or a chdir will remember the answer), and
/// only when some place lies below the path's own.
#[inline]
pub fn entry_of_normal(st: &State, path: &[u8], want_below: bool) -> Entry {
    let places = st.places();
    let place = places.lookup(path);
    Entry::File {
        place,
        below: want_below && st.may_have_places_below(place) && places.has_places_below(path),
    }
}

/// Where a path lies: relative to `dirfd`, or to the current directory when `None`.
///
/// One pass over the path measures it and finds what keeps it from normal form. An
/// absolute path whose first letter starts no place and that has no component starting
/// with a dot can only fall under the root: the common case of a program reading /usr or
/// /etc while only /scratch is managed, answered without looking at the mount table. An
/// absolute path in normal form is looked up in place.
#[inline(always)]
fn path_entry(
    st: &State,
    dirfd: Option<c_int>,
    p: *const c_char,
    want_below: bool,
) -> Result<Option<Entry>, Unreadable> {
    let scan = probe::scan(p)?;
    // SAFETY: the scan measured the string and read it.
    let rel = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), scan.len) };
    let first = rel.first().copied().unwrap_or(0);
    if first == 0
        && let Some(fd) = dirfd
    {
        return Ok(fd_entry(st, fd));
    }
    if first == b'/' {
        if !scan.slash_dot {
            let places = st.places();
            let second = rel.get(1).copied().unwrap_or(0);
            if second == 0 || places.no_place_starts_with(second) {
                // Every entry but the root lies below "/" (`has_places_below(b"/")`
                // without walking the entries).
                let below = want_below && places.places().len() > 1;
                return Ok(Some(Entry::File { place: 0, below }));
            }
            if scan.is_normal(first) {
                return Ok(Some(entry_of_normal(st, rel, want_below)));
            }
        }
    } else {
        match base_entry(st, dirfd.unwrap_or(libc::AT_FDCWD)) {
            Some(Entry::NotAFile) => return Ok(Some(Entry::NotAFile)),
            Some(Entry::File {
                place,
                below: false,
            }) if !((scan.slash_dot || first == b'.') && has_dotdot(rel)) => {
                return Ok(Some(Entry::File {
                    place,
                    below: false,
                }));
            }
            _ => {}
        }
    }
    Ok(resolve_slow(st, dirfd, rel, want_below))
}

/// The entry of the directory an `*at` call names: the current directory for AT_FDCWD.
#[inline]
fn base_entry(st: &State, dirfd: c_int) -> Option<Entry> {
    match dirfd {
        libc::AT_FDCWD => cwd::entry(),
        fd => fd_entry(st, fd),
    }
}

/// Joins and normalises a path the fast checks could not judge. Out of line, so that the
/// 8 KiB of buffers it needs are taken from the stack only here: a hook called on a small
/// signal stack must not overflow it on the common path.
#[cold]
#[inline(never)]
fn resolve_slow(st: &State, dirfd: Option<c_int>, rel: &[u8], want_below: bool) -> Option<Entry> {
    let mut base_buf = [0u8; PATH_MAX];
    let base_len = match dirfd {
        _ if rel.first() == Some(&b'/') => 0,
        Some(fd) => fd_path(fd, &mut base_buf)?,
        None => match cwd::read(&mut base_buf) {
            // The stage could not learn the current directory: ask the kernel.
            0 => sys::keep_errno(|| sys::readlink(c"/proc/self/cwd", &mut base_buf)).ok()?,
            n => n,
        },
    };
    let mut buf = [0u8; PATH_MAX];
    let n = resolve_into(&mut buf, &base_buf[..base_len], rel)?;
    Some(entry_of_normal(st, &buf[..n], want_below))
}

#[inline]
fn has_dotdot(rel: &[u8]) -> bool {
    rel.split(|&b| b == b'/').any(|c| c == b"..")
}

/// What `fd` refers to, from the table or, the first time, from `/proc/self/fd`.
#[inline]
pub fn fd_entry(st: &State, fd: c_int) -> Option<Entry> {
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
pub fn fd_path(fd: c_int, buf: &mut [u8; PATH_MAX]) -> Option<usize> {
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
