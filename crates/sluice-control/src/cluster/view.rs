//! What the admin API shows: jobs, pools and nodes as of the last compute.

use std::collections::BTreeMap;

use serde::Serialize;
use sluice_policy::period::{Detection, PeriodSeen};

use super::{Cluster, SegmentNote};

/// One job in one pool, as of the last compute.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ShareView {
    /// Its allocation: what its connected nodes were given plus what its disconnected
    /// nodes hold.
    pub allocation: f64,
    /// Units admitted per second, over all its nodes (`usage`).
    pub rate: f64,
    /// Its estimated unthrottled demand, over all its nodes.
    pub demand: f64,
    /// Calls per second that reached the gate, over all its nodes.
    pub arrivals: f64,
    /// Calls admitted per second, over all its nodes, when the pool weighs its
    /// operations (`rate` is then in cost units); 0 otherwise.
    pub calls: f64,
    /// Thread-seconds per second its threads spent waiting, over all its nodes.
    pub wait: f64,
    /// The limit the algorithm was given: the setting, else the demand over its
    /// connected nodes.
    pub limit: f64,
    /// The weight the algorithm was given: the setting, else its node count.
    pub weight: f64,
}

/// What a pool's algorithm knows of one job's I/O period.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PeriodView {
    /// The period the job is placed by, seconds; `None` while unknown (SET-10 then
    /// gives the job a set of its own at priority 1/50).
    pub seconds: Option<f64>,
    /// Where that period comes from: `given`, `detected` or `silence`.
    pub from: Option<&'static str>,
    /// The last detection, whatever its confidence (`None` for a period given, and
    /// before the first ran).
    pub last: Option<Detection>,
}

impl From<PeriodSeen> for PeriodView {
    fn from(p: PeriodSeen) -> Self {
        PeriodView {
            seconds: p.placed_by.map(|(s, _)| s),
            from: p.placed_by.map(|(_, from)| from.name()),
            last: p.last,
        }
    }
}

impl From<PeriodView> for crate::proto::Period {
    fn from(p: PeriodView) -> Self {
        let last = p.last.unwrap_or(Detection {
            period_s: 0.0,
            confidence: 0.0,
            p_value: 0.0,
            cycles: 0.0,
            resolution: 0.0,
        });
        crate::proto::Period {
            seconds: p.seconds.unwrap_or(0.0),
            from: p.from.unwrap_or_default().to_owned(),
            detected: last.period_s,
            confidence: last.confidence,
            p_value: last.p_value,
            cycles: last.cycles,
        }
    }
}

/// One job of the registry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobView {
    /// The job's id.
    pub job: String,
    /// Its user, as the first of its nodes (by name) that knows it says.
    pub user: String,
    /// Its account, QOS and partition, as the first of its nodes says (empty: unknown).
    pub account: String,
    /// See `account`.
    pub qos: String,
    /// See `account`.
    pub partition: String,
    /// The nodes it is placed on, connected or not, by name.
    pub nodes: Vec<String>,
    /// Launchers attached, over all its nodes.
    pub launchers: u32,
    /// By pool: its share, for the pools of the last compute it took part in.
    pub pools: BTreeMap<String, ShareView>,
    /// By pool: its I/O period as the pool's algorithm knows it, for the pools whose
    /// algorithm places jobs by their period (SET-10). Read from the algorithm when the
    /// view is made, not kept by the cycle's computation.
    pub periods: BTreeMap<String, PeriodView>,
    /// By node: its segment there, where it is worth an administrator's eye.
    pub segments: BTreeMap<String, SegmentNote>,
    /// Its processes outside the stage, or using io_uring, on every node (each entry
    /// names its node).
    pub outside: Vec<crate::proto::OutsideStage>,
}

/// One pool, as of the last compute.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PoolView {
    /// The pool's name.
    pub name: String,
    /// Its capacity, units per second.
    pub capacity: f64,
    /// Its algorithm's name.
    pub algorithm: String,
    /// Σ of the jobs' allocations, held rates included.
    pub allocated: f64,
    /// Σ of the jobs' admitted rates.
    pub used: f64,
    /// What disconnected nodes hold (`H`).
    pub held: f64,
    /// Jobs in the round.
    pub jobs: usize,
    /// An automatic pool: the p99 latency of its calls in the last interval (seconds),
    /// when enough were sampled.
    pub latency_p99_s: Option<f64>,
    /// An automatic pool: the p99 it keeps (seconds).
    pub target_p99_s: Option<f64>,
    /// A pool with a tree: its shape (`account:share,user:share,job:nodes`).
    pub tree: Option<String>,
    /// A pool with a tree: its nodes as of the last compute, depth first.
    pub nodes: Vec<TreeNodeView>,
}

/// One node of a pool's tree, as of the last compute: the tree's division of what the
/// held rates and the floor leave (`C − H − F`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TreeNodeView {
    /// Its level (0 at the top).
    pub depth: u32,
    /// Its level's attribute (`account`, `user`, `qos`, `partition`, `job`).
    pub level: String,
    /// Its name: the attribute's value, or the job's id at the job level.
    pub name: String,
    /// What the tree gave its subtree.
    pub allocation: f64,
    /// Σ admitted of its jobs (their connected nodes).
    pub rate: f64,
    /// Σ demand of its jobs, as the tree read it (their load).
    pub demand: f64,
    /// The weight its level gave it among its siblings (share, 1, or node count).
    pub weight: f64,
}

/// One node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeView {
    /// The node's name.
    pub node: String,
    /// Whether its local controller is connected.
    pub connected: bool,
    /// The cycle of its last report.
    pub last_report: Option<u64>,
    /// Jobs placed on it.
    pub jobs: usize,
}

impl Cluster {
    /// Every job placed on some node, by id.
    pub fn jobs(&self) -> Vec<JobView> {
        let mut jobs: BTreeMap<&str, JobView> = BTreeMap::new();
        for (node, entry) in &self.nodes {
            for (job, placement) in &entry.jobs {
                let view = jobs.entry(job).or_insert_with(|| JobView {
                    job: job.clone(),
                    user: String::new(),
                    account: placement.attrs.account.clone(),
                    qos: placement.attrs.qos.clone(),
                    partition: placement.attrs.partition.clone(),
                    nodes: Vec::new(),
                    launchers: 0,
                    pools: self.shares_of(job),
                    periods: self.periods_of(job),
                    segments: BTreeMap::new(),
                    outside: Vec::new(),
                });
                if view.user.is_empty() {
                    view.user.clone_from(&placement.attrs.user);
                }
                view.nodes.push(node.clone());
                view.launchers = view.launchers.saturating_add(placement.launchers);
                if let Some(note) = placement.segment {
                    view.segments.insert(node.clone(), note);
                }
                view.outside.extend(
                    placement
                        .outside
                        .iter()
                        .map(|o| crate::proto::OutsideStage {
                            node: node.clone(),
                            ..o.clone()
                        }),
                );
            }
        }
        jobs.into_values().collect()
    }

    /// Every pool, by name.
    pub fn pools(&self) -> Vec<PoolView> {
        self.pools
            .iter()
            .map(|(name, pool)| PoolView {
                name: name.clone(),
                capacity: pool.capacity(),
                latency_p99_s: pool.auto.and_then(|a| a.p99_s),
                target_p99_s: pool.plan.auto.map(|a| a.target_p99_s),
                algorithm: pool.plan.algorithm.clone(),
                allocated: sum(pool.shares.iter().map(|(_, s)| s.allocation)),
                used: sum(pool.shares.iter().map(|(_, s)| s.rate)),
                held: pool.held,
                jobs: pool.active,
                tree: pool.plan.tree.as_ref().map(ToString::to_string),
                nodes: pool.tree.clone(),
            })
            .collect()
    }

    /// Every node, by name.
    pub fn nodes(&self) -> Vec<NodeView> {
        self.nodes
            .iter()
            .map(|(name, node)| NodeView {
                node: name.clone(),
                connected: node.down_since.is_none(),
                last_report: node.last_report,
                jobs: node.jobs.len(),
            })
            .collect()
    }

    /// Local controllers connected now.
    pub fn locals(&self) -> usize {
        self.nodes
            .values()
            .filter(|n| n.down_since.is_none())
            .count()
    }

    /// The cycle of the last compute.
    pub fn last_cycle(&self) -> Option<u64> {
        self.last_cycle
    }

    /// `job`'s period in each pool whose algorithm knows one.
    fn periods_of(&self, job: &str) -> BTreeMap<String, PeriodView> {
        self.pools
            .iter()
            .filter_map(|(name, pool)| Some((name.clone(), pool.allocator.period(job)?.into())))
            .collect()
    }

    fn shares_of(&self, job: &str) -> BTreeMap<String, ShareView> {
        self.pools
            .iter()
            .filter_map(|(name, pool)| {
                let at = pool.shares.binary_search_by(|(j, _)| j.as_str().cmp(job));
                at.ok().map(|at| (name.clone(), pool.shares[at].1))
            })
            .collect()
    }
}

/// Σ `figures`, 0 (not Rust's −0) when there are none: administrators read these.
pub(super) fn sum(figures: impl Iterator<Item = f64>) -> f64 {
    figures.fold(0.0, |a, b| a + b)
}
