//! The admission path of one request: classify, reserve, wait, count.
//!
//! The stage's hooks and `sluice bench stage` both go through [`Gate`], so the benchmark
//! measures the code the hooks run. The gate owns no thread and reads no clock of its
//! own: the caller passes a [`Clock`], which in the stage is `clock_gettime` and a futex
//! wait on the bucket's generation word, so that a rate change wakes the sleepers.

use std::sync::atomic::{AtomicU32, AtomicU64};

use crate::bucket::{LocalCache, refund, reprice, reserve};
use crate::classify::{Compiled, Lone, Plan};
use crate::op::Op;
use crate::path::PlaceIdx;
use crate::segment::{CHANNELS, MAX_RULES, SHARDS, Segment, Shard, bump, rescale};

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
    /// Calls through a pool left before the next one is timed (latency sampling).
    sample_left: u32,
    /// The coarse clock at the last call timed.
    sampled_at: u64,
    caches: [LocalCache; CHANNELS],
}

impl ThreadState {
    /// A thread that has not counted anything yet; it picks its shard at its first call.
    pub const fn new() -> Self {
        ThreadState {
            shard: usize::MAX,
            sample_left: 0,
            sampled_at: 0,
            caches: [LocalCache::new(); CHANNELS],
        }
    }

    /// Whether this call is one to time: one in `every` (0: none), and the first after
    /// each tick of the coarse clock (`coarse`, 0: not known). A thread-local countdown
    /// and the clock the call already read, so a call that is not sampled reads none.
    /// The tick matters for slow calls: a networked file system's metadata calls take a
    /// millisecond, and one in 64 of them would be too few for a p99 each interval.
    #[inline(always)]
    fn sample(&mut self, every: u32, coarse: u64) -> bool {
        if !self.would_sample(every, coarse) {
            self.pass_sample();
            return false;
        }
        self.sampled_at = self.sampled_at.max(coarse);
        self.sample_left = every;
        true
    }

    /// Whether [`ThreadState::sample`] would pick this call, without counting it down.
    #[inline(always)]
    fn would_sample(&self, every: u32, coarse: u64) -> bool {
        every != 0 && (coarse > self.sampled_at || self.sample_left <= 1)
    }

    /// Counts down a call [`ThreadState::would_sample`] did not pick, as
    /// [`ThreadState::sample`] does.
    #[inline(always)]
    fn pass_sample(&mut self) {
        if self.sample_left > 1 {
            self.sample_left -= 1;
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
    size: Size,
    plan: Plan,
    /// What the first channel charged before the call (a rule's charge is settled on what
    /// it reserved even if the burst changed meanwhile; pools recompute theirs).
    first_cost: u64,
    /// When the real call started, for a call sampled for its latency; 0 otherwise.
    started: u64,
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
        Gate::count_unmanaged(self.segment, ts);
    }

    /// Counts a call on an unmanaged target of `segment`: needs no rules, so a caller need
    /// not check that its rules are current.
    #[inline]
    pub fn count_unmanaged(segment: &Segment, ts: &mut ThreadState) {
        let (shard, owned) = ts.shard(segment);
        bump(&shard.unmanaged, 1, owned);
    }

    /// Counts a call passed through unjudged in `segment` ([`Shard::unjudged`]).
    ///
    /// [`Shard::unjudged`]: crate::segment::Shard::unjudged
    #[inline]
    pub fn count_unjudged(segment: &Segment, ts: &mut ThreadState) {
        let (shard, owned) = ts.shard(segment);
        bump(&shard.unjudged, 1, owned);
    }

    /// The counter of unmanaged calls this thread bumps in `segment`, and whether the
    /// thread owns it (is its only writer: a plain load and store suffice, as in
    /// [`bump`]). The same until `ts` is reset, so a caller may keep it to count
    /// unmanaged calls without reaching `ts`.
    #[inline]
    pub fn unmanaged_counter<'s>(
        segment: &'s Segment,
        ts: &mut ThreadState,
    ) -> (&'s AtomicU64, bool) {
        let (shard, owned) = ts.shard(segment);
        (&shard.unmanaged, owned)
    }

    /// Admits `op` on a managed target in `place`: finds its rule and its pools (one
    /// lookup in the plans compiled with the rules), and for each in turn reserves its cost
    /// and sleeps until the reservation is due. A call is held by its first matching rule
    /// and by every pool it belongs to: when one of them is congested, it waits for that
    /// one. A call that takes tokens from its thread's batches reads one coarse clock.
    ///
    /// One call in the configuration's `latency_sample` of those a pool times (per
    /// thread), and the first after each tick of the coarse clock, is timed: the precise clock is read here, as the last thing before the real
    /// call, and again in [`Gate::finish`].
    #[inline(always)]
    pub fn admit(
        &self,
        ts: &mut ThreadState,
        clock: &impl Clock,
        op: Op,
        place: PlaceIdx,
        size: Size,
    ) -> Ticket {
        let plan = self.compiled.plan(op, place, asked(size));
        let mut coarse = 0;
        let mut first_cost = 0;
        for (k, (i, bytes)) in plan.channels().enumerate() {
            let cost = if bytes {
                self.charged(i, size)
            } else if plan.weighed() {
                self.compiled.cost(op, i)
            } else {
                1
            };
            if k == 0 {
                first_cost = cost;
            }
            self.pass(ts, clock, i, cost, &mut coarse);
        }
        if coarse == 0 && plan.timed() {
            // The call waited, which made its clock stale: it slept, one more read is free.
            coarse = clock.coarse_ns();
        }
        let started = if plan.timed() && ts.sample(self.compiled.latency_sample(), coarse) {
            clock.now_ns().max(1)
        } else {
            0
        };
        Ticket {
            op,
            size,
            plan,
            first_cost,
            started,
        }
    }

    /// Admits and counts a call of `op` held only by `lone`, a channel that charges calls
    /// ([`Compiled::lone_count_channel`]), when this thread's batch covers it and the call
    /// is not one to time: one coarse clock read, and nothing shared written but the
    /// thread's own counters. The call is counted at its admission, as [`Gate::finish`]
    /// would count it once returned (it moves no bytes and is not timed), so that nothing
    /// is left to do after the real call. False, having counted nothing, otherwise: the
    /// caller then takes [`Gate::admit`], which times the call it was left.
    #[inline(always)]
    pub fn pass_from_batch(
        &self,
        ts: &mut ThreadState,
        clock: &impl Clock,
        op: Op,
        lone: Lone,
    ) -> bool {
        let i = lone.channel;
        let bucket = self.segment.bucket(i);
        let coarse = clock.coarse_ns();
        if lone.timed && ts.would_sample(self.compiled.latency_sample(), coarse) {
            return false;
        }
        if !ts.caches[i].take(bucket.generation(), coarse, 1) {
            return false;
        }
        if lone.timed {
            ts.pass_sample();
        }
        let (shard, owned) = ts.shard(self.segment);
        let c = &shard.channels[i];
        bump(&c.arrivals, 1, owned);
        bump(&c.admitted, 1, owned);
        bump(&shard.ops[op.index()].calls, 1, owned);
        true
    }

    /// What a bytes channel `i` charges before the call (see [`Size`]).
    #[inline]
    fn charged(&self, i: usize, size: Size) -> u64 {
        match size {
            Size::Known(n) => n.min(MAX_IO),
            Size::UpTo(n) => n.min(self.segment.bucket(i).limit().burst),
            Size::AfterCall => 0,
        }
    }

    /// Counts an arrival on channel `i`, waits for its admission and counts the wait.
    /// `coarse` is the coarse clock as read by this call (0: not read yet); a wait makes
    /// it stale.
    #[inline(always)]
    fn pass(
        &self,
        ts: &mut ThreadState,
        clock: &impl Clock,
        i: usize,
        cost: u64,
        coarse: &mut u64,
    ) {
        let (shard, owned) = ts.shard(self.segment);
        let c = &shard.channels[i];
        bump(&c.arrivals, 1, owned);
        let bucket = self.segment.bucket(i);
        if *coarse == 0 {
            *coarse = clock.coarse_ns();
        }
        if ts.caches[i].take(bucket.generation(), *coarse, cost) {
            return;
        }
        let waited = self.wait_for(ts, clock, i, cost);
        if waited > 0 {
            bump(&c.wait_ns, waited, owned);
            *coarse = 0;
        }
    }

    #[inline(never)]
    fn wait_for(&self, ts: &mut ThreadState, clock: &impl Clock, i: usize, cost: u64) -> u64 {
        let bucket = self.segment.bucket(i);
        let arrived = clock.now_ns();
        let mut now = arrived;
        let res = clock.coarse_resolution_ns();
        loop {
            let mut generation = bucket.generation();
            let limit = bucket.limit();
            let Some(mut at) = ts.caches[i].refill(bucket, limit, generation, now, cost, res)
            else {
                // Held at a zero rate with nothing reserved: reserve once it changes.
                self.sleep(ts, clock, i, now + HOLD_POLL_NS, generation);
                now = clock.now_ns();
                continue;
            };
            if bucket.generation() != generation {
                // The limit changed between its read and the reservation (see `reprice`);
                // this thread's own wait is rescaled below, as any sleeper's.
                reprice(bucket, limit, bucket.limit(), now, ts.caches[i].reserved());
            }
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
    /// Bytes channels settle on what the call moved (see [`Size`]); a call sampled for its
    /// latency records it in each of its pools.
    #[inline(always)]
    pub fn finish(&self, ts: &mut ThreadState, clock: &impl Clock, ticket: Ticket, moved: u64) {
        let (shard, owned) = ts.shard(self.segment);
        if ticket.started != 0 {
            let took = clock.now_ns().saturating_sub(ticket.started);
            for ch in ticket.plan.timing_pools() {
                shard.latency[ch as usize - MAX_RULES].record(took, owned);
            }
        }
        let c = &shard.ops[ticket.op.index()];
        bump(&c.calls, 1, owned);
        if moved > 0 {
            bump(&c.bytes, moved, owned);
        }
        for (k, (i, bytes)) in ticket.plan.channels().enumerate() {
            bump(&shard.channels[i].admitted, 1, owned);
            if bytes {
                let cost = match k {
                    0 => ticket.first_cost,
                    _ => self.charged(i, ticket.size),
                };
                self.settle(ts, shard, owned, clock, i, cost, moved);
            } else if ticket.plan.weighed() && self.compiled.weighs(i) {
                // A weighed pool's units, beside its calls: what its controller shares.
                bump(
                    shard.channels[i].amount(),
                    self.compiled.cost(ticket.op, i),
                    owned,
                );
            }
        }
    }

    /// A bytes channel settles on what the call moved: bytes beyond its charge from the
    /// thread's batch first, bytes it did not move given back.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn settle(
        &self,
        ts: &mut ThreadState,
        shard: &Shard,
        owned: bool,
        clock: &impl Clock,
        i: usize,
        cost: u64,
        moved: u64,
    ) {
        bump(shard.channels[i].amount(), moved, owned);
        let bucket = self.segment.bucket(i);
        if moved > cost {
            let owed = ts.caches[i].spend(bucket.generation(), clock.coarse_ns(), moved - cost);
            if owed > 0 {
                let _ = reserve(bucket, bucket.limit(), clock.now_ns(), owed);
            }
        } else if moved < cost {
            refund(bucket, bucket.limit(), clock.now_ns(), cost - moved);
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::bucket::Limit;
    use crate::config::{Slotted, SlottedCosts, StageConfig};
    use crate::rule::{Identity, Rule, parse_rule};
    use crate::segment::{Totals, fresh};

    /// The monotonic clock, from the test's start, with a coarse reading that ticks
    /// every millisecond, as CLOCK_MONOTONIC_COARSE does every few.
    struct Monotonic(Instant);

    const TICK_NS: u64 = 1_000_000;

    impl Clock for Monotonic {
        fn now_ns(&self) -> u64 {
            self.0.elapsed().as_nanos() as u64 + 1
        }
        fn coarse_ns(&self) -> u64 {
            self.now_ns() / TICK_NS * TICK_NS + 1
        }
        fn coarse_resolution_ns(&self) -> u64 {
            TICK_NS
        }
        fn wait_until(&self, deadline: u64, _word: &AtomicU32, _seen: u32) {
            std::thread::sleep(Duration::from_nanos(deadline.saturating_sub(self.now_ns())));
        }
    }

    /// Compiled with `rules` and `pools` (each in the slot of its rank), over `/scratch`.
    fn compiled(rules: &[&str], pools: &[&str]) -> Compiled {
        let parse =
            |r: &[&str]| -> Vec<Rule> { r.iter().map(|r| parse_rule(r).unwrap()).collect() };
        let pools: Vec<Slotted> = (0..)
            .zip(parse(pools))
            .map(|(slot, rule)| Slotted { slot, rule })
            .collect();
        Compiled::new(
            &StageConfig::slot_in_order(parse(rules)),
            &pools,
            &[],
            &Identity::default(),
            Some(&["/scratch".into()]),
        )
        .unwrap()
    }

    /// What the hooks' managed lane counts for a call held by a rule is what `admit` and
    /// `finish` count.
    #[test]
    fn a_call_admitted_from_its_batch_is_counted_as_admit_counts_it() {
        let (from_batch, timed) = lane_and_admit(&compiled(&["op=getattr rate=1M/s"], &[]), 0);
        // Only a thread's first call, and one each time its batch runs out, is not.
        assert!(from_batch > 900, "{from_batch} of 1000 from the batch");
        assert_eq!(timed, (0, 0));
    }

    /// Under a pool that times its calls, the lane leaves to `admit` the calls to time,
    /// so the pool samples the same share of them either way.
    #[test]
    fn a_pool_times_as_many_calls_through_the_lane() {
        let pool = compiled(&[], &["md: op=getattr rate=1M/s"]);
        let (from_batch, (by_admit, by_lane)) = lane_and_admit(&pool, MAX_RULES);
        // One in 64, and the first after each tick (a thousand calls take a few).
        for timed in [by_admit, by_lane] {
            assert!(
                (1000 / 64..=1000 / 64 + 20).contains(&timed),
                "{timed} timed"
            );
        }
        assert!(
            from_batch + by_lane <= 1000 && from_batch > 900,
            "{from_batch}"
        );
    }

    /// A thousand calls through `admit` and `finish`, then a thousand through the lane
    /// (each one the lane leaves through `admit` and `finish`), held only by channel `i`
    /// with a rate they never reach: each is counted once, as many times as the other.
    /// Returns how many the lane took, and how many each thousand had timed.
    fn lane_and_admit(compiled: &Compiled, i: usize) -> (u64, (u64, u64)) {
        let seg = &fresh();
        let clock = Monotonic(Instant::now());
        seg.init(
            "job 1\n",
            &[(i, Limit::new(1_000_000, 1_000_000))],
            clock.now_ns(),
        )
        .unwrap();
        let gate = Gate {
            segment: seg,
            compiled,
        };
        let place = compiled.places().lookup(b"/scratch/x");
        let lone = compiled.lone_count_channel(Op::Getattr, place).unwrap();
        assert_eq!((lone.channel, lone.timed), (i, i >= MAX_RULES));
        let counted = |t: Totals| {
            let c = &t.channels[i];
            (
                t.ops[Op::Getattr.index()].calls,
                c.arrivals,
                c.admitted,
                c.bytes,
                c.latency.iter().sum::<u64>(),
            )
        };
        let (mut generic, mut lane) = (ThreadState::new(), ThreadState::new());
        let start = counted(seg.totals());
        for _ in 0..1000 {
            let t = gate.admit(&mut generic, &clock, Op::Getattr, place, Size::Known(0));
            gate.finish(&mut generic, &clock, t, 0);
        }
        let by_admit = counted(seg.totals());
        let mut from_batch = 0;
        for _ in 0..1000 {
            if gate.pass_from_batch(&mut lane, &clock, Op::Getattr, lone) {
                from_batch += 1;
            } else {
                let t = gate.admit(&mut lane, &clock, Op::Getattr, place, Size::Known(0));
                gate.finish(&mut lane, &clock, t, 0);
            }
        }
        let by_lane = counted(seg.totals());
        let grew = |from: (u64, u64, u64, u64, u64), to: (u64, u64, u64, u64, u64)| {
            (
                (to.0 - from.0, to.1 - from.1, to.2 - from.2, to.3 - from.3),
                to.4 - from.4,
            )
        };
        let (admit_counts, admit_timed) = grew(start, by_admit);
        let (lane_counts, lane_timed) = grew(by_admit, by_lane);
        assert_eq!(admit_counts, (1000, 1000, 1000, 0));
        assert_eq!(lane_counts, admit_counts);
        (from_batch, (admit_timed, lane_timed))
    }

    /// A pool that weighs its operations: a call of `unlink` (4 units) takes four of
    /// the pool's units and a `getattr` one; the units are counted in the channel's
    /// `bytes` beside its calls, no call of it goes through the batch lane (which takes
    /// one unit), and a rule's channel still charges one call.
    #[test]
    fn a_weighed_pool_charges_each_call_its_operation_s_cost() {
        let seg = &fresh();
        let clock = Monotonic(Instant::now());
        let pool = MAX_RULES;
        // 1,000 units a second with a burst of 10: the 11th unit within a second waits.
        seg.init(
            "job 1\n",
            &[
                (0, Limit::new(1_000_000, 1_000_000)),
                (pool, Limit::new(1000, 10)),
            ],
            clock.now_ns(),
        )
        .unwrap();
        let mut compiled = compiled(&["op=unlink rate=1M/s"], &["md: class=metadata rate=1k/s"]);
        let place = compiled.places().lookup(b"/scratch/x");
        assert!(compiled.lone_count_channel(Op::Getattr, place).is_some());
        compiled.set_costs(&[SlottedCosts {
            slot: 0,
            costs: "metadata=4,getattr=1".parse().unwrap(),
        }]);
        assert!(compiled.lone_count_channel(Op::Getattr, place).is_none());
        assert_eq!(
            (
                compiled.cost(Op::Unlink, pool),
                compiled.cost(Op::Getattr, pool),
                compiled.cost(Op::Unlink, 0)
            ),
            (4, 1, 1)
        );
        let gate = Gate {
            segment: seg,
            compiled: &compiled,
        };
        let mut ts = ThreadState::new();
        let t0 = clock.now_ns();
        // Three unlinks (12 units) and two getattrs (2): 14 units, 4 past the burst.
        for op in [Op::Unlink, Op::Getattr, Op::Unlink, Op::Getattr, Op::Unlink] {
            let t = gate.admit(&mut ts, &clock, op, place, Size::Known(0));
            gate.finish(&mut ts, &clock, t, 0);
        }
        let took = clock.now_ns() - t0;
        let t = seg.totals();
        assert_eq!(
            (t.channels[pool].admitted, t.channels[pool].amount()),
            (5, 14)
        );
        assert_eq!((t.channels[0].admitted, t.channels[0].amount()), (3, 0));
        // At 1,000 units a second the four past the burst take 4 ms; as calls, 5 would
        // have passed within the burst at once.
        assert!(took >= 3_000_000, "{took} ns");
    }

    /// A call the batch does not cover is left to `admit`, counted nowhere.
    #[test]
    fn a_call_its_batch_does_not_cover_counts_nothing() {
        let seg = &fresh();
        let clock = Monotonic(Instant::now());
        seg.init("job 1\n", &[(0, Limit::new(0, 1))], clock.now_ns())
            .unwrap();
        let compiled = compiled(&["op=getattr rate=0/s"], &[]);
        let gate = Gate {
            segment: seg,
            compiled: &compiled,
        };
        let mut ts = ThreadState::new();
        let before = seg.totals();
        let place = compiled.places().lookup(b"/scratch/x");
        let lone = compiled.lone_count_channel(Op::Getattr, place).unwrap();
        assert!(!gate.pass_from_batch(&mut ts, &clock, Op::Getattr, lone));
        assert_eq!(seg.totals(), before);
    }
}
