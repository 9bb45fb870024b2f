//! # sluice-workload
//!
//! Load generators and measurements for sluice:
//!
//! - [`load`]: a closed-loop load of chosen file-system operations on a directory, by
//!   several threads, reporting the achieved rate every second; run it under
//!   `sluice run` to see a rule hold it.
//! - [`data`]: data jobs for bandwidth experiments (continuous, bursty on/off, periodic
//!   compute-then-I/O), each stretch of I/O recorded with its start and end.
//! - [`ior`]: IOR-like sequential reads and writes (a file per process or one shared
//!   file), and periodic applications (compute, then an I/O phase, repeated).
//! - [`trace`]: metadata traces (CSV `second,op,rate`) read, written and summarised;
//!   [`synth`] makes them with the statistics of a production Lustre file system.
//! - [`replay`]: a multi-threaded trace replayer that keeps a backlog when held back.
//! - [`figures`]: what `sluice load` and `sluice bench` print.
//! - [`top`]: `sluice top`'s terminal view of a controller's jobs and pools.
//! - [`experiment`]: the scenario runner of `sluice experiment` (controllers, jobs at
//!   their times, per-second figures watched live or not, summaries and comparisons).
//! - [`demo`]: `sluice demo`, a scenario bundled into the binary and run live: four jobs
//!   sharing a pool with and without control.
//! - [`harness`]: the one way controllers and jobs are started, waited for and killed,
//!   for the runner, the demo, the benchmarks and the integration tests.
//! - [`plot`]: rates and allocations over time as a PNG chart, for experiments.
//! - [`alloc`]: `sluice alloc`, an algorithm evaluated offline on intervals given as JSON.
//! - [`bench_alloc`]: every control algorithm timed for one interval (`sluice bench
//!   alloc`); here, not in sluice-policy, whose algorithms read no clock.
//! - [`bench_stage`]: the stage's admission path measured in process (managed with a
//!   rule that never throttles, unmanaged, and scaling over threads).
//! - [`bench_control`]: the global controller on loopback with simulated locals, each
//!   on its own gRPC stream: the latency of a whole control cycle and the global's CPU
//!   time per local.
//! - [`bench_cycle`]: the global's computation of one cycle alone, in process, with or
//!   without jobs starting and ending.
//! - [`bench_period`]: one period detection timed at the windows the controller searches.
//!
//! Errors are typed, each saying whether it is the administrator's input ([`error`]).
//!
//! Loads call libc directly, one call per operation, so that what the stage counts is
//! exactly what the load did (see [`calls`]).

pub mod alloc;
pub mod bench_alloc;
pub mod bench_control;
pub mod bench_cycle;
pub mod bench_period;
pub mod bench_stage;
pub mod calls;
pub mod data;
pub mod demo;
pub mod error;
pub mod experiment;
pub mod figures;
pub mod harness;
pub mod ior;
pub mod load;
mod meter;
pub mod plot;
pub mod replay;
pub mod synth;
pub mod top;
pub mod trace;
