//! Running a scenario's set-ups: one local controller per controlled set-up (or, for a
//! scenario of several nodes, a global and a local per node on this machine), each job's
//! processes (trace replayers, data writers and readers, real programs) started at their
//! times, the allocations sampled every second, and every process's figures read back.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use sluice_control::source::{self, Counters, ServerReading};
use sluice_core::rule::Rate;
use sluice_workload::synth::{SynthSpec, synth};

use super::fs::{CephFs, LoopFs};
use super::scenario::{Job, Scenario, Setup, Workload};
use super::summary::{Outcome, PhaseRecord, write_outputs};
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
            &sc,
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
    write_outputs(&sc, &outcomes, &out)?;
    println!("wrote {}/summary.md", out.display());
    Ok(0)
}

/// Processes killed when dropped, each with its process group: a job's process is
/// `sluice run` and the program it started, and a program left running after its
/// launcher would keep writing (and keep the file system busy) after its set-up.
struct Reaper(Vec<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for c in &mut self.0 {
            if let Ok(None) = c.try_wait()
                && let Ok(pid) = i32::try_from(c.id())
            {
                // SAFETY: kill(2) with a process group id; no memory is involved.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
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

/// The last lines of a process's standard error, for a failure's message.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let from = lines.len().saturating_sub(15);
    let mut t = lines[from..].join("\n");
    if t.len() > 2000 {
        let mut cut = t.len() - 2000;
        while !t.is_char_boundary(cut) {
            cut += 1;
        }
        t = format!("…{}", &t[cut..]);
    }
    t
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

fn run_in(sc: &Scenario, setup: &Setup, p: &Paths<'_>) -> Result<Outcome> {
    let (me, work) = (p.me, p.work);
    let controlled = setup.algorithm != "none";
    prepare(sc, setup, p)?;
    let mut local = Reaper(Vec::new());
    // Each node's local controller's socket; node 0's also answers for the cluster.
    let sockets = if controlled {
        start_controllers(sc, setup, p, &mut local)?
    } else {
        Vec::new()
    };
    let start = Instant::now();
    let start_unix = unix_now();
    let mut procs = Reaper(Vec::new());
    let mut units: Vec<Unit> = Vec::new();
    // Per job and part: started yet?
    let mut started: Vec<Vec<bool>> = sc
        .jobs
        .iter()
        .map(|j| vec![false; j.workload.list().len()])
        .collect();
    let mut ended: Vec<Option<f64>> = vec![None; sc.jobs.len()];
    let mut allocation: BTreeMap<(usize, u64), f64> = BTreeMap::new();
    // Allocations are sampled once a second at most: the timeline is per second.
    let sample_every = sc.interval.max(Duration::from_secs(1));
    let mut next_sample = sample_every;
    let mut timed_out = false;
    // The MDS's figures per second of the set-up, from the differences of its counters.
    let mut mds: BTreeMap<u64, ServerReading> = BTreeMap::new();
    let mut mds_last: Option<(Instant, Counters)> = None;
    let mut next_mds = Duration::ZERO;
    // The nodes the controller saw each job on.
    let mut seen_on: Vec<std::collections::BTreeSet<String>> =
        vec![Default::default(); sc.jobs.len()];
    loop {
        let now = start.elapsed();
        for (i, job) in sc.jobs.iter().enumerate() {
            for (k, part) in job.workload.list().iter().enumerate() {
                let delay = part.data().map_or(0.0, |io| io.delay);
                let due = job.start + Duration::from_secs_f64(delay);
                if started[i][k] || now < due {
                    continue;
                }
                started[i][k] = true;
                let placement = job.placement();
                for n in 0..job.processes {
                    let name = format!("{}-{k}-{n}", job.name);
                    let (args, kind) = command(sc, job, part, &name, p, start_unix)?;
                    let err = std::fs::File::create(work.join(format!("{name}.err")))?;
                    let mut cmd = Command::new(me);
                    if controlled {
                        // Process n on the n-th of its nodes, in turn: one job, the same
                        // id, attached through each node's local.
                        let node = placement[n as usize % placement.len()] as usize;
                        cmd.arg("run")
                            .arg("--socket")
                            .arg(&sockets[node])
                            .args(["--job", &job.name, "--mount"])
                            .arg(p.managed);
                        // Root's launcher names the job's account and user, as a
                        // Slurm prolog does: a tree groups the job by them.
                        if let Some(account) = &job.account {
                            cmd.args(["--account", account]);
                        }
                        if let Some(uid) = job.uid {
                            cmd.args(["--uid", &uid.to_string()]);
                        }
                        cmd.arg("--").args(&args);
                        if let Some(nodes) = job.reported_nodes() {
                            // The launcher reports the job's nodes from the resource
                            // manager's environment: AdapTBF's priority.
                            cmd.env("SLURM_JOB_NUM_NODES", nodes.to_string());
                        }
                    } else if matches!(part, Workload::Command { .. }) {
                        // Uncontrolled, a program still runs under the stage, standalone,
                        // with one rule of the pool's filter that never holds (1000 times
                        // the capacity): its calls are counted as a controlled set-up's
                        // pool counts them, at the same cost per call.
                        let never = Rate {
                            per_sec: sc.pool.capacity.per_sec.saturating_mul(1000),
                            unit: sc.pool.capacity.unit,
                        };
                        cmd.args(["run", "--standalone", "--job", &job.name, "--mount"])
                            .arg(p.managed)
                            .arg("--rule")
                            .arg(format!("{} rate={never}", sc.pool.matches))
                            .arg("--")
                            .args(&args);
                    } else {
                        cmd.args(&args[1..]);
                    }
                    // A group of its own, so that the program `sluice run` started is
                    // stopped with it (see Reaper).
                    cmd.stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(err)
                        .process_group(0);
                    procs
                        .0
                        .push(cmd.spawn().context("cannot start a job's process")?);
                    units.push(Unit {
                        job: i,
                        csv: work.join(format!("{name}.csv")),
                        kind,
                        at: now.as_secs_f64(),
                    });
                }
            }
        }
        // A job ends when all its parts have started and all its processes have ended.
        for (i, _) in sc.jobs.iter().enumerate() {
            if !started[i].iter().all(|s| *s) || ended[i].is_some() {
                continue;
            }
            let mut all = true;
            for (k, child) in procs.0.iter_mut().enumerate() {
                match child.try_wait()? {
                    _ if units[k].job != i => {}
                    None => all = false,
                    Some(status) if !status.success() => {
                        let err = units[k].csv.with_extension("err");
                        bail!(
                            "{}: a process of job {} failed ({status}): {}",
                            setup.name,
                            sc.jobs[i].name,
                            tail(&std::fs::read_to_string(err).unwrap_or_default())
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
            for (i, a, nodes) in sample_allocations(me, &sockets[0], sc)? {
                allocation.insert((i, second), a);
                seen_on[i].extend(nodes);
            }
            next_sample += sample_every;
        }
        if let Some(sock) = p.mds
            && now >= next_mds
        {
            let second = next_mds.as_secs();
            match source::ceph::read(sock, Duration::from_millis(500)) {
                Ok(c) => {
                    let t = Instant::now();
                    if let Some((at, before)) = mds_last
                        && let Some(r) =
                            ServerReading::between(&before, &c, t.duration_since(at).as_secs_f64())
                    {
                        mds.insert(second, r);
                    }
                    mds_last = Some((t, c));
                }
                // A second missed: the next reading spans two.
                Err(e) => eprintln!("  {}: MDS not read at {second} s: {e}", setup.name),
            }
            next_mds += Duration::from_secs(1);
        }
        if ended.iter().all(Option::is_some) {
            break;
        }
        if now >= sc.timeout {
            timed_out = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(procs);
    drop(local);
    if controlled && sc.nodes > 1 {
        for (job, on) in sc.jobs.iter().zip(&seen_on) {
            let on: Vec<&str> = on.iter().map(String::as_str).collect();
            println!("  job {} ran on nodes: {}", job.name, on.join(", "));
        }
    }
    if timed_out {
        eprintln!(
            "  {}: timed out after {:?}; jobs still running were stopped",
            setup.name, sc.timeout
        );
    }
    // A job that ran to `metrics.stop` was stopped there (one that ended on its own ended
    // before it).
    if let Some(stop) = sc.metrics.stop {
        for end in &mut ended {
            *end = end.filter(|e| *e < stop);
        }
    }
    let (calls, phases) = collect(&units, start_unix);
    // A command job's completion is its program's own run time, from its start to its
    // exit, as the program's wrapper measured it (without the launcher's start-up).
    for u in &units {
        if let (Records::Command(times), Some(end)) = (&u.kind, &mut ended[u.job]) {
            let took = std::fs::read_to_string(times).ok().and_then(|t| {
                let f: Vec<f64> = t
                    .lines()
                    .nth(1)?
                    .split(',')
                    .filter_map(|x| x.parse().ok())
                    .collect();
                Some(f.get(1)? - f.first()?)
            });
            if let Some(took) = took {
                *end = sc.jobs[u.job].start.as_secs_f64() + took;
            }
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
        phases,
        limits: (0..sc.jobs.len())
            .map(|i| sc.limit(setup, i).map(|r| r.per_sec as f64))
            .collect(),
        desired: (0..sc.jobs.len())
            .map(|i| sc.desired(setup, i).map(|r| r.per_sec as f64))
            .collect(),
        mds,
    })
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

/// Starts the controllers of a controlled set-up into `reaper`; returns each node's
/// local controller's socket. One node: a standalone local with the pool. More: a
/// global with the pool on a free port of 127.0.0.1 and a local per node joined to it,
/// each with its socket, state and segments' directory; returns once the global has
/// every local.
fn start_controllers(
    sc: &Scenario,
    setup: &Setup,
    p: &Paths<'_>,
    reaper: &mut Reaper,
) -> Result<Vec<PathBuf>> {
    let (me, work) = (p.me, p.work);
    let spawn = |cmd: &mut Command, log: &Path, what: &str| -> Result<Child> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log)?)
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start {what}"))
    };
    if sc.nodes <= 1 {
        let socket = work.join("local.sock");
        let log = work.join("local.log");
        std::fs::write(work.join("local.toml"), sc.local_config(setup, p.mds))?;
        reaper.0.push(spawn(
            Command::new(me)
                .arg("local")
                .arg("--socket")
                .arg(&socket)
                .arg("--state-dir")
                .arg(work.join("state"))
                .arg("--shm-dir")
                .arg(p.shm)
                .arg("--config")
                .arg(work.join("local.toml"))
                .args(["--node", "n1"]),
            &log,
            "sluice local",
        )?);
        wait_ready(me, std::slice::from_ref(&socket), 1, &[log])?;
        return Ok(vec![socket]);
    }
    // A free port: the kernel's choice, released for the global to take.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .context("cannot find a free port for sluice global")?
        .port();
    let interval = format!("{}ms", sc.interval.as_millis());
    std::fs::write(work.join("global.toml"), sc.local_config(setup, p.mds))?;
    let mut logs = vec![work.join("global.log")];
    reaper.0.push(spawn(
        Command::new(me)
            .args(["global", "--listen", &format!("127.0.0.1:{port}")])
            .arg("--config")
            .arg(work.join("global.toml"))
            .arg("--state-dir")
            .arg(work.join("state-global"))
            .args(["--interval", &interval]),
        &logs[0],
        "sluice global",
    )?);
    let url = format!("http://127.0.0.1:{port}");
    let mut sockets = Vec::new();
    for k in 0..sc.nodes {
        let node = format!("node{k}");
        let socket = work.join(format!("{node}.sock"));
        let shm = p.shm.join(&node);
        std::fs::create_dir_all(&shm)?;
        let log = work.join(format!("{node}.log"));
        reaper.0.push(spawn(
            Command::new(me)
                .args([
                    "local", "--node", &node, "--global", &url, "--config", "none",
                ])
                .arg("--socket")
                .arg(&socket)
                .arg("--state-dir")
                .arg(work.join(format!("state-{node}")))
                .arg("--shm-dir")
                .arg(&shm)
                .args(["--interval", &interval]),
            &log,
            "sluice local",
        )?);
        sockets.push(socket);
        logs.push(log);
    }
    wait_ready(me, &sockets, sc.nodes, &logs)?;
    Ok(sockets)
}

/// Waits until every local controller answers and the first counts `locals` local
/// controllers (a standalone one counts itself or none: 1 asks only that it answers).
fn wait_ready(me: &Path, sockets: &[PathBuf], locals: u32, logs: &[PathBuf]) -> Result<()> {
    let t = Instant::now();
    let status = |socket: &Path| {
        Command::new(me)
            .args(["status", "--json", "--socket"])
            .arg(socket)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap_or_default())
    };
    while t.elapsed() < Duration::from_secs(20) {
        let all = sockets.iter().all(|s| status(s).is_some());
        let joined = locals <= 1
            || status(&sockets[0]).is_some_and(|v| v["locals"].as_u64() == Some(locals.into()));
        if all && joined {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut why = String::new();
    for log in logs {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        why += &format!("{}:\n{}\n", log.display(), tail(&text));
    }
    bail!("the controllers did not start ({locals} local(s) wanted):\n{why}")
}

/// Each job's allocation in the pool now, and the nodes it is on, from `sluice jobs
/// --json`.
fn sample_allocations(
    me: &Path,
    socket: &Path,
    sc: &Scenario,
) -> Result<Vec<(usize, f64, Vec<String>)>> {
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
