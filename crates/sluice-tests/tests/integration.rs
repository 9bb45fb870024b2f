//! The integration tests of `sluice`, as one test binary: each module is one file of
//! this directory, and tests its part against the release build (target/release, or
//! `SLUICE_BIN_DIR`) in real processes.
//!
//! One binary rather than one per file: every file linked the same dependencies (the
//! harness, the control plane's client) into a binary of its own; rebuilding the 32 with
//! warm dependencies took 285 s, the one 43 s. `make test` runs it with
//! tests/integration.sh, module by module, each in a process of its own as its file's
//! binary was, so that a module's tests share a process, and run side by side, only with
//! each other, one module after another. `bash tests/integration.sh MODULE…` runs some;
//! `cargo test --workspace --test integration -- MODULE::` runs one with libtest's
//! options.

#[macro_use]
mod common;

mod accuracy;
mod admin;
mod audit;
mod bad_input;
mod cephfs;
mod cluster;
mod config_check;
mod control;
mod counting;
mod dashboard;
mod dashboard_browser;
mod deadlines;
mod doc_commands;
mod efault;
mod experiment;
mod fault_matrix;
mod faults;
mod link_auth;
mod metrics;
mod packages;
mod regressions;
mod reports;
mod restart;
mod robustness;
mod slurm;
mod stdio;
mod supervise;
mod top;
mod tree;
mod users;
mod versions;
mod workloads;
