//! One control cycle: gather each pool's jobs over their nodes, run the pool's
//! algorithm on what the held rates and the floor leave, split each job's allocation
//! among its nodes, and keep only the rates that changed.

use std::collections::BTreeMap;

use sluice_policy::{Observation, Round};

use super::registry::effective;
use super::{ChannelObs, Cluster, ClusterError, Node, NodeRates, Pool, Settings, ShareView};

/// By node, by job, by pool: a rate.
type Rates = BTreeMap<String, BTreeMap<String, BTreeMap<String, f64>>>;

/// One job's figures in one pool, over its nodes.
#[derive(Default)]
struct Gathered {
    /// Σ admitted over its connected nodes.
    usage: f64,
    /// Σ max(demand, arrivals) over its connected nodes.
    demand: f64,
    /// Both over every node it is placed on, for the views.
    all_usage: f64,
    all_demand: f64,
    /// Σ rates last pushed to its disconnected nodes.
    held: f64,
    /// Its connected nodes, with their demand.
    spread: Vec<(String, f64)>,
}

/// What every pool's round of one cycle reads.
struct Context<'a> {
    nodes: &'a BTreeMap<String, Node>,
    settings: &'a BTreeMap<String, Settings>,
    /// By job: its node count.
    sizes: BTreeMap<String, u32>,
    node_floor: f64,
    interval_s: f64,
}

impl Context<'_> {
    /// One pool's round: its jobs' shares into `pool`, their per-node rates into `fresh`.
    fn run(&self, name: &str, pool: &mut Pool, fresh: &mut Rates) -> Result<(), ClusterError> {
        let mut shares = BTreeMap::new();
        let mut observations = Vec::new();
        let mut spreads = Vec::new();
        let mut held = 0.0;
        for (job, g) in gather(self.nodes, name) {
            held += g.held;
            let setting = effective(self.settings, &job, name);
            let nodes = self.sizes.get(&job).copied().unwrap_or(1);
            // Its disconnected nodes' part now; its connected nodes' is added below.
            let share = ShareView {
                allocation: g.held,
                rate: g.all_usage,
                demand: g.all_demand,
                limit: setting.limit.unwrap_or(g.demand),
                weight: setting.weight.unwrap_or(f64::from(nodes)),
            };
            if !g.spread.is_empty() {
                observations.push(Observation {
                    id: job.clone(),
                    limit: share.limit,
                    usage: g.usage,
                    arrivals: g.demand,
                    weight: Some(share.weight),
                    nodes: Some(nodes),
                    period_s: None,
                });
                spreads.push(g.spread);
            }
            shares.insert(job, share);
        }
        let allocations = divide(pool, &observations, held, self.interval_s)?;
        for ((obs, spread), allocation) in observations.iter().zip(&spreads).zip(allocations) {
            if let Some(share) = shares.get_mut(&obs.id) {
                share.allocation += allocation;
            }
            let rates = split(allocation, spread, self.node_floor);
            for ((node, _), rate) in spread.iter().zip(rates) {
                let on_node = fresh.entry(node.clone()).or_default();
                let job = on_node.entry(obs.id.clone()).or_default();
                job.insert(name.to_owned(), rate);
            }
        }
        // A job gone from the registry takes its algorithm state with it.
        for gone in pool.shares.keys().filter(|job| !shares.contains_key(*job)) {
            pool.allocator.forget(gone);
        }
        pool.shares = shares;
        pool.active = observations.len();
        pool.held = held;
        Ok(())
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
        let context = Context {
            nodes: &self.nodes,
            settings: &self.settings,
            sizes: self.sizes(),
            node_floor: self.tuning.node_floor,
            interval_s,
        };
        let mut fresh = Rates::new();
        for (name, pool) in &mut self.pools {
            context.run(name, pool, &mut fresh)?;
        }
        Ok(self.changes(fresh))
    }

    /// By job: the node count the launchers reported (the largest), else the number
    /// of nodes it is placed on.
    fn sizes(&self) -> BTreeMap<String, u32> {
        let mut sizes: BTreeMap<String, (u32, u32)> = BTreeMap::new();
        for node in self.nodes.values() {
            for (job, placement) in &node.jobs {
                let (reported, seen) = sizes.entry(job.clone()).or_default();
                *reported = (*reported).max(placement.nodes);
                *seen += 1;
            }
        }
        sizes
            .into_iter()
            .map(|(job, (reported, seen))| (job, if reported > 0 { reported } else { seen }))
            .collect()
    }

    /// Records `fresh` as pushed where it differs from what was, and returns those parts.
    fn changes(&mut self, mut fresh: Rates) -> Vec<NodeRates> {
        let tolerance = self.tuning.tolerance;
        let mut out = Vec::new();
        for (name, node) in &mut self.nodes {
            let Some(rates) = fresh.remove(name) else {
                continue;
            };
            let mut jobs = Vec::new();
            for (job, pools) in rates {
                let pushed = node.pushed.entry(job.clone()).or_default();
                let changed: BTreeMap<String, f64> = pools
                    .into_iter()
                    .filter(|(pool, rate)| {
                        pushed
                            .get(pool)
                            .is_none_or(|last| (rate - last).abs() > tolerance * last.abs())
                    })
                    .collect();
                pushed.extend(changed.iter().map(|(pool, rate)| (pool.clone(), *rate)));
                if !changed.is_empty() {
                    jobs.push((job, changed));
                }
            }
            if !jobs.is_empty() {
                out.push(NodeRates {
                    node: name.clone(),
                    jobs,
                });
            }
        }
        out
    }
}

/// Every job placed on some node, with its figures in `pool`; a pool a node never
/// reported for the job counts as idle there.
fn gather(nodes: &BTreeMap<String, Node>, pool: &str) -> BTreeMap<String, Gathered> {
    let mut gathered: BTreeMap<String, Gathered> = BTreeMap::new();
    for (name, node) in nodes {
        for (job, placement) in &node.jobs {
            let obs = placement.pools.get(pool).copied().unwrap_or_default();
            let demand = demand(&obs);
            let g = gathered.entry(job.clone()).or_default();
            g.all_usage += obs.admitted;
            g.all_demand += demand;
            if node.down_since.is_none() {
                g.usage += obs.admitted;
                g.demand += demand;
                g.spread.push((name.clone(), demand));
            } else {
                let pushed = node.pushed.get(job).and_then(|rates| rates.get(pool));
                g.held += pushed.copied().unwrap_or(0.0);
            }
        }
    }
    gathered
}

/// A job's unthrottled demand on one node: the node's estimate, but never less than
/// what the job actually asked for.
fn demand(obs: &ChannelObs) -> f64 {
    obs.demand.max(obs.arrivals)
}

/// `f + algorithm(max(C − H − F, 0))` for every job: see the module's docs.
fn divide(
    pool: &mut Pool,
    jobs: &[Observation],
    held: f64,
    interval_s: f64,
) -> Result<Vec<f64>, ClusterError> {
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let plan = &pool.plan;
    let floor = plan.min_share * plan.capacity;
    // The floor is not cut when disconnected nodes hold more than the rest: a job
    // given nothing would block its application until those nodes go stale.
    let rest = (plan.capacity - held - floor).max(0.0);
    let each = floor / jobs.len() as f64;
    let mut rates = if rest > 0.0 {
        let round = Round::new(rest, interval_s, jobs).map_err(|source| ClusterError::Policy {
            pool: plan.name.clone(),
            source,
        })?;
        pool.allocator.allocate(&round)
    } else {
        vec![0.0; jobs.len()]
    };
    for rate in &mut rates {
        *rate += each;
    }
    Ok(rates)
}

/// A job's allocation among its connected nodes: `node_floor` of it equally, the rest
/// by demand (equally when no node has any).
fn split(allocation: f64, spread: &[(String, f64)], node_floor: f64) -> Vec<f64> {
    let count = spread.len() as f64;
    let total: f64 = spread.iter().map(|(_, d)| d).sum();
    spread
        .iter()
        .map(|(_, d)| {
            let part = if total > 0.0 { d / total } else { 1.0 / count };
            allocation * (node_floor / count + (1.0 - node_floor) * part)
        })
        .collect()
}
