//! # sluice-workload
//!
//! Load generators and measurements for sluice:
//!
//! - [`load`]: a closed-loop load of chosen file-system operations on a directory, by
//!   several threads, reporting the achieved rate every second; run it under
//!   `sluice run` to see a rule hold it.
//! - [`plot`]: rates and allocations over time as a PNG chart, for experiments and the demo.
//! - [`bench_stage`]: the stage's admission path measured in process (managed with a
//!   rule that never throttles, unmanaged, and scaling over threads).
//! - [`bench_control`]: the global controller on loopback with simulated locals, each
//!   on its own gRPC stream: the latency of a whole control cycle and the global's CPU
//!   time per local.
//!
//! Loads call libc directly, one call per operation, so that what the stage counts is
//! exactly what the load did.

pub mod bench_control;
pub mod bench_stage;
pub mod load;
pub mod plot;
