//! `sluice load`: a closed-loop file-system load, IOR-like sequential I/O, and periodic
//! applications.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use sluice_core::rule::parse_size;
use sluice_workload::calls::callable;
use sluice_workload::figures;
use sluice_workload::ior::{self, Access, IorSpec, Layout};
use sluice_workload::load::{LoadSpec, run};

use crate::Usage;

/// Drive a file-system load and print the achieved rate every second.
///
/// Without a subcommand: a closed loop. Every thread makes the operations in turn, one
/// call each, as fast as it is let, in a directory of its own under --dir. With `ior` or
/// `periodic`: sequential reads or writes of a volume (see their --help). Run it under
/// `sluice run` to watch a rule hold it.
///
/// Example: sluice run --rule 'op=getattr rate=2000/s' -- sluice load --dir /scratch/t --ops getattr --threads 2 --duration 5
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct LoadArgs {
    #[command(subcommand)]
    pattern: Option<Pattern>,
    /// Directory to work in (must exist).
    #[arg(long, required = true)]
    dir: Option<PathBuf>,
    /// Operations, comma-separated: open, close, getattr, access, setattr, rename, link,
    /// symlink, readlink, unlink, statfs, sync, mkdir, rmdir, mknod, readdir, getxattr,
    /// setxattr, listxattr, removexattr, read, write.
    #[arg(long, value_delimiter = ',', default_value = "getattr")]
    ops: Vec<String>,
    /// Threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seconds to run.
    #[arg(long, conflicts_with = "count")]
    duration: Option<f64>,
    /// Operations per thread, then stop.
    #[arg(long)]
    count: Option<u64>,
    /// Bytes per read or write.
    #[arg(long, default_value_t = 4096)]
    block: usize,
    /// Print `second,operations` lines only (for scripts).
    #[arg(long)]
    csv: bool,
}

/// The loads that move a volume of data.
#[derive(clap::Subcommand, Debug)]
enum Pattern {
    Ior(IorArgs),
    Periodic(PeriodicArgs),
}

/// IOR-like sequential I/O: every thread (a rank) opens its file, reads or writes its
/// block of the volume in transfers from start to end, and closes it.
///
/// With a shared file (the default, as in IOR) the ranks' blocks tile one file,
/// DIR/sluice-ior; with --file-per-process each rank has DIR/sluice-ior.RANK. The files
/// are removed at the end unless --keep; a read reads what a kept write left, and first
/// extends (sparse) any file too short.
///
/// Example: sluice run --rule 'class=data rate=100MiB/s' -- sluice load ior --dir /scratch/t --write --volume 1GiB --transfer 1MiB --threads 4
#[derive(clap::Args, Debug)]
#[command(group = clap::ArgGroup::new("access").required(true).args(["read", "write"]))]
struct IorArgs {
    /// Directory of the files (must exist; one per job: the file names are fixed).
    #[arg(long)]
    dir: PathBuf,
    /// Sequential reads.
    #[arg(long)]
    read: bool,
    /// Sequential writes.
    #[arg(long)]
    write: bool,
    /// A file per rank instead of one shared file.
    #[arg(long)]
    file_per_process: bool,
    /// Bytes per call: 4096, 64KiB, 1MiB…
    #[arg(long, value_name = "SIZE", default_value = "1MiB", value_parser = parse_size)]
    transfer: u64,
    /// Bytes moved by all ranks together (per phase), split evenly among them.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    volume: u64,
    /// Ranks (threads).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Leave the files in place.
    #[arg(long)]
    keep: bool,
    /// Print `second,calls,bytes` lines only.
    #[arg(long)]
    csv: bool,
}

/// A periodic application: a compute phase, then an I/O phase of --volume that all ranks
/// start together (IOR-like, as `sluice load ior`), repeated --phases times.
///
/// Computing is sleeping: the CPU is not what is measured. Each phase's I/O time is
/// printed, so a limit's effect on the application shows as longer I/O phases.
///
/// Example: sluice load periodic --dir /scratch/t --write --volume 256MiB --compute 10 --phases 5
#[derive(clap::Args, Debug)]
struct PeriodicArgs {
    #[command(flatten)]
    io: IorArgs,
    /// Seconds of compute before each I/O phase.
    #[arg(long, value_name = "SECONDS")]
    compute: f64,
    /// Compute-then-I/O phases.
    #[arg(long, default_value_t = 3)]
    phases: u32,
}

impl LoadArgs {
    /// Runs the load.
    pub fn run(&self) -> Result<i32> {
        match &self.pattern {
            Some(Pattern::Ior(a)) => a.run(1, Duration::ZERO),
            Some(Pattern::Periodic(p)) => {
                if !(p.compute.is_finite() && p.compute >= 0.0) {
                    return Err(Usage(format!(
                        "--compute {}: must be a number of seconds, 0 or more",
                        p.compute
                    ))
                    .into());
                }
                if p.phases == 0 {
                    return Err(Usage("--phases must be at least 1".into()).into());
                }
                p.io.run(p.phases, Duration::from_secs_f64(p.compute))
            }
            None => self.closed_loop(),
        }
    }

    fn closed_loop(&self) -> Result<i32> {
        let ops = self
            .ops
            .iter()
            .map(|o| callable(o))
            .collect::<Result<Vec<_>, _>>()?;
        if self.threads == 0 {
            return Err(Usage("--threads must be at least 1".into()).into());
        }
        let duration = match (self.duration, self.count) {
            (Some(d), _) if !(d.is_finite() && d > 0.0) => {
                return Err(Usage(format!(
                    "--duration {d}: must be a positive number of seconds"
                ))
                .into());
            }
            (Some(d), _) => Some(Duration::from_secs_f64(d)),
            (None, None) => Some(Duration::from_secs(5)),
            (None, Some(_)) => None,
        };
        let spec = LoadSpec {
            // Required by clap whenever there is no subcommand.
            dir: self.dir.clone().unwrap_or_default(),
            ops,
            threads: self.threads,
            duration,
            count: self.count,
            block: self.block,
        };
        let csv = self.csv;
        let report = run(&spec, |sec, n| {
            print!("{}", figures::load_second(csv, sec, n))
        })?;
        print!("{}", figures::load_total(csv, &report));
        Ok(0)
    }
}

impl IorArgs {
    /// Runs `phases` phases, each after `compute`.
    fn run(&self, phases: u32, compute: Duration) -> Result<i32> {
        if self.threads == 0 {
            return Err(Usage("--threads must be at least 1".into()).into());
        }
        // One buffer of a transfer per rank: keep it to what memory can hold.
        let transfer = usize::try_from(self.transfer)
            .ok()
            .filter(|t| (1..=1 << 30).contains(t))
            .ok_or_else(|| {
                Usage(format!(
                    "--transfer {}: must be from 1 byte to 1GiB",
                    self.transfer
                ))
            })?;
        let spec = IorSpec {
            dir: self.dir.clone(),
            access: if self.read {
                Access::Read
            } else {
                Access::Write
            },
            layout: if self.file_per_process {
                Layout::FilePerProcess
            } else {
                Layout::Shared
            },
            transfer,
            volume: self.volume,
            threads: self.threads,
            phases,
            compute,
            keep: self.keep,
        };
        let csv = self.csv;
        let report = ior::run(&spec, |sec, calls, bytes| {
            print!("{}", figures::ior_second(csv, sec, calls, bytes));
        })?;
        print!("{}", figures::ior_total(csv, &report));
        Ok(0)
    }
}
