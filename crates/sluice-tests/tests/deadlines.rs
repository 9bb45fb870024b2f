//! A controller that stops answering (SIGSTOP: its socket still accepts, nothing replies)
//! holds no launch and no admin command beyond its deadline: `sluice run` starts the job
//! standalone or refuses it, as the site chose, and says so in one line; admin commands
//! fail with one line; a local whose global is silent answers for it in time.

use crate::common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::daemons::{Daemon, Local, daemon_dir, free_port, wait_for};
use common::{Scratch, path_str, sluice_bin, stage_lib};

/// A command must end within this, its deadline being the default 2 s: a generous bound
/// for a loaded machine, far below "forever".
const WITHIN: Duration = Duration::from_secs(3);

/// Runs `sluice ARGS…` with `env`; returns its output and how long it took.
fn timed(args: &[&str], env: &[(&str, &str)]) -> (Output, Duration) {
    let start = Instant::now();
    let o = Command::new(sluice_bin())
        .env("SLUICE_STAGE", stage_lib())
        .envs(env.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("sluice");
    (o, start.elapsed())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// SIGSTOP, then SIGCONT when dropped, so that a failed assertion leaves no stopped daemon.
struct Stopped<'a>(&'a Daemon);

impl<'a> Stopped<'a> {
    fn new(daemon: &'a Daemon) -> Self {
        daemon.signal(libc::SIGSTOP);
        Stopped(daemon)
    }
}

impl Drop for Stopped<'_> {
    fn drop(&mut self) {
        self.0.signal(libc::SIGCONT);
    }
}

#[test]
fn a_stopped_local_holds_no_launch_and_no_admin_command_beyond_the_deadline() {
    let dir = daemon_dir();
    let local = Local::start(
        dir.path(),
        "interval = \"500ms\"\n",
        &["--node", "n1"],
        None,
    );
    let socket = path_str(&local.socket);
    let s = Scratch::new();
    let marker = s.path("ran");
    let stopped = Stopped::new(&local.daemon);

    // Standalone (the default): the command runs at once under its own rule, one line says why.
    let (o, took) = timed(
        &[
            "run",
            "--socket",
            &socket,
            "--job",
            "S",
            "--mount",
            &s.file,
            "--rule",
            "own: op=getattr rate=1k/s",
            "--stats",
            "-",
            "--",
            "stat",
            &s.file,
        ],
        &[],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        took < WITHIN,
        "sluice run took {took:?} past a stopped local"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("did not answer within 2s") && err.contains("job S runs standalone"),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let json = &stdout[stdout.find('{').expect("the --stats JSON")..];
    let stats: serde_json::Value = serde_json::from_str(json).expect("stats JSON");
    assert_eq!(stats["job"], "S", "{stats}");
    let rule = &stats["rules"][0];
    assert!(
        rule["rule"] == "own: op=getattr rate=1k/s" && rule["admitted"] == 1,
        "the job's own rule did not hold its stat: {stats}"
    );

    // Refuse, by flag and by the site's environment: the command does not run.
    for (flags, env) in [
        (&["--unreachable", "refuse"][..], &[][..]),
        (&[][..], &[("SLUICE_UNREACHABLE", "refuse")][..]),
    ] {
        let mut args = vec!["run", "--socket", &socket, "--job", "R"];
        args.extend_from_slice(flags);
        args.extend(["--", "touch", &marker]);
        let (o, took) = timed(&args, env);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(took < WITHIN, "a refused launch took {took:?}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("job R not started"), "{err}");
        assert!(
            !std::path::Path::new(&marker).exists(),
            "the refused command ran"
        );
    }

    // Admin commands: one line each, within the deadline (and a shorter one when asked).
    for (args, deadline) in [
        (&["jobs"][..], "2s"),
        (&["status", "--json"][..], "2s"),
        (
            &[
                "pool",
                "set",
                "p",
                "--capacity",
                "1k/s",
                "--algorithm",
                "psfa",
            ][..],
            "2s",
        ),
        (&["pool", "list", "--deadline", "300ms"][..], "300ms"),
    ] {
        let mut all = args.to_vec();
        all.extend(["--socket", &socket]);
        let (o, took) = timed(&all, &[]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(took < WITHIN, "{args:?} took {took:?}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(&format!("did not answer within {deadline}")),
            "{args:?}: {err}"
        );
        // A change may have been put in force before its save held the answer up.
        assert_eq!(
            err.contains("the change may be in force already"),
            args[0] == "pool" && args[1] == "set",
            "{args:?}: {err}"
        );
    }

    // SIGCONT: it serves again, and a launch attaches.
    drop(stopped);
    assert!(
        wait_for(Duration::from_secs(5), || local
            .admin(&["status"])
            .status
            .success()),
        "the local did not serve again: {}",
        local.daemon.log_text()
    );
    let (o, _) = timed(
        &["run", "--socket", &socket, "--job", "A", "--", "true"],
        &[],
    );
    assert!(o.status.success() && o.stderr.is_empty(), "{}", stderr(&o));
}

/// A local whose global is stopped forwards an admin command no longer than its own
/// deadline, and the command names the silent global.
#[test]
fn a_local_forwarding_to_a_stopped_global_answers_within_the_deadline() {
    let dir = daemon_dir();
    let port = free_port();
    let global = Daemon::start(
        None,
        &[
            "global".into(),
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--state-dir".into(),
            path_str(&dir.path().join("global-state")),
        ],
        dir.path().join("global.log"),
    );
    let url = format!("http://127.0.0.1:{port}");
    let local = Local::start(
        dir.path(),
        "interval = \"500ms\"\n",
        &["--node", "n1", "--global", &url],
        None,
    );
    let _stopped = Stopped::new(&global);
    let (o, took) = timed(&["jobs", "--socket", &path_str(&local.socket)], &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(took < WITHIN, "sluice jobs took {took:?}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "global controller {url} did not answer within 1500ms"
        )),
        "{err}"
    );
}
