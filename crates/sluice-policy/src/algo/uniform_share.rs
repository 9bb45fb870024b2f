//! `uniform-share`: sluice's equal split of the pool among the jobs active now; PADLL's
//! fixed-rate uniform policy is [`super::Uniform`] (`uniform`).

use super::Allocator;
use crate::obs::Round;

/// Every active job gets capacity / number of active jobs: equal treatment like
/// `uniform`, but a job alone gets the whole pool and every job's rate grows as others
/// leave, so no capacity is held for jobs that are not there.
#[derive(Debug, Clone, Copy, Default)]
pub struct UniformShare;

impl Allocator for UniformShare {
    fn allocate(&mut self, round: &Round<'_>) -> Vec<f64> {
        let jobs = round.jobs().len();
        vec![round.capacity() / jobs.max(1) as f64; jobs]
    }
}
