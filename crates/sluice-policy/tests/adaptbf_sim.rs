//! An offline, closed-loop simulation of AdapTBF's §IV-D/E/F setting: four jobs
//! holding 10/10/30/50 % of the compute nodes on one storage target; bursty
//! high-priority jobs beside a continuous low-priority one; the largest job turning
//! continuous late (its second process starting after a delay, as in §IV-F), so that
//! what it lent is paid back. Run with `--nocapture` to see the figures: per job
//! throughput, burst completion times, utilisation and the records over time for
//! `adaptbf` (as published), `adaptbf-need`, no control and static shares.
//!
//! The model: every interval each job first gets its new work (a trickle, a burst, or
//! an unbounded backlog), then asks for as much of its queue as its processes can
//! issue in an interval; it is served what it asks, up to its tokens. The controller
//! sets the tokens of an interval from what each job asked in the previous one, as the
//! paper's controller does from the last observation period.

use sluice_policy::algo::{AdapTbf, AdapTbfNeed};
use sluice_policy::{Allocator, Observation, Round};

/// Tokens per second of the storage target, and the paper's 100 ms interval: 1000
/// tokens an interval.
const CAPACITY: f64 = 10_000.0;
const DT: f64 = 0.1;
const TOKENS: u64 = 1000;
const INTERVALS: usize = 400;
/// The interval from which the largest job, d, also does continuous I/O.
const D_CONTINUOUS_FROM: usize = 250;

/// One job's I/O pattern.
struct Job {
    id: &'static str,
    nodes: u32,
    /// Tokens it can ask for in one interval (its processes' issue rate).
    issue: f64,
    /// Tokens of new work every interval between bursts.
    trickle: f64,
    /// (tokens, every, first): a burst of `tokens` every `every` intervals from `first`.
    burst: Option<(f64, usize, usize)>,
    /// From this interval on, an unbounded backlog.
    continuous_from: Option<usize>,
}

const JOBS: [Job; 4] = [
    // The continuous low-priority job of §IV-E.
    Job {
        id: "a",
        nodes: 1,
        issue: 1000.0,
        trickle: 0.0,
        burst: None,
        continuous_from: Some(0),
    },
    // Three bursty jobs with interleaved bursts of different sizes and periods.
    Job {
        id: "b",
        nodes: 1,
        issue: 400.0,
        trickle: 10.0,
        burst: Some((400.0, 25, 5)),
        continuous_from: None,
    },
    Job {
        id: "c",
        nodes: 3,
        issue: 800.0,
        trickle: 20.0,
        burst: Some((1500.0, 40, 12)),
        continuous_from: None,
    },
    Job {
        id: "d",
        nodes: 5,
        issue: 1000.0,
        trickle: 20.0,
        burst: Some((2500.0, 60, 30)),
        continuous_from: Some(D_CONTINUOUS_FROM),
    },
];

/// One interval of an algorithm: the rates, and the records of a, b, c, d after it.
type Step = dyn FnMut(&Round<'_>) -> (Vec<f64>, [f64; 4]);

/// How the tokens of an interval are set.
enum Control {
    /// No control: the target serves what is asked, shared in proportion to it when
    /// it cannot serve all (FCFS over a mixed RPC stream).
    NoBw,
    /// Fixed shares by node count, whether used or not.
    StaticBw,
    /// An algorithm, given what each job asked in the previous interval; returns the
    /// rates and the records of a, b, c, d after the interval.
    Algorithm(Box<Step>),
}

/// What one run gives.
struct Outcome {
    /// Tokens served per job.
    served: [f64; 4],
    /// Per burst of b, c, d: intervals from its arrival until it is served, all the
    /// job's work before it included.
    completion: [Vec<usize>; 4],
    /// Tokens served per interval per job.
    timeline: Vec<[f64; 4]>,
}

/// Runs the scenario under `control`; the outcome, and the records after every
/// interval (empty without an algorithm).
fn simulate(mut control: Control) -> (Outcome, Vec<[f64; 4]>) {
    let mut queue = [0.0f64; 4];
    let mut asked_before = [0.0f64; 4];
    // Per job: the bursts not yet served, as (interval, tokens arrived by its end).
    let mut pending: [Vec<(usize, f64)>; 4] = Default::default();
    let mut arrived = [0.0f64; 4];
    let mut completion: [Vec<usize>; 4] = Default::default();
    let mut served_total = [0.0; 4];
    let mut timeline = Vec::with_capacity(INTERVALS);
    let mut record_timeline = Vec::with_capacity(INTERVALS);
    for k in 0..INTERVALS {
        let mut ask = [0.0; 4];
        for (j, job) in JOBS.iter().enumerate() {
            if job.continuous_from.is_some_and(|from| k >= from) {
                queue[j] = f64::INFINITY;
            } else {
                queue[j] += job.trickle;
                arrived[j] += job.trickle;
                if let Some((tokens, every, first)) = job.burst
                    && k >= first
                    && (k - first) % every == 0
                {
                    queue[j] += tokens;
                    arrived[j] += tokens;
                    pending[j].push((k, arrived[j]));
                }
            }
            ask[j] = queue[j].min(job.issue);
        }
        let tokens: [f64; 4] = match &mut control {
            Control::NoBw => {
                let sum: f64 = ask.iter().sum();
                let scale = if sum > TOKENS as f64 {
                    TOKENS as f64 / sum
                } else {
                    1.0
                };
                ask.map(|a| a * scale)
            }
            Control::StaticBw => {
                let nodes: u32 = JOBS.iter().map(|j| j.nodes).sum();
                let mut t = [0.0; 4];
                for (j, job) in JOBS.iter().enumerate() {
                    t[j] = TOKENS as f64 * f64::from(job.nodes) / f64::from(nodes);
                }
                t
            }
            Control::Algorithm(step) => {
                let jobs: Vec<Observation> = JOBS
                    .iter()
                    .zip(asked_before)
                    .map(|(job, asked)| Observation {
                        nodes: Some(job.nodes),
                        ..Observation::new(job.id, 0.0, 0.0, asked / DT)
                    })
                    .collect();
                let round = Round::new(CAPACITY, DT, &jobs).expect("valid round");
                let (rates, records) = step(&round);
                assert!(rates.iter().sum::<f64>() <= CAPACITY * (1.0 + 1e-9));
                let mut t = [0.0; 4];
                for (j, rate) in rates.iter().enumerate() {
                    // A job silent in the last interval has no rule yet: like Lustre's
                    // fallback queue, it is served from what the others leave.
                    t[j] = rate * DT;
                }
                let left = TOKENS as f64 - t.iter().zip(&ask).map(|(t, a)| t.min(*a)).sum::<f64>();
                let silent: f64 = (0..4)
                    .filter(|&j| asked_before[j] == 0.0)
                    .map(|j| ask[j])
                    .sum();
                if silent > 0.0 {
                    for j in (0..4).filter(|&j| asked_before[j] == 0.0) {
                        t[j] = ask[j] * (left / silent).min(1.0);
                    }
                }
                record_timeline.push(records);
                t
            }
        };
        let mut served = [0.0; 4];
        for j in 0..4 {
            served[j] = ask[j].min(tokens[j]);
            queue[j] -= served[j];
            served_total[j] += served[j];
            // Each job's work is served in order: a burst is done when everything that
            // had arrived by its end is.
            while let Some(&(at, by)) = pending[j].first()
                && served_total[j] >= by - 1e-6
            {
                completion[j].push(k + 1 - at);
                pending[j].remove(0);
            }
        }
        asked_before = ask;
        timeline.push(served);
    }
    (
        Outcome {
            served: served_total,
            completion,
            timeline,
        },
        record_timeline,
    )
}

fn mean(xs: &[usize]) -> f64 {
    xs.iter().sum::<usize>() as f64 / xs.len().max(1) as f64
}

/// One row of the summary: utilisation, tokens/s per job, burst completion, and each
/// job's share of the target once d is continuous too.
fn report(name: &str, outcome: &Outcome) {
    let seconds = INTERVALS as f64 * DT;
    let total: f64 = outcome.served.iter().sum();
    let late = |j: usize| {
        outcome.timeline[D_CONTINUOUS_FROM..]
            .iter()
            .map(|s| s[j])
            .sum::<f64>()
            / ((INTERVALS - D_CONTINUOUS_FROM) as f64 * TOKENS as f64)
    };
    let burst = |j: usize| {
        let c = &outcome.completion[j];
        format!("{:.1}/{}", mean(c), c.iter().max().unwrap_or(&0))
    };
    println!(
        "{name:<13} {:>5.1} | {:>5.0} {:>5.0} {:>5.0} {:>5.0} | {:>6} {:>6} {:>6} | {:.2} {:.2} {:.2} {:.2}",
        100.0 * total / (TOKENS as f64 * INTERVALS as f64),
        outcome.served[0] / seconds,
        outcome.served[1] / seconds,
        outcome.served[2] / seconds,
        outcome.served[3] / seconds,
        burst(1),
        burst(2),
        burst(3),
        late(0),
        late(1),
        late(2),
        late(3),
    );
}

/// Runs `allocator` through the scenario, reading its records with `records` after
/// every interval: the Allocator trait has no way to report them, so the simulation
/// holds the concrete type.
fn run<A: Allocator + 'static>(
    mut allocator: A,
    records: impl Fn(&A) -> Vec<(String, f64)> + 'static,
) -> (Outcome, Vec<[f64; 4]>) {
    simulate(Control::Algorithm(Box::new(move |round: &Round<'_>| {
        let rates = allocator.allocate(round);
        let all = records(&allocator);
        let mut out = [0.0; 4];
        for (j, job) in JOBS.iter().enumerate() {
            out[j] = all.iter().find(|(id, _)| id == job.id).map_or(0.0, |r| r.1);
        }
        (rates, out)
    })))
}

#[test]
fn adaptbf_lends_to_the_continuous_job_and_is_paid_back() {
    // For the paper's algorithm, also what d received once continuous: by
    // re-compensation (19), and by redistribution beyond its α (7).
    let received = std::rc::Rc::new(std::cell::Cell::new((0usize, 0.0f64, 0.0f64)));
    let seen = received.clone();
    let paper = run(AdapTbf::traced(), move |a| {
        let (k, mut paid, mut lent) = seen.get();
        if let Some(d) = a
            .last_interval()
            .and_then(|l| l.jobs.iter().find(|j| j.id == "d"))
            && k >= D_CONTINUOUS_FROM
        {
            paid -= d.reclaimed;
            lent += d.redistributed as f64 - d.initial as f64;
        }
        seen.set((k + 1, paid, lent));
        a.records().map(|(id, r)| (id.to_owned(), r)).collect()
    });
    let need = run(AdapTbfNeed::new(), |a| {
        a.records()
            .map(|(id, r)| (id.to_owned(), r as f64))
            .collect()
    });
    let (none, _) = simulate(Control::NoBw);
    let (fixed, _) = simulate(Control::StaticBw);

    println!();
    println!(
        "{:<13} {:>5} | {:>23} | {:>20} | shares from 25 s: a, b, c, d",
        "set-up", "util%", "tokens/s a, b, c, d", "burst ivals b, c, d"
    );
    report("no control", &none);
    report("static", &fixed);
    report("adaptbf", &paper.0);
    report("adaptbf-need", &need.0);
    println!("records (a, b, c, d) every 25 intervals: adaptbf | adaptbf-need");
    for k in (0..INTERVALS).step_by(25).chain([INTERVALS - 1]) {
        let (p, n) = (paper.1[k], need.1[k]);
        println!(
            "  {k:>3}  {:>7.0} {:>6.0} {:>6.0} {:>7.0}  | {:>7.0} {:>6.0} {:>6.0} {:>7.0}",
            p[0], p[1], p[2], p[3], n[0], n[1], n[2], n[3]
        );
    }

    let (_, paid, lent) = received.get();
    println!(
        "adaptbf, from 25 s: d paid back {paid:.0} tokens (19), net {lent:.0} by redistribution (7)"
    );

    for (name, (outcome, records)) in [("adaptbf", &paper), ("adaptbf-need", &need)] {
        // Lending: before d turns continuous, d (a lender while it trickles) is owed
        // tokens and a (the continuous job) owes them.
        let before = records[D_CONTINUOUS_FROM - 1];
        assert!(before[3] > 0.0 && before[0] < 0.0, "{name}: {before:?}");
        // Pay-back: once d is continuous, its claim shrinks.
        let after = records[INTERVALS - 1];
        assert!(after[3] < before[3], "{name}: {before:?} then {after:?}");
        // Work-conserving: more of the target used than with static shares.
        let used: f64 = outcome.served.iter().sum();
        assert!(used > fixed.served.iter().sum::<f64>(), "{name}");
        // The high-priority bursts are served sooner than without control, where the
        // continuous job crowds them.
        for j in [2, 3] {
            assert!(
                mean(&outcome.completion[j]) < mean(&none.completion[j]),
                "{name}: {}",
                JOBS[j].id
            );
        }
    }
}
