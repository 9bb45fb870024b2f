//! # sluice-policy
//!
//! The control algorithms of sluice: each interval, divide a pool — a file system's
//! metadata rate, its bandwidth, or one operation's rate — among the jobs that use it.
//! The global controller calls this crate; `sluice alloc` runs it offline so that an
//! administrator can see what a policy would do before deploying it.
//!
//! ## Main types
//!
//! - [`Observation`]: one job's activity in the last interval (`limit`, `usage`,
//!   `arrivals`, `weight`, `nodes`, `period_s`); [`Round`]: one interval's observations
//!   with the pool's capacity and the interval's length, validated once.
//! - [`Allocator`]: the trait every algorithm implements — a round in, one rate per job
//!   out. The algorithms are in [`algo`], one file each: `static`; PADLL's `uniform`,
//!   `priority` (fixed rates), `psharing` and `psfa` (Algorithm 1); AdapTBF as
//!   published, `adaptbf`; `set10` (IO-SETS), and `set10-ftio` fed as the IO-SETS
//!   paper's experiment was (FTIO's own rule); `reservations` (SDQoS) and `drf`, which
//!   divides a metadata rate and a bandwidth together with [`OpsBytes`] (and one
//!   resource by weighted max-min). Beside the published ones, sluice's variants under
//!   names of their own: `uniform-share`, `priority-share`, `psfa-held`,
//!   `adaptbf-bounded`, `adaptbf-need` and `set10-silence`.
//! - [`registry`]: choose an algorithm by name with [`Params`]; the table there also
//!   says which fields each algorithm reads, which one holds a job's load, and which
//!   [`Estimator`] (the admitted rate, the arrivals, or sluice's wait-inflated demand)
//!   a controller feeds it there by default: its paper's for a published algorithm.
//! - [`period`]: FTIO-style detection of a job's I/O period, which `set10` uses.
//! - [`tree`]: hierarchical fair share, a pool divided down a tree of job attributes
//!   (account, user, QOS, partition, job) with a share per node, work-conserving at
//!   every level.
//!
//! ## Example
//!
//! ```
//! use sluice_policy::{Allocator, Observation, Round};
//! use sluice_policy::algo::Psfa;
//!
//! // A metadata server that takes 110 kops/s; two jobs with limits of 15 and 40 kops/s.
//! let jobs = [
//!     Observation::new("j1", 15_000.0, 10_000.0, 10_000.0),
//!     Observation::new("j2", 40_000.0, 40_000.0, 60_000.0),
//! ];
//! let round = Round::new(110_000.0, 1.0, &jobs)?;
//! let rates = Psfa::default().allocate(&round);
//! // j1 uses 10 of its 15 kops/s: it is given 10 + 0.25 × 5 = 11.25, j2 the 40 it uses.
//! // The 58.75 kops/s left go to both in proportion to usage (1:4).
//! assert_eq!(rates, vec![11_250.0 + 11_750.0, 40_000.0 + 47_000.0]);
//!
//! // The same by name, as the control plane and `sluice alloc` choose it.
//! use sluice_policy::registry::{self, Params};
//! let mut psfa = registry::find("psfa")?.build(&Params::new())?;
//! assert_eq!(psfa.allocate(&round), rates);
//! # Ok::<(), sluice_policy::PolicyError>(())
//! ```
//!
//! ## Why it is built this way
//!
//! Every algorithm is a pure, deterministic function of the sequence of rounds it is
//! given: no clock (the caller passes the interval's length), no I/O, no randomness,
//! no hash-order iteration. So `sluice alloc` reproduces exactly what the controller
//! would do, tests can pin down the papers' scenarios number for number, and a
//! controller restarted from the same observations decides the same. Input is checked
//! once, in [`Round::new`], with errors that name the field; the algorithms then
//! work on numbers known to be finite and non-negative. The ways of handing out a
//! pool (in proportion, by water-filling, in whole tokens) live in one private module
//! that every algorithm shares, so each algorithm's file reads as its paper's formula.

pub mod algo;
mod error;
mod estimator;
mod fft;
mod obs;
pub mod period;
pub mod registry;
mod share;
pub mod tree;

pub use algo::Allocator;
pub use error::{PolicyError, Problem};
pub use estimator::{Estimator, UnknownEstimator};
pub use obs::{Amount, JobField, Observation, OpsBytes, Round};
pub use registry::{ParamValue, Params};
