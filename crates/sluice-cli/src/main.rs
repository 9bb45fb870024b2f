//! `sluice`: one binary for the whole of sluice.

mod alloc;
mod rule_cmd;

fn main() {}
