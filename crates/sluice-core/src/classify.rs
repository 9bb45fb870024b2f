//! Rules and pools compiled for one process: which rule, if any, and which pools govern a
//! request.
//!
//! The job, user and program of a process never change, so the rules and pools that cannot
//! match it are dropped at start (and at each change of the job's configuration), and
//! those left are listed per operation in order. Classifying a request then walks a short
//! list, testing only the mount mask and, where a rule has one, the size condition: no
//! allocation, no string comparison.

#[cfg(doc)]
use crate::config::StageConfig;
use crate::config::{DEFAULT_LATENCY_SAMPLE, Slotted, SlottedCosts};
use crate::op::{Class, Op};
use crate::path::{MAX_PLACES, MountTable, PlaceError, PlaceIdx};
use crate::rule::{Cmp, Identity, Unit};
use crate::segment::{CHANNELS, MAX_POOLS, MAX_RULES};

/// Most channels one call passes: its rule and every pool.
pub const MAX_PLAN: usize = 1 + MAX_POOLS;

/// The channels that admit one operation on a target in one place, in the order they are
/// passed: its rule (the first that matches), if any, then every pool it belongs to.
///
/// Worked out for every operation and place when the rules change, so that admitting a
/// call is one table lookup; only data calls under rules with a size condition are worked
/// out per call.
///
/// 24 bytes, as small as the two sets of bits allow: a plan is copied into every call's
/// ticket and kept across the real call, and a larger one (32 bytes, aligned to them) made
/// a managed call measurably slower.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    chans: [u8; MAX_PLAN],
    len: u8,
    /// Bit `j`: the plan's `j`-th pool (`pools()[j]`) times this call when it samples
    /// latency (the call meets the pool's watch, or the pool has none).
    watched: u16,
    /// Bit `k` below [`WEIGHED`]: `chans[k]` charges bytes; then the flags [`WEIGHED`],
    /// [`RULE`] and [`SIZED`].
    bits: u32,
}

/// In [`Compiled::lone`]: no lone channel.
const NO_LONE: u8 = u8::MAX;
/// In [`Compiled::lone`]: the lone channel is a pool that times the call when it samples
/// latency (the low bits are the channel).
const LONE_TIMED: u8 = 0x80;

const _: () = assert!(CHANNELS <= LONE_TIMED as usize);

/// In [`Plan::bits`]: some pool of the plan weighs its operations
/// ([`Compiled::set_costs`]). In the plan, which a call has read already, so that a call
/// held only by channels that weigh nothing asks nothing more of any of them.
const WEIGHED: u32 = 1 << 29;
/// In [`Plan::bits`]: `chans[0]` is a rule (the others are pools).
const RULE: u32 = 1 << 30;
/// In [`Plan::bits`]: the plan is worked out per call (some rule or pool for this
/// operation has a size condition).
const SIZED: u32 = 1 << 31;
/// In [`Plan::bits`]: the bits of the channels that charge bytes.
const BYTES: u32 = (1 << MAX_PLAN) - 1;

const _: () = assert!(size_of::<Plan>() == 24 && MAX_PLAN <= 29 && MAX_POOLS <= 16);

impl Plan {
    const EMPTY: Plan = Plan {
        chans: [0; MAX_PLAN],
        len: 0,
        watched: 0,
        bits: 0,
    };

    fn push(&mut self, ch: Channel) {
        self.chans[self.len as usize] = ch.index;
        self.bits |= (ch.bytes as u32) << self.len;
        self.len += 1;
    }

    /// The plan's channel, when it is its only one and it charges one unit a call, with
    /// no size condition; with [`LONE_TIMED`] when it is a pool that times the call.
    fn lone(&self) -> Option<u8> {
        (self.len == 1 && self.bits & (BYTES | SIZED | WEIGHED) == 0)
            .then_some(self.chans[0] | if self.timed() { LONE_TIMED } else { 0 })
    }

    /// The channels in order, each with whether it charges bytes.
    #[inline]
    pub fn channels(&self) -> impl Iterator<Item = (usize, bool)> + '_ {
        self.chans[..self.len as usize]
            .iter()
            .enumerate()
            .map(|(k, &c)| (c as usize, self.bits >> k & 1 != 0))
    }

    /// The channels of the pools (channel indices, from [`MAX_RULES`]).
    #[inline]
    pub fn pools(&self) -> &[u8] {
        &self.chans[(self.bits & RULE != 0) as usize..self.len as usize]
    }

    /// Whether some pool of the plan times this call when it samples latency.
    #[inline]
    pub fn timed(&self) -> bool {
        self.watched != 0
    }

    /// The channels of the pools that time this call (see [`Plan::timed`]).
    #[inline]
    pub fn timing_pools(&self) -> impl Iterator<Item = u8> + '_ {
        self.pools()
            .iter()
            .enumerate()
            .filter(|&(j, _)| self.watched >> j & 1 != 0)
            .map(|(_, &c)| c)
    }

    /// The rule's channel, if a rule matched.
    #[inline]
    pub fn rule(&self) -> Option<u8> {
        (self.bits & RULE != 0).then_some(self.chans[0])
    }

    /// Whether no rule and no pool holds the call.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether some channel charges bytes.
    #[inline]
    pub fn charges_bytes(&self) -> bool {
        self.bits & BYTES != 0
    }

    /// Whether some pool of the plan weighs its operations: only then may a channel that
    /// charges calls charge more than one unit ([`Compiled::cost`]).
    #[inline(always)]
    pub fn weighed(&self) -> bool {
        self.bits & WEIGHED != 0
    }
}

/// The one channel that holds a call and charges it one call
/// ([`Compiled::lone_count_channel`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lone {
    /// The channel's index in the segment.
    pub channel: usize,
    /// Whether the channel is a pool that times the call when it samples latency
    /// ([`Plan::timed`]).
    pub timed: bool,
}

/// A channel that governs a request (a rule, or the job's share of a pool), and what the
/// request costs in that channel's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Channel {
    /// Index of the channel's bucket and counters in the segment.
    pub index: u8,
    /// Units to reserve: the byte count for a data call under a bytes rule, else 1.
    pub cost: u64,
    /// Whether `cost` is bytes.
    pub bytes: bool,
}

#[derive(Clone, Debug)]
struct CompiledRule {
    channel: u8,
    places: u64,
    size: Option<(Cmp, u64)>,
    bytes: bool,
}

impl CompiledRule {
    /// The channel, if this rule or pool concerns `op` (already known to match) on a target
    /// in `place` moving `size` bytes.
    #[inline]
    fn fits(&self, op: Op, place: PlaceIdx, size: u64) -> Option<Channel> {
        let data = op.class() == Class::Data;
        let counted = if data { size } else { 0 };
        let fits = self.places & (1u64 << place) != 0
            && self.size.is_none_or(|(c, b)| c.holds(counted, b));
        fits.then(|| {
            let bytes = self.bytes && data;
            Channel {
                index: self.channel,
                cost: if bytes { size } else { 1 },
                bytes,
            }
        })
    }
}

/// One list of rules (or of pools) for a process, indexed by operation.
#[derive(Clone, Debug)]
struct Table {
    entries: Vec<CompiledRule>,
    by_op: [Vec<u8>; Op::COUNT],
}

impl Table {
    fn new(list: &[Slotted], first_channel: usize, places: &MountTable, id: &Identity) -> Self {
        let entries = list
            .iter()
            .map(|s| CompiledRule {
                channel: (first_channel + s.slot as usize) as u8,
                places: s.rule.mount_paths().map_or(u64::MAX, |ps| {
                    ps.iter().fold(0, |m, p| m | places.mask_under(p))
                }),
                size: s.rule.size_cond(),
                bytes: s.rule.rate.unit == Unit::Bytes,
            })
            .collect();
        let by_op = std::array::from_fn(|i| {
            let op = Op::ALL[i];
            list.iter()
                .enumerate()
                .filter(|(_, s)| s.rule.matches_identity(id) && s.rule.matches_op(op))
                .map(|(n, _)| n as u8)
                .collect()
        });
        Table { entries, by_op }
    }

    #[inline]
    fn matching(&self, op: Op, place: PlaceIdx, size: u64) -> impl Iterator<Item = Channel> {
        self.by_op[op.index()]
            .iter()
            .filter_map(move |&i| self.entries[i as usize].fits(op, place, size))
    }
}

/// The rules and pools of a process, indexed by operation, and their [`Plan`] for every
/// operation and place.
///
/// In C layout, what a managed call reads first (the places, the plans, the latency
/// sample: the first two cache lines) and the tables only a recompilation reads after:
/// in Rust's own layout the two tables (2.4 KB) could lie between the places and the
/// plans, a page apart, and every line a call touches right after its system call is a
/// line the kernel may have evicted.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Compiled {
    places: MountTable,
    /// Indexed by `op.index() * MAX_PLACES + place`.
    plans: Box<[Plan]>,
    /// Indexed by op and place: the channel of [`Compiled::lone_count_channel`], or
    /// [`NO_LONE`]. Kept in line, one load nearer than the plans.
    lone: [[u8; MAX_PLACES]; Op::COUNT],
    latency_sample: u32,
    /// Bit `p`: the pool in slot `p` weighs its operations ([`Compiled::set_costs`]).
    /// Read only for a call whose plan says one of its pools weighs ([`Plan::weighed`]).
    weighed: u16,
    rules: Table,
    pools: Table,
    /// The pools' watches, as a table of pool channels: a pool listed in it times only
    /// the calls the table matches for it.
    watches: Table,
    /// Units each operation costs each pool, by operation then pool slot (1 where a pool
    /// weighs nothing).
    costs: [[u16; MAX_POOLS]; Op::COUNT],
}

impl Compiled {
    /// Compiles `rules`, `pools` and the pools' `watches` (see [`StageConfig::watches`])
    /// for a process of identity `id`, managing `mounts` (`None`: all but the pseudo file
    /// systems).
    pub fn new(
        rules: &[Slotted],
        pools: &[Slotted],
        watches: &[Slotted],
        id: &Identity,
        mounts: Option<&[String]>,
    ) -> Result<Self, PlaceError> {
        let rule_places: Vec<String> = rules
            .iter()
            .chain(pools)
            .chain(watches)
            .filter_map(|s| s.rule.mount_paths())
            .flatten()
            .cloned()
            .collect();
        let places = MountTable::new(mounts, &rule_places)?;
        Ok(Compiled::build(
            Table::new(rules, 0, &places, id),
            Table::new(pools, MAX_RULES, &places, id),
            Table::new(watches, MAX_RULES, &places, id),
            places,
        ))
    }

    fn build(rules: Table, pools: Table, watches: Table, places: MountTable) -> Self {
        let mut c = Compiled {
            rules,
            pools,
            watches,
            plans: vec![Plan::EMPTY; Op::COUNT * MAX_PLACES].into_boxed_slice(),
            lone: [[NO_LONE; MAX_PLACES]; Op::COUNT],
            latency_sample: DEFAULT_LATENCY_SAMPLE,
            weighed: 0,
            costs: [[1; MAX_POOLS]; Op::COUNT],
            places,
        };
        for &op in Op::ALL {
            let sized = op.class() == Class::Data
                && [&c.rules, &c.pools].iter().any(|t| {
                    t.by_op[op.index()]
                        .iter()
                        .any(|&i| t.entries[i as usize].size.is_some())
                });
            for place in 0..c.places.places().len() {
                let mut plan = c.work_out(op, place as PlaceIdx, 0);
                if sized {
                    plan.bits |= SIZED;
                }
                c.set_plan(op, place, plan);
            }
        }
        c
    }

    /// Keeps `plan` as the plan of `op` in `place`, and its lone channel.
    fn set_plan(&mut self, op: Op, place: usize, plan: Plan) {
        self.plans[op.index() * MAX_PLACES + place] = plan;
        self.lone[op.index()][place] = plan.lone().unwrap_or(NO_LONE);
    }

    /// The plan of `op` in `place` for a call moving `size` bytes, from the rules.
    fn work_out(&self, op: Op, place: PlaceIdx, size: u64) -> Plan {
        let mut plan = Plan::EMPTY;
        if let Some(ch) = self.channel(op, place, size) {
            plan.push(ch);
            plan.bits |= RULE;
        }
        for (j, ch) in self.pools(op, place, size).enumerate() {
            let watched = self.watches.entries.iter().all(|w| w.channel != ch.index)
                || self
                    .watches
                    .matching(op, place, size)
                    .any(|w| w.index == ch.index);
            plan.watched |= (watched as u16) << j;
            plan.push(ch);
        }
        if self.weighs_some(&plan) {
            plan.bits |= WEIGHED;
        }
        plan
    }

    /// Whether some pool of `plan` weighs its operations (its flag [`WEIGHED`]).
    fn weighs_some(&self, plan: &Plan) -> bool {
        self.weighed != 0 && plan.pools().iter().any(|&c| self.weighs(c as usize))
    }

    /// The channels that admit `op` on a target in `place` moving `size` bytes: one table
    /// lookup, unless a size condition must be checked.
    #[inline]
    pub fn plan(&self, op: Op, place: PlaceIdx, size: u64) -> Plan {
        let plan = self.plans[op.index() * MAX_PLACES + (place as usize % MAX_PLACES)];
        if plan.bits & SIZED != 0 {
            return self.work_out(op, place, size);
        }
        plan
    }

    /// The channel that holds `op` in `place`, when it is the only one and it charges
    /// one unit a call (not a pool that weighs its operations), with no size condition:
    /// such a call is admitted by
    /// [`Gate::pass_from_batch`](crate::gate::Gate::pass_from_batch), with no ticket,
    /// unless it is one the channel's pool times.
    #[inline(always)]
    pub fn lone_count_channel(&self, op: Op, place: PlaceIdx) -> Option<Lone> {
        let c = self.lone[op.index()][place as usize % MAX_PLACES];
        (c != NO_LONE).then_some(Lone {
            channel: (c & !LONE_TIMED) as usize,
            timed: c & LONE_TIMED != 0,
        })
    }

    /// One real call in this many (per thread, among those a pool admits) is timed.
    #[inline]
    pub fn latency_sample(&self) -> u32 {
        self.latency_sample
    }

    /// Sets how often latency is sampled (0: never); see [`Compiled::latency_sample`].
    pub fn set_latency_sample(&mut self, every: u32) {
        self.latency_sample = every;
    }

    /// Sets what each operation costs the pools that weigh theirs (see
    /// [`StageConfig::costs`]); the others charge one unit a call. A call whose only
    /// channel is a weighed pool is no longer admitted from its thread's batch without a
    /// ticket ([`Compiled::lone_count_channel`]): that path charges one unit. The plans
    /// that hold a weighed pool say so ([`Plan::weighed`]); the others read no cost.
    pub fn set_costs(&mut self, costs: &[SlottedCosts]) {
        self.weighed = 0;
        self.costs = [[1; MAX_POOLS]; Op::COUNT];
        for c in costs.iter().filter(|c| (c.slot as usize) < MAX_POOLS) {
            if c.costs.is_flat() {
                continue;
            }
            self.weighed |= 1 << c.slot;
            for &op in Op::ALL {
                self.costs[op.index()][c.slot as usize] = c.costs.of(op);
            }
        }
        for &op in Op::ALL {
            for place in 0..self.places.places().len() {
                let mut plan = self.plans[op.index() * MAX_PLACES + place];
                plan.bits &= !WEIGHED;
                if self.weighs_some(&plan) {
                    plan.bits |= WEIGHED;
                }
                self.set_plan(op, place, plan);
            }
        }
    }

    /// Whether channel `channel` is a pool that weighs its operations (its units, counted
    /// in its channel's `bytes` counter, are then cost units).
    #[inline]
    pub fn weighs(&self, channel: usize) -> bool {
        channel
            .checked_sub(MAX_RULES)
            .is_some_and(|p| self.weighed >> p & 1 != 0)
    }

    /// The units a call of `op` costs channel `channel` when it charges calls: one, or
    /// what its pool's costs say. A table read, no search.
    #[inline(always)]
    pub fn cost(&self, op: Op, channel: usize) -> u64 {
        if !self.weighs(channel) {
            return 1;
        }
        self.costs[op.index()][channel - MAX_RULES] as u64
    }

    /// Compiles new rules, pools and watches over this process's managed places: a
    /// configuration changed at run time keeps the places of the start, which descriptors
    /// already open refer to by index. A `mount=` naming a path that is not one of them
    /// concerns the places below that path.
    pub fn recompiled(
        &self,
        rules: &[Slotted],
        pools: &[Slotted],
        watches: &[Slotted],
        id: &Identity,
    ) -> Self {
        let mut c = Compiled::build(
            Table::new(rules, 0, &self.places, id),
            Table::new(pools, MAX_RULES, &self.places, id),
            Table::new(watches, MAX_RULES, &self.places, id),
            self.places.clone(),
        );
        c.latency_sample = self.latency_sample;
        c
    }

    /// The managed places.
    #[inline]
    pub fn places(&self) -> &MountTable {
        &self.places
    }

    /// The rule governing `op` on a target in `place` moving `size` bytes, if any: the
    /// first that matches.
    #[inline]
    pub fn channel(&self, op: Op, place: PlaceIdx, size: u64) -> Option<Channel> {
        self.rules.matching(op, place, size).next()
    }

    /// Every pool `op` on a target in `place` moving `size` bytes belongs to.
    #[inline]
    pub fn pools(&self, op: Op, place: PlaceIdx, size: u64) -> impl Iterator<Item = Channel> {
        self.pools.matching(op, place, size)
    }

    /// Whether any rule or pool could hold `op` for this process (else the stage only
    /// counts it).
    #[inline]
    pub fn governs(&self, op: Op) -> bool {
        !self.rules.by_op[op.index()].is_empty() || !self.pools.by_op[op.index()].is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StageConfig;
    use crate::rule::parse_rule;

    fn compile(rules: &[&str], mounts: &[&str]) -> Compiled {
        compile_with_pools(rules, &[], mounts)
    }

    fn compile_with_pools(rules: &[&str], pools: &[(u8, &str)], mounts: &[&str]) -> Compiled {
        compile_watched(rules, pools, &[], mounts)
    }

    fn compile_watched(
        rules: &[&str],
        pools: &[(u8, &str)],
        watches: &[(u8, &str)],
        mounts: &[&str],
    ) -> Compiled {
        let rules =
            StageConfig::slot_in_order(rules.iter().map(|r| parse_rule(r).unwrap()).collect());
        let pools: Vec<Slotted> = pools
            .iter()
            .map(|(slot, r)| Slotted {
                slot: *slot,
                rule: parse_rule(r).unwrap(),
            })
            .collect();
        let id = Identity {
            job: "7".into(),
            uid: 1000,
            user: Some("alice".into()),
            exe: "app".into(),
        };
        let mounts: Vec<String> = mounts.iter().map(|s| s.to_string()).collect();
        let watches: Vec<Slotted> = watches
            .iter()
            .map(|(slot, w)| Slotted::watch(*slot, w).unwrap())
            .collect();
        Compiled::new(
            &rules,
            &pools,
            &watches,
            &id,
            (!mounts.is_empty()).then_some(&mounts[..]),
        )
        .unwrap()
    }

    #[test]
    fn every_matching_pool_is_listed_besides_the_rule() {
        let c = compile_with_pools(
            &["op=getattr rate=5/s"],
            &[
                (2, "md: class=metadata rate=10k/s"),
                (0, "bw: class=data rate=1GiB/s"),
                (5, "all: rate=1M/s"),
            ],
            &[],
        );
        let p = c.places().lookup(b"/scratch/x");
        let idx = |op, size| c.pools(op, p, size).map(|ch| ch.index).collect::<Vec<_>>();
        let first = MAX_RULES as u8;
        assert_eq!(idx(Op::Getattr, 0), vec![first + 2, first + 5]);
        assert_eq!(idx(Op::Read, 4096), vec![first, first + 5]);
        assert_eq!(c.pools(Op::Read, p, 4096).next().unwrap().cost, 4096);
        assert_eq!(c.channel(Op::Getattr, p, 0).map(|ch| ch.index), Some(0));
        assert!(c.governs(Op::Read));
    }

    #[test]
    fn a_pool_times_only_the_calls_its_watch_names() {
        let c = compile_watched(
            &["op=open rate=5/s"],
            &[
                (2, "md: class=metadata,directory rate=1k/s"),
                (4, "all: rate=1M/s"),
                (6, "other: class=metadata rate=1k/s"),
            ],
            &[(2, "op=getattr,open"), (6, "job=8")],
            &[],
        );
        let p = c.places().lookup(b"/scratch/x");
        let timing = |op| {
            let plan = c.plan(op, p, 0);
            (plan.timed(), plan.timing_pools().collect::<Vec<_>>())
        };
        let first = MAX_RULES as u8;
        // The rule never times; pool 4 has no watch; pool 6 watches another job only.
        assert_eq!(timing(Op::Open), (true, vec![first + 2, first + 4]));
        assert_eq!(timing(Op::Getattr), (true, vec![first + 2, first + 4]));
        assert_eq!(timing(Op::Mknod), (true, vec![first + 4]));
        assert_eq!(c.plan(Op::Mknod, p, 0).pools().len(), 2);
        let only_watched = compile_watched(
            &[],
            &[(1, "md: class=metadata rate=1k/s")],
            &[(1, "op=open")],
            &[],
        );
        let plan = only_watched.plan(Op::Getattr, p, 0);
        assert!(!plan.timed() && plan.pools() == [first + 1]);
        assert!(only_watched.plan(Op::Open, p, 0).timed());
    }

    #[test]
    fn first_matching_rule_wins() {
        let c = compile(&["op=getattr rate=5/s", "class=metadata rate=10/s"], &[]);
        let p = c.places().lookup(b"/scratch/x");
        assert_eq!(c.channel(Op::Getattr, p, 0).map(|ch| ch.index), Some(0));
        assert_eq!(c.channel(Op::Open, p, 0).map(|ch| ch.index), Some(1));
        assert_eq!(c.channel(Op::Read, p, 10), None);
    }

    #[test]
    fn identity_filters_at_compile_time() {
        let c = compile(&["job=8 rate=5/s", "user=alice op=open rate=1/s"], &[]);
        assert!(!c.governs(Op::Getattr));
        assert!(c.governs(Op::Open));
    }

    #[test]
    fn bytes_rules_charge_data_calls_their_size() {
        let c = compile(&["class=data size>=1MiB rate=50MiB/s", "rate=1k/s"], &[]);
        let p = c.places().lookup(b"/x");
        assert_eq!(
            c.channel(Op::Write, p, 2 << 20),
            Some(Channel {
                index: 0,
                cost: 2 << 20,
                bytes: true
            })
        );
        assert_eq!(c.channel(Op::Write, p, 10).map(|ch| ch.index), Some(1));
        assert_eq!(
            c.channel(Op::Getattr, p, 0),
            Some(Channel {
                index: 1,
                cost: 1,
                bytes: false
            })
        );
    }

    #[test]
    fn mount_conditions_use_place_masks() {
        let c = compile(&["mount=/scratch/proj rate=5/s"], &["/scratch"]);
        let inside = c.places().lookup(b"/scratch/proj/a");
        let outside = c.places().lookup(b"/scratch/other");
        assert!(c.channel(Op::Open, inside, 0).is_some());
        assert!(c.channel(Op::Open, outside, 0).is_none());
    }

    /// The table of plans gives what matching the rules per call gives, for every
    /// operation, place and size.
    #[test]
    fn plans_agree_with_the_rules() {
        let c = compile_with_pools(
            &[
                "class=data size>=1MiB rate=50MiB/s",
                "mount=/scratch/proj op=open rate=5/s",
                "class=metadata rate=1k/s",
            ],
            &[
                (2, "md: class=metadata rate=10k/s"),
                (0, "bw: class=data mount=/scratch rate=1GiB/s"),
            ],
            &["/scratch", "/home"],
        );
        for &op in Op::ALL {
            for place in 0..c.places().places().len() as PlaceIdx {
                for size in [0, 10, 1 << 20, 1 << 30] {
                    let plan = c.plan(op, place, size);
                    let want: Vec<(usize, bool)> = c
                        .channel(op, place, size)
                        .into_iter()
                        .chain(c.pools(op, place, size))
                        .map(|ch| (ch.index as usize, ch.bytes))
                        .collect();
                    assert_eq!(
                        plan.channels().collect::<Vec<_>>(),
                        want,
                        "{op:?} {place} {size}"
                    );
                    assert_eq!(plan.rule(), c.channel(op, place, size).map(|ch| ch.index));
                    let pools: Vec<u8> = c.pools(op, place, size).map(|ch| ch.index).collect();
                    assert_eq!(plan.pools(), &pools[..]);
                }
            }
        }
    }

    /// The lone channel is the plan's one channel exactly when that plan is one channel
    /// that counts calls, with no size condition; timed when the plan is.
    #[test]
    fn a_lone_count_channel_is_a_plan_of_one_that_counts_calls() {
        let rules = [
            "op=getattr rate=5/s",
            "class=data size>=1MiB rate=50MiB/s",
            "op=write rate=5MiB/s",
            "mount=/scratch/proj op=open rate=5/s",
            "class=directory rate=1k/s",
        ];
        let c = compile_watched(
            &rules,
            &[
                (2, "md: op=unlink rate=10k/s"),
                (3, "w: op=mkdir rate=1k/s"),
                (4, "ln: op=rename,symlink rate=1k/s"),
            ],
            &[(3, "class=directory"), (4, "op=rename")],
            &["/scratch", "/home"],
        );
        let mut seen = [[false; 2]; 2];
        for &op in Op::ALL {
            for place in 0..c.places().places().len() as PlaceIdx {
                let plan = c.plan(op, place, 0);
                let chans: Vec<(usize, bool)> = plan.channels().collect();
                let lone = match chans[..] {
                    [(channel, false)] if plan.bits & SIZED == 0 => Some(Lone {
                        channel,
                        timed: plan.timed(),
                    }),
                    _ => None,
                };
                assert_eq!(c.lone_count_channel(op, place), lone, "{op:?} in {place}");
                seen[lone.is_some() as usize][plan.timed() as usize] = true;
            }
        }
        assert_eq!(seen, [[true, true], [true, true]]);
        let scratch = c.places().lookup(b"/scratch/x");
        let home = c.places().lookup(b"/home/x");
        let lone = |channel, timed| Some(Lone { channel, timed });
        assert_eq!(c.lone_count_channel(Op::Getattr, scratch), lone(0, false));
        // A pool alone: timed when it has no watch or its watch matches the call.
        assert_eq!(
            c.lone_count_channel(Op::Unlink, home),
            lone(MAX_RULES + 2, true)
        );
        assert_eq!(
            c.lone_count_channel(Op::Rename, home),
            lone(MAX_RULES + 4, true)
        );
        assert_eq!(
            c.lone_count_channel(Op::Symlink, home),
            lone(MAX_RULES + 4, false)
        );
        // A bytes rule, a size condition, a rule and a pool: none is lone.
        for op in [Op::Write, Op::Read, Op::Mkdir] {
            assert_eq!(c.lone_count_channel(op, scratch), None, "{op:?}");
        }
    }

    /// Only the plans that hold a weighed pool say so, those worked out per call (a size
    /// condition) too, and setting flat costs again clears them: a call held by channels
    /// that weigh nothing reads no cost.
    #[test]
    fn a_plan_weighs_when_one_of_its_pools_does() {
        let mut c = compile_with_pools(
            &["op=unlink rate=1M/s"],
            &[
                (1, "md: class=metadata rate=1k/s"),
                (3, "big: class=data size>=1MiB rate=1k/s"),
            ],
            &[],
        );
        let p = c.places().lookup(b"/scratch/x");
        let weighed = |c: &Compiled| {
            [(Op::Unlink, 0), (Op::Getattr, 0), (Op::Write, 2 << 20)]
                .map(|(op, size)| c.plan(op, p, size).weighed())
        };
        assert_eq!(weighed(&c), [false; 3]);
        let costs = |slot, text: &str| SlottedCosts {
            slot,
            costs: text.parse().unwrap(),
        };
        c.set_costs(&[costs(1, "metadata=4")]);
        assert_eq!(weighed(&c), [true, true, false]);
        assert_eq!(c.cost(Op::Unlink, MAX_RULES + 1), 4);
        c.set_costs(&[costs(3, "write=2")]);
        assert_eq!(weighed(&c), [false, false, true]);
        c.set_costs(&[]);
        assert_eq!(weighed(&c), [false; 3]);
        assert_eq!(c.cost(Op::Unlink, MAX_RULES + 1), 1);
    }

    #[test]
    fn mmap_is_held_only_when_named() {
        let c = compile(&["rate=5/s"], &[]);
        assert_eq!(c.channel(Op::Mmap, 0, 4096), None);
        let c = compile(&["op=mmap rate=5/s"], &[]);
        assert!(c.channel(Op::Mmap, 0, 4096).is_some());
    }
}
