//! One control cycle: gather each pool's jobs over their nodes, run the pool's
//! algorithm on what the held rates and the floor leave, split each job's allocation
//! among its nodes, and keep only the rates that changed.
//!
//! The cycle runs over every placement of every node at each interval, tens of
//! thousands of them in a large cluster, so it works on flat vectors indexed by
//! placement rather than on maps keyed by names: a name is copied only for a rate that
//! changed, and each pool's observations keep their ids from one cycle to the next.

use std::collections::BTreeMap;
use std::sync::Arc;

use sluice_core::observe::MAX_DEMAND_FACTOR;
use sluice_core::segment::Latency;
use sluice_policy::tree::{Attr, JobAttrs, Shares};
use sluice_policy::{Estimator, JobField, Observation, Round};

use super::registry::effective;
use super::{
    ChannelObs, Cluster, ClusterError, Grouping, NodeRates, Placement, Pool, Relay, Settings,
    ShareView, TreeNodeView,
};

/// One placement (a job on a node) of this cycle, in the order of the nodes, then of
/// their jobs, by name: the order in which [`Cluster::changes`] walks them again.
struct Entry<'a> {
    node: &'a str,
    job: &'a str,
    connected: bool,
    placement: &'a Placement,
}

/// The placements of one job: `order[start..end]`, its nodes by name.
struct Job<'a> {
    name: &'a str,
    start: usize,
    end: usize,
    /// The node count the launchers reported (the largest), else the number of nodes it
    /// is placed on.
    size: u32,
}

/// What every pool's round of one cycle reads.
struct Context<'a> {
    entries: Vec<Entry<'a>>,
    /// Indices into `entries`, grouped by job.
    order: Vec<usize>,
    /// Every job placed on some node, by id.
    jobs: Vec<Job<'a>>,
    /// The cluster's layout.
    layout: u64,
    settings: &'a BTreeMap<String, Settings>,
    shares: &'a Shares,
    node_floor: f64,
    interval_s: f64,
}

impl<'a> Context<'a> {
    /// The placements of `cluster`, grouped by job: as `grouping` has them when it is of
    /// the cluster's layout, else sorted afresh.
    fn new(cluster: &'a Cluster, interval_s: f64, grouping: Grouping) -> Self {
        let mut entries = Vec::new();
        for (name, node) in &cluster.nodes {
            for (job, placement) in &node.jobs {
                entries.push(Entry {
                    node: name,
                    job,
                    connected: node.down_since.is_none(),
                    placement,
                });
            }
        }
        let (order, ranges) = if grouping.layout == Some(cluster.layout) {
            (grouping.order, grouping.ranges)
        } else {
            group(&entries, grouping)
        };
        let jobs = ranges
            .into_iter()
            .map(|(start, end)| {
                let reported = order[start..end]
                    .iter()
                    .map(|&e| entries[e].placement.nodes)
                    .max()
                    .unwrap_or(0);
                Job {
                    name: entries[order[start]].job,
                    start,
                    end,
                    size: if reported > 0 {
                        reported
                    } else {
                        (end - start) as u32
                    },
                }
            })
            .collect();
        Context {
            entries,
            order,
            jobs,
            layout: cluster.layout,
            settings: &cluster.settings,
            shares: &cluster.shares,
            node_floor: cluster.tuning.node_floor,
            interval_s,
        }
    }

    /// The grouping, kept for the next cycle.
    fn into_grouping(self) -> Grouping {
        Grouping {
            layout: Some(self.layout),
            ranges: self.jobs.iter().map(|j| (j.start, j.end)).collect(),
            order: self.order,
        }
    }

    /// One pool's round: its jobs' shares into `pool`, their per-node rates into
    /// `fresh` (by entry, `NaN` where no rate is pushed), and the hand-overs its
    /// algorithm's exclusive groups allow within the interval into `relays`.
    fn run(
        &self,
        pool: &mut Pool,
        fresh: &mut [f64],
        relays: &mut Vec<Relay>,
    ) -> Result<(), ClusterError> {
        // The name the placements share (see `pool_map`).
        let name = pool.name.clone();
        let name = &*name;
        // The same jobs as at the pool's last round, in the same order: its lists
        // already have their ids, and none of them left.
        let known = pool.layout == Some(self.layout);
        if !known {
            forget_gone(pool, &self.jobs);
        }
        // A tree reads no algorithm: its load is `arrivals`, wait-inflated by default.
        let spec = sluice_policy::registry::find(&pool.plan.algorithm)
            .ok()
            .filter(|_| pool.plan.tree.is_none());
        // Under an algorithm that guarantees limits, a job nobody gave one reserves
        // nothing; elsewhere its demand stands in for PSFA's and PSharing's demandᵢ.
        let guarantees = spec.is_some_and(|spec| spec.limit_is_guarantee);
        // The field the algorithm reads a job's load in, and the figure put there (the
        // plan was checked when set: an estimator only where there is a load).
        let load = match &pool.plan.tree {
            Some(_) => Some((
                JobField::Arrivals,
                pool.plan.estimator.unwrap_or(Estimator::WaitInflated),
            )),
            None => spec.and_then(|spec| {
                let field = spec.load?.field;
                Some((field, spec.estimator(pool.plan.estimator).ok()??))
            }),
        };
        pool.shares.truncate(self.jobs.len());
        let mut held_total = 0.0;
        // By observation: the job it is of, and what its disconnected nodes hold.
        let mut members = Vec::new();
        let mut member_held = Vec::new();
        let mut count = 0;
        // By entry: its demand in this pool, read once for the round and the split.
        let mut demands = vec![0.0; self.entries.len()];
        for (j, job) in self.jobs.iter().enumerate() {
            let mut g = Gathered::default();
            for &e in &self.order[job.start..job.end] {
                let entry = &self.entries[e];
                let obs = entry.placement.pools.get(name).copied().unwrap_or_default();
                let pushed = entry.placement.pushed.get(name).copied();
                let demand = queued_demand(&obs, pushed);
                demands[e] = demand;
                g.all_usage += obs.admitted;
                g.all_calls += obs.calls;
                g.all_demand += demand;
                g.all_arrivals += obs.arrivals;
                g.all_wait += obs.wait;
                if entry.connected {
                    g.usage += obs.admitted;
                    g.arrivals += obs.arrivals;
                    g.demand += demand;
                    g.connected += 1;
                } else {
                    g.held += entry.placement.pushed.get(name).copied().unwrap_or(0.0);
                }
            }
            held_total += g.held;
            let setting = effective(self.settings, job.name, name);
            // Its disconnected nodes' part now; its connected nodes' is added below.
            let share = ShareView {
                allocation: g.held,
                rate: g.all_usage,
                demand: g.all_demand,
                arrivals: g.all_arrivals,
                calls: g.all_calls,
                wait: g.all_wait,
                limit: setting
                    .limit
                    .unwrap_or(if guarantees { 0.0 } else { g.demand }),
                weight: setting.weight.unwrap_or(f64::from(job.size)),
            };
            if g.connected > 0 {
                let mut observation = Observation {
                    id: String::new(),
                    limit: share.limit,
                    usage: g.usage,
                    arrivals: g.demand,
                    weight: Some(share.weight),
                    nodes: Some(job.size),
                    period_s: setting.period_s,
                };
                if let Some((field, estimator)) = load {
                    let figure = g.figure(estimator);
                    match field {
                        JobField::Usage => observation.usage = figure,
                        _ => observation.arrivals = figure,
                    }
                }
                set_observation(&mut pool.observations, count, job.name, observation, known);
                members.push(j);
                member_held.push(g.held);
                count += 1;
            }
            set_share(&mut pool.shares, j, job.name, share, known);
        }
        pool.observations.truncate(count);
        pool.active = count;
        let allocations = if spec.is_some_and(|spec| spec.fixed_rate) {
            let floors: Vec<f64> = members
                .iter()
                .map(|&j| self.connected_floor(&self.jobs[j]))
                .collect();
            divide_fixed(pool, &member_held, &floors, held_total, self.interval_s)?
        } else {
            let attrs: Vec<&JobAttrs> = match pool.plan.tree {
                Some(_) => members
                    .iter()
                    .map(|&j| &self.entries[self.order[self.jobs[j].start]].placement.attrs)
                    .collect(),
                None => Vec::new(),
            };
            let generation = (self.layout, known);
            divide(
                pool,
                held_total,
                self.interval_s,
                generation,
                self.shares,
                &attrs,
            )?
        };
        for (&j, &allocation) in members.iter().zip(&allocations) {
            pool.shares[j].1.allocation += allocation;
            self.split(&self.jobs[j], allocation, &demands, fresh);
        }
        // The algorithm ran (something was left beyond the held rates and the floor):
        // its groups are of this round.
        let capacity = pool.capacity();
        let floor = pool.plan.min_share * capacity;
        let ran = capacity - held_total - floor > 0.0 && pool.plan.tree.is_none();
        if ran && !spec.is_some_and(|spec| spec.fixed_rate) {
            let each = floor / count.max(1) as f64;
            self.relays(pool, &members, &allocations, each, fresh, relays);
        }
        pool.held = held_total;
        pool.layout = Some(self.layout);
        Ok(())
    }

    /// The hand-overs of `pool`'s exclusive groups (its algorithm's succession), one
    /// [`Relay`] per group and node: the group's jobs on that node in their order of
    /// service, each with what it may lend, the part of its rate there beyond its share
    /// of the floor (`each` of its allocation, which it keeps). `members` and
    /// `allocations` are by the round's jobs, `fresh` by entry.
    fn relays(
        &self,
        pool: &Pool,
        members: &[usize],
        allocations: &[f64],
        each: f64,
        fresh: &[f64],
        relays: &mut Vec<Relay>,
    ) {
        for group in pool.allocator.succession() {
            let first = relays.len();
            for &m in group {
                let (Some(&j), Some(&allocation)) = (members.get(m), allocations.get(m)) else {
                    continue;
                };
                // The share of the rate a node holds beyond the floor, the same on every
                // node of the job (the floor is split with the rest).
                let lends = if allocation > 0.0 {
                    ((allocation - each) / allocation).max(0.0)
                } else {
                    0.0
                };
                let job = &self.jobs[j];
                for &e in &self.order[job.start..job.end] {
                    let entry = &self.entries[e];
                    if !entry.connected || fresh[e].is_nan() {
                        continue;
                    }
                    let part = (job.name.to_owned(), fresh[e] * lends);
                    match relays[first..].iter_mut().find(|r| r.node == entry.node) {
                        Some(r) => r.jobs.push(part),
                        None => relays.push(Relay {
                            node: entry.node.to_owned(),
                            pool: pool.name.to_string(),
                            jobs: vec![part],
                        }),
                    }
                }
            }
            // A node with one job of the group has no one to hand over to.
            let mut k = first;
            while k < relays.len() {
                if relays[k].jobs.len() < 2 {
                    relays.swap_remove(k);
                } else {
                    k += 1;
                }
            }
        }
    }

    /// The least part of job `job`'s allocation its connected nodes get when split:
    /// `node_floor` of it over its nodes, for each connected one.
    fn connected_floor(&self, job: &Job<'_>) -> f64 {
        let placed = &self.order[job.start..job.end];
        let connected = placed
            .iter()
            .filter(|&&e| self.entries[e].connected)
            .count();
        self.node_floor * connected as f64 / placed.len() as f64
    }

    /// Job `job`'s allocation among its connected nodes, into `fresh`: `node_floor` of
    /// it equally, the rest by demand (`demands`, by entry): in proportion to it when
    /// the nodes want no more than the rest (equally when none wants anything), else
    /// max-min fairly (see [`level`]).
    fn split(&self, job: &Job<'_>, allocation: f64, demands: &[f64], fresh: &mut [f64]) {
        let connected = || {
            self.order[job.start..job.end]
                .iter()
                .copied()
                .filter(|&e| self.entries[e].connected)
        };
        let (count, total) = connected().fold((0.0, 0.0), |(n, t), e| (n + 1.0, t + demands[e]));
        let each = allocation * self.node_floor / count;
        let rest = allocation * (1.0 - self.node_floor);
        // A job on one node has all of it there, whatever the node wants.
        if count == 1.0 || total <= rest {
            for e in connected() {
                let part = if total > 0.0 {
                    demands[e] / total
                } else {
                    1.0 / count
                };
                fresh[e] = each + rest * part;
            }
            return;
        }
        let mut wanted: Vec<f64> = connected().map(|e| demands[e]).collect();
        let level = level(rest, &mut wanted);
        for e in connected() {
            fresh[e] = each + demands[e].min(level);
        }
    }
}

/// The level `L` at which nodes wanting `demands` (more than `amount` together) are
/// given `min(demand, L)` and `amount` is used up; sorts `demands`.
///
/// Shares in proportion to demand alone freeze a held job's split: a node held to its
/// rate estimates its demand from what it was admitted (at most 100 times that, the
/// estimate's cap), so two saturated nodes kept whatever ratio their first rates had (a
/// node that missed the job's first cycle stayed at 5 % of it for seconds). At the
/// level, each node gets its part as soon as its estimate passes it.
fn level(amount: f64, demands: &mut [f64]) -> f64 {
    demands.sort_unstable_by(f64::total_cmp);
    let mut left = amount;
    for (i, &d) in demands.iter().enumerate() {
        let above = (demands.len() - i) as f64;
        if d * above >= left {
            return left / above;
        }
        left -= d;
    }
    f64::INFINITY
}

/// `entries` grouped by job, jobs by name, into `grouping`'s buffers.
fn group(entries: &[Entry<'_>], grouping: Grouping) -> (Vec<usize>, Vec<(usize, usize)>) {
    let Grouping {
        mut order,
        mut ranges,
        ..
    } = grouping;
    order.clear();
    order.extend(0..entries.len());
    // Stable: a job's placements stay in the order of their nodes.
    order.sort_by(|&a, &b| entries[a].job.cmp(entries[b].job));
    ranges.clear();
    for (at, &e) in order.iter().enumerate() {
        match ranges.last_mut() {
            Some((start, end)) if entries[order[*start]].job == entries[e].job => *end = at + 1,
            _ => ranges.push((at, at + 1)),
        }
    }
    (order, ranges)
}

/// One job's figures in one pool, over its nodes.
#[derive(Default)]
struct Gathered {
    /// Σ admitted over its connected nodes.
    usage: f64,
    /// Σ arrivals over its connected nodes.
    arrivals: f64,
    /// Σ max(demand, arrivals) over its connected nodes.
    demand: f64,
    /// Over every node it is placed on, for the views.
    all_usage: f64,
    all_demand: f64,
    all_arrivals: f64,
    /// Calls admitted, over all its nodes (a weighed pool's; 0 for others).
    all_calls: f64,
    all_wait: f64,
    /// Σ rates last pushed to its disconnected nodes.
    held: f64,
    /// Its connected nodes.
    connected: usize,
}

impl Gathered {
    /// The figure `estimator` names, over the job's connected nodes.
    fn figure(&self, estimator: Estimator) -> f64 {
        match estimator {
            Estimator::Usage => self.usage,
            Estimator::Arrivals => self.arrivals,
            Estimator::WaitInflated => self.demand,
        }
    }
}

impl Cluster {
    /// Runs one cycle over every pool and returns the rates to push: per connected node,
    /// only the (job, pool) rates that are new there or changed by more than the
    /// tolerance. First drops the nodes that went stale. `interval_s` is the length of
    /// the interval the reports cover (finite, > 0), given to every algorithm.
    pub fn compute(&mut self, cycle: u64, interval_s: f64) -> Result<Vec<NodeRates>, ClusterError> {
        if !(interval_s.is_finite() && interval_s > 0.0) {
            return Err(ClusterError::Interval);
        }
        self.drop_stale(cycle);
        self.last_cycle = Some(cycle);
        self.find_capacities(cycle);
        let mut pools = std::mem::take(&mut self.pools);
        let grouping = std::mem::take(&mut self.grouping);
        let context = Context::new(self, interval_s, grouping);
        let width = context.entries.len();
        // By pool, by entry.
        let mut fresh = vec![f64::NAN; width * pools.len()];
        let mut relays = Vec::new();
        let mut result = Ok(());
        for (p, pool) in pools.values_mut().enumerate() {
            result = context.run(pool, &mut fresh[p * width..(p + 1) * width], &mut relays);
            if result.is_err() {
                break;
            }
        }
        let grouping = context.into_grouping();
        let names: Vec<Arc<str>> = pools.values().map(|p| p.name.clone()).collect();
        let out = result.map(|()| with_relays(self.changes(&names, &fresh, width), relays));
        self.pools = pools;
        self.grouping = grouping;
        out
    }

    /// Moves each automatic pool's capacity by the latencies its calls showed since the
    /// last compute on the connected nodes and by what its jobs asked for there (their
    /// demand, held back or not); the samples are consumed.
    fn find_capacities(&mut self, cycle: u64) {
        for (name, pool) in &mut self.pools {
            let (Some(spec), Some(state)) = (&pool.plan.auto, &mut pool.auto) else {
                continue;
            };
            let mut latency = Latency::default();
            let mut asked = 0.0;
            for node in self.nodes.values().filter(|n| n.down_since.is_none()) {
                if let Some(l) = node.latency.get(name) {
                    latency.add(l);
                }
                asked += node
                    .jobs
                    .values()
                    .filter_map(|p| p.pools.get(&pool.name))
                    .map(demand)
                    .sum::<f64>();
            }
            if spec.from_server {
                state.update_from_server(spec, cycle, pool.server_latency.take().flatten(), asked);
            } else {
                state.update(spec, cycle, &latency, asked);
            }
        }
        for node in self.nodes.values_mut() {
            node.latency.clear();
        }
    }

    /// Records `fresh` (by pool, by entry) as pushed where it differs from what was,
    /// and returns those parts.
    fn changes(&mut self, pools: &[Arc<str>], fresh: &[f64], width: usize) -> Vec<NodeRates> {
        let tolerance = self.tuning.tolerance;
        let mut out = Vec::new();
        let mut e = 0;
        for (name, node) in &mut self.nodes {
            let mut jobs = Vec::new();
            for (job, placement) in &mut node.jobs {
                let mut changed = BTreeMap::new();
                for (p, pool) in pools.iter().enumerate() {
                    let rate = fresh[p * width + e];
                    if rate.is_nan() {
                        continue;
                    }
                    match placement.pushed.get_mut(pool) {
                        Some(last) if (rate - *last).abs() <= tolerance * last.abs() => {}
                        Some(last) => {
                            *last = rate;
                            changed.insert(pool.to_string(), rate);
                        }
                        None => {
                            placement.pushed.insert(pool.clone(), rate);
                            changed.insert(pool.to_string(), rate);
                        }
                    }
                }
                if !changed.is_empty() {
                    jobs.push((job.clone(), changed));
                }
                e += 1;
            }
            if !jobs.is_empty() {
                out.push(NodeRates {
                    node: name.clone(),
                    jobs,
                    relays: Vec::new(),
                });
            }
        }
        out
    }
}

/// Adds each node's hand-overs to its rates: every cycle, changed or not, since a
/// node keeps a hand-over only until its next interval begins (docs/algorithms.md
/// "Hand-over"); a node with hand-overs and no changed rate gets them alone.
fn with_relays(mut out: Vec<NodeRates>, relays: Vec<Relay>) -> Vec<NodeRates> {
    for relay in relays {
        match out.iter_mut().find(|r| r.node == relay.node) {
            Some(r) => r.relays.push(relay),
            None => out.push(NodeRates {
                node: relay.node.clone(),
                jobs: Vec::new(),
                relays: vec![relay],
            }),
        }
    }
    out
}

/// Tells the pool's algorithm to forget the jobs of its last round that are not in
/// `jobs` any more (both are sorted by id).
fn forget_gone(pool: &mut Pool, jobs: &[Job<'_>]) {
    let mut next = jobs.iter().map(|j| j.name).peekable();
    for (old, _) in &pool.shares {
        while next.next_if(|name| *name < old.as_str()).is_some() {}
        if next.peek() != Some(&old.as_str()) {
            pool.allocator.forget(old);
        }
    }
}

/// Sets `list[at]` to `observation` of `id`, keeping the id already there when it is
/// the same job (most are from one cycle to the next; `known`: it is): no copy of the
/// name.
fn set_observation(
    list: &mut Vec<Observation>,
    at: usize,
    id: &str,
    observation: Observation,
    known: bool,
) {
    if let Some(slot) = list.get_mut(at) {
        let kept = std::mem::take(&mut slot.id);
        *slot = observation;
        slot.id = reuse(kept, id, known);
    } else {
        list.push(Observation {
            id: id.to_owned(),
            ..observation
        });
    }
}

/// Sets `list[at]` to `(id, share)` the same way.
fn set_share(
    list: &mut Vec<(String, ShareView)>,
    at: usize,
    id: &str,
    share: ShareView,
    known: bool,
) {
    if let Some(slot) = list.get_mut(at) {
        let kept = std::mem::take(&mut slot.0);
        *slot = (reuse(kept, id, known), share);
    } else {
        list.push((id.to_owned(), share));
    }
}

/// `id` in `buffer`, which is already it most of the time and surely when `known`.
fn reuse(mut buffer: String, id: &str, known: bool) -> String {
    if !known && buffer != id {
        buffer.clear();
        buffer.push_str(id);
    }
    buffer
}

/// A job's unthrottled demand on one node: the node's estimate, but never less than
/// what the job actually asked for.
fn demand(obs: &ChannelObs) -> f64 {
    obs.demand.max(obs.arrivals)
}

/// A job's demand on one node as the round reads it: [`demand`], and for a job that
/// asked unseen ([`ChannelObs::asked_unseen`]), a figure from the rate it was held to
/// (`pushed`; one unit per second before any was). Such a job asks: an algorithm that
/// orders jobs by when they began asking (SET-10) would otherwise see it idle, start
/// its phase afresh when it next passes a call, and put it behind jobs that began after
/// it. Held at its gate the whole interval, it wants what the wait-inflated estimate
/// says of a thread that waited all of one, [`MAX_DEMAND_FACTOR`] times the rate it
/// got: the same figure it reports in an interval where one call passes. Read as only
/// the rate it was held to, a job held at a floor stayed there, given no more than
/// that even at the head of its SET-10 set, for as long as its calls waited. Inside
/// slow calls only, it wants the rate it holds.
fn queued_demand(obs: &ChannelObs, pushed: Option<f64>) -> f64 {
    if !obs.asked_unseen() {
        return demand(obs);
    }
    let held = pushed.unwrap_or(1.0).max(1.0);
    if obs.waited() {
        held * MAX_DEMAND_FACTOR
    } else {
        held
    }
}

/// `f + algorithm(max(C − H − F, 0))` for every job of the pool's round (or the tree's
/// division, by `attrs`, one per job, and `shares`, for a pool with a tree): see the
/// module's docs. `layout` is the cluster's, `known` whether the pool's last round was
/// of it.
fn divide(
    pool: &mut Pool,
    held: f64,
    interval_s: f64,
    (layout, known): (u64, bool),
    shares: &Shares,
    attrs: &[&JobAttrs],
) -> Result<Vec<f64>, ClusterError> {
    let jobs = &pool.observations;
    if jobs.is_empty() {
        pool.tree.clear();
        return Ok(Vec::new());
    }
    let capacity = pool.capacity();
    let plan = &pool.plan;
    let floor = plan.min_share * capacity;
    // The floor is not cut when disconnected nodes hold more than the rest: a job
    // given nothing would block its application until those nodes go stale.
    let rest = (capacity - held - floor).max(0.0);
    let each = floor / jobs.len() as f64;
    let mut rates = if rest > 0.0 {
        let round = Round::new(rest, interval_s, jobs).map_err(|source| ClusterError::Policy {
            pool: plan.name.clone(),
            source,
        })?;
        match &plan.tree {
            Some(shape) => {
                // The layout names the jobs and their attributes (a report that changes
                // them moves it).
                let division =
                    shape.divide_with(&mut pool.divider, Some(layout), shares, &round, attrs);
                // The views' names are written over last cycle's, which are the same
                // ones while the layout holds: none is allocated again.
                let named = known && pool.tree.len() == division.nodes.len();
                pool.tree.truncate(division.nodes.len());
                for (at, node) in division.nodes.iter().enumerate() {
                    let level = shape.levels()[node.depth].attr;
                    let name = match level {
                        Attr::Job => jobs[node.job].id.as_str(),
                        attr => attrs[node.job].get(attr),
                    };
                    if at == pool.tree.len() {
                        pool.tree.push(TreeNodeView {
                            depth: 0,
                            level: String::new(),
                            name: String::new(),
                            allocation: 0.0,
                            rate: 0.0,
                            demand: 0.0,
                            weight: 0.0,
                        });
                    }
                    let view = &mut pool.tree[at];
                    if !named {
                        view.depth = node.depth as u32;
                        overwrite(&mut view.level, level.name());
                        overwrite(&mut view.name, name);
                    }
                    view.allocation = node.allocation;
                    view.rate = node.usage;
                    view.demand = node.demand;
                    view.weight = node.weight;
                }
                division.rates.clone()
            }
            None => {
                pool.tree.clear();
                pool.allocator.allocate(&round)
            }
        }
    } else {
        pool.tree.clear();
        vec![0.0; jobs.len()]
    };
    for rate in &mut rates {
        *rate += each;
    }
    Ok(rates)
}

/// Sets `buffer` to `text`, in the memory it has when that is enough.
fn overwrite(buffer: &mut String, text: &str) {
    if buffer != text {
        buffer.clear();
        buffer.push_str(text);
    }
}

/// The rates of a fixed-rate algorithm (`static`, `uniform`, `priority`) for the jobs of
/// the pool's round, on their connected nodes; see the module's docs.
///
/// The algorithm is given the whole capacity: its rates are each job's own, and owe
/// nothing to the other jobs or to their nodes. A job's disconnected nodes hold part
/// of its rate (`held`, by observation), so its connected nodes get the rest, never less
/// than the node floor's part of it (`floors`, by observation). Only when the rates, and
/// what jobs with no connected node hold, add up to more than the capacity (more jobs
/// than the pool was set up for) are they all scaled by one factor, so that the pool
/// holds.
fn divide_fixed(
    pool: &mut Pool,
    held: &[f64],
    floors: &[f64],
    held_total: f64,
    interval_s: f64,
) -> Result<Vec<f64>, ClusterError> {
    let jobs = &pool.observations;
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let capacity = pool.capacity();
    let round = Round::new(capacity, interval_s, jobs).map_err(|source| ClusterError::Policy {
        pool: pool.plan.name.clone(),
        source,
    })?;
    let mut rates = pool.allocator.allocate(&round);
    let gone = (held_total - held.iter().sum::<f64>()).max(0.0);
    let wanted = rates.iter().sum::<f64>() + gone;
    let scale = if wanted > capacity {
        capacity / wanted
    } else {
        1.0
    };
    for ((rate, &held), &floor) in rates.iter_mut().zip(held).zip(floors) {
        let own = *rate * scale;
        *rate = (own - held).max(own * floor);
    }
    Ok(rates)
}
