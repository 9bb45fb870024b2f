//! The environment a program is started with: what it holds of what the stage carries
//! (the stage in `LD_PRELOAD`, the segment in `SLUICE_SEGMENT`, the mark of a supervised
//! process tree), and a copy that carries what it lacked.

use std::ffi::{CStr, c_char};

use super::Envp;

const PRELOAD: &[u8] = b"LD_PRELOAD=";
const SEGMENT: &[u8] = b"SLUICE_SEGMENT=";
/// The mark `sluice supervise` puts in the environment of the program it supervises: its
/// descendants are under the same filter already.
const SUPERVISED: &[u8] = b"SLUICE_SUPERVISED=";

/// What the stage carries into the programs it starts.
pub(super) struct Carry {
    /// The stage's own entry in `LD_PRELOAD` (a path), when it was named there.
    pub(super) ours: Option<&'static [u8]>,
    /// The whole `SLUICE_SEGMENT=…` entry.
    pub(super) segment: &'static CStr,
}

/// Bytes enough for the text of any environment this builds: the stage's entry added to
/// the longest `LD_PRELOAD` value an environment can hold (the kernel's limit on one
/// string, 32 pages).
pub(super) fn text_room(carry: &Carry) -> usize {
    PRELOAD.len() + carry.ours.map_or(0, <[u8]>::len) + 1 + 32 * 4096 + 1
}

/// What an environment holds of what the stage carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Read {
    /// The index of an `LD_PRELOAD` entry that does not name the stage, when the stage
    /// is to be added to it; `Some(None)` when there is no `LD_PRELOAD` at all.
    preload: Option<Option<usize>>,
    /// Whether `SLUICE_SEGMENT` is missing.
    segment: bool,
    /// The entries of the environment.
    pub(super) len: usize,
    /// Whether it marks its process tree as under a supervisor already.
    pub(super) marked: bool,
}

impl Read {
    /// Whether the environment lacks the stage or the segment.
    pub(super) fn lacks(&self) -> bool {
        self.preload.is_some() || self.segment
    }
}

/// What `envp` holds of what `carry` carries. A null `envp` is an empty environment.
pub(super) fn read(envp: Envp, carry: &Carry) -> Read {
    let ours = carry.ours;
    let mut preload = ours.map(|_| None);
    let mut marked = false;
    let mut seen_preload = false;
    let mut segment = true;
    let mut len = 0;
    while !envp.is_null() {
        // SAFETY: the caller's environment, null-terminated, as exec requires.
        let e = unsafe { *envp.add(len) };
        if e.is_null() {
            break;
        }
        // SAFETY: each entry is a NUL-terminated string.
        let entry = unsafe { CStr::from_ptr(e) }.to_bytes();
        if let Some(value) = entry.strip_prefix(PRELOAD) {
            // The loader reads the first one only.
            if let Some(ours) = ours
                && !seen_preload
            {
                preload = (!names(value, ours)).then_some(Some(len));
            }
            seen_preload = true;
        } else if entry.starts_with(SEGMENT) {
            segment = false;
        } else if entry.starts_with(SUPERVISED) {
            marked = true;
        }
        len += 1;
    }
    Read {
        preload,
        segment,
        len,
        marked,
    }
}

/// Whether the preload list `value` names the library `ours`.
fn names(value: &[u8], ours: &[u8]) -> bool {
    value.split(|&b| b == b':' || b == b' ').any(|n| n == ours)
}

/// Writes into `ptrs` (and, for a rewritten `LD_PRELOAD`, into `text`) an environment
/// that carries the stage: `envp`'s entries in order, `LD_PRELOAD` with the stage in
/// front, then the entries it lacked. `None` when it does not fit.
pub(super) fn build(
    envp: Envp,
    lacks: Read,
    carry: &Carry,
    ptrs: &mut [*const c_char],
    text: &mut [u8],
) -> Option<()> {
    let ours = carry.ours.unwrap_or_default();
    let preload_entry = |text: &mut [u8], theirs: &[u8]| -> Option<*const c_char> {
        let parts: [&[u8]; 4] = [
            PRELOAD,
            ours,
            if theirs.is_empty() { b"" } else { b" " },
            theirs,
        ];
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let out = text.get_mut(..len + 1)?;
        let mut at = 0;
        for p in parts {
            out[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        out[len] = 0;
        Some(out.as_ptr().cast())
    };
    let extra = usize::from(lacks.preload == Some(None)) + usize::from(lacks.segment);
    let ptrs = ptrs.get_mut(..lacks.len + extra + 1)?;
    for (i, p) in ptrs.iter_mut().take(lacks.len).enumerate() {
        // SAFETY: `lacks` counted `len` entries in `envp`.
        *p = unsafe { *envp.add(i) };
    }
    let mut next = lacks.len;
    match lacks.preload {
        Some(Some(i)) => {
            // SAFETY: entry `i` is an `LD_PRELOAD=…` string of `envp`.
            let theirs = unsafe { CStr::from_ptr(ptrs[i]) }.to_bytes();
            ptrs[i] = preload_entry(text, &theirs[PRELOAD.len()..])?;
        }
        Some(None) => {
            ptrs[next] = preload_entry(text, b"")?;
            next += 1;
        }
        None => {}
    }
    if lacks.segment {
        ptrs[next] = carry.segment.as_ptr();
        next += 1;
    }
    ptrs[next] = std::ptr::null();
    Some(())
}

/// An anonymous mapping for an array too large for the stack (an environment, or the
/// wrapper's arguments), unmapped on drop (when the exec failed or a spawn returned).
pub(super) struct Mapped {
    at: *mut u8,
    len: usize,
    entries: usize,
}

impl Mapped {
    /// Room for `entries` pointers and `text` bytes after them.
    pub(super) fn new(entries: usize, text: usize) -> Option<Mapped> {
        let len = entries * size_of::<*const c_char>() + text;
        let at = crate::sys::map_anonymous(len).ok()?;
        Some(Mapped { at, len, entries })
    }

    /// The room for the pointers, and the room for the text after it.
    pub(super) fn parts(&mut self) -> (&mut [*const c_char], &mut [u8]) {
        let off = self.entries * size_of::<*const c_char>();
        // SAFETY: two disjoint parts of the mapping, which lives as long as `self`; the
        // first is aligned (a mapping is page-aligned).
        unsafe {
            (
                std::slice::from_raw_parts_mut(self.at.cast(), self.entries),
                std::slice::from_raw_parts_mut(self.at.add(off), self.len - off),
            )
        }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        crate::sys::keep_errno(|| {
            // SAFETY: the mapping made in `new`, no longer used.
            unsafe { libc::syscall(libc::SYS_munmap, self.at, self.len) };
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(entries: &[&CStr]) -> Vec<*const c_char> {
        entries
            .iter()
            .map(|e| e.as_ptr())
            .chain([std::ptr::null()])
            .collect()
    }

    fn strings(envp: &[*const c_char]) -> Vec<String> {
        envp.iter()
            .take_while(|p| !p.is_null())
            // SAFETY: the test's own NUL-terminated strings.
            .map(|&p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn an_environment_without_the_stage_gets_it_and_keeps_its_own_entries() {
        let carry = Carry {
            ours: Some(b"/opt/sluice/lib/libsluice_stage.so"),
            segment: c"SLUICE_SEGMENT=/dev/shm/sluice/job.seg",
        };
        let stage = "LD_PRELOAD=/opt/sluice/lib/libsluice_stage.so";
        let segment = "SLUICE_SEGMENT=/dev/shm/sluice/job.seg";
        let cases: [(&[&CStr], Vec<String>); 5] = [
            (&[], vec![stage.into(), segment.into()]),
            (
                &[c"PATH=/bin", c"LD_PRELOAD=/usr/lib/libdarshan.so"],
                vec![
                    "PATH=/bin".into(),
                    format!("{stage} /usr/lib/libdarshan.so"),
                    segment.into(),
                ],
            ),
            (
                &[c"SLUICE_SEGMENT=/other.seg", c"HOME=/root"],
                vec![
                    "SLUICE_SEGMENT=/other.seg".into(),
                    "HOME=/root".into(),
                    stage.into(),
                ],
            ),
            (
                &[c"LD_PRELOAD=", c"X=1"],
                vec![stage.into(), "X=1".into(), segment.into()],
            ),
            (
                &[c"LD_PRELOAD=/a.so:/opt/sluice/lib/libsluice_stage.so"],
                vec![
                    "LD_PRELOAD=/a.so:/opt/sluice/lib/libsluice_stage.so".into(),
                    segment.into(),
                ],
            ),
        ];
        for (given, want) in cases {
            let envp = env(given);
            let read = read(envp.as_ptr(), &carry);
            assert!(read.lacks(), "{given:?} lacks the stage");
            let mut ptrs = [std::ptr::null(); 8];
            let mut text = [0u8; 256];
            build(envp.as_ptr(), read, &carry, &mut ptrs, &mut text).expect("fits");
            assert_eq!(strings(&ptrs), want, "from {given:?}");
        }
        let carrying = env(&[
            c"LD_PRELOAD=/opt/sluice/lib/libsluice_stage.so",
            c"SLUICE_SEGMENT=/x",
            c"SLUICE_SUPERVISED=1",
        ]);
        let r = read(carrying.as_ptr(), &carry);
        assert!(!r.lacks() && r.marked, "carries the stage, and the mark");
        let tiny = env(&[c"A=1", c"B=2"]);
        let mut ptrs = [std::ptr::null(); 3];
        let mut text = [0u8; 256];
        let r = read(tiny.as_ptr(), &carry);
        assert!(build(tiny.as_ptr(), r, &carry, &mut ptrs, &mut text).is_none());
        let mut m = Mapped::new(r.len + 3, text_room(&carry)).expect("a mapping");
        let (ptrs, text) = m.parts();
        assert!(build(tiny.as_ptr(), r, &carry, ptrs, text).is_some());
        assert_eq!(strings(ptrs), ["A=1", "B=2", stage, segment]);
    }
}
