//! Job identity across users, with real uids (the launchers run under setuid/setgid): a
//! user's job ids are its own, so naming another user's id neither joins nor blocks that
//! job; a job root attached (as the Slurm plugin does) is joined only from inside it; every
//! refusal and separation is in the local's log with who, what and why.

use crate::common;

use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::daemons::{Local, daemon_dir, wait_for};
use common::{Scratch, c_prog, open_to_all, path_str, sluice_bin, stage_lib, tmp_dir};
use serde_json::Value;
use tempfile::TempDir;

/// Two users no passwd entry names: the controller knows them by uid.
const A: u32 = 12345;
const B: u32 = 12346;

fn needs_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped: needs root to run launchers as other users");
    }
    root
}

/// `sluice ARGS…` as `uid` (and its group of the same number, no other groups).
fn as_user(uid: u32, args: &[&str]) -> Command {
    let mut c = Command::new(sluice_bin());
    c.uid(uid)
        .gid(uid)
        .env("SLUICE_STAGE", stage_lib())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// The job id a `--stats -` run printed.
fn job_of(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let json: Value = serde_json::from_str(&out[out.find('{').expect("stats")..]).expect("JSON");
    json["job"].as_str().expect("job").to_owned()
}

/// `sluice run --job JOB --uid A` as root: job JOB attached for user A, as the plugin in
/// slurmstepd does; the command follows.
fn for_a_by_root(socket: &str, job: &str) -> Command {
    let mut c = Command::new(sluice_bin());
    c.env("SLUICE_STAGE", stage_lib())
        .args([
            "run",
            "--socket",
            socket,
            "--job",
            job,
            "--uid",
            &A.to_string(),
        ])
        .stdin(Stdio::null());
    c
}

/// A local controller whose socket every user reaches.
fn local_for_all() -> (TempDir, Local) {
    let dir = daemon_dir();
    open_to_all(dir.path(), 0o755);
    let local = Local::start(
        dir.path(),
        "interval = \"500ms\"\n",
        &["--node", "n1"],
        None,
    );
    (dir, local)
}

fn listed<'a>(jobs: &'a Value, job: &str) -> Option<&'a Value> {
    jobs["jobs"].as_array()?.iter().find(|j| j["job"] == job)
}

#[test]
fn a_users_job_id_is_its_own_and_another_user_naming_it_neither_joins_nor_blocks_it() {
    if !needs_root() {
        return;
    }
    let (_dir, local) = local_for_all();
    let socket = path_str(&local.socket);
    let s = Scratch::new();
    open_to_all(s.dir.path(), 0o755);
    let calls = tmp_dir();
    open_to_all(calls.path(), 0o777);
    // A's job 7777, a stat loop of 4 s held to its own rule.
    let a = as_user(
        A,
        &[
            "run",
            "--socket",
            &socket,
            "--job",
            "7777",
            "--mount",
            &s.file,
            "--rule",
            "op=getattr rate=500/s",
            "--stats",
            "-",
            "--",
            &c_prog("rate"),
            "one",
            &s.file,
            &path_str(calls.path()),
            "4000",
        ],
    )
    .spawn()
    .expect("A's job");
    assert!(
        wait_for(Duration::from_secs(5), || listed(
            &local.jobs(),
            "uid12345:7777"
        )
        .is_some()),
        "A's job is not listed: {}",
        local.jobs()
    );
    // B launches job 7777 too: it runs, as a job of its own.
    let b = as_user(
        B,
        &[
            "run", "--socket", &socket, "--job", "7777", "--stats", "-", "--", "sleep", "1",
        ],
    )
    .spawn()
    .expect("B's job");
    let mut both = Value::Null;
    wait_for(Duration::from_secs(5), || {
        both = local.jobs();
        listed(&both, "uid12346:7777").is_some()
    });
    let b = b.wait_with_output().unwrap();
    assert_eq!(job_of(&b), "uid12346:7777");
    let (ja, jb) = (
        listed(&both, "uid12345:7777"),
        listed(&both, "uid12346:7777"),
    );
    assert!(ja.is_some() && jb.is_some(), "both jobs 7777 apart: {both}");
    assert_eq!(ja.unwrap()["user"], "12345", "{both}");
    assert_eq!(jb.unwrap()["user"], "12346", "{both}");
    // Whatever B names, it gets a job of its own or a refusal, never A's job.
    let o = as_user(
        B,
        &[
            "run",
            "--socket",
            &socket,
            "--job",
            "uid12345:7777",
            "--stats",
            "-",
            "--",
            "true",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(job_of(&o), "uid12346:uid12345:7777");
    let o = as_user(
        B,
        &[
            "run", "--socket", &socket, "--job", "7777", "--uid", "12345", "--", "true",
        ],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("uid 12346 may attach only its own jobs, not one of uid 12345"),
        "{err}"
    );
    // A's job ran its course, held to its rule, and was never B's.
    let a = a.wait_with_output().unwrap();
    assert_eq!(job_of(&a), "uid12345:7777");
    let out = String::from_utf8_lossy(&a.stdout);
    let stats: Value = serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap();
    let admitted = stats["rules"][0]["admitted"].as_f64().unwrap();
    assert!(
        (1000.0..=2600.0).contains(&admitted),
        "A's job admitted {admitted} stats in 4 s under 500/s: {stats}"
    );
    // The local's log: who (uid, pid), what (job) and why, for the refusal and for each job.
    let log = local.daemon.log_text();
    let refused = log
        .lines()
        .find(|l| l.contains("attach refused"))
        .unwrap_or_else(|| panic!("no refusal logged: {log}"));
    for part in [
        "job=7777",
        "uid=12346",
        "pid=",
        "may attach only its own jobs",
    ] {
        assert!(refused.contains(part), "{part} missing from: {refused}");
    }
    for job in ["uid12345:7777", "uid12346:7777"] {
        assert!(
            log.lines()
                .any(|l| l.contains("attached") && l.contains(&format!("job={job}"))),
            "{job} not logged: {log}"
        );
    }
}

#[test]
fn a_job_root_attached_is_joined_only_by_its_own_processes() {
    if !needs_root() {
        return;
    }
    let (_dir, local) = local_for_all();
    let socket = path_str(&local.socket);
    let out = tmp_dir();
    open_to_all(out.path(), 0o777);
    let inner_stats = out.path().join("inner.json");
    // Root attaches job 4242 for A (as the plugin in slurmstepd does), and runs A's own
    // `sluice run --job 4242` inside it.
    let mut outer = for_a_by_root(&socket, "4242")
        .arg("--")
        .args([
            "setpriv",
            &format!("--reuid={A}"),
            &format!("--regid={A}"),
            "--clear-groups",
        ])
        .arg(sluice_bin())
        .args(["run", "--socket", &socket, "--job", "4242", "--stats"])
        .arg(&inner_stats)
        .args(["--", "sleep", "3"])
        .spawn()
        .expect("root's launcher");
    let joined = wait_for(Duration::from_secs(5), || {
        listed(&local.jobs(), "4242").is_some_and(|j| j["launchers"] == 2)
    });
    assert!(
        joined,
        "A's launcher inside job 4242 did not join it: {}",
        local.jobs()
    );
    assert_eq!(listed(&local.jobs(), "4242").unwrap()["user"], "12345");
    // From outside the job, naming it: A gets a job of its own, B too.
    for (uid, own) in [(A, "uid12345:4242"), (B, "uid12346:4242")] {
        let o = as_user(
            uid,
            &[
                "run", "--socket", &socket, "--job", "4242", "--stats", "-", "--", "true",
            ],
        )
        .output()
        .unwrap();
        assert_eq!(job_of(&o), own);
    }
    assert!(outer.wait().unwrap().success());
    let inner: Value =
        serde_json::from_str(&std::fs::read_to_string(&inner_stats).expect("inner stats")).unwrap();
    assert_eq!(inner["job"], "4242", "{inner}");
    let log = local.daemon.log_text();
    for (uid, why) in [
        (A, "its process is not one of that job's"),
        (B, "that job runs as uid 12345"),
    ] {
        let line = log
            .lines()
            .find(|l| l.contains("not joined to job 4242") && l.contains(&format!("uid={uid}")))
            .unwrap_or_else(|| panic!("uid {uid}'s separation not logged: {log}"));
        assert!(line.contains(why) && line.contains("pid="), "{line}");
    }
    assert!(
        log.lines()
            .any(|l| l.contains("joined") && l.contains("job=4242") && l.contains("uid=12345")),
        "A's join not logged: {log}"
    );
}

/// A cgroup tree of the test's own on the cgroup v2 hierarchy, removed when dropped.
struct Cgroups {
    root: PathBuf,
}

impl Cgroups {
    /// `None` where no cgroup v2 hierarchy is mounted writable.
    fn new() -> Option<Cgroups> {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let mount = mounts.lines().find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            (right.split_whitespace().next() == Some("cgroup2"))
                .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
        })?;
        let root = mount.join(format!("sluice-test.{}", std::process::id()));
        std::fs::create_dir(&root).ok()?;
        Some(Cgroups { root })
    }

    /// Creates `path` under the tree; returns its cgroup.procs.
    fn make(&self, path: &str) -> String {
        let dir = self.root.join(path);
        std::fs::create_dir_all(&dir).expect("mkdir a cgroup");
        path_str(&dir.join("cgroup.procs"))
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        // Deepest first: a cgroup is removed only once it has no children.
        let mut dirs = vec![self.root.clone()];
        let mut i = 0;
        while i < dirs.len() {
            if let Ok(entries) = std::fs::read_dir(&dirs[i]) {
                dirs.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
            }
            i += 1;
        }
        for dir in dirs.iter().rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[test]
fn a_process_in_the_jobs_slurm_cgroup_joins_it_and_one_in_a_look_alike_does_not() {
    if !needs_root() {
        return;
    }
    let Some(cgroups) = Cgroups::new() else {
        eprintln!("skipped: no writable cgroup v2 hierarchy");
        return;
    };
    let (_dir, local) = local_for_all();
    let socket = path_str(&local.socket);
    let mut root_job = for_a_by_root(&socket, "4343")
        .args(["--", "sleep", "4"])
        .spawn()
        .expect("root's launcher");
    assert!(
        wait_for(Duration::from_secs(5), || listed(&local.jobs(), "4343")
            .is_some()),
        "root's job 4343 is not listed: {}",
        local.jobs()
    );
    // A's `sluice run --job 4343` from a cgroup: Slurm's (cgroup v2 layout), then one a
    // user could name so in a tree of its own.
    for (cgroup, job) in [
        ("system.slice/slurmstepd.scope/job_4343/step_0", "4343"),
        ("user.slice/job_4343/step_0", "uid12345:4343"),
    ] {
        let procs = cgroups.make(cgroup);
        let o = Command::new("sh")
            .args(["-c", &format!(
                "echo $$ > {procs} && exec setpriv --reuid={A} --regid={A} --clear-groups \"$@\""
            )])
            .arg("sh")
            .arg(sluice_bin())
            .args(["run", "--socket", &socket, "--job", "4343", "--stats", "-", "--", "true"])
            .env("SLUICE_STAGE", stage_lib())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(job_of(&o), job, "from cgroup {cgroup}");
    }
    assert!(root_job.wait().unwrap().success());
}
