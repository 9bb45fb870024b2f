//! `sluice trace …`: make synthetic metadata traces; check and summarise traces.

use std::path::PathBuf;

use anyhow::{Context, Result};
use sluice_core::rule::{Rate, Unit};
use sluice_workload::synth::{MIN_SECONDS, SynthSpec, synth};
use sluice_workload::trace::Trace;

use crate::Usage;

/// Metadata traces for `sluice replay` (CSV `second,op,rate`; see docs/workloads.md).
#[derive(clap::Subcommand, Debug)]
pub enum TraceCmd {
    Synth(SynthArgs),
    Stats(StatsArgs),
}

/// Make a synthetic trace with the statistics of a production Lustre file system.
///
/// The load of the PADLL paper's §2.1 (ABCI's Lustre, 30 days), scaled to --mean: bursts
/// to 5× the mean, lulls of a quarter of it or less, sustained periods above twice it,
/// volatile; open, close, getattr and rename 98% of calls, getattr 47%. The same
/// options give the same file, byte for byte.
///
/// Example: sluice trace synth --mean 20k --seconds 600 --seed 7 --out t.csv
#[derive(clap::Args, Debug)]
pub struct SynthArgs {
    /// Mean calls per second: 5000, 20k, 200k/s…
    #[arg(long, value_name = "RATE", value_parser = ops_rate)]
    mean: u64,
    /// Length in seconds (at least 10).
    #[arg(long, value_name = "N")]
    seconds: u32,
    /// Random seed.
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
    /// The trace file to write ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

/// Check a trace and print its mean, peak, lulls, volatility and operation mix.
#[derive(clap::Args, Debug)]
pub struct StatsArgs {
    /// The trace.
    #[arg(value_name = "TRACE")]
    trace: PathBuf,
}

/// A rate of operations, with or without `/s`.
fn ops_rate(text: &str) -> Result<u64, String> {
    let full = if text.ends_with("/s") {
        text.to_owned()
    } else {
        format!("{text}/s")
    };
    match full.parse::<Rate>() {
        Ok(r) if r.unit == Unit::Ops && r.per_sec > 0 => Ok(r.per_sec),
        _ => Err(format!(
            "'{text}': expected calls per second above 0, e.g. 5000, 20k or 200k/s"
        )),
    }
}

impl TraceCmd {
    /// Runs the subcommand.
    pub fn run(&self) -> Result<i32> {
        match self {
            TraceCmd::Synth(a) => a.run(),
            TraceCmd::Stats(a) => {
                let trace = Trace::read(&a.trace).map_err(|e| Usage(e.to_string()))?;
                println!("{}", trace.stats());
                Ok(0)
            }
        }
    }
}

impl SynthArgs {
    fn run(&self) -> Result<i32> {
        if self.seconds < MIN_SECONDS {
            return Err(Usage(format!(
                "--seconds {}: at least {MIN_SECONDS}, to hold a lull, a burst and the mean",
                self.seconds
            ))
            .into());
        }
        let trace = synth(&SynthSpec {
            mean: self.mean as f64,
            seconds: self.seconds,
            seed: self.seed,
        });
        if self.out.as_os_str() == "-" {
            trace.write_csv(std::io::stdout().lock())?;
            eprintln!("{}", trace.stats());
        } else {
            let file = std::fs::File::create(&self.out)
                .with_context(|| format!("cannot create {}", self.out.display()))?;
            trace
                .write_csv(std::io::BufWriter::new(file))
                .with_context(|| format!("cannot write {}", self.out.display()))?;
            println!("{}: {}", self.out.display(), trace.stats());
        }
        Ok(0)
    }
}
