//! What the controller is told: pools, settings, node reports and connections.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::sync::Arc;
use std::time::Duration;

use sluice_core::segment::Latency;
use sluice_policy::registry;
use sluice_policy::{Allocator, Problem};

use sluice_policy::tree::{Divider, JobAttrs, Shares};

use super::{
    AutoState, ChannelObs, Cluster, ClusterError, JobSetting, Node, NodeJob, Placement, Pool,
    PoolPlan, Settings, Tuning, renumber,
};

impl Cluster {
    /// A controller with no pools and no nodes; checks `tolerance` (finite, ≥ 0) and
    /// `node_floor` (in [0, 1]).
    pub fn new(tuning: Tuning) -> Result<Self, ClusterError> {
        if !(tuning.tolerance.is_finite() && tuning.tolerance >= 0.0) {
            return Err(ClusterError::Tuning {
                field: "tolerance",
                problem: Problem::NotNonNegative,
            });
        }
        if !(0.0..=1.0).contains(&tuning.node_floor) {
            return Err(ClusterError::Tuning {
                field: "node_floor",
                problem: Problem::NotFraction,
            });
        }
        Ok(Cluster {
            tuning,
            ..Cluster::default()
        })
    }

    /// Keeps a disconnected node's rates counted for `cycles` cycles (at least one) before
    /// the node is dropped.
    pub fn set_stale_after(&mut self, cycles: u64) {
        self.tuning.stale_after = cycles.max(1);
    }

    /// Replaces the set of pools. All of them are checked before anything changes. A
    /// pool whose algorithm and parameters are unchanged keeps its algorithm's memory;
    /// a removed pool's rates are forgotten.
    pub fn set_pools(&mut self, plans: Vec<PoolPlan>) -> Result<(), ClusterError> {
        let mut next = BTreeMap::new();
        let mut kept = BTreeMap::new();
        for plan in plans {
            check(&plan)?;
            let name = plan.name.clone();
            if next.contains_key(&name) || kept.contains_key(&name) {
                return Err(ClusterError::DuplicatePool(name));
            }
            match self.pools.get(&name) {
                Some(pool)
                    if pool.plan.algorithm == plan.algorithm
                        && pool.plan.params == plan.params
                        && pool.plan.tree == plan.tree =>
                {
                    kept.insert(name, plan);
                }
                _ => {
                    let allocator = build(&plan)?;
                    next.insert(name, Pool::new(plan, allocator));
                }
            }
        }
        let mut old = std::mem::take(&mut self.pools);
        for (name, plan) in kept {
            if let Some(mut pool) = old.remove(&name) {
                // A new automatic set-up starts again from its start.
                if plan.auto != pool.plan.auto {
                    pool.auto = plan.auto.as_ref().map(AutoState::new);
                }
                pool.plan = plan;
                next.insert(name, pool);
            }
        }
        for node in self.nodes.values_mut() {
            for placement in node.jobs.values_mut() {
                placement.pushed.retain(|pool| next.contains_key(pool));
            }
        }
        self.pools = next;
        Ok(())
    }

    /// Replaces the shares of the nodes of every pool's tree; the next compute uses them.
    pub fn set_shares(&mut self, shares: Shares) {
        self.shares = shares;
    }

    /// The shares in force.
    pub fn shares(&self) -> &Shares {
        &self.shares
    }

    /// Sets `job`'s setting for `pool`, or for every pool with `None`; an empty setting
    /// removes it. Kept whether or not the job runs, so that it can be set beforehand
    /// and survives a job's nodes going stale.
    pub fn set_job(
        &mut self,
        job: &str,
        pool: Option<&str>,
        setting: JobSetting,
    ) -> Result<(), ClusterError> {
        let bad = |field, problem| ClusterError::Setting {
            job: job.to_owned(),
            field,
            problem,
        };
        if setting.limit.is_some_and(|l| !(l.is_finite() && l >= 0.0)) {
            return Err(bad("limit", Problem::NotNonNegative));
        }
        if setting.weight.is_some_and(|w| !(w.is_finite() && w > 0.0)) {
            return Err(bad("weight", Problem::NotPositive));
        }
        if setting
            .period_s
            .is_some_and(|p| !(p.is_finite() && p > 0.0))
        {
            return Err(bad("period", Problem::NotPositive));
        }
        let settings = self.settings.entry(job.to_owned()).or_default();
        match pool {
            None => settings.all = setting,
            Some(pool) if setting == JobSetting::default() => {
                settings.pools.remove(pool);
            }
            Some(pool) => {
                settings.pools.insert(pool.to_owned(), setting);
            }
        }
        if settings.all == JobSetting::default() && settings.pools.is_empty() {
            self.settings.remove(job);
        }
        Ok(())
    }

    /// `job`'s setting for `pool` (or for every pool with `None`) as last set.
    pub fn setting(&self, job: &str, pool: Option<&str>) -> JobSetting {
        let Some(settings) = self.settings.get(job) else {
            return JobSetting::default();
        };
        match pool {
            None => settings.all,
            Some(pool) => settings.pools.get(pool).copied().unwrap_or_default(),
        }
    }

    /// A node's report for `cycle`; it also marks the node connected. With `full`, the
    /// listed jobs are all the node has; otherwise each listed job's user, node count,
    /// launchers and listed pools are updated and everything else stays. `ended` jobs
    /// left the node. Negative or non-finite figures count as 0.
    pub fn report(
        &mut self,
        node: &str,
        cycle: u64,
        full: bool,
        jobs: Vec<NodeJob>,
        ended: Vec<String>,
    ) {
        let pools = &self.pools;
        let entry = node_in(&mut self.nodes, node);
        let mut moved = entry.down_since.take().is_some();
        entry.last_report = Some(cycle);
        if full && !entry.jobs.is_empty() {
            entry.jobs.clear();
            moved = true;
        }
        for report in jobs {
            let placement = match entry.jobs.entry(report.job) {
                Entry::Occupied(known) => known.into_mut(),
                Entry::Vacant(new) => {
                    moved = true;
                    new.insert(Placement::default())
                }
            };
            let attrs = JobAttrs {
                account: report.account,
                user: report.user,
                qos: report.qos,
                partition: report.partition,
            };
            // A pool's tree keeps its grouping while the layout holds.
            if placement.attrs != attrs {
                placement.attrs = attrs;
                moved = true;
            }
            placement.nodes = report.nodes;
            placement.launchers = report.launchers;
            placement.segment = report.segment;
            placement.outside = report.outside;
            for (pool, obs) in report.pools {
                placement.pools.insert(intern(pools, pool), sanitize(obs));
            }
        }
        for job in ended {
            moved |= entry.jobs.remove(&job).is_some();
        }
        if moved {
            self.layout += 1;
        }
    }

    /// The latencies `node`'s stages sampled per pool with its last report: they move the
    /// capacity of automatic pools at the next compute.
    pub fn report_latency(&mut self, node: &str, latency: BTreeMap<String, Latency>) {
        // Most reports carry none (no automatic pool, or no call sampled): no lookup of
        // the node among thousands for them.
        if latency.is_empty() {
            return;
        }
        let entry = self.node_mut(node);
        for (pool, l) in latency {
            entry.latency.entry(pool).or_default().add(&l);
        }
    }

    /// The mean reply latency (seconds) `pool`'s server showed over the last interval, as
    /// its source read it (`None`: it answered no request): it moves the capacity of a
    /// pool steered by its server at the next compute. A pool given none then keeps its
    /// capacity.
    pub fn report_server_latency(&mut self, pool: &str, latency_s: Option<f64>) {
        if let Some(p) = self.pools.get_mut(pool) {
            p.server_latency = Some(latency_s);
        }
    }

    /// `node`'s local controller connected: what was pushed to it is forgotten, so the
    /// next compute sends it every rate.
    pub fn node_connected(&mut self, node: &str) {
        let entry = self.node_mut(node);
        let moved = entry.down_since.take().is_some();
        for placement in entry.jobs.values_mut() {
            placement.pushed.clear();
        }
        if moved {
            self.layout += 1;
        }
    }

    /// `node`'s local controller went away at `cycle`: its rates stay counted, and its
    /// jobs stay placed there, until `stale_after` cycles have passed.
    pub fn node_disconnected(&mut self, node: &str, cycle: u64) {
        if let Some(entry) = self.nodes.get_mut(node)
            && entry.down_since.is_none()
        {
            entry.down_since = Some(cycle);
            self.layout += 1;
        }
    }

    /// Numbers every cycle the cluster keeps (disconnections, last reports and computes,
    /// automatic pools' cuts) in an interval of `to` instead of `from`: the controller's
    /// interval changed, and its cycles are counted in the new one from now on.
    pub fn renumber_cycles(&mut self, from: Duration, to: Duration) {
        let f = |c| renumber(c, from, to);
        self.last_cycle = self.last_cycle.map(f);
        for node in self.nodes.values_mut() {
            node.down_since = node.down_since.map(f);
            node.last_report = node.last_report.map(f);
        }
        for auto in self.pools.values_mut().filter_map(|p| p.auto.as_mut()) {
            auto.renumber(f);
        }
    }

    /// `node`'s entry, made when new.
    fn node_mut(&mut self, node: &str) -> &mut Node {
        node_in(&mut self.nodes, node)
    }

    /// Drops the nodes disconnected for `stale_after` cycles or more at `cycle`.
    pub(super) fn drop_stale(&mut self, cycle: u64) {
        let stale_after = self.tuning.stale_after;
        let before = self.nodes.len();
        self.nodes.retain(|_, node| {
            node.down_since
                .is_none_or(|since| cycle.saturating_sub(since) < stale_after)
        });
        if self.nodes.len() != before {
            self.layout += 1;
        }
    }
}

impl Pool {
    fn new(plan: PoolPlan, allocator: Box<dyn Allocator>) -> Self {
        Pool {
            name: Arc::from(plan.name.as_str()),
            allocator,
            shares: Vec::new(),
            observations: Vec::new(),
            active: 0,
            held: 0.0,
            auto: plan.auto.as_ref().map(AutoState::new),
            server_latency: None,
            layout: None,
            tree: Vec::new(),
            divider: Divider::default(),
            plan,
        }
    }
}

/// `node`'s entry in `nodes`, made when new; its name is copied only then (every node
/// reports every cycle).
fn node_in<'a>(nodes: &'a mut BTreeMap<String, Node>, node: &str) -> &'a mut Node {
    if !nodes.contains_key(node) {
        nodes.insert(node.to_owned(), Node::default());
    }
    nodes.get_mut(node).expect("just made")
}

/// `pool` as the pool of that name in `pools` names itself, so that every placement's
/// figures share its name (see `pool_map`); a name no pool has is kept as it came.
pub(super) fn intern(pools: &BTreeMap<String, Pool>, pool: String) -> Arc<str> {
    match pools.get(&pool) {
        Some(known) => known.name.clone(),
        None => Arc::from(pool),
    }
}

fn check(plan: &PoolPlan) -> Result<(), ClusterError> {
    let bad = |field, problem| ClusterError::Pool {
        pool: plan.name.clone(),
        field,
        problem,
    };
    if !(plan.capacity.is_finite() && plan.capacity > 0.0) {
        return Err(bad("capacity", Problem::NotPositive));
    }
    if !(0.0..=1.0).contains(&plan.min_share) {
        return Err(bad("min_share", Problem::NotFraction));
    }
    if let Some(a) = &plan.auto {
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if !positive(a.target_p99_s) {
            return Err(bad("auto.target_p99", Problem::NotPositive));
        }
        if !(positive(a.min) && positive(a.start) && positive(a.step)) {
            return Err(bad("auto.min, start, step", Problem::NotPositive));
        }
        if !(a.max.is_finite() && a.max >= a.min) {
            return Err(bad("auto.max", Problem::NotPositive));
        }
        if !(a.backoff > 0.0 && a.backoff < 1.0) {
            return Err(bad("auto.backoff", Problem::NotFraction));
        }
    }
    // An unknown algorithm is [`build`]'s to report.
    if let Ok(spec) = registry::find(&plan.algorithm) {
        spec.estimator(plan.estimator)
            .map_err(|source| ClusterError::Policy {
                pool: plan.name.clone(),
                source,
            })?;
    }
    Ok(())
}

fn build(plan: &PoolPlan) -> Result<Box<dyn Allocator>, ClusterError> {
    registry::find(&plan.algorithm)
        .and_then(|spec| spec.build(&plan.params))
        .map_err(|source| ClusterError::Policy {
            pool: plan.name.clone(),
            source,
        })
}

/// Reports come off the network: a figure that is not a finite rate counts as nothing
/// rather than poisoning every job's round.
fn sanitize(obs: ChannelObs) -> ChannelObs {
    let rate = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
    ChannelObs {
        arrivals: rate(obs.arrivals),
        admitted: rate(obs.admitted),
        wait: rate(obs.wait),
        waiting: obs.waiting,
        in_flight: obs.in_flight,
        demand: rate(obs.demand),
        calls: rate(obs.calls),
    }
}

/// What the algorithm is given for `job` in `pool`: the pool's setting, field by field,
/// else the job's.
pub(super) fn effective(
    settings: &BTreeMap<String, Settings>,
    job: &str,
    pool: &str,
) -> JobSetting {
    let Some(settings) = settings.get(job) else {
        return JobSetting::default();
    };
    let one = settings.pools.get(pool).copied().unwrap_or_default();
    JobSetting {
        limit: one.limit.or(settings.all.limit),
        weight: one.weight.or(settings.all.weight),
        period_s: one.period_s.or(settings.all.period_s),
    }
}
