//! Where a call's target lies at a glance: the question every hook asks first, answered
//! from what the call names and the stage's tables, with no lookup of the mount table and
//! no copy. A path is read once, by the probe's glance ([`probe::glance`]); a descriptor
//! by its byte in the descriptor table. What a glance cannot tell is left to
//! [`Target::resolve`](super::Target::resolve).

use std::ffi::c_char;

use sluice_core::path::{Glance, PlaceIdx, Prefix};

use super::Target;
use crate::memory::probe::{self, Glanced, Unreadable};
use crate::state::State;
use crate::tables::cwd;
use crate::tables::fdtable::{self, Entry};

/// Where a call's target lies, at a glance.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Located {
    /// In no managed place: recorded as this entry.
    Unmanaged(Entry),
    /// In this managed place, and no other place lies below the target.
    Managed(PlaceIdx),
    /// A glance cannot tell (a dotted or unreadable path, a descriptor never seen, a
    /// stream, a directory descriptor): the full lookup's, [`Target::resolve`].
    Resolve,
}

/// Where `target` lies at a glance: a path named from the current directory by
/// [`path`], a descriptor by its byte in the table (one the shim's streams already
/// trust); every other kind of target needs resolving.
#[inline(always)]
pub(crate) fn glance(st: &State, target: Target) -> Located {
    match target {
        Target::Path(p) | Target::At(libc::AT_FDCWD, p) => path(st, p),
        Target::Fd(fd) => {
            let b = fdtable::byte(fd);
            if fdtable::byte_is_unmanaged(b)
                && let Some(entry) = Entry::decode(b)
            {
                return Located::Unmanaged(entry);
            }
            match Entry::decode(b) {
                Some(Entry::File { place, .. }) if st.places().is_managed(place) => {
                    Located::Managed(place)
                }
                _ => Located::Resolve,
            }
        }
        _ => Located::Resolve,
    }
}

/// Where a path lies at a glance, from one pass over it ([`probe::glance`]) and no lookup:
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
fn path(st: &State, p: *const c_char) -> Located {
    let prefixes = st.prefixes();
    let root = Entry::File {
        place: 0,
        below: false,
    };
    let stand = match probe::glance(p, prefixes.first()) {
        Ok(Glanced::Elsewhere) => return Located::Unmanaged(root),
        Ok(Glanced::Compared(stand)) => stand,
        Ok(Glanced::Relative) => {
            return match cwd::entry() {
                Some(
                    e @ Entry::File {
                        place,
                        below: false,
                    },
                ) if !st.places().is_managed(place) => Located::Unmanaged(e),
                _ => Located::Resolve,
            };
        }
        Ok(Glanced::Dotted) | Err(Unreadable) => return Located::Resolve,
    };
    let glance = match prefixes.settled(stand) {
        Some(glance) => glance,
        // SAFETY: an absolute path the probe read.
        None => unsafe { among_places(st, p) },
    };
    match glance {
        Glance::Apart => Located::Unmanaged(root),
        Glance::In(place) => Located::Managed(place),
        // SAFETY: the probe read the path's first two bytes.
        Glance::Unknown => match managed_under_root(st, unsafe { *p.add(1) } as u8) {
            Some(place) => Located::Managed(place),
            None => Located::Resolve,
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

/// Place 0, when the root is managed and an absolute path whose byte after its slash is
/// `second` lies under no other place, nor has one below it: that byte starts no place
/// (and is not the path's end: the other places lie below `/` itself). The caller has
/// checked that no component starts with a dot.
#[inline(always)]
fn managed_under_root(st: &State, second: u8) -> Option<PlaceIdx> {
    let places = st.places();
    (places.is_managed(0) && second != 0 && places.no_place_starts_with(second)).then_some(0)
}
