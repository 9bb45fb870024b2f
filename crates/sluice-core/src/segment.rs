//! The shared-memory segment: the only link between a job's processes and the rest of
//! sluice.
//!
//! One segment per job and node, a file under `/dev/shm` mapped by every process of the
//! job. It holds the stage's configuration (rules, managed places, job identity) as text,
//! one GCRA bucket per rule, and counters. Everything written after creation is an atomic,
//! and nothing is guarded by a lock, so a process killed at any instant leaves the segment
//! consistent. Each thread owns a shard of counters that only it writes, so counting is
//! a plain load and store on a line no other core touches; threads beyond the shards a
//! segment holds share one last shard through atomic additions. Readers add them up.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::bucket::{Limit, TatCell};
use crate::op::Op;

/// Most rules a segment holds.
pub const MAX_RULES: usize = 64;
/// Counter shards a thread may own alone (one more is shared by any threads beyond).
/// Untouched shards cost no memory: the segment is a sparse file on tmpfs.
pub const SHARDS: usize = 256;
/// Bytes reserved for the configuration text.
pub const CONFIG_LEN: usize = 60 * 1024;

const MAGIC: u64 = u64::from_le_bytes(*b"SLUICE\0\x01");
const LAYOUT_VERSION: u64 = 1;

/// Why a mapped segment cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SegmentError {
    /// Not a sluice segment, or one written by another layout version.
    #[error("not a sluice segment of layout version {LAYOUT_VERSION}")]
    BadMagic,
    /// The creator has not finished writing the configuration.
    #[error("segment is not initialised")]
    NotReady,
    /// The configuration does not fit.
    #[error("configuration is {0} bytes, more than the {CONFIG_LEN} a segment holds")]
    ConfigTooLarge(usize),
    /// The configuration is not UTF-8.
    #[error("configuration text is not UTF-8")]
    ConfigNotText,
}

#[repr(C, align(64))]
struct Header {
    magic: AtomicU64,
    version: AtomicU64,
    config_len: AtomicU64,
    thread_seq: AtomicU64,
}

/// A rule's bucket: the TAT on a cache line of its own (written by every reservation),
/// and the limit on another (read by every call, written only when a controller acts).
#[repr(C, align(64))]
pub struct SharedBucket {
    tat: AtomicU64,
    _tat_line: [u64; 7],
    per_sec: AtomicU64,
    burst: AtomicU64,
    generation: AtomicU64,
}

impl TatCell for SharedBucket {
    fn tat(&self) -> &AtomicU64 {
        &self.tat
    }
}

impl SharedBucket {
    /// The current limit.
    #[inline]
    pub fn limit(&self) -> Limit {
        Limit::new(
            self.per_sec.load(Ordering::Acquire),
            self.burst.load(Ordering::Relaxed),
        )
    }

    /// Changes the limit; threads holding batches or waiting see the new generation.
    pub fn set_limit(&self, limit: Limit) {
        self.burst.store(limit.burst, Ordering::Relaxed);
        self.per_sec.store(limit.per_sec, Ordering::Release);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Bumped on every limit change.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}

/// Calls and bytes of one operation.
#[repr(C)]
#[derive(Default)]
pub struct OpCounter {
    /// Calls made on managed targets.
    pub calls: AtomicU64,
    /// Bytes moved (data operations).
    pub bytes: AtomicU64,
}

/// What one rule admitted.
#[repr(C)]
#[derive(Default)]
pub struct RuleCounter {
    /// Calls admitted.
    pub admitted: AtomicU64,
    /// Bytes charged (bytes rules) .
    pub bytes: AtomicU64,
    /// Nanoseconds callers spent waiting.
    pub wait_ns: AtomicU64,
    /// Calls waiting now (a gauge): with `admitted`, the demand a controller sees.
    pub waiting: AtomicU64,
}

/// The counters one group of threads writes.
#[repr(C, align(64))]
pub struct Shard {
    /// Per operation, indexed by [`Op::index`].
    pub ops: [OpCounter; Op::COUNT],
    /// Per rule.
    pub rules: [RuleCounter; MAX_RULES],
    /// Calls on unmanaged targets.
    pub unmanaged: AtomicU64,
}

/// The segment, as mapped.
#[repr(C)]
pub struct Segment {
    header: Header,
    config: UnsafeCell<[u8; CONFIG_LEN]>,
    buckets: [SharedBucket; MAX_RULES],
    shards: [Shard; SHARDS + 1],
}

// SAFETY: every field is an atomic except `config`, which is written only by `init` before
// `config_len` is published with Release, and only read after it is observed with Acquire.
unsafe impl Sync for Segment {}

impl Segment {
    /// Bytes to map.
    pub const SIZE: usize = std::mem::size_of::<Segment>();

    /// Views mapped memory as a segment.
    ///
    /// # Safety
    /// `ptr` must point to at least [`Segment::SIZE`] bytes, aligned to 64, zero-filled or
    /// written only through this type, that stay mapped for `'a`.
    pub unsafe fn from_ptr<'a>(ptr: *const u8) -> &'a Segment {
        // SAFETY: the caller guarantees size, alignment and lifetime; all-zero bytes are a
        // valid value of every field (atomics and a byte array).
        unsafe { &*(ptr as *const Segment) }
    }

    /// Writes the configuration and the rules' limits into a fresh (zeroed) segment.
    ///
    /// # Safety
    /// No other process or thread may use the segment until this returns.
    pub unsafe fn init(&self, config: &str, limits: &[Limit]) -> Result<(), SegmentError> {
        if config.len() > CONFIG_LEN {
            return Err(SegmentError::ConfigTooLarge(config.len()));
        }
        // SAFETY: nobody else reads the config before `config_len` is published below.
        unsafe { (&mut *self.config.get())[..config.len()].copy_from_slice(config.as_bytes()) };
        for (b, l) in self.buckets.iter().zip(limits) {
            b.set_limit(*l);
        }
        self.header.magic.store(MAGIC, Ordering::Relaxed);
        self.header.version.store(LAYOUT_VERSION, Ordering::Relaxed);
        self.header
            .config_len
            .store(config.len() as u64 + 1, Ordering::Release);
        Ok(())
    }

    /// The configuration text, once the segment is initialised and of our layout.
    pub fn config(&self) -> Result<&str, SegmentError> {
        if self.header.magic.load(Ordering::Relaxed) != MAGIC
            || self.header.version.load(Ordering::Relaxed) != LAYOUT_VERSION
        {
            return Err(SegmentError::BadMagic);
        }
        let len = self.header.config_len.load(Ordering::Acquire);
        if len == 0 {
            return Err(SegmentError::NotReady);
        }
        // SAFETY: published with Release in `init` and never written again.
        let bytes = unsafe { &(&*self.config.get())[..(len - 1) as usize] };
        std::str::from_utf8(bytes).map_err(|_| SegmentError::ConfigNotText)
    }

    /// Rule `i`'s bucket.
    #[inline]
    pub fn bucket(&self, i: usize) -> &SharedBucket {
        &self.buckets[i]
    }

    /// Counter shard `i`; [`SHARDS`] and above is the shared one.
    #[inline]
    pub fn shard(&self, i: usize) -> &Shard {
        &self.shards[i.min(SHARDS)]
    }

    /// A shard for a new thread: one of its own while any is left, else the shared one.
    pub fn next_shard(&self) -> usize {
        (self.header.thread_seq.fetch_add(1, Ordering::Relaxed) as usize).min(SHARDS)
    }

    /// Sums the shards.
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for s in &self.shards {
            for (acc, c) in t.ops.iter_mut().zip(&s.ops) {
                acc.calls += c.calls.load(Ordering::Relaxed);
                acc.bytes += c.bytes.load(Ordering::Relaxed);
            }
            for (acc, c) in t.rules.iter_mut().zip(&s.rules) {
                acc.admitted += c.admitted.load(Ordering::Relaxed);
                acc.bytes += c.bytes.load(Ordering::Relaxed);
                acc.wait_ns += c.wait_ns.load(Ordering::Relaxed);
                acc.waiting = acc.waiting.wrapping_add(c.waiting.load(Ordering::Relaxed));
            }
            t.unmanaged += s.unmanaged.load(Ordering::Relaxed);
        }
        t
    }
}

/// Adds `v` to a counter: a plain load and store when the caller owns the shard (its only
/// writer), an atomic addition in the shared shard.
#[inline(always)]
pub fn bump(counter: &AtomicU64, v: u64, owned: bool) {
    if owned {
        counter.store(
            counter.load(Ordering::Relaxed).wrapping_add(v),
            Ordering::Relaxed,
        );
    } else {
        counter.fetch_add(v, Ordering::Relaxed);
    }
}

/// Plain sums of an operation's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpTotal {
    /// Calls.
    pub calls: u64,
    /// Bytes.
    pub bytes: u64,
}

/// Plain sums of a rule's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleTotal {
    /// Calls admitted.
    pub admitted: u64,
    /// Bytes charged.
    pub bytes: u64,
    /// Nanoseconds waited.
    pub wait_ns: u64,
    /// Calls waiting at the moment the totals were taken.
    pub waiting: u64,
}

/// Every counter of a segment, summed over its shards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Totals {
    /// Per operation, indexed by [`Op::index`].
    pub ops: [OpTotal; Op::COUNT],
    /// Per rule.
    pub rules: [RuleTotal; MAX_RULES],
    /// Calls on unmanaged targets.
    pub unmanaged: u64,
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            ops: [OpTotal::default(); Op::COUNT],
            rules: [RuleTotal::default(); MAX_RULES],
            unmanaged: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Box<std::mem::MaybeUninit<Segment>> {
        let mut b = Box::<Segment>::new_uninit();
        // SAFETY: writing zeros over the whole allocation is a valid Segment.
        unsafe { std::ptr::write_bytes(b.as_mut_ptr() as *mut u8, 0, Segment::SIZE) };
        b
    }

    #[test]
    fn init_publishes_config_and_limits() {
        let b = fresh();
        // SAFETY: zeroed, aligned, lives for the test.
        let seg = unsafe { Segment::from_ptr(b.as_ptr() as *const u8) };
        assert_eq!(seg.config(), Err(SegmentError::BadMagic));
        // SAFETY: nobody else uses it.
        unsafe { seg.init("job 1\n", &[Limit::new(5, 1)]).unwrap() };
        assert_eq!(seg.config().unwrap(), "job 1\n");
        assert_eq!(seg.bucket(0).limit(), Limit::new(5, 1));
        seg.shard(3).ops[Op::Getattr.index()]
            .calls
            .fetch_add(2, Ordering::Relaxed);
        seg.shard(SHARDS + 9).ops[Op::Getattr.index()]
            .calls
            .fetch_add(1, Ordering::Relaxed);
        assert_eq!(seg.totals().ops[Op::Getattr.index()].calls, 3);
    }

    #[test]
    fn segment_is_small_enough_to_map_per_job() {
        const { assert!(Segment::SIZE < 1024 * 1024 && Segment::SIZE.is_multiple_of(64)) };
    }
}
