//! The worked examples of docs/algorithms.md, so that the document cannot drift from
//! the code.

use sluice_policy::algo::{
    Drf, FixedRate, Priority, PriorityShare, ProportionalSharing, Reservations, StaticLimits,
    Uniform, UniformShare,
};
use sluice_policy::{Allocator, Observation, OpsBytes, Round};

/// Jobs `a`, `b`, … with these limits and arrivals (usage = arrivals).
fn jobs(limits: &[f64], arrivals: &[f64]) -> Vec<Observation> {
    limits
        .iter()
        .zip(arrivals)
        .zip(["a", "b", "c", "d"])
        .map(|((&limit, &arrivals), id)| Observation::new(id, limit, arrivals, arrivals))
        .collect()
}

fn allocate(allocator: &mut dyn Allocator, capacity: f64, jobs: &[Observation]) -> Vec<f64> {
    allocator.allocate(&Round::new(capacity, 1.0, jobs).expect("valid round"))
}

#[test]
fn static_gives_each_job_its_limit_even_beyond_capacity() {
    let jobs = jobs(&[60_000.0, 70_000.0], &[0.0, 0.0]);
    assert_eq!(
        allocate(&mut StaticLimits, 110_000.0, &jobs),
        vec![60_000.0, 70_000.0]
    );
}

#[test]
fn uniform_holds_every_job_to_one_fixed_rate_even_alone() {
    let jobs = jobs(&[0.0; 4], &[0.0; 4]);
    // PADLL's §5.3: Max_R = 110 kops/s for four jobs, 27.5 kops/s each.
    let mut quarter = Uniform::new(FixedRate::Parts(4.0));
    assert_eq!(allocate(&mut quarter, 110_000.0, &jobs), vec![27_500.0; 4]);
    assert_eq!(
        allocate(&mut quarter, 110_000.0, &jobs[..1]),
        vec![27_500.0]
    );
    let mut fixed = Uniform::new(FixedRate::Rate(20_000.0));
    assert_eq!(allocate(&mut fixed, 110_000.0, &jobs), vec![20_000.0; 4]);
}

#[test]
fn uniform_share_splits_the_pool_among_the_active_jobs() {
    let jobs = jobs(&[0.0; 4], &[0.0; 4]);
    assert_eq!(
        allocate(&mut UniformShare, 110_000.0, &jobs),
        vec![27_500.0; 4]
    );
    assert_eq!(
        allocate(&mut UniformShare, 110_000.0, &jobs[..1]),
        vec![110_000.0]
    );
}

/// Jobs `a`, `b`, … with these weights.
fn weighted(weights: &[f64]) -> Vec<Observation> {
    weights
        .iter()
        .zip(["a", "b", "c", "d"])
        .map(|(&w, id)| Observation {
            weight: Some(w),
            ..Observation::new(id, 0.0, 0.0, 0.0)
        })
        .collect()
}

#[test]
fn priority_holds_each_job_to_its_weight_of_the_pool_set_up_for_even_alone() {
    // PADLL's Table 1, scenario 3: 40, 25, 30 and 15 kops/s of 110; job4 alone keeps 15.
    let jobs = weighted(&[40.0, 25.0, 30.0, 15.0]);
    let mut priority = Priority::new(FixedRate::Parts(110.0));
    assert_eq!(
        allocate(&mut priority, 110_000.0, &jobs),
        vec![40_000.0, 25_000.0, 30_000.0, 15_000.0]
    );
    assert_eq!(
        allocate(&mut priority, 110_000.0, &jobs[3..]),
        vec![15_000.0]
    );
    let mut per_weight = Priority::new(FixedRate::Rate(1_000.0));
    assert_eq!(
        allocate(&mut per_weight, 110_000.0, &jobs[3..]),
        vec![15_000.0]
    );
}

#[test]
fn priority_share_divides_the_pool_by_weight_among_the_active_jobs() {
    let jobs = weighted(&[1.0, 1.0, 3.0, 5.0]);
    assert_eq!(
        allocate(&mut PriorityShare, 110_000.0, &jobs),
        vec![11_000.0, 11_000.0, 33_000.0, 55_000.0]
    );
    assert_eq!(
        allocate(&mut PriorityShare, 110_000.0, &jobs[3..]),
        vec![110_000.0]
    );
}

#[test]
fn psharing_meets_every_limit_then_shares_the_rest_by_limit() {
    let jobs = jobs(&[10.0, 20.0, 30.0], &[0.0; 3]);
    assert_eq!(
        allocate(&mut ProportionalSharing, 90.0, &jobs),
        vec![15.0, 30.0, 45.0]
    );
}

#[test]
fn reservations_are_guaranteed_and_unused_capacity_handed_on() {
    // MB/s: a and b reserve 40 each, c nothing; a asks for 10, b for 70, c for 50.
    let jobs = jobs(&[40.0, 40.0, 0.0], &[10.0, 70.0, 50.0]);
    assert_eq!(
        allocate(&mut Reservations::new(false), 100.0, &jobs),
        vec![40.0, 40.0, 0.0]
    );
    assert_eq!(
        allocate(&mut Reservations::new(true), 100.0, &jobs),
        vec![10.0, 70.0, 20.0]
    );
    // Over-subscribed: 60 + 60 reserved on 100 are scaled to 50 + 50.
    let over = self::jobs(&[60.0, 60.0], &[100.0, 100.0]);
    assert_eq!(
        allocate(&mut Reservations::new(true), 100.0, &over),
        vec![50.0, 50.0]
    );
}

#[test]
fn drf_equalises_dominant_shares_across_metadata_and_bandwidth() {
    const MB: f64 = 1e6;
    let demand = |ops: f64, mb: f64| OpsBytes {
        ops,
        bytes: mb * MB,
    };
    // a is metadata-heavy (90 % of the ops), b streams (90 % of the bandwidth).
    let jobs = [
        Observation::new(
            "a",
            demand(0.0, 0.0),
            demand(0.0, 0.0),
            demand(90_000.0, 300.0),
        ),
        Observation::new(
            "b",
            demand(0.0, 0.0),
            demand(0.0, 0.0),
            demand(20_000.0, 900.0),
        ),
    ];
    let round = Round::new(demand(100_000.0, 1000.0), 1.0, &jobs).expect("valid round");
    let rates = Drf.allocate(&round);
    // Bandwidth runs out first, when both dominant shares reach 0.75.
    let close =
        |a: OpsBytes, b: OpsBytes| (a.ops - b.ops).abs() < 1e-6 && (a.bytes - b.bytes).abs() < 1e-3;
    assert!(close(rates[0], demand(75_000.0, 250.0)), "{rates:?}");
    assert!(close(rates[1], demand(50_000.0 / 3.0, 750.0)), "{rates:?}");
}

#[test]
fn drf_on_one_resource_is_max_min_up_to_demand() {
    let jobs = ["a", "b", "c"]
        .into_iter()
        .zip([10.0, 80.0, 80.0])
        .map(|(id, asks)| Observation::new(id, 0.0, 0.0, asks))
        .collect::<Vec<_>>();
    assert_eq!(allocate(&mut Drf, 100.0, &jobs), vec![10.0, 45.0, 45.0]);
}

/// A demand that dwarfs the pool (its share of the capacity overflows to infinity) is
/// still held to the capacity, on one resource and on two, and the other job still gets
/// its part of what it does not use.
#[test]
fn drf_holds_a_demand_that_dwarfs_the_pool() {
    let jobs = [
        Observation::new("huge", 0.0, 0.0, 1e300),
        Observation::new("small", 0.0, 0.0, 1e-301),
    ];
    let rates = allocate(&mut Drf, 1e-300, &jobs);
    assert!(rates[0] <= 1e-300 * (1.0 + 1e-9), "{rates:?}");
    assert_eq!(rates[1], 1e-301, "{rates:?}");
    let two = [Observation::new(
        "huge",
        OpsBytes::default(),
        OpsBytes::default(),
        OpsBytes {
            ops: 1e300,
            bytes: 1.0,
        },
    )];
    let capacity = OpsBytes {
        ops: 1e-300,
        bytes: 1e6,
    };
    let rates = Drf.allocate(&Round::new(capacity, 1.0, &two).expect("valid round"));
    assert!(
        rates[0].ops <= capacity.ops * (1.0 + 1e-9) && rates[0].bytes <= 1.0,
        "{rates:?}"
    );
}
