//! Job reports with real daemons: a job held by a pool makes a known number of calls (each
//! one's time logged by tests/c/rate.c); when it ends, `sluice report` gives exactly those
//! calls, the seconds its thread was held and its allocation over time; the report
//! survives a restart of the controller, is pruned past `report_retention`, and another
//! user can neither read it nor learn more than that it is not theirs (audited).

use crate::common;

use std::os::unix::process::CommandExt as _;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::daemons::{Local, call_times, daemon_dir, wait_for};
use common::{c_prog, open_to_all, path_str, sluice_bin, stage_lib, tmp_dir};
use serde_json::Value;

/// A local with one pool of 400 getattr/s, every 200 ms, keeping reports `retention`.
fn local(dir: &std::path::Path, retention: &str) -> Local {
    Local::start(
        dir,
        &format!(
            "interval = \"200ms\"\nreport_retention = \"{retention}\"\n\n[[pool]]\nname = \"md\"\n\
             match = \"op=getattr\"\ncapacity = \"400/s\"\nalgorithm = \"psfa\"\n"
        ),
        &["--node", "n7"],
        None,
    )
}

/// Job `job`: one thread of stat() on a file of its own for `ms`, as root; returns the
/// calls it made.
fn stat_job(local: &Local, job: &str, ms: &str) -> usize {
    let (work, out) = (tmp_dir(), tmp_dir());
    let file = path_str(&work.path().join("f"));
    std::fs::write(&file, "x").unwrap();
    let rate = c_prog("rate");
    let o = local
        .job_command(
            job,
            &["--mount", &file],
            &[&rate, "one", &file, &path_str(out.path()), ms],
        )
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    call_times(out.path()).len()
}

/// `sluice report JOB --json` once the report is there (the local reaps the job at its
/// next interval).
fn report_of(local: &Local, job: &str) -> Value {
    let mut last = None;
    let found = wait_for(Duration::from_secs(10), || {
        let o = local.admin(&["report", job, "--json"]);
        let ok = o.status.success();
        last = Some(o);
        ok
    });
    let o = last.unwrap();
    assert!(found, "no report of {job}: {o:?}");
    serde_json::from_slice(&o.stdout).expect("report JSON")
}

#[test]
fn a_jobs_report_counts_its_calls_and_survives_a_restart() {
    let dir = daemon_dir();
    let mut local = local(dir.path(), "7d");
    let calls = stat_job(&local, "r1", "2000");
    let r = report_of(&local, "r1");
    eprintln!("{r}");
    let md = &r["pools"]["md"];
    assert_eq!(md["calls"].as_u64(), Some(calls as u64), "{r}");
    assert_eq!(r["nodes"][0]["node"], "n7", "{r}");
    assert_eq!(r["nodes"][0]["pools"]["md"]["calls"], md["calls"], "{r}");
    assert_eq!(r["uid"], 0, "{r}");
    assert_eq!(r["running"], false, "{r}");
    // Held: a thread that wanted thousands of stats a second got 400.
    let held = md["held_s"].as_f64().unwrap();
    assert!(held > 0.5, "held {held}s under a pool of 400/s: {r}");
    let (min, median, max) = (
        md["alloc_min"].as_f64().unwrap(),
        md["alloc_median"].as_f64().unwrap(),
        md["alloc_max"].as_f64().unwrap(),
    );
    assert!(md["samples"].as_u64().unwrap() >= 3, "{r}");
    assert!(min <= median && median <= max && max <= 400.5, "{r}");
    assert!(
        median > 300.0,
        "the only job's median allocation {median}: {r}"
    );
    // The job's one line is in the log.
    let log = local.daemon.log_text();
    assert!(
        log.lines()
            .any(|l| l.contains("job report") && l.contains("md: ") && l.contains("held")),
        "{log}"
    );
    // For a person: units, the node, the pool.
    let o = local.admin(&["report", "r1"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{o:?}");
    assert!(
        text.starts_with("job r1 of root (uid 0) on n7: ran ") && text.contains("/s"),
        "{text}"
    );
    // A restart of the controller keeps it, as it was.
    local.restart();
    assert_eq!(report_of(&local, "r1"), r);
    // Unknown job: one line, exit 2.
    let o = local.admin(&["report", "nosuch"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        err.starts_with("sluice: no report of job nosuch") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn reports_past_their_retention_are_removed() {
    let dir = daemon_dir();
    let local = local(dir.path(), "4s");
    stat_job(&local, "r2", "300");
    report_of(&local, "r2");
    let reports = dir.path().join("state/reports");
    let files = || std::fs::read_dir(&reports).map_or(0, |d| d.count());
    assert_eq!(files(), 1);
    let gone = wait_for(Duration::from_secs(15), || {
        local.admin(&["report", "r2"]).status.code() == Some(2) && files() == 0
    });
    assert!(gone, "the report outlived report_retention: {}", files());
    assert!(
        local
            .daemon
            .log_text()
            .contains("job report removed: older than report_retention")
    );
}

/// `sluice ARGS…` as `uid` (no passwd entry needed).
fn as_user(uid: u32, args: &[&str]) -> Output {
    Command::new(sluice_bin())
        .uid(uid)
        .gid(uid)
        .env("SLUICE_STAGE", stage_lib())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_user_reads_their_own_report_and_not_anothers() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to run commands as other users");
        return;
    }
    let (a, b) = (12355, 12356);
    let dir = daemon_dir();
    open_to_all(dir.path(), 0o755);
    let local = local(dir.path(), "7d");
    let socket = path_str(&local.socket);
    // User A's own job, by its own name.
    let o = as_user(
        a,
        &["run", "--socket", &socket, "--job", "mine", "--", "true"],
    );
    assert!(o.status.success(), "{o:?}");
    let read = |uid, job: &str| as_user(uid, &["report", job, "--json", "--socket", &socket]);
    let mut got = None;
    wait_for(Duration::from_secs(10), || {
        let o = read(a, "mine");
        let ok = o.status.success();
        got = Some(o);
        ok
    });
    let o = got.unwrap();
    assert!(o.status.success(), "{o:?}");
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["job"], format!("uid{a}:mine"), "{r}");
    assert_eq!(r["uid"], a, "{r}");
    // B, naming A's job by its full id: refused in one line, exit 2, and audited.
    let id = format!("uid{a}:mine");
    let o = read(b, &id);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        err.contains(&format!(
            "job {id} is uid {a}'s: only its user or an administrator"
        )) && err.lines().count() == 1,
        "{err}"
    );
    let log = local.daemon.log_text();
    assert!(
        log.lines().any(|l| l.contains("action=")
            && l.contains("report")
            && l.contains("refused")
            && l.contains(&format!("uid={b}"))),
        "the refusal is not audited: {log}"
    );
    // B naming it by its short name finds nothing of B's own.
    assert_eq!(read(b, "mine").status.code(), Some(2));
    // Root reads any.
    assert!(local.admin(&["report", &id]).status.success());
}
