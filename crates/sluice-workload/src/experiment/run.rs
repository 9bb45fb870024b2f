//! Running a scenario's set-ups: one local controller per controlled set-up (or, for a
//! scenario of several nodes, a global and a local per node on this machine), each job's
//! processes (trace replayers, data writers and readers, real programs) started at their
//! times, the allocations sampled every second, and every process's figures read back.
//! SIGINT and SIGTERM stop a run cleanly: its processes are killed and its temporary
//! files removed.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Doing as _, fail};
use crate::synth::{SynthSpec, synth};
use sluice_control::source::{self, Counters, ServerReading};
use sluice_core::rule::Rate;

use super::fs::{CephFs, LoopFs};
use super::live::Live;
use super::scenario::{Job, LatencyTarget, Scenario, Setup, Workload};
use super::summary::{self, Outcome, PeriodSample, PhaseRecord, write_outputs};
use super::{ExperimentError, Result};
use crate::harness::{LocalPlace, Process, Processes, Sluice, free_port, tail};

/// How a scenario is run.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions<'a> {
    /// Where the results go (default: experiments/NAME, NAME the scenario's).
    pub out: Option<&'a Path>,
    /// The set-ups to run (all when empty).
    pub only: &'a [String],
    /// Show the run as it goes ([`super::live`]), and serve the controllers' dashboard.
    pub live: bool,
    /// Where the controlled set-ups' dashboard listens (default with `live`: a free port
    /// of 127.0.0.1; without `live`, none unless given).
    pub http: Option<SocketAddr>,
}

/// Runs the scenario at `path`; returns the exit status (130 when interrupted).
pub fn run(path: &Path, o: &RunOptions<'_>) -> Result<i32> {
    // A scenario that cannot be read is bad input: nothing runs.
    let sc = Scenario::load(path)?;
    run_checked(&sc, &path.display().to_string(), o)
}

/// Runs the scenario `text` (a scenario bundled into the binary: the demo's), `origin`
/// naming it in complaints; returns the exit status (130 when interrupted).
pub fn run_text(text: &str, origin: &str, o: &RunOptions<'_>) -> Result<i32> {
    let sc = Scenario::parse(text, origin)?;
    run_checked(&sc, origin, o)
}

/// Set by SIGINT or SIGTERM: stop, clean up, exit 130.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Fails with [`ExperimentError::Interrupted`] once a signal asked to stop.
fn check_stop() -> Result<()> {
    match STOP.load(Ordering::Relaxed) {
        true => Err(ExperimentError::Interrupted),
        false => Ok(()),
    }
}

fn run_checked(sc: &Scenario, origin: &str, o: &RunOptions<'_>) -> Result<i32> {
    for name in o.only {
        if !sc.setups.iter().any(|s| &s.name == name) {
            return Err(ExperimentError::Scenario(format!(
                "--setup {name}: no such set-up in {origin}"
            )));
        }
    }
    // A set-up whose latency target is another's multiple needs that one to run first.
    if let Some(LatencyTarget::Relative { reference, .. }) =
        sc.cephfs.as_ref().and_then(|c| c.target.as_ref())
        && !o.only.is_empty()
        && !o.only.contains(reference)
        && let Some(s) = sc
            .setups
            .iter()
            .find(|s| o.only.contains(&s.name) && s.uses_target())
    {
        return Err(ExperimentError::Scenario(format!(
            "--setup {}: its MDS latency target is relative to set-up {reference:?}: add --setup {reference:?}",
            s.name
        )));
    }
    // Every process of a run is in a group of its own, out of reach of the terminal's
    // Ctrl-C: the runner stops them itself, and removes what they left.
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe.
        unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
    }
    match run_scenario(sc, o) {
        Err(ExperimentError::Interrupted) => {
            eprintln!("\nsluice: interrupted; jobs stopped, temporary files removed");
            Ok(130)
        }
        r => r,
    }
}

/// Runs the set-ups of `sc` named in `o.only` (all when empty).
fn run_scenario(sc: &Scenario, o: &RunOptions<'_>) -> Result<i32> {
    let out = o.out.map_or_else(
        || PathBuf::from("experiments").join(&sc.name),
        Path::to_owned,
    );
    std::fs::create_dir_all(&out).doing(|| format!("create {}", out.display()))?;
    // Absolute: the jobs' --mount must be.
    let out = out
        .canonicalize()
        .doing(|| format!("find {}", out.display()))?;
    let trace = out.join("trace.csv");
    if let Some(t) = &sc.trace {
        let spec = SynthSpec {
            mean: t.mean.per_sec as f64,
            seconds: t.seconds,
            seed: t.seed,
        };
        let writing = || format!("write {}", trace.display());
        let mut file = std::fs::File::create(&trace).doing(writing)?;
        synth(&spec).write_csv(&mut file).doing(writing)?;
    }
    let me = std::env::current_exe().doing(|| "find the sluice binary".into())?;
    // The file system lives through every set-up, each in a directory of its own on it.
    let fs = sc.filesystem.as_ref().map(LoopFs::make).transpose()?;
    let live = o.live.then(|| Live::new(sc));
    if let Some(l) = &live {
        l.scenario();
    }
    let mut outcomes = Vec::new();
    for setup in sc
        .setups
        .iter()
        .filter(|s| o.only.is_empty() || o.only.contains(&s.name))
    {
        check_stop()?;
        if setup.algorithm != "none" && sluice_policy::registry::find(&setup.algorithm).is_err() {
            println!(
                "{}: {} skipped: no algorithm {:?} in this build",
                sc.name, setup.name, setup.algorithm
            );
            continue;
        }
        println!("\n{}: {} ({})", sc.name, setup.name, setup.algorithm);
        let target = sc
            .cephfs
            .as_ref()
            .and_then(|c| summary::latency_target(c, &outcomes));
        if setup.uses_target() {
            let Some(t) = &target else {
                return Err(ExperimentError::Scenario(format!(
                    "{}: {}: its latency target is relative to a set-up with no settled MDS reading",
                    sc.name, setup.name
                )));
            };
            println!("  MDS latency target {:.0} µs ({})", t.us, t.how);
        }
        // A CephFS of the set-up's own: after another set-up the MDS's journal and
        // caches and the OSD's store would be as it left them (No control leaves some
        // 100k journal events untrimmed), and no set-up would start as a solo run does.
        let ceph = sc
            .cephfs
            .as_ref()
            .map(|spec| CephFs::make(&sc.clients(), &spec.small_cache))
            .transpose()?;
        let data_root = fs.as_ref().map(|f| f.mount().to_owned());
        let outcome = run_setup(
            sc,
            setup,
            target.map(|t| Duration::from_micros(t.us as u64)),
            &Watch {
                live: live.as_ref(),
                http: o.http,
            },
            &Base {
                me: &me,
                trace: &trace,
                out: &out,
                data_root: data_root.as_deref(),
                ceph: ceph.as_ref(),
            },
        )?;
        println!(
            "  makespan {:.1} s, {} s over capacity",
            outcome.makespan(),
            outcome.seconds_over(sc.pool.capacity.per_sec as f64)
        );
        drop(ceph);
        outcomes.push(outcome);
    }
    drop(fs);
    if let Some(l) = &live {
        l.closing(&outcomes);
    }
    write_outputs(sc, &outcomes, &out)?;
    println!(
        "\nwrote {0}/summary.md, {0}/timelines.png and each set-up's SETUP.csv and SETUP.png",
        out.display()
    );
    Ok(0)
}

/// Where a set-up runs: the binary, the trace and the results' directory (the run's),
/// and the file system (the run's, or with `[cephfs]` the set-up's own).
#[derive(Clone, Copy)]
struct Base<'a> {
    me: &'a Path,
    trace: &'a Path,
    out: &'a Path,
    data_root: Option<&'a Path>,
    ceph: Option<&'a CephFs>,
}

/// How a set-up is watched while it runs.
#[derive(Clone, Copy)]
struct Watch<'a> {
    /// The live view, when asked for.
    live: Option<&'a Live<'a>>,
    /// The dashboard's address, when given.
    http: Option<SocketAddr>,
}

/// One set-up, start to end.
/// `target`: the MDS latency target in force, for `{target}` in the set-up's `auto`.
fn run_setup(
    sc: &Scenario,
    setup: &Setup,
    target: Option<Duration>,
    watch: &Watch<'_>,
    b: &Base<'_>,
) -> Result<Outcome> {
    let Base {
        me,
        trace,
        out,
        data_root,
        ceph,
    } = *b;
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
        std::fs::create_dir_all(dir).doing(|| format!("create {}", dir.display()))?;
    }
    let mds = ceph.map(CephFs::mds_socket);
    let result = run_in(
        sc,
        setup,
        watch,
        &Paths {
            me,
            trace,
            work: &work,
            shm: &shm,
            data: &data,
            managed: &managed,
            clients: &clients,
            mds: mds.as_deref(),
            target,
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
    /// The MDS latency target in force (`{target}` in the set-up's `auto`).
    target: Option<Duration>,
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
            std::fs::create_dir_all(&dir).doing(|| format!("create {}", dir.display()))?;
            if argv.is_empty() {
                continue;
            }
            let argv = expand(argv, &dir, p);
            let o = Command::new(&argv[0])
                .args(&argv[1..])
                .current_dir(&dir)
                .stdin(Stdio::null())
                .output()
                .doing(|| format!("run the setup {:?} of job {}", argv[0], job.name))?;
            if !o.status.success() {
                fail!(
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
        std::fs::create_dir_all(&dir).doing(|| format!("create {}", dir.display()))?;
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
            let json = serde_json::to_string(part).map_err(|source| ExperimentError::Json {
                what: format!("job {}'s workload", job.name),
                source,
            })?;
            args.push(json.into());
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
    /// The jobs' processes, one [`Unit`] each, in the same order; stopped with a grace
    /// (SIGTERM first) however the set-up ends, so that their launchers clean up.
    procs: Processes,
    units: Vec<Unit>,
    /// Per job and part: started yet?
    started: Vec<Vec<bool>>,
    /// Per job: when it ended, s from the set-up's start.
    ended: Vec<Option<f64>>,
    allocation: BTreeMap<(usize, u64), f64>,
    periods: BTreeMap<(usize, u64), PeriodSample>,
    /// An automatic pool's capacity, per second sampled.
    capacity: BTreeMap<u64, f64>,
    next_sample: Duration,
    /// The MDS's figures per second of the set-up, from the differences of its counters.
    mds: BTreeMap<u64, ServerReading>,
    mds_last: Option<(Instant, Counters)>,
    next_mds: Duration,
    /// The nodes the controller saw each job on.
    seen_on: Vec<BTreeSet<String>>,
    /// The live view, and the seconds it has shown.
    live: Option<&'a Live<'a>>,
    shown: u64,
}

/// Allocations are sampled once a second at most: the timeline is per second.
fn sample_every(sc: &Scenario) -> Duration {
    sc.interval.max(Duration::from_secs(1))
}

/// A second is shown live once its processes have had time to write it.
const SHOW_AFTER: Duration = Duration::from_millis(300);

fn run_in(sc: &Scenario, setup: &Setup, watch: &Watch<'_>, p: &Paths<'_>) -> Result<Outcome> {
    let controlled = setup.algorithm != "none";
    prepare(sc, setup, p)?;
    // The controllers' dashboard: where it was asked for, else on a free port when
    // watched live.
    let http = match (watch.http, watch.live) {
        _ if !controlled => None,
        (Some(a), _) => Some(a),
        (None, Some(_)) => {
            let port = free_port().doing(|| "find a free port for the dashboard".into())?;
            Some(SocketAddr::from(([127, 0, 0, 1], port)))
        }
        (None, None) => None,
    };
    let (controllers, sockets) = if controlled {
        start_controllers(sc, setup, p, http)?
    } else {
        Default::default()
    };
    if let Some(l) = watch.live {
        l.setup(setup, http.map(|a| format!("http://{a}")).as_deref());
    }
    let mut run = SetupRun {
        sc,
        setup,
        p,
        controlled,
        sockets,
        start: Instant::now(),
        start_unix: unix_now(),
        procs: Processes::default(),
        units: Vec::new(),
        started: sc
            .jobs
            .iter()
            .map(|j| vec![false; j.workload.list().len()])
            .collect(),
        ended: vec![None; sc.jobs.len()],
        allocation: BTreeMap::new(),
        periods: BTreeMap::new(),
        capacity: BTreeMap::new(),
        next_sample: sample_every(sc),
        mds: BTreeMap::new(),
        mds_last: None,
        next_mds: Duration::ZERO,
        seen_on: vec![BTreeSet::new(); sc.jobs.len()],
        live: watch.live,
        shown: 0,
    };
    let timed_out = loop {
        check_stop()?;
        let now = run.start.elapsed();
        run.start_due(now)?;
        run.note_ended(now)?;
        run.sample_allocations(now)?;
        run.read_mds(now);
        run.show(now);
        if run.ended.iter().all(Option::is_some) {
            break false;
        }
        if now >= sc.timeout {
            break true;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // The jobs first, then the controllers they were attached to.
    run.procs.stop();
    drop(controllers);
    run.report(timed_out);
    let (live, shown) = (run.live, run.shown);
    let outcome = run.outcome();
    // The last seconds, now that every process has written them.
    if let Some(l) = live {
        for s in shown..=outcome.last_second() {
            l.row(s, &outcome.calls, &outcome.allocation);
        }
    }
    Ok(outcome)
}

impl SetupRun<'_> {
    /// Shows each second that ended a moment ago, live.
    fn show(&mut self, now: Duration) {
        let Some(l) = self.live else { return };
        while now >= Duration::from_secs(self.shown + 1) + SHOW_AFTER {
            let (calls, _) = collect(&self.units, self.start_unix);
            l.row(self.shown, &calls, &self.allocation);
            self.shown += 1;
        }
    }

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
            for r in &job.rules {
                cmd.args(["--rule", r]);
            }
            cmd.arg("--").args(&args);
            if let Some(nodes) = job.reported_nodes() {
                // The launcher reports the job's nodes from the resource manager's
                // environment: AdapTBF's priority.
                cmd.env("SLURM_JOB_NUM_NODES", nodes.to_string());
            }
        } else if matches!(part, Workload::Command { .. }) || !job.rules.is_empty() {
            // Uncontrolled, a job with rules of its own keeps them, and a program still
            // runs under the stage, standalone, with one rule of the pool's filter after
            // the job's own (a call is held by the first rule it meets): the set-up's
            // limit for the job, a static rule as `sluice run --rule` sets one with no
            // controller; without a limit, one that never holds (1000 times the
            // capacity), so that its calls are counted as a controlled set-up's pool
            // counts them, at the same cost per call.
            cmd.args(["run", "--standalone", "--job", &job.name, "--mount"])
                .arg(p.managed);
            for r in &job.rules {
                cmd.args(["--rule", r]);
            }
            if matches!(part, Workload::Command { .. }) {
                let rate = match self.setup.limits.get(&job.name) {
                    Some(limit) => limit.clone(),
                    None => Rate {
                        per_sec: sc.pool.capacity.per_sec.saturating_mul(1000),
                        unit: sc.pool.capacity.unit,
                    }
                    .to_string(),
                };
                cmd.arg("--rule")
                    .arg(format!("{} rate={rate}", sc.pool.matches));
            }
            cmd.arg("--").args(&args);
        } else {
            cmd.args(&args[1..]);
        }
        let err = p.work.join(format!("{name}.err"));
        self.procs.push(
            Process::logged(&mut cmd, &err)
                .doing(|| format!("start a process of job {}", job.name))?,
        );
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
                let name = &self.sc.jobs[i].name;
                match proc
                    .child
                    .try_wait()
                    .doing(|| format!("wait for a process of job {name}"))?
                {
                    _ if self.units[k].job != i => {}
                    None => all = false,
                    Some(status) if !status.success() => fail!(
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
        for s in allocations(self.p.me, &self.sockets[0], self.sc)? {
            self.allocation.insert((s.job, second), s.allocation);
            self.seen_on[s.job].extend(s.nodes);
            if let Some(p) = s.period {
                self.periods.insert((s.job, second), p);
            }
        }
        if self.setup.auto.is_some()
            && let Some(c) = pool_capacity(self.p.me, &self.sockets[0], &self.sc.pool.name)?
        {
            self.capacity.insert(second, c);
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
            capacity: self.capacity,
            periods: self.periods,
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
///
/// `http`: where the dashboard listens (the local's, or the global's), if anywhere.
fn start_controllers(
    sc: &Scenario,
    setup: &Setup,
    p: &Paths<'_>,
    http: Option<SocketAddr>,
) -> Result<(Vec<Process>, Vec<PathBuf>)> {
    let work = p.work;
    let sluice = Sluice::at(p.me);
    let ready = Duration::from_secs(20);
    let http = http.map(|a| a.to_string());
    let dashboard: Vec<&str> = match &http {
        Some(a) => vec!["--http", a],
        None => Vec::new(),
    };
    let writing = |config: &Path| {
        std::fs::write(config, sc.local_config(setup, p.mds, p.target))
            .doing(|| format!("write {}", config.display()))
    };
    if sc.nodes <= 1 {
        let socket = work.join("local.sock");
        let config = work.join("local.toml");
        writing(&config)?;
        let place = LocalPlace {
            socket: &socket,
            state: &work.join("state"),
            shm: p.shm,
            log: &work.join("local.log"),
        };
        let config = config.to_string_lossy();
        let args = [&["--config", &config, "--node", "n1"][..], &dashboard].concat();
        let mut procs = vec![sluice.start_local(&place, &args)?];
        let sockets = vec![socket];
        sluice.wait_ready(&sockets, 1, &mut procs, ready)?;
        return Ok((procs, sockets));
    }
    let interval = format!("{}ms", sc.interval.as_millis());
    let config = work.join("global.toml");
    writing(&config)?;
    let config = config.to_string_lossy();
    let args = [
        &["--config", &config, "--interval", &interval][..],
        &dashboard,
    ]
    .concat();
    let (global, url) = sluice.start_global(work, &args)?;
    let mut procs = vec![global];
    let mut sockets = Vec::new();
    for k in 0..sc.nodes {
        let node = format!("node{k}");
        let socket = work.join(format!("{node}.sock"));
        let shm = p.shm.join(&node);
        std::fs::create_dir_all(&shm).doing(|| format!("create {}", shm.display()))?;
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

/// `pool`'s capacity now (an automatic pool's as found), from `sluice pool list --json`;
/// `None` when the controller does not list it.
fn pool_capacity(me: &Path, socket: &Path, pool: &str) -> Result<Option<f64>> {
    Ok(capacity_in(&ask_json(me, socket, &["pool", "list"])?, pool))
}

/// The controller's answer to `sluice ARGS --json` on `socket` (null when it gave none
/// that parses: a sample is then missed, not the run).
fn ask_json(me: &Path, socket: &Path, args: &[&str]) -> Result<serde_json::Value> {
    let o = Command::new(me)
        .args(args)
        .args(["--json", "--socket"])
        .arg(socket)
        .stdin(Stdio::null())
        .output()
        .doing(|| format!("run sluice {}", args.join(" ")))?;
    Ok(serde_json::from_slice(&o.stdout).unwrap_or_default())
}

/// `pool`'s capacity in `sluice pool list --json`'s answer `v`, per second.
fn capacity_in(v: &serde_json::Value, pool: &str) -> Option<f64> {
    let p = v["pools"].as_array()?.iter().find(|p| p["name"] == pool)?;
    // An automatic pool's reads `auto 6800/s`.
    let text = p["capacity"].as_str()?;
    let rate: Rate = text.strip_prefix("auto ").unwrap_or(text).parse().ok()?;
    Some(rate.per_sec as f64)
}

/// One job's share of the scenario's pool, as `sluice jobs --json` gave it.
struct ShareSample {
    /// The job, by its index in the scenario.
    job: usize,
    allocation: f64,
    /// The nodes it is on.
    nodes: Vec<String>,
    /// Its period, where the pool's algorithm places jobs by it.
    period: Option<PeriodSample>,
}

/// Each job's allocation in the pool now, the nodes it is on and its period, from
/// `sluice jobs --json`.
fn allocations(me: &Path, socket: &Path, sc: &Scenario) -> Result<Vec<ShareSample>> {
    let v = ask_json(me, socket, &["jobs"])?;
    let mut found = Vec::new();
    for j in v["jobs"].as_array().into_iter().flatten() {
        let Some(i) = sc.jobs.iter().position(|x| j["job"] == x.name.as_str()) else {
            continue;
        };
        let share = &j["pools"][&sc.pool.name];
        if let Some(allocation) = share["allocation"].as_f64() {
            let nodes = j["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|n| n.as_str().map_or_else(|| n.to_string(), str::to_owned))
                .collect();
            let p = &share["period"];
            let period = p.is_object().then(|| PeriodSample {
                seconds: p["seconds"].as_f64().unwrap_or(0.0),
                from: p["from"].as_str().unwrap_or_default().to_owned(),
                detected: p["detected"].as_f64().unwrap_or(0.0),
                confidence: p["confidence"].as_f64().unwrap_or(0.0),
            });
            found.push(ShareSample {
                job: i,
                allocation,
                nodes,
                period,
            });
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_s_capacity_is_read_fixed_or_as_found() {
        let v = serde_json::json!({"pools": [
            {"name": "md", "capacity": "auto 6800/s"},
            {"name": "bw", "capacity": "64MiB/s"},
        ]});
        assert_eq!(capacity_in(&v, "md"), Some(6800.0));
        assert_eq!(capacity_in(&v, "bw"), Some(64.0 * 1024.0 * 1024.0));
        assert_eq!(capacity_in(&v, "other"), None);
    }
}
