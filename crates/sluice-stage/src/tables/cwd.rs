//! The current directory, tracked through chdir and fchdir so that relative paths resolve
//! without a system call.
//!
//! A sequence lock: the writer (a chdir, rare) makes the sequence odd, copies, makes it
//! even; a reader copies and retries if the sequence moved. The words are atomics, so a
//! torn read is only ever retried, never undefined. Most relative paths never copy the
//! path at all: the directory's entry says where it lies, and only a path with `..` or a
//! directory with managed places below it needs the full text.

use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};

use sluice_core::path::PATH_MAX;

use super::fdtable::Entry;

const WORDS: usize = PATH_MAX / 8;

struct Cwd {
    seq: AtomicU64,
    len: AtomicUsize,
    words: [AtomicU64; WORDS],
    entry: AtomicU8,
}

static CWD: Cwd = Cwd {
    seq: AtomicU64::new(0),
    len: AtomicUsize::new(0),
    words: [const { AtomicU64::new(0) }; WORDS],
    entry: AtomicU8::new(0),
};

/// Records a new current directory (absolute, normalised) and where it lies.
pub fn set(path: &[u8], entry: Entry) {
    let n = path.len().min(PATH_MAX);
    // Take the lock: move the sequence from even to odd, so that two threads changing
    // directory at once never interleave their copies.
    let mut seq = CWD.seq.load(Ordering::Relaxed);
    loop {
        if seq % 2 == 1 {
            std::hint::spin_loop();
            seq = CWD.seq.load(Ordering::Relaxed);
            continue;
        }
        match CWD
            .seq
            .compare_exchange_weak(seq, seq + 1, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => break,
            Err(s) => seq = s,
        }
    }
    for (i, w) in CWD.words.iter().enumerate().take(n.div_ceil(8)) {
        let mut b = [0u8; 8];
        let chunk = &path[i * 8..(i * 8 + 8).min(n)];
        b[..chunk.len()].copy_from_slice(chunk);
        w.store(u64::from_ne_bytes(b), Ordering::Relaxed);
    }
    CWD.len.store(n, Ordering::Relaxed);
    CWD.entry.store(entry.encode(), Ordering::Relaxed);
    CWD.seq.fetch_add(1, Ordering::Release);
}

/// Releases the lock a thread of the parent may have held when it forked: in the child
/// that thread does not exist, and its copy would never finish. The path is then learnt
/// anew.
pub fn unlock_after_fork() {
    let seq = CWD.seq.load(Ordering::Relaxed);
    if seq % 2 == 1 {
        CWD.seq.store(seq + 1, Ordering::Release);
    }
}

/// Where the current directory lies, or `None` before the stage learnt it.
#[inline]
pub fn entry() -> Option<Entry> {
    Entry::decode(CWD.entry.load(Ordering::Relaxed))
}

/// Copies the current directory's path into `buf`; returns its length.
pub fn read(buf: &mut [u8; PATH_MAX]) -> usize {
    loop {
        let s1 = CWD.seq.load(Ordering::Acquire);
        if s1 % 2 == 1 {
            std::hint::spin_loop();
            continue;
        }
        let n = CWD.len.load(Ordering::Relaxed);
        for (i, w) in CWD.words.iter().enumerate().take(n.div_ceil(8)) {
            let b = w.load(Ordering::Relaxed).to_ne_bytes();
            let end = (i * 8 + 8).min(n);
            buf[i * 8..end].copy_from_slice(&b[..end - i * 8]);
        }
        std::sync::atomic::fence(Ordering::Acquire);
        if CWD.seq.load(Ordering::Relaxed) == s1 {
            return n;
        }
    }
}
