//! `priority`: PADLL's priority-based rate distribution — a fixed rate per job by its
//! weight, whatever the others do.

use super::Allocator;
use super::uniform::FixedRate;
use crate::obs::Round;

/// Job `i` gets weightᵢ × `rate`, or capacity × weightᵢ / `total_weight`, the sum of
/// the weights of the jobs the pool is set up for (PADLL's Table 1: the limits 15, 25,
/// 30 and 40 kops/s of 110, as weights 15, 25, 30, 40 of 110). The rate is fixed: what
/// a job does not use is not lent, and a job alone keeps its rate (PADLL's "constant
/// rate of 15 kops/s, not leveraging from the remainder 95 kops/s").
#[derive(Debug, Clone, Copy)]
pub struct Priority {
    per_weight: FixedRate,
}

impl Priority {
    /// Each job at `per_weight` × its weight.
    pub fn new(per_weight: FixedRate) -> Self {
        Priority { per_weight }
    }
}

impl Allocator for Priority {
    fn allocate(&mut self, round: &Round<'_>) -> Vec<f64> {
        let unit = self.per_weight.per_part(round.capacity());
        round
            .jobs()
            .iter()
            .map(|job| unit * job.weight_or_one())
            .collect()
    }
}
