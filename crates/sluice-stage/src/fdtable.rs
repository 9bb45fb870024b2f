//! What the stage knows of each file descriptor: a flat array of bytes, lock-free.
//!
//! Filled by every open, copied by every dup, cleared by every close. A descriptor the
//! stage never saw opened (inherited across exec, a shell redirect, received over a
//! socket) reads as unknown and is classified once from `/proc/self/fd`, then cached.
//! The array lives in `.bss`, so its pages cost memory only once touched.

use std::sync::atomic::{AtomicU8, Ordering};

use sluice_core::path::{MAX_PLACES, PlaceIdx};

/// Descriptors at or above this number are classified on every call, uncached.
pub const TABLE_LEN: usize = 1 << 20;

const KNOWN: u8 = 0x40;
const BELOW: u8 = 0x80;
const NOT_A_FILE: u8 = 0x01;
const PLACE_MASK: u8 = 0x3f;

const _: () = assert!(MAX_PLACES <= PLACE_MASK as usize + 1);

static TABLE: [AtomicU8; TABLE_LEN] = [const { AtomicU8::new(0) }; TABLE_LEN];

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
    usize::try_from(fd).ok().and_then(|i| TABLE.get(i))
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
    for s in TABLE.iter().take(end + 1).skip(first as usize) {
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
