//! Hand-over within an interval: the jobs of an exclusive group (SET-10's sets) take a
//! pool one after another, in the order the algorithm gave; the rates it computed hold
//! for a whole interval, so a job whose I/O phase ends early in one would leave its
//! rate unused until the controller sees it idle, an interval or two later. Between
//! two rounds the local controller watches the group's jobs on its node a few times
//! per interval and lends what a job that stopped asking may lend to the next job in
//! the order that asks, taking it back the moment the lender asks again. The rates
//! always add up to what was pushed; a lend lasts until the next interval begins,
//! when the new round decides again (docs/algorithms.md "Hand-over").

use std::collections::BTreeMap;

use super::LocalJob;

/// How many times per interval the local looks for a job that stopped asking: the
/// hand-over then loses at most two of these steps (a step to see no call, the next
/// to act) instead of one or two intervals.
pub const STEPS_PER_INTERVAL: u32 = 20;

/// One group's jobs on this node, in their order of service, as pushed for one
/// interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// The pool.
    pub pool: String,
    /// The jobs, in order, each with what it may lend per second (beyond its floor).
    pub jobs: Vec<(String, f64)>,
}

// The same chain as the global computes it, as it travels, and as the local keeps it.
impl From<crate::cluster::Relay> for Chain {
    fn from(r: crate::cluster::Relay) -> Self {
        Chain {
            pool: r.pool,
            jobs: r.jobs,
        }
    }
}

impl From<crate::cluster::Relay> for crate::proto::Relay {
    fn from(r: crate::cluster::Relay) -> Self {
        crate::proto::Relay {
            pool: r.pool,
            parts: r
                .jobs
                .into_iter()
                .map(|(job, lend)| crate::proto::RelayPart { job, lend })
                .collect(),
        }
    }
}

impl From<crate::proto::Relay> for Chain {
    fn from(r: crate::proto::Relay) -> Self {
        Chain {
            pool: r.pool,
            jobs: r.parts.into_iter().map(|p| (p.job, p.lend)).collect(),
        }
    }
}

/// A chain in force: its jobs' arrivals when last looked at and the rates written.
#[derive(Debug)]
pub(super) struct Active {
    chain: Chain,
    /// By job of the chain: calls that reached its gate, as last read.
    arrivals: Vec<Option<u64>>,
    /// By job: the rate written by the last step (`None`: the pushed one).
    written: Vec<Option<f64>>,
}

impl Active {
    /// `chain`, with its jobs' arrivals as they are now.
    pub(super) fn new(chain: Chain, jobs: &BTreeMap<String, LocalJob>) -> Active {
        let arrivals = chain
            .jobs
            .iter()
            .map(|(job, _)| {
                jobs.get(job)
                    .and_then(|j| j.pool_activity(&chain.pool))
                    .map(|a| a.arrivals)
            })
            .collect();
        let written = vec![None; chain.jobs.len()];
        Active {
            chain,
            arrivals,
            written,
        }
    }

    /// Looks at the chain's jobs once and writes the rates the hand-over gives them
    /// where they changed.
    pub(super) fn step(&mut self, jobs: &mut BTreeMap<String, LocalJob>) {
        let pool = &self.chain.pool;
        let mut asking = Vec::with_capacity(self.chain.jobs.len());
        let mut base = Vec::with_capacity(self.chain.jobs.len());
        for ((job, _), last) in self.chain.jobs.iter().zip(&mut self.arrivals) {
            let Some(j) = jobs.get(job) else {
                // Gone from the node: it asks for nothing, and lends nothing.
                asking.push(false);
                base.push(0.0);
                continue;
            };
            let rate = j.pool_rates.get(pool).copied().unwrap_or(0.0);
            base.push(rate);
            let now = j.pool_activity(pool);
            // Asking: a call arrived since the last look, or one is at the gate or in
            // the file system now. A job between two calls for a whole step has
            // stopped, for the time being.
            asking.push(
                now.is_none_or(|a| a.outstanding > 0 || last.is_none_or(|l| l != a.arrivals)),
            );
            *last = now.map(|a| a.arrivals);
        }
        let lend: Vec<f64> = self.chain.jobs.iter().map(|&(_, l)| l).collect();
        let target = hand_over(&base, &lend, &asking);
        for (k, (job, _)) in self.chain.jobs.iter().enumerate() {
            let Some(j) = jobs.get_mut(job) else { continue };
            let now = self.written[k].unwrap_or(base[k]);
            if (target[k] - now).abs() > 0.5 {
                j.write_pool_rate(pool, target[k]);
                self.written[k] = (target[k] != base[k]).then_some(target[k]);
            }
        }
    }

    /// Writes back the pushed rate of every job the chain changed.
    pub(super) fn end(self, jobs: &mut BTreeMap<String, LocalJob>) {
        for ((job, _), written) in self.chain.jobs.iter().zip(self.written) {
            if written.is_none() {
                continue;
            }
            if let Some(j) = jobs.get_mut(job) {
                let rate = j.pool_rates.get(&self.chain.pool).copied().unwrap_or(0.0);
                j.write_pool_rate(&self.chain.pool, rate);
            }
        }
    }
}

/// The rates a chain's jobs get, in its order: `base` (their pushed rates) less what
/// a job that does not ask lends (`lend`, at most its rate), that lent amount added to
/// the next job in the order that asks. A job lends only when one after it asks (it
/// would otherwise give up its rate for no one), and one that asks keeps its own
/// rate: what is lent only ever flows down the order, and the rates add up to
/// `base`'s.
pub fn hand_over(base: &[f64], lend: &[f64], asking: &[bool]) -> Vec<f64> {
    let mut rates = base.to_vec();
    let Some(last) = asking.iter().rposition(|&a| a) else {
        return rates;
    };
    let mut carried = 0.0;
    for k in 0..=last {
        if asking[k] {
            rates[k] += carried;
            carried = 0.0;
        } else {
            let lent = lend[k].clamp(0.0, base[k].max(0.0));
            rates[k] -= lent;
            carried += lent;
        }
    }
    rates
}

/// What a job's pool gate shows at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Activity {
    /// Calls that reached the gate since the segment was made.
    pub arrivals: u64,
    /// Calls at the gate or in the file system now (arrived, not yet counted once
    /// the real call returned).
    pub outstanding: u64,
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn an_idle_holder_lends_to_the_next_that_asks() {
        // The holder (64) is done, the second does not ask, the third does.
        let rates = hand_over(
            &[64.0, 0.25, 0.25],
            &[63.75, 0.0, 0.0],
            &[false, false, true],
        );
        assert_eq!(rates, vec![0.25, 0.25, 64.0]);
    }

    #[test]
    fn a_holder_that_asks_again_takes_its_rate_back() {
        let rates = hand_over(&[64.0, 0.2], &[63.8, 0.0], &[true, true]);
        assert_eq!(rates, vec![64.0, 0.2]);
    }

    #[test]
    fn nobody_asking_after_it_keeps_a_job_its_rate() {
        let rates = hand_over(&[0.2, 64.0], &[0.0, 63.8], &[true, false]);
        assert_eq!(rates, vec![0.2, 64.0]);
        assert_eq!(hand_over(&[5.0], &[4.0], &[false]), vec![5.0]);
    }

    fn chain() -> impl Strategy<Value = (Vec<f64>, Vec<f64>, Vec<bool>)> {
        (1usize..8).prop_flat_map(|n| {
            (
                prop::collection::vec(0.0f64..1e9, n),
                prop::collection::vec(-1e3f64..2e9, n),
                prop::collection::vec(any::<bool>(), n),
            )
        })
    }

    proptest! {
        /// The hand-over moves rate, never makes it: the rates add up to the pushed
        /// ones, none is below its pushed rate less what it may lend, a job that asks
        /// never loses, and what a job gets beyond its rate comes from idle jobs
        /// before it in the order.
        #[test]
        fn the_hand_over_only_moves_rate_down_the_order((base, lend, asking) in chain()) {
            let rates = hand_over(&base, &lend, &asking);
            let total: f64 = base.iter().sum();
            prop_assert!((rates.iter().sum::<f64>() - total).abs() <= 1e-9 * total.max(1.0));
            let mut before_idle = 0.0;
            for k in 0..base.len() {
                prop_assert!(rates[k] >= base[k] - lend[k].max(0.0) - 1e-6);
                prop_assert!(rates[k] >= -1e-6);
                if asking[k] {
                    prop_assert!(rates[k] >= base[k]);
                    prop_assert!(rates[k] - base[k] <= before_idle + 1e-6 * total.max(1.0));
                    before_idle = 0.0;
                } else {
                    prop_assert!(rates[k] <= base[k]);
                    before_idle += base[k] - rates[k];
                }
            }
        }
    }
}
