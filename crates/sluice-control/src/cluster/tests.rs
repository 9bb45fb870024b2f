//! The controller's behaviour, and the relation to `sluice_policy` that `sluice alloc`
//! checks against.

mod lifecycle;

use std::collections::BTreeMap;

use sluice_policy::algo::Psfa;
use sluice_policy::{Allocator, Observation, Params, Round};

use super::*;

const CAPACITY: f64 = 10_000.0;

fn plan(name: &str, algorithm: &str, min_share: f64) -> PoolPlan {
    PoolPlan {
        name: name.to_owned(),
        capacity: CAPACITY,
        algorithm: algorithm.to_owned(),
        params: Params::new(),
        min_share,
        estimator: None,
        auto: None,
        tree: None,
    }
}

fn cluster(pools: Vec<PoolPlan>) -> Cluster {
    let mut cluster = Cluster::default();
    cluster.set_pools(pools).expect("valid pools");
    cluster
}

/// A job that asks for `demand` in pool `md` and was admitted `admitted`.
fn job(id: &str, demand: f64, admitted: f64) -> NodeJob {
    let obs = ChannelObs {
        arrivals: demand,
        admitted,
        demand,
        ..ChannelObs::default()
    };
    NodeJob {
        job: id.to_owned(),
        user: "u".to_owned(),
        pools: BTreeMap::from([("md".to_owned(), obs)]),
        ..NodeJob::default()
    }
}

fn allocation(cluster: &Cluster, id: &str) -> f64 {
    let view = cluster.jobs().into_iter().find(|j| j.job == id);
    view.map_or(0.0, |j| j.pools["md"].allocation)
}

/// By (node, job): the rate pushed for pool `md`.
fn pushed(rates: &[NodeRates]) -> BTreeMap<(String, String), f64> {
    let mut out = BTreeMap::new();
    for node in rates {
        for (job, pools) in &node.jobs {
            out.insert((node.node.clone(), job.clone()), pools["md"]);
        }
    }
    out
}

/// Computes cycle `cycle`: the rates pushed to nodes `a` and `b` for job `j`.
fn on_a_and_b(c: &mut Cluster, cycle: u64) -> (f64, f64) {
    let rates = pushed(&c.compute(cycle, 1.0).expect("computes"));
    (
        rates[&("a".into(), "j".into())],
        rates[&("b".into(), "j".into())],
    )
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Psfa applied directly: `f + psfa(C − F)`, as the module's docs say.
fn direct(jobs: &[Observation], min_share: f64) -> Vec<f64> {
    let floor = min_share * CAPACITY;
    let round = Round::new(CAPACITY - floor, 1.0, jobs).expect("valid round");
    let each = floor / jobs.len() as f64;
    Psfa::default()
        .allocate(&round)
        .into_iter()
        .map(|r| r + each)
        .collect()
}

fn observation(id: &str, limit: f64, usage: f64, arrivals: f64, weight: f64) -> Observation {
    Observation {
        weight: Some(weight),
        nodes: Some(1),
        ..Observation::new(id, limit, usage, arrivals)
    }
}

#[test]
fn two_jobs_share_the_capacity_as_psfa_does() {
    let mut c = cluster(vec![plan("md", "psfa", 0.1)]);
    c.report("n1", 1, true, vec![job("j1", 2_000.0, 1_500.0)], vec![]);
    c.report("n2", 1, true, vec![job("j2", 30_000.0, 8_000.0)], vec![]);
    let out = c.compute(1, 1.0).expect("computes");
    let (a1, a2) = (allocation(&c, "j1"), allocation(&c, "j2"));
    assert!(a1 + a2 <= CAPACITY * (1.0 + 1e-12));
    assert!(close(a1 + a2, CAPACITY));
    let want = direct(
        &[
            observation("j1", 2_000.0, 1_500.0, 2_000.0, 1.0),
            observation("j2", 30_000.0, 8_000.0, 30_000.0, 1.0),
        ],
        0.1,
    );
    assert!(
        close(a1, want[0]) && close(a2, want[1]),
        "{a1} {a2} {want:?}"
    );
    // Each job is on one node, which gets all of it.
    let rates = pushed(&out);
    assert!(close(rates[&("n1".into(), "j1".into())], a1));
    assert!(close(rates[&("n2".into(), "j2".into())], a2));
    let pool = &c.pools()[0];
    assert_eq!((pool.jobs, pool.used), (2, 9_500.0));
    assert!(close(pool.allocated, CAPACITY));
}

#[test]
fn drf_divides_one_pool_by_max_min_up_to_each_demand() {
    let mut c = cluster(vec![plan("md", "drf", 0.0)]);
    c.report("n1", 1, true, vec![job("j1", 2_000.0, 2_000.0)], vec![]);
    c.report("n2", 1, true, vec![job("j2", 30_000.0, 3_000.0)], vec![]);
    c.report("n3", 1, true, vec![job("j3", 5_000.0, 3_000.0)], vec![]);
    c.compute(1, 1.0).expect("computes");
    // j1's 2k met; the 8k left split evenly, short of both other demands.
    let got = ["j1", "j2", "j3"].map(|j| allocation(&c, j));
    let want = [2_000.0, 4_000.0, 4_000.0];
    assert!(got.iter().zip(want).all(|(g, w)| close(*g, w)), "{got:?}");
}

#[test]
fn a_job_is_split_among_its_nodes_by_demand() {
    let mut c = cluster(vec![plan("md", "psfa", 0.0)]);
    c.report("a", 1, true, vec![job("j", 3_000.0, 3_000.0)], vec![]);
    c.report("b", 1, true, vec![job("j", 1_000.0, 1_000.0)], vec![]);
    let (a, b) = on_a_and_b(&mut c, 1);
    let total = allocation(&c, "j");
    assert!(close(total, CAPACITY), "the only job gets everything");
    assert!(close(a, total * (0.025 + 0.95 * 0.75)));
    assert!(close(b, total * (0.025 + 0.95 * 0.25)));
    assert!(close(a + b, total));
    let view = &c.jobs()[0];
    assert_eq!(view.nodes, ["a", "b"]);
    // No reported node count: the two nodes it is seen on are its weight.
    assert_eq!(view.pools["md"].weight, 2.0);
}

/// Both nodes held (each estimates its demand from what it was admitted, up to 100
/// times that): the split follows what the job could use there, not the ratio of the
/// rates pushed before. Regression: node b, pushed 80/s first, stayed under 6 % of its
/// job for seconds while node a had the rest.
#[test]
fn a_node_held_below_its_jobs_other_node_catches_up_at_once() {
    let mut c = cluster(vec![plan("md", "psfa", 0.0)]);
    c.report("a", 1, true, vec![job("j", 376_000.0, 3_760.0)], vec![]);
    c.report("b", 1, true, vec![job("j", 8_000.0, 80.0)], vec![]);
    let (a, b) = on_a_and_b(&mut c, 1);
    assert!(
        close(a, CAPACITY / 2.0) && close(b, CAPACITY / 2.0),
        "{a} {b}"
    );
    // A node that wants less than the level gets all it wants, the other the rest.
    c.report("a", 2, true, vec![job("j", 1_000.0, 1_000.0)], vec![]);
    c.report("b", 2, true, vec![job("j", 100_000.0, 5_000.0)], vec![]);
    let (a, b) = on_a_and_b(&mut c, 2);
    let floor = 0.05 * CAPACITY / 2.0;
    assert!(close(a, floor + 1_000.0), "{a}");
    assert!(close(a + b, CAPACITY), "{a} {b}");
}

#[test]
fn only_changes_are_pushed() {
    let mut c = cluster(vec![plan("md", "psfa", 0.1)]);
    c.report("n1", 1, true, vec![job("j1", 2_000.0, 2_000.0)], vec![]);
    c.report("n2", 1, true, vec![job("j2", 2_000.0, 2_000.0)], vec![]);
    assert_eq!(c.compute(1, 1.0).expect("computes").len(), 2);
    assert!(c.compute(2, 1.0).expect("computes").is_empty());
    // A change below the tolerance is not pushed; one above it is, to both nodes
    // (j1's gain is j2's loss), and only for the pool that changed.
    c.report("n1", 3, false, vec![job("j1", 2_000.0, 2_000.5)], vec![]);
    assert!(c.compute(3, 1.0).expect("computes").is_empty());
    c.report("n1", 4, false, vec![job("j1", 2_000.0, 3_000.0)], vec![]);
    let out = c.compute(4, 1.0).expect("computes");
    assert_eq!(
        out.iter().map(|n| n.node.as_str()).collect::<Vec<_>>(),
        ["n1", "n2"]
    );
    // A node that connects again is sent everything.
    c.node_connected("n2");
    let out = c.compute(5, 1.0).expect("computes");
    assert_eq!(pushed(&out).len(), 1);
    assert_eq!(out[0].node, "n2");
}

#[test]
fn settings_reach_the_algorithm_per_pool_first() {
    let mut c = cluster(vec![plan("md", "psfa", 0.2), plan("bw", "psfa", 0.2)]);
    let set = |limit, weight| JobSetting {
        limit,
        weight,
        period_s: None,
    };
    c.set_job("j1", None, set(Some(1_000.0), Some(3.0)))
        .expect("valid");
    c.set_job("j1", Some("md"), set(Some(4_000.0), None))
        .expect("valid");
    c.set_job("j2", Some("md"), set(Some(6_000.0), None))
        .expect("valid");
    c.report("n1", 1, true, vec![job("j1", 9_000.0, 5_000.0)], vec![]);
    c.report("n2", 1, true, vec![job("j2", 9_000.0, 5_000.0)], vec![]);
    c.compute(1, 1.0).expect("computes");
    let jobs = c.jobs();
    let (md, bw) = (&jobs[0].pools["md"], &jobs[0].pools["bw"]);
    assert_eq!((md.limit, md.weight), (4_000.0, 3.0));
    assert_eq!((bw.limit, bw.weight), (1_000.0, 3.0));
    // No observation in `bw`: j2 is idle there, with the demand (0) as its limit.
    assert_eq!(jobs[1].pools["bw"].limit, 0.0);
    let want = direct(
        &[
            observation("j1", 4_000.0, 5_000.0, 9_000.0, 3.0),
            observation("j2", 6_000.0, 5_000.0, 9_000.0, 1.0),
        ],
        0.2,
    );
    assert!(close(md.allocation, want[0]) && close(jobs[1].pools["md"].allocation, want[1]));
    // Clearing the pool's setting falls back to the job's.
    c.set_job("j1", Some("md"), JobSetting::default())
        .expect("valid");
    assert_eq!(c.setting("j1", Some("md")), JobSetting::default());
    c.compute(2, 1.0).expect("computes");
    assert_eq!(c.jobs()[0].pools["md"].limit, 1_000.0);
    let bad = c
        .set_job("j1", None, set(None, Some(0.0)))
        .expect_err("weight 0");
    assert_eq!(
        bad.to_string(),
        "jobs.j1.weight: must be a finite number > 0"
    );
}

#[test]
fn pools_are_checked_and_keep_their_state_when_unchanged() {
    let mut c = Cluster::default();
    let fifo = c
        .set_pools(vec![plan("md", "fifo", 0.0)])
        .expect_err("no such algorithm");
    assert!(
        fifo.to_string()
            .starts_with("pools.md.algorithm: unknown algorithm \"fifo\""),
        "{fifo}"
    );
    let twice = c.set_pools(vec![plan("md", "psfa", 0.0), plan("md", "psfa", 0.0)]);
    assert_eq!(twice, Err(ClusterError::DuplicatePool("md".into())));
    let mut epsilon = plan("md", "psfa", 0.0);
    epsilon
        .params
        .set("epsilon", sluice_policy::ParamValue::Number(2.0));
    let bad = c.set_pools(vec![epsilon]).expect_err("bad epsilon");
    assert_eq!(
        bad.to_string(),
        "pools.md.params.epsilon: must be a number between 0 and 1"
    );
    assert!(c.pools().is_empty(), "nothing changes on error");

    // AdapTBF remembers that j1 lent to j2 and is paid back: unless it is rebuilt.
    let run = |reset: Option<&str>| {
        let mut c = cluster(vec![plan("md", "adaptbf", 0.0)]);
        c.report(
            "n",
            1,
            true,
            vec![job("j1", 1_000.0, 1_000.0), job("j2", 20_000.0, 5_000.0)],
            vec![],
        );
        c.compute(1, 1.0).expect("computes");
        if let Some(algorithm) = reset {
            c.set_pools(vec![plan("md", algorithm, 0.0)])
                .expect("valid");
            c.set_pools(vec![plan("md", "adaptbf", 0.0)])
                .expect("valid");
        }
        c.report("n", 2, false, vec![job("j1", 20_000.0, 1_000.0)], vec![]);
        c.compute(2, 1.0).expect("computes");
        (allocation(&c, "j1"), allocation(&c, "j2"))
    };
    let (kept, again, rebuilt) = (run(None), run(Some("adaptbf")), run(Some("psfa")));
    assert!(kept.0 > kept.1, "{kept:?}");
    assert_eq!(kept, again);
    assert_eq!(rebuilt, (5_000.0, 5_000.0));
}

/// An automatic pool: the latencies two nodes sample move its capacity (up while its
/// jobs use it and the p99 holds, down by the backoff when it does not), and the jobs
/// are given exactly the capacity in force.
#[test]
fn an_automatic_pool_follows_the_latency_its_nodes_report() {
    use sluice_core::segment::{Latency, latency_bucket};
    let auto = AutoCapacity {
        target_p99_s: 0.004,
        start: 1_000.0,
        min: 100.0,
        max: 100_000.0,
        step: 100.0,
        backoff: 0.5,
        from_server: false,
    };
    let mut c = cluster(vec![PoolPlan {
        auto: Some(auto),
        tree: None,
        ..plan("md", "psfa", 0.0)
    }]);
    let latency = |ns: u64| {
        let mut l = Latency::default();
        l.buckets[latency_bucket(ns)] = 15;
        BTreeMap::from([("md".to_owned(), l)])
    };
    let capacity = |c: &Cluster| c.pools()[0].capacity;
    assert_eq!(capacity(&c), 1_000.0);
    // Two nodes of 15 samples each: enough together, fast, and the jobs use it all.
    for node in ["n1", "n2"] {
        c.report(node, 1, true, vec![job(node, 5_000.0, 500.0)], vec![]);
        c.report_latency(node, latency(1_000_000));
    }
    c.compute(1, 1.0).unwrap();
    assert_eq!(capacity(&c), 1_100.0);
    assert!(close(allocation(&c, "n1") + allocation(&c, "n2"), 1_100.0));
    // No new samples: it holds.
    c.compute(2, 1.0).unwrap();
    assert_eq!(capacity(&c), 1_100.0);
    // One node slow beyond the target: the merged p99 misses it.
    c.report_latency("n1", latency(1_000_000));
    c.report_latency("n2", latency(20_000_000));
    c.compute(3, 1.0).unwrap();
    assert_eq!(capacity(&c), 550.0);
    assert!(c.pools()[0].latency_p99_s.unwrap() > 0.004);
    assert!(close(allocation(&c, "n1") + allocation(&c, "n2"), 550.0));
    // A plain pool again: back to its fixed capacity.
    c.set_pools(vec![plan("md", "psfa", 0.0)]).unwrap();
    c.compute(4, 1.0).unwrap();
    assert_eq!(capacity(&c), CAPACITY);
}

/// Under `reservations`, a job nobody gave a limit reserves nothing: the reserved job
/// gets its reservation, the others share what is left (with demand standing in for a
/// missing limit, their large demand would have scaled every reservation down).
#[test]
fn under_reservations_a_job_without_a_limit_reserves_nothing() {
    let mut c = cluster(vec![plan("md", "reservations", 0.0)]);
    c.set_job(
        "victim",
        Some("md"),
        JobSetting {
            limit: Some(6_000.0),
            ..JobSetting::default()
        },
    )
    .unwrap();
    c.report("n1", 1, true, vec![job("victim", 6_000.0, 2_000.0)], vec![]);
    c.report(
        "n2",
        1,
        true,
        vec![job("aggressor", 500_000.0, 4_000.0)],
        vec![],
    );
    c.compute(1, 1.0).unwrap();
    assert!(
        allocation(&c, "victim") >= 6_000.0 - 1e-6,
        "{}",
        allocation(&c, "victim")
    );
    assert!(allocation(&c, "aggressor") <= 4_000.0 + 1e-6);
}

/// A pool of `algorithm` with parameter `param` and a floor of 1 %.
fn fixed(algorithm: &str, param: (&str, f64)) -> PoolPlan {
    let mut plan = plan("md", algorithm, 0.01);
    plan.params
        .set(param.0, sluice_policy::ParamValue::Number(param.1));
    plan
}

/// PADLL's Uniform as the paper runs it: a job alone, and each of the jobs that join it,
/// at capacity / 4, with no floor on top and nothing taken away for the others.
#[test]
fn uniform_holds_every_job_at_its_fixed_rate_whatever_the_others_do() {
    let mut c = cluster(vec![fixed("uniform", ("jobs", 4.0))]);
    c.report("n1", 1, true, vec![job("j1", 9_000.0, 5_000.0)], vec![]);
    c.compute(1, 1.0).expect("computes");
    assert_eq!(allocation(&c, "j1"), CAPACITY / 4.0);
    c.report("n2", 2, true, vec![job("j2", 0.0, 0.0)], vec![]);
    c.report("n3", 2, true, vec![job("j3", 50_000.0, 2_500.0)], vec![]);
    c.compute(2, 1.0).expect("computes");
    for id in ["j1", "j2", "j3"] {
        assert_eq!(allocation(&c, id), CAPACITY / 4.0, "{id}");
    }
}

/// PADLL's Priority: each job at capacity × weight / total_weight, alone or not.
#[test]
fn priority_holds_every_job_at_its_weighted_rate() {
    let mut c = cluster(vec![fixed("priority", ("total_weight", 10.0))]);
    let weight = |w| JobSetting {
        weight: Some(w),
        ..JobSetting::default()
    };
    c.set_job("j1", None, weight(1.0)).expect("valid");
    c.set_job("j2", None, weight(4.0)).expect("valid");
    c.report("n1", 1, true, vec![job("j1", 9_000.0, 1_000.0)], vec![]);
    c.compute(1, 1.0).expect("computes");
    assert_eq!(allocation(&c, "j1"), 1_000.0);
    c.report("n2", 2, true, vec![job("j2", 9_000.0, 4_000.0)], vec![]);
    c.compute(2, 1.0).expect("computes");
    assert_eq!(allocation(&c, "j1"), 1_000.0);
    assert_eq!(allocation(&c, "j2"), 4_000.0);
}

/// A node of a fixed-rate job is cut: it keeps enforcing its part (fail-static), so the
/// job's other node gets the rest of the job's rate, and no other job moves.
#[test]
fn a_cut_node_counts_against_its_own_jobs_fixed_rate_only() {
    let mut c = cluster(vec![fixed("uniform", ("jobs", 2.0))]);
    c.report("a", 1, true, vec![job("j", 3_000.0, 3_000.0)], vec![]);
    c.report("b", 1, true, vec![job("j", 1_000.0, 1_000.0)], vec![]);
    c.report("c", 1, true, vec![job("k", 9_000.0, 5_000.0)], vec![]);
    let first = pushed(&c.compute(1, 1.0).expect("computes"));
    let on_b = first[&("b".into(), "j".into())];
    assert!(close(
        first[&("a".into(), "j".into())] + on_b,
        CAPACITY / 2.0
    ));
    c.node_disconnected("b", 2);
    // Even if a wants all of j now.
    c.report("a", 2, false, vec![job("j", 9_000.0, 3_000.0)], vec![]);
    let out = pushed(&c.compute(2, 1.0).expect("computes"));
    let on_a = out
        .get(&("a".into(), "j".into()))
        .copied()
        .unwrap_or(first[&("a".into(), "j".into())]);
    assert!(close(on_a, CAPACITY / 2.0 - on_b), "{on_a} + {on_b}");
    assert!(close(allocation(&c, "j"), CAPACITY / 2.0));
    assert_eq!(allocation(&c, "k"), CAPACITY / 2.0);
    assert!(!out.contains_key(&("c".into(), "k".into())), "k unchanged");
}

/// More jobs than the pool was set up for: the fixed rates would take more than the
/// capacity, so every one is scaled alike and the pool holds.
#[test]
fn fixed_rates_beyond_the_set_up_are_scaled_to_the_capacity() {
    let mut c = cluster(vec![fixed("uniform", ("jobs", 2.0))]);
    for (node, id) in [("n1", "j1"), ("n2", "j2"), ("n3", "j3")] {
        c.report(node, 1, true, vec![job(id, 9_000.0, 1_000.0)], vec![]);
    }
    c.compute(1, 1.0).expect("computes");
    for id in ["j1", "j2", "j3"] {
        assert!(close(allocation(&c, id), CAPACITY / 3.0), "{id}");
    }
}

/// What each estimator feeds PSFA as usageᵢ: the admitted rate, the arrivals or the
/// wait-inflated demand, as Algorithm 1 reads it.
#[test]
fn the_pools_estimator_is_what_the_algorithm_reads_as_load() {
    let obs = |arrivals, admitted, demand| ChannelObs {
        arrivals,
        admitted,
        demand,
        ..ChannelObs::default()
    };
    let report = |c: &mut Cluster| {
        for (node, id, o) in [
            ("n1", "j1", obs(3_000.0, 1_000.0, 6_000.0)),
            ("n2", "j2", obs(2_000.0, 2_000.0, 2_000.0)),
        ] {
            let mut j = job(id, 0.0, 0.0);
            j.pools.insert("md".into(), o);
            c.report(node, 1, true, vec![j], vec![]);
        }
    };
    let limits = |c: &mut Cluster| {
        for (id, limit) in [("j1", 4_000.0), ("j2", 5_000.0)] {
            let setting = JobSetting {
                limit: Some(limit),
                ..JobSetting::default()
            };
            c.set_job(id, None, setting).expect("valid");
        }
    };
    for (estimator, usage) in [
        (None, [1_000.0, 2_000.0]),
        (Some(Estimator::Usage), [1_000.0, 2_000.0]),
        (Some(Estimator::Arrivals), [3_000.0, 2_000.0]),
        (Some(Estimator::WaitInflated), [6_000.0, 2_000.0]),
    ] {
        let mut c = cluster(vec![PoolPlan {
            estimator,
            ..plan("md", "psfa", 0.0)
        }]);
        limits(&mut c);
        report(&mut c);
        c.compute(1, 1.0).expect("computes");
        let want = direct(
            &[
                observation("j1", 4_000.0, usage[0], 0.0, 1.0),
                observation("j2", 5_000.0, usage[1], 0.0, 1.0),
            ],
            0.0,
        );
        let got = [allocation(&c, "j1"), allocation(&c, "j2")];
        assert!(
            close(got[0], want[0]) && close(got[1], want[1]),
            "{estimator:?}: {got:?} vs {want:?}"
        );
    }
    let refused = Cluster::default().set_pools(vec![PoolPlan {
        estimator: Some(Estimator::Usage),
        ..plan("md", "uniform-share", 0.0)
    }]);
    assert_eq!(
        refused.map_err(|e| e.to_string()),
        Err("pools.md.estimator: uniform-share reads no load, so no estimator applies".into())
    );
}

fn period(p: f64) -> JobSetting {
    JobSetting {
        limit: None,
        weight: None,
        period_s: Some(p),
    }
}

#[test]
fn a_set10_pool_relays_a_set_on_each_node_in_its_order_of_service() {
    let mut c = cluster(vec![plan("md", "set10", 0.1)]);
    // a, b, c in set 2 (periods 40–60 s), k alone in set 0.
    for (id, p) in [("a", 40.0), ("b", 50.0), ("c", 60.0), ("k", 1.0)] {
        c.set_job(id, None, period(p)).expect("valid");
    }
    c.report("n1", 1, true, vec![job("a", 5_000.0, 0.0)], vec![]);
    c.compute(1, 1.0).expect("computes");
    // b and c begin their phases after a; c on another node.
    let n1 = vec![
        job("a", 5_000.0, 0.0),
        job("b", 5_000.0, 0.0),
        job("k", 100.0, 0.0),
    ];
    c.report("n1", 2, true, n1, vec![]);
    c.report("n2", 2, true, vec![job("c", 5_000.0, 0.0)], vec![]);
    let out = c.compute(2, 1.0).expect("computes");
    // The floor, 1,000, is 250 each; k's set takes its 100, set 2 the other 8,900: a
    // its 5,000, b the 3,900 left, c nothing.
    let rates = pushed(&out);
    assert!(
        close(rates[&("n1".into(), "a".into())], 5_250.0),
        "{rates:?}"
    );
    assert!(
        close(rates[&("n1".into(), "b".into())], 4_150.0),
        "{rates:?}"
    );
    let on = |node: &str| {
        out.iter()
            .find(|r| r.node == node)
            .map(|r| r.relays.clone())
            .unwrap_or_default()
    };
    // n1 holds a and b of set 2 (k's set of one hands nothing over); each may lend
    // what it has beyond its floor. n2 holds one job of the set: nothing to hand on.
    let n1 = on("n1");
    assert_eq!(n1.len(), 1, "{n1:?}");
    assert_eq!((n1[0].node.as_str(), n1[0].pool.as_str()), ("n1", "md"));
    let names: Vec<&str> = n1[0].jobs.iter().map(|(j, _)| j.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(close(n1[0].jobs[0].1, 5_000.0) && close(n1[0].jobs[1].1, 3_900.0));
    assert!(on("n2").is_empty());
    // Relays go every cycle, with no rate changed.
    c.report(
        "n1",
        3,
        true,
        vec![job("a", 5_000.0, 5_000.0), job("b", 5_000.0, 0.0)],
        vec![],
    );
    c.report("n2", 3, true, vec![job("c", 5_000.0, 0.0)], vec![]);
    let out = c.compute(3, 1.0).expect("computes");
    let n1 = out
        .iter()
        .find(|r| r.node == "n1")
        .expect("n1 is sent its relay");
    assert_eq!(n1.relays.len(), 1);
    // Other algorithms have no exclusive groups.
    let mut p = cluster(vec![plan("md", "psfa-held", 0.1)]);
    p.report(
        "n1",
        1,
        true,
        vec![job("a", 5_000.0, 0.0), job("b", 5_000.0, 0.0)],
        vec![],
    );
    let out = p.compute(1, 1.0).expect("computes");
    assert!(out.iter().all(|r| r.relays.is_empty()));
}

/// A job that asked unseen for a whole interval (its threads waited at its gate, or
/// were inside slow calls: nothing arrived, nothing was admitted) keeps the place its
/// phase took in its SET-10 set.
#[test]
fn a_job_that_asked_unseen_keeps_its_place_in_a_set10_set() {
    let queued = ChannelObs {
        waiting: 2,
        ..ChannelObs::default()
    };
    let inside = ChannelObs {
        in_flight: 2,
        ..ChannelObs::default()
    };
    for unseen in [queued, inside] {
        keeps_its_place_in_a_set10_set(unseen);
    }
}

fn keeps_its_place_in_a_set10_set(unseen: ChannelObs) {
    let label = format!("{unseen:?}");
    let mut c = cluster(vec![plan("md", "set10", 0.1)]);
    for id in ["q", "r"] {
        c.set_job(id, None, period(40.0)).expect("valid");
    }
    c.report("n1", 1, true, vec![job("q", 5_000.0, 0.0)], vec![]);
    c.compute(1, 1.0).expect("computes");
    // q asks unseen; r begins its phase.
    let unseen = NodeJob {
        pools: BTreeMap::from([("md".to_owned(), unseen)]),
        ..job("q", 0.0, 0.0)
    };
    c.report("n1", 2, true, vec![unseen, job("r", 5_000.0, 0.0)], vec![]);
    c.compute(2, 1.0).expect("computes");
    c.report(
        "n1",
        3,
        true,
        vec![job("q", 20_000.0, 0.0), job("r", 20_000.0, 0.0)],
        vec![],
    );
    c.compute(3, 1.0).expect("computes");
    // q's phase began first: it holds the set.
    let (q, r) = (allocation(&c, "q"), allocation(&c, "r"));
    assert!(
        close(q, 9_500.0) && close(r, 500.0),
        "{label}: q {q}, r {r}"
    );
}

/// The head of a SET-10 set held to a low rate whose calls waited at its gate the
/// whole interval is given more than that rate (as the wait-inflated estimate says of
/// a thread that waited all of an interval, ×100): read as only the rate it was held
/// to, it stayed there at the head of its set for as long as its calls waited. A job
/// whose calls were only inside the file system is given the rate it holds.
#[test]
fn a_set_head_held_low_whose_calls_waited_is_given_more() {
    let waited = ChannelObs {
        waiting: 2,
        wait: 2.0,
        ..ChannelObs::default()
    };
    let inside = ChannelObs {
        in_flight: 2,
        ..ChannelObs::default()
    };
    for (unseen, grows) in [(waited, true), (inside, false)] {
        let label = format!("{unseen:?}");
        let mut c = cluster(vec![plan("md", "set10", 0.1)]);
        for id in ["q", "r"] {
            c.set_job(id, None, period(40.0)).expect("valid");
        }
        // Both begin their phase; q, first by id, asks for little: it holds 10/s.
        c.report(
            "n1",
            1,
            true,
            vec![job("q", 10.0, 10.0), job("r", 20_000.0, 0.0)],
            vec![],
        );
        c.compute(1, 1.0).expect("computes");
        let held = allocation(&c, "q");
        let unseen = NodeJob {
            pools: BTreeMap::from([("md".to_owned(), unseen)]),
            ..job("q", 0.0, 0.0)
        };
        // A report of changes (a full one starts every placement afresh).
        c.report(
            "n1",
            2,
            false,
            vec![unseen, job("r", 20_000.0, 0.0)],
            vec![],
        );
        c.compute(2, 1.0).expect("computes");
        let now = allocation(&c, "q");
        // Waited: 100 × 510/s is more than the set holds; q, at its head, takes all of
        // it but r's floor. Inside: the 510/s it held, with its floor on top, as every
        // job's allocation has.
        let want = if grows { 9_500.0 } else { held + 500.0 };
        assert!(
            held < 1_000.0 && close(now, want),
            "{label}: q held {held}, then {now}"
        );
    }
}
