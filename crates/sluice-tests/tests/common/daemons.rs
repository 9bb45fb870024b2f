//! The control plane's daemons as the tests run them: real `sluice local` and `sluice
//! global` processes on temp sockets and loopback ports (or inside network namespaces),
//! killed when dropped, and the jobs attached to them.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_workload::harness::{self, Process, Sluice};
use tempfile::TempDir;

use super::{Stats, bin_dir, path_str, sluice_bin, tmp_dir};

/// CLOCK_MONOTONIC, the clock the stage and the C programs record.
pub fn monotonic_ns() -> u64 {
    sluice_control::segment_file::monotonic_ns()
}

/// A daemon process in a group of its own, killed (SIGKILL) and reaped when dropped
/// (the laboratory's [`Process`]).
pub struct Daemon(pub Process);

impl std::ops::Deref for Daemon {
    type Target = Process;
    fn deref(&self) -> &Process {
        &self.0
    }
}

impl std::ops::DerefMut for Daemon {
    fn deref_mut(&mut self) -> &mut Process {
        &mut self.0
    }
}

/// The `sluice` and stage library of directory `bins`, as the tests start them: logging
/// at info, optionally inside network namespace `netns`.
pub fn sluice_of(bins: &Path, netns: Option<&str>) -> Sluice {
    Sluice {
        bin: bins.join("sluice"),
        stage: Some(bins.join("libsluice_stage.so")),
        netns: netns.map(str::to_owned),
        env: vec![("SLUICE_LOG_LEVEL".to_owned(), "info".to_owned())],
    }
}

impl Daemon {
    /// Starts `sluice ARGS…`, optionally inside network namespace `netns`, logging to
    /// `log`.
    pub fn start(netns: Option<&str>, args: &[String], log: PathBuf) -> Daemon {
        Self::start_from(&bin_dir(), netns, args, log)
    }

    /// [`Daemon::start`] with the `sluice` and stage library of directory `bins` (another
    /// release's). A daemon given no `--config` is given `--config none`: the tests have
    /// no site file in /etc (a release before `none` reads it as a missing file, which it
    /// took for no file).
    pub fn start_from(bins: &Path, netns: Option<&str>, args: &[String], log: PathBuf) -> Daemon {
        let mut args = args.to_vec();
        let daemon = matches!(args.first().map(String::as_str), Some("local" | "global"));
        if daemon && !args.iter().any(|a| a == "--config") {
            args.extend(["--config".to_owned(), "none".to_owned()]);
        }
        Daemon(
            sluice_of(bins, netns)
                .start(&args, &log)
                .expect("cannot start the daemon"),
        )
    }

    /// SIGKILL and reap it.
    pub fn kill9(&mut self) {
        self.0.kill();
    }

    /// SIGTERM, and how long it took to exit (panics after `limit`, with its log).
    pub fn terminate(&mut self, limit: Duration) -> Duration {
        let start = Instant::now();
        self.signal(libc::SIGTERM);
        while start.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                assert!(status.success(), "exited {status}: {}", self.log_text());
                return start.elapsed();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("still running {limit:?} after SIGTERM: {}", self.log_text());
    }
}

/// `sluice global` on a free loopback port, its state in `dir/global-state`, with `extra`
/// arguments, logging to `dir/global.log`; waits until `sluice status` answers from it.
/// Returns it and its URL.
pub fn start_global(dir: &Path, extra: &[&str]) -> (Daemon, String) {
    let mut args = extra.to_vec();
    if !args.contains(&"--config") {
        args.extend(["--config", "none"]);
    }
    let (global, url) = sluice_of(&bin_dir(), None)
        .start_global(dir, &args)
        .unwrap_or_else(|e| panic!("the global never answered: {e}"));
    (Daemon(global), url)
}

/// Waits until `sluice status` answers from the global at `url` (panics after 10 s, with
/// its log): it then also has its signal handlers.
pub fn wait_answers(global: &Daemon, url: &str) {
    let answers = wait_for(Duration::from_secs(10), || {
        Command::new(sluice_bin())
            .args(["status", "--server", url])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    assert!(answers, "the global never answered: {}", global.log_text());
}

/// A local controller on a socket of its own, with its state directory and config.
pub struct Local {
    /// The daemon.
    pub daemon: Daemon,
    /// Its socket.
    pub socket: PathBuf,
    /// Where its socket, state, config and log live.
    pub dir: PathBuf,
    args: Vec<String>,
    netns: Option<String>,
    /// Times it was started.
    starts: u32,
    /// Its segments' directory, on tmpfs, removed with whatever a killed local left.
    _shm: TempDir,
}

impl Local {
    /// `sluice local` in `dir` (created by the caller) with the config text `config` and
    /// extra arguments; waits until it answers.
    pub fn start(dir: &Path, config: &str, extra: &[&str], netns: Option<&str>) -> Local {
        Self::start_from(&bin_dir(), dir, config, extra, netns)
    }

    /// [`Local::start`] with the `sluice` of directory `bins` (another release's).
    pub fn start_from(
        bins: &Path,
        dir: &Path,
        config: &str,
        extra: &[&str],
        netns: Option<&str>,
    ) -> Local {
        std::fs::write(dir.join("local.toml"), config).expect("config");
        let config = ["--config".to_owned(), path_str(&dir.join("local.toml"))];
        Self::launch(bins, dir, &config, extra, netns)
    }

    /// `sluice local` in `dir` with `--config none`; waits until it answers.
    pub fn without_config(dir: &Path, extra: &[&str], netns: Option<&str>) -> Local {
        Self::launch(&bin_dir(), dir, &[], extra, netns)
    }

    fn launch(
        bins: &Path,
        dir: &Path,
        config: &[String],
        extra: &[&str],
        netns: Option<&str>,
    ) -> Local {
        let socket = dir.join("local.sock");
        let shm = super::shm_dir();
        // Other users' launchers open their segments in it, as in /dev/shm itself.
        std::fs::set_permissions(
            shm.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("chmod the segments' directory");
        let mut args = vec![
            "local".to_owned(),
            "--shm-dir".to_owned(),
            path_str(shm.path()),
            "--socket".to_owned(),
            path_str(&socket),
            "--state-dir".to_owned(),
            path_str(&dir.join("state")),
        ];
        args.extend(config.iter().cloned());
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut local = Local {
            daemon: Daemon::start_from(bins, netns, &args, dir.join("local.log")),
            socket,
            dir: dir.to_owned(),
            args,
            netns: netns.map(str::to_owned),
            starts: 1,
            _shm: shm,
        };
        local.wait_ready();
        local
    }

    fn wait_ready(&mut self) {
        // Asked with this build's `sluice`, whichever release the local is.
        let sockets = [self.socket.clone()];
        let ready = Sluice::at(sluice_bin()).wait_ready(
            &sockets,
            1,
            std::slice::from_mut(&mut self.daemon.0),
            Duration::from_secs(20),
        );
        if let Err(e) = ready {
            panic!("sluice local never answered: {e}");
        }
    }

    /// Starts it again, same socket, state and config (after [`Daemon::kill9`]), its
    /// log in `local.log2`, `local.log3`…
    pub fn restart(&mut self) {
        self.restart_from(&bin_dir());
    }

    /// Kills it (SIGKILL) and starts the `sluice` of directory `bins` (another release's)
    /// in its place, same socket, state and config, logging to `local.log2`, `local.log3`…
    pub fn restart_from(&mut self, bins: &Path) {
        self.respawn(bins);
        self.wait_ready();
    }

    /// Starts it again like [`Local::restart`], ready once its log says so: its admin
    /// commands go to its global, which may be down.
    pub fn restart_alone(&mut self) {
        self.respawn(&bin_dir());
        let ready = wait_for(Duration::from_secs(20), || {
            self.daemon.log_text().contains("local controller ready")
        });
        assert!(
            ready,
            "sluice local never got ready: {}",
            self.daemon.log_text()
        );
    }

    fn respawn(&mut self, bins: &Path) {
        self.daemon.kill9();
        self.starts += 1;
        self.daemon = Daemon::start_from(
            bins,
            self.netns.as_deref(),
            &self.args,
            self.dir.join(format!("local.log{}", self.starts)),
        );
    }

    /// `sluice ARGS… --socket SOCKET`.
    pub fn admin(&self, args: &[&str]) -> Output {
        Command::new(sluice_bin())
            .args(args)
            .arg("--socket")
            .arg(&self.socket)
            .stdin(Stdio::null())
            .output()
            .expect("sluice admin command")
    }

    /// `sluice jobs --json`, parsed.
    pub fn jobs(&self) -> Value {
        let o = self.admin(&["jobs", "--json"]);
        assert!(
            o.status.success(),
            "sluice jobs: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).expect("jobs JSON")
    }

    /// `sluice pool list --json`, parsed.
    pub fn pools(&self) -> Value {
        let o = self.admin(&["pool", "list", "--json"]);
        assert!(
            o.status.success(),
            "sluice pool list: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).expect("pools JSON")
    }

    /// `sluice run --socket SOCKET --job JOB [extra…] -- CMD…`, started.
    pub fn job(&self, job: &str, extra: &[&str], cmd: &[&str]) -> Child {
        self.job_from(&bin_dir(), job, extra, cmd)
    }

    /// [`Local::job`] with the `sluice` and stage library of directory `bins` (another
    /// release's).
    pub fn job_from(&self, bins: &Path, job: &str, extra: &[&str], cmd: &[&str]) -> Child {
        self.job_command_from(bins, job, extra, cmd)
            .spawn()
            .expect("sluice run")
    }

    /// `sluice run --socket SOCKET --job JOB [extra…] -- CMD…`, to start.
    pub fn job_command(&self, job: &str, extra: &[&str], cmd: &[&str]) -> Command {
        self.job_command_from(&bin_dir(), job, extra, cmd)
    }

    fn job_command_from(&self, bins: &Path, job: &str, extra: &[&str], cmd: &[&str]) -> Command {
        let mut c = Command::new(bins.join("sluice"));
        c.env("SLUICE_STAGE", bins.join("libsluice_stage.so"))
            .args(["run", "--socket"])
            .arg(&self.socket)
            .args(["--job", job])
            .args(extra)
            .arg("--")
            .args(cmd)
            .stdin(Stdio::null());
        c
    }
}

/// The share of `pool` that `sluice jobs --json` shows for `job`: (allocation, rate, demand).
pub fn share(jobs: &Value, job: &str, pool: &str) -> Option<(f64, f64, f64)> {
    let j = jobs["jobs"].as_array()?.iter().find(|j| j["job"] == job)?;
    let s = &j["pools"][pool];
    Some((
        s["allocation"].as_f64()?,
        s["rate"].as_f64()?,
        s["demand"].as_f64()?,
    ))
}

/// Waits up to `limit` for `cond`, polling every 50 ms.
pub fn wait_for(limit: Duration, cond: impl FnMut() -> bool) -> bool {
    harness::wait_until(limit, Duration::from_millis(50), cond)
}

/// The call times a `rate` program wrote into `dir` (files `ts.*`), sorted.
pub fn call_times(dir: &Path) -> Vec<u64> {
    let mut times = Vec::new();
    for entry in std::fs::read_dir(dir).expect("rate output dir") {
        let p = entry.expect("entry").path();
        if p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("ts."))
        {
            let text = std::fs::read_to_string(&p).expect("ts file");
            times.extend(text.lines().filter_map(|l| l.parse::<u64>().ok()));
        }
    }
    times.sort_unstable();
    times
}

/// Whether `dir` holds a file whose name starts with `prefix` (the rate program's
/// `ready.PID`, say).
pub fn has_file_starting(dir: &Path, prefix: &str) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .any(|e| e.unwrap().file_name().to_string_lossy().starts_with(prefix))
}

/// Calls per second within [from, to).
pub fn rate_between(times: &[u64], from: u64, to: u64) -> f64 {
    let n = times.iter().filter(|&&t| t >= from && t < to).count();
    n as f64 / ((to - from) as f64 / 1e9)
}

/// Calls per second after the first `skip` of the sorted call times `times` (ns): with a
/// burst of `skip` calls, the calls after it are spaced exactly 1/rate apart.
pub fn steady_rate(times: &[u64], skip: usize) -> f64 {
    let n = times.len();
    assert!(n > skip + 10, "too few calls: {n}");
    (n - 1 - skip) as f64 / ((times[n - 1] - times[skip]) as f64 / 1e9)
}

/// The rule of the `rate` program's runs of stat calls.
pub const GETATTR_RULE: &str = "op=getattr rate=2000/s";
/// [`GETATTR_RULE`]'s rate, calls per second.
pub const GETATTR_RATE: f64 = 2000.0;
/// [`GETATTR_RULE`]'s burst: the default, 10 ms of the rate.
pub const GETATTR_BURST: usize = 20;

/// Checks a `rate` run of stat calls in `mode` under [`GETATTR_RULE`] (`times`: the calls
/// it recorded, sorted; `stats`: its report): every call counted and admitted, and the
/// rate after the burst within 2%. Returns that rate.
pub fn assert_getattr_held(times: &[u64], stats: &Stats, mode: &str) -> f64 {
    let n = times.len() as u64;
    assert_eq!(
        stats.calls("getattr"),
        n,
        "{mode}: getattr counted vs calls made"
    );
    assert_eq!(
        stats.rule(0, "admitted"),
        n,
        "{mode}: admitted vs calls made"
    );
    let rate = steady_rate(times, GETATTR_BURST);
    assert!(
        (rate - GETATTR_RATE).abs() <= GETATTR_RATE * 0.02,
        "{mode}: {rate:.1} stats/s under {GETATTR_RULE} (±2%), {n} calls"
    );
    rate
}

/// The `n` longest pauses between consecutive calls of `times` (sorted, ns) within
/// [from, to), as "12.3 ms at +456 ms" (from `from`): a rate short of its limit because
/// of one long pause is its caller not running (a bucket gives back at most its burst),
/// one short throughout is the bucket's rate.
pub fn longest_pauses(times: &[u64], from: u64, to: u64, n: usize) -> String {
    let inside = &times[times.partition_point(|&t| t < from)..times.partition_point(|&t| t < to)];
    let mut pauses: Vec<(u64, u64)> = inside.windows(2).map(|p| (p[1] - p[0], p[0])).collect();
    pauses.sort_unstable_by(|a, b| b.cmp(a));
    let shown: Vec<String> = pauses
        .iter()
        .take(n)
        .map(|&(pause, at)| {
            format!(
                "{:.1} ms at +{} ms",
                pause as f64 / 1e6,
                (at - from) / 1_000_000
            )
        })
        .collect();
    shown.join(", ")
}

/// The most calls within any one-second window.
pub fn busiest_second(times: &[u64]) -> usize {
    let mut end = 0;
    let mut most = 0;
    for (i, &t) in times.iter().enumerate() {
        while end < times.len() && times[end] < t + 1_000_000_000 {
            end += 1;
        }
        most = most.max(end - i);
    }
    most
}

/// The busiest second of calls `all` (sorted) made under a pool of `capacity` calls/s by
/// `processes` single-threaded processes, checked against what the pool guarantees:
/// its jobs' bursts (1% of each share, so 1% of the capacity) and one call in flight
/// per process once shares hold still (from `settled` on), and another 1% of the rate
/// moved (at most the capacity) over seconds in which the controller moved shares (a
/// bucket whose rate fell may have reserved its 10 ms of tolerance at the old rate, one
/// whose rate rose uses the new one at once). Returns both busiest seconds.
pub fn assert_pool_held(
    all: &[u64],
    settled: u64,
    capacity: usize,
    processes: usize,
) -> (usize, usize) {
    let from = all.partition_point(|&t| t < settled);
    let most_settled = busiest_second(&all[from..]);
    let bursts = capacity / 100;
    assert!(
        most_settled <= capacity + bursts + processes,
        "{most_settled} calls in one second under a pool of {capacity}/s, shares settled"
    );
    let most = busiest_second(all);
    assert!(
        most <= capacity + 2 * bursts + processes,
        "{most} calls in one second under a pool of {capacity}/s, shares moving"
    );
    (most_settled, most)
}

/// A fresh directory for one test's daemons.
pub fn daemon_dir() -> TempDir {
    tmp_dir()
}

/// A TCP port free on loopback now.
pub fn free_port() -> u16 {
    harness::free_port().expect("a free port")
}

/// A GET over HTTP/1.0 to `addr` (`127.0.0.1:PORT`); the body of a 200 answer.
pub fn http_get(addr: &str, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    head.contains(" 200 ").then(|| body.to_owned())
}

/// A local controller in `dir` serving its dashboard and API on a free loopback address
/// (returned), with one pool of 3,000 getattr/s divided down a tree every 500 ms: accounts
/// phys (share 2) and chem (1), their users, their jobs.
pub fn dashboard_local(dir: &Path) -> (Local, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let config = "interval = \"500ms\"\n\n[[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\n\
                  capacity = \"3k/s\"\ntree = \"account,user,job\"\n\n\
                  [shares.account]\nphys = 2\nchem = 1\n";
    (Local::start(dir, config, &["--http", &addr], None), addr)
}

/// Jobs A (account phys) and B (account chem) attached to `local`, each a stat loop on
/// `file` (tests/c/rate.c) for `ms` milliseconds, logging its calls into the matching
/// directory of `outs`.
pub fn two_stat_jobs(local: &Local, file: &str, outs: [&Path; 2], ms: &str) -> [Child; 2] {
    let rate = super::c_prog("rate");
    [("A", "phys", outs[0]), ("B", "chem", outs[1])].map(|(job, account, out)| {
        local.job(
            job,
            &["--mount", file, "--account", account],
            &[&rate, "one", file, &path_str(out), ms],
        )
    })
}
