//! The stage under hostile programs: signals during waits, closed descriptors, vfork,
//! posix_spawn, many children and threads, and `sluice run` as a process parent (signals,
//! exit status). The stage must never change what the program sees.

use crate::common;

use std::os::unix::process::CommandExt as _;
use std::time::{Duration, Instant};

use common::{Run, Scratch, Sluice, c_prog, direct, log_file, path_str};

#[test]
fn signals_during_long_waits_run_the_handler_and_never_cause_eintr() {
    let s = Scratch::new();
    let cmd = argv![c_prog("signals"), s.file, s.path("missing"), 10];
    let run = s.sluice().rule("op=getattr rate=5/s").exec(&cmd);
    let stats = run.ok();
    // "calls=10 handled=H eintr=0 errno=ENOENT ms=T"
    let field = |k: &str| -> String {
        let value = run
            .stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{k}=")));
        value
            .unwrap_or_else(|| panic!("no {k} in {run:?}"))
            .to_owned()
    };
    assert_eq!(field("calls"), "10", "every stat succeeded");
    assert_eq!(field("eintr"), "0", "no stat failed with EINTR");
    assert_eq!(
        field("errno"),
        "ENOENT",
        "errno of the failing stat, which waited too"
    );
    let handled: u64 = field("handled").parse().unwrap();
    let ms: u64 = field("ms").parse().unwrap();
    // 11 calls at 5/s with a burst of 1: 10 waits of 200 ms; SIGALRM every 10 ms.
    assert!(ms >= 1900, "11 stats at 5/s took {ms} ms");
    assert!(
        handled >= ms / 10 / 2,
        "only {handled} SIGALRM handled in {ms} ms"
    );
    assert_eq!(
        stats.calls("getattr"),
        11,
        "the failing stat is counted too"
    );
    assert_eq!(stats.rule(0, "admitted"), 11);
}

#[test]
fn stage_writes_nothing_to_the_programs_stdout_or_stderr() {
    let s = Scratch::new();
    std::fs::create_dir(s.dir.path().join("sub")).unwrap();
    let d = path_str(s.dir.path());
    let script = format!(
        "ls -l --time-style=+ '{d}'; cat '{d}/f'; ls '{d}/nope'; stat -c '%n %s %F' '{d}/f'; echo done"
    );
    let cmd = argv!["sh", "-c", script];
    let (_logs, log) = log_file();
    let plain = direct(&cmd, &[]);
    assert!(
        !plain.stderr.is_empty() && !plain.stdout.is_empty(),
        "the script should write to both streams"
    );
    let stage = path_str(&common::stage_lib());
    let cases = [
        (
            "sluice run",
            s.sluice()
                .rule("rate=1k/s")
                .command(None, &cmd)
                .output()
                .unwrap(),
        ),
        (
            "sluice run, SLUICE_LOG",
            s.sluice()
                .env("SLUICE_LOG", &log)
                .command(None, &cmd)
                .output()
                .unwrap(),
        ),
        (
            "bad segment",
            direct(
                &cmd,
                &[("LD_PRELOAD", &stage), ("SLUICE_SEGMENT", "/nonexistent")],
            ),
        ),
    ];
    for (case, out) in cases {
        assert_eq!(
            out.status.code(),
            plain.status.code(),
            "{case}: exit status"
        );
        assert!(
            out.stdout == plain.stdout,
            "{case}: stdout differs:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            out.stderr == plain.stderr,
            "{case}: stderr differs:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn sluice_log_receives_the_stages_lines() {
    let s = Scratch::new();
    let (_logs, log) = log_file();
    s.sluice()
        .rule("rate=1k/s")
        .env("SLUICE_LOG", &log)
        .exec(&argv![c_prog("fsdo"), "stat", s.file])
        .ok();
    let text = std::fs::read_to_string(&log).expect("SLUICE_LOG file written");
    assert!(
        !text.is_empty() && text.lines().all(|l| l.starts_with("sluice-stage[")),
        "log lines: {text:?}"
    );
    assert!(
        text.contains("managing job"),
        "the log says what the stage manages: {text:?}"
    );
}

#[test]
fn program_that_closes_every_fd_keeps_working_and_is_still_limited() {
    let s = Scratch::new();
    let run = s.sluice().rule("op=getattr rate=100/s").exec(&argv![
        c_prog("fsdo"),
        "closeall",
        "stat@30",
        s.file
    ]);
    let stats = run.ok();
    assert_eq!(stats.calls("getattr"), 30);
    assert_eq!(stats.rule(0, "admitted"), 30);
    // A burst of 1 at 100/s: 29 waits of 10 ms.
    assert!(
        run.elapsed >= Duration::from_millis(290),
        "30 stats at 100/s took {:?}",
        run.elapsed
    );
}

/// Runs `procs ARGS…` (the word FILE stands for a managed file) under a getattr rule and
/// checks that exactly `want` stats were counted and admitted by it.
fn procs(rule: &str, args: &[String], want: u64) -> Run {
    let s = Scratch::new();
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            if a == "FILE" {
                s.file.clone()
            } else {
                a.clone()
            }
        })
        .collect();
    let run = s
        .sluice()
        .rule(rule)
        .exec(&[vec![c_prog("procs")], args.clone()].concat());
    let stats = run.ok();
    assert_eq!(
        stats.calls("getattr"),
        want,
        "procs {}: getattr counted",
        args[0]
    );
    assert_eq!(
        stats.rule(0, "admitted"),
        want,
        "procs {}: admitted by the rule",
        args[0]
    );
    run
}

#[test]
fn vfork_and_posix_spawn_children_are_limited() {
    let fsdo = c_prog("fsdo");
    for mode in ["vfork", "spawn"] {
        // 20 stats at 200/s with a burst of 2 wait at least 18 x 5 ms in the child.
        let run = procs(
            "op=getattr rate=200/s",
            &argv![mode, fsdo, "stat@20", "FILE"],
            20,
        );
        assert!(
            run.stats().rule(0, "wait_ns") >= 80_000_000,
            "{mode}: child was not held: {}",
            run.stats().0
        );
        assert!(
            run.elapsed >= Duration::from_millis(90),
            "{mode}: 20 stats at 200/s took {:?}",
            run.elapsed
        );
    }
}

/// A program a job starts with a cleared environment (as `env -i` does, or Python's
/// `subprocess.run(…, env={})`) carries the stage all the same, whichever call starts it:
/// its stats are counted and held by the job's rule.
#[test]
fn children_started_with_a_cleared_environment_are_held() {
    let fsdo = c_prog("fsdo");
    for how in [
        "execl", "execlp", "execle", "execv", "execvp", "execve", "execvpe", "fexecve", "vfork",
        "spawn", "spawnp",
    ] {
        procs(
            "op=getattr rate=100k/s",
            &argv!["cleared", how, fsdo, "stat@20", "FILE"],
            20,
        );
    }
    let s = Scratch::new();
    let python = "import subprocess, sys; subprocess.run(sys.argv[1:], env={}, check=True)";
    for (case, cmd) in [
        (
            "env -i",
            argv!["env", "-i", fsdo, "stat@20", &s.file].to_vec(),
        ),
        (
            "env -u",
            argv![
                "env",
                "-u",
                "LD_PRELOAD",
                "-u",
                "SLUICE_SEGMENT",
                fsdo,
                "stat@20",
                &s.file
            ]
            .to_vec(),
        ),
        (
            "python subprocess env={}",
            argv!["python3", "-c", python, fsdo, "stat@20", &s.file].to_vec(),
        ),
    ] {
        let run = s.sluice().rule("op=getattr rate=100k/s").exec(&cmd);
        let stats = run.ok();
        assert_eq!(stats.calls("getattr"), 20, "{case}: {}", stats.0);
    }
}

#[test]
fn fifty_forked_children_count_exactly_one_thousand_stats() {
    procs(
        "op=getattr rate=100k/s",
        &argv!["forks", 50, 20, "FILE"],
        1000,
    );
}

#[test]
fn three_hundred_threads_count_exactly_three_thousand_stats() {
    procs(
        "op=getattr rate=100k/s",
        &argv!["threads", 300, 10, "FILE"],
        3000,
    );
}

#[test]
fn sigint_is_forwarded_and_sluice_run_exits_130() {
    let mut cmd = Sluice::run()
        .rule("rate=1k/s")
        .command(None, &["sleep", "30"]);
    // Whoever started the tests may have left SIGINT ignored (a shell does for its
    // background jobs), which `sluice run` rightly passes on to its command: this test
    // starts it with SIGINT at its default.
    // SAFETY: signal() is async-signal-safe, as a child between fork and exec needs.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        })
    };
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();
    // Wait until `sluice run` catches SIGINT (its handler is installed once CMD runs).
    let start = Instant::now();
    loop {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let caught = status.lines().find_map(|l| l.strip_prefix("SigCgt:"));
        if caught.is_some_and(|m| {
            u64::from_str_radix(m.trim(), 16).unwrap() & (1 << (libc::SIGINT - 1)) != 0
        }) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "sluice run never installed its SIGINT handler"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "sluice run's status after SIGINT killed CMD"
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "CMD did not die of the forwarded SIGINT"
    );
}

#[test]
fn exit_status_of_the_command_is_returned() {
    for code in [0, 7, 255] {
        let run = Sluice::run().exec(&argv!["sh", "-c", format!("exit {code}")]);
        assert_eq!(run.status.code(), Some(code), "{run:?}");
        run.stats();
    }
}
