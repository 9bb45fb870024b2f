//! The shared-memory segment: the only link between a job's processes and the rest of
//! sluice.
//!
//! One segment per job and node, a file under `/dev/shm` mapped by every process of the
//! job. It holds the stage's configuration (rules, pools, managed places, job identity) as
//! text in two areas, one GCRA bucket per channel (a rule, or the job's share of a pool),
//! and counters. A controller changes the configuration by writing the area not in force
//! and bumping a generation the stage checks on every call, and a channel's rate by
//! writing its bucket and waking the threads asleep on it. Every field is an atomic and
//! nothing is guarded by a lock, so a process killed at any instant leaves the segment
//! consistent. Each thread owns a shard of counters that only it writes, so counting is
//! a plain load and store on a line no other core touches; threads beyond the shards a
//! segment holds share one last shard through atomic additions. Readers add them up.
//!
//! # Layouts and upgrades
//!
//! A segment outlives the programs around it: a job started under one release runs on
//! while its node's controller, launchers and stage library are replaced, so a segment
//! written under one layout meets readers of another (a restarted controller adopting
//! it, a new process of the job loading the new stage, an old launcher attaching to a new
//! controller). Every layout from 3 on keeps four words of the [`Header`] where they are,
//! whatever else changes (the *stable prefix*):
//!
//! | word | bytes  | holds |
//! |------|--------|-------|
//! | 0    | 0..8   | the magic number |
//! | 1    | 8..16  | the oldest layout that can read the segment |
//! | 6    | 48..56 | the layout that wrote it (0 in layout 3, which had no such word) |
//! | 7    | 56..64 | refusals: processes that could not use the segment (low half), and the layout of the last one's stage (high half) |
//!
//! Word 1 held "the layout" up to layout 3, whose readers use a segment only when it holds
//! their own number: so a writer puts there the oldest layout that still reads its segments
//! correctly, and readers of layout 3 keep using every segment they can. A reader of layout
//! `R` uses a segment when word 1 is at most `R` and the segment's layout is one it knows
//! (at least [`OLDEST_READABLE`]); otherwise it touches nothing but word 7. A stage that
//! cannot use its segment passes every call through and counts itself in word 7
//! ([`Header::refuse`]); a controller reads word 7 whatever the layout, and reports it.
//!
//! The rule for every change of the layout (each one takes the next [`LAYOUT_VERSION`]):
//! - *Compatible*: fields added where every older layout has bytes it leaves zero and never
//!   reads: a new area after the last one (the file grows; the header has no free word
//!   left). Older readers ignore it, so [`OLDEST_READER`] stays; a newer reader reads such
//!   a field only from segments whose layout has it ([`Layout::version`]), and the
//!   controller checks a file's length against the layout it declares.
//! - *Incompatible*: anything that moves, resizes or changes the meaning of a field an
//!   older reader uses: a counter added to [`Shard`], an operation added to [`Op`] (the
//!   counters are indexed by it), more rules or pools, a bucket's fields, a configuration
//!   item or rule key that older stages do not know (they refuse the whole text). Raise
//!   [`OLDEST_READER`] to the new layout, and [`OLDEST_READABLE`] as far as the new code
//!   no longer reads the old fields. Older stages then refuse the new segments (and say
//!   so), and a newer controller leaves an older segment it cannot read at its last rates.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::bucket::{Limit, TatCell};
use crate::op::Op;

/// Most rules a segment holds.
pub const MAX_RULES: usize = 64;
/// Most pools a segment holds (a pool's channel is `MAX_RULES + pool slot`).
pub const MAX_POOLS: usize = 16;
/// Channels: a bucket and counters each; rules first, then pools.
pub const CHANNELS: usize = MAX_RULES + MAX_POOLS;
/// Counter shards a thread may own alone (one more is shared by any threads beyond).
/// Untouched shards cost no memory: the segment is a sparse file on tmpfs.
pub const SHARDS: usize = 256;
/// Bytes reserved for each of the two configuration areas.
pub const CONFIG_LEN: usize = 60 * 1024;

const MAGIC: u64 = u64::from_le_bytes(*b"SLUICE\0\x01");
/// The layout this build writes (see "Layouts and upgrades" above). Layout 4 added the
/// header's words 6 and 7 to layout 3.
pub const LAYOUT_VERSION: u64 = 4;
/// The oldest layout that reads the segments this build writes correctly: layout 4 only
/// added words that layout 3 leaves zero and never reads.
pub const OLDEST_READER: u64 = 3;
/// The oldest layout whose segments this build reads: layout 3 has every field this build
/// uses, where this build uses it.
pub const OLDEST_READABLE: u64 = 3;
/// The first layout with the stable prefix: word 7 of older ones may be a field of theirs.
const FIRST_STABLE: u64 = 3;
/// Buckets of a latency histogram: bucket `b` counts latencies in `[2^(b-1), 2^b)`
/// nanoseconds (bucket 0: under 1 ns), the last one everything from 2^30 ns (1.07 s) up.
pub const LATENCY_BUCKETS: usize = 32;

/// Why a mapped segment cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SegmentError {
    /// Not a sluice segment (or one not yet initialised).
    #[error("not a sluice segment")]
    NotASegment,
    /// A segment only readers of a later layout can read.
    #[error(
        "segment of layout {}, which needs a reader of layout {} or later; this is layout {LAYOUT_VERSION}",
        .0.version,
        .0.oldest_reader
    )]
    TooNew(Layout),
    /// A segment of a layout older than any this build reads.
    #[error(
        "segment of layout {}, older than any this reads (layouts {OLDEST_READABLE} to {LAYOUT_VERSION})",
        .0.version
    )]
    TooOld(Layout),
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

/// The layout a segment declares in its stable prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The layout its writer used.
    pub version: u64,
    /// The oldest layout that can read it.
    pub oldest_reader: u64,
}

/// The processes that could not use a segment, as they counted themselves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refusals {
    /// Refusals so far: a process that could not use the segment at its start, or a
    /// configuration published into it later, counts once for each.
    pub count: u32,
    /// The layout of the stage that refused last (0 when none did).
    pub stage_layout: u32,
}

/// A segment's first cache line. Words 0, 1, 6 and 7 are the stable prefix every layout
/// keeps (see "Layouts and upgrades"); words 2 to 5 are layout 3's and later ones'.
#[repr(C, align(64))]
pub struct Header {
    magic: AtomicU64,
    /// The oldest layout that can read the segment (up to layout 3: the layout).
    oldest_reader: AtomicU64,
    /// Bumped after each configuration is written; its parity names the area in force.
    config_gen: AtomicU64,
    thread_seq: AtomicU64,
    config_len: [AtomicU64; 2],
    /// The layout that wrote the segment; 0 in layout 3.
    layout: AtomicU64,
    /// Refusals (see [`Refusals`]).
    refused: AtomicU32,
    /// The layout of the stage that refused last.
    refuser_layout: AtomicU32,
}

// The stable prefix stays where layout 3's readers and every later reader look for it.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<Header>() == Header::SIZE);
    assert!(offset_of!(Header, magic) == 0 && offset_of!(Header, oldest_reader) == 8);
    assert!(offset_of!(Header, config_gen) == 16 && offset_of!(Header, config_len) == 32);
    assert!(offset_of!(Header, layout) == 48 && offset_of!(Header, refused) == 56);
    assert!(offset_of!(Header, refuser_layout) == 60);
};

impl Header {
    /// Bytes of the header: a reader that maps at least this much of a segment file can
    /// read its layout and its refusals, whatever the layout.
    pub const SIZE: usize = 64;

    /// Views mapped memory as a segment's header.
    ///
    /// # Safety
    /// `ptr` must point to at least [`Header::SIZE`] readable and writable bytes, aligned
    /// to 64, that stay mapped for `'a`.
    pub unsafe fn from_ptr<'a>(ptr: *const u8) -> &'a Header {
        // SAFETY: the caller guarantees size, alignment and lifetime; every field is an
        // atomic, valid for any bits.
        unsafe { &*(ptr as *const Header) }
    }

    /// The layout the segment declares, if this build can read it.
    pub fn layout(&self) -> Result<Layout, SegmentError> {
        if self.magic.load(Ordering::Relaxed) != MAGIC {
            return Err(SegmentError::NotASegment);
        }
        let oldest_reader = self.oldest_reader.load(Ordering::Relaxed);
        let written = self.layout.load(Ordering::Relaxed);
        // Before the stable prefix, word 1 was the layout and word 6 anything.
        let version = if oldest_reader < FIRST_STABLE || written == 0 {
            oldest_reader
        } else {
            written
        };
        let layout = Layout {
            version,
            oldest_reader,
        };
        if oldest_reader > LAYOUT_VERSION {
            Err(SegmentError::TooNew(layout))
        } else if version < OLDEST_READABLE {
            Err(SegmentError::TooOld(layout))
        } else {
            Ok(layout)
        }
    }

    /// Whether the segment has the stable prefix, so that word 7 holds its refusals.
    fn has_stable_prefix(&self) -> bool {
        self.magic.load(Ordering::Relaxed) == MAGIC
            && self.oldest_reader.load(Ordering::Relaxed) >= FIRST_STABLE
    }

    /// The processes that could not use the segment; none for a file without the stable
    /// prefix.
    pub fn refusals(&self) -> Refusals {
        if !self.has_stable_prefix() {
            return Refusals::default();
        }
        Refusals {
            count: self.refused.load(Ordering::Relaxed),
            stage_layout: self.refuser_layout.load(Ordering::Relaxed),
        }
    }

    /// Counts one refusal by a process whose stage is of layout `stage_layout`, for the
    /// controller to see; false (nothing written) when the file has no stable prefix.
    pub fn refuse(&self, stage_layout: u64) -> bool {
        if !self.has_stable_prefix() {
            return false;
        }
        self.refuser_layout
            .store(stage_layout.min(u32::MAX as u64) as u32, Ordering::Relaxed);
        self.refused.fetch_add(1, Ordering::Relaxed);
        true
    }
}

/// One configuration area, as words: the area a reader copies may be rewritten while it
/// copies (two publishes later), so every access is atomic and the reader re-checks the
/// generation afterwards.
#[repr(C)]
struct ConfigArea([AtomicU64; CONFIG_LEN / 8]);

/// A channel's bucket: the TAT on a cache line of its own (written by every reservation),
/// and the limit on another (read by every call, written only when a controller acts).
#[repr(C, align(64))]
pub struct SharedBucket {
    tat: AtomicU64,
    _tat_line: [u64; 7],
    per_sec: AtomicU64,
    burst: AtomicU64,
    /// The rate the TAT's backlog was reserved at (the last non-zero one), so that a
    /// change from a zero rate can rescale it.
    backlog_rate: AtomicU64,
    /// When the limit last changed: the instant the backlog was rescaled from.
    changed_at: AtomicU64,
    /// A futex word: bumped on every limit change, waited on by sleeping threads.
    generation: AtomicU32,
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

    /// Changes the limit at time `now` (the stage's CLOCK_MONOTONIC, in nanoseconds).
    ///
    /// The backlog already reserved (the TAT ahead of now) is rescaled to the new rate,
    /// as every waiting thread rescales its own wait when it sees the new generation: the
    /// queue keeps its order and drains at the new rate from now on. The caller then wakes
    /// the sleepers with a futex wake on [`SharedBucket::generation_word`] (a system call,
    /// which this crate does not make). Only one writer (the controller) may call this.
    pub fn set_limit(&self, limit: Limit, now: u64) {
        let old = self.backlog_rate.load(Ordering::Relaxed);
        if limit.per_sec > 0 && old > 0 && old != limit.per_sec {
            let tat = &self.tat;
            let mut cur = tat.load(Ordering::Relaxed);
            while cur > now {
                let next = now.saturating_add(rescale(cur - now, old, limit.per_sec));
                match tat.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Relaxed) {
                    Ok(_) => break,
                    Err(seen) => cur = seen,
                }
            }
        }
        if limit.per_sec > 0 {
            self.backlog_rate.store(limit.per_sec, Ordering::Relaxed);
        }
        self.changed_at.store(now, Ordering::Relaxed);
        self.burst.store(limit.burst, Ordering::Relaxed);
        self.per_sec.store(limit.per_sec, Ordering::Release);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Bumped on every limit change.
    #[inline]
    pub fn generation(&self) -> u32 {
        self.generation.load(Ordering::Acquire)
    }

    /// When the limit last changed (the `now` given to [`SharedBucket::set_limit`]).
    #[inline]
    pub fn changed_at(&self) -> u64 {
        self.changed_at.load(Ordering::Relaxed)
    }

    /// The word sleepers wait on and a controller wakes after [`SharedBucket::set_limit`].
    pub fn generation_word(&self) -> &AtomicU32 {
        &self.generation
    }
}

/// `ns` of backlog reserved at `from` units per second, as time at `to` units per second.
#[inline]
pub fn rescale(ns: u64, from: u64, to: u64) -> u64 {
    let scaled = ns as u128 * from as u128 / to.max(1) as u128;
    scaled.min(u64::MAX as u128) as u64
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

/// What one channel (a rule or a pool share) saw.
#[repr(C)]
#[derive(Default)]
pub struct ChannelCounter {
    /// Calls that reached the channel's gate, admitted or not yet.
    pub arrivals: AtomicU64,
    /// Calls admitted.
    pub admitted: AtomicU64,
    /// The channel's amount ([`ChannelCounter::amount`]): bytes charged (bytes
    /// channels), or cost units charged (a pool that weighs its operations, module
    /// [`crate::cost`]); 0 for a channel that counts calls only.
    pub bytes: AtomicU64,
    /// Nanoseconds callers spent waiting.
    pub wait_ns: AtomicU64,
    /// Calls waiting now (a gauge): with `admitted`, the demand a controller sees.
    pub waiting: AtomicU64,
}

impl ChannelCounter {
    /// What the channel charged beyond its calls: bytes in a bytes channel, cost units
    /// in a pool that weighs its operations. Kept in the field `bytes`, the name the
    /// segment's layout and the controllers' messages have always given it.
    #[inline(always)]
    pub fn amount(&self) -> &AtomicU64 {
        &self.bytes
    }
}

/// The latency of the real calls a pool admitted, sampled (one call in N per thread; N is
/// the configuration's `latency_sample`): a histogram of log2 buckets and the sum.
///
/// Buckets are 32 bits: a thread samples one call in N, so one bucket of one shard wraps
/// only after 2^32 samples (years at a million calls a second); readers add them as u64.
#[repr(C)]
pub struct LatencyCounter {
    /// Sum of the sampled latencies, in nanoseconds.
    pub sum_ns: AtomicU64,
    /// Sampled calls per bucket (see [`LATENCY_BUCKETS`] and [`latency_bucket`]).
    pub buckets: [AtomicU32; LATENCY_BUCKETS],
}

impl LatencyCounter {
    /// Records one sampled call that took `ns` nanoseconds.
    #[inline]
    pub fn record(&self, ns: u64, owned: bool) {
        bump(&self.sum_ns, ns, owned);
        let b = &self.buckets[latency_bucket(ns)];
        if owned {
            b.store(b.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        } else {
            b.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The histogram bucket of a latency of `ns` nanoseconds: the bit length of `ns`, at most
/// the last bucket.
#[inline]
pub fn latency_bucket(ns: u64) -> usize {
    ((u64::BITS - ns.leading_zeros()) as usize).min(LATENCY_BUCKETS - 1)
}

/// The least latency (ns) bucket `b` counts; bucket `b` ends where `b + 1` starts.
pub fn latency_bucket_floor(b: usize) -> u64 {
    if b == 0 { 0 } else { 1 << (b - 1) }
}

/// The counters one group of threads writes.
#[repr(C, align(64))]
pub struct Shard {
    /// Per operation, indexed by [`Op::index`].
    pub ops: [OpCounter; Op::COUNT],
    /// Per channel: rules, then pools.
    pub channels: [ChannelCounter; CHANNELS],
    /// Calls on unmanaged targets.
    pub unmanaged: AtomicU64,
    /// Sampled latency of the real calls per pool (index: pool slot, that is channel
    /// minus [`MAX_RULES`]).
    pub latency: [LatencyCounter; MAX_POOLS],
    /// Calls whose target the stage could not read (a path or a stream the kernel or libc
    /// would refuse as a bad address), passed to the real function unjudged. Last, in
    /// what was the shard's padding: a shard of layout version 3 has the same size and
    /// offsets with or without it (checked below), so a stage and a controller of the
    /// same version agree whichever of them knows it.
    pub unjudged: AtomicU64,
}

/// The size a shard had before [`Shard::unjudged`]: the field must fit in its padding.
const SHARD_BYTES_BEFORE_UNJUDGED: usize = 5824;
const _: () = assert!(
    std::mem::size_of::<Shard>() == SHARD_BYTES_BEFORE_UNJUDGED
        && std::mem::offset_of!(Shard, unjudged)
            >= std::mem::offset_of!(Shard, latency)
                + std::mem::size_of::<[LatencyCounter; MAX_POOLS]>(),
    "Shard::unjudged no longer fits in the padding of layout version 3"
);

/// The segment, as mapped.
#[repr(C)]
pub struct Segment {
    header: Header,
    config: [ConfigArea; 2],
    buckets: [SharedBucket; CHANNELS],
    shards: [Shard; SHARDS + 1],
}

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
        // valid value of every field (atomics only).
        unsafe { &*(ptr as *const Segment) }
    }

    /// Writes the first configuration and the channels' limits into a fresh (zeroed)
    /// segment. `limits` are indexed by channel.
    pub fn init(
        &self,
        config: &str,
        limits: &[(usize, Limit)],
        now: u64,
    ) -> Result<(), SegmentError> {
        for (ch, l) in limits {
            self.buckets[*ch].set_limit(*l, now);
        }
        self.header.magic.store(MAGIC, Ordering::Relaxed);
        self.header
            .oldest_reader
            .store(OLDEST_READER, Ordering::Relaxed);
        self.header.layout.store(LAYOUT_VERSION, Ordering::Relaxed);
        self.publish(config)
    }

    /// Replaces the configuration: written into the area not in force, then published by
    /// bumping the generation, which every process checks on each call. One writer only.
    pub fn publish(&self, config: &str) -> Result<(), SegmentError> {
        if config.len() > CONFIG_LEN {
            return Err(SegmentError::ConfigTooLarge(config.len()));
        }
        let next = self.header.config_gen.load(Ordering::Relaxed) + 1;
        let area = (next % 2) as usize;
        for (word, chunk) in self.config[area].0.iter().zip(config.as_bytes().chunks(8)) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            word.store(u64::from_le_bytes(b), Ordering::Relaxed);
        }
        self.header.config_len[area].store(config.len() as u64, Ordering::Relaxed);
        self.header.config_gen.store(next, Ordering::Release);
        Ok(())
    }

    /// The generation of the configuration in force (0 before the first); one relaxed
    /// load, made on every call by the stage.
    #[inline(always)]
    pub fn config_generation(&self) -> u64 {
        self.header.config_gen.load(Ordering::Relaxed)
    }

    /// The segment's header: its layout and refusals.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The configuration text in force and its generation, once the segment is
    /// initialised and of a layout this build reads.
    pub fn config(&self) -> Result<(String, u64), SegmentError> {
        self.header.layout()?;
        loop {
            let generation = self.header.config_gen.load(Ordering::Acquire);
            if generation == 0 {
                return Err(SegmentError::NotReady);
            }
            let area = (generation % 2) as usize;
            let len =
                (self.header.config_len[area].load(Ordering::Relaxed) as usize).min(CONFIG_LEN);
            let mut bytes = Vec::with_capacity(len + 8);
            for word in &self.config[area].0[..len.div_ceil(8)] {
                bytes.extend_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
            }
            bytes.truncate(len);
            std::sync::atomic::fence(Ordering::Acquire);
            if self.header.config_gen.load(Ordering::Relaxed) == generation {
                let text = String::from_utf8(bytes).map_err(|_| SegmentError::ConfigNotText)?;
                return Ok((text, generation));
            }
        }
    }

    /// Channel `i`'s bucket (rules `0..MAX_RULES`, then pools).
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

    /// The shards handed out so far (own ones, then the shared one if any thread shares).
    pub fn shards_in_use(&self) -> &[Shard] {
        let n = self.header.thread_seq.load(Ordering::Relaxed) as usize;
        &self.shards[..n.min(SHARDS + 1)]
    }

    /// Sums the shards.
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for s in self.shards_in_use() {
            for (acc, c) in t.ops.iter_mut().zip(&s.ops) {
                acc.calls += c.calls.load(Ordering::Relaxed);
                acc.bytes += c.bytes.load(Ordering::Relaxed);
            }
            for (acc, c) in t.channels.iter_mut().zip(&s.channels) {
                acc.add(&ChannelTotal::of(c));
            }
            t.unmanaged += s.unmanaged.load(Ordering::Relaxed);
            t.unjudged += s.unjudged.load(Ordering::Relaxed);
            for (acc, l) in t.channels[MAX_RULES..].iter_mut().zip(&s.latency) {
                acc.add_latency(l);
            }
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

/// Plain sums of a channel's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelTotal {
    /// Calls that reached the gate.
    pub arrivals: u64,
    /// Calls admitted.
    pub admitted: u64,
    /// The channel's amount ([`ChannelTotal::amount`]): bytes charged, or cost units in
    /// a pool that weighs its operations.
    pub bytes: u64,
    /// Nanoseconds waited.
    pub wait_ns: u64,
    /// Calls waiting at the moment the totals were taken.
    pub waiting: u64,
    /// Pools only (zero for rules): the sampled latencies of the real calls the pool
    /// admitted, as a histogram of log2 buckets of nanoseconds (bucket `b` counts
    /// `[2^(b-1), 2^b)`, see [`latency_bucket`]). Counts only grow: the latencies of an
    /// interval are the difference of two readings ([`ChannelTotal::latency_since`]),
    /// whose [`Latency::quantile`] gives p50 or p99.
    pub latency: [u64; LATENCY_BUCKETS],
    /// Pools only: the sum of the sampled latencies, in nanoseconds (wrapping).
    pub latency_sum_ns: u64,
}

impl ChannelTotal {
    /// What the channel charged beyond its calls: bytes in a bytes channel, cost units
    /// in a pool that weighs its operations (see [`ChannelCounter::amount`]).
    #[inline]
    pub fn amount(&self) -> u64 {
        self.bytes
    }

    /// One shard's counters.
    pub fn of(c: &ChannelCounter) -> Self {
        ChannelTotal {
            arrivals: c.arrivals.load(Ordering::Relaxed),
            admitted: c.admitted.load(Ordering::Relaxed),
            bytes: c.bytes.load(Ordering::Relaxed),
            wait_ns: c.wait_ns.load(Ordering::Relaxed),
            waiting: c.waiting.load(Ordering::Relaxed),
            latency: [0; LATENCY_BUCKETS],
            latency_sum_ns: 0,
        }
    }

    /// The latencies sampled between `earlier` (a reading of the same channel) and this
    /// reading.
    pub fn latency_since(&self, earlier: &ChannelTotal) -> Latency {
        Latency {
            buckets: std::array::from_fn(|b| self.latency[b].saturating_sub(earlier.latency[b])),
            sum_ns: self.latency_sum_ns.wrapping_sub(earlier.latency_sum_ns),
        }
    }

    /// Every latency sampled so far.
    pub fn latency_total(&self) -> Latency {
        self.latency_since(&ChannelTotal::default())
    }

    /// Adds one shard's latency counters of the pool this channel is.
    pub fn add_latency(&mut self, l: &LatencyCounter) {
        self.latency_sum_ns = self
            .latency_sum_ns
            .wrapping_add(l.sum_ns.load(Ordering::Relaxed));
        for (a, b) in self.latency.iter_mut().zip(&l.buckets) {
            *a += b.load(Ordering::Relaxed) as u64;
        }
    }

    /// Adds `o` (the gauge wraps: each shard's is a count of +1s and -1s).
    pub fn add(&mut self, o: &ChannelTotal) {
        self.arrivals += o.arrivals;
        self.admitted += o.admitted;
        self.bytes += o.bytes;
        self.wait_ns += o.wait_ns;
        self.waiting = self.waiting.wrapping_add(o.waiting);
        for (a, b) in self.latency.iter_mut().zip(&o.latency) {
            *a += b;
        }
        self.latency_sum_ns = self.latency_sum_ns.wrapping_add(o.latency_sum_ns);
    }
}

/// Sampled latencies of one pool over an interval: a log2 histogram of nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Latency {
    /// Calls per bucket (see [`latency_bucket`]).
    pub buckets: [u64; LATENCY_BUCKETS],
    /// Sum of the latencies, in nanoseconds.
    pub sum_ns: u64,
}

impl Latency {
    /// Calls sampled.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Adds the samples of `o` (another node's, another job's, of the same pool).
    pub fn add(&mut self, o: &Latency) {
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.sum_ns = self.sum_ns.wrapping_add(o.sum_ns);
    }

    /// Mean latency in nanoseconds, `None` with no sample.
    pub fn mean_ns(&self) -> Option<u64> {
        let n = self.count();
        (n > 0).then(|| self.sum_ns / n)
    }

    /// The `q` quantile (0 < q ≤ 1: 0.5 for p50, 0.99 for p99) as the upper end of the
    /// bucket it falls in (so within a factor of two above the true value), in
    /// nanoseconds; `None` with no sample.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(if b + 1 < LATENCY_BUCKETS {
                    latency_bucket_floor(b + 1)
                } else {
                    u64::MAX
                });
            }
        }
        None
    }
}

/// Every counter of a segment, summed over its shards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Totals {
    /// Per operation, indexed by [`Op::index`].
    pub ops: [OpTotal; Op::COUNT],
    /// Per channel: rules, then pools.
    pub channels: [ChannelTotal; CHANNELS],
    /// Calls on unmanaged targets.
    pub unmanaged: u64,
    /// Calls passed through unjudged ([`Shard::unjudged`]).
    pub unjudged: u64,
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            ops: [OpTotal::default(); Op::COUNT],
            channels: [ChannelTotal::default(); CHANNELS],
            unmanaged: 0,
            unjudged: 0,
        }
    }
}

/// A segment on the heap that a test owns (from [`fresh`]); it reads as the segment, so
/// the one `unsafe` view of its memory is here rather than in every test.
#[cfg(test)]
pub(crate) struct Fresh(Box<std::mem::MaybeUninit<Segment>>);

#[cfg(test)]
impl std::ops::Deref for Fresh {
    type Target = Segment;

    fn deref(&self) -> &Segment {
        // SAFETY: zeroed, aligned, and owned by `self`, which outlives the borrow.
        unsafe { Segment::from_ptr(self.0.as_ptr() as *const u8) }
    }
}

/// A zeroed segment on the heap, for tests that need one without a file.
#[cfg(test)]
pub(crate) fn fresh() -> Fresh {
    let mut b = Box::<Segment>::new_uninit();
    // SAFETY: writing zeros over the whole allocation is a valid Segment.
    unsafe { std::ptr::write_bytes(b.as_mut_ptr() as *mut u8, 0, Segment::SIZE) };
    Fresh(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_publishes_config_and_limits() {
        let seg = &fresh();
        assert_eq!(seg.config(), Err(SegmentError::NotASegment));
        seg.init("job 1\n", &[(0, Limit::new(5, 1))], 0).unwrap();
        assert_eq!(seg.config().unwrap(), ("job 1\n".to_owned(), 1));
        assert_eq!(seg.bucket(0).limit(), Limit::new(5, 1));
        // Only shards handed out are summed: four threads, then everyone beyond.
        for _ in 0..=SHARDS {
            seg.next_shard();
        }
        seg.shard(3).ops[Op::Getattr.index()]
            .calls
            .fetch_add(2, Ordering::Relaxed);
        seg.shard(SHARDS + 9).ops[Op::Getattr.index()]
            .calls
            .fetch_add(1, Ordering::Relaxed);
        assert_eq!(seg.totals().ops[Op::Getattr.index()].calls, 3);
    }

    #[test]
    fn latency_histograms_sum_over_shards_and_give_quantiles() {
        assert_eq!(latency_bucket(0), 0);
        assert_eq!(latency_bucket(1), 1);
        assert_eq!(latency_bucket(1000), 10);
        assert_eq!(latency_bucket(u64::MAX), LATENCY_BUCKETS - 1);
        assert_eq!(latency_bucket_floor(10), 512);
        let seg = &fresh();
        let (a, shared) = (seg.next_shard(), SHARDS);
        for _ in 0..=SHARDS {
            seg.next_shard();
        }
        let before = seg.totals().channels[MAX_RULES + 2];
        // 98 calls of about 1 µs, 2 of about 1 ms, in two shards.
        for i in 0..100u64 {
            let ns = if i < 98 { 700 + i } else { 1_000_000 };
            seg.shard(if i % 2 == 0 { a } else { shared }).latency[2].record(ns, i % 2 == 0);
        }
        let t = seg.totals();
        assert_eq!(t.channels[MAX_RULES + 1].latency_total().count(), 0);
        assert!(
            t.channels[0].latency.iter().all(|&c| c == 0),
            "rules have none"
        );
        let l = t.channels[MAX_RULES + 2].latency_since(&before);
        assert_eq!(l.count(), 100);
        assert_eq!(l.sum_ns, (0..98).map(|i| 700 + i).sum::<u64>() + 2_000_000);
        assert_eq!(l.quantile(0.5), Some(1024), "p50 in [512, 1024) ns");
        assert_eq!(l.quantile(0.98), Some(1024));
        assert_eq!(l.quantile(0.99), Some(1 << 20), "p99 in [2^19, 2^20) ns");
        assert_eq!(Latency::default().quantile(0.5), None);
        // The next interval starts from this reading.
        seg.shard(a).latency[2].record(10, true);
        let next = seg.totals().channels[MAX_RULES + 2].latency_since(&t.channels[MAX_RULES + 2]);
        assert_eq!((next.count(), next.quantile(0.99)), (1, Some(16)));
    }

    #[test]
    fn segment_is_small_enough_to_map_per_job() {
        const { assert!(Segment::SIZE < 2 * 1024 * 1024 && Segment::SIZE.is_multiple_of(64)) };
    }

    #[test]
    fn a_published_configuration_replaces_the_one_in_force() {
        let seg = &fresh();
        seg.init("job 1\nrule 0 op=open rate=1/s\n", &[], 0)
            .unwrap();
        seg.publish("job 1\n").unwrap();
        assert_eq!(seg.config().unwrap(), ("job 1\n".to_owned(), 2));
        assert_eq!(seg.config_generation(), 2);
        let long = "x".repeat(CONFIG_LEN + 1);
        assert_eq!(
            seg.publish(&long),
            Err(SegmentError::ConfigTooLarge(CONFIG_LEN + 1))
        );
        assert_eq!(seg.config().unwrap().0, "job 1\n");
    }

    /// A segment this build writes is one a layout-3 reader accepts (the magic, and its
    /// own number in word 1) and reads the same: the words layout 4 added were its padding.
    #[test]
    fn segments_of_this_layout_are_read_by_layout_3_readers() {
        let seg = &fresh();
        seg.init("job 1\n", &[], 0).unwrap();
        let words = std::ptr::from_ref::<Segment>(seg) as *const u64;
        // SAFETY: the header's words, in the zeroed allocation.
        let word = |i| unsafe { *words.add(i) };
        assert_eq!(
            (word(0), word(1)),
            (MAGIC, 3),
            "what a layout-3 reader checks"
        );
        assert_eq!(word(6), LAYOUT_VERSION);
        assert_eq!(
            seg.header().layout(),
            Ok(Layout {
                version: LAYOUT_VERSION,
                oldest_reader: 3
            })
        );
    }

    /// A segment written by layout 3 (word 6 never written) is read as layout 3, and its
    /// refusals can be counted in what was its padding.
    #[test]
    fn a_layout_3_segment_is_read_as_layout_3() {
        let seg = &fresh();
        seg.init("job 1\n", &[], 0).unwrap();
        seg.header.layout.store(0, Ordering::Relaxed);
        let v3 = Layout {
            version: 3,
            oldest_reader: 3,
        };
        assert_eq!(seg.header().layout(), Ok(v3));
        assert_eq!(seg.config().unwrap().0, "job 1\n");
        assert!(seg.header().refuse(LAYOUT_VERSION));
        assert_eq!(seg.header().refusals().count, 1);
        assert_eq!(
            seg.config().unwrap().0,
            "job 1\n",
            "a refusal changes nothing else"
        );
    }

    /// A segment only a later reader can read is refused, whatever its other words hold,
    /// and every refusal is counted with the refusing stage's layout.
    #[test]
    fn a_segment_that_needs_a_later_reader_is_refused_and_counts_refusals() {
        let seg = &fresh();
        seg.init("job 1\n", &[], 0).unwrap();
        let future = Layout {
            version: LAYOUT_VERSION + 3,
            oldest_reader: LAYOUT_VERSION + 1,
        };
        seg.header.layout.store(future.version, Ordering::Relaxed);
        seg.header
            .oldest_reader
            .store(future.oldest_reader, Ordering::Relaxed);
        assert_eq!(seg.header().layout(), Err(SegmentError::TooNew(future)));
        assert_eq!(seg.config(), Err(SegmentError::TooNew(future)));
        assert_eq!(seg.header().refusals(), Refusals::default());
        assert!(seg.header().refuse(4));
        assert!(seg.header().refuse(5));
        assert_eq!(
            seg.header().refusals(),
            Refusals {
                count: 2,
                stage_layout: 5
            }
        );
        // A segment that still admits this build is read, whatever layout wrote it.
        seg.header
            .oldest_reader
            .store(LAYOUT_VERSION, Ordering::Relaxed);
        assert_eq!(seg.header().layout().unwrap().version, LAYOUT_VERSION + 3);
    }

    /// Layouts before the stable prefix are too old, and their word 7 (a field of theirs)
    /// is neither read as refusals nor written; a file without the magic is not a segment.
    #[test]
    fn layouts_before_the_stable_prefix_are_too_old_and_left_alone() {
        let seg = &fresh();
        assert_eq!(seg.header().layout(), Err(SegmentError::NotASegment));
        assert!(!seg.header().refuse(LAYOUT_VERSION));
        seg.init("job 1\n", &[], 0).unwrap();
        seg.header.oldest_reader.store(2, Ordering::Relaxed);
        seg.header.refused.store(7, Ordering::Relaxed);
        let v2 = Layout {
            version: 2,
            oldest_reader: 2,
        };
        assert_eq!(seg.header().layout(), Err(SegmentError::TooOld(v2)));
        assert_eq!(seg.header().refusals(), Refusals::default());
        assert!(!seg.header().refuse(LAYOUT_VERSION));
        assert_eq!(seg.header.refused.load(Ordering::Relaxed), 7);
    }

    /// A rate change keeps the queue's order and drains the backlog at the new rate.
    #[test]
    fn a_rate_change_rescales_the_backlog() {
        let seg = &fresh();
        let bucket = seg.bucket(3);
        bucket.set_limit(Limit::new(10, 1), 0);
        let g = bucket.generation();
        // Ten calls at 10/s: the backlog reaches one second ahead.
        for _ in 0..10 {
            crate::bucket::reserve(bucket, bucket.limit(), 0, 1);
        }
        assert_eq!(bucket.tat().load(Ordering::Relaxed), 1_000_000_000);
        bucket.set_limit(Limit::new(1000, 1), 0);
        assert_eq!(bucket.tat().load(Ordering::Relaxed), 10_000_000);
        assert_ne!(bucket.generation(), g);
        // Through a zero rate and back, the backlog is kept in the last real rate.
        bucket.set_limit(Limit::new(0, 1), 0);
        bucket.set_limit(Limit::new(100, 1), 0);
        assert_eq!(bucket.tat().load(Ordering::Relaxed), 100_000_000);
    }
}
