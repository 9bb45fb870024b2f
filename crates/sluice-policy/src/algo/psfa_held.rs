//! `psfa-held`: sluice's PSFA, which also reads what each job asked for and how long
//! it has been held; PADLL's Algorithm 1 as printed is [`super::Psfa`] (`psfa`).

use std::collections::BTreeMap;

use super::Allocator;
use super::psfa::{Psfa, checked_epsilon, first_pass};
use crate::error::PolicyError;
use crate::obs::Round;
use crate::share::{fill_leftover, spread_leftover};

/// PSFA with three departures from Algorithm 1, each for a case where the paper's
/// usage-only rule leaves capacity idle or a job short.
///
/// First, a job that *asked* for its limit (arrivals ≥ limit) is given it even when its
/// admitted rate fell a little short. Under the paper's rule a job held at its
/// reservation loses ε-steps of it to every dip of its measured rate (a descheduled
/// process, an interval boundary) and climbs back only by ε of the gap per interval.
///
/// Second, the leftover goes first to the jobs that asked for more than the first pass
/// gave them, up to what they asked (water-filled by usage, weighed as below), and only
/// what they cannot use is spread over all by usage. The paper spreads all of it by
/// usage, which hands most of it back to the jobs that left it, to lie unused again,
/// while a heavy job held below its demand gets only its usage's part.
///
/// Third, among the jobs that ask for more, the leftover is weighed by usage times the
/// rounds in a row (up to 10) each has asked for more: a backlog that outlasted many
/// intervals uses what it is given, while a job held for one round after a lull
/// estimates its demand from a second of waiting and leaves most of it unused.
///
/// Where arrivals equal usage and no job uses more than its limit, it gives what `psfa`
/// gives.
#[derive(Debug, Clone)]
pub struct PsfaHeld {
    epsilon: f64,
    /// Consecutive rounds each job has asked for more than the first pass gave it.
    held: BTreeMap<String, u32>,
}

/// The most rounds that count towards a held job's claim on the leftover.
const HELD_ROUNDS_CAP: u32 = 10;

impl PsfaHeld {
    /// With growth fraction `epsilon` in [0, 1] (PADLL's is [`Psfa::DEFAULT_EPSILON`]).
    pub fn new(epsilon: f64) -> Result<Self, PolicyError> {
        Ok(PsfaHeld {
            epsilon: checked_epsilon(epsilon)?,
            held: BTreeMap::new(),
        })
    }
}

impl Default for PsfaHeld {
    fn default() -> Self {
        PsfaHeld {
            epsilon: Psfa::DEFAULT_EPSILON,
            held: BTreeMap::new(),
        }
    }
}

impl Allocator for PsfaHeld {
    fn forget(&mut self, job: &str) {
        self.held.remove(job);
    }

    fn allocate(&mut self, round: &Round<'_>) -> Vec<f64> {
        let jobs = round.jobs();
        let (mut rates, _) = first_pass(round, self.epsilon, |job| job.arrivals >= job.limit);
        let usage = round.column(|job| job.usage);
        let unmet: Vec<f64> = jobs
            .iter()
            .zip(&rates)
            .map(|(job, rate)| (job.arrivals - rate).max(0.0))
            .collect();
        let claims: Vec<f64> = jobs
            .iter()
            .zip(&unmet)
            .map(|(job, &unmet)| {
                let rounds = self.held.entry(job.id.clone()).or_default();
                *rounds = if unmet > 0.0 { *rounds + 1 } else { 0 };
                job.usage * f64::from((*rounds).min(HELD_ROUNDS_CAP))
            })
            .collect();
        fill_leftover(&mut rates, round.capacity(), &unmet, &claims);
        spread_leftover(&mut rates, round.capacity(), &usage);
        rates
    }
}
