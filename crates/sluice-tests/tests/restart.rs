//! Stopping and restarting the daemons while jobs run, with real daemons and real jobs:
//! SIGTERM stops a local or a global at once whatever is attached or connected, the jobs
//! run on at their last rates, and a new daemon takes them back; whatever an
//! administrator set survives every restart, with or without a configuration file.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::daemons::{
    Daemon, Local, busiest_second, call_times, daemon_dir, free_port, longest_pauses, monotonic_ns,
    rate_between, share, wait_for,
};
use common::net::{Net, start_global_with, wait_global};
use common::{Scratch, c_prog, ok, path_str, tmp_dir};
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
        "{what}: {got:.0}/s, expected {want}/s; its longest pauses: {}",
        longest_pauses(times, from, to, 5)
    );
    assert!(
        most <= want * 1.02 + 1.0,
        "{what}: {most} calls in one second, over {want}/s and its bursts"
    );
    got
}

/// Asserts that `times` ran at 2,000/s in the second after each restart (what stopped
/// the daemon, when the new one answered) and in the second after that.
fn assert_held_after(restarts: &[(&str, u64)], times: &[u64]) {
    for &(how, up) in restarts {
        let first = format!("the second after {how} and a restart");
        assert_rate(&first, times, up, up + SEC, 2000.0);
        let next = format!("the second after that ({how})");
        assert_rate(&next, times, up + SEC, up + 2 * SEC, 2000.0);
    }
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

/// The case of the issue: a local without --config, a pool set through the API, a job
/// under it at 2,000/s; after kill -9 and a restart, then after SIGTERM and a restart,
/// the pool is there and the job stays at its rate, in the second after the restart as
/// later (a restart used to lose the pool, and the job ran unthrottled).
#[test]
fn a_pool_set_through_the_api_survives_restarts_of_a_local_without_config() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let extra = ["--node", "n1", "--interval", "500ms"];
    let mut local = Local::without_config(dir.path(), &extra, None);
    ok(&admin(&local, &pool_md("2k/s")));
    let s = Scratch::new();
    let out = tmp_dir();
    let mut job = stat_loop(&local, "A", &s, out.path(), "9000");
    std::thread::sleep(Duration::from_secs(2));
    let mut restarts = Vec::new();
    for how in ["kill -9", "SIGTERM"] {
        match how {
            "kill -9" => local.daemon.kill9(),
            _ => {
                local.daemon.terminate(STOP_LIMIT);
            }
        }
        local.restart();
        let up = monotonic_ns();
        let pools = local.pools();
        assert!(
            pools.to_string().contains("\"md\""),
            "after {how} the pool is gone: {pools}"
        );
        restarts.push((how, up));
        std::thread::sleep(Duration::from_millis(2500));
    }
    assert!(job.wait().unwrap().success(), "the job failed");
    assert_held_after(&restarts, &call_times(out.path()));
}

/// The same for a global without --config in a cluster (network namespaces): a pool set
/// through a local's socket survives kill -9 and SIGTERM of the global, and the job on
/// the node stays at its rate; the global stops at once with a local connected.
#[test]
fn a_pool_set_through_the_api_survives_restarts_of_a_global_without_config() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(net) = Net::new() else { return };
    let dir = daemon_dir();
    let global_args = ["--interval", "500ms"];
    let mut global = start_global_with(&net, dir.path(), &global_args);
    wait_global(&net, &global);
    let node_dir = dir.path().join("n1");
    std::fs::create_dir_all(&node_dir).unwrap();
    let extra = ["--global", "http://10.231.0.1:7401", "--node", "n1"];
    let local = Local::start(&node_dir, "", &extra, Some(net.node_ns(0)));
    let connected = || {
        let o = local.admin(&["status", "--json"]);
        serde_json::from_slice::<Value>(&o.stdout).is_ok_and(|v| v["locals"] == 1)
    };
    assert!(
        wait_for(Duration::from_secs(10), connected),
        "the local never connected: {}",
        global.log_text()
    );
    // Changes reach the global from its own host (over the network they need a token,
    // which takes a configuration file).
    let o = std::process::Command::new("ip")
        .args(["netns", "exec", net.global_ns()])
        .arg(common::sluice_bin())
        .args(pool_md("2k/s"))
        .args(["--server", "http://127.0.0.1:7401"])
        .output()
        .unwrap();
    ok(&o);
    let s = Scratch::new();
    let out = tmp_dir();
    let mut job = stat_loop(&local, "A", &s, out.path(), "12000");
    std::thread::sleep(Duration::from_secs(2));
    let mut restarts = Vec::new();
    for how in ["kill -9", "SIGTERM"] {
        match how {
            "kill -9" => global.kill9(),
            _ => {
                let took = global.terminate(STOP_LIMIT);
                eprintln!(
                    "the global stopped {} ms after SIGTERM, a local connected",
                    took.as_millis()
                );
            }
        }
        global = start_global_with(&net, dir.path(), &global_args);
        wait_global(&net, &global);
        let up = monotonic_ns();
        assert!(
            wait_for(Duration::from_secs(5), connected),
            "the local did not come back: {}",
            global.log_text()
        );
        let pools = local.pools();
        assert!(
            pools.to_string().contains("\"md\""),
            "after {how} the global lost the pool: {pools}"
        );
        assert!(
            wait_for(Duration::from_secs(3), || share(&local.jobs(), "A", "md")
                .is_some()),
            "the global does not show job A under md: {}",
            local.jobs()
        );
        restarts.push((how, up));
        std::thread::sleep(Duration::from_millis(3000));
    }
    assert!(job.wait().unwrap().success(), "the job failed");
    assert_held_after(&restarts, &call_times(out.path()));
}

/// A local in a cluster restarted while its global is down: the pools the global sent
/// last are in force again before its jobs are adopted, and the job stays at its rate;
/// with that saved policy damaged, the adopted job keeps the pools its segment holds.
#[test]
fn a_local_restarted_while_its_global_is_down_keeps_the_pools_in_force() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let args: Vec<String> = [
        "global",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--state-dir",
        &path_str(&dir.path().join("global-state")),
        "--interval",
        "500ms",
    ]
    .map(str::to_owned)
    .to_vec();
    let mut global = Daemon::start(None, &args, dir.path().join("global.log"));
    let mut pool = pool_md("2k/s");
    pool.extend(["--server".to_owned(), url.clone()]);
    let o = || {
        Command::new(common::sluice_bin())
            .args(&pool)
            .output()
            .unwrap()
    };
    assert!(
        wait_for(Duration::from_secs(10), || o().status.success()),
        "the global never took the pool: {}",
        global.log_text()
    );
    let node_dir = dir.path().join("n1");
    std::fs::create_dir_all(&node_dir).unwrap();
    let extra = [
        "--global",
        url.as_str(),
        "--node",
        "n1",
        "--interval",
        "500ms",
    ];
    let mut local = Local::start(&node_dir, "", &extra, None);
    let s = Scratch::new();
    let out = tmp_dir();
    let mut job = stat_loop(&local, "A", &s, out.path(), "8000");
    assert!(
        wait_for(Duration::from_secs(5), || share(&local.jobs(), "A", "md")
            .is_some()),
        "job A never showed under md: {}",
        local.jobs()
    );
    std::thread::sleep(Duration::from_secs(1));
    global.kill9();
    let mut restarts = Vec::new();
    for how in ["kill -9 (global down)", "kill -9 (policy damaged)"] {
        if how.contains("damaged") {
            std::fs::write(node_dir.join("state/policy.json"), "{ not json").unwrap();
        }
        local.restart_alone();
        restarts.push((how, monotonic_ns()));
        std::thread::sleep(Duration::from_millis(2500));
    }
    assert!(job.wait().unwrap().success(), "the job failed");
    assert_held_after(&restarts, &call_times(out.path()));
    assert!(
        local.daemon.log_text().contains("saved policy ignored"),
        "{}",
        local.daemon.log_text()
    );
}

/// With --config: an admin change is kept in the state directory (the file, the site's,
/// is never written) and survives a restart and a SIGHUP of the unchanged file; once the
/// file's text changes it replaces the saved configuration, on SIGHUP as at start, the
/// replaced one kept beside it and the log naming what was dropped.
#[test]
fn with_a_config_file_admin_changes_last_until_the_file_changes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let file = dir.path().join("local.toml");
    let state = dir.path().join("state");
    let config = "interval = \"500ms\"\n\n[[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\n\
                  capacity = \"5k/s\"\nalgorithm = \"psfa\"\n";
    let mut local = Local::start(dir.path(), config, &["--node", "n1"], None);
    ok(&local.admin(&["rule", "start", "cap: op=open rate=100/s"]));
    ok(&admin(&local, &pool_md("2k/s")));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), config);
    let saved = std::fs::read_to_string(state.join("config.toml")).unwrap();
    assert!(
        saved.contains("cap: op=open rate=100/s") && saved.contains("capacity = \"2k/s\""),
        "{saved}"
    );
    let holds = |local: &Local, rule: &str, capacity: &str| {
        let rules = ok(&local.admin(&["rule", "list"]));
        let pools = local.pools().to_string();
        rules.contains(rule) && pools.contains(capacity)
    };
    local.restart();
    assert!(holds(&local, "cap", "2k/s"), "{}", local.pools());
    assert!(
        local
            .daemon
            .log_text()
            .contains("restored from the state directory"),
        "{}",
        local.daemon.log_text()
    );
    // The file as it was: a SIGHUP keeps the changes.
    local.daemon.signal(libc::SIGHUP);
    assert!(wait_for(Duration::from_secs(3), || local
        .daemon
        .log_text()
        .contains("unchanged")));
    assert!(holds(&local, "cap", "2k/s"), "{}", local.pools());
    // Edited: the file's configuration replaces them.
    std::fs::write(
        &file,
        format!("{config}\n[[rule]]\nrule = \"by-hand: op=mkdir rate=10/s\"\n"),
    )
    .unwrap();
    local.daemon.signal(libc::SIGHUP);
    assert!(wait_for(Duration::from_secs(3), || holds(
        &local, "by-hand", "5k/s"
    )));
    assert!(!ok(&local.admin(&["rule", "list"])).contains("cap"));
    let log = local.daemon.log_text();
    assert!(log.contains("pool md, rule cap"), "{log}");
    let replaced = std::fs::read_to_string(state.join("config.replaced.toml")).unwrap();
    assert!(replaced.contains("cap: op=open rate=100/s"), "{replaced}");
    // A change, then the file edited while the local is down: at start the file wins.
    ok(&local.admin(&["rule", "start", "later: op=open rate=50/s"]));
    local.daemon.kill9();
    std::fs::write(&file, config).unwrap();
    local.restart();
    assert!(
        local.pools().to_string().contains("5k/s"),
        "{}",
        local.pools()
    );
    let rules = ok(&local.admin(&["rule", "list"]));
    assert!(
        !rules.contains("later") && !rules.contains("by-hand"),
        "{rules}"
    );
    let log = local.daemon.log_text();
    assert!(log.contains("rule by-hand, rule later"), "{log}");
}

/// A tmpfs mounted for a test, unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    /// A new directory `at` with a tmpfs of `options` on it; `None` (and the test says it
    /// is skipped) where this machine cannot mount one.
    fn mount(at: &std::path::Path, options: &str) -> Option<Tmpfs> {
        std::fs::create_dir(at).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "sluice-test"])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("skipped: cannot mount a tmpfs ({options}) here");
        }
        mounted.then(|| Tmpfs(at.to_owned()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A change the controller cannot save (its state directory full) is refused and taken
/// back: the answer says why, the rule in force and the job's pace are those before it,
/// the audit log says it was taken back; once there is room, the same change is made.
#[test]
fn a_change_that_cannot_be_saved_is_taken_back() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let state = dir.path().join("state");
    let Some(_tmpfs) = Tmpfs::mount(&state, "size=256k") else {
        return;
    };
    let config = "interval = \"1s\"\n\n[[rule]]\nrule = \"cap: op=getattr rate=2/s\"\n";
    let local = Local::start(dir.path(), config, &["--node", "n1"], None);
    let s = Scratch::new();
    let out = tmp_dir();
    let mut job = stat_loop(&local, "R", &s, out.path(), "2500");
    std::thread::sleep(Duration::from_millis(500));
    let filler = state.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    while f.write_all(&[0; 4096]).is_ok() {}
    drop(f);

    let o = local.admin(&["rule", "change", "cap", "rate=5000/s"]);
    let answered = monotonic_ns();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success(),
        "a change that cannot be saved was made"
    );
    assert!(err.contains("No space left on device"), "{err}");
    assert!(
        ok(&local.admin(&["rule", "list"])).contains("rate=2/s"),
        "the rule before the change is not in force"
    );
    assert!(job.wait().unwrap().success());
    let times = call_times(out.path());
    let after = times.iter().filter(|&&t| t >= answered).count();
    eprintln!("{after} calls after the refusal");
    // 2/s for what is left of the job's 2.5 s, and its burst: thousands at 5,000/s.
    assert!(after <= 8, "{after} calls after the change was taken back");
    let log = local.daemon.log_text();
    assert!(log.contains("taken back"), "{log}");

    std::fs::remove_file(&filler).unwrap();
    ok(&local.admin(&["rule", "change", "cap", "rate=5000/s"]));
    assert!(ok(&local.admin(&["rule", "list"])).contains("rate=5k/s"));
}

/// A state directory the daemon cannot write is an error at start, one line, for a
/// local and for a global (not a loss at the next restart).
#[test]
fn an_unwritable_state_directory_is_an_error_at_start() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let state = dir.path().join("ro");
    let Some(_tmpfs) = Tmpfs::mount(&state, "ro,size=1m") else {
        return;
    };
    let socket = dir.path().join("local.sock");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    for (what, args) in [
        (
            "single-node local",
            vec!["local", "--node", "n1", "--socket", &path_str(&socket)],
        ),
        (
            "local in a cluster",
            vec![
                "local",
                "--node",
                "n1",
                "--socket",
                &path_str(&socket),
                "--global",
                "http://127.0.0.1:9",
            ],
        ),
        ("global", vec!["global", "--listen", &listen]),
    ] {
        let o = std::process::Command::new(common::sluice_bin())
            .args(&args)
            .args(["--config", "none", "--state-dir"])
            .arg(&state)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        let last = err.trim().lines().last().unwrap_or_default().to_owned();
        assert!(!o.status.success(), "{what} started: {err}");
        assert!(
            last.starts_with("sluice: ")
                && last.contains("state directory")
                && last.contains("Read-only file system"),
            "{what}: {err}"
        );
        eprintln!("{what}: {last}");
    }
}

/// Two locals on one state directory would adopt each other's jobs and remove each other's
/// segments: the second is refused at start with one line naming the first, and starts
/// once the first is gone (even killed with -9: the kernel drops the lock).
#[test]
fn a_second_local_on_one_state_directory_is_refused_at_start() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let mut first = Local::without_config(dir.path(), &["--node", "n1"], None);
    let second = |socket: &str| {
        std::process::Command::new(common::sluice_bin())
            .args([
                "local", "--node", "n1", "--config", "none", "--socket", socket,
            ])
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let other_socket = path_str(&dir.path().join("other.sock"));
    let o = second(&other_socket);
    let err = String::from_utf8_lossy(&o.stderr);
    let last = err.trim().lines().last().unwrap_or_default();
    assert!(!o.status.success(), "a second local started: {err}");
    assert!(
        last.starts_with("sluice: ")
            && last.contains(&format!("(pid {})", first.daemon.child.id()))
            && last.contains("give each daemon its own --state-dir"),
        "{err}"
    );
    eprintln!("second local: {last}");
    first.daemon.kill9();
    first.restart();
    assert!(first.admin(&["status"]).status.success());
}
