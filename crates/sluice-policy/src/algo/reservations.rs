//! `reservations`: bandwidth reservations in the manner of SDQoS.

use super::Allocator;
use crate::obs::Round;
use crate::share::{fill_leftover, proportional};

/// Each job's `limit` is a reservation, guaranteed while the reservations fit in the
/// pool and scaled down in proportion when they do not (over-subscription degrades
/// every reservation by the same factor rather than starving the last one admitted).
///
/// Work-conserving (the default): a job that asks for less than its reservation
/// (`arrivals` < reservation) is given what it asks for, and the capacity it leaves —
/// with any capacity nobody reserved — goes to the jobs asking for more than their
/// reservation, in proportion to their reservations, each up to what it asks for.
/// Jobs with no reservation share what the reserved ones cannot use.
#[derive(Debug, Clone, Copy)]
pub struct Reservations {
    work_conserving: bool,
}

impl Reservations {
    /// Reservations that hand unused capacity on (`true`) or keep it idle (`false`).
    pub fn new(work_conserving: bool) -> Self {
        Reservations { work_conserving }
    }
}

impl Default for Reservations {
    fn default() -> Self {
        Reservations::new(true)
    }
}

impl Allocator for Reservations {
    fn allocate(&mut self, round: &Round<'_>) -> Vec<f64> {
        let capacity = round.capacity();
        let limits = round.column(|job| job.limit);
        let guaranteed = if limits.iter().sum::<f64>() <= capacity {
            limits.clone()
        } else {
            proportional(capacity, &limits)
        };
        if !self.work_conserving {
            return guaranteed;
        }
        let arrivals = round.column(|job| job.arrivals);
        let mut rates: Vec<f64> = guaranteed
            .iter()
            .zip(&arrivals)
            .map(|(g, a)| g.min(*a))
            .collect();
        let wants: Vec<f64> = arrivals
            .iter()
            .zip(&guaranteed)
            .map(|(a, g)| (a - g).max(0.0))
            .collect();
        fill_leftover(&mut rates, capacity, &wants, &limits);
        rates
    }
}
