//! `sluice demo`: two jobs under different rules, side by side, live.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use anyhow::{Context, Result};

use sluice_workload::plot::{Series, svg};

use crate::Usage;

/// Show two jobs held to their limits, live.
///
/// Runs two jobs at once on this node, each a metadata load under its own rule, and prints
/// every second the rate each achieved against its limit, then a summary. Nothing to set
/// up: the jobs run under `sluice run` in a temporary directory.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Seconds to run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Directory to work in (default: a new one under the system's temporary directory).
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// Also write the per-second rates to OUT/demo.csv and a chart to OUT/demo.svg.
    #[arg(long, value_name = "OUT")]
    out: Option<std::path::PathBuf>,
}

struct Job {
    name: &'static str,
    rule: &'static str,
    limit: f64,
    ops: &'static str,
    threads: &'static str,
}

const JOBS: [Job; 2] = [
    Job {
        name: "sim",
        rule: "sim-stats: op=getattr rate=2000/s",
        limit: 2000.0,
        ops: "getattr",
        threads: "2",
    },
    Job {
        name: "post",
        rule: "post-md: class=metadata rate=500/s",
        limit: 500.0,
        ops: "getattr,access,setattr",
        threads: "4",
    },
];

impl DemoArgs {
    /// Runs the demo.
    pub fn run(&self) -> Result<i32> {
        if self.seconds == 0 {
            return Err(Usage("--seconds must be at least 1".into()).into());
        }
        let tmp;
        let dir = match &self.dir {
            Some(d) => d.clone(),
            None => {
                tmp = TempDir::new()?;
                tmp.0.clone()
            }
        };
        let me = std::env::current_exe()?;
        println!("Two jobs share this node's file system; each is held to its own rule.\n");
        for j in &JOBS {
            println!(
                "  job {:<5} rule '{}'  load: {} with {} threads",
                j.name, j.rule, j.ops, j.threads
            );
        }
        println!(
            "\n{:>4}  {:>18}  {:>18}",
            "sec",
            format!("{} ops/s", JOBS[0].name),
            format!("{} ops/s", JOBS[1].name)
        );
        let (tx, rx) = mpsc::channel::<(usize, u64, u64)>();
        let mut children = Vec::new();
        for (i, j) in JOBS.iter().enumerate() {
            let mut child = Command::new(&me)
                .args(["run", "--job", j.name, "--rule", j.rule, "--mount"])
                .arg(&dir)
                .args([
                    "--",
                    me.to_str().unwrap_or("sluice"),
                    "load",
                    "--csv",
                    "--dir",
                ])
                .arg(&dir)
                .args([
                    "--ops",
                    j.ops,
                    "--threads",
                    j.threads,
                    "--duration",
                    &self.seconds.to_string(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .context("cannot start a demo job")?;
            let out = child.stdout.take().context("no output pipe")?;
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if let Some((s, n)) = line.split_once(',')
                        && let (Ok(s), Ok(n)) = (s.parse(), n.parse())
                    {
                        let _ = tx.send((i, s, n));
                    }
                }
            });
            children.push(child);
        }
        drop(tx);
        let mut rows: Vec<[Option<u64>; 2]> = Vec::new();
        let mut printed = 0;
        for (i, s, n) in rx {
            let s = s as usize;
            if rows.len() < s {
                rows.resize(s, [None, None]);
            }
            rows[s - 1][i] = Some(n);
            while printed < rows.len() && rows[printed].iter().all(Option::is_some) {
                let r = rows[printed];
                println!(
                    "{:>4}  {}  {}",
                    printed + 1,
                    cell(r[0], JOBS[0].limit),
                    cell(r[1], JOBS[1].limit)
                );
                printed += 1;
            }
        }
        for mut c in children {
            c.wait()?;
        }
        if let Some(out) = &self.out {
            write_figures(out, &rows)?;
        }
        println!("\nsummary (mean of whole seconds):");
        for (i, j) in JOBS.iter().enumerate() {
            let v: Vec<u64> = rows.iter().filter_map(|r| r[i]).collect();
            let mean = v.iter().sum::<u64>() as f64 / v.len().max(1) as f64;
            println!(
                "  job {:<5} {:>8.1} ops/s against a limit of {:>6.0}/s ({:+.2}%)",
                j.name,
                mean,
                j.limit,
                (mean / j.limit - 1.0) * 100.0
            );
        }
        Ok(0)
    }
}

/// The run as CSV (second, then each job's rate) and as a chart.
fn write_figures(out: &std::path::Path, rows: &[[Option<u64>; 2]]) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut csv = format!("second,{},{}\n", JOBS[0].name, JOBS[1].name);
    for (i, r) in rows.iter().enumerate() {
        csv += &format!("{},{},{}\n", i + 1, r[0].unwrap_or(0), r[1].unwrap_or(0));
    }
    let series: Vec<Series> = JOBS
        .iter()
        .enumerate()
        .map(|(i, j)| Series {
            name: format!("{} ({})", j.name, j.rule),
            values: rows.iter().map(|r| r[i].unwrap_or(0) as f64).collect(),
            limit: Some(j.limit),
        })
        .collect();
    let svg = svg(
        "sluice demo: achieved rate against each job's limit",
        "operations per second",
        &series,
    );
    std::fs::write(out.join("demo.csv"), csv)?;
    std::fs::write(out.join("demo.svg"), svg)?;
    println!("\nwrote {0}/demo.csv and {0}/demo.svg", out.display());
    Ok(())
}

fn cell(n: Option<u64>, limit: f64) -> String {
    let n = n.unwrap_or(0);
    let bar = "#".repeat(((n as f64 / limit) * 8.0).round().min(12.0) as usize);
    format!("{n:>6} {bar:<9}")
}

struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> Result<Self> {
        let p = std::env::temp_dir().join(format!("sluice-demo.{}", std::process::id()));
        std::fs::create_dir_all(&p).with_context(|| format!("cannot create {}", p.display()))?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
