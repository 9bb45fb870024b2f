//! Bad input is refused before the command runs (exit 2, one line on stderr), and a stage
//! that cannot use its segment runs the program unmanaged and says why in its log.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{
    Scratch, Sluice, c_prog, direct, file_in, log_file, path_str, shm_dir, sluice_bin, split,
    tmp_dir,
};

/// Runs `sluice run OPTIONS -- touch MARKER` and asserts it was refused as bad input.
fn refused(options: &[String], case: &str) {
    let dir = tmp_dir();
    let marker = dir.path().join("MARKER");
    let out = Sluice::run()
        .args(options)
        .command(None, &argv!["touch", path_str(&marker)])
        .output()
        .unwrap();
    let (status, stdout, stderr) = split(out);
    assert_eq!(
        status.code(),
        Some(2),
        "{case}: exit status (stderr: {stderr})"
    );
    assert!(!marker.exists(), "{case}: the command ran");
    assert!(stdout.is_empty(), "{case}: stdout {stdout:?}");
    assert!(
        stderr.starts_with("sluice:") && stderr.ends_with('\n') && stderr.lines().count() == 1,
        "{case}: stderr is not one line starting with 'sluice:': {stderr:?}"
    );
}

#[test]
fn bad_rules_exit_2_with_one_line_before_running_the_command() {
    let cases = [
        ("unknown key", "op=getattr rat=5k/s"),
        ("unknown key before rate", "colour=red rate=5k/s"),
        ("unknown op", "op=stat rate=1k/s"),
        ("unknown class", "class=meta rate=1k/s"),
        ("unknown unit", "op=getattr rate=5Q/s"),
        ("missing /s", "op=getattr rate=5k"),
        ("negative rate", "op=getattr rate=-5/s"),
        ("non-numeric rate", "op=getattr rate=abc/s"),
        ("fractional ops", "op=getattr rate=2.5/s"),
        ("bytes rate on metadata", "op=getattr rate=1MiB/s"),
        ("no rate", "class=metadata"),
        ("empty rule", ""),
        ("blank rule", "   "),
    ];
    for (case, rule) in cases {
        refused(&argv!["--rule", rule], case);
    }
    // A good rule first does not save a bad one after it.
    refused(
        &argv!["--rule", "op=open rate=1k/s", "--rule", "op=stat rate=1k/s"],
        "second --rule bad",
    );
}

#[test]
fn bad_rules_files_exit_2_with_one_line_before_running_the_command() {
    let dir = tmp_dir();
    let missing = path_str(&dir.path().join("missing.toml"));
    refused(&argv!["--rules", missing], "missing rules file");
    refused(
        &argv!["--rules", path_str(dir.path())],
        "rules file is a directory",
    );
    for (case, text) in [
        ("typo in a field", "[[rule]]\nrat = \"5k/s\"\n"),
        (
            "bad rule in match",
            "[[rule]]\nmatch = \"op=stat\"\nrate = \"1k/s\"\n",
        ),
        ("not TOML", "[[rule]\nrate = 5\n"),
        ("no rate", "[[rule]]\nmatch = \"op=open\"\n"),
    ] {
        let f = file_in(dir.path(), "rules.toml", text);
        refused(&argv!["--rules", f], case);
    }
}

#[test]
fn bad_mount_exits_2_before_running_the_command() {
    refused(
        &argv!["--rule", "rate=1k/s", "--mount", "relative/dir"],
        "relative --mount",
    );
}

#[test]
fn unmappable_segment_runs_unmanaged_and_the_log_says_why() {
    let s = Scratch::new();
    let (_logs, log) = log_file();
    let stage = path_str(&common::stage_lib());
    let env = [
        ("LD_PRELOAD", stage.as_str()),
        ("SLUICE_SEGMENT", "/nonexistent"),
        ("SLUICE_LOG", log.as_str()),
    ];
    let (status, stdout, stderr) = split(direct(
        &argv![c_prog("fsdo"), "stat@3", s.file, "open", s.file],
        &env,
    ));
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert!(
        stdout.is_empty() && stderr.is_empty(),
        "stage wrote to the program's output: {stdout:?} {stderr:?}"
    );
    let text = std::fs::read_to_string(&log).expect("log written");
    assert!(
        text.contains("/nonexistent")
            && text.contains("No such file")
            && text.contains("passing every call through"),
        "the log should name the segment, the reason and the consequence: {text:?}"
    );
}

/// A daemon asked to serve its HTTP API on an address another process holds fails to
/// start, with one line naming the address, instead of running without the API it was
/// asked for (and the library no longer ends the process itself to do so).
#[test]
fn an_http_address_in_use_fails_the_daemon_s_start() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let dir = tmp_dir();
    let listen = format!("127.0.0.1:{}", common::daemons::free_port());
    let state = dir.path().join("state");
    let socket = dir.path().join("local.sock");
    let shm = shm_dir();
    let cases: [Vec<String>; 2] = [
        vec![
            "local".into(),
            "--config".into(),
            "none".into(),
            "--socket".into(),
            path_str(&socket),
            "--shm-dir".into(),
            path_str(shm.path()),
            "--state-dir".into(),
            path_str(&state.join("local")),
            "--http".into(),
            addr.clone(),
        ],
        vec![
            "global".into(),
            "--config".into(),
            "none".into(),
            "--listen".into(),
            listen,
            "--state-dir".into(),
            path_str(&state.join("global")),
            "--http".into(),
            addr.clone(),
        ],
    ];
    for args in cases {
        let mut child = Command::new(sluice_bin())
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let ended = common::daemons::wait_for(Duration::from_secs(10), || {
            child.try_wait().unwrap().is_some()
        });
        if !ended {
            let _ = child.kill();
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            ended,
            "sluice {} kept running without its HTTP API",
            args[0]
        );
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", args[0]);
        assert!(
            stderr.contains(&format!("cannot listen on {addr}")),
            "{}: {stderr}",
            args[0]
        );
    }
    drop(held);
}

/// A local whose segments' directory cannot be made (a file is in the way) fails to start
/// with one line naming it and the flag, instead of failing every launch after it.
#[test]
fn a_segments_directory_that_cannot_be_made_fails_the_local_s_start() {
    let dir = tmp_dir();
    std::fs::write(dir.path().join("file"), "").unwrap();
    let missing = dir.path().join("file/shm");
    let o = Command::new(sluice_bin())
        .args(["local", "--config", "none", "--socket"])
        .arg(dir.path().join("local.sock"))
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .arg("--shm-dir")
        .arg(&missing)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let last = stderr.trim().lines().last().unwrap_or_default();
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        last.starts_with("sluice: the segments' directory")
            && last.contains(&path_str(&missing))
            && last.contains("--shm-dir")
            && last.contains("Not a directory"),
        "{stderr}"
    );
}
