//! `priority`: fixed shares by weight, no redistribution (PADLL's priority policy).

use super::Allocator;
use crate::obs::Round;
use crate::share::proportional;

/// Job `i` gets capacity × weightᵢ / Σ weight over the active jobs, whether it uses it
/// or not: isolation without work conservation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Priority;

impl Allocator for Priority {
    fn allocate(&mut self, round: &Round<'_>) -> Vec<f64> {
        proportional(round.capacity(), &round.column(|job| job.weight_or_one()))
    }
}
