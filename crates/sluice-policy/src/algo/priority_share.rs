//! `priority-share`: sluice's division of the pool by weight among the jobs active now;
//! PADLL's fixed-rate priority policy is [`super::Priority`] (`priority`).

use super::Allocator;
use crate::obs::Round;
use crate::share::proportional;

/// Job `i` gets capacity × weightᵢ / Σ weight over the active jobs, whether it uses it
/// or not: shares by importance with no lending between active jobs, but a job alone
/// gets the whole pool and the shares grow as jobs leave.
#[derive(Debug, Clone, Copy, Default)]
pub struct PriorityShare;

impl Allocator for PriorityShare {
    fn allocate(&mut self, round: &Round<'_>) -> Vec<f64> {
        proportional(round.capacity(), &round.column(|job| job.weight_or_one()))
    }
}
