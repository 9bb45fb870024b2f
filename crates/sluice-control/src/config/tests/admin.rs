use sluice_core::rule::Rate;
use sluice_policy::Estimator;

use super::example;
use crate::config::{AdminError, AdminErrorKind, ControlConfig};

/// Runs `change` on the example and checks that it fails without changing anything.
fn refused(change: impl FnOnce(&mut ControlConfig) -> Result<(), AdminError>) -> AdminError {
    let mut config = example();
    let error = change(&mut config).unwrap_err();
    assert_eq!(config, example(), "{error}");
    assert!(!error.message.contains('\n'), "{error}");
    error
}

fn invalid(change: impl FnOnce(&mut ControlConfig) -> Result<(), AdminError>) -> String {
    let error = refused(change);
    assert_eq!(error.kind, AdminErrorKind::Invalid, "{error}");
    error.message
}

fn not_found(change: impl FnOnce(&mut ControlConfig) -> Result<(), AdminError>) -> String {
    let error = refused(change);
    assert_eq!(error.kind, AdminErrorKind::NotFound, "{error}");
    error.message
}

#[test]
fn pool_set_creates_and_replaces() {
    let mut config = example();
    config
        .pool_set(
            "home",
            "mount=/home/",
            "2k/s",
            "uniform",
            &["rate=500"],
            None,
            None,
        )
        .unwrap();
    assert_eq!(
        config.pools[2].rule().to_string(),
        "home: mount=/home rate=2k/s"
    );
    config
        .pool_set(
            "scratch-bw",
            "mount=/scratch",
            "20GiB/s",
            "psfa",
            &[] as &[&str],
            None,
            None,
        )
        .unwrap();
    let bw = config.pool("scratch-bw").unwrap();
    assert_eq!((bw.capacity, bw.min_share), (Rate::bytes(20 << 30), 0.05));
    assert!(bw.params.is_empty());
    assert_eq!(config.pools.len(), 3, "replaced in place");
}

#[test]
fn an_estimator_is_set_checked_and_defaults_to_the_papers() {
    let mut config = example();
    let none: &[&str] = &[];
    config
        .pool_set("md", "", "1k/s", "psfa", none, Some("arrivals"), None)
        .unwrap();
    let md = config.pool("md").unwrap();
    assert_eq!(md.estimator, Some(Estimator::Arrivals));
    assert_eq!(md.estimator_in_force(), Some(Estimator::Arrivals));
    // Set again without one: back to the algorithm's own.
    config
        .pool_set("md", "", "1k/s", "adaptbf", none, None, None)
        .unwrap();
    let md = config.pool("md").unwrap();
    assert_eq!(md.estimator, None);
    assert_eq!(md.estimator_in_force(), Some(Estimator::Arrivals));
    config
        .pool_set("md", "", "1k/s", "psfa", none, None, None)
        .unwrap();
    let psfa = config.pool("md").unwrap().estimator_in_force();
    assert_eq!(psfa, Some(Estimator::Usage));
    config
        .pool_set("md", "", "1k/s", "uniform", &["jobs=4"], None, None)
        .unwrap();
    assert_eq!(config.pool("md").unwrap().estimator_in_force(), None);
    assert_eq!(
        invalid(|c| c.pool_set("x", "", "1k/s", "psfa", none, Some("demand"), None)),
        "pool \"x\": estimator: unknown estimator \"demand\" (one of: usage, arrivals, \
         wait-inflated)"
    );
    assert_eq!(
        invalid(|c| c.pool_set("x", "", "1k/s", "uniform", &["jobs=4"], Some("usage"), None)),
        "pool \"x\": estimator: uniform reads no load, so no estimator applies"
    );
}

#[test]
fn pool_set_refuses_without_changing_anything() {
    let none: &[&str] = &[];
    assert_eq!(
        invalid(|c| c.pool_set("x", "", "1k/s", "fifo", none, None, None)),
        "pool \"x\": algorithm: unknown algorithm \"fifo\" (one of: static, uniform, \
         uniform-share, priority, priority-share, psharing, psfa, psfa-held, adaptbf, \
         adaptbf-bounded, adaptbf-need, set10, set10-silence, set10-ftio, reservations, drf)"
    );
    assert_eq!(
        invalid(|c| c.pool_set("x", "", "1k/s", "psfa", &["epsilon"], None, None)),
        "pool \"x\": params: \"epsilon\": expected NAME=NUMBER or NAME=true|false"
    );
    assert_eq!(
        invalid(|c| c.pool_set(
            "x",
            "",
            "1k/s",
            "psfa",
            &["epsilon=0.1", "epsilon=0.2"],
            None,
            None
        )),
        "pool \"x\": params: epsilon is given twice"
    );
    assert!(
        invalid(|c| c.pool_set("x", "clas=data", "1k/s", "psfa", none, None, None))
            .starts_with("pool \"x\": match: at column 1 ('clas=data'): expected a key")
    );
    // Job 4242 reserves 5k/s in scratch-md: a bandwidth is no place for it.
    assert_eq!(
        invalid(|c| c.pool_set("scratch-md", "", "1GiB/s", "psfa", none, None, None)),
        "job \"4242\" in pool \"scratch-md\": limit: 5k/s counts ops, but pool \"scratch-md\" \
         counts bytes (its capacity is 1GiB/s)"
    );
}

#[test]
fn pool_rm_takes_the_pools_job_settings_along() {
    let mut config = example();
    config.pool_rm("scratch-md").unwrap();
    assert!(config.pool("scratch-md").is_none());
    assert_eq!(config.jobs.len(), 1);
    assert_eq!(
        config.jobs[0].pool, None,
        "the settings for every pool stay"
    );
    assert_eq!(
        not_found(|c| c.pool_rm("nope")),
        "pool \"nope\": no such pool (pools: scratch-md, scratch-bw)"
    );
}

#[test]
fn rules_start_change_and_stop_by_name() {
    let mut config = example();
    config
        .rule_start("big: op=write size>=1MiB rate=100MiB/s")
        .unwrap();
    config
        .rule_change("cap-alice", "rate=3k/s burst=10")
        .unwrap();
    let lines: Vec<String> = config.rules.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "cap-alice: user=alice op=open rate=3k/s burst=10",
            "big: op=write size>=1MiB rate=100MiB/s"
        ]
    );
    config.rule_change("cap-alice", "rate=0/s").unwrap();
    assert_eq!(
        config.rules[0].to_string(),
        "cap-alice: user=alice op=open rate=0/s"
    );
    config.rule_stop("cap-alice").unwrap();
    assert_eq!(config.rules.len(), 1);
    assert_eq!(config.rules[0].name.as_deref(), Some("big"));
}

#[test]
fn rule_changes_refuse_without_changing_anything() {
    assert!(
        invalid(|c| c.rule_start("user=bob rate=1k/s"))
            .starts_with("rule: expected a name first ('NAME: …')")
    );
    assert!(
        invalid(|c| c.rule_start("bob: user=bob rat=1k/s"))
            .starts_with("rule: at column 15 ('rat=1k/s'): expected a key")
    );
    assert_eq!(
        invalid(|c| c.rule_start("cap-alice: rate=1k/s")),
        "rule \"cap-alice\": a rule has this name already (change it, or stop it first)"
    );
    assert_eq!(
        invalid(|c| c.rule_change("cap-alice", "user=bob rate=1k/s")),
        "rule \"cap-alice\": expected rate=RATE [burst=N] alone (a change keeps the conditions)"
    );
    assert!(
        invalid(|c| c.rule_change("cap-alice", "rate=1MiB/s"))
            .starts_with("rule \"cap-alice\": expected a rate in operations per second")
    );
    assert!(
        invalid(|c| c.rule_change("cap-alice", "rate=1k/s burst=0"))
            .starts_with("rule \"cap-alice\": at column 17 ('0'): expected a burst")
    );
    assert_eq!(
        not_found(|c| c.rule_change("nope", "rate=1k/s")),
        "rule \"nope\": no such rule"
    );
    assert_eq!(
        not_found(|c| c.rule_stop("nope")),
        "rule \"nope\": no such rule"
    );
}

#[test]
fn job_set_merges_with_the_entry_for_the_same_pool() {
    let mut config = example();
    config
        .job_set("4242", Some("scratch-md"), None, Some(4.0))
        .unwrap();
    config
        .job_set("4242", Some("scratch-bw"), Some("1GiB/s"), None)
        .unwrap();
    config.job_set("77", None, None, Some(0.5)).unwrap();
    let md = config.pool("scratch-md").unwrap().clone();
    let bw = config.pool("scratch-bw").unwrap().clone();
    assert_eq!(
        config.job_terms("4242", &md),
        (Some(Rate::ops(5_000)), Some(4.0))
    );
    assert_eq!(
        config.job_terms("4242", &bw),
        (Some(Rate::bytes(1 << 30)), Some(3.0))
    );
    assert_eq!(config.job_terms("77", &md), (None, Some(0.5)));
    assert_eq!(config.jobs.len(), 4);

    config.job_set("77", None, Some("2k/s"), None).unwrap();
    assert_eq!(config.job_terms("77", &md).0, Some(Rate::ops(2_000)));
    assert_eq!(
        config.job_terms("77", &bw).0,
        None,
        "an ops limit says nothing of bytes"
    );
}

#[test]
fn job_set_refuses_without_changing_anything() {
    assert_eq!(
        invalid(|c| c.job_set("4242", Some("scratch-md"), Some("5MiB/s"), None)),
        "job \"4242\" in pool \"scratch-md\": limit: 5MiB/s counts bytes, but pool \
         \"scratch-md\" counts ops (its capacity is 10k/s)"
    );
    assert_eq!(
        invalid(|c| c.job_set("9", Some("home"), None, Some(1.0))),
        "job \"9\" in pool \"home\": pool: no pool is named \"home\" (pools: scratch-md, scratch-bw)"
    );
    assert_eq!(
        invalid(|c| c.job_set("9", None, None, Some(f64::NAN))),
        "job \"9\": weight: must be a finite number > 0"
    );
    assert_eq!(
        invalid(|c| c.job_set("9", None, None, None)),
        "job \"9\": expected a limit, a weight or a period (or several)"
    );
}

#[test]
fn changes_survive_a_save_and_load() {
    let mut config = example();
    config.rule_start("slow: exe=dd rate=10/s burst=1").unwrap();
    config
        .pool_set(
            "tmp",
            "",
            "1k/s",
            "reservations",
            &["work_conserving=true"],
            Some("arrivals"),
            None,
        )
        .unwrap();
    assert_eq!(ControlConfig::parse(&config.to_toml()).unwrap(), config);
}
