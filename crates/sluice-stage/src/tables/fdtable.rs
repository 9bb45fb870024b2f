//! What the stage knows of each file descriptor: a flat array of bytes, lock-free.
//!
//! Filled by every open, copied by every dup, cleared by every close. A descriptor the
//! stage never saw opened (inherited across exec, a shell redirect, received over a
//! socket) reads as unknown and is classified once from `/proc/self/fd`, then cached.
//! The array lives in `.bss`, so its pages cost memory only once touched. It is the C
//! shim's (`sluice_fd_table`), so that the shim's variadic entry points (`printf` & co)
//! read it without a call; beside it, 256 bytes say which table bytes stand for an
//! unmanaged target ([`publish_unmanaged`]), which lets them pass a call on such a
//! descriptor straight to the real function.

use std::ffi::c_uchar;
use std::sync::atomic::{AtomicU8, Ordering};

use sluice_core::path::{MAX_PLACES, MountTable, PlaceIdx};

/// Descriptors at or above this number are classified on every call, uncached.
pub const TABLE_LEN: usize = crate::abi::FD_TABLE_LEN;

unsafe extern "C" {
    /// The table (shim.c), `TABLE_LEN` bytes.
    static sluice_fd_table: [AtomicU8; TABLE_LEN];
    /// Nonzero for the bytes that stand for an unmanaged target (shim.c); all zero until
    /// [`publish_unmanaged`].
    static sluice_unmanaged_byte: [AtomicU8; 256];
}

const KNOWN: u8 = 0x40;
const BELOW: u8 = 0x80;
const NOT_A_FILE: u8 = 0x01;
const PLACE_MASK: u8 = 0x3f;

const _: () = assert!(MAX_PLACES <= PLACE_MASK as usize + 1);

/// The table.
#[inline(always)]
fn table() -> &'static [AtomicU8; TABLE_LEN] {
    // SAFETY: the shim's array, zeroed at load and only ever accessed atomically (an
    // `AtomicU8` is laid out as a byte; the shim reads it with relaxed atomic loads).
    unsafe { &sluice_fd_table }
}

/// Tells the shim which table bytes stand for a target the stage does not manage: no
/// file, or a file in a place `places` does not manage (the places are fixed at start).
/// Until this runs, the shim sends every call to the hooks.
pub fn publish_unmanaged(places: &MountTable) {
    // SAFETY: the shim's array, only ever accessed atomically.
    let out = unsafe { &sluice_unmanaged_byte };
    for (b, o) in out.iter().enumerate() {
        let unmanaged = match Entry::decode(b as u8) {
            None => false,
            Some(Entry::NotAFile) => true,
            Some(Entry::File { place, .. }) => {
                // Only the bytes `encode` makes: KNOWN set.
                b as u8 & KNOWN != 0 && !places.is_managed(place)
            }
        };
        o.store(unmanaged as c_uchar, Ordering::Relaxed);
    }
}

/// Whether `b`, a byte of the table, stands for an unmanaged target, once
/// [`publish_unmanaged`] has run.
#[inline(always)]
pub fn byte_is_unmanaged(b: u8) -> bool {
    // SAFETY: as in `publish_unmanaged`.
    unsafe { sluice_unmanaged_byte[b as usize].load(Ordering::Relaxed) != 0 }
}

/// The raw byte of `fd` (0 when never seen or out of the table).
#[inline(always)]
pub fn byte(fd: i32) -> u8 {
    slot(fd).map_or(0, |s| s.load(Ordering::Relaxed))
}

/// Where a target lies, as far as the stage cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A file in entry `place` of the mount table; `below` when other entries lie under it
    /// (a directory from which a relative path can cross into another place).
    File {
        /// The mount table entry.
        place: PlaceIdx,
        /// Whether other entries lie below this one.
        below: bool,
    },
    /// A socket, pipe, anonymous inode or anything else that is no file: never managed.
    NotAFile,
}

impl Entry {
    /// The byte that stands for this entry (0 is reserved for "never seen").
    pub(crate) fn encode(self) -> u8 {
        match self {
            Entry::File { place, below } => {
                KNOWN | (place & PLACE_MASK) | if below { BELOW } else { 0 }
            }
            Entry::NotAFile => NOT_A_FILE,
        }
    }

    /// The entry a byte stands for.
    pub(crate) fn decode(b: u8) -> Option<Entry> {
        match b {
            0 => None,
            NOT_A_FILE => Some(Entry::NotAFile),
            _ => Some(Entry::File {
                place: b & PLACE_MASK,
                below: b & BELOW != 0,
            }),
        }
    }
}

#[inline]
fn slot(fd: i32) -> Option<&'static AtomicU8> {
    usize::try_from(fd).ok().and_then(|i| table().get(i))
}

/// What is known of `fd`, or `None` when it was never seen.
#[inline]
pub fn get(fd: i32) -> Option<Entry> {
    slot(fd).and_then(|s| Entry::decode(s.load(Ordering::Relaxed)))
}

/// Records what `fd` refers to.
#[inline]
pub fn set(fd: i32, e: Entry) {
    if let Some(s) = slot(fd) {
        s.store(e.encode(), Ordering::Relaxed);
    }
}

/// Forgets `fd` (before it is closed, so that a concurrent open of the same number,
/// recorded after, is not wiped).
#[inline]
pub fn clear(fd: i32) {
    if let Some(s) = slot(fd) {
        s.store(0, Ordering::Relaxed);
    }
}

/// Forgets every descriptor in `first..=last`.
pub fn clear_range(first: u32, last: u32) {
    let end = (last as usize).min(TABLE_LEN - 1);
    for s in table().iter().take(end + 1).skip(first as usize) {
        s.store(0, Ordering::Relaxed);
    }
}

/// Makes `to` what `from` is (dup).
#[inline]
pub fn copy(from: i32, to: i32) {
    match get(from) {
        Some(e) => set(to, e),
        None => clear(to),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_copy_clear() {
        set(
            5,
            Entry::File {
                place: 3,
                below: true,
            },
        );
        assert_eq!(
            get(5),
            Some(Entry::File {
                place: 3,
                below: true
            })
        );
        copy(5, 9);
        assert_eq!(get(9), get(5));
        clear_range(5, 9);
        assert_eq!(get(5), None);
        set(7, Entry::NotAFile);
        assert_eq!(get(7), Some(Entry::NotAFile));
        assert_eq!(get(-1), None);
        assert_eq!(get(i32::MAX), None);
    }
}
