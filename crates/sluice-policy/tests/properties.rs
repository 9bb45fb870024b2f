//! Invariants every algorithm keeps, over random inputs and sequences of intervals.

use proptest::prelude::*;
use sluice_policy::algo::{AdapTbf, AdapTbfNeed, Set10};
use sluice_policy::period::PeriodFrom;
use sluice_policy::registry::{self, ALGORITHMS, Params};
use sluice_policy::{Allocator, Observation, OpsBytes, Round};

/// A rate that is sometimes exactly zero: idle jobs are the interesting edge.
fn rate() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), 0.0..100_000.0]
}

fn job(i: usize) -> impl Strategy<Value = Observation> {
    (
        rate(),
        rate(),
        rate(),
        proptest::option::of(0.1..10.0f64),
        proptest::option::of(1..64u32),
        proptest::option::of(0.1..1000.0f64),
    )
        .prop_map(
            move |(limit, usage, arrivals, weight, nodes, period_s)| Observation {
                weight,
                nodes,
                period_s,
                ..Observation::new(format!("j{i}"), limit, usage, arrivals)
            },
        )
}

/// One interval: a subset of twelve possible jobs (the absent ones are inactive).
fn interval() -> impl Strategy<Value = Vec<Observation>> {
    (0..12usize)
        .map(|i| proptest::option::weighted(0.7, job(i)))
        .collect::<Vec<_>>()
        .prop_map(|jobs| jobs.into_iter().flatten().collect())
}

/// A pool, an interval length and a few intervals.
fn scenario() -> impl Strategy<Value = (f64, f64, Vec<Vec<Observation>>)> {
    (
        1.0..500_000.0f64,
        prop_oneof![Just(0.5), Just(1.0), Just(2.0)],
        proptest::collection::vec(interval(), 1..5),
    )
}

/// Like [`scenario`], over more intervals: the records of the token-lending algorithms
/// build up over a job's life.
fn long_scenario() -> impl Strategy<Value = (f64, f64, Vec<Vec<Observation>>)> {
    (
        // Metadata rates, and bandwidths in bytes/s, where a token is a byte.
        prop_oneof![1.0..500_000.0f64, 1e8..1e11f64],
        prop_oneof![Just(0.1), Just(0.5), Just(1.0), Just(2.0)],
        proptest::collection::vec(interval(), 1..30),
    )
}

fn scalar(name: &str) -> Box<dyn Allocator> {
    registry::find(name)
        .and_then(|spec| spec.build(&spec.sample_params()))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Runs `name` over the scenario's intervals; the rates of each.
fn run(
    name: &str,
    capacity: f64,
    interval_s: f64,
    intervals: &[Vec<Observation>],
) -> Vec<Vec<f64>> {
    let mut allocator = scalar(name);
    intervals
        .iter()
        .map(|jobs| {
            let round = Round::new(capacity, interval_s, jobs).expect("valid round");
            allocator.allocate(&round)
        })
        .collect()
}

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn rates_are_finite_non_negative_bounded_and_reproducible(
        (capacity, interval_s, intervals) in scenario()
    ) {
        for spec in &ALGORITHMS {
            let rates = run(spec.name, capacity, interval_s, &intervals);
            prop_assert_eq!(&rates, &run(spec.name, capacity, interval_s, &intervals));
            for (jobs, rates) in intervals.iter().zip(&rates) {
                prop_assert_eq!(rates.len(), jobs.len());
                prop_assert!(rates.iter().all(|r| r.is_finite() && *r >= 0.0), "{}", spec.name);
                let sum: f64 = rates.iter().sum();
                // static, uniform and priority give the fixed rates the administrator
                // set, whatever they add to (more jobs than the pool is set up for).
                if !matches!(spec.name, "static" | "uniform" | "priority") {
                    prop_assert!(sum <= capacity * (1.0 + 1e-9), "{}: {} > {}", spec.name, sum, capacity);
                }
                if matches!(spec.name, "psharing" | "psfa" | "psfa-held") && !jobs.is_empty() {
                    prop_assert!(near(sum, capacity), "{}: {} != {}", spec.name, sum, capacity);
                }
            }
        }
    }

    #[test]
    fn psharing_is_max_min_fair((capacity, _, intervals) in scenario()) {
        for (jobs, rates) in intervals.iter().zip(run("psharing", capacity, 1.0, &intervals)) {
            let limits: f64 = jobs.iter().map(|j| j.limit).sum();
            for (job, rate) in jobs.iter().zip(&rates) {
                if limits <= capacity {
                    // Every limit met; the rest handed out on top.
                    prop_assert!(*rate >= job.limit * (1.0 - 1e-9));
                } else {
                    // Nobody above its limit, and nobody held below its limit while
                    // another job gets more than it.
                    prop_assert!(*rate <= job.limit * (1.0 + 1e-9) + 1e-9);
                    if *rate < job.limit * (1.0 - 1e-9) {
                        prop_assert!(rates.iter().all(|other| *other <= rate * (1.0 + 1e-9) + 1e-9));
                    }
                }
            }
        }
    }

    #[test]
    fn adaptbf_hands_out_every_token_never_below_zero_and_records_balance(
        (capacity, interval_s, intervals) in long_scenario()
    ) {
        let mut tbf = AdapTbf::new();
        let total = (capacity * interval_s).floor();
        for jobs in &intervals {
            let rates = tbf.allocate(&Round::new(capacity, interval_s, jobs).expect("valid round"));
            let tokens: Vec<f64> = rates.iter().map(|r| r * interval_s).collect();
            // Whole tokens, none negative, an inactive job nothing.
            prop_assert!(tokens.iter().all(|t| *t >= 0.0 && near(*t, t.round())));
            for (job, t) in jobs.iter().zip(&tokens) {
                prop_assert!(job.arrivals > 0.0 || *t == 0.0);
            }
            // Never above the capacity; all of it whenever a job is active.
            prop_assert!(rates.iter().sum::<f64>() <= capacity * (1.0 + 1e-9));
            let sum: f64 = tokens.iter().map(|t| t.round()).sum();
            let active = jobs.iter().any(|j| j.arrivals > 0.0);
            prop_assert_eq!(sum, if active { total } else { 0.0 });
            // Every token lent is borrowed by someone (records are real numbers: up
            // to float rounding).
            let records: f64 = tbf.records().map(|(_, r)| r).sum();
            prop_assert!(records.abs() <= 1e-6 * total.max(1.0), "Σ r = {}", records);
        }
    }

    #[test]
    fn adaptbf_need_hands_out_every_token_and_records_balance(
        (capacity, interval_s, intervals) in long_scenario()
    ) {
        let mut tbf = AdapTbfNeed::new();
        for jobs in &intervals {
            let rates = tbf.allocate(&Round::new(capacity, interval_s, jobs).expect("valid round"));
            let tokens: Vec<f64> = rates.iter().map(|r| r * interval_s).collect();
            prop_assert!(tokens.iter().all(|t| *t >= 0.0 && near(*t, t.round())));
            let total: f64 = tokens.iter().map(|t| t.round()).sum();
            if jobs.iter().any(|j| j.arrivals > 0.0) {
                prop_assert_eq!(total, (capacity * interval_s).floor());
            } else {
                prop_assert_eq!(total, 0.0);
            }
            prop_assert_eq!(tbf.records().map(|(_, r)| r).sum::<i64>(), 0);
        }
    }

    #[test]
    fn drf_stays_within_both_capacities_and_each_demand(
        ops in 1.0..200_000.0f64,
        bytes in 1.0..1e10f64,
        demands in proptest::collection::vec((rate(), 0.0..1e10f64, proptest::option::of(0.1..10.0f64)), 0..12),
    ) {
        let jobs: Vec<Observation<OpsBytes>> = demands
            .iter()
            .enumerate()
            .map(|(i, &(o, b, weight))| {
                let arrivals = OpsBytes { ops: o, bytes: b };
                Observation { weight, ..Observation::new(format!("j{i}"), arrivals, arrivals, arrivals) }
            })
            .collect();
        let capacity = OpsBytes { ops, bytes };
        let round = Round::new(capacity, 1.0, &jobs).expect("valid round");
        let mut drf = registry::find("drf")
            .and_then(|s| s.build_ops_bytes(&Params::new()))
            .expect("drf divides two resources");
        let rates = drf.allocate(&round);
        prop_assert_eq!(&rates, &drf.allocate(&round));
        for (job, rate) in jobs.iter().zip(&rates) {
            prop_assert!(rate.ops.is_finite() && rate.ops >= 0.0 && rate.bytes.is_finite() && rate.bytes >= 0.0);
            prop_assert!(rate.ops <= job.arrivals.ops * (1.0 + 1e-9));
            prop_assert!(rate.bytes <= job.arrivals.bytes * (1.0 + 1e-9));
        }
        let used = [rates.iter().map(|r| r.ops).sum::<f64>(), rates.iter().map(|r| r.bytes).sum()];
        let full = [used[0] >= ops * (1.0 - 1e-9), used[1] >= bytes * (1.0 - 1e-9)];
        prop_assert!(used[0] <= ops * (1.0 + 1e-9) && used[1] <= bytes * (1.0 + 1e-9));
        // Progressive filling stops a job only at its demand or at an exhausted
        // resource it uses.
        for (job, rate) in jobs.iter().zip(&rates) {
            let met = rate.ops >= job.arrivals.ops * (1.0 - 1e-9) && rate.bytes >= job.arrivals.bytes * (1.0 - 1e-9);
            let blocked = (job.arrivals.ops > 0.0 && full[0]) || (job.arrivals.bytes > 0.0 && full[1]);
            prop_assert!(met || blocked, "{:?} got {:?}", job.arrivals, rate);
        }
    }

    #[test]
    fn drf_on_one_resource_is_weighted_max_min_capped_by_demand(
        (capacity, _, intervals) in scenario()
    ) {
        for (jobs, rates) in intervals.iter().zip(run("drf", capacity, 1.0, &intervals)) {
            let demand: f64 = jobs.iter().map(|j| j.arrivals).sum();
            prop_assert!(near(rates.iter().sum(), demand.min(capacity)));
            // A job held below its demand gets at least every other job's rate per
            // unit of weight.
            let level = |job: &Observation, rate: f64| rate / job.weight_or_one();
            for (job, rate) in jobs.iter().zip(&rates) {
                prop_assert!(*rate <= job.arrivals * (1.0 + 1e-9) + 1e-9);
                if *rate < job.arrivals * (1.0 - 1e-9) {
                    for (other, other_rate) in jobs.iter().zip(&rates) {
                        prop_assert!(level(other, *other_rate) <= level(job, *rate) * (1.0 + 1e-9) + 1e-9);
                    }
                }
            }
        }
    }
}

proptest! {
    // Fewer cases: each runs set10's detection over up to 2,500 intervals.
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn set10_silence_bounds_a_periodic_job_from_below_and_never_above_the_default(
        compute in 1..600u64,
        io in 1..40u64,
        offset in 0..640u64,
        cycles in 1..4u64,
    ) {
        // A job of period compute + io intervals of 100 ms, started `offset` intervals
        // into a cycle, beside a job of known period 10 ms (priority 100) asking for
        // the whole pool: the job's rate is 100 · p / (100 + p), p its set's priority.
        let dt = 0.1;
        let period = compute + io;
        let offset = offset % period;
        let mut silence = Set10::new().with_silence_bound();
        for t in 0..cycles * period + offset {
            let busy = (t + offset) % period >= compute;
            let jobs = [
                Observation { period_s: Some(0.01), ..Observation::new("k", 0.0, 0.0, 100.0) },
                Observation::new("j", 0.0, 0.0, if busy { 100.0 } else { 0.0 }),
            ];
            let rates = silence.allocate(&Round::new(100.0, dt, &jobs).expect("valid round"));
            let longest = silence.longest_silence("j").expect("seen");
            // Its silences are its compute phases, the first perhaps cut short: the
            // bound never passes the period, and is the compute phase once one whole
            // one has ended.
            prop_assert!(longest <= compute);
            if t >= compute + period - offset {
                prop_assert_eq!(longest, compute);
            }
            let detected = silence
                .period("j")
                .and_then(|p| p.placed_by)
                .is_some_and(|(_, from)| from == PeriodFrom::Detected);
            if busy && !detected {
                let decade = ((longest as f64 * dt).log10().round()) as i32;
                let bound = 10f64.powi(-decade);
                let p = if longest > 0 && bound < 1.0 / 50.0 { bound } else { 1.0 / 50.0 };
                prop_assert!((rates[1] - 100.0 * p / (100.0 + p)).abs() < 1e-9, "t {} {:?}", t, rates);
                // Never a higher priority than the default, nor a lower one than its
                // true set's (it is placed no later in the order than it belongs).
                let true_set = ((period as f64 * dt).log10().round()) as i32;
                prop_assert!(p <= 1.0 / 50.0 && p >= 10f64.powi(-true_set).min(1.0 / 50.0));
            }
        }
    }
}
