//! Stopping and restarting the daemons while jobs run, with real daemons and real jobs:
//! SIGTERM stops a local at once whatever is attached, the jobs run on at their last
//! rates, and a new local takes them back.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::daemons::{
    Local, busiest_second, call_times, daemon_dir, free_port, monotonic_ns, rate_between, wait_for,
};
use common::{Scratch, c_prog, path_str, tmp_dir};
use serde_json::Value;

static SERIAL: Mutex<()> = Mutex::new(());

const SEC: u64 = 1_000_000_000;

/// A stopped daemon must be gone within this (1 s is the aim; the machine is noisy).
const STOP_LIMIT: Duration = Duration::from_secs(2);

/// `sluice pool set md …` for getattr calls at `capacity`, divided by PSFA.
fn pool_md(capacity: &str) -> Vec<String> {
    format!("pool set md --match op=getattr --capacity {capacity} --algorithm psfa")
        .split(' ')
        .map(str::to_owned)
        .collect()
}

/// `local.admin(args)` of owned words.
fn admin(local: &Local, args: &[String]) -> std::process::Output {
    local.admin(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn ok(o: &std::process::Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Whether `GET /metrics` on loopback `port` answers 200.
fn http_answers(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let mut answer = String::new();
    write!(s, "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n").is_ok()
        && s.read_to_string(&mut answer).is_ok()
        && answer.lines().next().is_some_and(|l| l.contains(" 200 "))
}

fn shows_job(jobs: &Value, job: &str) -> bool {
    jobs["jobs"]
        .as_array()
        .is_some_and(|a| a.iter().any(|j| j["job"] == job))
}

/// A `rate` stat loop of `ms` milliseconds as job `job` under `local`, its calls logged
/// in `out`.
fn stat_loop(local: &Local, job: &str, s: &Scratch, out: &std::path::Path, ms: &str) -> Child {
    local.job(
        job,
        &["--mount", &s.file],
        &[&c_prog("rate"), "one", &s.file, &path_str(out), ms],
    )
}

/// Asserts that `times` ran at `want`/s (within 5%) over [from, to), and never more
/// than the pool's capacity in any second of it, give or take two bursts (1% each: a
/// bucket's own, and one of shares that moved, as around a restart) and the one call
/// in flight.
fn assert_rate(what: &str, times: &[u64], from: u64, to: u64, want: f64) -> f64 {
    let got = rate_between(times, from, to);
    let inside: Vec<u64> = times
        .iter()
        .copied()
        .filter(|&t| t >= from && t < to)
        .collect();
    let most = busiest_second(&inside) as f64;
    eprintln!("{what}: {got:.0}/s, busiest second {most:.0}");
    assert!(
        (got - want).abs() <= want * 0.05,
        "{what}: {got:.0}/s, expected {want}/s"
    );
    assert!(
        most <= want * 1.02 + 1.0,
        "{what}: {most} calls in one second, over {want}/s and its bursts"
    );
    got
}

/// SIGTERM with launchers holding attachments and a job in its stat loop: the local is
/// gone at once (a graceful shutdown used to wait for every attached job to end); the
/// job's calls go on at its last rate and none fails; a new local on the same socket,
/// state directory and HTTP port starts at once, adopts every job, holds them again, and
/// ends each when its launchers go.
#[test]
fn sigterm_stops_the_local_at_once_and_the_next_one_adopts_its_jobs() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let port = free_port();
    let http = format!("127.0.0.1:{port}");
    let config = "interval = \"500ms\"\n\n[[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\n\
                  capacity = \"2k/s\"\nalgorithm = \"psfa\"\nmin_share = 0.0\n";
    let mut local = Local::start(dir.path(), config, &["--node", "n1", "--http", &http], None);
    let s = Scratch::new();
    let out = tmp_dir();
    let start = monotonic_ns();
    let mut job = stat_loop(&local, "A", &s, out.path(), "7000");
    // Other launchers holding attachments: idle jobs.
    let idle: Vec<String> = (0..10).map(|i| format!("idle{i}")).collect();
    let mut idlers: Vec<Child> = idle
        .iter()
        .map(|j| local.job(j, &[], &["sleep", "8"]))
        .collect();
    let every_job_shown = |local: &Local| {
        wait_for(Duration::from_secs(3), || {
            let jobs = local.jobs();
            shows_job(&jobs, "A") && idle.iter().all(|j| shows_job(&jobs, j))
        })
    };
    assert!(
        every_job_shown(&local),
        "not every job attached: {}",
        local.jobs()
    );
    std::thread::sleep(Duration::from_millis(1500));
    let stopping = monotonic_ns();
    let took = local.daemon.terminate(STOP_LIMIT);
    eprintln!(
        "the local stopped {} ms after SIGTERM, with {} launchers attached",
        took.as_millis(),
        idle.len() + 1
    );
    assert!(!local.socket.exists(), "the socket is still there");
    // A second without a local.
    std::thread::sleep(Duration::from_secs(1));
    let restarting = monotonic_ns();
    let began = Instant::now();
    local.restart();
    assert!(
        wait_for(Duration::from_secs(2), || http_answers(port)),
        "the new local does not serve HTTP on {http}: {}",
        std::fs::read_to_string(dir.path().join("local.log2")).unwrap_or_default()
    );
    eprintln!(
        "the new local answered on its socket and HTTP port {} ms after it started",
        began.elapsed().as_millis()
    );
    let restarted = monotonic_ns();
    // Its first cycle shows them.
    assert!(
        every_job_shown(&local),
        "the new local did not adopt every job: {}",
        local.jobs()
    );
    // Held again: a new capacity reaches the adopted job.
    std::thread::sleep(Duration::from_millis(1500));
    let changed = monotonic_ns();
    ok(&admin(&local, &pool_md("1k/s")));
    let status = job.wait().unwrap();
    assert!(status.success(), "the job failed: {status}");
    for idler in &mut idlers {
        assert!(idler.wait().unwrap().success());
    }
    // Launchers whose connections ended with the old local end their jobs under the new
    // one when they go: nothing is left behind.
    assert!(
        wait_for(Duration::from_secs(3), || local.jobs()["jobs"]
            .as_array()
            .is_some_and(Vec::is_empty)),
        "jobs left after their launchers ended: {}",
        local.jobs()
    );
    let times = call_times(out.path());
    assert_rate("before", &times, start + SEC, stopping, 2000.0);
    assert_rate("no local", &times, stopping, restarting, 2000.0);
    assert_rate("adopted", &times, restarted, changed, 2000.0);
    assert_rate(
        "capacity lowered",
        &times,
        changed + SEC,
        start + 6900 * SEC / 1000,
        1000.0,
    );
}
