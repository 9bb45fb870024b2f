//! The global controller's computation alone, in process: what one control cycle costs
//! over N nodes of 3 jobs each once their reports are in (the algorithm, the split
//! among nodes, the rates that changed), with no network.
//!
//! The workload is `sluice bench control`'s: each cycle a rotating tenth of the nodes
//! report that two of their jobs' demands moved, the others report nothing new. With
//! `churn`, one job also ends and another starts each cycle, somewhere in the cluster,
//! as on a busy cluster: the cycle then cannot reuse its grouping of placements by job
//! (the cluster's *layout* moved) and pays for it.
//!
//! With a tree, the pool is divided down it (`drf` at every level) and each job is
//! charged to one of 200 users in 20 accounts.
//!
//! The caches are warm here. Inside a running `sluice global` the network buffers of
//! its connections push the placements out of the caches between two cycles, and the
//! same computation takes two to three times as long (docs/performance.md).

use std::time::Instant;

use sluice_control::cluster::{Cluster, NodeJob, PoolPlan, Tuning};
use sluice_policy::Params;
use sluice_policy::tree::TreeShape;

use crate::bench_control::{
    BenchError, JOBS, POOL, ROTATION, SimNode, WARMUP, capacity, node_job, rank,
};

/// The control interval the computation is told (it does not sleep).
const INTERVAL_S: f64 = 1.0;

/// What `sluice bench cycle` runs.
#[derive(Debug, Clone)]
pub struct CycleBenchOptions {
    /// Nodes, 3 jobs each.
    pub locals: usize,
    /// Cycles measured (after `WARMUP` unmeasured ones).
    pub cycles: u64,
    /// Whether a job ends and another starts every cycle.
    pub churn: bool,
    /// The pool's division: flat `psfa` (`None`), or down a tree of this shape (e.g.
    /// `account,user,job`), the jobs in [`ACCOUNTS`] accounts of [`USERS`] users.
    pub tree: Option<TreeShape>,
}

/// Accounts the jobs of a tree bench are charged to.
pub const ACCOUNTS: usize = 20;

/// Users the jobs of a tree bench belong to, each of one account.
pub const USERS: usize = 200;

/// Job `id`'s account and user in a tree bench: spread by a hash of its id, so that a
/// node's jobs are of different users.
fn charge(job: &mut NodeJob) {
    let hash = job.job.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let user = (hash % USERS as u64) as usize;
    job.user = format!("user{user}");
    job.account = format!("acct{}", user % ACCOUNTS);
}

/// What it measured.
#[derive(Debug, Clone, Copy)]
pub struct CycleBench {
    /// Jobs in the pool.
    pub jobs: usize,
    /// Time of one cycle's computation: median and 99th percentile, µs.
    pub median_us: f64,
    /// See `median_us`.
    pub p99_us: f64,
}

/// Runs `o.cycles` measured cycles.
pub fn run(o: &CycleBenchOptions) -> Result<CycleBench, BenchError> {
    let mut cluster = Cluster::new(Tuning::default())
        .map_err(|e| BenchError::control("the default tuning", e))?;
    cluster
        .set_pools(vec![PoolPlan {
            name: POOL.to_owned(),
            capacity: capacity(o.locals),
            algorithm: if o.tree.is_some() { "drf" } else { "psfa" }.to_owned(),
            params: Params::new(),
            min_share: 0.0,
            estimator: None,
            auto: None,
            tree: o.tree.clone(),
        }])
        .map_err(|e| BenchError::control("the bench's pool", e))?;
    let groups = ROTATION.min(o.locals);
    let mut nodes: Vec<SimNode> = (0..o.locals).map(|i| SimNode::new(i, groups)).collect();
    let mut times = Vec::new();
    for cycle in 1..=WARMUP + o.cycles {
        let full = cycle == 1;
        for node in &mut nodes {
            let mut jobs = node.changed(cycle, full);
            if o.tree.is_some() {
                jobs.iter_mut().for_each(charge);
            }
            cluster.report(&node.name, cycle, full, jobs, Vec::new());
        }
        if o.churn && cycle > 1 {
            let node = &nodes[(cycle as usize * 7) % o.locals].name;
            let mut started = node_job(&format!("churn-{cycle:08}"), 100.0);
            if o.tree.is_some() {
                charge(&mut started);
            }
            let ended = format!("churn-{:08}", cycle - 1);
            cluster.report(node, cycle, false, vec![started], vec![ended]);
        }
        let start = Instant::now();
        let rates = cluster
            .compute(cycle, INTERVAL_S)
            .map_err(|e| BenchError::control("the bench's cycle", e))?;
        let took = start.elapsed();
        std::hint::black_box(rates);
        if cycle > WARMUP {
            times.push(took.as_secs_f64() * 1e6);
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(CycleBench {
        jobs: o.locals * JOBS + usize::from(o.churn),
        median_us: rank(&times, 0.5).unwrap_or(0.0),
        p99_us: rank(&times, 0.99).unwrap_or(0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_is_measured_with_and_without_churn() {
        for churn in [false, true] {
            for tree in [None, Some("account,user,job".parse().expect("valid"))] {
                let o = CycleBenchOptions {
                    locals: 20,
                    cycles: 5,
                    churn,
                    tree,
                };
                let b = run(&o).expect("runs");
                assert_eq!(b.jobs, 60 + usize::from(churn));
                assert!(b.median_us > 0.0 && b.p99_us >= b.median_us, "{b:?}");
            }
        }
    }
}
