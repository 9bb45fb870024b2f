//! `adaptbf-need`: sluice's first AdapTBF, kept as a variant beside the published one
//! (`adaptbf`). It lends only what borrowers need and pays back what lenders lack, so
//! tokens move only towards demand; experiments compare the two.

use std::collections::BTreeMap;

use super::Allocator;
use super::adaptbf::node_basis;
use crate::obs::Round;
use crate::share::{apportion, water_fill};

/// AdapTBF lending only to need: every active job starts from a share of the
/// interval's tokens in proportion to its priority (compute nodes, or weight), lends
/// what it will not use to jobs that need more — no more than they need — and is paid
/// back, up to what it lacks, when it needs its tokens again.
///
/// All arithmetic that moves tokens is in whole tokens, so the allocations of an
/// interval sum exactly to ⌊T·Δt⌋ and every token lent is recorded as borrowed by
/// someone: the records always sum to zero. Records persist across intervals, also
/// while a job is inactive. See `docs/algorithms.md` (`adaptbf-need`) for the steps.
#[derive(Debug, Clone, Default)]
pub struct AdapTbfNeed {
    interval: u64,
    jobs: BTreeMap<String, Ledger>,
}

/// What AdapTBF remembers of one job.
#[derive(Debug, Clone, Copy, Default)]
struct Ledger {
    /// Tokens lent (positive) or borrowed (negative), net, since the job appeared.
    record: i64,
    /// Tokens allocated in the last interval the job was active, and that interval.
    last: Option<(u64, u64)>,
}

/// One active job's figures for this interval.
struct Active {
    /// Position in the round.
    index: usize,
    /// Whole tokens the job asks for this interval: ⌈arrivals · Δt⌉.
    demand: u64,
    /// Distribution factor DF.
    factor: f64,
    /// Tokens allocated so far: α, then α_RD, then after re-compensation.
    tokens: u64,
    /// Its record, updated as tokens move.
    record: i64,
}

impl AdapTbfNeed {
    /// A fresh instance with no records.
    pub fn new() -> Self {
        AdapTbfNeed::default()
    }

    /// Each job's record: tokens lent (positive) or borrowed (negative), net, by id.
    pub fn records(&self) -> impl Iterator<Item = (&str, i64)> {
        self.jobs.iter().map(|(id, l)| (id.as_str(), l.record))
    }

    /// Priority p, initial allocation α, demand d, utilisation u and distribution
    /// factor DF of every active job: steps 1–5 in `docs/algorithms.md`.
    fn assess(&self, round: &Round<'_>, total: u64) -> Vec<Active> {
        let jobs = round.jobs();
        let interval_s = round.interval_s();
        let active: Vec<usize> = (0..jobs.len())
            .filter(|&i| jobs[i].has_arrivals())
            .collect();
        // Nodes when given; else the weight when given; else one node.
        let basis = node_basis(jobs, &active);
        let sum: f64 = basis.iter().sum();
        let shares: Vec<f64> = basis.iter().map(|b| total as f64 * b / sum).collect();
        let initial = apportion(total, &shares, &vec![u64::MAX; active.len()]);
        active
            .iter()
            .zip(basis)
            .zip(initial)
            .map(|((&index, basis), alpha)| {
                let job = &jobs[index];
                let priority = basis / sum;
                let ledger = self.jobs.get(&job.id);
                // A job active in the last interval is measured against what it was
                // given then; a new or returning job against its initial allocation.
                let previous = ledger
                    .and_then(|l| l.last)
                    .filter(|&(at, _)| at + 1 == self.interval)
                    .map_or(alpha, |(_, tokens)| tokens);
                let demand = job.arrivals * interval_s;
                let utilisation = demand / previous.max(1) as f64;
                Active {
                    index,
                    demand: demand.ceil() as u64,
                    factor: if utilisation > 1.0 {
                        utilisation + utilisation * priority
                    } else {
                        utilisation * priority
                    },
                    tokens: alpha,
                    record: ledger.map_or(0, |l| l.record),
                }
            })
            .collect()
    }
}

/// Moves `amount` whole tokens from `givers` (each at most its cap, in proportion to
/// its cap) to `takers` (each at most its cap, in proportion to `shares`), keeping the
/// records straight: a giver's record rises by what it gives, a taker's falls by what
/// it takes.
fn transfer(active: &mut [Active], givers: &[(usize, u64)], takers: &[(usize, u64, f64)]) {
    let offered: u64 = givers.iter().map(|g| g.1).sum();
    let wanted: u64 = takers.iter().map(|t| t.1).sum();
    let amount = offered.min(wanted);
    if amount == 0 {
        return;
    }
    let give_caps: Vec<u64> = givers.iter().map(|g| g.1).collect();
    let give_shares: Vec<f64> = give_caps
        .iter()
        .map(|&c| amount as f64 * c as f64 / offered as f64)
        .collect();
    for (&(k, _), given) in givers
        .iter()
        .zip(apportion(amount, &give_shares, &give_caps))
    {
        active[k].tokens -= given;
        active[k].record += given as i64;
    }
    let take_caps: Vec<u64> = takers.iter().map(|t| t.1).collect();
    let take_shares = water_fill(
        amount as f64,
        &take_caps.iter().map(|&c| c as f64).collect::<Vec<_>>(),
        &takers.iter().map(|t| t.2).collect::<Vec<_>>(),
    );
    for (&(k, _, _), taken) in takers
        .iter()
        .zip(apportion(amount, &take_shares, &take_caps))
    {
        active[k].tokens += taken;
        active[k].record -= taken as i64;
    }
}

impl Allocator for AdapTbfNeed {
    fn forget(&mut self, job: &str) {
        self.jobs.remove(job);
    }

    fn allocate(&mut self, round: &Round<'_>) -> Vec<f64> {
        // T·Δt is rounded down to whole tokens: the allocations sum to exactly it.
        let total = (round.capacity() * round.interval_s()).floor() as u64;
        let mut active = self.assess(round, total);

        // Redistribution: surplus α − d of jobs that need less than α goes to the jobs
        // that need more, by distribution factor, each up to its need.
        let lenders: Vec<(usize, u64)> = active
            .iter()
            .enumerate()
            .filter(|(_, a)| a.tokens > a.demand)
            .map(|(k, a)| (k, a.tokens - a.demand))
            .collect();
        let borrowers: Vec<(usize, u64, f64)> = active
            .iter()
            .enumerate()
            .filter(|(_, a)| a.demand > a.tokens)
            .map(|(k, a)| (k, a.demand - a.tokens, a.factor))
            .collect();
        transfer(&mut active, &lenders, &borrowers);

        // Re-compensation: jobs owed tokens that still lack some reclaim them from the
        // jobs that owe, each debtor paying at most min(|r|, ⌊C·α_RD⌋). C is what the
        // creditors lack over what the debtors hold, capped at 1 so no debtor is taken
        // below zero.
        let creditors: Vec<(usize, u64, f64)> = active
            .iter()
            .enumerate()
            .filter(|(_, a)| a.record > 0 && a.demand > a.tokens)
            .map(|(k, a)| {
                let claim = (a.demand - a.tokens).min(a.record.unsigned_abs());
                (k, claim, claim as f64)
            })
            .collect();
        let lacking: u64 = creditors.iter().map(|c| c.1).sum();
        let held: u64 = active
            .iter()
            .filter(|a| a.record < 0)
            .map(|a| a.tokens)
            .sum();
        if lacking > 0 && held > 0 {
            let reclaim = (lacking as f64 / held as f64).min(1.0);
            let debtors: Vec<(usize, u64)> = active
                .iter()
                .enumerate()
                .filter(|(_, a)| a.record < 0)
                .map(|(k, a)| {
                    let bound = (reclaim * a.tokens as f64).floor() as u64;
                    (k, a.record.unsigned_abs().min(bound))
                })
                .collect();
            transfer(&mut active, &debtors, &creditors);
        }

        let now = self.interval;
        self.interval += 1;
        let mut rates = vec![0.0; round.jobs().len()];
        for a in &active {
            let id = &round.jobs()[a.index].id;
            let ledger = Ledger {
                record: a.record,
                last: Some((now, a.tokens)),
            };
            match self.jobs.get_mut(id) {
                Some(known) => *known = ledger,
                None => {
                    self.jobs.insert(id.clone(), ledger);
                }
            }
            rates[a.index] = a.tokens as f64 / round.interval_s();
        }
        rates
    }
}
