//! The GCRA bucket: one atomic word holding the theoretical arrival time (TAT).
//!
//! The generic cell rate algorithm keeps no token count: a bucket remembers only when the
//! next request would arrive if requests came exactly at the rate. A request of cost `c`
//! moves the TAT by `c` emission intervals; it may start once `TAT − τ ≤ now`, where the
//! tolerance `τ` is the burst. One compare-and-swap reserves a request's slot, so threads
//! of many processes share a bucket through shared memory exactly, without a lock, and a
//! process killed at any instant leaves it consistent.
//!
//! Requests never fail: [`Bucket::reserve`] returns the instant at which the caller may
//! proceed, and the caller sleeps until then. A request may start once the TAT it leaves
//! behind is at most one burst ahead of now, so over any window the bucket admits at most
//! the rate times the window plus the burst, whatever the requests' sizes: a request
//! larger than the burst waits, after an idle period, for the units it needs beyond it. Time is passed in (nanoseconds on a clock
//! shared by every process, CLOCK_MONOTONIC in the stage), so the arithmetic is tested
//! with a hand-driven clock.
//!
//! ```
//! use sluice_core::bucket::{Bucket, Limit};
//! let b = Bucket::new(Limit::new(2, 1)); // 2 per second, burst 1
//! assert_eq!(b.reserve(0, 1), Some(0)); // first request passes at once
//! assert_eq!(b.reserve(0, 1), Some(500_000_000)); // the next one waits half a second
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// A rate and a burst, in units (operations or bytes) per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// Units per second; 0 holds every request until the rate is raised.
    pub per_sec: u64,
    /// Units that may pass at once after an idle period (at least 1).
    pub burst: u64,
}

impl Limit {
    /// A limit of `per_sec` units per second with a burst of `burst` units (at least 1).
    pub const fn new(per_sec: u64, burst: u64) -> Self {
        Limit {
            per_sec,
            burst: if burst == 0 { 1 } else { burst },
        }
    }

    /// Nanoseconds that `cost` units occupy at this rate (`None` when the rate is 0).
    #[inline]
    pub fn duration_ns(&self, cost: u64) -> Option<u64> {
        if self.per_sec == 0 {
            return None;
        }
        let ns = (cost as u128 * NANOS_PER_SEC).div_ceil(self.per_sec as u128);
        Some(ns.min(u64::MAX as u128) as u64)
    }

    /// The tolerance τ: how far ahead of now a request may leave the TAT and still start
    /// at once (the burst, as time).
    #[inline]
    pub fn tolerance_ns(&self) -> Option<u64> {
        self.duration_ns(self.burst)
    }
}

/// Where a bucket's theoretical arrival time lives: in process memory or in a shared
/// segment. Both are one `AtomicU64`; the trait keeps the algorithm independent of where.
pub trait TatCell {
    /// The atomic word holding the TAT in nanoseconds.
    fn tat(&self) -> &AtomicU64;
}

impl TatCell for AtomicU64 {
    fn tat(&self) -> &AtomicU64 {
        self
    }
}

/// Reserves `cost` units on the TAT in `cell` at time `now` under `limit`.
///
/// Returns the instant at which the request may proceed (≤ now when it need not wait),
/// or `None` when the rate is 0 and the request must wait for the rate to be raised.
#[inline]
pub fn reserve<C: TatCell + ?Sized>(cell: &C, limit: Limit, now: u64, cost: u64) -> Option<u64> {
    reserve_within(cell, limit.duration_ns(cost)?, limit.tolerance_ns()?, now)
}

/// Gives back `units` a request reserved and did not use (a short read), never taking
/// the TAT below `now`: time already past cannot be handed out again.
#[inline]
pub fn refund<C: TatCell + ?Sized>(cell: &C, limit: Limit, now: u64, units: u64) {
    if let Some(back) = limit.duration_ns(units) {
        give_back(cell, now, back);
    }
}

/// Corrects a reservation of `units` priced at `priced` that may have landed on a
/// backlog already rescaled to the rate `current` (a limit change raced it: the caller
/// read the limit, the controller changed it, then the caller reserved). Priced at a
/// lower rate than the bucket now runs at, it holds the bucket for longer than its
/// units take; a later return to the lower rate rescales that excess with the rest of
/// the backlog, by the ratio of the rates. A thread preempted between its read and its
/// reservation while the hand-over flipped a job between a 167-KB/s floor and a
/// 64-MiB/s pool left a 16-KiB write's 98 ms on a 64-MiB/s backlog: 38 s at the floor.
/// The excess is given back. Had the reservation landed before the rescale, it was
/// already right and this gives back too much, but never below `now`: at most the
/// backlog then queued, a burst and the calls waiting, is admitted early. Left unseen:
/// a change the caller checks for before the controller's generation bump ends it (a
/// few instructions), and a rate changed and changed back before the caller checks.
#[inline]
pub fn reprice<C: TatCell + ?Sized>(cell: &C, priced: Limit, current: Limit, now: u64, units: u64) {
    if let (Some(was), Some(is)) = (priced.duration_ns(units), current.duration_ns(units))
        && is < was
    {
        give_back(cell, now, was - is);
    }
}

/// Takes `back` nanoseconds off the TAT, never below `now`.
#[inline]
fn give_back<C: TatCell + ?Sized>(cell: &C, now: u64, back: u64) {
    let tat = cell.tat();
    let mut cur = tat.load(Ordering::Relaxed);
    while cur > now {
        let next = cur.saturating_sub(back).max(now);
        match tat.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return,
            Err(seen) => cur = seen,
        }
    }
}

/// [`reserve`] with the increment and tolerance already worked out.
#[inline]
fn reserve_within<C: TatCell + ?Sized>(cell: &C, inc: u64, tau: u64, now: u64) -> Option<u64> {
    let tat = cell.tat();
    let mut cur = tat.load(Ordering::Relaxed);
    loop {
        let next = cur.max(now).saturating_add(inc);
        match tat.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return Some(now.max(next.saturating_sub(tau))),
            Err(seen) => cur = seen,
        }
    }
}

/// A bucket held in process memory, with its limit: for tests, benchmarks and daemons.
#[derive(Debug)]
pub struct Bucket {
    tat: AtomicU64,
    limit: Limit,
}

impl Bucket {
    /// A bucket whose TAT starts at 0.
    pub const fn new(limit: Limit) -> Self {
        Bucket {
            tat: AtomicU64::new(0),
            limit,
        }
    }

    /// See [`reserve`].
    pub fn reserve(&self, now: u64, cost: u64) -> Option<u64> {
        reserve(&self.tat, self.limit, now, cost)
    }
}

/// Units a thread reserved ahead and may spend without touching the shared word.
///
/// At high rates many threads reserving one unit each would all write the same cache
/// line, and each would read the precise clock. A thread instead reserves a small batch
/// and spends it locally, judging only by a coarse clock (a few nanoseconds to read)
/// whether the batch is still fresh. The batch is part of the TAT like any reservation;
/// it expires with the time it was reserved for, so idle threads cannot hoard tokens,
/// and with the bucket's generation, so a rate change takes effect at once. What expired
/// unspent is given back at the thread's next reservation, and a thread that left a
/// batch unspent takes none then: a congested bucket loses no capacity to slow threads.
/// Because the coarse clock lags by up to its resolution, a batch is reserved under a
/// tolerance cut by that lag and by the batch itself: the limit plus burst holds over
/// every window.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalCache {
    units: u64,
    valid_until: u64,
    generation: u32,
    /// The units the last [`LocalCache::refill`] reserved on the cell.
    reserved: u64,
}

/// The longest stretch of time a thread may reserve ahead for itself.
const BATCH_WINDOW_NS: u64 = 1_000_000;

impl LocalCache {
    /// An empty cache.
    pub const fn new() -> Self {
        LocalCache {
            units: 0,
            valid_until: 0,
            generation: 0,
            reserved: 0,
        }
    }

    /// The units the last [`LocalCache::refill`] reserved on the shared cell: the
    /// request's and its batch's.
    pub fn reserved(&self) -> u64 {
        self.reserved
    }

    /// Spends `cost` units from the batch, if it holds them and is fresh at `coarse_now`
    /// (a clock that lags the precise one by at most the resolution given to `refill`).
    #[inline]
    pub fn take(&mut self, generation: u32, coarse_now: u64, cost: u64) -> bool {
        if self.generation == generation && self.units >= cost && coarse_now < self.valid_until {
            self.units -= cost;
            return true;
        }
        false
    }

    /// Spends up to `cost` units from the batch, if it is fresh at `coarse_now`, and
    /// returns the units it did not cover, which the caller reserves on the shared cell.
    ///
    /// A call charged only once it has run (it could not say its size before) settles
    /// from the batch first: otherwise the batch its admission reserved would expire
    /// unspent, and such calls ran 7% under their rate. When the batch does not cover
    /// it, the batch is spent: the thread's next call must go to the shared cell, and
    /// wait there for what this one owes (a batch that stayed fresh would let calls
    /// charged nothing before pass until the coarse clock moved, 4 ms of unheld bytes).
    #[inline]
    pub fn spend(&mut self, generation: u32, coarse_now: u64, cost: u64) -> u64 {
        if self.generation != generation || coarse_now >= self.valid_until {
            return cost;
        }
        let used = self.units.min(cost);
        self.units -= used;
        if used < cost {
            self.valid_until = 0;
        }
        cost - used
    }

    /// Reserves `cost` units at the precise time `now` on the shared cell, with a new
    /// batch when the rate and burst leave room for one. `coarse_res` is how far the
    /// clock `take` is given may lag. Returns the instant to wait for, as [`reserve`].
    #[inline]
    pub fn refill<C: TatCell + ?Sized>(
        &mut self,
        cell: &C,
        limit: Limit,
        generation: u32,
        now: u64,
        cost: u64,
        coarse_res: u64,
    ) -> Option<u64> {
        let tau = limit.tolerance_ns()?;
        // Units left from a fresh batch count towards this request: dropping them would
        // waste what the bucket has already charged (bytes rules, where a batch is rarely
        // a whole number of calls).
        let same = self.generation == generation;
        let carried = if same && now < self.valid_until {
            self.units.min(cost)
        } else {
            0
        };
        // A batch that expired unspent goes back to the cell: while the bucket is
        // congested its TAT is still ahead of now and the units reach the threads queued
        // there; otherwise the time is past and nothing is given. A thread that could
        // not spend a batch within its window takes none this time: a replayer's thread
        // of a rare operation, calling a few times a second, wasted five units of six at
        // every call, and a pool held 16 such threads to 88% of its rate.
        let expired = if same && now >= self.valid_until {
            self.units
        } else {
            0
        };
        if expired > 0 {
            refund(cell, limit, now, expired);
            self.units = 0;
        }
        let need = cost - carried;
        let slack = BATCH_WINDOW_NS + coarse_res;
        let extra = if expired == 0 && tau >= slack + BATCH_WINDOW_NS {
            batch_units(limit, cost)
        } else {
            0
        };
        let (inc, tau) = match extra {
            0 => (limit.duration_ns(need)?, tau),
            _ => (limit.duration_ns(need + extra)?, tau - slack),
        };
        let admit_at = reserve_within(cell, inc, tau, now)?;
        self.reserved = need + extra;
        self.units = extra;
        self.generation = generation;
        self.valid_until = admit_at.saturating_add(inc);
        Some(admit_at)
    }
}

/// How many units beyond `cost` to reserve at once: half of what the batch window holds
/// at this rate, none when a single request already fills it.
#[inline]
fn batch_units(limit: Limit, cost: u64) -> u64 {
    let fit = (BATCH_WINDOW_NS as u128 * limit.per_sec as u128 / NANOS_PER_SEC) as u64;
    fit.saturating_sub(cost) / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    #[test]
    fn burst_passes_at_once_then_rate_applies() {
        let b = Bucket::new(Limit::new(10, 3));
        for _ in 0..3 {
            assert_eq!(b.reserve(SEC, 1), Some(SEC));
        }
        assert_eq!(b.reserve(SEC, 1), Some(SEC + SEC / 10));
    }

    #[test]
    fn idle_time_is_not_banked_beyond_the_burst() {
        let b = Bucket::new(Limit::new(10, 1));
        assert_eq!(b.reserve(0, 1), Some(0));
        // Ten seconds idle: only one request passes immediately, not a hundred.
        assert_eq!(b.reserve(10 * SEC, 1), Some(10 * SEC));
        assert_eq!(b.reserve(10 * SEC, 1), Some(10 * SEC + SEC / 10));
    }

    #[test]
    fn unused_units_are_given_back_but_not_below_now() {
        let b = Bucket::new(Limit::new(1000, 1));
        b.reserve(0, 500);
        refund(&b.tat, b.limit, 0, 400);
        assert_eq!(b.reserve(0, 1), Some(100_000_000));
        refund(&b.tat, b.limit, 10 * SEC, 1_000_000);
        assert_eq!(b.reserve(10 * SEC, 1), Some(10 * SEC));
    }

    #[test]
    fn zero_rate_holds() {
        let b = Bucket::new(Limit::new(0, 1));
        assert_eq!(b.reserve(0, 1), None);
    }

    #[test]
    fn bytes_cost_their_size() {
        let b = Bucket::new(Limit::new(1 << 20, 1 << 20));
        assert_eq!(b.reserve(0, 1 << 20), Some(0));
        assert_eq!(b.reserve(0, 1 << 19), Some(SEC / 2));
    }

    /// Regression: a 1 MiB write under a 0.5 MiB burst passed at once after an idle
    /// period, so a one-second window could see the limit plus a whole call.
    #[test]
    fn a_call_larger_than_the_burst_waits_for_what_it_lacks() {
        let b = Bucket::new(Limit::new(1 << 20, 1 << 19));
        assert_eq!(b.reserve(10 * SEC, 1 << 20), Some(10 * SEC + SEC / 2));
    }

    /// Over any one-second window a saturated bucket admits at most rate + burst, for
    /// calls smaller and larger than the burst.
    #[test]
    fn no_window_exceeds_rate_plus_burst() {
        for (rate, burst, cost) in [
            (50u64 << 20, 1u64 << 19, 1u64 << 20),
            (2000, 20, 1),
            (1000, 1, 7),
        ] {
            let b = Bucket::new(Limit::new(rate, burst));
            let mut starts = Vec::new();
            let mut now = 5 * SEC;
            while now < 8 * SEC {
                now = b.reserve(now, cost).unwrap().max(now);
                starts.push(now);
            }
            for (i, &t) in starts.iter().enumerate() {
                let within = starts[i..].iter().take_while(|&&u| u < t + SEC).count() as u64;
                assert!(
                    within * cost <= rate + burst,
                    "rate {rate} burst {burst} cost {cost}: {within}"
                );
            }
        }
    }

    /// Regression (IO-SETS run 57, 2026-11-28): a thread reads a job's floor (167 KB/s),
    /// the hand-over raises the job to its pool's 64 MiB/s, and the thread's 16-KiB
    /// reservation lands priced at the floor on the rescaled backlog. Back at the floor,
    /// that excess was 387 times a write's time: 38 s of backlog for one write. The
    /// thread reprices what it reserved once it sees the change; a reservation that
    /// landed before the rescale, and so was right, is then cut at most to now.
    #[test]
    fn a_reservation_raced_by_a_rate_change_is_repriced() {
        let (floor, pool) = (
            Limit::new(167_000, 1_670),
            Limit::new(64 << 20, (64 << 20) / 100),
        );
        let cost = 16 << 10;
        for raced in [true, false] {
            let seg = &crate::segment::fresh();
            let bucket = seg.bucket(0);
            bucket.set_limit(floor, SEC);
            let mut cache = LocalCache::new();
            let (generation, priced) = (bucket.generation(), bucket.limit());
            let reserve = |cache: &mut LocalCache| {
                cache
                    .refill(bucket, priced, generation, SEC, cost, 0)
                    .expect("a rate");
            };
            if raced {
                bucket.set_limit(pool, SEC);
                reserve(&mut cache);
            } else {
                reserve(&mut cache);
                bucket.set_limit(pool, SEC);
            }
            assert_ne!(bucket.generation(), generation);
            reprice(bucket, priced, bucket.limit(), SEC, cache.reserved());
            bucket.set_limit(floor, SEC);
            // What is left queued, at the floor: at most the write's own time (to the
            // rounding of two rescales), where 38 s were.
            let queued = bucket.tat().load(Ordering::Relaxed).saturating_sub(SEC);
            let write = floor.duration_ns(cost).expect("a rate");
            assert!(
                queued <= write + 1_000,
                "raced {raced}: {queued} ns queued, a write takes {write}"
            );
        }
    }

    /// Regression: batches of bytes were dropped at each refill when calls did not divide
    /// them, so 4 KiB writes under a 32 MiB/s rule ran 13% slow.
    #[test]
    fn leftover_batch_units_are_not_wasted() {
        let limit = Limit::new(32 << 20, (32 << 20) / 100);
        let cell = AtomicU64::new(0);
        let mut c = LocalCache::new();
        let (mut now, mut moved) = (0u64, 0u64);
        while now < SEC {
            let coarse = now - now % 4_000_000;
            if !c.take(0, coarse, 4096) {
                now = c
                    .refill(&cell, limit, 0, now, 4096, 4_000_000)
                    .unwrap()
                    .max(now);
            }
            moved += 4096;
        }
        let want = 32u64 << 20;
        assert!(
            moved.abs_diff(want) * 100 <= want,
            "{moved} bytes in a second, want {want}"
        );
    }

    /// Regression: a saturated bucket must admit exactly rate × window (+ burst) over
    /// a long window, not undershoot the way PADLL's bucket does at 20k/s.
    #[test]
    fn saturated_bucket_admits_the_rate_exactly() {
        for rate in [3, 2_000, 20_000, 100_000] {
            let b = Bucket::new(Limit::new(rate, 1));
            let mut now = 0;
            let mut admitted = 0u64;
            // Every caller arrives as soon as the previous was admitted (closed loop).
            while now < 10 * SEC {
                now = b.reserve(now, 1).unwrap().max(now);
                if now < 10 * SEC {
                    admitted += 1;
                }
            }
            assert!(admitted.abs_diff(10 * rate) <= 1, "rate {rate}: {admitted}");
        }
    }

    /// Threads in a closed loop, each blocked until its reservation is due, judging
    /// batches by a clock that lags by up to `res`: no one-second window exceeds the
    /// limit plus the burst, and the limit is reached.
    #[test]
    fn local_batches_hold_the_limit_with_a_lagging_clock() {
        let limit = Limit::new(10_000_000, 100_000);
        let res = 4_000_000;
        let cell = AtomicU64::new(0);
        let mut caches = [LocalCache::new(); 4];
        let mut busy_until = [0u64; 4];
        let mut per_ms = vec![0u64; 3000];
        let mut now = 0;
        while now < 3 * SEC {
            let coarse = now - now % res;
            for (c, busy) in caches.iter_mut().zip(busy_until.iter_mut()) {
                if *busy <= now {
                    if !c.take(0, coarse, 1) {
                        *busy = c.refill(&cell, limit, 0, now, 1, res).unwrap();
                    }
                    let at = (*busy).max(now) / 1_000_000;
                    if let Some(slot) = per_ms.get_mut(at as usize) {
                        *slot += 1;
                    }
                }
            }
            now += 50;
        }
        let max_window = per_ms
            .windows(1000)
            .map(|w| w.iter().sum::<u64>())
            .max()
            .unwrap();
        assert!(max_window <= 10_000_000 + 100_000, "{max_window}");
        let total: u64 = per_ms.iter().sum();
        assert!(total >= 29_000_000, "{total}");
    }

    #[test]
    fn spending_after_the_call_uses_the_batch_first() {
        let limit = Limit::new(10_000_000, 100_000);
        let cell = AtomicU64::new(0);
        let mut c = LocalCache::new();
        c.refill(&cell, limit, 0, 0, 0, 0);
        let batch = c.units;
        assert!(batch > 10);
        assert_eq!(c.spend(0, 0, 10), 0);
        assert_eq!(c.spend(0, 0, batch), 10, "only what the batch still held");
        assert!(
            !c.take(0, 0, 0),
            "a spent batch sends the next call to the cell"
        );
        c.refill(&cell, limit, 0, 0, 0, 0);
        assert_eq!(c.spend(1, 0, 5), 5, "a batch of another generation");
    }

    /// Regression: threads too slow to spend a batch (a replayer's rare operations) held
    /// a congested pool under its rate, each wasting the batch it reserved at every call.
    #[test]
    fn slow_threads_do_not_waste_a_congested_bucket() {
        let limit = Limit::new(11_000, 110);
        let res = 4_000_000;
        let cell = AtomicU64::new(0);
        // Thread 0 is always behind (a backlog); threads 1–6 call every 50 ms.
        let mut caches = [LocalCache::new(); 7];
        let mut next = [0u64, 1, 2, 3, 4, 5, 6].map(|k| k * 7_000_000);
        let mut admitted = 0u64;
        let mut now = 0;
        while now < 2 * SEC {
            let coarse = now - now % res;
            for (k, (c, at)) in caches.iter_mut().zip(next.iter_mut()).enumerate() {
                if *at > now {
                    continue;
                }
                let due = if c.take(0, coarse, 1) {
                    now
                } else {
                    c.refill(&cell, limit, 0, now, 1, res).unwrap().max(now)
                };
                admitted += u64::from(due < 2 * SEC);
                *at = if k == 0 {
                    due + 10_000
                } else {
                    due + 50_000_000
                };
            }
            now += 10_000;
        }
        assert!(
            admitted.abs_diff(22_000) <= 220,
            "{admitted} calls in 2 s at 11k/s"
        );
    }

    #[test]
    fn generation_change_drops_the_batch() {
        let limit = Limit::new(10_000_000, 100_000);
        let cell = AtomicU64::new(0);
        let mut c = LocalCache::new();
        c.refill(&cell, limit, 0, 0, 1, 0);
        assert!(c.take(0, 0, 1));
        assert!(!c.take(1, 0, 1));
    }
}
