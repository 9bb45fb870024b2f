//! Faults of a local controller, each with real daemons and real jobs: killed mid-run,
//! fed garbage (another user naming a job: tests/users.rs; a stopped one: tests/deadlines.rs).

use crate::common;

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use common::daemons::{Local, call_times, daemon_dir, monotonic_ns, rate_between, wait_for};
use common::{Scratch, c_prog, path_str, sluice_bin, stage_lib, tmp_dir};

static SERIAL: Mutex<()> = Mutex::new(());

const SEC: u64 = 1_000_000_000;

/// kill -9 of the local mid-run: the application goes on at the rate last written and
/// ends normally; a local restarted on the same state directory adopts the job and its
/// segment, and controls it again (a rule change then reaches it).
#[test]
fn a_killed_local_leaves_jobs_running_and_a_restarted_one_adopts_them() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let config = "interval = \"500ms\"\n\n[[rule]]\nrule = \"cap: op=getattr rate=1000/s\"\n";
    let mut local = Local::start(dir.path(), config, &["--node", "n1"], None);
    let s = Scratch::new();
    let rate = c_prog("rate");
    let out = tmp_dir();
    let start = monotonic_ns();
    let mut job = local.job(
        "K",
        &["--mount", &s.file],
        &[&rate, "one", &s.file, &path_str(out.path()), "6000"],
    );
    std::thread::sleep(Duration::from_millis(1500));
    local.daemon.kill9();
    std::thread::sleep(Duration::from_millis(1500));
    local.restart();
    assert!(
        wait_for(Duration::from_secs(3), || share_known(&local, "K")),
        "the restarted local does not show job K: {}",
        local.jobs()
    );
    let changed = monotonic_ns();
    let o = local.admin(&["rule", "change", "cap", "rate=3000/s"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let status = job.wait().unwrap();
    assert!(status.success(), "the job failed: {status}");
    let times = call_times(out.path());
    let before = rate_between(&times, start + SEC, start + 1400 * SEC / 1000);
    let orphaned = rate_between(&times, start + 1600 * SEC / 1000, start + 2900 * SEC / 1000);
    let after = rate_between(
        &times,
        changed + 200 * SEC / 1000,
        start + 5800 * SEC / 1000,
    );
    eprintln!("before {before:.0}/s, local dead {orphaned:.0}/s, adopted and raised {after:.0}/s");
    for (what, got, want) in [
        ("before", before, 1000.0),
        ("orphaned", orphaned, 1000.0),
        ("adopted", after, 3000.0),
    ] {
        assert!(
            (got - want).abs() <= want * 0.05,
            "{what}: {got:.0}/s, expected {want}/s"
        );
    }
}

fn share_known(local: &Local, job: &str) -> bool {
    let jobs = local.jobs();
    jobs["jobs"]
        .as_array()
        .is_some_and(|a| a.iter().any(|j| j["job"] == job))
}

/// Garbage on the local's socket: random bytes, a truncated HTTP/2 preface, a preface
/// followed by junk. Each connection is dropped; the local serves on.
#[test]
fn garbage_on_the_local_socket_drops_only_that_connection() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let local = Local::start(dir.path(), "interval = \"1s\"\n", &["--node", "n1"], None);
    let junk: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let sends: [&[u8]; 4] = [
        &junk,
        &preface[..10],
        &[&preface[..], &junk[..]].concat(),
        b"",
    ];
    for bytes in sends {
        let mut c = UnixStream::connect(&local.socket).expect("connect");
        let _ = c.write_all(bytes);
        drop(c);
    }
    assert!(
        local.admin(&["status"]).status.success(),
        "{}",
        local.daemon.log_text()
    );
    let s = Scratch::new();
    let o = Command::new(sluice_bin())
        .env("SLUICE_STAGE", stage_lib())
        .args(["run", "--socket"])
        .arg(&local.socket)
        .args(["--job", "G", "--mount", &s.file, "--", "stat", &s.file])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
