//! The scenarios of the papers the algorithms follow, number for number.

use sluice_policy::algo::{AdapTbf, AdapTbfNeed, ProportionalSharing, Psfa, PsfaHeld};
use sluice_policy::{Allocator, Observation, Round};

/// PADLL's per-job QoS setting (Table 1): a metadata server taking Max_R = 110 kops/s
/// shared by four jobs whose demands add up to it.
const MAX_R: f64 = 110_000.0;
const DEMANDS: [(&str, f64); 4] = [
    ("job1", 15_000.0),
    ("job2", 25_000.0),
    ("job3", 30_000.0),
    ("job4", 40_000.0),
];

/// The jobs of `DEMANDS` named in `usage`, each using that much.
fn padll_jobs(usage: &[(&str, f64)]) -> Vec<Observation> {
    usage
        .iter()
        .map(|&(id, used)| {
            let demand = DEMANDS.iter().find(|d| d.0 == id).map_or(0.0, |d| d.1);
            Observation::new(id, demand, used, used)
        })
        .collect()
}

/// PADLL's four jobs with job1 dipped to 5 kops/s and job4, held at its 40, asking for 60.
fn job1_dipped_and_job4_asking_for_60() -> Vec<Observation> {
    let mut jobs = padll_jobs(&[
        ("job1", 5_000.0),
        ("job2", 25_000.0),
        ("job3", 30_000.0),
        ("job4", 40_000.0),
    ]);
    jobs[3].arrivals = 60_000.0;
    jobs
}

fn psfa(usage: &[(&str, f64)]) -> Vec<f64> {
    let jobs = padll_jobs(usage);
    Psfa::default().allocate(&Round::new(MAX_R, 1.0, &jobs).expect("valid round"))
}

fn assert_close(actual: &[f64], expected: &[f64]) {
    assert_eq!(actual.len(), expected.len());
    for (a, e) in actual.iter().zip(expected) {
        assert!((a - e).abs() < 1e-6, "{actual:?} != {expected:?}");
    }
}

#[test]
fn padll_psfa_jobs_at_their_demand_get_exactly_their_demand() {
    let rates = psfa(&DEMANDS);
    assert_eq!(rates, vec![15_000.0, 25_000.0, 30_000.0, 40_000.0]);
}

#[test]
fn padll_psfa_a_job_below_its_demand_keeps_room_to_grow_and_lends_the_rest() {
    // job1 uses 5 of its 15 kops/s: it is held at 5 + 0.25·10 = 7.5 kops/s (no false
    // allocation of the 10 it does not use); the 7.5 left go to all in proportion to
    // usage (5:25:30:40).
    let rates = psfa(&[
        ("job1", 5_000.0),
        ("job2", 25_000.0),
        ("job3", 30_000.0),
        ("job4", 40_000.0),
    ]);
    assert_eq!(rates, vec![7_875.0, 26_875.0, 32_250.0, 43_000.0]);
}

#[test]
fn padll_psfa_a_job_above_its_demand_is_held_to_it() {
    let rates = psfa(&[
        ("job1", 15_000.0),
        ("job2", 25_000.0),
        ("job3", 30_000.0),
        ("job4", 60_000.0),
    ]);
    assert_eq!(rates, vec![15_000.0, 25_000.0, 30_000.0, 40_000.0]);
}

#[test]
fn padll_psfa_when_a_job_ends_the_others_share_its_rate_by_usage() {
    let rates = psfa(&[("job2", 25_000.0), ("job3", 30_000.0), ("job4", 40_000.0)]);
    let left = MAX_R - 95_000.0;
    assert_close(
        &rates,
        &[
            25_000.0 + left * 25.0 / 95.0,
            30_000.0 + left * 30.0 / 95.0,
            40_000.0 + left * 40.0 / 95.0,
        ],
    );
    assert_eq!(psfa(&[("job4", 40_000.0)]), vec![MAX_R]);
}

/// job1 held at its 15 kops/s asks for 20, but a descheduled interval admitted only 14.
fn job1_dipped_while_asking_for_more() -> Vec<Observation> {
    let mut jobs = padll_jobs(&DEMANDS);
    jobs[0].usage = 14_000.0;
    jobs[0].arrivals = 20_000.0;
    jobs
}

#[test]
fn padll_psfa_reads_usage_alone_so_a_dip_costs_a_job_part_of_its_limit() {
    // Algorithm 1 sees usage 14 ≤ 15: job1 is given 14 + 0.25·1 = 14.25, and the 0.75
    // left go to all by usage (14:25:30:40), whatever job1 asked for.
    let jobs = job1_dipped_while_asking_for_more();
    let rates = Psfa::default().allocate(&Round::new(MAX_R, 1.0, &jobs).expect("valid round"));
    let more = |used: f64| 750.0 * used / 109_000.0;
    assert_close(
        &rates,
        &[
            14_250.0 + more(14_000.0),
            25_000.0 + more(25_000.0),
            30_000.0 + more(30_000.0),
            40_000.0 + more(40_000.0),
        ],
    );
}

#[test]
fn psfa_held_a_job_that_asked_for_its_reservation_keeps_it_through_a_dip() {
    // The same interval: psfa-held sees the 20 job1 asked for and keeps its reservation.
    let jobs = job1_dipped_while_asking_for_more();
    let rates = PsfaHeld::default().allocate(&Round::new(MAX_R, 1.0, &jobs).expect("valid round"));
    assert_eq!(rates, vec![15_000.0, 25_000.0, 30_000.0, 40_000.0]);
}

#[test]
fn psfa_held_gives_what_is_left_first_to_a_job_that_asked_for_more() {
    // job1 dips to 5 kops/s and is held at 7.5, and job4 asks for 60 while held to its
    // 40: the 7.5 left go to job4, not 1:5:6:8 to all (as `psfa` gives them), where jobs
    // 1–3 would leave them unused again.
    let mut jobs = job1_dipped_and_job4_asking_for_60();
    let rates = PsfaHeld::default().allocate(&Round::new(MAX_R, 1.0, &jobs).expect("valid round"));
    assert_eq!(rates, vec![7_500.0, 25_000.0, 30_000.0, 47_500.0]);
    let published = Psfa::default().allocate(&Round::new(MAX_R, 1.0, &jobs).expect("valid round"));
    assert_eq!(published, vec![7_875.0, 26_875.0, 32_250.0, 43_000.0]);
    // What it cannot use (it asked for 2 more) goes to all by usage, as in the paper.
    jobs[3].arrivals = 42_000.0;
    let rates = PsfaHeld::default().allocate(&Round::new(MAX_R, 1.0, &jobs).expect("valid round"));
    let more = |used: f64| 5_500.0 * used / 100_000.0;
    assert_close(
        &rates,
        &[
            7_500.0 + more(5_000.0),
            25_000.0 + more(25_000.0),
            30_000.0 + more(30_000.0),
            42_000.0 + more(40_000.0),
        ],
    );
}

#[test]
fn psfa_held_gives_more_of_what_is_left_to_a_job_held_longer() {
    // Job4 has asked for more than its 40 kops/s for four rounds; job3 asks for more in
    // the fifth only (a backlog after a lull, say). The 7.5 kops/s job1 leaves go to
    // them by usage times the rounds each has been held: 30·1 against 40·5.
    let mut jobs = job1_dipped_and_job4_asking_for_60();
    let mut psfa = PsfaHeld::default();
    for _ in 0..4 {
        psfa.allocate(&Round::new(MAX_R, 1.0, &jobs).expect("valid round"));
    }
    jobs[2].arrivals = 60_000.0;
    let rates = psfa.allocate(&Round::new(MAX_R, 1.0, &jobs).expect("valid round"));
    let share = |claim: f64| 7_500.0 * claim / (30_000.0 + 5.0 * 40_000.0);
    assert_close(
        &rates,
        &[
            7_500.0,
            25_000.0,
            30_000.0 + share(30_000.0),
            40_000.0 + share(5.0 * 40_000.0),
        ],
    );
    // A job that leaves is forgotten: an id reused starts afresh.
    psfa.forget("job4");
    let rates = psfa.allocate(&Round::new(MAX_R, 1.0, &jobs).expect("valid round"));
    let share = |claim: f64| 7_500.0 * claim / (2.0 * 30_000.0 + 40_000.0);
    assert_close(
        &rates,
        &[
            7_500.0,
            25_000.0,
            30_000.0 + share(2.0 * 30_000.0),
            40_000.0 + share(40_000.0),
        ],
    );
}

#[test]
fn padll_proportional_sharing_serves_small_demands_first() {
    // Demands above Max_R: job4 (60) is cut to what the others leave.
    let jobs = [
        Observation::new("job1", 15_000.0, 0.0, 0.0),
        Observation::new("job2", 25_000.0, 0.0, 0.0),
        Observation::new("job3", 30_000.0, 0.0, 0.0),
        Observation::new("job4", 60_000.0, 0.0, 0.0),
    ];
    let rates = ProportionalSharing.allocate(&Round::new(MAX_R, 1.0, &jobs).expect("valid round"));
    assert_eq!(rates, vec![15_000.0, 25_000.0, 30_000.0, 40_000.0]);
}

/// AdapTBF's setting: four jobs holding 10/10/30/50 % of the compute nodes, a server
/// of 1000 tokens/s, 1 s intervals.
fn adaptbf_step(tbf: &mut dyn Allocator, arrivals: [f64; 4]) -> Vec<f64> {
    let jobs: Vec<Observation> = [("a", 1), ("b", 1), ("c", 3), ("d", 5)]
        .iter()
        .zip(arrivals)
        .map(|(&(id, nodes), arrivals)| Observation {
            nodes: Some(nodes),
            ..Observation::new(id, 0.0, 0.0, arrivals)
        })
        .collect();
    tbf.allocate(&Round::new(1000.0, 1.0, &jobs).expect("valid round"))
}

/// The records of a, b, c, d, to the token (they are real numbers in `adaptbf`).
fn records(tbf: &AdapTbf) -> Vec<f64> {
    ["a", "b", "c", "d"]
        .iter()
        .map(|id| {
            let r = tbf.records().find(|r| r.0 == *id).map_or(0.0, |r| r.1);
            (r * 1000.0).round() / 1000.0
        })
        .collect()
}

#[test]
fn adaptbf_busy_jobs_get_their_priority_shares() {
    let mut tbf = AdapTbf::new();
    assert_eq!(
        adaptbf_step(&mut tbf, [1000.0; 4]),
        vec![100.0, 100.0, 300.0, 500.0]
    );
    assert!(tbf.records().all(|(_, r)| r == 0.0));
}

#[test]
fn adaptbf_the_surplus_goes_to_every_active_job_then_is_paid_back() {
    let mut tbf = AdapTbf::new();
    // d needs 100 of its 500 tokens; a bursts to 600. d's 400 surplus tokens go to all
    // four by DF = 6.6, 0.1, 0.3, 0.1: 371.83, 5.63, 16.90, 5.63 (d gets some back).
    let rates = adaptbf_step(&mut tbf, [600.0, 100.0, 300.0, 100.0]);
    assert_eq!(rates, vec![472.0, 106.0, 317.0, 105.0]);
    assert_eq!(records(&tbf), vec![-371.831, -5.634, -16.901, 394.366]);
    // d needs 600. J₊ = {d}, J₋ = {a, b, c}. u_d = 600/105: C = 0.5·(5.71 + 0)/2 = 1.43,
    // capped at 1: each debtor pays min(|r|, α_RD): a all its 100 tokens (not 142,
    // which would leave it at −42), b and c their whole debts (5.63, 16.90).
    let rates = adaptbf_step(&mut tbf, [600.0, 100.0, 300.0, 600.0]);
    assert_eq!(rates, vec![0.0, 94.0, 283.0, 623.0]);
    assert_eq!(records(&tbf), vec![-271.831, 0.0, 0.0, 271.831]);
    // Then a pays ⌊C·100⌋ a interval with C = 0.5·u_d/2 (u_d = 600/623, then 600/525,
    // then 600/528): 25, then 28 an interval.
    let rates = adaptbf_step(&mut tbf, [600.0, 100.0, 300.0, 600.0]);
    assert_eq!(rates, vec![75.0, 100.0, 300.0, 525.0]);
    for _ in 0..5 {
        let rates = adaptbf_step(&mut tbf, [600.0, 100.0, 300.0, 600.0]);
        assert_eq!(rates, vec![72.0, 100.0, 300.0, 528.0]);
    }
    assert_eq!(records(&tbf), vec![-106.831, 0.0, 0.0, 106.831]);
}

#[test]
fn adaptbf_shares_are_over_active_jobs() {
    let mut tbf = AdapTbf::new();
    // d has no arrivals: the 1000 tokens are shared by a, b, c as 1:1:3 (200, 200,
    // 600); b's and c's surplus (100 + 300) goes to all three by DF = 3.6, 0.1, 0.3.
    let rates = adaptbf_step(&mut tbf, [600.0, 100.0, 300.0, 0.0]);
    assert_eq!(rates, vec![560.0, 110.0, 330.0, 0.0]);
    assert_eq!(records(&tbf), vec![-360.0, 90.0, 270.0, 0.0]);
}

/// The records of a, b, c, d in `adaptbf-need`.
fn need_records(tbf: &AdapTbfNeed) -> Vec<i64> {
    ["a", "b", "c", "d"]
        .iter()
        .map(|id| tbf.records().find(|r| r.0 == *id).map_or(0, |r| r.1))
        .collect()
}

#[test]
fn adaptbf_need_a_burst_borrows_what_an_idle_job_lends() {
    let mut tbf = AdapTbfNeed::new();
    // d needs 100 of its 500 tokens; a bursts to 600 and borrows exactly the 400 it
    // lacks.
    let rates = adaptbf_step(&mut tbf, [600.0, 100.0, 300.0, 100.0]);
    assert_eq!(rates, vec![500.0, 100.0, 300.0, 100.0]);
    assert_eq!(need_records(&tbf), vec![-400, 0, 0, 400]);
}

#[test]
fn adaptbf_need_shares_are_over_active_jobs_and_surplus_goes_to_the_burst() {
    let mut tbf = AdapTbfNeed::new();
    // d has no arrivals: the 1000 tokens are shared by a, b, c as 1:1:3 (200, 200,
    // 600), and b's and c's surplus (100 + 300) is lent to a.
    let rates = adaptbf_step(&mut tbf, [600.0, 100.0, 300.0, 0.0]);
    assert_eq!(rates, vec![600.0, 100.0, 300.0, 0.0]);
    assert_eq!(need_records(&tbf), vec![-400, 100, 300, 0]);
}

#[test]
fn adaptbf_need_a_lender_is_paid_back_when_it_needs_its_tokens() {
    let mut tbf = AdapTbfNeed::new();
    adaptbf_step(&mut tbf, [600.0, 100.0, 300.0, 100.0]);
    // d needs all of its 500 and more; a, still bursting, has no surplus to lend, and
    // pays back from its 100 tokens what C = min(1, 100 lacking / 100 held) allows.
    let rates = adaptbf_step(&mut tbf, [600.0, 100.0, 300.0, 600.0]);
    assert_eq!(rates, vec![0.0, 100.0, 300.0, 600.0]);
    assert_eq!(need_records(&tbf), vec![-300, 0, 0, 300]);
    // Pay-back goes on, at most min(|r|, ⌊C·α_RD⌋) per interval, until the debt is
    // settled; then both are back to their priority shares.
    for _ in 0..3 {
        adaptbf_step(&mut tbf, [600.0, 100.0, 300.0, 600.0]);
    }
    assert_eq!(need_records(&tbf), vec![0, 0, 0, 0]);
    let rates = adaptbf_step(&mut tbf, [600.0, 100.0, 300.0, 600.0]);
    assert_eq!(rates, vec![100.0, 100.0, 300.0, 500.0]);
}

/// The input of docs/examples/alloc-psfa.json: (id, limit, usage, arrivals) per interval.
const ALLOC_PSFA_EXAMPLE: [&[(&str, f64, f64, f64)]; 3] = [
    &[
        ("j1", 15_000.0, 15_000.0, 15_000.0),
        ("j2", 25_000.0, 25_000.0, 26_000.0),
        ("j3", 30_000.0, 30_000.0, 30_000.0),
        ("j4", 40_000.0, 40_000.0, 52_000.0),
    ],
    &[
        ("j1", 15_000.0, 5_000.0, 5_000.0),
        ("j2", 25_000.0, 25_000.0, 26_000.0),
        ("j3", 30_000.0, 30_000.0, 30_000.0),
        ("j4", 40_000.0, 40_000.0, 52_000.0),
    ],
    &[
        ("j2", 25_000.0, 25_000.0, 26_000.0),
        ("j3", 30_000.0, 30_000.0, 30_000.0),
        ("j4", 40_000.0, 40_000.0, 52_000.0),
    ],
];

#[test]
fn psfa_and_psfa_held_on_the_worked_example_of_the_docs() {
    let mut published = Psfa::default();
    let mut held = PsfaHeld::default();
    let mut rates = (Vec::new(), Vec::new());
    for interval in ALLOC_PSFA_EXAMPLE {
        let jobs: Vec<Observation> = interval
            .iter()
            .map(|&(id, limit, usage, arrivals)| Observation::new(id, limit, usage, arrivals))
            .collect();
        let round = Round::new(MAX_R, 1.0, &jobs).expect("valid round");
        rates.0.push(published.allocate(&round));
        rates.1.push(held.allocate(&round));
    }
    let left = |used: f64, of: f64, share: f64| share * used / of;
    assert_eq!(rates.0[0], vec![15_000.0, 25_000.0, 30_000.0, 40_000.0]);
    assert_eq!(rates.0[1], vec![7_875.0, 26_875.0, 32_250.0, 43_000.0]);
    assert_close(
        &rates.0[2],
        &[
            25_000.0 + left(25.0, 95.0, 15_000.0),
            30_000.0 + left(30.0, 95.0, 15_000.0),
            40_000.0 + left(40.0, 95.0, 15_000.0),
        ],
    );
    assert_eq!(rates.1[0], vec![15_000.0, 25_000.0, 30_000.0, 40_000.0]);
    assert_close(&rates.1[1], &[7_500.0, 26_000.0, 30_000.0, 46_500.0]);
    assert_close(
        &rates.1[2],
        &[
            26_000.0 + left(25.0, 95.0, 2_000.0),
            30_000.0 + left(30.0, 95.0, 2_000.0),
            52_000.0 + left(40.0, 95.0, 2_000.0),
        ],
    );
}
