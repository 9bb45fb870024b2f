//! `sluice bench …`: sluice's own costs, printed as figures.

use std::net::SocketAddr;

use anyhow::Result;
use sluice_control::config::parse_duration;
use sluice_workload::bench_control::{self, ControlBenchOptions};
use sluice_workload::bench_cycle::{self, CycleBenchOptions};
use sluice_workload::bench_period;
use sluice_workload::figures;

use crate::Usage;
use sluice_workload::alloc::BenchAllocArgs;

/// Benchmarks: figures, not tests.
#[derive(clap::Subcommand, Debug)]
pub enum BenchCmd {
    /// The stage's admission path in process: ns per managed and unmanaged call, and
    /// admissions per second with 1..N threads.
    Stage(BenchStageArgs),
    /// Time per control interval of every control algorithm at 10, 1,000 and 100,000 jobs.
    Alloc(BenchAllocArgs),
    /// The global controller on loopback with N simulated locals, each on its own gRPC
    /// stream: latency of a whole control cycle, and the global's CPU time per local.
    Control(BenchControlArgs),
    /// The global's computation of one control cycle alone, in process, over N nodes of
    /// 3 jobs each, with or without a job starting and ending every cycle.
    Cycle(BenchCycleArgs),
    /// One period detection (SET-10's, FTIO's method) timed at the windows the controller
    /// searches and at IO-SETS' whole frame at 100 ms.
    Period(BenchPeriodArgs),
}

/// Options of `sluice bench period`.
#[derive(clap::Args, Debug)]
pub struct BenchPeriodArgs {
    /// Print JSON: [{"samples":…, "what":…, "us":…}, …].
    #[arg(long)]
    json: bool,
}

/// Options of `sluice bench cycle`.
#[derive(clap::Args, Debug)]
pub struct BenchCycleArgs {
    /// Nodes (3 jobs each).
    #[arg(long, default_value_t = 1000)]
    locals: usize,
    /// Cycles measured, after 3 of warm-up.
    #[arg(long, default_value_t = 50)]
    cycles: u64,
    /// A job ends and another starts every cycle (the cycle cannot reuse its grouping).
    #[arg(long)]
    churn: bool,
    /// Divide the pool down this tree (e.g. account,user,job), the jobs charged to 200
    /// users in 20 accounts, instead of flat psfa.
    #[arg(long, value_name = "LEVELS")]
    tree: Option<String>,
    /// Print JSON: {"locals":…, "jobs":…, "churn":…, "tree":…, "median_us":…, "p99_us":…}.
    #[arg(long)]
    json: bool,
}

/// Options of `sluice bench stage`.
#[derive(clap::Args, Debug)]
pub struct BenchStageArgs {
    /// Measure with 1..=N threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Print JSON: {"managed_ns_per_op":…, "unmanaged_ns_per_op":…, "threads":[{"n":1,"mops":…},…]}.
    #[arg(long)]
    json: bool,
}

/// Options of `sluice bench control`.
#[derive(clap::Args, Debug)]
pub struct BenchControlArgs {
    /// Simulated local controllers (one TCP connection each, 3 jobs each).
    #[arg(long, default_value_t = 100)]
    locals: usize,
    /// Cycles measured, after 3 of warm-up.
    #[arg(long, default_value_t = 20)]
    cycles: u64,
    /// The control interval, e.g. 200ms.
    #[arg(long, value_name = "DUR", default_value = "200ms")]
    interval: String,
    /// Print JSON: {"locals":…, "median_us":…, "p99_us":…, "cpu_us_per_local":…, "timeouts":…}.
    #[arg(long)]
    json: bool,
    /// Be the simulator of the locals, against the global at ADDR (the benchmark starts
    /// it as a child process).
    #[arg(long, value_name = "ADDR", hide = true)]
    simulate_on: Option<SocketAddr>,
}

impl BenchCmd {
    /// Runs the benchmark.
    pub fn run(&self) -> Result<i32> {
        match self {
            BenchCmd::Stage(a) => a.run(),
            BenchCmd::Alloc(a) => Ok(a.run().map(|()| 0)?),
            BenchCmd::Control(a) => a.run(),
            BenchCmd::Cycle(a) => a.run(),
            BenchCmd::Period(a) => {
                print!("{}", figures::period(&bench_period::run(), a.json));
                Ok(0)
            }
        }
    }
}

impl BenchStageArgs {
    fn run(&self) -> Result<i32> {
        let b = sluice_workload::bench_stage::run(self.threads);
        print!("{}", figures::stage(&b, self.json));
        Ok(0)
    }
}

impl BenchCycleArgs {
    fn run(&self) -> Result<i32> {
        locals_and_cycles(self.locals, self.cycles)?;
        let tree = match &self.tree {
            Some(text) => Some(
                text.parse()
                    .map_err(|e| crate::Usage(format!("--tree: {e}")))?,
            ),
            None => None,
        };
        let b = bench_cycle::run(&CycleBenchOptions {
            locals: self.locals,
            cycles: self.cycles,
            churn: self.churn,
            tree,
        })?;
        let tree = self.tree.as_deref();
        print!(
            "{}",
            figures::cycle(&b, self.locals, self.churn, tree, self.json)
        );
        Ok(0)
    }
}

impl BenchControlArgs {
    fn run(&self) -> Result<i32> {
        locals_and_cycles(self.locals, self.cycles)?;
        let interval =
            parse_duration(&self.interval).map_err(|e| Usage(format!("--interval: {e}")))?;
        let options = ControlBenchOptions {
            locals: self.locals,
            cycles: self.cycles,
            interval,
        };
        if let Some(global) = self.simulate_on {
            bench_control::simulate(global, &options)?;
            return Ok(0);
        }
        let b = bench_control::run(&options)?;
        print!("{}", figures::control(&b, &self.interval, self.json));
        Ok(0)
    }
}

/// Refuses `--locals 0` or `--cycles 0`, which would measure nothing.
fn locals_and_cycles(locals: usize, cycles: u64) -> Result<()> {
    if locals == 0 || cycles == 0 {
        return Err(Usage("--locals and --cycles must be at least 1".into()).into());
    }
    Ok(())
}
