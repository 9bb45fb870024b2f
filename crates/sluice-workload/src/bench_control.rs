//! The global controller measured end to end: a real `sluice global` on loopback and `N`
//! simulated local controllers, each a light client on its own gRPC stream and TCP
//! connection.
//!
//! Two child processes of the current executable, so that the global's CPU time is its
//! own: the global (`sluice global`), and the simulator (`sluice bench control
//! --simulate-on ADDR`, which runs [`simulate`]). The simulator's locals report on aligned
//! timers, as real ones do: at each boundary `k·interval` of the wall clock every local
//! sends its report of cycle `k`. The workload is a steady state, as on a real cluster
//! where most jobs' demands hold from one interval to the next: each cycle the demands
//! of a rotating tenth of the locals' jobs change (within each of those locals, so that
//! the total stays the same), and only those jobs' rates change. A cycle's latency runs
//! from its boundary to the moment the last `Rates` of that cycle reaches its local:
//! every local has reported, the algorithm has run and the last changed rate has
//! arrived. All locals share one process, hence one clock.
//!
//! The simulated locals are made light (`SimLocal`, `SimNode`) because they share
//! the global's cores here, where real ones would have a node each: what they spend,
//! the global waits for. The global sees what real locals would send it.
//!
//! The simulator and the driver ([`run`]) speak over the simulator's stdout, one line
//! each: `cpu` (sample the CPU time of both children now: printed at the boundary of the
//! first measured cycle and at the one after the last), then `cycle K SENT_US FIRST_US
//! LAST_US REACHED` per measured cycle:
//! from the cycle's boundary to the last report handed to its stream, to the first and
//! to the last rates received (`-` when none arrived within two intervals), and the
//! number of locals that rates reached.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::{Doing as _, IoFailure, fail};
use crate::harness::{HarnessError, Process, free_port, temp_dir};
use sluice_control::cluster::{ChannelObs, NodeJob};
use sluice_control::config::format_duration;
use sluice_control::global::cycle_at;
use sluice_control::local::{Observed, report_message};
use sluice_control::proto::control_client::ControlClient;
use sluice_control::proto::{self, GlobalMessage, LocalMessage, global_message, local_message};
use sluice_control::transport::{ConnectOptions, Endpoint, connect};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

/// Cycles run before the measured ones, so that every local has sent its full report
/// and the global's state has its steady size.
pub(crate) const WARMUP: u64 = 3;
/// Jobs on each simulated local.
pub(crate) const JOBS: usize = 3;
/// The one pool of the bench's configuration.
pub(crate) const POOL: &str = "md";
/// A job's demand is this many ops/s times 1 to 5.
const DEMAND_STEP: f64 = 100.0;
/// The demands of one local in this many change each cycle, in turn.
pub(crate) const ROTATION: usize = 10;
/// Locals connecting at once: more would overflow the global's accept queue.
const CONNECTING: usize = 128;
/// Bound of the whole connection phase, and of the global's start.
const CONNECT_DEADLINE: Duration = Duration::from_secs(120);
const START_DEADLINE: Duration = Duration::from_secs(10);

/// What to measure.
#[derive(Clone, Debug)]
pub struct ControlBenchOptions {
    /// Simulated local controllers.
    pub locals: usize,
    /// Cycles measured (after `WARMUP` unmeasured ones).
    pub cycles: u64,
    /// The control interval of the global and of the locals.
    pub interval: Duration,
}

/// Figures of one run.
#[derive(Clone, Debug)]
pub struct ControlBench {
    /// Simulated local controllers.
    pub locals: usize,
    /// Cycles measured.
    pub cycles: u64,
    /// Median latency of the cycles that completed, µs; `None` when none did.
    pub median_us: Option<f64>,
    /// 99th percentile (nearest rank) of the same, µs.
    pub p99_us: Option<f64>,
    /// Median, over the same cycles, of the time from the boundary to the last report
    /// handed to its stream (the simulator's own lag), µs.
    pub sent_median_us: Option<f64>,
    /// Median of the time from the boundary to the first rates received (when the
    /// global has computed and begun to send), µs.
    pub first_median_us: Option<f64>,
    /// The global's CPU time (user + system) per local per measured cycle, µs.
    pub cpu_us_per_local: f64,
    /// The same for the simulator, which shares the machine's cores with the global.
    pub simulator_cpu_us_per_local: f64,
    /// Measured cycles whose rates did not all arrive within two intervals.
    pub timeouts: u64,
    /// Fewest locals that one measured cycle's rates reached.
    pub min_reached: usize,
}

/// Why a benchmark of the control plane did not give its figures.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A file or a process of the bench could not be made, read or written.
    #[error(transparent)]
    Io(#[from] IoFailure),
    /// Its temporary directory could not be made.
    #[error(transparent)]
    Harness(#[from] HarnessError),
    /// The control plane refused the bench's own set-up, or a call of a simulated local
    /// failed.
    #[error("{what}: {source}")]
    Control {
        /// What was being done.
        what: String,
        /// The control plane's reason.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A child of the bench failed or said what it should not.
    #[error("{0}")]
    Failed(String),
}

impl BenchError {
    /// `source` as the reason `what` failed.
    pub(crate) fn control(
        what: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        BenchError::Control {
            what: what.into(),
            source: source.into(),
        }
    }
}

type Result<T, E = BenchError> = std::result::Result<T, E>;

impl crate::error::Failure for BenchError {
    fn failed(message: String) -> Self {
        BenchError::Failed(message)
    }
}

// ---------------------------------------------------------------- the driver

/// Runs the benchmark: starts the global and the simulator as children of the current
/// executable, samples the global's CPU time around the measured cycles, and stops both.
pub fn run(o: &ControlBenchOptions) -> Result<ControlBench> {
    raise_open_files()?;
    let exe = std::env::current_exe().doing(|| "find the sluice executable".into())?;
    let dir = temp_dir(None, "sluice-bench-control.")?;
    let log = dir.path().join("global.log");
    let (mut global, addr) = start_global(&exe, dir.path(), &log, o)?;
    let mut simulator = Process::start(
        Command::new(&exe)
            .args(["bench", "control", "--simulate-on", &addr.to_string()])
            .args(["--locals", &o.locals.to_string()])
            .args(["--cycles", &o.cycles.to_string()])
            .args(["--interval", &format_duration(o.interval)])
            .stdout(Stdio::piped()),
    )
    .doing(|| "start the simulator".into())?;
    let Some(stdout) = simulator.child.stdout.take() else {
        fail!("the simulator has no standard output");
    };
    let pids = [global.child.id(), simulator.child.id()];
    eprintln!(
        "workload: {} locals × {JOBS} jobs; each cycle the demands of a rotating tenth of \
         the locals' jobs change, the others' hold (and are left out of reports, as real \
         locals leave out jobs within {:.0} % of what they last sent)",
        o.locals,
        sluice_control::local::TOLERANCE * 100.0
    );
    let reading = Reading::of(BufReader::new(stdout), pids, o.locals)?;
    let status = simulator
        .child
        .wait()
        .doing(|| "wait for the simulator".into())?;
    if !status.success() {
        fail!("the simulator failed ({status})");
    }
    if let Some(status) = global
        .child
        .try_wait()
        .doing(|| "wait for the global".into())?
    {
        fail!(
            "the global exited during the run ({status}): {}",
            tail(&log)
        );
    }
    reading.figures(o)
}

/// Starts `sluice global` on a free loopback port with the bench's configuration in
/// `dir`, its log in `log`, and waits until it listens.
fn start_global(
    exe: &Path,
    dir: &Path,
    log: &Path,
    o: &ControlBenchOptions,
) -> Result<(Process, SocketAddr)> {
    let config = dir.join("global.toml");
    std::fs::write(&config, config_text(o.locals))
        .doing(|| "write the global's configuration".into())?;
    let addr = SocketAddr::from((
        [127, 0, 0, 1],
        free_port().doing(|| "find a free port".into())?,
    ));
    let mut global = Process::logged(
        Command::new(exe)
            .args(["global", "--listen", &addr.to_string()])
            .args(["--interval", &format_duration(o.interval)])
            .arg("--config")
            .arg(&config)
            .arg("--state-dir")
            .arg(dir.join("global-state"))
            .env("SLUICE_LOG_LEVEL", "warn"),
        log,
    )
    .doing(|| "start the global".into())?;
    wait_listening(&mut global, addr, log)?;
    Ok((global, addr))
}

/// What the driver read from the simulator.
#[derive(Default)]
struct Reading {
    /// CPU ticks of the global and of the simulator, at each `cpu` line.
    cpu: Vec<[u64; 2]>,
    /// Per completed cycle: the last report sent, the first and the last rates, µs.
    sent: Vec<f64>,
    first: Vec<f64>,
    last: Vec<f64>,
    timeouts: u64,
    min_reached: usize,
}

impl Reading {
    /// Reads the simulator's lines until it closes its stdout, sampling the CPU time of
    /// `pids` (the global's, the simulator's) at each `cpu` line.
    fn of(lines: impl BufRead, pids: [u32; 2], locals: usize) -> Result<Reading> {
        let mut r = Reading {
            min_reached: locals,
            ..Reading::default()
        };
        for line in lines.lines() {
            let line = line.doing(|| "read the simulator's output".into())?;
            let words: Vec<&str> = line.split_whitespace().collect();
            match words[..] {
                ["cpu"] => r.cpu.push([cpu_ticks(pids[0])?, cpu_ticks(pids[1])?]),
                ["cycle", _, s, f, l, reached] => {
                    let Ok(reached) = reached.parse() else {
                        fail!("the simulator said '{line}': not a count of locals");
                    };
                    r.min_reached = r.min_reached.min(reached);
                    match (micros(s)?, micros(f)?, micros(l)?) {
                        (Some(s), Some(f), Some(l)) => {
                            r.sent.push(s);
                            r.first.push(f);
                            r.last.push(l);
                        }
                        _ => r.timeouts += 1,
                    }
                }
                _ => fail!("the simulator said '{line}'"),
            }
        }
        Ok(r)
    }

    /// The figures of a run of `o`.
    fn figures(mut self, o: &ControlBenchOptions) -> Result<ControlBench> {
        let [before, after] = self.cpu[..] else {
            fail!(
                "the simulator gave {} CPU marks instead of 2",
                self.cpu.len()
            );
        };
        let tick = clock_tick_us()?;
        let per_local =
            |i: usize| (after[i] - before[i]) as f64 * tick / (o.locals as f64 * o.cycles as f64);
        for times in [&mut self.sent, &mut self.first, &mut self.last] {
            times.sort_by(f64::total_cmp);
        }
        Ok(ControlBench {
            locals: o.locals,
            cycles: o.cycles,
            median_us: rank(&self.last, 0.5),
            p99_us: rank(&self.last, 0.99),
            sent_median_us: rank(&self.sent, 0.5),
            first_median_us: rank(&self.first, 0.5),
            cpu_us_per_local: per_local(0),
            simulator_cpu_us_per_local: per_local(1),
            timeouts: self.timeouts,
            min_reached: self.min_reached,
        })
    }
}

/// The global's configuration: one PSFA pool that all jobs' demands never fill. With
/// a full pool, max-min fairness would give every job above the fair share that same
/// share, whatever its demand, and a job's rate would not follow its demand. Here PSFA
/// gives each job its demand plus a part of the rest in proportion to it, `C·dᵢ/Σd`:
/// since the total demand stays the same (see [`SimLocal::report`]), a job's rate
/// changes exactly when its demand does.
fn config_text(locals: usize) -> String {
    let capacity = capacity(locals);
    format!(
        "[[pool]]\nname = \"{POOL}\"\nmatch = \"class=metadata\"\ncapacity = \"{capacity}/s\"\n\
         algorithm = \"psfa\"\n"
    )
}

/// The pool's capacity for `locals` locals: twice the largest demand of every job.
pub(crate) fn capacity(locals: usize) -> f64 {
    2.0 * 5.0 * DEMAND_STEP * (locals * JOBS) as f64
}

/// A time the simulator wrote, µs; `None` for `-` (nothing within two intervals).
fn micros(word: &str) -> Result<Option<f64>> {
    match word {
        "-" => Ok(None),
        us => match us.parse() {
            Ok(t) => Ok(Some(t)),
            Err(_) => fail!("the simulator gave a bad time '{us}'"),
        },
    }
}

/// The nearest-rank percentile `p` of `sorted`.
pub(crate) fn rank(sorted: &[f64], p: f64) -> Option<f64> {
    let i = ((p * sorted.len() as f64).ceil() as usize).max(1) - 1;
    sorted.get(i).copied()
}

/// Waits until the global accepts connections on `addr`.
fn wait_listening(global: &mut Process, addr: SocketAddr, log: &Path) -> Result<()> {
    let start = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err() {
        if let Some(status) = global
            .child
            .try_wait()
            .doing(|| "wait for the global".into())?
        {
            fail!("the global exited ({status}): {}", tail(log));
        }
        if start.elapsed() > START_DEADLINE {
            fail!("the global does not listen on {addr}: {}", tail(log));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// The last line of the global's log, to say why it stopped.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().last().unwrap_or("no log").to_owned()
}

/// Microseconds per clock tick of /proc's CPU times.
fn clock_tick_us() -> Result<f64> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz <= 0 {
        fail!("sysconf(_SC_CLK_TCK) failed");
    }
    Ok(1e6 / hz as f64)
}

/// User and system CPU time of process `pid` and all its threads, in clock ticks.
fn cpu_ticks(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).doing(|| format!("read {path}"))?;
    // The command name, field 2, may hold spaces: count the fields after its ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15; the list starts at field 3.
    let field = |i: usize| -> Result<u64> {
        match fields.get(i - 3).and_then(|f| f.parse().ok()) {
            Some(v) => Ok(v),
            None => fail!("{path}: no field {i}"),
        }
    };
    Ok(field(14)? + field(15)?)
}

/// The last system call's error, as the reason `what` failed.
fn last_os_error(what: &str) -> BenchError {
    IoFailure {
        what: what.into(),
        source: std::io::Error::last_os_error(),
    }
    .into()
}

/// Raises this process's limit of open files to its hard limit: every local is one
/// connection on each side. Children inherit it.
fn raise_open_files() -> Result<()> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid rlimit to fill, then to set.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(last_os_error("read the limit of open files"));
        }
        limit.rlim_cur = limit.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
            return Err(last_os_error("raise the limit of open files"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- the simulator

/// Runs `o.locals` simulated locals against the global at `global` for `o.cycles`
/// measured cycles, writing the lines the driver reads to stdout.
pub fn simulate(global: SocketAddr, o: &ControlBenchOptions) -> Result<()> {
    raise_open_files()?;
    // Two workers: the locals' side of the cycle (10,000 reports, 10,000 rates) must
    // not be the bottleneck, and the global on the same two cores has two as well.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .doing(|| "start the async runtime".into())?
        .block_on(simulate_async(global, o))
}

/// What the simulator saw of one cycle, ns since the epoch (0: not yet).
#[derive(Clone, Copy, Default)]
struct Seen {
    /// The last report handed to its stream.
    sent: u64,
    /// The first and the last rates received.
    first: u64,
    last: u64,
    /// Locals that rates reached (the global sends a local one message per cycle, when
    /// one of its rates changed).
    reached: usize,
}

/// By cycle.
type Timeline = Mutex<BTreeMap<u64, Seen>>;

async fn simulate_async(global: SocketAddr, o: &ControlBenchOptions) -> Result<()> {
    let timeline: Arc<Timeline> = Arc::default();
    let (ticks, tick) = watch::channel(0u64);
    let (ready_tx, mut ready) = mpsc::channel(o.locals);
    let connecting = Arc::new(Semaphore::new(CONNECTING));
    for index in 0..o.locals {
        let (tick, timeline) = (tick.clone(), timeline.clone());
        let (ready_tx, connecting) = (ready_tx.clone(), connecting.clone());
        let interval_s = o.interval.as_secs_f64();
        let groups = ROTATION.min(o.locals);
        tokio::spawn(async move {
            let permit = connecting.acquire_owned().await;
            let local = SimLocal::connect(index, groups, global, interval_s).await;
            drop(permit);
            match local {
                Ok(local) => {
                    let _ = ready_tx.send(Ok(())).await;
                    local.run(tick, &timeline).await;
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e)).await;
                }
            }
        });
    }
    drop(tick);
    let all_ready = async {
        for _ in 0..o.locals {
            match ready.recv().await {
                Some(r) => r?,
                None => fail!("a simulated local vanished"),
            }
        }
        Ok::<(), BenchError>(())
    };
    let Ok(ready) = tokio::time::timeout(CONNECT_DEADLINE, all_ready).await else {
        fail!(
            "{} locals not connected within {CONNECT_DEADLINE:?}",
            o.locals
        );
    };
    ready?;

    let (now, _) = cycle_at(o.interval);
    let first = now + 1 + WARMUP;
    let end = first + o.cycles;
    // The cycle after the last measured one is reported too but not measured, so that
    // the CPU window (boundary of `first` to boundary of `end`) is the steady state on
    // both of its edges.
    for k in now + 1..=end {
        tokio::time::sleep(until_boundary(k, o.interval)).await;
        if k == first || k == end {
            say("cpu")?;
        }
        ticks.send_replace(k);
    }
    tokio::time::sleep(2 * o.interval).await;
    // Dropping the sender ends every local's stream.
    drop(ticks);
    let timeline = timeline.lock().expect("timeline");
    let limit = 2 * o.interval.as_nanos() as u64;
    for k in first..end {
        let seen = timeline.get(&k).copied().unwrap_or_default();
        let boundary = boundary_ns(k, o.interval);
        let since = |ns: u64| match ns.checked_sub(boundary) {
            Some(d) if ns > 0 && d <= limit => format!("{:.1}", d as f64 / 1e3),
            _ => "-".to_owned(),
        };
        say(&format!(
            "cycle {k} {} {} {} {}",
            since(seen.sent),
            since(seen.first),
            since(seen.last),
            seen.reached
        ))?;
    }
    Ok(())
}

/// One line to the driver, at once.
fn say(line: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    Ok(writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .doing(|| "write to the driver".into())?)
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64
}

/// Cycle `k`'s boundary, ns since the epoch: the instant every local reports it.
fn boundary_ns(k: u64, interval: Duration) -> u64 {
    k * interval.as_nanos() as u64
}

fn until_boundary(k: u64, interval: Duration) -> Duration {
    Duration::from_nanos(boundary_ns(k, interval).saturating_sub(now_ns()))
}

/// One simulated local controller: a gRPC stream of its own, on a TCP connection of its
/// own, through the protocol's generated client as a real local's uplink opens it.
struct SimLocal {
    node: SimNode,
    interval_s: f64,
    up: mpsc::Sender<LocalMessage>,
    down: Streaming<GlobalMessage>,
}

impl SimLocal {
    /// Connects on a connection of its own, says hello and waits for the policy.
    async fn connect(
        index: usize,
        groups: usize,
        global: SocketAddr,
        interval_s: f64,
    ) -> Result<SimLocal> {
        let sim = SimNode::new(index, groups);
        let node = sim.name.clone();
        let endpoint = Endpoint::Tcp {
            host: global.ip().to_string(),
            port: global.port(),
            tls: false,
        };
        // A report waits for the one before it at most: the locals report once a cycle.
        let (up, rx) = mpsc::channel(4);
        let hello = proto::Hello {
            node: node.clone(),
            version: 1,
        };
        if up
            .send(local(local_message::Body::Hello(hello)))
            .await
            .is_err()
        {
            fail!("{node}: its stream closed before its hello");
        }
        let channel = connect(&endpoint, &ConnectOptions::default())
            .await
            .map_err(|e| BenchError::control(format!("{node}: connect"), e))?;
        let mut client = ControlClient::new(channel);
        let mut down = client
            .session(ReceiverStream::new(rx))
            .await
            .map_err(|e| BenchError::control(format!("{node}: session"), e))?
            .into_inner();
        match down.message().await {
            Ok(Some(GlobalMessage {
                body: Some(global_message::Body::Policy(_)),
            })) => {}
            other => fail!("{node}: expected the policy, got {other:?}"),
        }
        Ok(SimLocal {
            node: sim,
            interval_s,
            up,
            down,
        })
    }

    /// Reports each cycle `tick` announces and notes the rates that come down, until
    /// the ticks end or the stream does.
    async fn run(mut self, mut tick: watch::Receiver<u64>, timeline: &Timeline) {
        let mut full = true;
        loop {
            tokio::select! {
                changed = tick.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let cycle = *tick.borrow_and_update();
                    let report = self.report(cycle, std::mem::take(&mut full));
                    if self.up.send(local(local_message::Body::Report(report))).await.is_err() {
                        return;
                    }
                    let now = now_ns();
                    let mut timeline = timeline.lock().expect("timeline");
                    let seen = timeline.entry(cycle).or_default();
                    seen.sent = seen.sent.max(now);
                }
                message = self.down.message() => match message {
                    Ok(Some(GlobalMessage { body: Some(global_message::Body::Rates(r)) })) => {
                        let now = now_ns();
                        let mut timeline = timeline.lock().expect("timeline");
                        let seen = timeline.entry(r.cycle).or_default();
                        if seen.first == 0 {
                            seen.first = now;
                        }
                        seen.last = seen.last.max(now);
                        seen.reached += 1;
                    }
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => return,
                },
            }
        }
    }

    /// This local's report of `cycle`.
    fn report(&mut self, cycle: u64, full: bool) -> proto::Report {
        let observed = Observed {
            jobs: self.node.changed(cycle, full),
            ..Observed::default()
        };
        report_message(cycle, self.interval_s, full, observed)
    }
}

/// What one simulated local observes, cycle by cycle. The demands of one local in
/// [`ROTATION`] (in turn, each cycle another) move: its first job's goes up or down by
/// one step and its second's the other way, so that neither the local's total nor the
/// cluster's changes. The third's differs from its neighbours' and holds.
pub(crate) struct SimNode {
    index: usize,
    /// Its demands move every `groups` cycles (`ROTATION`, or fewer with fewer locals).
    groups: usize,
    pub(crate) name: String,
    jobs: [String; JOBS],
    /// The phase (see [`SimNode::phase`]) of the demands it last reported.
    reported: Option<usize>,
}

impl SimNode {
    /// Local `index` of a rotation of `groups`.
    pub(crate) fn new(index: usize, groups: usize) -> Self {
        let name = format!("sim{index:05}");
        SimNode {
            index,
            groups,
            jobs: std::array::from_fn(|j| format!("{name}-{j}")),
            name,
            reported: None,
        }
    }

    /// How many times this local's demands had moved at `cycle`: once every `groups`
    /// cycles, the locals in turn.
    fn phase(&self, cycle: u64) -> usize {
        let offset = self.groups - 1 - self.index % self.groups;
        (cycle as usize + offset) / self.groups
    }

    /// Its jobs' demands at `cycle`.
    fn demands(&self, cycle: u64) -> [f64; JOBS] {
        let shift = (self.phase(cycle) % 3) as f64 - 1.0;
        std::array::from_fn(|j| {
            DEMAND_STEP
                * match j {
                    0 => 3.0 + shift,
                    1 => 3.0 - shift,
                    _ => (1 + self.index % 5) as f64,
                }
        })
    }

    /// The jobs whose demand moved since its last report (every job when `full`), as a
    /// real local reports them. A real local finds them by comparing each job with what
    /// it last sent (`sluice_control::local::Deltas`), on its own node's CPU; here they
    /// are known from the phase, so as to spend less of the cores the global shares.
    /// The test `a_simulated_local_reports_the_jobs_a_real_one_would` holds the two to
    /// the same reports.
    pub(crate) fn changed(&mut self, cycle: u64, full: bool) -> Vec<NodeJob> {
        let phase = self.phase(cycle);
        let moved = self.reported != Some(phase);
        self.reported = Some(phase);
        let demands = self.demands(cycle);
        (0..JOBS)
            .filter(|&j| full || (moved && j < 2))
            .map(|j| node_job(&self.jobs[j], demands[j]))
            .collect()
    }
}

/// Job `job` asking for `demand` in the bench's pool, and given it.
pub(crate) fn node_job(job: &str, demand: f64) -> NodeJob {
    let obs = ChannelObs {
        arrivals: demand,
        admitted: demand,
        demand,
        ..ChannelObs::default()
    };
    NodeJob {
        job: job.to_owned(),
        user: "bench".to_owned(),
        nodes: 1,
        launchers: 1,
        pools: BTreeMap::from([(POOL.to_owned(), obs)]),
        ..NodeJob::default()
    }
}

/// `body` as a message of the control stream.
fn local(body: local_message::Body) -> LocalMessage {
    LocalMessage { body: Some(body) }
}

#[cfg(test)]
mod tests {
    use sluice_control::local::Deltas;

    use super::*;

    #[test]
    fn a_simulated_local_reports_the_jobs_a_real_one_would() {
        for index in 0..2 * ROTATION {
            let mut sim = SimNode::new(index, ROTATION);
            let mut real = Deltas::default();
            for cycle in 100..100 + 4 * ROTATION as u64 {
                let full = cycle == 100;
                let demands = sim.demands(cycle);
                let mut observed = Observed {
                    jobs: (0..JOBS)
                        .map(|j| node_job(&sim.jobs[j], demands[j]))
                        .collect(),
                    ..Observed::default()
                };
                real.keep_changed(&mut observed, full);
                assert_eq!(
                    sim.changed(cycle, full),
                    observed.jobs,
                    "local {index}, cycle {cycle}"
                );
            }
        }
    }
}
