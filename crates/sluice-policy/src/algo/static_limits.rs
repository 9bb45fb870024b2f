//! `static`: each job gets its administrator-set limit, whatever the pool can take.

use super::Allocator;
use crate::obs::Round;

/// Every job gets its `limit`. The baseline that the dynamic algorithms improve on:
/// the sum may exceed the capacity, because it is what the administrator set.
#[derive(Debug, Clone, Copy, Default)]
pub struct StaticLimits;

impl Allocator for StaticLimits {
    fn allocate(&mut self, round: &Round<'_>) -> Vec<f64> {
        round.column(|job| job.limit)
    }
}
