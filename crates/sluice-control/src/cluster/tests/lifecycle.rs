//! Jobs ending, nodes leaving and coming back, full reports.

use std::time::Duration;

use super::*;

fn two_nodes(stale_after: u64) -> Cluster {
    let tuning = Tuning {
        stale_after,
        ..Tuning::default()
    };
    let mut c = Cluster::new(tuning).expect("valid tuning");
    c.set_pools(vec![plan("md", "psfa", 0.1)]).expect("valid");
    c.report("n1", 1, true, vec![job("j1", 8_000.0, 8_000.0)], vec![]);
    c.report("n2", 1, true, vec![job("j2", 8_000.0, 2_000.0)], vec![]);
    c.compute(1, 1.0).expect("computes");
    c
}

#[test]
fn an_ended_job_releases_its_share() {
    let mut c = two_nodes(10);
    assert!(allocation(&c, "j2") > 0.0);
    c.report("n2", 2, false, vec![], vec!["j2".into()]);
    assert_eq!(c.jobs().len(), 1, "gone from the views at once");
    let out = c.compute(2, 1.0).expect("computes");
    assert!(close(allocation(&c, "j1"), CAPACITY));
    assert_eq!(
        pushed(&out).keys().collect::<Vec<_>>(),
        [&("n1".into(), "j1".into())]
    );
    assert_eq!(c.pools()[0].jobs, 1);
}

#[test]
fn a_disconnected_node_holds_its_rates_until_stale() {
    let mut c = two_nodes(3);
    let held = allocation(&c, "j2");
    c.node_disconnected("n2", 2);
    assert_eq!(c.locals(), 1);
    for cycle in 2..5 {
        // Not re-divided: j2 keeps what n2 enforces, j1 gets the rest.
        c.compute(cycle, 1.0).expect("computes");
        assert_eq!(allocation(&c, "j2"), held);
        assert!(close(allocation(&c, "j1"), CAPACITY - held));
        assert_eq!(c.pools()[0].held, held);
    }
    c.compute(5, 1.0).expect("computes");
    assert_eq!(
        c.jobs().iter().map(|j| j.job.as_str()).collect::<Vec<_>>(),
        ["j1"]
    );
    assert!(close(allocation(&c, "j1"), CAPACITY));
    assert_eq!(c.nodes().len(), 1);
}

/// A longer interval: the disconnection is renumbered with the cycles, so the node still
/// goes stale after `stale_after` cycles of the new interval (numbered in the old one, it
/// lay ahead of every new cycle and the node was never dropped).
#[test]
fn a_disconnected_node_goes_stale_in_cycles_of_a_new_interval() {
    let ms = Duration::from_millis;
    let mut c = two_nodes(3);
    c.node_disconnected("n2", 8);
    c.renumber_cycles(ms(250), ms(1000));
    c.compute(4, 1.0).expect("computes");
    assert_eq!(c.nodes().len(), 2, "two cycles down: held");
    c.compute(5, 1.0).expect("computes");
    assert_eq!(c.nodes().len(), 1, "three cycles down: dropped");
}

#[test]
fn cycles_renumber_to_the_one_their_boundary_falls_in() {
    let ms = Duration::from_millis;
    assert_eq!(
        renumber(7, ms(250), ms(1000)),
        1,
        "1.75 s lies in cycle 1 of 1 s"
    );
    assert_eq!(renumber(8, ms(250), ms(1000)), 2);
    assert_eq!(renumber(2, ms(1000), ms(250)), 8);
    assert_eq!(renumber(1_795_558_319, ms(1000), ms(1000)), 1_795_558_319);
    // Today's cycles of 100 ms, into 30 s: no overflow on the way.
    assert_eq!(renumber(17_955_583_190, ms(100), ms(30_000)), 59_851_943);
}

#[test]
fn a_job_on_a_lost_node_keeps_running_on_the_others() {
    let mut c = cluster(vec![plan("md", "psfa", 0.0)]);
    c.report("a", 1, true, vec![job("j", 1_000.0, 1_000.0)], vec![]);
    c.report("b", 1, true, vec![job("j", 1_000.0, 1_000.0)], vec![]);
    let first = pushed(&c.compute(1, 1.0).expect("computes"));
    let (a, b) = (
        first[&("a".into(), "j".into())],
        first[&("b".into(), "j".into())],
    );
    c.node_disconnected("b", 2);
    // j's part on a is what is left besides b's: unchanged, so nothing to push.
    assert!(c.compute(2, 1.0).expect("computes").is_empty());
    assert!(close(allocation(&c, "j"), CAPACITY));
    assert_eq!(c.jobs()[0].nodes, ["a", "b"]);
    // A new job on a shares what b does not hold with j's part there.
    c.report("a", 3, false, vec![job("k", 1_000.0, 1_000.0)], vec![]);
    let out = pushed(&c.compute(3, 1.0).expect("computes"));
    let on_a = out[&("a".into(), "j".into())] + out[&("a".into(), "k".into())];
    assert!(out[&("a".into(), "j".into())] < a);
    assert!(close(on_a, CAPACITY - b));
    assert!(!out.keys().any(|(node, _)| node == "b"));
}

#[test]
fn a_full_report_replaces_the_node() {
    let mut c = two_nodes(10);
    c.report("n1", 2, true, vec![job("j3", 100.0, 100.0)], vec![]);
    let out = c.compute(2, 1.0).expect("computes");
    let ids: Vec<String> = c.jobs().into_iter().map(|j| j.job).collect();
    assert_eq!(ids, ["j2", "j3"]);
    assert!(pushed(&out).contains_key(&("n1".into(), "j3".into())));
    assert!(!pushed(&out).contains_key(&("n1".into(), "j1".into())));
}

#[test]
fn a_partial_report_updates_only_what_it_lists() {
    let mut c = cluster(vec![plan("md", "psfa", 0.0), plan("bw", "psfa", 0.0)]);
    c.report("n", 1, true, vec![job("j", 1_000.0, 700.0)], vec![]);
    let mut bw = job("j", 0.0, 0.0);
    bw.pools = BTreeMap::from([(
        "bw".into(),
        ChannelObs {
            admitted: f64::NAN,
            demand: 50.0,
            ..ChannelObs::default()
        },
    )]);
    bw.launchers = 2;
    c.report("n", 2, false, vec![bw], vec![]);
    c.compute(2, 1.0).expect("computes");
    let view = &c.jobs()[0];
    assert_eq!(
        (view.pools["md"].rate, view.pools["md"].demand),
        (700.0, 1_000.0)
    );
    assert_eq!(
        (view.pools["bw"].rate, view.pools["bw"].demand),
        (0.0, 50.0)
    );
    assert_eq!(view.launchers, 2);
    assert_eq!(c.compute(3, 0.0), Err(ClusterError::Interval));
    assert_eq!(c.last_cycle(), Some(2));
}

#[test]
fn a_job_that_has_not_started_gets_its_floor() {
    let mut c = cluster(vec![plan("md", "psfa", 0.1)]);
    c.report("b", 1, true, vec![job("busy", 50_000.0, 10_000.0)], vec![]);
    c.compute(1, 1.0).expect("computes");
    assert!(close(allocation(&c, "busy"), CAPACITY));
    // b goes away holding the whole pool; a new, idle job still gets the floor.
    c.node_disconnected("b", 2);
    c.report("a", 2, true, vec![job("new", 0.0, 0.0)], vec![]);
    let out = pushed(&c.compute(2, 1.0).expect("computes"));
    assert_eq!(out[&("a".into(), "new".into())], 0.1 * CAPACITY);
    // Once b is back, the floor is split between the two, the idle one getting no more.
    c.node_connected("b");
    c.compute(3, 1.0).expect("computes");
    assert!(close(allocation(&c, "new"), 0.05 * CAPACITY));
    assert!(close(allocation(&c, "busy"), 0.95 * CAPACITY));
}

/// Every job's allocation in pool `md`, by id.
fn allocations(c: &Cluster) -> BTreeMap<String, f64> {
    c.jobs()
        .into_iter()
        .map(|j| (j.job.clone(), j.pools["md"].allocation))
        .collect()
}

#[test]
fn a_cluster_that_kept_its_grouping_through_changes_divides_as_a_fresh_one() {
    // What each node reports at each cycle: jobs come, spread to a second node, end,
    // and a node reports in full with fewer jobs; in between, cycles where nothing
    // moves reuse the grouping.
    let state: [Vec<(&str, Vec<NodeJob>)>; 6] = [
        vec![("n1", vec![job("b", 3_000.0, 3_000.0)])],
        vec![("n1", vec![job("b", 3_000.0, 3_000.0)])],
        vec![
            (
                "n1",
                vec![job("b", 3_000.0, 3_000.0), job("a", 9_000.0, 5_000.0)],
            ),
            (
                "n2",
                vec![job("a", 1_000.0, 1_000.0), job("c", 500.0, 500.0)],
            ),
        ],
        vec![
            (
                "n1",
                vec![job("b", 3_000.0, 3_000.0), job("a", 8_000.0, 5_000.0)],
            ),
            (
                "n2",
                vec![job("a", 1_000.0, 1_000.0), job("c", 500.0, 500.0)],
            ),
        ],
        vec![
            ("n1", vec![job("a", 8_000.0, 5_000.0)]),
            (
                "n2",
                vec![job("a", 2_000.0, 1_000.0), job("c", 500.0, 500.0)],
            ),
        ],
        vec![
            ("n1", vec![job("a", 8_000.0, 5_000.0)]),
            ("n2", vec![job("c", 700.0, 500.0)]),
        ],
    ];
    let mut kept = cluster(vec![plan("md", "psfa", 0.1)]);
    for (cycle, nodes) in (1..).zip(state) {
        let mut fresh = cluster(vec![plan("md", "psfa", 0.1)]);
        for (node, jobs) in nodes {
            kept.report(node, cycle, true, jobs.clone(), vec![]);
            fresh.report(node, cycle, true, jobs, vec![]);
        }
        kept.compute(cycle, 1.0).expect("computes");
        fresh.compute(cycle, 1.0).expect("computes");
        assert_eq!(allocations(&kept), allocations(&fresh), "cycle {cycle}");
    }
    // A node that goes and comes back changes the round's jobs too.
    kept.node_disconnected("n2", 7);
    kept.compute(7, 1.0).expect("computes");
    assert_eq!(kept.pools()[0].jobs, 1, "only a is left to divide among");
    kept.node_connected("n2");
    kept.report("n2", 8, false, vec![], vec![]);
    kept.compute(8, 1.0).expect("computes");
    assert_eq!(kept.pools()[0].jobs, 2);
    assert!(allocation(&kept, "c") > 0.0);
}

/// A global restarted from what the last one held: the node that reconnects first is
/// given only what the other still enforces leaves (a fresh global gave it the whole
/// pool, and the pool was exceeded until the other reported), and the other's rates go
/// once it reconnects or goes stale.
#[test]
fn a_restarted_global_counts_what_the_nodes_enforce_until_they_report() {
    let before = two_nodes(3);
    let held = before.held();
    let on_n2 = allocation(&before, "j2");
    assert_eq!(held.nodes["n2"]["j2"]["md"], on_n2);
    let text = serde_json::to_string(&held).expect("serialises");
    let held: Held = serde_json::from_str(&text).expect("reads back");

    let mut after = Cluster::new(Tuning {
        stale_after: 3,
        ..Tuning::default()
    })
    .expect("valid tuning");
    after
        .set_pools(vec![plan("md", "psfa", 0.1)])
        .expect("valid");
    assert_eq!(after.restore(held.clone(), 10), 2);
    after.report("n1", 10, true, vec![job("j1", 8_000.0, 8_000.0)], vec![]);
    after.compute(10, 1.0).expect("computes");
    assert!(close(allocation(&after, "j1"), CAPACITY - on_n2));
    assert_eq!(after.pools()[0].held, on_n2);
    assert_eq!(
        after.restore(held, 10),
        0,
        "known nodes are left as they are"
    );

    after.report("n2", 11, true, vec![job("j2", 8_000.0, 2_000.0)], vec![]);
    after.compute(11, 1.0).expect("computes");
    assert_eq!(after.pools()[0].held, 0.0);
    let sum = allocation(&after, "j1") + allocation(&after, "j2");
    assert!(close(sum, CAPACITY), "{sum}");
}

/// A node that never reconnects after the restart is dropped `stale_after` cycles after
/// it, as a node that lost its link is; pools the new policy lacks are left out.
#[test]
fn a_restored_node_that_never_reports_goes_stale() {
    let mut held = two_nodes(3).held();
    held.nodes
        .get_mut("n2")
        .expect("n2")
        .get_mut("j2")
        .expect("j2")
        .insert("gone".into(), 5.0);
    let mut after = cluster(vec![plan("md", "psfa", 0.1)]);
    after.set_stale_after(3);
    after.restore(held, 20);
    assert_eq!(
        after.held().nodes["n2"]["j2"].keys().collect::<Vec<_>>(),
        ["md"]
    );
    after.report("n1", 20, true, vec![job("j1", 8_000.0, 8_000.0)], vec![]);
    after.compute(22, 1.0).expect("computes");
    assert_eq!(after.nodes().len(), 2);
    after.compute(23, 1.0).expect("computes");
    assert_eq!(after.nodes().len(), 1);
    assert!(close(allocation(&after, "j1"), CAPACITY));
}
