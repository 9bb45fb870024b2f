//! The global controller's computation, pure: a registry of nodes and the jobs placed
//! on them, one round of each pool's control algorithm per interval, each job's
//! allocation split among its nodes, and only the rates that changed handed back for
//! pushing. No I/O, no clock: the caller passes the cycle number and the interval's
//! length, so the same calls always give the same rates.
//!
//! ## Units
//!
//! Every rate is per second, in the pool's unit (ops/s or bytes/s): capacities,
//! observations, settings, allocations and the rates pushed to nodes.
//!
//! ## One pool's round
//!
//! For a pool of capacity `C` and floor fraction `min_share`, at each [`Cluster::compute`]:
//!
//! - The round's jobs are the `n` jobs placed on at least one connected node; every one
//!   of them takes part in every pool, active there or not.
//! - `H` (*held*) is the sum of the rates last pushed to disconnected nodes that are not
//!   stale yet: those nodes keep enforcing them (fail-static), so they stay counted.
//! - The floor `F = min_share·C` is split equally: each job gets `f = F / n`, so a job
//!   that has not started yet can start.
//! - The algorithm divides what is left:
//!
//!   `allocationᵢ = f + algorithm(Round::new(max(C − H − F, 0), interval_s, obs))ᵢ`
//!
//!   (when nothing is left, the algorithm is not run and `allocationᵢ = f`). With
//!   psfa, psfa-held, psharing, priority-share and uniform-share the allocations and
//!   `H` sum to exactly `C`; with the others to at most `C`. They exceed it only while
//!   disconnected nodes hold more than `C − F`, by at most `F`: the floor is kept so
//!   that no job is starved.
//!
//! Job `i`'s observation, summed over its *connected* nodes: `usage = Σ admitted`,
//! `arrivals = Σ max(demand, arrivals)` (what the job asked for is a lower bound of what
//! it would have asked for unthrottled, so a low estimate cannot hide real arrivals;
//! on a node where both are 0 but its calls waited at the gate, held the whole
//! interval, the rate last pushed there: a queued job is not idle),
//! `limit` = its setting, else that same demand (with no reservation, the job's
//! estimated unthrottled demand stands in for PSFA's and PSharing's `demandᵢ`), or 0
//! under an algorithm whose limits are guarantees (`reservations`: a job nobody gave a
//! reservation shares what the reservations leave),
//! `weight` = its setting, else its node count, `nodes` = the node count the launchers
//! reported (the largest), else the number of nodes it is placed on; `period_s` = its
//! setting (`period` in the configuration), else none (`set10` then detects it).
//! A setting for one pool beats the job's setting for every pool, field by field.
//!
//! Then the field in which the algorithm reads a job's load (`usage` for psfa,
//! `arrivals` for the others that read one) is given the figure the pool's estimator
//! names, over the connected nodes: `usage` (Σ admitted), `arrivals` (Σ calls that
//! reached the gate, in the pool's unit) or `wait-inflated` (Σ max(demand, arrivals));
//! by default the figure the algorithm's paper measures (psfa: usage, adaptbf:
//! arrivals), else wait-inflated.
//!
//! ## Trees
//!
//! A pool with a tree ([`PoolPlan::tree`]) is divided by [`sluice_policy::tree`]
//! instead of its algorithm: the same round (`C − H − F`, the floor added after), each
//! job's load in `arrivals` (the pool's estimator, wait-inflated by default), its
//! weight and node count as above, and its account, user, QOS and partition as its
//! launchers gave them on the first of its nodes (by name). The shares of the tree's
//! nodes are the cluster's ([`Cluster::set_shares`]), one set for every pool.
//!
//! ## Fixed rates
//!
//! `static`, `uniform` and `priority` hold each job to a rate of its own, whatever the
//! others do, so their round differs. The algorithm is given the whole capacity `C`,
//! not `C − H − F`, and no floor is added: job `i`'s rate `Rᵢ` is its own, and every job
//! has one. What a job's disconnected nodes hold (`Hᵢ`) is part of its own rate, not of
//! the pool's: its connected nodes get `max(Rᵢ − Hᵢ, Rᵢ·node_floor·K/N)` for `K` of its
//! `N` nodes connected, so a cut node changes neither its job's rate nor any other job's.
//! Only when the rates, with what jobs on no connected node hold, add up to more than
//! `C` (more jobs than the pool was set up for, or limits beyond it) are all of them
//! scaled by one factor, so that the pool holds.
//!
//! ## Splitting a job among its nodes
//!
//! Job `i`'s allocation `A` goes to its connected nodes: node `k` of `K` gets
//! `A·node_floor/K + pₖ`, where the parts `pₖ` divide `R = A·(1 − node_floor)` by
//! `dₖ = max(demand, arrivals)` on that node: `R·dₖ/Σd` when `Σd ≤ R` (equal parts when
//! `Σd = 0`), else max-min fairly, `min(dₖ, L)` with the level `L` that uses up `R`.
//! The per-node floor lets an idle node start; max-min lets a node held below its
//! job's other nodes catch up (held nodes estimate their demand from what they were
//! admitted); the parts sum to `A`.
//!
//! ## Hand-over within an interval
//!
//! An algorithm whose groups take the pool one job after another (`set10`'s sets,
//! [`sluice_policy::Allocator::succession`]) also yields, each cycle and for each
//! group and node where two or more of its jobs are, a [`Relay`]: those jobs in the
//! group's order of service, each with the part of its rate there beyond its share of
//! the floor (`rateₖ · (Aᵢ − f) / Aᵢ`). [`Cluster::compute`] returns every cycle's
//! relays with the node's rates (a node with relays and no changed rate gets them
//! alone); the node lends, until its next interval, the part of a job that stopped
//! asking to the next in the order that asks (docs/algorithms.md "Hand-over").
//!
//! ## Disconnection, staleness, reconnection
//!
//! A disconnected node's placements and last pushed rates are kept and counted in `H`,
//! not re-divided, until a compute at `cycle ≥ disconnected + stale_after`; that compute
//! drops the node. A job placed on no node any more leaves the registry: it is absent
//! from later rounds and from the views. A node that connects (or sends a `full`
//! report) forgets what was pushed to it, so the next compute sends it every rate.
//!
//! ## Pushing only changes
//!
//! [`Cluster::compute`] returns, per connected node, only the (job, pool) rates that are
//! new there or differ from the rate last pushed by more than `tolerance` relative to
//! it; a rate within tolerance is not pushed and the node keeps the older one.
//!
//! ## Pools and algorithm state
//!
//! [`Cluster::set_pools`] keeps a pool's algorithm, and its memory, while its algorithm
//! name and parameters stay the same; a new capacity or `min_share` keeps it too (the
//! capacity comes with every round). Changing the algorithm or a parameter rebuilds it.
//! A job that left is absent from later rounds, and the first compute without it drops
//! what the pool's algorithm remembers of it (`adaptbf`'s token record, `set10`'s
//! track): its share is released and an id reused later starts afresh. A debt or credit
//! the job had in `adaptbf` goes with it.

mod auto;
mod compute;
mod held;
mod history;
mod pool_map;
mod registry;
#[cfg(test)]
mod tests;
mod view;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sluice_core::segment::Latency;
use sluice_policy::tree::{Divider, JobAttrs, Shares, TreeShape};
use sluice_policy::{Allocator, Estimator, Observation, Params, PolicyError, Problem};
use thiserror::Error;

pub use auto::{AutoCapacity, AutoState};
pub use held::Held;
pub use history::{History, Series};
use pool_map::PoolMap;
pub use view::{JobView, NodeView, PeriodView, PoolView, ShareView, TreeNodeView};

/// A pool to divide among the jobs that use it.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolPlan {
    /// The pool's name, as rules, reports and settings refer to it.
    pub name: String,
    /// What the pool takes, units per second (finite, > 0).
    pub capacity: f64,
    /// The control algorithm, by its name in [`sluice_policy::registry`].
    pub algorithm: String,
    /// The algorithm's parameters.
    pub params: Params,
    /// Fraction of the capacity (in [0, 1]) split equally among the pool's jobs before
    /// the algorithm runs.
    pub min_share: f64,
    /// The figure fed to the algorithm as each job's load; `None`: the algorithm's
    /// default ([`sluice_policy::registry::Spec::estimator`]). Only for algorithms that
    /// read a load.
    pub estimator: Option<Estimator>,
    /// When set, `capacity` is ignored: the capacity is found from the latency of the
    /// pool's calls (module `auto`), starting from `auto.start`.
    pub auto: Option<AutoCapacity>,
    /// When set, the pool is divided down this tree of job attributes (see "Trees"
    /// in the module's docs) with the cluster's shares, and `algorithm` is not run.
    pub tree: Option<TreeShape>,
}

/// What one job saw on one node for one pool over the last interval, per second: the
/// rates the node read off the job's segment, as they travel up and are kept.
pub use sluice_core::observe::ChannelRates as ChannelObs;

/// `From<$from> for $to`, field by field by name, plus the `$extra` fields `$to` has;
/// with `both`, `From` both ways. Our types and the protocol's messages carry the same
/// figures under the same names; a field of `$to` that is not carried stays a compile
/// error.
macro_rules! same_fields {
    ($from:ty => $to:ty: $($field:ident),+ $(; $($extra:ident: $value:expr),+)?) => {
        impl From<$from> for $to {
            fn from(x: $from) -> Self {
                Self { $($field: x.$field,)+ $($($extra: $value),+)? }
            }
        }
    };
    (both $a:ty, $b:ty: $($field:ident),+) => {
        same_fields!($a => $b: $($field),+);
        same_fields!($b => $a: $($field),+);
    };
}

same_fields!(both ChannelObs, crate::proto::ChannelObs:
    arrivals, admitted, wait, waiting, demand, calls, in_flight);
// A job's period travels beside its shares (JobView::periods).
same_fields!(ShareView => crate::proto::PoolShare:
    allocation, rate, demand, limit, weight, wait, arrivals, calls; period: None);

impl From<Latency> for crate::proto::LatencyHistogram {
    fn from(l: Latency) -> Self {
        crate::proto::LatencyHistogram {
            buckets: l.buckets.to_vec(),
            sum_ns: l.sum_ns,
        }
    }
}

/// `$to { … }` with the fields that name a job (`job`, `user`, `account`, `qos`,
/// `partition`, `nodes`, `launchers`) moved from `$from`, and the `$rest` given: a job's
/// names travel under the same names in the protocol's messages and in the controllers'
/// types; a field of `$to` that is not carried stays a compile error.
macro_rules! with_job_names {
    ($($to:ident)::+ { $($rest:tt)* } from $from:ident) => {
        $($to)::+ {
            job: $from.job,
            user: $from.user,
            account: $from.account,
            qos: $from.qos,
            partition: $from.partition,
            nodes: $from.nodes,
            launchers: $from.launchers,
            $($rest)*
        }
    };
}
pub(crate) use with_job_names;

/// One job's report from one node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeJob {
    /// The resource manager's job id.
    pub job: String,
    /// The job's user.
    pub user: String,
    /// The job's account, QOS and partition as it attached (empty when unknown).
    #[serde(default)]
    pub account: String,
    /// See `account`.
    #[serde(default)]
    pub qos: String,
    /// See `account`.
    #[serde(default)]
    pub partition: String,
    /// Nodes the job holds, as its launchers said; 0 when unknown.
    pub nodes: u32,
    /// Launchers attached on this node.
    pub launchers: u32,
    /// Observations by pool name; a pool not listed keeps its previous observation.
    pub pools: BTreeMap<String, ChannelObs>,
    /// The job's segment on the node, when it is worth an administrator's eye.
    #[serde(default)]
    pub segment: Option<SegmentNote>,
    /// Its processes on the node outside the stage, or using io_uring, one entry per
    /// executable and reason.
    #[serde(default)]
    pub outside: Vec<crate::proto::OutsideStage>,
}

/// A job's segment on one node, reported when it is not of its controller's layout, when
/// its controller cannot read it, or when processes of the job could not use it (see
/// `sluice_core::segment`, "Layouts and upgrades").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentNote {
    /// The layout that wrote the segment.
    pub layout: u64,
    /// The controller cannot read it: the job runs on at the rates last written.
    pub untouched: bool,
    /// Refusals the job's processes counted: each process that could not use the segment
    /// passes its calls through, unthrottled; one that could not use a configuration
    /// published later keeps the rules it had.
    pub refused: u32,
    /// The layout of the stage that refused last.
    pub stage_layout: u32,
}

impl std::fmt::Display for SegmentNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "segment of layout {}", self.layout)?;
        if self.untouched {
            write!(
                f,
                ", which this controller cannot read: left at its last rates"
            )?;
        } else if self.layout != sluice_core::segment::LAYOUT_VERSION {
            write!(f, ", read by this controller")?;
        }
        if self.refused > 0 {
            write!(
                f,
                "; {} refusal(s) by the job's processes (stage of layout {}): their calls \
                 pass through",
                self.refused, self.stage_layout
            )?;
        }
        Ok(())
    }
}

// The node a note is from is the key it is kept under.
same_fields!(SegmentNote => crate::proto::SegmentNote:
    layout, untouched, refused, stage_layout; node: String::new());
same_fields!(&crate::proto::SegmentNote => SegmentNote:
    layout, untouched, refused, stage_layout);

/// The administrator's setting for a job, in one pool or in every pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct JobSetting {
    /// Reservation or limit (PSFA's and PSharing's `demandᵢ`), units per second.
    pub limit: Option<f64>,
    /// Priority weight (> 0).
    pub weight: Option<f64>,
    /// The job's I/O period in seconds (> 0), when the administrator knows it.
    pub period_s: Option<f64>,
}

/// The controller's knobs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Cycles a disconnected node's rates stay counted before the node is dropped.
    pub stale_after: u64,
    /// Relative change below which a rate is not pushed again (finite, ≥ 0).
    pub tolerance: f64,
    /// Fraction of a job's allocation (in [0, 1]) split equally among its nodes.
    pub node_floor: f64,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            stale_after: 10,
            tolerance: 1e-3,
            node_floor: 0.05,
        }
    }
}

/// The rates to push to one node: only those that changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRates {
    /// The node.
    pub node: String,
    /// By job: the node's new share of the job's allocation, by pool.
    pub jobs: Vec<(String, BTreeMap<String, f64>)>,
    /// The hand-overs the node may make until its next interval (every cycle, not
    /// only changes).
    pub relays: Vec<Relay>,
}

/// An exclusive group's jobs on one node, in their order of service: within an
/// interval, what a job that stops asking may lend passes to the next one that asks
/// (docs/algorithms.md "Hand-over").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Relay {
    /// The node.
    pub node: String,
    /// The pool.
    pub pool: String,
    /// The group's jobs on the node, in order, each with the part of its rate there it
    /// may lend (beyond its floor), per second.
    pub jobs: Vec<(String, f64)>,
}

/// Why a pool, a setting or a compute was refused; the message names the field.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ClusterError {
    /// Two pools of one [`Cluster::set_pools`] call have the same name.
    #[error("pools.{0}: given twice")]
    DuplicatePool(String),
    /// A pool's capacity or `min_share` is not usable.
    #[error("pools.{pool}.{field}: {problem}")]
    Pool {
        /// The pool.
        pool: String,
        /// `capacity` or `min_share`.
        field: &'static str,
        /// What is wrong with it.
        problem: Problem,
    },
    /// The algorithm refused its name, its parameters or a round.
    #[error("pools.{pool}.{source}")]
    Policy {
        /// The pool.
        pool: String,
        /// The algorithm's error, which names its field.
        source: PolicyError,
    },
    /// A job setting's value is not usable.
    #[error("jobs.{job}.{field}: {problem}")]
    Setting {
        /// The job.
        job: String,
        /// `limit` or `weight`.
        field: &'static str,
        /// What is wrong with it.
        problem: Problem,
    },
    /// A [`Tuning`] field is not usable.
    #[error("{field}: {problem}")]
    Tuning {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        problem: Problem,
    },
    /// The interval passed to [`Cluster::compute`] is not finite and > 0.
    #[error("interval_s: {}", Problem::NotPositive)]
    Interval,
}

/// Cycle `cycle` of an interval `from`, numbered in an interval `to`: the cycle of `to` in
/// which its boundary falls. Cycles are numbered by the wall clock, cycle `k` closing at
/// `k·interval`, so a change of interval changes every number: a controller renumbers what
/// it keeps, and what it is told in the old unit, or it would wait for cycles whose
/// numbers it has passed (a longer interval) or count cycles that never ran (a shorter one).
pub fn renumber(cycle: u64, from: Duration, to: Duration) -> u64 {
    if from == to || to.is_zero() {
        return cycle;
    }
    let n = u128::from(cycle) * from.as_nanos() / to.as_nanos();
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// The global controller's state: pools, nodes, placements, settings, what was pushed.
#[derive(Default)]
pub struct Cluster {
    tuning: Tuning,
    pools: BTreeMap<String, Pool>,
    nodes: BTreeMap<String, Node>,
    /// By job: its setting for every pool, and by pool.
    settings: BTreeMap<String, Settings>,
    last_cycle: Option<u64>,
    /// Moves whenever a placement comes or goes or a node connects or disconnects: while
    /// it holds, every cycle has the same jobs in the same order, and a compute skips
    /// what depends only on that (sorting placements by job, matching ids).
    layout: u64,
    /// The placements grouped by job at `layout`, by the last compute.
    grouping: Grouping,
    /// The last hour of figures, for views.
    history: History,
    /// The shares of the nodes of pools' trees.
    shares: Shares,
}

/// The placements of a cycle grouped by job (see `compute`), kept while the layout holds.
#[derive(Default)]
struct Grouping {
    /// The layout it is of; `None` before the first compute.
    layout: Option<u64>,
    /// Indices of placements, grouped by job, jobs by name.
    order: Vec<usize>,
    /// Per job, by name: its placements, `order[start..end]`.
    ranges: Vec<(usize, usize)>,
}

/// One pool: its plan, its algorithm (with its memory), and the last compute's figures.
struct Pool {
    /// `plan.name`, shared by every placement's figures in the pool.
    name: Arc<str>,
    plan: PoolPlan,
    allocator: Box<dyn Allocator>,
    /// By job, sorted by id, as of the last compute.
    shares: Vec<(String, ShareView)>,
    /// The last round's observations, kept so that the next one reuses their ids.
    observations: Vec<Observation>,
    /// Jobs in the last round.
    active: usize,
    /// `H` of the last compute.
    held: f64,
    /// An automatic pool's capacity and what moved it last.
    auto: Option<AutoState>,
    /// A pool steered by its server: the mean reply latency of the reading given since
    /// the last compute (`Some(None)`: a reading without replies), consumed by it.
    server_latency: Option<Option<f64>>,
    /// The cluster's layout at the last compute (`None` before it): while it holds,
    /// `shares` and `observations` are of the same jobs in the same order.
    layout: Option<u64>,
    /// A pool with a tree: its nodes as of the last compute, depth first.
    tree: Vec<TreeNodeView>,
    /// A pool with a tree: its grouping and buffers, kept from one compute to the next.
    divider: Divider,
}

impl Pool {
    /// The capacity in force: the plan's, or the one an automatic pool found.
    fn capacity(&self) -> f64 {
        self.auto.map_or(self.plan.capacity, |a| a.capacity)
    }
}

/// One node as the controller knows it.
#[derive(Default)]
struct Node {
    /// The cycle it disconnected at; `None` while connected.
    down_since: Option<u64>,
    /// The cycle of its last report.
    last_report: Option<u64>,
    /// By job: what its last reports said, and what was pushed.
    jobs: BTreeMap<String, Placement>,
    /// By pool: the latencies its reports sampled since the last compute.
    latency: BTreeMap<String, Latency>,
}

/// One job on one node.
#[derive(Default)]
struct Placement {
    /// The job's user, account, QOS and partition, which a pool's tree groups it by.
    attrs: JobAttrs,
    nodes: u32,
    launchers: u32,
    segment: Option<SegmentNote>,
    outside: Vec<crate::proto::OutsideStage>,
    pools: PoolMap<ChannelObs>,
    /// By pool: the rates last pushed, which the node enforces.
    pushed: PoolMap<f64>,
}

/// A job's settings: for every pool, and per pool.
#[derive(Default)]
struct Settings {
    all: JobSetting,
    pools: BTreeMap<String, JobSetting>,
}
