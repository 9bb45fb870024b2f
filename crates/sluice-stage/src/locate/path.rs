//! Where a path lies, in full: joined to its directory and normalised when a glance could
//! not tell.
//!
//! The common cases cost a string scan and a table lookup: an absolute path already in
//! normal form is matched in place; a relative path without `..` takes its directory's
//! entry when no managed place lies below that directory. Everything else is joined and
//! normalised in a stack buffer.

use std::ffi::{c_char, c_int};

use sluice_core::path::{PATH_MAX, resolve_into};

use super::fd::{fd_entry, fd_path};
use crate::memory::probe::{self, Unreadable};
use crate::state::State;
use crate::sys;
use crate::tables::cwd;
use crate::tables::fdtable::Entry;

/// The entry of an absolute path in normal form; whether managed places lie below it is
/// worked out only when `want_below` (an open or a chdir will remember the answer), and
/// only when some place lies below the path's own.
#[inline]
pub(crate) fn entry_of_normal(st: &State, path: &[u8], want_below: bool) -> Entry {
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
pub(super) fn path_entry(
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
pub(super) fn base_entry(st: &State, dirfd: c_int) -> Option<Entry> {
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
