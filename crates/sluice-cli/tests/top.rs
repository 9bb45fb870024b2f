//! `sluice top` in a real terminal (tmux, installed by tests/deps.sh): both jobs show,
//! the most demanding first, with the pool; `q` quits and gives the terminal back.

mod common;

use std::process::{Command, Output};
use std::time::Duration;

use common::daemons::{Local, daemon_dir, wait_for};
use common::{Scratch, c_prog, path_str, sluice_bin, tmp_dir};

/// tmux on a server of the test's own (`-L`), so no user's sessions are touched.
fn tmux(server: &str, args: &[&str]) -> Output {
    Command::new("tmux")
        .args(["-L", server])
        .args(args)
        .output()
        .expect("tmux (tests/deps.sh installs it)")
}

#[test]
fn top_shows_jobs_by_demand_and_quits_on_q() {
    let dir = daemon_dir();
    let config = "interval = \"300ms\"\n\n[[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\n\
                  capacity = \"3k/s\"\nalgorithm = \"psfa\"\n";
    let local = Local::start(dir.path(), config, &[], None);
    let s = Scratch::new();
    let out = tmp_dir();
    let rate = c_prog("rate");
    let mut big = local.job(
        "big",
        &["--mount", &s.file],
        &[&rate, "one", &s.file, &path_str(out.path()), "8000"],
    );
    let slow_loop = format!(
        "for i in $(seq 100); do stat {} >/dev/null; sleep 0.05; done",
        s.file
    );
    let mut small = local.job("small", &["--mount", &s.file], &["sh", "-c", &slow_loop]);

    let server = format!("sluice-top-{}", std::process::id());
    let command = format!(
        "{} top --socket {} --refresh 300ms",
        sluice_bin().display(),
        path_str(&local.socket)
    );
    let started = tmux(
        &server,
        &[
            "new-session",
            "-d",
            "-s",
            "top",
            "-x",
            "150",
            "-y",
            "30",
            &command,
        ],
    );
    assert!(started.status.success(), "{started:?}");
    let screen = || {
        String::from_utf8_lossy(&tmux(&server, &["capture-pane", "-p", "-t", "top"]).stdout)
            .into_owned()
    };
    let shown = wait_for(Duration::from_secs(5), || {
        let text = screen();
        text.contains("big") && text.contains("small") && text.contains("psfa")
    });
    let text = screen();
    assert!(shown, "both jobs and the pool never showed:\n{text}");
    let line_of = |job: &str| {
        text.lines()
            .position(|l| l.trim_start_matches('│').starts_with(job))
            .unwrap_or_else(|| panic!("no line for {job}:\n{text}"))
    };
    assert!(
        line_of("big") < line_of("small"),
        "the most demanding job is not first:\n{text}"
    );
    for header in ["DEMAND", "ALLOCATION", "WAIT", "CAPACITY", "3k/s"] {
        assert!(text.contains(header), "{header} missing:\n{text}");
    }
    tmux(&server, &["send-keys", "-t", "top", "q"]);
    let quit = wait_for(Duration::from_secs(2), || {
        !tmux(&server, &["has-session", "-t", "top"])
            .status
            .success()
    });
    if !quit {
        tmux(&server, &["kill-server"]);
    }
    assert!(quit, "q did not quit:\n{}", screen());
    assert!(big.wait().unwrap().success());
    assert!(small.wait().unwrap().success());
}
