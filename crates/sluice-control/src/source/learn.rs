//! Operation costs learned from the server (`costs_from = "ceph-mds:PATH"`): what each
//! operation costs the server, read as its mean latency there, in whole multiples of the
//! cheapest operation's.
//!
//! Each interval the source's thread gives the operations the server answered and their
//! summed latency (the differences of its counters, so the interval's figures, not the
//! means since it started). An operation's requests add up until there are
//! [`MIN_SAMPLES`] of them, whose mean then moves its smoothed latency (an exponential
//! average, [`SMOOTHING`]). Its cost is that latency over the cheapest operation's,
//! rounded, from 1 to [`MAX_COST`]; a cost in force moves only when the ratio leaves it by
//! a material step ([`CostLearner::learn`]), so that the policy is not pushed to every
//! stage each interval for a wobble. An operation the server has not answered lately keeps
//! its last cost; one it never answered costs one unit.
//!
//! Latency stands for the server's work because it is what the server reports per
//! operation. It includes the time a request waited in the queue, which is the same for
//! every operation: under load the ratios come closer to one (docs/control-plane.md).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use sluice_core::cost::{Costs, MAX_COST};
use sluice_core::op::{Class, Op};

use super::{OpTime, OpTimes, SourceSpec};

/// Requests of an operation whose mean moves its smoothed latency at once: fewer are
/// kept until there are this many, so that a handful of stray requests cannot move the
/// pool's costs.
pub const MIN_SAMPLES: f64 = 10.0;

/// The weight of a new mean in an operation's smoothed latency: after five intervals a
/// change of the server's behaviour is 83 % in.
pub const SMOOTHING: f64 = 0.3;

/// The sluice operation whose cost a server's operation tells, if any.
pub fn sluice_op(spec: &SourceSpec, server_op: &str) -> Option<Op> {
    match spec {
        SourceSpec::CephMds(_) => ceph_op(server_op),
        SourceSpec::LustreMdt(_) => lustre_op(server_op),
    }
}

/// A Ceph MDS's request types (`mds_server.req_<op>_latency`) as the stage names the
/// calls that send them.
fn ceph_op(name: &str) -> Option<Op> {
    Some(match name {
        // A stat of a name the client has not cached is a lookup, of one it has whose
        // attributes it must refresh a getattr: both are what a `stat` costs.
        "getattr" | "lookup" => Op::Getattr,
        // A create is open(O_CREAT), a mknod is mknod(2): both make an inode. The stage
        // counts open(O_CREAT) as an `open`, so the create's cost goes to `mknod`, which
        // names the work; `open` is the open of a file that exists.
        "create" | "mknod" => Op::Mknod,
        "open" => Op::Open,
        "setattr" => Op::Setattr,
        "mkdir" => Op::Mkdir,
        "rmdir" => Op::Rmdir,
        "unlink" => Op::Unlink,
        "rename" => Op::Rename,
        "link" => Op::Link,
        "symlink" => Op::Symlink,
        "readdir" => Op::Readdir,
        "setxattr" => Op::Setxattr,
        "rmxattr" => Op::Removexattr,
        _ => return None,
    })
}

/// A Lustre MDT's `md_stats` names its operations as sluice does (`open`, `getattr`,
/// `mknod`, …); its byte counters are no metadata operation's.
fn lustre_op(name: &str) -> Option<Op> {
    let op: Op = name.parse().ok()?;
    (op.class() != Class::Data).then_some(op)
}

/// What a pool learned of its server's operations, and the costs it charges for them.
#[derive(Clone, Debug, Default)]
pub struct CostLearner {
    /// By operation: its smoothed mean latency at the server, seconds.
    smoothed: BTreeMap<Op, f64>,
    /// By operation: requests answered since its mean last counted, fewer than
    /// [`MIN_SAMPLES`].
    pending: BTreeMap<Op, OpTime>,
    /// By operation: the units it costs now.
    costs: BTreeMap<Op, u16>,
}

/// The learned costs moved.
#[derive(Clone, Debug, PartialEq)]
pub struct CostChange {
    /// The costs before (`None`: none learned yet).
    pub before: Option<Costs>,
    /// The costs now.
    pub after: Costs,
    /// Why: each operation's smoothed latency at the server (`getattr 385us, …`).
    pub why: String,
}

impl CostLearner {
    /// Takes an interval's operations of the server `spec` (each with its requests and
    /// their summed latency); the new costs when they moved materially.
    pub fn learn(&mut self, spec: &SourceSpec, interval: &OpTimes) -> Option<CostChange> {
        for (name, t) in interval {
            if let Some(op) = sluice_op(spec, name) {
                let p = self.pending.entry(op).or_default();
                p.count += t.count;
                p.sum_s += t.sum_s;
            }
        }
        let ready: Vec<(Op, OpTime)> = self
            .pending
            .iter()
            .filter(|(_, p)| p.count >= MIN_SAMPLES)
            .map(|(&op, &p)| (op, p))
            .collect();
        for (op, p) in ready {
            self.pending.remove(&op);
            let mean = p.sum_s / p.count;
            let s = self.smoothed.entry(op).or_insert(mean);
            *s += SMOOTHING * (mean - *s);
        }
        let cheapest = self
            .smoothed
            .values()
            .copied()
            .filter(|&l| l > 0.0)
            .fold(f64::INFINITY, f64::min);
        if !cheapest.is_finite() {
            return None;
        }
        let before = self.costs();
        let mut moved = false;
        for (&op, &latency) in &self.smoothed {
            let ratio = (latency / cheapest).clamp(1.0, f64::from(MAX_COST));
            let units = ratio.round() as u16;
            let now = self.costs.get(&op).copied();
            if now.is_none_or(|c| units != c && material(c, ratio)) {
                self.costs.insert(op, units);
                moved = true;
            }
        }
        let after = self.costs()?;
        moved.then(|| CostChange {
            before,
            after,
            why: self.why(),
        })
    }

    /// The costs learned, `None` before any.
    pub fn costs(&self) -> Option<Costs> {
        if self.costs.is_empty() {
            return None;
        }
        let units: Vec<(&str, String)> = self
            .costs
            .iter()
            .map(|(op, c)| (op.name(), c.to_string()))
            .collect();
        // Operation names and units from 1 to MAX_COST, each once: always valid.
        Costs::new(units.iter().map(|(n, u)| (*n, u.as_str()))).ok()
    }

    /// Each operation's smoothed latency at the server: `getattr 385us, mknod 1434us`.
    pub fn why(&self) -> String {
        let mut out = String::new();
        for (op, latency) in &self.smoothed {
            let sep = if out.is_empty() { "" } else { ", " };
            let _ = write!(out, "{sep}{op} {:.0}us", latency * 1e6);
        }
        out
    }
}

/// Whether `ratio` has left the cost `units` in force by enough to move it: by three
/// quarters of a unit, and by a fifth of it. A ratio wobbling around 1.5 then does not
/// flip a cost between 1 and 2 every interval, nor one around 10.5 between 10 and 11.
fn material(units: u16, ratio: f64) -> bool {
    let c = f64::from(units);
    (ratio - c).abs() >= (0.2 * c).max(0.75)
}

/// The costs a pool charges: the ones fixed in its configuration (`costs = { … }`), and
/// for every operation they do not name, by itself or by its class, the learned one.
pub fn merged(fixed: Option<&Costs>, learned: Option<&Costs>) -> Option<Costs> {
    let Some(learned) = learned else {
        return fixed.cloned();
    };
    let named = |op: Op| fixed.is_some_and(|f| f.names(op));
    let units: Vec<(String, String)> = fixed
        .into_iter()
        .flat_map(Costs::entries)
        .map(|(n, c)| (n.to_owned(), c.to_string()))
        .chain(
            learned
                .entries()
                .filter(|(n, _)| n.parse::<Op>().is_ok_and(|op| !named(op)))
                .map(|(n, c)| (n.to_owned(), c.to_string())),
        )
        .collect();
    // Both were checked, and no name is in both: the union is valid.
    Costs::new(units.iter().map(|(n, u)| (n.as_str(), u.as_str())))
        .ok()
        .or_else(|| fixed.cloned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{ceph, op_deltas};

    fn spec() -> SourceSpec {
        SourceSpec::CephMds("/run/ceph/ceph-mds.a.asok".into())
    }

    /// An interval of `(server op, requests, mean latency in µs)`.
    fn interval(list: &[(&str, f64, f64)]) -> OpTimes {
        list.iter()
            .map(|&(op, count, us)| {
                let t = OpTime {
                    count,
                    sum_s: count * us / 1e6,
                };
                (op.to_owned(), t)
            })
            .collect()
    }

    #[test]
    fn costs_are_whole_multiples_of_the_cheapest_operation() {
        let mut l = CostLearner::default();
        let c = l
            .learn(
                &spec(),
                &interval(&[
                    ("lookup", 400.0, 385.0),
                    ("create", 200.0, 1434.0),
                    ("unlink", 200.0, 1242.0),
                    // Too few to count yet, and one the stage has no call for.
                    ("mkdir", 3.0, 9000.0),
                    ("lookupino", 50.0, 100.0),
                ]),
            )
            .unwrap();
        assert_eq!(c.before, None);
        assert_eq!(c.after.to_string(), "getattr=1,unlink=3,mknod=4");
        assert_eq!(c.why, "getattr 385us, unlink 1242us, mknod 1434us");
        assert_eq!(c.after.of(Op::Open), 1);
    }

    #[test]
    fn a_wobble_moves_nothing_and_a_material_change_moves_the_cost() {
        let mut l = CostLearner::default();
        let s = spec();
        l.learn(
            &s,
            &interval(&[("getattr", 100.0, 100.0), ("unlink", 100.0, 400.0)]),
        )
        .unwrap();
        // unlink at 4.6 then 4.4 lookups: not a unit and a fifth away from 4.
        for us in [460.0, 440.0, 470.0] {
            let i = interval(&[("getattr", 100.0, 100.0), ("unlink", 100.0, us)]);
            assert_eq!(l.learn(&s, &i), None, "{us}");
        }
        // The server's unlinks now take 8 lookups: the smoothed ratio crosses 5.
        let mut moved = None;
        for _ in 0..5 {
            let i = interval(&[("getattr", 100.0, 100.0), ("unlink", 100.0, 800.0)]);
            moved = moved.or(l.learn(&s, &i));
        }
        let moved = moved.expect("the cost moves");
        assert_eq!(moved.before.unwrap().of(Op::Unlink), 4);
        assert!(moved.after.of(Op::Unlink) >= 5, "{}", moved.after);
    }

    #[test]
    fn an_operation_not_seen_lately_keeps_its_cost_and_few_requests_add_up() {
        let mut l = CostLearner::default();
        let s = spec();
        l.learn(
            &s,
            &interval(&[("getattr", 50.0, 100.0), ("rename", 20.0, 600.0)]),
        );
        // No rename for a while: it keeps 6.
        for _ in 0..10 {
            l.learn(&s, &interval(&[("getattr", 50.0, 100.0)]));
        }
        assert_eq!(l.costs().unwrap().of(Op::Rename), 6);
        // Five mkdirs an interval: counted once ten are in.
        assert_eq!(l.learn(&s, &interval(&[("mkdir", 5.0, 300.0)])), None);
        let c = l.learn(&s, &interval(&[("mkdir", 5.0, 300.0)])).unwrap();
        assert_eq!(c.after.of(Op::Mkdir), 3);
        assert_eq!(c.after.of(Op::Rename), 6);
    }

    #[test]
    fn nothing_is_learned_from_nothing_and_costs_stay_within_bounds() {
        let mut l = CostLearner::default();
        assert_eq!(l.learn(&spec(), &OpTimes::new()), None);
        assert_eq!(l.costs(), None);
        let c = l
            .learn(
                &spec(),
                &interval(&[("getattr", 100.0, 1.0), ("rename", 100.0, 5e6)]),
            )
            .unwrap();
        assert_eq!(c.after.of(Op::Rename), MAX_COST);
    }

    #[test]
    fn lustre_md_stats_name_the_operations_as_sluice_does() {
        let s = SourceSpec::LustreMdt("/proc/fs/lustre/mdt/fs-MDT0000/md_stats".into());
        assert_eq!(sluice_op(&s, "getattr"), Some(Op::Getattr));
        assert_eq!(sluice_op(&s, "mknod"), Some(Op::Mknod));
        assert_eq!(sluice_op(&s, "read_bytes"), None);
        assert_eq!(sluice_op(&s, "samedir_rename"), None);
        assert_eq!(sluice_op(&spec(), "create"), Some(Op::Mknod));
        assert_eq!(sluice_op(&spec(), "lookup"), Some(Op::Getattr));
    }

    #[test]
    fn fixed_costs_win_over_learned_ones_by_operation_or_class() {
        let learned: Costs = "getattr=1,open=2,mknod=4,unlink=3,readdir=2"
            .parse()
            .unwrap();
        let fixed: Costs = "open=5,directory=6".parse().unwrap();
        let m = merged(Some(&fixed), Some(&learned)).unwrap();
        assert_eq!(m.of(Op::Open), 5);
        // mknod and readdir are of class directory, fixed at 6.
        assert_eq!(m.of(Op::Mknod), 6);
        assert_eq!(m.of(Op::Readdir), 6);
        assert_eq!(m.of(Op::Unlink), 3);
        assert_eq!(m.of(Op::Getattr), 1);
        assert_eq!(merged(None, Some(&learned)), Some(learned.clone()));
        assert_eq!(merged(Some(&fixed), None), Some(fixed));
        assert_eq!(merged(None, None), None);
    }

    /// Two `perf dump mds_server` answers of ceph-mds 16.2.15 (experiments/cephfs), one
    /// second apart while a create/unlink aggressor and a stat victim ran, on a host whose
    /// two cores had some 30 runnable processes (builds); counters other than the
    /// requests' latencies cut.
    const DUMP_BEFORE: &str = include_str!("testdata/mds_server_before.json");
    const DUMP_AFTER: &str = include_str!("testdata/mds_server_after.json");

    #[test]
    fn two_recorded_perf_dumps_give_the_servers_costs() {
        let before = ceph::parse_ops(DUMP_BEFORE.as_bytes()).unwrap();
        let after = ceph::parse_ops(DUMP_AFTER.as_bytes()).unwrap();
        let interval = op_deltas(&before, &after);
        // The second's figures, not the means since the MDS started.
        assert_eq!(interval["create"].count, 176.0);
        assert_eq!(interval["lookup"].count, 226.0);
        let mut l = CostLearner::default();
        let c = l.learn(&spec(), &interval).unwrap();
        // Every request waited for a CPU far longer than the MDS worked on it: a create
        // (1644 µs), an unlink (1352 µs) and a lookup (1640 µs) took about as long, and
        // the costs are one unit each. The same MDS on a quieter host, under four such
        // aggressors, took 1434 µs per create and 385 µs per lookup
        // (costs_are_whole_multiples_of_the_cheapest_operation).
        assert_eq!(c.after.to_string(), "getattr=1,unlink=1,mknod=1");
        assert_eq!(c.why, "getattr 1640us, unlink 1352us, mknod 1644us");
    }
}
