//! The algorithms named after a paper against plain transcriptions of the paper, on
//! random inputs: `psfa` against PADLL's Algorithm 1 line by line, `adaptbf` against
//! AdapTBF's equations (1)–(25) in whole tokens, and PADLL's `uniform` and `priority`
//! holding every job at its fixed rate whatever the others do.
//!
//! Each transcription is written from the paper, not from `src/`: one loop per line or
//! equation, the paper's names. Where the paper leaves something open or the printed
//! equation breaks, it takes the reading `docs/algorithms.md` states, and says so.

use std::collections::BTreeMap;

use proptest::prelude::*;
use sluice_policy::registry::{self, ParamValue, Params};
use sluice_policy::{Allocator, Observation, Round};

/// A rate that is sometimes exactly zero: idle jobs are the interesting edge.
fn rate() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), 0.0..100_000.0]
}

fn build(name: &str, params: &[(&str, f64)]) -> Box<dyn Allocator> {
    let mut p = Params::new();
    for &(param, value) in params {
        p.set(param, ParamValue::Number(value));
    }
    registry::find(name)
        .and_then(|spec| spec.build(&p))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// PADLL's Algorithm 1, line by line, on (demandᵢ, usageᵢ) of the active jobs given
/// in increasing order of demand (the order in which §4.2 says max-min fair sharing
/// serves them; ties by id, as sluice breaks every tie). Where every usage is 0, line
/// 13 divides by zero; the reading: left_R is split equally.
fn algorithm_1(max_r: f64, epsilon: f64, jobs: &[(f64, f64)]) -> Vec<f64> {
    let active = jobs.len();
    let usage: Vec<f64> = jobs.iter().map(|j| j.1).collect(); // 1
    let demand: Vec<f64> = jobs.iter().map(|j| j.0).collect();
    let mut rate = vec![0.0; active];
    let mut left_r = max_r; // 2
    for i in 0..active {
        // 3
        let fair_share = left_r / (active - i) as f64; // 4
        if usage[i] <= demand[i] {
            // 5
            let threshold = (demand[i] - usage[i]) * epsilon; // 6
            rate[i] = (usage[i] + threshold).min(fair_share); // 7
        } else {
            rate[i] = demand[i].min(fair_share); // 9
        }
        left_r -= rate[i]; // 10
    }
    let total_usage: f64 = usage.iter().sum(); // 11
    for i in 0..active {
        // 12
        let usage_proportion = if total_usage > 0.0 {
            usage[i] / total_usage // 13
        } else {
            1.0 / active as f64
        };
        rate[i] += usage_proportion * left_r; // 14
    }
    rate
}

/// One interval of up to twelve jobs, ids in any order, as (id, limit, usage).
fn padll_interval() -> impl Strategy<Value = Vec<(usize, f64, f64)>> {
    (
        (0..12usize)
            .map(|i| proptest::option::weighted(0.7, (Just(i), rate(), rate())))
            .collect::<Vec<_>>(),
        any::<bool>(),
    )
        .prop_map(|(jobs, reversed)| {
            let mut jobs: Vec<_> = jobs.into_iter().flatten().collect();
            if reversed {
                jobs.reverse();
            }
            jobs
        })
}

/// AdapTBF's state of one job between intervals, in the paper's names.
#[derive(Clone, Copy, Default)]
struct Record {
    /// r.
    r: f64,
    /// ρ, carried from step to step and interval to interval (21)–(22).
    rho: f64,
    /// α_RC of the last interval the job was active in, and that interval.
    last: Option<(usize, u64)>,
}

/// A record this close to zero is zero: the reading that keeps float error from putting
/// a job in J₊ or J₋ (a bound of 10⁻⁹ of a token per token of the interval).
fn settled(r: f64, n: u64) -> f64 {
    if r.abs() <= 1e-9 * (n as f64).max(1.0) {
        0.0
    } else {
        r
    }
}

/// (23)–(25) with the largest-remainder correction: floor α + ρ (an amount within
/// 10⁻⁹ of a whole token below counts as it), keep the new ρ; then one token more to
/// the job with the largest ρ while tokens are left, one fewer from the job with the
/// smallest ρ (that holds one) while too many were given — the reading for excess —
/// ties to the first job.
fn whole_tokens(alpha: &[f64], rho: &mut [f64], n: u64) -> Vec<u64> {
    let mut f: Vec<u64> = Vec::new();
    for x in 0..alpha.len() {
        let owed = alpha[x] + rho[x];
        let floor = (owed + 1e-9).floor().max(0.0); // (23)
        rho[x] = owed - floor; // (24)
        f.push(floor as u64); // (25)
    }
    while !f.is_empty() && f.iter().sum::<u64>() < n {
        let mut x = 0;
        for y in 1..f.len() {
            if rho[y] > rho[x] {
                x = y;
            }
        }
        f[x] += 1;
        rho[x] -= 1.0;
    }
    while f.iter().sum::<u64>() > n {
        let mut x = None;
        for y in 0..f.len() {
            if f[y] > 0 && x.is_none_or(|x: usize| rho[y] < rho[x]) {
                x = Some(y);
            }
        }
        let x = x.expect("tokens to take back");
        f[x] -= 1;
        rho[x] += 1.0;
    }
    f
}

/// One interval of AdapTBF, equations (1)–(25), on the jobs of `jobs` with arrivals
/// (nodes, arrivals per second): the whole tokens of each job (0 for an inactive one).
/// Arithmetic is written in the order the implementation uses where float rounding
/// could otherwise split a tie between two remainders differently (N·nₓ/Σn for T·pₓ·Δt,
/// T_s·DFₓ/ΣDF for DFₓ/ΣDF·T_s).
fn adaptbf_interval(
    records: &mut BTreeMap<String, Record>,
    now: usize,
    t: f64,
    dt: f64,
    jobs: &[(String, u32, f64)],
) -> Vec<u64> {
    let n = (t * dt).floor() as u64;
    // J: the jobs that issued RPCs during the period.
    let j: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].2 > 0.0).collect();
    let mut rec: Vec<Record> = j
        .iter()
        .map(|&i| records.get(&jobs[i].0).copied().unwrap_or_default())
        .collect();
    let mut rho: Vec<f64> = rec.iter().map(|r| r.rho).collect();
    let sum_n: f64 = j.iter().map(|&i| f64::from(jobs[i].1)).sum();
    let p: Vec<f64> = j.iter().map(|&i| f64::from(jobs[i].1) / sum_n).collect(); // (1)
    let alpha_raw: Vec<f64> = j
        .iter()
        .map(|&i| n as f64 * f64::from(jobs[i].1) / sum_n)
        .collect(); // (2)
    let alpha = whole_tokens(&alpha_raw, &mut rho, n);
    let d: Vec<f64> = j.iter().map(|&i| jobs[i].2 * dt).collect();
    // (3), with α^{t−1} the last interval's α_RC, or this α for a job not active then,
    // and at least one token (the reading where α = 0 would divide by zero).
    let u: Vec<f64> = (0..j.len())
        .map(|x| {
            let previous = match rec[x].last {
                Some((at, tokens)) if at + 1 == now => tokens,
                _ => alpha[x],
            };
            d[x] / previous.max(1) as f64
        })
        .collect();
    let ts_x: Vec<f64> = (0..j.len())
        .map(|x| {
            if alpha[x] as f64 > d[x] {
                alpha[x] as f64 - d[x]
            } else {
                0.0
            }
        })
        .collect(); // (4)
    let ts: f64 = ts_x.iter().sum(); // (5)
    let df: Vec<f64> = (0..j.len())
        .map(|x| {
            if u[x] > 1.0 {
                u[x] + u[x] * p[x]
            } else {
                u[x] * p[x]
            }
        })
        .collect(); // (6)
    let sum_df: f64 = df.iter().sum();
    let alpha_rd_raw: Vec<f64> = (0..j.len())
        .map(|x| alpha[x] as f64 - ts_x[x] + ts * df[x] / sum_df)
        .collect(); // (7)
    let alpha_rd = whole_tokens(&alpha_rd_raw, &mut rho, n);
    let r_rd: Vec<f64> = (0..j.len())
        .map(|x| settled(rec[x].r + ts_x[x] - ts * df[x] / sum_df, n))
        .collect(); // (8)
    let plus: Vec<usize> = (0..j.len())
        .filter(|&x| rec[x].r > 0.0 && r_rd[x] > 0.0)
        .collect(); // (9)
    let minus: Vec<usize> = (0..j.len())
        .filter(|&x| rec[x].r < 0.0 && r_rd[x] < 0.0)
        .collect(); // (10)
    let mut c = 0.0;
    for &x in &plus {
        let u_bar = d[x] / alpha_rd[x] as f64; // (12)
        c += p[x] * (u[x].max(1.0) + (1.0 - u_bar).max(0.0)) / 2.0; // (13)
    }
    // The reading where (14) would take more than a debtor holds: C at most 1.
    let c = c.min(1.0);
    let mut alpha_rc_raw: Vec<f64> = alpha_rd.iter().map(|&a| a as f64).collect();
    let mut r_rc = r_rd.clone();
    let mut t_r = 0.0;
    for &x in &minus {
        let t_r_x = rec[x].r.abs().min((c * alpha_rd[x] as f64 + 1e-9).floor()); // (14)
        alpha_rc_raw[x] -= t_r_x; // (15)
        r_rc[x] = settled(r_rd[x] + t_r_x, n); // (16)
        t_r += t_r_x; // (17)
    }
    let sum_rf: f64 = plus.iter().map(|&x| df[x]).sum(); // (18)
    for &x in &plus {
        let share = if sum_rf > 0.0 {
            t_r * df[x] / sum_rf
        } else {
            t_r / plus.len() as f64
        };
        alpha_rc_raw[x] += share; // (19)
        r_rc[x] = settled(r_rd[x] - share, n); // (20)
    }
    let alpha_rc = whole_tokens(&alpha_rc_raw, &mut rho, n);
    let mut tokens = vec![0; jobs.len()];
    for (x, &i) in j.iter().enumerate() {
        rec[x] = Record {
            r: r_rc[x],
            rho: rho[x],
            last: Some((now, alpha_rc[x])),
        };
        records.insert(jobs[i].0.clone(), rec[x]);
        tokens[i] = alpha_rc[x];
    }
    tokens
}

/// A storage target of whole tokens per second, Δt, and up to forty intervals of up to
/// six jobs of fixed node counts, each absent, idle or asking for up to twice the
/// target.
#[allow(clippy::type_complexity)]
fn adaptbf_run() -> impl Strategy<Value = (f64, f64, Vec<u32>, Vec<Vec<Option<f64>>>)> {
    (
        prop_oneof![10u32..200, 200u32..100_000].prop_map(f64::from),
        prop_oneof![Just(0.5), Just(1.0), Just(2.0)],
        proptest::collection::vec(1u32..9, 6),
    )
        .prop_flat_map(|(t, dt, nodes)| {
            let job = proptest::option::weighted(
                0.8,
                prop_oneof![Just(0.0), (1u32..(2 * t as u32)).prop_map(f64::from)],
            );
            let interval = proptest::collection::vec(job, 6);
            (
                Just(t),
                Just(dt),
                Just(nodes),
                proptest::collection::vec(interval, 1..40),
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn psfa_is_padll_algorithm_1(
        capacity in 1.0..500_000.0f64,
        epsilon in prop_oneof![Just(0.0), Just(0.25), Just(1.0), 0.0..=1.0f64],
        intervals in proptest::collection::vec(padll_interval(), 1..5),
    ) {
        let mut psfa = build("psfa", &[("epsilon", epsilon)]);
        for interval in &intervals {
            let jobs: Vec<Observation> = interval
                .iter()
                .map(|&(i, limit, usage)| Observation::new(format!("j{i:02}"), limit, usage, 0.0))
                .collect();
            let rates = psfa.allocate(&Round::new(capacity, 1.0, &jobs).expect("valid round"));
            let mut order: Vec<usize> = (0..jobs.len()).collect();
            order.sort_by(|&a, &b| jobs[a].limit.total_cmp(&jobs[b].limit).then(jobs[a].id.cmp(&jobs[b].id)));
            let sorted: Vec<(f64, f64)> = order.iter().map(|&k| (jobs[k].limit, jobs[k].usage)).collect();
            let paper = algorithm_1(capacity, epsilon, &sorted);
            for (pos, &k) in order.iter().enumerate() {
                prop_assert!(
                    (rates[k] - paper[pos]).abs() <= 1e-9 * capacity.max(1.0),
                    "{}: {} against Algorithm 1's {}", jobs[k].id, rates[k], paper[pos]
                );
            }
        }
    }

    #[test]
    fn adaptbf_is_the_printed_equations_in_whole_tokens((t, dt, nodes, intervals) in adaptbf_run()) {
        let mut adaptbf = build("adaptbf", &[]);
        let mut records = BTreeMap::new();
        for (now, interval) in intervals.iter().enumerate() {
            let present: Vec<(String, u32, f64)> = interval
                .iter()
                .enumerate()
                .filter_map(|(i, a)| a.map(|a| (format!("j{i}"), nodes[i], a)))
                .collect();
            let jobs: Vec<Observation> = present
                .iter()
                .map(|(id, n, a)| Observation { nodes: Some(*n), ..Observation::new(id.clone(), 0.0, 0.0, *a) })
                .collect();
            let rates = adaptbf.allocate(&Round::new(t, dt, &jobs).expect("valid round"));
            let tokens = adaptbf_interval(&mut records, now, t, dt, &present);
            let paper: Vec<f64> = tokens.iter().map(|&k| k as f64 / dt).collect();
            prop_assert_eq!(&rates, &paper, "interval {}", now);
        }
    }

    #[test]
    fn uniform_and_priority_hold_each_job_at_its_fixed_rate_whatever_the_others_do(
        capacity in 1.0..500_000.0f64,
        given_as_rate in any::<bool>(),
        fixed in 1.0..100_000.0f64,
        parts in 1u32..16,
        weight in 0.1..10.0f64,
        // Per interval: whether the job is there, what it does, and the others (absent,
        // idle or busy).
        intervals in proptest::collection::vec(
            (any::<bool>(), rate(), rate(), proptest::collection::vec(
                proptest::option::weighted(0.5, (rate(), rate(), proptest::option::of(0.1..10.0f64))), 8)),
            1..12),
    ) {
        let param = if given_as_rate { ("rate", fixed) } else { ("jobs", f64::from(parts)) };
        let mut uniform = build("uniform", &[param]);
        let param = if given_as_rate { ("rate", fixed) } else { ("total_weight", f64::from(parts)) };
        let mut priority = build("priority", &[param]);
        let unit = if given_as_rate { fixed } else { capacity / f64::from(parts) };
        for (present, usage, arrivals, others) in &intervals {
            let mut jobs: Vec<Observation> = others
                .iter()
                .enumerate()
                .filter_map(|(i, o)| o.map(|(usage, arrivals, weight)| Observation {
                    weight,
                    ..Observation::new(format!("other{i}"), usage, usage, arrivals)
                }))
                .collect();
            if *present {
                jobs.push(Observation { weight: Some(weight), ..Observation::new("me", *usage, *usage, *arrivals) });
            }
            let round = Round::new(capacity, 1.0, &jobs).expect("valid round");
            for (rate, job) in uniform.allocate(&round).iter().zip(&jobs) {
                prop_assert_eq!(*rate, unit, "uniform, {}", job.id);
            }
            for (rate, job) in priority.allocate(&round).iter().zip(&jobs) {
                prop_assert_eq!(*rate, unit * job.weight_or_one(), "priority, {}", job.id);
            }
        }
    }
}
