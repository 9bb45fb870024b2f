//! The control algorithms, one file each, behind one trait.

use crate::obs::{Amount, Round};
use crate::period::PeriodSeen;

pub mod adaptbf;
pub mod adaptbf_need;
pub mod drf;
pub mod priority;
pub mod priority_share;
pub mod psfa;
pub mod psfa_held;
pub mod psharing;
pub mod reservations;
pub mod set10;
pub mod static_limits;
pub mod uniform;
pub mod uniform_share;

pub use adaptbf::AdapTbf;
pub use adaptbf_need::AdapTbfNeed;
pub use drf::Drf;
pub use priority::Priority;
pub use priority_share::PriorityShare;
pub use psfa::Psfa;
pub use psfa_held::PsfaHeld;
pub use psharing::ProportionalSharing;
pub use reservations::Reservations;
pub use set10::Set10;
pub use static_limits::StaticLimits;
pub use uniform::{FixedRate, Uniform};
pub use uniform_share::UniformShare;

/// A control algorithm: divides a pool among the jobs active in one interval.
///
/// Called once per interval with that interval's observations; returns one rate per
/// job, in the order of [`Round::jobs`]. An algorithm that remembers (AdapTBF's
/// records, SET-10's phase order) keeps that memory in itself, so a sequence of calls
/// is a pure function of the sequence of rounds: no clock, no I/O, no randomness.
pub trait Allocator<A: Amount = f64>: Send {
    /// The rates (per second) for this interval, one per job of `round`.
    fn allocate(&mut self, round: &Round<'_, A>) -> Vec<A>;

    /// `job` has ended: whatever the algorithm remembers of it is dropped, so that a
    /// job id reused later starts afresh. Algorithms without memory have nothing to do.
    fn forget(&mut self, _job: &str) {}

    /// The groups of the last [`Allocator::allocate`] whose members take the pool one
    /// after another (SET-10's sets), each in the order of service and as indices into
    /// that round's jobs; a group of one is left out. What the control plane lends
    /// within an interval from a member that stopped asking to the next one that asks
    /// (docs/algorithms.md "Hand-over"): the algorithm decides who holds the pool, the
    /// enforcement follows that order between two of its decisions. Empty for every
    /// algorithm without exclusive groups.
    fn succession(&self) -> &[Vec<usize>] {
        &[]
    }

    /// What the algorithm knows of `job`'s I/O period, for `sluice jobs` and the
    /// metrics: the period it places the job by and its last detection. `None` for
    /// algorithms that do not place jobs by their period, and for a job not seen.
    fn period(&self, _job: &str) -> Option<PeriodSeen> {
        None
    }
}
