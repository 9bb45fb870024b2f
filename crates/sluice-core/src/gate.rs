//! The admission path of one request: classify, reserve, wait, count.
//!
//! The stage's hooks and `sluice bench stage` both go through [`Gate`], so the benchmark
//! measures the code the hooks run. The gate owns no thread and reads no clock of its
//! own: the caller passes a [`Clock`], which in the stage is `clock_gettime` and a futex
//! wait on the bucket's generation word, so that a rate change wakes the sleepers.

use std::sync::atomic::AtomicU32;

use crate::bucket::{LocalCache, refund, reserve};
use crate::classify::{Channel, Compiled};
use crate::op::Op;
use crate::path::PlaceIdx;
use crate::segment::{CHANNELS, SHARDS, Segment, Shard, bump, rescale};

/// How long a thread held by a zero rate sleeps before it looks at the rate again, should
/// the wake-up of a rate change be lost (a controller killed between write and wake).
pub const HOLD_POLL_NS: u64 = 100_000_000;

/// Time as the gate needs it: a monotonic clock shared by every process on the node.
pub trait Clock {
    /// Nanoseconds on the shared monotonic clock.
    fn now_ns(&self) -> u64;
    /// The same clock read cheaply: never ahead of [`Clock::now_ns`], behind it by at
    /// most [`Clock::coarse_resolution_ns`] (CLOCK_MONOTONIC_COARSE).
    fn coarse_ns(&self) -> u64;
    /// How far [`Clock::coarse_ns`] may lag.
    fn coarse_resolution_ns(&self) -> u64;
    /// Sleeps until the clock reads at least `deadline`, or until `word` no longer holds
    /// `seen` (a controller changed the rate and woke the word's sleepers), through
    /// signals; may return early: the caller re-checks.
    fn wait_until(&self, deadline: u64, word: &AtomicU32, seen: u32);
}

/// What one thread keeps between calls: its counter shard and its token batches.
#[derive(Clone, Debug)]
pub struct ThreadState {
    shard: usize,
    caches: [LocalCache; CHANNELS],
}

impl ThreadState {
    /// A thread that has not counted anything yet; it picks its shard at its first call.
    pub const fn new() -> Self {
        ThreadState {
            shard: usize::MAX,
            caches: [LocalCache::new(); CHANNELS],
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
    place: PlaceIdx,
    size: Size,
    channel: Option<Channel>,
}

/// The admission path over one segment and one process's compiled rules and pools.
#[derive(Clone, Copy)]
pub struct Gate<'a> {
    /// The job's segment.
    pub segment: &'a Segment,
    /// This process's rules and pools.
    pub compiled: &'a Compiled,
}

impl Gate<'_> {
    /// Counts a call on an unmanaged target.
    #[inline]
    pub fn unmanaged(&self, ts: &mut ThreadState) {
        let (shard, owned) = ts.shard(self.segment);
        bump(&shard.unmanaged, 1, owned);
    }

    /// Admits `op` on a managed target in `place`: finds its rule and its pools, and for
    /// each in turn reserves its cost and sleeps until the reservation is due. A call is
    /// held by its first matching rule and by every pool it belongs to: when one of them
    /// is congested, it waits for that one.
    #[inline]
    pub fn admit(
        &self,
        ts: &mut ThreadState,
        clock: &impl Clock,
        op: Op,
        place: PlaceIdx,
        size: Size,
    ) -> Ticket {
        let asked = asked(size);
        let channel = self
            .compiled
            .channel(op, place, asked)
            .map(|ch| self.charged(ch, size));
        if let Some(ch) = channel {
            self.pass(ts, clock, ch);
        }
        for ch in self.compiled.pools(op, place, asked) {
            self.pass(ts, clock, self.charged(ch, size));
        }
        Ticket {
            op,
            place,
            size,
            channel,
        }
    }

    /// `ch` with the cost charged before the call (see [`Size`]).
    #[inline]
    fn charged(&self, mut ch: Channel, size: Size) -> Channel {
        if ch.bytes {
            ch.cost = match size {
                Size::Known(n) => n.min(MAX_IO),
                Size::UpTo(n) => n.min(self.segment.bucket(ch.index as usize).limit().burst),
                Size::AfterCall => 0,
            };
        }
        ch
    }

    /// Counts an arrival on `ch`, waits for its admission and counts the wait.
    #[inline]
    fn pass(&self, ts: &mut ThreadState, clock: &impl Clock, ch: Channel) {
        let (shard, owned) = ts.shard(self.segment);
        let c = &shard.channels[ch.index as usize];
        bump(&c.arrivals, 1, owned);
        let waited = self.wait_for(ts, clock, ch);
        if waited > 0 {
            bump(&c.wait_ns, waited, owned);
        }
    }

    fn wait_for(&self, ts: &mut ThreadState, clock: &impl Clock, ch: Channel) -> u64 {
        let i = ch.index as usize;
        let bucket = self.segment.bucket(i);
        if ts.caches[i].take(bucket.generation(), clock.coarse_ns(), ch.cost) {
            return 0;
        }
        let arrived = clock.now_ns();
        let mut now = arrived;
        let res = clock.coarse_resolution_ns();
        loop {
            let mut generation = bucket.generation();
            let limit = bucket.limit();
            let Some(mut at) = ts.caches[i].refill(bucket, limit, generation, now, ch.cost, res)
            else {
                // Held at a zero rate with nothing reserved: reserve once it changes.
                self.sleep(ts, clock, i, now + HOLD_POLL_NS, generation);
                now = clock.now_ns();
                continue;
            };
            // The rate `at` is expressed in. When the controller changes the rate it
            // rescales the bucket's backlog from the instant of the change; a sleeper
            // rescales what it still owes the same way, so the queue keeps its order.
            let mut per_sec = limit.per_sec;
            loop {
                let held = bucket.limit().per_sec == 0;
                if at <= now && !held {
                    return now - arrived;
                }
                let deadline = if held { now + HOLD_POLL_NS } else { at };
                self.sleep(ts, clock, i, deadline, generation);
                now = clock.now_ns();
                let seen = bucket.generation();
                if seen != generation {
                    generation = seen;
                    let new = bucket.limit().per_sec;
                    if new > 0 {
                        let from = bucket.changed_at();
                        at = from.saturating_add(rescale(at.saturating_sub(from), per_sec, new));
                        per_sec = new;
                    }
                }
            }
        }
    }

    /// Sleeps until `deadline` or a change of channel `i`'s rate, counted as waiting.
    fn sleep(&self, ts: &mut ThreadState, clock: &impl Clock, i: usize, deadline: u64, seen: u32) {
        let (shard, owned) = ts.shard(self.segment);
        let waiting = &shard.channels[i].waiting;
        bump(waiting, 1, owned);
        clock.wait_until(deadline, self.segment.bucket(i).generation_word(), seen);
        bump(waiting, u64::MAX, owned); // minus one, wrapping
    }

    /// Counts an admitted call once the real call returned, having moved `moved` bytes.
    /// Bytes channels settle on what the call moved (see [`Size`]).
    #[inline]
    pub fn finish(&self, ts: &mut ThreadState, clock: &impl Clock, ticket: Ticket, moved: u64) {
        let (shard, owned) = ts.shard(self.segment);
        let c = &shard.ops[ticket.op.index()];
        bump(&c.calls, 1, owned);
        if moved > 0 {
            bump(&c.bytes, moved, owned);
        }
        if let Some(ch) = ticket.channel {
            self.settle(ts, shard, owned, clock, ch, moved);
        }
        let asked = asked(ticket.size);
        for ch in self.compiled.pools(ticket.op, ticket.place, asked) {
            self.settle(
                ts,
                shard,
                owned,
                clock,
                self.charged(ch, ticket.size),
                moved,
            );
        }
    }

    /// Counts `ch`'s admission; a bytes channel settles on what the call moved, bytes
    /// beyond its charge from the thread's batch first.
    #[inline]
    fn settle(
        &self,
        ts: &mut ThreadState,
        shard: &Shard,
        owned: bool,
        clock: &impl Clock,
        ch: Channel,
        moved: u64,
    ) {
        let c = &shard.channels[ch.index as usize];
        bump(&c.admitted, 1, owned);
        if ch.bytes {
            bump(&c.bytes, moved, owned);
            let i = ch.index as usize;
            let bucket = self.segment.bucket(i);
            if moved > ch.cost {
                let owed =
                    ts.caches[i].spend(bucket.generation(), clock.coarse_ns(), moved - ch.cost);
                if owed > 0 {
                    let _ = reserve(bucket, bucket.limit(), clock.now_ns(), owed);
                }
            } else if moved < ch.cost {
                refund(bucket, bucket.limit(), clock.now_ns(), ch.cost - moved);
            }
        }
    }
}

/// The byte count a call names before it runs (0 when it names none).
#[inline]
fn asked(size: Size) -> u64 {
    match size {
        Size::Known(n) | Size::UpTo(n) => n,
        Size::AfterCall => 0,
    }
}
