//! The admission path of one request: classify, reserve, wait, count.
//!
//! The stage's hooks and `sluice bench stage` both go through [`Gate`], so the benchmark
//! measures the code the hooks run. The gate owns no thread and reads no clock of its
//! own: the caller passes a [`Clock`], which in the stage is `clock_gettime` and
//! `clock_nanosleep`.

use crate::bucket::{LocalCache, refund, reserve};
use crate::classify::{Channel, Compiled};
use crate::op::Op;
use crate::path::PlaceIdx;
use crate::segment::{MAX_RULES, SHARDS, Segment, Shard, bump};

/// How long a thread held by a zero rate sleeps before it looks at the rate again.
pub const HOLD_POLL_NS: u64 = 10_000_000;

/// Time as the gate needs it: a monotonic clock shared by every process on the node.
pub trait Clock {
    /// Nanoseconds on the shared monotonic clock.
    fn now_ns(&self) -> u64;
    /// The same clock read cheaply: never ahead of [`Clock::now_ns`], behind it by at
    /// most [`Clock::coarse_resolution_ns`] (CLOCK_MONOTONIC_COARSE).
    fn coarse_ns(&self) -> u64;
    /// How far [`Clock::coarse_ns`] may lag.
    fn coarse_resolution_ns(&self) -> u64;
    /// Sleeps until the clock reads at least `deadline`, through signals.
    fn sleep_until(&self, deadline: u64);
}

/// What one thread keeps between calls: its counter shard and its token batches.
#[derive(Clone, Debug)]
pub struct ThreadState {
    shard: usize,
    caches: [LocalCache; MAX_RULES],
}

impl ThreadState {
    /// A thread that has not counted anything yet; it picks its shard at its first call.
    pub const fn new() -> Self {
        ThreadState {
            shard: usize::MAX,
            caches: [LocalCache::new(); MAX_RULES],
        }
    }

    /// This thread's shard, and whether the thread owns it (is its only writer).
    #[inline]
    fn shard<'s>(&mut self, segment: &'s Segment) -> (&'s Shard, bool) {
        if self.shard == usize::MAX {
            self.shard = segment.next_shard();
        }
        (segment.shard(self.shard), self.shard < SHARDS)
    }
}

impl Default for ThreadState {
    fn default() -> Self {
        Self::new()
    }
}

/// How many bytes a call will move, as far as is known before it runs.
///
/// A bytes rule charges a call before it runs and settles on what it moved once it
/// returns: what it moved beyond the charge becomes a debt the next caller waits for,
/// what it did not move is given back. So a read into a 64 MiB buffer at the end of a
/// file, or a `copy_file_range` asked for 2^63 bytes, costs what it moved, not what it
/// asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// Moves exactly this many unless it fails (`write`, `fallocate`; 0 for metadata):
    /// charged in full, so that no window of a second passes more than rate plus burst.
    Known(u64),
    /// Moves at most this many (`read`, `copy_file_range`): charged up to the rule's
    /// burst before the call, the rest after.
    UpTo(u64),
    /// Says nothing before it runs (`getline`, `fgets`): charged after the call.
    AfterCall,
}

/// The most one call moves: Linux caps every read and write at this (`MAX_RW_COUNT`).
pub const MAX_IO: u64 = 0x7fff_f000;

/// A request that was admitted and must be counted once the real call returns.
#[derive(Clone, Copy, Debug)]
#[must_use = "a ticket counts the call when finished"]
pub struct Ticket {
    op: Op,
    channel: Option<Channel>,
    waited_ns: u64,
}

/// The admission path over one segment and one process's compiled rules.
#[derive(Clone, Copy)]
pub struct Gate<'a> {
    /// The job's segment.
    pub segment: &'a Segment,
    /// This process's rules.
    pub compiled: &'a Compiled,
}

impl Gate<'_> {
    /// Counts a call on an unmanaged target.
    #[inline]
    pub fn unmanaged(&self, ts: &mut ThreadState) {
        let (shard, owned) = ts.shard(self.segment);
        bump(&shard.unmanaged, 1, owned);
    }

    /// Admits `op` on a managed target in `place`: finds its rule, reserves its cost and
    /// sleeps until the reservation is due.
    #[inline]
    pub fn admit(
        &self,
        ts: &mut ThreadState,
        clock: &impl Clock,
        op: Op,
        place: PlaceIdx,
        size: Size,
    ) -> Ticket {
        let asked = match size {
            Size::Known(n) | Size::UpTo(n) => n,
            Size::AfterCall => 0,
        };
        let mut channel = self.compiled.channel(op, place, asked);
        if let Some(ch) = channel.as_mut().filter(|ch| ch.bytes) {
            ch.cost = match size {
                Size::Known(n) => n.min(MAX_IO),
                Size::UpTo(n) => n.min(self.segment.bucket(ch.rule as usize).limit().burst),
                Size::AfterCall => 0,
            };
        }
        let waited_ns = match channel {
            Some(ch) => self.wait_for(ts, clock, ch),
            None => 0,
        };
        Ticket {
            op,
            channel,
            waited_ns,
        }
    }

    fn wait_for(&self, ts: &mut ThreadState, clock: &impl Clock, ch: Channel) -> u64 {
        let rule = ch.rule as usize;
        let bucket = self.segment.bucket(rule);
        let generation = bucket.generation();
        if ts.caches[rule].take(generation, clock.coarse_ns(), ch.cost) {
            return 0;
        }
        let arrived = clock.now_ns();
        let mut now = arrived;
        let res = clock.coarse_resolution_ns();
        loop {
            let cache = &mut ts.caches[rule];
            let admit_at = cache.refill(
                bucket,
                bucket.limit(),
                bucket.generation(),
                now,
                ch.cost,
                res,
            );
            if admit_at.is_some_and(|at| at <= now) {
                return now - arrived;
            }
            let (shard, owned) = ts.shard(self.segment);
            let waiting = &shard.rules[rule].waiting;
            bump(waiting, 1, owned);
            clock.sleep_until(admit_at.unwrap_or(now + HOLD_POLL_NS));
            bump(waiting, u64::MAX, owned); // minus one, wrapping
            now = clock.now_ns();
            if let Some(at) = admit_at {
                return now.max(at) - arrived;
            }
        }
    }

    /// Counts an admitted call once the real call returned, having moved `moved` bytes.
    /// A bytes rule settles on what the call moved (see [`Size`]).
    #[inline]
    pub fn finish(&self, ts: &mut ThreadState, clock: &impl Clock, ticket: Ticket, moved: u64) {
        let (shard, owned) = ts.shard(self.segment);
        let c = &shard.ops[ticket.op.index()];
        bump(&c.calls, 1, owned);
        if moved > 0 {
            bump(&c.bytes, moved, owned);
        }
        let Some(ch) = ticket.channel else { return };
        let r = &shard.rules[ch.rule as usize];
        bump(&r.admitted, 1, owned);
        if ticket.waited_ns > 0 {
            bump(&r.wait_ns, ticket.waited_ns, owned);
        }
        if ch.bytes {
            bump(&r.bytes, moved, owned);
            let bucket = self.segment.bucket(ch.rule as usize);
            if moved > ch.cost {
                let _ = reserve(bucket, bucket.limit(), clock.now_ns(), moved - ch.cost);
            } else if moved < ch.cost {
                refund(bucket, bucket.limit(), clock.now_ns(), ch.cost - moved);
            }
        }
    }
}
