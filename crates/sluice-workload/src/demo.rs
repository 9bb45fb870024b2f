//! `sluice demo`: the whole control plane in one process. Four jobs arrive one after
//! another into one pool divided by PSFA, watched live; then the same jobs run without
//! control; then a PNG and a CSV of both runs.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use sluice_control::daemon::{DaemonError, LocalOptions, run_local};
use sluice_control::proto::Empty;
use sluice_control::proto::admin_client::AdminClient;
use sluice_control::transport::{
    CallError, ConnectOptions, DEFAULT_DEADLINE, Endpoint, connect, within,
};

use crate::harness::{Process, free_port, temp_dir};
use crate::plot::{Panel, Series, png};

/// What `sluice demo` was asked for (its --help says more).
#[derive(Debug)]
pub struct DemoOptions {
    /// Seconds of each of the two runs (10 or more).
    pub seconds: u64,
    /// Where its temporary directory goes (None: the system's).
    pub dir: Option<PathBuf>,
    /// Where demo.csv and demo.png go.
    pub out: PathBuf,
    /// The dashboard's address (None: a free port of 127.0.0.1).
    pub http: Option<std::net::SocketAddr>,
}

/// A job of the demo: a stat loop that makes `pace` calls a second when nothing holds it
/// back (its own rule, so that both runs ask for exactly the same). The time it waits on
/// that rule is not counted as demand for the pool: only time held by the pool is.
struct Job {
    name: &'static str,
    pace: u32,
}

/// Two hungry jobs, one that wants less than a fair share, and a third hungry one: PSFA
/// gives the small one what it asks for and shares the rest equally among the others.
const JOBS: [Job; 4] = [
    Job {
        name: "sim",
        pace: 16_000,
    },
    Job {
        name: "post",
        pace: 12_000,
    },
    Job {
        name: "viz",
        pace: 2_000,
    },
    Job {
        name: "ckpt",
        pace: 10_000,
    },
];
const POOL: &str = "md";
const CAPACITY: f64 = 20_000.0;
const INTERVAL: Duration = Duration::from_millis(500);
/// Threads per job: enough that a job keeps up its pace while some of its calls wait.
const THREADS: &str = "2";

/// Set by SIGINT or SIGTERM: stop, clean up, exit 130.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// The demo was stopped by a signal.
#[derive(Debug)]
struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

fn check_stop() -> Result<()> {
    match STOP.load(Ordering::Relaxed) {
        true => Err(Interrupted.into()),
        false => Ok(()),
    }
}

/// Whether the run was controlled.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Controlled,
    Uncontrolled,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Controlled => "controlled",
            Mode::Uncontrolled => "uncontrolled",
        }
    }
}

/// One job's rate (and allocation, under control) over the interval ending at `second`.
#[derive(Clone, Debug)]
struct Sample {
    second: f64,
    job: usize,
    mode: Mode,
    rate: f64,
    allocation: Option<f64>,
}

impl DemoOptions {
    /// Runs the demo; 130 when interrupted.
    pub fn run(&self) -> Result<i32> {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe.
            unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
        }
        let tmp = temp_dir(self.dir.as_deref(), "sluice-demo.")?;
        // The controller's segments go in a directory of the demo's own, so that none is
        // left behind however the demo ends (Ctrl-C stops the controller before it can
        // remove them).
        let shm = temp_dir(Some(Path::new("/dev/shm")), "sluice-demo.")?;
        match self.both(tmp.path(), shm.path()) {
            Ok(()) => Ok(0),
            Err(e) if e.is::<Interrupted>() => {
                eprintln!("\nsluice demo: interrupted; jobs stopped, temporary files removed");
                Ok(130)
            }
            Err(e) => Err(e),
        }
    }

    /// Both runs, then the figures.
    fn both(&self, tmp: &Path, shm: &Path) -> Result<()> {
        let me = std::env::current_exe().context("cannot find the sluice binary")?;
        let work = tmp.join("work");
        for j in &JOBS {
            std::fs::create_dir_all(work.join(j.name))
                .with_context(|| format!("cannot create {}", work.display()))?;
        }
        println!(
            "One node, one pool '{POOL}': every getattr of the jobs, capacity {}/s, divided by PSFA every {} ms.",
            k(CAPACITY),
            INTERVAL.as_millis()
        );
        println!(
            "Four jobs arrive {} s apart; each declares to the pool, and would make if left alone:",
            self.stagger()
        );
        for (i, j) in JOBS.iter().enumerate() {
            println!(
                "  {:<5} from t={:>2} s  {:>6} stat/s",
                j.name,
                self.arrival(i),
                k(j.pace.into())
            );
        }
        println!(
            "\n1/2  under control: a local controller runs in this process; each job's rate / allocation (ops/s)\n"
        );
        let mut samples = self.controlled(tmp, shm, &me, &work)?;
        println!("\n2/2  the same jobs without control: each job's rate (ops/s)\n");
        samples.extend(self.uncontrolled(&me, &work)?);
        self.summary(&samples);
        write_figures(&self.out, &samples)
    }

    /// Seconds between two arrivals.
    fn stagger(&self) -> u64 {
        self.seconds / 5
    }

    /// When job `i` arrives, in seconds from the start of a run.
    fn arrival(&self, i: usize) -> u64 {
        i as u64 * self.stagger()
    }

    /// `sluice run ARGS -- sluice load …` for job `i`, to end when the run does.
    fn job_command(&self, me: &Path, work: &Path, i: usize, run_args: &[&str]) -> Command {
        let j = &JOBS[i];
        let mut c = Command::new(me);
        c.arg("run")
            .args(run_args)
            .args(["--job", j.name, "--rule"])
            .arg(format!("{}-pace: op=getattr rate={}/s", j.name, j.pace))
            .arg("--mount")
            .arg(work)
            .arg("--")
            .arg(me)
            .args(["load", "--csv", "--ops", "getattr", "--threads", THREADS])
            .arg("--dir")
            .arg(work.join(j.name))
            .arg("--duration")
            .arg((self.seconds - self.arrival(i)).to_string());
        c
    }

    /// The run under the embedded local controller, sampled once per interval.
    fn controlled(&self, tmp: &Path, shm: &Path, me: &Path, work: &Path) -> Result<Vec<Sample>> {
        let socket = tmp.join("local.sock");
        let config = tmp.join("control.toml");
        let toml = format!(
            "interval = \"{}ms\"\n\n[[pool]]\nname = \"{POOL}\"\nmatch = \"op=getattr\"\ncapacity = \"{CAPACITY}/s\"\nalgorithm = \"psfa-held\"\n",
            INTERVAL.as_millis()
        );
        std::fs::write(&config, toml)?;
        let http = match self.http {
            Some(addr) => addr,
            None => (
                std::net::Ipv4Addr::LOCALHOST,
                free_port().context("cannot find a free port for the dashboard")?,
            )
                .into(),
        };
        println!("Live dashboard while it runs: http://{http}/\n");
        let options = LocalOptions {
            socket: socket.clone(),
            state_dir: tmp.join("state"),
            shm_dir: shm.to_owned(),
            node: "demo".into(),
            global: None,
            connect: ConnectOptions::default(),
            config: Some(config),
            interval: None,
            http: Some(http),
        };
        // The controller runs on the runtime's worker threads; this thread only spawns
        // jobs and asks the controller what it did.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let local = rt.spawn(async move {
            tokio::select! {
                r = run_local(options) => r,
                _ = stopped => Ok(()),
            }
        });
        let result = self.watch(&rt, &local, &socket, me, work);
        let _ = stop.send(());
        let ended = rt.block_on(local);
        rt.shutdown_timeout(Duration::from_secs(1));
        // The controller's own error says more than the watcher's "it stopped".
        match (result, ended) {
            (Err(e), _) if e.is::<Interrupted>() => Err(e),
            (_, Ok(Err(e))) => Err(anyhow::Error::new(e).context("the local controller failed")),
            (_, Err(e)) => Err(anyhow::Error::new(e).context("the local controller failed")),
            (result, Ok(Ok(()))) => result,
        }
    }

    /// Starts the jobs on time under the controller at `socket` and samples them.
    fn watch(
        &self,
        rt: &tokio::runtime::Runtime,
        local: &tokio::task::JoinHandle<Result<(), DaemonError>>,
        socket: &Path,
        me: &Path,
        work: &Path,
    ) -> Result<Vec<Sample>> {
        let endpoint = Endpoint::Unix(socket.to_owned());
        let ready = Instant::now() + Duration::from_secs(10);
        let channel = loop {
            if local.is_finished() {
                check_stop()?;
                bail!("the local controller stopped before it listened");
            }
            match rt.block_on(connect(&endpoint, &ConnectOptions::default())) {
                Ok(c) => break c,
                Err(_) if Instant::now() < ready => std::thread::sleep(Duration::from_millis(50)),
                Err(e) => {
                    return Err(
                        anyhow::Error::new(e).context("the local controller never listened")
                    );
                }
            }
        };
        let mut admin = AdminClient::new(channel);
        let sock = socket
            .to_str()
            .context("temporary directory is not UTF-8")?;
        let mut children: Vec<Process> = Vec::new();
        let mut samples = Vec::new();
        let start = Instant::now();
        let mut tick = 1u32;
        header();
        loop {
            check_stop()?;
            // Ctrl-C reaches the controller's own handler too, which ends it.
            if local.is_finished() {
                check_stop()?;
                bail!("the local controller stopped");
            }
            let t = start.elapsed().as_secs_f64();
            while children.len() < JOBS.len() && t >= self.arrival(children.len()) as f64 {
                let i = children.len();
                let child = Process::start(
                    self.job_command(me, work, i, &["--socket", sock])
                        .stdout(Stdio::null()),
                )
                .context("cannot start a demo job")?;
                children.push(child);
            }
            let due = INTERVAL.as_secs_f64() * f64::from(tick);
            if t >= due {
                let reply = rt
                    .block_on(within(&endpoint, DEFAULT_DEADLINE, async {
                        Ok::<_, CallError>(admin.jobs(Empty {}).await?.into_inner())
                    }))
                    .context("cannot ask the local controller")?;
                let mut latest: [Option<(f64, f64)>; 4] = [None; 4];
                for info in reply.jobs {
                    let (Some(i), Some(share)) = (
                        JOBS.iter().position(|j| j.name == info.job),
                        info.pools.get(POOL),
                    ) else {
                        continue;
                    };
                    latest[i] = Some((share.rate, share.allocation));
                    samples.push(Sample {
                        second: due,
                        job: i,
                        mode: Mode::Controlled,
                        rate: share.rate,
                        allocation: Some(share.allocation),
                    });
                }
                // The table shows one line a second; the samples keep every interval.
                if (due.fract()).abs() < 1e-9 {
                    row(due, &latest.map(|c| c.map(|(r, a)| (r, Some(a)))));
                }
                tick += 1;
            }
            if t >= self.seconds as f64 + 0.2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        finish(&mut children);
        Ok(samples)
    }

    /// The same jobs standalone, each counting its own calls every second.
    fn uncontrolled(&self, me: &Path, work: &Path) -> Result<Vec<Sample>> {
        let (tx, rx) = mpsc::channel::<(usize, u64, u64)>();
        let mut children: Vec<Process> = Vec::new();
        let mut samples = Vec::new();
        let start = Instant::now();
        let mut shown = 0u64;
        let mut latest = [None; 4];
        header();
        loop {
            check_stop()?;
            let t = start.elapsed().as_secs_f64();
            while children.len() < JOBS.len() && t >= self.arrival(children.len()) as f64 {
                let i = children.len();
                let mut child = Process::start(
                    self.job_command(me, work, i, &["--standalone"])
                        .stdout(Stdio::piped()),
                )
                .context("cannot start a demo job")?;
                let out = child.child.stdout.take().context("no output pipe")?;
                let tx = tx.clone();
                let arrival = self.arrival(i);
                std::thread::spawn(move || {
                    for line in BufReader::new(out).lines().map_while(Result::ok) {
                        if let Some((s, n)) = line.split_once(',')
                            && let (Ok(s), Ok(n)) = (s.parse::<u64>(), n.parse())
                        {
                            let _ = tx.send((i, arrival + s, n));
                        }
                    }
                });
                children.push(child);
            }
            for (i, second, n) in rx.try_iter() {
                samples.push(Sample {
                    second: second as f64,
                    job: i,
                    mode: Mode::Uncontrolled,
                    rate: n as f64,
                    allocation: None,
                });
            }
            // A second is shown once its jobs have had time to report it.
            if t >= (shown + 1) as f64 + 0.3 {
                shown += 1;
                for (i, l) in latest.iter_mut().enumerate() {
                    *l = samples
                        .iter()
                        .find(|s| s.job == i && s.second == shown as f64)
                        .map(|s| (s.rate, None));
                }
                row(shown as f64, &latest);
            }
            if shown >= self.seconds {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        finish(&mut children);
        Ok(samples)
    }

    /// Means over the seconds when all four jobs ran, both runs side by side.
    fn summary(&self, samples: &[Sample]) {
        // From two seconds after the last arrival: PSFA grows a newcomer's share over a
        // few intervals, and the means are of the settled division.
        let from = self.arrival(JOBS.len() - 1) as f64 + 2.0;
        let mean = |mode: Mode, job: usize, f: fn(&Sample) -> f64| {
            let v: Vec<f64> = samples
                .iter()
                .filter(|s| s.mode == mode && s.job == job && s.second > from)
                .map(f)
                .collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        };
        println!(
            "\nWith all four jobs running (t > {from:.0} s), mean ops/s:\n\n  job   demand   uncontrolled   controlled  allocation"
        );
        let mut totals = [0.0; 3];
        for (i, j) in JOBS.iter().enumerate() {
            let row = [
                mean(Mode::Uncontrolled, i, |s| s.rate),
                mean(Mode::Controlled, i, |s| s.rate),
                mean(Mode::Controlled, i, |s| s.allocation.unwrap_or(0.0)),
            ];
            for (t, v) in totals.iter_mut().zip(row) {
                *t += v;
            }
            println!(
                "  {:<5} {:>6} {:>14} {:>12} {:>11}",
                j.name,
                k(j.pace.into()),
                k(row[0]),
                k(row[1]),
                k(row[2])
            );
        }
        println!(
            "  {:<5} {:>6} {:>14} {:>12} {:>11}   pool capacity {}",
            "all",
            k(JOBS.iter().map(|j| f64::from(j.pace)).sum()),
            k(totals[0]),
            k(totals[1]),
            k(totals[2]),
            k(CAPACITY)
        );
    }
}

/// The table's header: one column per job.
fn header() {
    let mut line = format!("{:>5}", "t (s)");
    for j in &JOBS {
        line += &format!("  {:>15}", j.name);
    }
    println!("{line}  {:>17}", "all / capacity");
}

/// One line of the table: each job's rate (and allocation), the total against capacity.
fn row(second: f64, cells: &[Option<(f64, Option<f64>)>; 4]) {
    let mut line = format!("{second:>5.0}");
    let mut total = 0.0;
    for c in cells {
        let cell = match c {
            None => "-".to_owned(),
            Some((r, None)) => k(*r),
            Some((r, Some(a))) => format!("{} / {}", k(*r), k(*a)),
        };
        total += c.map_or(0.0, |c| c.0);
        line += &format!("  {cell:>15}");
    }
    let over = if total > CAPACITY * 1.05 {
        "  over capacity"
    } else {
        ""
    };
    println!("{line}  {:>8} / {}{over}", k(total), k(CAPACITY));
}

/// A rate in thousands: "15.9k".
fn k(v: f64) -> String {
    format!("{:.1}k", v / 1000.0)
}

/// Both runs as CSV and as a chart of two panels, in `out`.
fn write_figures(out: &Path, samples: &[Sample]) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut csv = String::from("second,job,mode,rate,allocation,capacity\n");
    for s in samples {
        csv += &format!(
            "{},{},{},{:.0},{},{CAPACITY:.0}\n",
            s.second,
            JOBS[s.job].name,
            s.mode.name(),
            s.rate,
            s.allocation.map(|a| format!("{a:.0}")).unwrap_or_default()
        );
    }
    let panel = |mode: Mode, title: &str| {
        let of = |i: usize| samples.iter().filter(move |s| s.mode == mode && s.job == i);
        let mut total: Vec<(f64, f64)> = Vec::new();
        for s in samples.iter().filter(|s| s.mode == mode) {
            match total.iter_mut().find(|p| p.0 == s.second) {
                Some(p) => p.1 += s.rate,
                None => total.push((s.second, s.rate)),
            }
        }
        total.sort_by(|a, b| a.0.total_cmp(&b.0));
        Panel {
            title: title.to_owned(),
            series: JOBS
                .iter()
                .enumerate()
                .map(|(i, j)| Series {
                    name: format!("{} (demand {}/s)", j.name, k(j.pace.into())),
                    rate: of(i).map(|s| (s.second, s.rate)).collect(),
                    allocation: of(i)
                        .filter_map(|s| Some((s.second, s.allocation?)))
                        .collect(),
                })
                .collect(),
            total,
            capacity: CAPACITY,
        }
    };
    let panels = [
        panel(
            Mode::Controlled,
            "controlled: PSFA divides the pool every 500 ms (dashed: each job's allocation)",
        ),
        panel(
            Mode::Uncontrolled,
            "uncontrolled: the same jobs, no controller",
        ),
    ];
    let csv_path = out.join("demo.csv");
    let png_path = out.join("demo.png");
    std::fs::write(&csv_path, csv)
        .with_context(|| format!("cannot write {}", csv_path.display()))?;
    png(
        &png_path,
        "sluice demo: four jobs share one 20k/s getattr pool",
        "getattr calls per second",
        &panels,
    )?;
    println!("\nwrote {} and {}", png_path.display(), csv_path.display());
    Ok(())
}

/// Waits a moment for the jobs to end on their own, as they should by now; those still
/// running are killed when dropped.
fn finish(children: &mut [Process]) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline && children.iter_mut().any(Process::running) {
        std::thread::sleep(Duration::from_millis(20));
    }
}
