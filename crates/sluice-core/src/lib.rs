//! # sluice-core
//!
//! The vocabulary every part of sluice shares, with no I/O and no threads (its only
//! system calls are the clock's, [`clock`]):
//!
//! - [`op`]: operations (`getattr`, `open`, `read`…) and their classes;
//! - [`rule`]: the rule language (parse, print, match) and rate units;
//! - [`bucket`]: the GCRA bucket on one atomic word, and per-thread batches;
//! - [`segment`]: the layout of the shared-memory segment a job's processes map;
//! - [`path`]: lexical path resolution and the table of managed places;
//! - [`classify`]: rules compiled per process into a per-operation table;
//! - [`cost`]: what each operation costs a pool that weighs them;
//! - [`gate`]: the admission path of one request (classify, reserve, wait, count);
//! - [`clock`]: the node's monotonic clock and the shared futex a held call sleeps on;
//! - [`observe`]: per-channel rates over an interval and the job's estimated demand;
//! - [`config`]: the stage configuration as it travels in a segment;
//! - [`stats`]: counters summed into the report `sluice run --stats` writes;
//! - [`hostlist`]: node lists written and read the Slurm way (`node[001-512]`);
//! - [`toml_text`]: TOML texts an administrator wrote, with errors that say where;
//! - [`error`]: whose fault an error is (the administrator's input or the system's).
//!
//! Everything that crosses a room boundary (stage, policy, control, workload) lives here,
//! so that the stage, which may depend on nothing else, speaks the same language as the
//! daemons and the command line. Time is always passed in, so every piece is tested with
//! a hand-driven clock.
//!
//! ```
//! use sluice_core::rule::parse_rule;
//! let rule = parse_rule("md: op=getattr,open rate=5k/s").unwrap();
//! assert_eq!(rule.to_string(), "md: op=getattr,open rate=5k/s");
//! ```

pub mod bucket;
pub mod classify;
pub mod clock;
pub mod config;
pub mod cost;
pub mod elf;
pub mod error;
pub mod gate;
pub mod hostlist;
pub mod observe;
pub mod op;
pub mod path;
pub mod rule;
pub mod segment;
pub mod stats;
pub mod toml_text;
