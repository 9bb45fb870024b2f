//! Running a scenario's set-ups: one local controller per controlled set-up (or, for a
//! scenario of several nodes, a global and a local per node on this machine), each job's
//! processes (trace replayers, data writers and readers, real programs) started at their
//! times, the allocations sampled every second, and every process's figures read back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::synth::{SynthSpec, synth};
use anyhow::{Context, Result, bail};
use sluice_control::source::{self, Counters, ServerReading};
use sluice_core::rule::Rate;

use super::ExperimentError;
use super::fs::{CephFs, LoopFs};
use super::scenario::{Job, Scenario, Setup, Workload};
use super::summary::{Outcome, PhaseRecord, write_outputs};
use crate::harness::{LocalPlace, Process, Sluice, tail};

/// Runs the scenario at `path`; returns the exit status.
pub fn run(path: &Path, out: Option<&Path>, only: &[String]) -> Result<i32, ExperimentError> {
    // A scenario that cannot be read is bad input: nothing runs.
    let sc = Scenario::load(path).map_err(|e| ExperimentError::Scenario(format!("{e:#}")))?;
    for name in only {
        if !sc.setups.iter().any(|s| &s.name == name) {
            return Err(ExperimentError::Scenario(format!(
                "--setup {name}: no such set-up in {}",
                path.display()
            )));
        }
    }
    Ok(run_scenario(&sc, out, only)?)
}

/// Runs the set-ups of `sc` named in `only` (all when empty).
fn run_scenario(sc: &Scenario, out: Option<&Path>, only: &[String]) -> Result<i32> {
    let out = out.map_or_else(
        || PathBuf::from("experiments").join(&sc.name),
        Path::to_owned,
    );
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    // Absolute: the jobs' --mount must be.
    let out = out.canonicalize()?;
    let trace = out.join("trace.csv");
    if let Some(t) = &sc.trace {
        let spec = SynthSpec {
            mean: t.mean.per_sec as f64,
            seconds: t.seconds,
            seed: t.seed,
        };
        let mut file = std::fs::File::create(&trace)
            .with_context(|| format!("cannot write {}", trace.display()))?;
        synth(&spec).write_csv(&mut file)?;
    }
    let me = std::env::current_exe().context("cannot find the sluice binary")?;
    // The file system lives through every set-up, each in a directory of its own on it.
    let fs = sc.filesystem.as_ref().map(LoopFs::make).transpose()?;
    let ceph = match &sc.cephfs {
        Some(spec) => Some(CephFs::make(&sc.clients(), &spec.small_cache)?),
        None => None,
    };
    let mut outcomes = Vec::new();
    for setup in sc
        .setups
        .iter()
        .filter(|s| only.is_empty() || only.contains(&s.name))
    {
        if setup.algorithm != "none" && sluice_policy::registry::find(&setup.algorithm).is_err() {
            println!(
                "{}: {} skipped: no algorithm {:?} in this build",
                sc.name, setup.name, setup.algorithm
            );
            continue;
        }
        println!("{}: {} ({})", sc.name, setup.name, setup.algorithm);
        let data_root = fs.as_ref().map(|f| f.mount().to_owned());
        let outcome = run_setup(
            sc,
            setup,
            &me,
            &trace,
            &out,
            data_root.as_deref(),
            ceph.as_ref(),
        )?;
        println!(
            "  makespan {:.1} s, {} s over capacity",
            outcome.makespan(),
            outcome.seconds_over(sc.pool.capacity.per_sec as f64)
        );
        outcomes.push(outcome);
    }
    drop(fs);
    drop(ceph);
    write_outputs(sc, &outcomes, &out)?;
    println!("wrote {}/summary.md", out.display());
    Ok(0)
}

/// One set-up, start to end.
fn run_setup(
    sc: &Scenario,
    setup: &Setup,
    me: &Path,
    trace: &Path,
    out: &Path,
    data_root: Option<&Path>,
    ceph: Option<&CephFs>,
) -> Result<Outcome> {
    let work = out.join(format!(".work-{}", std::process::id()));
    // The controller's segments, on tmpfs, in a directory of the set-up's own: the
    // controller is killed at the end, so the segments it held are removed here.
    let shm = Path::new("/dev/shm").join(format!("sluice-experiment.{}", std::process::id()));
    // The jobs' files: on the scenario's file system, else in the working directory.
    let data = data_root.map_or_else(|| work.join("data"), |r| r.join("data"));
    // On CephFS, each client's mount has the set-up's data directory, and the stage
    // manages the directory holding every mount.
    let clients: BTreeMap<String, PathBuf> = ceph
        .map(|c| {
            sc.clients()
                .into_iter()
                .map(|name| {
                    let dir = c.mount(&name).join("data");
                    (name, dir)
                })
                .collect()
        })
        .unwrap_or_default();
    let managed = ceph.map_or_else(|| data.clone(), |c| c.root().to_owned());
    let dirs: Vec<&PathBuf> = [&work, &shm, &data]
        .into_iter()
        .filter(|d| ceph.is_none() || **d != data)
        .chain(clients.values())
        .collect();
    for dir in &dirs {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir)?;
    }
    let mds = ceph.map(CephFs::mds_socket);
    let result = run_in(
        sc,
        setup,
        &Paths {
            me,
            trace,
            work: &work,
            shm: &shm,
            data: &data,
            managed: &managed,
            clients: &clients,
            mds: mds.as_deref(),
            direct: data_root.is_some(),
        },
    );
    for dir in &dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
    result
}

/// Where a set-up's pieces are.
struct Paths<'a> {
    me: &'a Path,
    trace: &'a Path,
    work: &'a Path,
    shm: &'a Path,
    /// The directory holding every job's files (without `[cephfs]`).
    data: &'a Path,
    /// What the jobs' stage manages: `data`, or the directory of the CephFS mounts.
    managed: &'a Path,
    /// With `[cephfs]`: each client's directory for the set-up's files, on its mount.
    clients: &'a BTreeMap<String, PathBuf>,
    /// With `[cephfs]`: the MDS's admin socket, read each second.
    mds: Option<&'a Path>,
    /// Whether data calls use O_DIRECT (on a real device; tmpfs and the like refuse it
    /// or would bypass nothing).
    direct: bool,
}

/// One process of one part of a job.
struct Unit {
    job: usize,
    /// Its per-second CSV.
    csv: PathBuf,
    /// What it records besides.
    kind: Records,
    /// When it was started, s from the set-up's start.
    at: f64,
}

/// What a process records: a trace replayer's seconds are its own (`second,op,due,done,
/// backlog`); a data process's and a command's are the epoch's (`unix_s,amount`).
enum Records {
    /// A trace replayer.
    Replay,
    /// A data process, with its phases CSV.
    Data(PathBuf),
    /// A command, with its run's times (`start,end,status`).
    Command(PathBuf),
}

impl Paths<'_> {
    /// Where `job`'s processes keep their directories: on its client's mount with
    /// `[cephfs]`, else `data`.
    fn data_of(&self, job: &Job) -> PathBuf {
        match self
            .clients
            .get(job.client.as_deref().unwrap_or(DEFAULT_CLIENT))
        {
            Some(dir) => dir.clone(),
            None => self.data.to_owned(),
        }
    }
}

/// The ceph-fuse client of a job that names none.
pub const DEFAULT_CLIENT: &str = "fuse";

/// A command job's directory: `{dir}` in its argv and set-up.
fn job_dir(p: &Paths<'_>, job: &Job) -> PathBuf {
    p.data_of(job).join(&job.name)
}

/// `argv` with `{dir}`, `{sluice}`, `{work}` (the set-up's working directory, on local
/// disk) and `{cwd}` (where the run was started) replaced.
fn expand(argv: &[String], dir: &Path, p: &Paths<'_>) -> Vec<String> {
    let cwd = std::env::current_dir().unwrap_or_default();
    argv.iter()
        .map(|a| {
            a.replace("{dir}", &dir.display().to_string())
                .replace("{sluice}", &p.me.display().to_string())
                .replace("{work}", &p.work.display().to_string())
                .replace("{cwd}", &cwd.display().to_string())
        })
        .collect()
}

/// Runs every command job's set-up, one after another, before the set-up's clock starts:
/// bare (outside the stage), in the job's directory, not timed.
fn prepare(sc: &Scenario, setup: &Setup, p: &Paths<'_>) -> Result<()> {
    for job in &sc.jobs {
        for part in job.workload.list() {
            let Workload::Command { setup: argv, .. } = part else {
                continue;
            };
            let dir = job_dir(p, job);
            std::fs::create_dir_all(&dir)?;
            if argv.is_empty() {
                continue;
            }
            let argv = expand(argv, &dir, p);
            let o = Command::new(&argv[0])
                .args(&argv[1..])
                .current_dir(&dir)
                .stdin(Stdio::null())
                .output()
                .with_context(|| format!("job {}: cannot run its setup {:?}", job.name, argv[0]))?;
            if !o.status.success() {
                bail!(
                    "{}: the setup of job {} failed ({}): {}",
                    setup.name,
                    job.name,
                    o.status,
                    tail(&String::from_utf8_lossy(&o.stderr))
                );
            }
        }
    }
    Ok(())
}

/// The command of one process of a part: what it runs, bare (the caller puts it under
/// `sluice run` when the set-up is controlled, and a command part always). Returns the
/// command and what it records besides its per-second CSV. `clock`: the set-up's start,
/// in seconds since the epoch.
fn command(
    sc: &Scenario,
    job: &Job,
    part: &Workload,
    name: &str,
    p: &Paths<'_>,
    clock: f64,
) -> Result<(Vec<std::ffi::OsString>, Records)> {
    // A process's own directory; a command's is its job's (`job_dir`).
    let dir = p.data_of(job).join(name);
    if !matches!(part, Workload::Command { .. }) {
        std::fs::create_dir_all(&dir)?;
    }
    let csv = p.work.join(format!("{name}.csv"));
    let mut args: Vec<std::ffi::OsString> = vec![p.me.into()];
    match part {
        Workload::Trace => {
            let scale = job.load / job.processes as f64;
            args.extend(["replay".into(), p.trace.into(), "--dir".into(), dir.into()]);
            args.extend(["--scale".into(), scale.to_string().into(), "--csv".into()]);
            args.push(csv.into());
            Ok((args, Records::Replay))
        }
        Workload::Command { argv, .. } => {
            // The program runs in the job's directory (made by `prepare`), counted by
            // `sluice experiment command` from the stage's counters.
            let dir = job_dir(p, job);
            let times = p.work.join(format!("{name}.times.csv"));
            args.extend(["experiment".into(), "command".into(), "--csv".into()]);
            args.extend([csv.into(), "--times".into(), times.clone().into()]);
            args.extend(["--dir".into(), dir.clone().into(), "--clock".into()]);
            // Its calls are counted in the set-up's whole seconds.
            args.extend([format!("{clock:.6}").into(), "--".into()]);
            args.extend(expand(argv, &dir, p).into_iter().map(Into::into));
            Ok((args, Records::Command(times)))
        }
        Workload::Continuous { .. } | Workload::Bursty { .. } | Workload::Periodic { .. } => {
            let phases = p.work.join(format!("{name}.phases.csv"));
            // Each data file wraps within its share of the file system, so that no run
            // fills it.
            let files: u32 = sc
                .jobs
                .iter()
                .flat_map(|j| {
                    j.workload
                        .list()
                        .iter()
                        .filter_map(|w| w.data())
                        .map(|io| io.threads * j.processes)
                })
                .sum();
            let file_size = sc.filesystem.as_ref().map_or(256 << 20, |f| {
                (f.size / 10 * 7 / u64::from(files.max(1))).clamp(16 << 20, 1 << 30)
            });
            args.extend(["experiment".into(), "data".into(), "--spec".into()]);
            args.push(serde_json::to_string(part)?.into());
            args.extend(["--dir".into(), dir.into(), "--csv".into(), csv.into()]);
            args.extend(["--phases".into(), phases.clone().into()]);
            args.extend(["--file-size".into(), file_size.to_string().into()]);
            if p.direct {
                args.push("--direct".into());
            }
            if let Some(stop) = sc.metrics.stop {
                let until = (stop - job.start.as_secs_f64()).max(0.0);
                args.extend(["--until".into(), until.to_string().into()]);
            }
            Ok((args, Records::Data(phases)))
        }
    }
}

/// One set-up's run in progress: its controllers, the processes started so far and what
/// was sampled of them.
struct SetupRun<'a> {
    sc: &'a Scenario,
    setup: &'a Setup,
    p: &'a Paths<'a>,
    controlled: bool,
    /// Each node's local controller's socket; node 0's also answers for the cluster.
    sockets: Vec<PathBuf>,
    start: Instant,
    start_unix: f64,
    /// The jobs' processes, one [`Unit`] each, in the same order.
    procs: Vec<Process>,
    units: Vec<Unit>,
    /// Per job and part: started yet?
    started: Vec<Vec<bool>>,
    /// Per job: when it ended, s from the set-up's start.
    ended: Vec<Option<f64>>,
    allocation: BTreeMap<(usize, u64), f64>,
    next_sample: Duration,
    /// The MDS's figures per second of the set-up, from the differences of its counters.
    mds: BTreeMap<u64, ServerReading>,
    mds_last: Option<(Instant, Counters)>,
    next_mds: Duration,
    /// The nodes the controller saw each job on.
    seen_on: Vec<BTreeSet<String>>,
}

/// Allocations are sampled once a second at most: the timeline is per second.
fn sample_every(sc: &Scenario) -> Duration {
    sc.interval.max(Duration::from_secs(1))
}

fn run_in(sc: &Scenario, setup: &Setup, p: &Paths<'_>) -> Result<Outcome> {
    let controlled = setup.algorithm != "none";
    prepare(sc, setup, p)?;
    let (controllers, sockets) = if controlled {
        start_controllers(sc, setup, p)?
    } else {
        Default::default()
    };
    let mut run = SetupRun {
        sc,
        setup,
        p,
        controlled,
        sockets,
        start: Instant::now(),
        start_unix: unix_now(),
        procs: Vec::new(),
        units: Vec::new(),
        started: sc
            .jobs
            .iter()
            .map(|j| vec![false; j.workload.list().len()])
            .collect(),
        ended: vec![None; sc.jobs.len()],
        allocation: BTreeMap::new(),
        next_sample: sample_every(sc),
        mds: BTreeMap::new(),
        mds_last: None,
        next_mds: Duration::ZERO,
        seen_on: vec![BTreeSet::new(); sc.jobs.len()],
    };
    let timed_out = loop {
        let now = run.start.elapsed();
        run.start_due(now)?;
        run.note_ended(now)?;
        run.sample_allocations(now)?;
        run.read_mds(now);
        if run.ended.iter().all(Option::is_some) {
            break false;
        }
        if now >= sc.timeout {
            break true;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // The jobs first, then the controllers they were attached to.
    run.procs.clear();
    drop(controllers);
    run.report(timed_out);
    Ok(run.outcome())
}

impl SetupRun<'_> {
    /// Starts the processes of every part whose time has come.
    fn start_due(&mut self, now: Duration) -> Result<()> {
        let sc = self.sc;
        for (i, job) in sc.jobs.iter().enumerate() {
            for (k, part) in job.workload.list().iter().enumerate() {
                let delay = part.data().map_or(0.0, |io| io.delay);
                let due = job.start + Duration::from_secs_f64(delay);
                if self.started[i][k] || now < due {
                    continue;
                }
                self.started[i][k] = true;
                for n in 0..job.processes {
                    self.start_process(i, k, part, n, now)?;
                }
            }
        }
        Ok(())
    }

    /// Starts process `n` of part `k` of job `i`: under `sluice run` attached to its
    /// node's local when controlled, standalone for an uncontrolled command, else bare.
    fn start_process(
        &mut self,
        i: usize,
        k: usize,
        part: &Workload,
        n: u32,
        now: Duration,
    ) -> Result<()> {
        let (sc, p) = (self.sc, self.p);
        let job = &sc.jobs[i];
        let name = format!("{}-{k}-{n}", job.name);
        let (args, kind) = command(sc, job, part, &name, p, self.start_unix)?;
        let mut cmd = Command::new(p.me);
        if self.controlled {
            // Process n on the n-th of its nodes, in turn: one job, the same id,
            // attached through each node's local.
            let placement = job.placement();
            let node = placement[n as usize % placement.len()] as usize;
            cmd.arg("run")
                .arg("--socket")
                .arg(&self.sockets[node])
                .args(["--job", &job.name, "--mount"])
                .arg(p.managed);
            // Root's launcher names the job's account and user, as a Slurm prolog does:
            // a tree groups the job by them.
            if let Some(account) = &job.account {
                cmd.args(["--account", account]);
            }
            if let Some(uid) = job.uid {
                cmd.args(["--uid", &uid.to_string()]);
            }
            cmd.arg("--").args(&args);
            if let Some(nodes) = job.reported_nodes() {
                // The launcher reports the job's nodes from the resource manager's
                // environment: AdapTBF's priority.
                cmd.env("SLURM_JOB_NUM_NODES", nodes.to_string());
            }
        } else if matches!(part, Workload::Command { .. }) {
            // Uncontrolled, a program still runs under the stage, standalone, with one
            // rule of the pool's filter: the set-up's limit for the job, a static rule
            // as `sluice run --rule` sets one with no controller; without a limit, one
            // that never holds (1000 times the capacity), so that its calls are counted
            // as a controlled set-up's pool counts them, at the same cost per call.
            let rate = match self.setup.limits.get(&job.name) {
                Some(limit) => limit.clone(),
                None => Rate {
                    per_sec: sc.pool.capacity.per_sec.saturating_mul(1000),
                    unit: sc.pool.capacity.unit,
                }
                .to_string(),
            };
            cmd.args(["run", "--standalone", "--job", &job.name, "--mount"])
                .arg(p.managed)
                .arg("--rule")
                .arg(format!("{} rate={rate}", sc.pool.matches))
                .arg("--")
                .args(&args);
        } else {
            cmd.args(&args[1..]);
        }
        let err = p.work.join(format!("{name}.err"));
        self.procs
            .push(Process::logged(&mut cmd, &err).context("cannot start a job's process")?);
        self.units.push(Unit {
            job: i,
            csv: p.work.join(format!("{name}.csv")),
            kind,
            at: now.as_secs_f64(),
        });
        Ok(())
    }

    /// Notes the jobs that ended: all their parts started and all their processes
    /// ended. A process that failed fails the set-up.
    fn note_ended(&mut self, now: Duration) -> Result<()> {
        for i in 0..self.sc.jobs.len() {
            if !self.started[i].iter().all(|s| *s) || self.ended[i].is_some() {
                continue;
            }
            let mut all = true;
            for (k, proc) in self.procs.iter_mut().enumerate() {
                match proc.child.try_wait()? {
                    _ if self.units[k].job != i => {}
                    None => all = false,
                    Some(status) if !status.success() => bail!(
                        "{}: a process of job {} failed ({status}): {}",
                        self.setup.name,
                        self.sc.jobs[i].name,
                        tail(&proc.log_text())
                    ),
                    Some(_) => {}
                }
            }
            if all {
                self.ended[i] = Some(now.as_secs_f64());
            }
        }
        Ok(())
    }

    /// Each job's allocation and nodes, when a sample is due.
    fn sample_allocations(&mut self, now: Duration) -> Result<()> {
        if !self.controlled || now < self.next_sample {
            return Ok(());
        }
        let second = self.next_sample.as_secs_f64().round() as u64;
        for (i, a, nodes) in allocations(self.p.me, &self.sockets[0], self.sc)? {
            self.allocation.insert((i, second), a);
            self.seen_on[i].extend(nodes);
        }
        self.next_sample += sample_every(self.sc);
        Ok(())
    }

    /// The MDS's counters, once a second, with `[cephfs]`.
    fn read_mds(&mut self, now: Duration) {
        let Some(sock) = self.p.mds else { return };
        if now < self.next_mds {
            return;
        }
        let second = self.next_mds.as_secs();
        match source::ceph::read(sock, Duration::from_millis(500)) {
            Ok(c) => {
                let t = Instant::now();
                if let Some((at, before)) = &self.mds_last
                    && let Some(r) =
                        ServerReading::between(before, &c, t.duration_since(*at).as_secs_f64())
                {
                    self.mds.insert(second, r);
                }
                self.mds_last = Some((t, c));
            }
            // A second missed: the next reading spans two.
            Err(e) => eprintln!("  {}: MDS not read at {second} s: {e}", self.setup.name),
        }
        self.next_mds += Duration::from_secs(1);
    }

    /// Says where the jobs ran (several nodes) and whether the set-up timed out.
    fn report(&self, timed_out: bool) {
        if self.controlled && self.sc.nodes > 1 {
            for (job, on) in self.sc.jobs.iter().zip(&self.seen_on) {
                let on: Vec<&str> = on.iter().map(String::as_str).collect();
                println!("  job {} ran on nodes: {}", job.name, on.join(", "));
            }
        }
        if timed_out {
            eprintln!(
                "  {}: timed out after {:?}; jobs still running were stopped",
                self.setup.name, self.sc.timeout
            );
        }
    }

    /// The set-up's figures, read back from its processes' files.
    fn outcome(mut self) -> Outcome {
        let sc = self.sc;
        // A job that ran to `metrics.stop` was stopped there (one that ended on its own
        // ended before it).
        if let Some(stop) = sc.metrics.stop {
            for end in &mut self.ended {
                *end = end.filter(|e| *e < stop);
            }
        }
        let (calls, phases) = collect(&self.units, self.start_unix);
        // A command job's completion is its program's own run time, from its start to
        // its exit, as the program's wrapper measured it (without the launcher's
        // start-up).
        for u in &self.units {
            if let (Records::Command(times), Some(end)) = (&u.kind, &mut self.ended[u.job])
                && let Some(took) = command_took(times)
            {
                *end = sc.jobs[u.job].start.as_secs_f64() + took;
            }
        }
        Outcome {
            setup: self.setup.name.clone(),
            algorithm: self.setup.algorithm.clone(),
            jobs: sc.jobs.iter().map(|j| j.name.clone()).collect(),
            starts: sc.jobs.iter().map(|j| j.start.as_secs_f64()).collect(),
            ends: self.ended,
            calls,
            allocation: self.allocation,
            phases,
            limits: (0..sc.jobs.len())
                .map(|i| sc.limit(self.setup, i).map(|r| r.per_sec as f64))
                .collect(),
            desired: (0..sc.jobs.len())
                .map(|i| sc.desired(self.setup, i).map(|r| r.per_sec as f64))
                .collect(),
            mds: self.mds,
        }
    }
}

/// A command's run time from its `start,end,status` file.
fn command_took(times: &Path) -> Option<f64> {
    let t = std::fs::read_to_string(times).ok()?;
    let f: Vec<f64> = t
        .lines()
        .nth(1)?
        .split(',')
        .filter_map(|x| x.parse().ok())
        .collect();
    Some(f.get(1)? - f.first()?)
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Every process's figures, on the set-up's clock: calls (or bytes) per job and second,
/// and the data parts' phases.
fn collect(units: &[Unit], start_unix: f64) -> (BTreeMap<(usize, u64), f64>, Vec<PhaseRecord>) {
    let mut calls: BTreeMap<(usize, u64), f64> = BTreeMap::new();
    let mut phases = Vec::new();
    for (u, unit) in units.iter().enumerate() {
        let Ok(text) = std::fs::read_to_string(&unit.csv) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            let number = |k: usize| f.get(k).and_then(|x| x.parse::<f64>().ok());
            // A replayer's line: second,op,due,done,backlog, its seconds from its own
            // start; a data process's: unix_s,bytes; a command's: unix_s,calls.
            let (at, amount) = match unit.kind {
                Records::Replay => match (number(0), number(3)) {
                    (Some(s), Some(done)) => (unit.at + s, done),
                    _ => continue,
                },
                Records::Data(_) => match (number(0), number(1)) {
                    (Some(t), Some(bytes)) => (t - start_unix, bytes),
                    _ => continue,
                },
                // A command's rows are the set-up's own whole seconds (see `command`).
                Records::Command(_) => match (number(0), number(1)) {
                    (Some(t), Some(calls)) => ((t - start_unix).round(), calls),
                    _ => continue,
                },
            };
            *calls
                .entry((unit.job, at.max(0.0).floor() as u64))
                .or_default() += amount;
        }
        let Records::Data(path) = &unit.kind else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            let number = |k: usize| f.get(k).and_then(|x| x.parse::<f64>().ok());
            if let (Some(kind), Some(a), Some(b), Some(bytes)) =
                (f.first(), number(1), number(2), number(3))
            {
                phases.push(PhaseRecord {
                    job: unit.job,
                    process: u,
                    io: *kind == "io",
                    start: a - start_unix,
                    end: b - start_unix,
                    bytes,
                });
            }
        }
    }
    (calls, phases)
}

/// Starts the controllers of a controlled set-up; returns them and each node's local
/// controller's socket. One node: a standalone local with the pool. More: a global with
/// the pool on a free port of 127.0.0.1 and a local per node joined to it, each with its
/// socket, state and segments' directory; returns once the global has every local.
fn start_controllers(
    sc: &Scenario,
    setup: &Setup,
    p: &Paths<'_>,
) -> Result<(Vec<Process>, Vec<PathBuf>)> {
    let work = p.work;
    let sluice = Sluice::at(p.me);
    let ready = Duration::from_secs(20);
    if sc.nodes <= 1 {
        let socket = work.join("local.sock");
        let config = work.join("local.toml");
        std::fs::write(&config, sc.local_config(setup, p.mds))?;
        let place = LocalPlace {
            socket: &socket,
            state: &work.join("state"),
            shm: p.shm,
            log: &work.join("local.log"),
        };
        let config = config.to_string_lossy();
        let mut procs = vec![sluice.start_local(&place, &["--config", &config, "--node", "n1"])?];
        let sockets = vec![socket];
        sluice.wait_ready(&sockets, 1, &mut procs, ready)?;
        return Ok((procs, sockets));
    }
    let interval = format!("{}ms", sc.interval.as_millis());
    let config = work.join("global.toml");
    std::fs::write(&config, sc.local_config(setup, p.mds))?;
    let config = config.to_string_lossy();
    let (global, url) =
        sluice.start_global(work, &["--config", &config, "--interval", &interval])?;
    let mut procs = vec![global];
    let mut sockets = Vec::new();
    for k in 0..sc.nodes {
        let node = format!("node{k}");
        let socket = work.join(format!("{node}.sock"));
        let shm = p.shm.join(&node);
        std::fs::create_dir_all(&shm)?;
        let place = LocalPlace {
            socket: &socket,
            state: &work.join(format!("state-{node}")),
            shm: &shm,
            log: &work.join(format!("{node}.log")),
        };
        let args = ["--node", &node, "--global", &url, "--config", "none"];
        procs.push(sluice.start_local(&place, &[&args[..], &["--interval", &interval]].concat())?);
        sockets.push(socket);
    }
    sluice.wait_ready(&sockets, sc.nodes, &mut procs, ready)?;
    Ok((procs, sockets))
}

/// Each job's allocation in the pool now, and the nodes it is on, from `sluice jobs
/// --json`.
fn allocations(me: &Path, socket: &Path, sc: &Scenario) -> Result<Vec<(usize, f64, Vec<String>)>> {
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
            let nodes = j["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|n| n.as_str().map_or_else(|| n.to_string(), str::to_owned))
                .collect();
            found.push((i, a, nodes));
        }
    }
    Ok(found)
}
