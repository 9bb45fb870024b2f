//! What a controller sees of a job over an interval: per channel, arrivals, admitted units,
//! waiting, and an estimate of the demand the job would have had without each limit.
//!
//! A throttled job's admitted rate says nothing of how much more it wants: a closed-loop
//! thread held to half its natural rate simply issues half as many calls. What does show
//! is the time its threads spent waiting. A thread that waited a share `w` of an interval
//! and was admitted `n` units in it would have issued about `n / (1 − w)` without waiting,
//! since every other moment of the interval it was doing what it does unthrottled. Each
//! thread owns a counter shard, so the estimate is made thread by thread from the segment's
//! shards and summed, channel by channel: `demand_c = Σ_threads Δadmitted_c / (1 − Δwait_c
//! / interval)`, where `wait_c` is the time the thread was held by that channel alone: a
//! job held by its own rule would be held by it with or without a pool, so that time does
//! not count as demand for the pool. Threads beyond the segment's own shards share one,
//! which the estimate treats as one thread.

use serde::{Deserialize, Serialize};

use crate::segment::{ChannelTotal, Latency, MAX_RULES, Segment};

/// The most a thread's admitted units are multiplied by: a thread that waited all of the
/// interval says only that it wants much more than it got.
pub const MAX_DEMAND_FACTOR: f64 = 100.0;

/// How long a channel's calls may stay inside the file system with nothing arriving
/// at it before they are taken for calls that will never return. A thread cancelled or
/// a process killed inside a call leaves that call counted as arrived and never as
/// returned; without this bound its job would look busy for as long as it lives. 10 s
/// is longer than a journal commit or a server's recovery holds a call.
pub const STUCK_AFTER_NS: u64 = 10_000_000_000;

/// A channel to observe: its index in the segment, and whether its unit is bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watched {
    /// Channel index (rules first, then pools).
    pub index: usize,
    /// Whether the channel counts bytes (admitted units are then bytes, else calls).
    pub bytes: bool,
    /// Whether the channel is a pool that weighs its operations (admitted units are then
    /// cost units, counted where a bytes channel counts its bytes).
    pub weighed: bool,
}

impl Watched {
    /// Whether the channel's units are its amount ([`ChannelTotal::amount`]: bytes, or
    /// cost units) rather than its calls.
    fn in_units(&self) -> bool {
        self.bytes || self.weighed
    }

    /// The units the channel admitted in `t`: calls, bytes or cost units.
    fn units(&self, t: &ChannelTotal) -> u64 {
        if self.in_units() {
            t.amount()
        } else {
            t.admitted
        }
    }
}

/// The counters of some channels at one instant.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    at_ns: u64,
    totals: Vec<ChannelTotal>,
    /// Per thread (shard), per watched channel: units admitted and nanoseconds waited.
    threads: Vec<Vec<(u64, u64)>>,
    /// Per watched channel: what is known of its calls inside the file system, carried
    /// from one snapshot to the next by [`Snapshot::rates_since`].
    inside: Vec<Inside>,
}

/// A channel's calls inside the file system as [`Snapshot::rates_since`] tracks them.
#[derive(Clone, Copy, Debug, Default)]
struct Inside {
    /// The channel's arrivals when last seen.
    arrivals: u64,
    /// When its arrivals last changed (ns, the snapshots' clock).
    moved_at_ns: u64,
    /// Calls inside that stayed there [`STUCK_AFTER_NS`] with nothing arriving: no
    /// longer counted, until they return (the counts cannot tell which call returned:
    /// the discount holds until none is inside).
    stuck: u64,
}

impl Inside {
    /// Follows the channel to `now` (read at `at_ns`) from `self` (the last snapshot's
    /// view of it) and says how many of its calls are inside the file system and count.
    fn follow(self, now: &ChannelTotal, at_ns: u64) -> (Inside, u64) {
        // Threads waiting at the gate have arrived and are not admitted either. The
        // counters are read arrivals first: a call that raced the read is missed, never
        // counted twice.
        let inside = now
            .arrivals
            .saturating_sub(now.admitted)
            .saturating_sub(now.waiting);
        let mut next = self;
        if now.arrivals != self.arrivals {
            next.arrivals = now.arrivals;
            next.moved_at_ns = at_ns;
        } else if at_ns.saturating_sub(self.moved_at_ns) >= STUCK_AFTER_NS {
            next.stuck = inside;
        }
        next.stuck = next.stuck.min(inside);
        (next, inside - next.stuck)
    }
}

/// One channel over one interval, per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChannelRates {
    /// Units that reached the gate, admitted or not yet: calls, or for a bytes channel
    /// the bytes of those calls, counted at the mean size of the calls it admitted (a
    /// call's size is known only once it ran).
    pub arrivals: f64,
    /// Units admitted.
    pub admitted: f64,
    /// Thread-seconds spent waiting.
    pub wait: f64,
    /// Threads waiting at the end of the interval.
    pub waiting: u32,
    /// Estimated units the job would have issued without this channel's limit.
    pub demand: f64,
    /// Calls inside the file system at the end of the interval: admitted, not yet
    /// returned (calls held there [`STUCK_AFTER_NS`] with nothing arriving are left
    /// out). A job whose every thread spent the interval inside one slow call (a
    /// journal commit, a server's recovery) neither arrived nor waited, yet is busy.
    #[serde(default)]
    pub in_flight: u32,
    /// Calls admitted, for a pool that weighs its operations (whose units are cost
    /// units); 0 for any other channel, whose `admitted` says it (and in a record
    /// written before pools weighed operations).
    #[serde(default)]
    pub calls: f64,
}

impl ChannelRates {
    /// Whether the job asked in the interval though no call of it arrived or was
    /// admitted: its threads spent the whole interval at the gate (held at a low rate)
    /// or inside calls (a slow file system). Its rates say nothing of it, yet it is not
    /// idle: an algorithm that orders jobs by when they began asking (SET-10) must not
    /// see its phase end.
    pub fn asked_unseen(&self) -> bool {
        self.arrivals <= 0.0 && self.demand <= 0.0 && (self.waited() || self.in_flight > 0)
    }

    /// Whether a thread of the job waited at the gate in the interval or waits at its
    /// end.
    pub fn waited(&self) -> bool {
        self.waiting > 0 || self.wait > 0.0
    }
}

impl Snapshot {
    /// Reads `watched` from `segment` at time `at_ns`.
    pub fn take(segment: &Segment, watched: &[Watched], at_ns: u64) -> Snapshot {
        let mut totals = vec![ChannelTotal::default(); watched.len()];
        let mut threads = Vec::new();
        for shard in segment.shards_in_use() {
            let mut per_channel = Vec::with_capacity(watched.len());
            for (w, acc) in watched.iter().zip(&mut totals) {
                let mut t = ChannelTotal::of(&shard.channels[w.index]);
                if let Some(l) = w.index.checked_sub(MAX_RULES).map(|p| &shard.latency[p]) {
                    t.add_latency(l);
                }
                acc.add(&t);
                per_channel.push((w.units(&t), t.wait_ns));
            }
            threads.push(per_channel);
        }
        Snapshot {
            at_ns,
            totals,
            threads,
            inside: Vec::new(),
        }
    }

    /// The plain sums of each watched channel, in the order watched: what a job's
    /// threads were admitted, charged and held since its segment was made.
    pub fn totals(&self) -> &[ChannelTotal] {
        &self.totals
    }

    /// The latencies sampled on watched channel `c` (a pool's) between `prev` and `self`.
    pub fn latency_since(&self, prev: &Snapshot, c: usize) -> Latency {
        let then = prev.totals.get(c).copied().unwrap_or_default();
        self.totals[c].latency_since(&then)
    }

    /// Rates over the interval from `prev` to `self`, one per watched channel (the same
    /// channels in the same order in both). Carries forward from `prev` what it knew of
    /// calls stuck inside the file system.
    pub fn rates_since(&mut self, prev: &Snapshot, watched: &[Watched]) -> Vec<ChannelRates> {
        let interval = self.at_ns.saturating_sub(prev.at_ns).max(1) as f64;
        let secs = interval / 1e9;
        let mut demand = vec![0.0; watched.len()];
        for (i, now) in self.threads.iter().enumerate() {
            let before = prev.threads.get(i);
            for (c, (&(units, waited), acc)) in now.iter().zip(&mut demand).enumerate() {
                let (units0, waited0) = before.and_then(|b| b.get(c)).copied().unwrap_or((0, 0));
                // Only the time held by this channel: a thread held by another limit (its
                // job's own rule, say) would be held by it without this one too.
                let held = waited.saturating_sub(waited0) as f64;
                let factor = (interval / (interval - held).max(1.0)).min(MAX_DEMAND_FACTOR);
                *acc += units.saturating_sub(units0) as f64 * factor;
            }
        }
        let at_ns = self.at_ns;
        let (inside, in_flight): (Vec<_>, Vec<_>) = (self.totals.iter().enumerate())
            .map(|(c, now)| {
                let then = prev.inside.get(c).copied().unwrap_or_default();
                then.follow(now, at_ns)
            })
            .unzip();
        self.inside = inside;
        watched
            .iter()
            .enumerate()
            .map(|(c, w)| {
                let now = &self.totals[c];
                let then = prev.totals.get(c).copied().unwrap_or_default();
                let arrived = now.arrivals.saturating_sub(then.arrivals) as f64;
                ChannelRates {
                    arrivals: arrived * unit_size(w, now, &then) / secs,
                    admitted: w.units(now).saturating_sub(w.units(&then)) as f64 / secs,
                    wait: now.wait_ns.saturating_sub(then.wait_ns) as f64 / interval,
                    waiting: now.waiting.min(u32::MAX as u64) as u32,
                    demand: demand[c] / secs,
                    in_flight: in_flight[c].min(u32::MAX as u64) as u32,
                    calls: if w.weighed {
                        now.admitted.saturating_sub(then.admitted) as f64 / secs
                    } else {
                        0.0
                    },
                }
            })
            .collect()
    }
}

/// The units one call that reached channel `w` counts for: 1, or for a bytes channel (a
/// weighed pool) the mean size (cost) of the calls it admitted between `then` and `now`
/// (since it opened, when it admitted none in the interval; 0 before it admitted any).
fn unit_size(w: &Watched, now: &ChannelTotal, then: &ChannelTotal) -> f64 {
    if !w.in_units() {
        return 1.0;
    }
    let calls = now.admitted.saturating_sub(then.admitted);
    if calls > 0 {
        return now.amount().saturating_sub(then.amount()) as f64 / calls as f64;
    }
    if now.admitted > 0 {
        return now.amount() as f64 / now.admitted as f64;
    }
    0.0
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::segment::{SHARDS, fresh};

    /// Two threads held to half their natural rate (each waited half the second) and one
    /// unthrottled: the estimate doubles the first two and keeps the third.
    #[test]
    fn demand_scales_each_thread_by_the_time_it_could_work() {
        let seg = &fresh();
        let watched = [Watched {
            index: 2,
            bytes: false,
            weighed: false,
        }];
        let before = Snapshot::take(seg, &watched, 0);
        for (admitted, wait_ns) in [(500, 500_000_000), (300, 500_000_000), (1000, 0)] {
            let c = &seg.shard(seg.next_shard()).channels[2];
            c.admitted.store(admitted, Ordering::Relaxed);
            c.arrivals.store(admitted, Ordering::Relaxed);
            c.wait_ns.store(wait_ns, Ordering::Relaxed);
        }
        let mut after = Snapshot::take(seg, &watched, 1_000_000_000);
        let r = after.rates_since(&before, &watched)[0];
        assert_eq!(r.admitted, 1800.0);
        assert_eq!(r.arrivals, 1800.0);
        assert_eq!(r.wait, 1.0);
        assert!((r.demand - 2600.0).abs() < 1e-6, "{}", r.demand);
        assert!(seg.shards_in_use().len() <= SHARDS + 1);
    }

    #[test]
    fn a_thread_that_only_waited_counts_a_bounded_factor() {
        let seg = &fresh();
        let watched = [Watched {
            index: 70,
            bytes: true,
            weighed: false,
        }];
        let before = Snapshot::take(seg, &watched, 0);
        let c = &seg.shard(seg.next_shard()).channels[70];
        c.bytes.store(10, Ordering::Relaxed);
        c.wait_ns.store(2_000_000_000, Ordering::Relaxed);
        let r = Snapshot::take(seg, &watched, 1_000_000_000).rates_since(&before, &watched)[0];
        assert_eq!(r.admitted, 10.0);
        assert_eq!(r.demand, 10.0 * MAX_DEMAND_FACTOR);
    }

    /// A bytes channel counts its arrivals in bytes, at the mean size of the calls it
    /// admitted: in the interval, or since it opened when it admitted none in it.
    #[test]
    fn arrivals_of_a_bytes_channel_are_counted_in_bytes() {
        let seg = &fresh();
        let watched = [Watched {
            index: 66,
            bytes: true,
            weighed: false,
        }];
        let c = &seg.shard(seg.next_shard()).channels[66];
        let count = |arrivals: u64, admitted: u64, bytes: u64| {
            c.arrivals.fetch_add(arrivals, Ordering::Relaxed);
            c.admitted.fetch_add(admitted, Ordering::Relaxed);
            c.bytes.fetch_add(bytes, Ordering::Relaxed);
        };
        let t0 = Snapshot::take(seg, &watched, 0);
        // 10 calls of 4 KiB admitted, 6 more waiting at the gate.
        count(16, 10, 40_960);
        let mut t1 = Snapshot::take(seg, &watched, 1_000_000_000);
        let r = t1.rates_since(&t0, &watched)[0];
        assert_eq!((r.admitted, r.arrivals), (40_960.0, 16.0 * 4096.0));
        // Four calls arrive, none is admitted: still 4 KiB each.
        count(4, 0, 0);
        let mut t2 = Snapshot::take(seg, &watched, 2_000_000_000);
        let r = t2.rates_since(&t1, &watched)[0];
        assert_eq!((r.admitted, r.arrivals), (0.0, 4.0 * 4096.0));
    }

    /// A thread held half the time by its job's own rule is not short of the pool: the
    /// pool's demand is what it was admitted, the rule's twice that.
    #[test]
    fn time_held_by_another_channel_is_not_demand() {
        let seg = &fresh();
        let watched = [
            Watched {
                index: 1,
                bytes: false,
                weighed: false,
            },
            Watched {
                index: 65,
                bytes: false,
                weighed: false,
            },
        ];
        let before = Snapshot::take(seg, &watched, 0);
        let shard = seg.shard(seg.next_shard());
        for c in [1, 65] {
            shard.channels[c].admitted.store(400, Ordering::Relaxed);
        }
        shard.channels[1]
            .wait_ns
            .store(500_000_000, Ordering::Relaxed);
        let r = Snapshot::take(seg, &watched, 1_000_000_000).rates_since(&before, &watched);
        assert!((r[0].demand - 800.0).abs() < 1e-6, "{}", r[0].demand);
        assert!((r[1].demand - 400.0).abs() < 1e-6, "{}", r[1].demand);
    }

    /// A thread inside a slow call for whole intervals keeps its job busy; one left
    /// inside a call [`STUCK_AFTER_NS`] with nothing arriving (its thread cancelled, say)
    /// stops counting, until the job's other calls come and go.
    #[test]
    fn calls_inside_the_file_system_count_until_they_look_stuck() {
        let seg = &fresh();
        let watched = [Watched {
            index: 66,
            bytes: true,
            weighed: false,
        }];
        let shard = seg.shard(seg.next_shard());
        let c = &shard.channels[66];
        let mut prev = Snapshot::take(seg, &watched, 0);
        let mut at = |s: u64| {
            let mut now = Snapshot::take(seg, &watched, s * 1_000_000_000);
            let r = now.rates_since(&prev, &watched)[0];
            prev = now;
            r.in_flight
        };
        // Three calls arrive: one returns, one waits at the gate, one is inside.
        c.arrivals.store(3, Ordering::Relaxed);
        c.admitted.store(1, Ordering::Relaxed);
        c.waiting.store(1, Ordering::Relaxed);
        assert_eq!(at(1), 1);
        // The waiting one goes in too; nothing arrives for 9 s: both count.
        c.waiting.store(0, Ordering::Relaxed);
        assert_eq!(at(2), 2);
        assert_eq!(at(10), 2);
        // 10 s with nothing arriving: taken for stuck.
        assert_eq!(at(11), 0);
        // The job goes on: its new call counts, the two stuck ones do not.
        c.arrivals.store(4, Ordering::Relaxed);
        assert_eq!(at(12), 1);
        // One of the stuck calls and the new one return: nothing is inside that counts.
        c.admitted.store(3, Ordering::Relaxed);
        assert_eq!(at(13), 0);
        // The other stuck call returns: nothing is left to discount, and a new call
        // inside counts at once.
        c.admitted.store(4, Ordering::Relaxed);
        assert_eq!(at(14), 0);
        c.arrivals.store(5, Ordering::Relaxed);
        assert_eq!(at(15), 1);
    }
}
