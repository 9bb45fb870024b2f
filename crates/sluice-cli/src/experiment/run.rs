//! Running a scenario's set-ups: one local controller per controlled set-up, each job's
//! replayer processes started at their times, sampled every interval.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use sluice_workload::synth::{SynthSpec, synth};

use super::scenario::{Scenario, Setup};
use super::summary::{Outcome, write_outputs};
use crate::Usage;

/// Runs the scenario at `path`; returns the exit status.
pub fn run(path: &Path, out: Option<&Path>, only: &[String]) -> Result<i32> {
    // A scenario that cannot be read is bad input: nothing runs.
    let sc = Scenario::load(path).map_err(|e| Usage(format!("{e:#}")))?;
    for name in only {
        if !sc.setups.iter().any(|s| &s.name == name) {
            return Err(Usage(format!(
                "--setup {name}: no such set-up in {}",
                path.display()
            ))
            .into());
        }
    }
    let out = out.map_or_else(
        || PathBuf::from("experiments").join(&sc.name),
        Path::to_owned,
    );
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    // Absolute: the jobs' --mount must be.
    let out = out.canonicalize()?;
    let trace = out.join("trace.csv");
    let spec = SynthSpec {
        mean: sc.trace.mean.per_sec as f64,
        seconds: sc.trace.seconds,
        seed: sc.trace.seed,
    };
    let mut file = std::fs::File::create(&trace)
        .with_context(|| format!("cannot write {}", trace.display()))?;
    synth(&spec).write_csv(&mut file)?;
    let me = std::env::current_exe().context("cannot find the sluice binary")?;
    let mut outcomes = Vec::new();
    for setup in sc
        .setups
        .iter()
        .filter(|s| only.is_empty() || only.contains(&s.name))
    {
        println!("{}: {} ({})", sc.name, setup.name, setup.algorithm);
        let outcome = run_setup(&sc, setup, &me, &trace, &out)?;
        println!(
            "  makespan {:.0} s, {} s over capacity",
            outcome.makespan(),
            outcome.seconds_over(sc.pool.capacity.per_sec as f64)
        );
        outcomes.push(outcome);
    }
    write_outputs(&sc, &outcomes, &out)?;
    println!("wrote {}/summary.md", out.display());
    Ok(0)
}

/// Processes killed when dropped.
struct Reaper(Vec<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One set-up, start to end.
fn run_setup(sc: &Scenario, setup: &Setup, me: &Path, trace: &Path, out: &Path) -> Result<Outcome> {
    let work = out.join(format!(".work-{}", std::process::id()));
    // The controller's segments, on tmpfs, in a directory of the set-up's own: the
    // controller is killed at the end, so the segments it held are removed here.
    let shm = Path::new("/dev/shm").join(format!("sluice-experiment.{}", std::process::id()));
    for dir in [&work, &shm] {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir)?;
    }
    let result = run_in(sc, setup, me, trace, &work, &shm);
    for dir in [&work, &shm] {
        let _ = std::fs::remove_dir_all(dir);
    }
    result
}

fn run_in(
    sc: &Scenario,
    setup: &Setup,
    me: &Path,
    trace: &Path,
    work: &Path,
    shm: &Path,
) -> Result<Outcome> {
    let controlled = setup.algorithm != "none";
    let socket = work.join("local.sock");
    let mut local = Reaper(Vec::new());
    if controlled {
        std::fs::write(work.join("local.toml"), sc.local_config(&setup.algorithm))?;
        let log = std::fs::File::create(work.join("local.log"))?;
        local.0.push(
            Command::new(me)
                .arg("local")
                .arg("--socket")
                .arg(&socket)
                .arg("--state-dir")
                .arg(work.join("state"))
                .arg("--shm-dir")
                .arg(shm)
                .arg("--config")
                .arg(work.join("local.toml"))
                .args(["--node", "n1"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .context("cannot start sluice local")?,
        );
        wait_ready(me, &socket, work)?;
    }
    let start = Instant::now();
    let mut procs = Reaper(Vec::new());
    // Per process: its job, its CSV, when it started (s from the set-up's start).
    let mut meta: Vec<(usize, PathBuf, f64)> = Vec::new();
    let mut started = vec![false; sc.jobs.len()];
    let mut ended: Vec<Option<f64>> = vec![None; sc.jobs.len()];
    let mut allocation: BTreeMap<(usize, u64), f64> = BTreeMap::new();
    let mut next_sample = sc.interval;
    let mut timed_out = false;
    loop {
        let now = start.elapsed();
        for (i, job) in sc.jobs.iter().enumerate() {
            if started[i] || now < job.start {
                continue;
            }
            started[i] = true;
            for p in 0..job.processes {
                let dir = work.join("data").join(&job.name).join(p.to_string());
                std::fs::create_dir_all(&dir)?;
                let csv = work.join(format!("{}-{p}.csv", job.name));
                let err = std::fs::File::create(work.join(format!("{}-{p}.err", job.name)))?;
                let scale = job.load / job.processes as f64;
                let mut cmd = Command::new(me);
                if controlled {
                    cmd.arg("run")
                        .arg("--socket")
                        .arg(&socket)
                        .args(["--job", &job.name, "--mount"])
                        .arg(work.join("data"))
                        .arg("--")
                        .arg(me);
                }
                cmd.arg("replay")
                    .arg(trace)
                    .arg("--dir")
                    .arg(&dir)
                    .args(["--scale", &scale.to_string(), "--csv"])
                    .arg(&csv)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(err);
                procs
                    .0
                    .push(cmd.spawn().context("cannot start a replayer")?);
                meta.push((i, csv, now.as_secs_f64()));
            }
        }
        // A job ends when all its processes have.
        for (i, _) in sc.jobs.iter().enumerate() {
            if !started[i] || ended[i].is_some() {
                continue;
            }
            let mut all = true;
            for (k, child) in procs.0.iter_mut().enumerate() {
                match child.try_wait()? {
                    _ if meta[k].0 != i => {}
                    None => all = false,
                    Some(status) if !status.success() => {
                        let err = meta[k].1.with_extension("err");
                        bail!(
                            "{}: a replayer of job {} failed ({status}): {}",
                            setup.name,
                            sc.jobs[i].name,
                            std::fs::read_to_string(err).unwrap_or_default().trim()
                        );
                    }
                    Some(_) => {}
                }
            }
            if all {
                ended[i] = Some(now.as_secs_f64());
            }
        }
        if controlled && now >= next_sample {
            let second = next_sample.as_secs_f64().round() as u64;
            for (i, a) in sample_allocations(me, &socket, sc)? {
                allocation.insert((i, second), a);
            }
            next_sample += sc.interval;
        }
        if ended.iter().all(Option::is_some) {
            break;
        }
        if now >= sc.timeout {
            timed_out = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(procs);
    drop(local);
    if timed_out {
        eprintln!(
            "  {}: timed out after {:?}; jobs still running were stopped",
            setup.name, sc.timeout
        );
    }
    let mut calls: BTreeMap<(usize, u64), f64> = BTreeMap::new();
    for (job, csv, at) in &meta {
        let Ok(text) = std::fs::read_to_string(csv) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            let (Some(s), Some(done)) = (f.first(), f.get(3)) else {
                continue;
            };
            let (Ok(s), Ok(done)) = (s.parse::<f64>(), done.parse::<f64>()) else {
                continue;
            };
            *calls.entry((*job, (at + s).floor() as u64)).or_default() += done;
        }
    }
    Ok(Outcome {
        setup: setup.name.clone(),
        algorithm: setup.algorithm.clone(),
        jobs: sc.jobs.iter().map(|j| j.name.clone()).collect(),
        starts: sc.jobs.iter().map(|j| j.start.as_secs_f64()).collect(),
        ends: ended,
        calls,
        allocation,
    })
}

/// Waits until the local controller answers.
fn wait_ready(me: &Path, socket: &Path, work: &Path) -> Result<()> {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(20) {
        let ok = Command::new(me)
            .arg("status")
            .arg("--socket")
            .arg(socket)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = std::fs::read_to_string(work.join("local.log")).unwrap_or_default();
    bail!("sluice local did not start:\n{log}")
}

/// Each job's allocation in the pool now, from `sluice jobs --json`.
fn sample_allocations(me: &Path, socket: &Path, sc: &Scenario) -> Result<Vec<(usize, f64)>> {
    let o = Command::new(me)
        .args(["jobs", "--json", "--socket"])
        .arg(socket)
        .stdin(Stdio::null())
        .output()
        .context("sluice jobs")?;
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    let mut found = Vec::new();
    for j in v["jobs"].as_array().into_iter().flatten() {
        let Some(i) = sc.jobs.iter().position(|x| j["job"] == x.name.as_str()) else {
            continue;
        };
        if let Some(a) = j["pools"][&sc.pool.name]["allocation"].as_f64() {
            found.push((i, a));
        }
    }
    Ok(found)
}
