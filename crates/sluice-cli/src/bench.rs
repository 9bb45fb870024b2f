//! `sluice bench …`: sluice's own costs, printed as figures.

use anyhow::Result;

use crate::alloc::BenchAllocArgs;

/// Benchmarks: figures, not tests.
#[derive(clap::Subcommand, Debug)]
pub enum BenchCmd {
    /// The stage's admission path in process: ns per managed and unmanaged call, and
    /// admissions per second with 1..N threads.
    Stage(BenchStageArgs),
    /// Time per control interval of every control algorithm at 10, 1,000 and 100,000 jobs.
    Alloc(BenchAllocArgs),
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

impl BenchCmd {
    /// Runs the benchmark.
    pub fn run(&self) -> Result<i32> {
        match self {
            BenchCmd::Stage(a) => a.run(),
            BenchCmd::Alloc(a) => a.run().map(|()| 0),
        }
    }
}

impl BenchStageArgs {
    fn run(&self) -> Result<i32> {
        let b = sluice_workload::bench_stage::run(self.threads);
        if self.json {
            let threads: Vec<_> = b
                .threads
                .iter()
                .map(|t| serde_json::json!({"n": t.n, "mops": round2(t.mops)}))
                .collect();
            let v = serde_json::json!({
                "managed_ns_per_op": round2(b.managed_ns_per_op),
                "unmanaged_ns_per_op": round2(b.unmanaged_ns_per_op),
                "threads": threads,
            });
            println!("{v}");
        } else {
            println!("managed, unthrottled: {:>7.1} ns/op", b.managed_ns_per_op);
            println!("unmanaged:            {:>7.1} ns/op", b.unmanaged_ns_per_op);
            let one = b.threads.first().map_or(1.0, |t| t.mops);
            for t in &b.threads {
                println!(
                    "{} thread(s):          {:>7.2} Mops/s ({:.2}x)",
                    t.n,
                    t.mops,
                    t.mops / one
                );
            }
        }
        Ok(0)
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
