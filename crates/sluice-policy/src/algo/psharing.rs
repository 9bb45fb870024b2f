//! `psharing`: max-min fair share with reservations (PADLL's proportional sharing).

use super::Allocator;
use crate::obs::Round;
use crate::share::{spread_leftover, water_fill};

/// Jobs in increasing order of `limit` each get min(limit, left / jobs still to serve)
/// — max-min fairness with the limit as each job's claim — then whatever is left (when
/// every limit is met) goes out in proportion to `limit`. Hands out all of the capacity.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProportionalSharing;

impl Allocator for ProportionalSharing {
    fn allocate(&mut self, round: &Round<'_>) -> Vec<f64> {
        let limits = round.column(|job| job.limit);
        // Increasing-limit service with equal fair shares is exactly unweighted
        // water-filling capped at the limits.
        let mut rates = water_fill(round.capacity(), &limits, &vec![1.0; limits.len()]);
        spread_leftover(&mut rates, round.capacity(), &limits);
        rates
    }
}
