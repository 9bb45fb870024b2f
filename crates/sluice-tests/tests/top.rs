//! `sluice top` in a real terminal of 80x24 (tmux, installed by tests/deps.sh): both jobs
//! show, the most demanding first, with the pool, every heading whole and rates in units;
//! `j` sorts by job, `/` filters, Esc clears the filter, `q` quits and gives the terminal
//! back.

use crate::common;

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

/// The screen of tmux session `top` on `server`.
fn screen(server: &str) -> String {
    String::from_utf8_lossy(&tmux(server, &["capture-pane", "-p", "-t", "top"]).stdout).into_owned()
}

/// Where the line of `job` is on `text`'s screen.
fn line_of(text: &str, job: &str) -> Option<usize> {
    text.lines()
        .position(|l| l.trim_start_matches('│').starts_with(job))
}

#[test]
fn top_at_80_columns_sorts_filters_and_quits_on_q() {
    let dir = daemon_dir();
    let config = "interval = \"300ms\"\n\n[[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\n\
                  capacity = \"3k/s\"\nalgorithm = \"psfa\"\n";
    let local = Local::start(dir.path(), config, &[], None);
    let s = Scratch::new();
    let out = tmp_dir();
    let rate = c_prog("rate");
    // The busier job sorts last by name, so that each order is seen.
    let mut busy = local.job(
        "zeta",
        &["--mount", &s.file],
        &[&rate, "one", &s.file, &path_str(out.path()), "10000"],
    );
    let slow_loop = format!(
        "for i in $(seq 150); do stat {} >/dev/null; sleep 0.05; done",
        s.file
    );
    let mut slow = local.job("alpha", &["--mount", &s.file], &["sh", "-c", &slow_loop]);

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
            "80",
            "-y",
            "24",
            &command,
        ],
    );
    assert!(started.status.success(), "{started:?}");
    let shown = wait_for(Duration::from_secs(5), || {
        let text = screen(&server);
        text.contains("zeta") && text.contains("alpha") && text.contains("psfa")
    });
    let text = screen(&server);
    assert!(shown, "both jobs and the pool never showed:\n{text}");
    // By demand first: the busy job on top.
    let before = |text: &str, a: &str, b: &str| matches!((line_of(text, a), line_of(text, b)), (Some(x), Some(y)) if x < y);
    assert!(
        before(&text, "zeta", "alpha"),
        "the most demanding job is not first:\n{text}"
    );
    // Every heading whole at 80 columns, rates in units, the cycle as an age, the keys.
    let headings = "JOB USER POOL DEMAND RATE ALLOCATION WAIT NODES \
                    POOL ALGORITHM CAPACITY ALLOCATED USED JOBS MATCH";
    let shown = [
        "3k/s",
        "last cycle",
        "q quits",
        "sort [drawj]: demand",
        "/ filter",
    ];
    for whole in headings.split_whitespace().chain(shown) {
        assert!(text.contains(whole), "{whole} missing:\n{text}");
    }
    let row = text
        .lines()
        .find(|l| l.trim_start_matches('│').starts_with("zeta"));
    assert!(
        row.is_some_and(|r| r.matches("/s").count() == 3),
        "zeta's rates not in units:\n{text}"
    );
    let head: String = text.lines().take(4).collect();
    assert!(
        !head
            .split(|c: char| !c.is_ascii_digit())
            .any(|n| n.len() >= 7),
        "a raw cycle number in the head:\n{text}"
    );

    // `sluice jobs` and `sluice status` print the same units and the cycle's age.
    let admin = |args: &[&str]| String::from_utf8_lossy(&local.admin(args).stdout).into_owned();
    let jobs = admin(&["jobs"]);
    let zeta = jobs
        .lines()
        .find(|l| l.starts_with("zeta"))
        .unwrap_or_default();
    assert!(
        zeta.contains(" md ") && zeta.matches("/s").count() == 3,
        "sluice jobs:\n{jobs}"
    );
    let status = admin(&["status"]);
    assert!(
        status.starts_with("local controller (single node), 2 jobs, 1 pool, 0 rules\n")
            && status.contains("last cycle ")
            && status.contains("one every 300ms"),
        "sluice status:\n{status}"
    );

    tmux(&server, &["send-keys", "-t", "top", "j"]);
    let by_job = wait_for(Duration::from_secs(2), || {
        let text = screen(&server);
        text.contains("by job") && before(&text, "alpha", "zeta")
    });
    assert!(by_job, "j did not sort by job:\n{}", screen(&server));

    tmux(
        &server,
        &["send-keys", "-t", "top", "/", "z", "E", "T", "Enter"],
    );
    let filtered = wait_for(Duration::from_secs(2), || {
        let text = screen(&server);
        line_of(&text, "zeta").is_some()
            && line_of(&text, "alpha").is_none()
            && text.contains("1 of 2 rows")
            && text.contains("filter \"zET\"")
    });
    assert!(
        filtered,
        "the filter did not keep zeta alone:\n{}",
        screen(&server)
    );
    // Esc clears the filter; q quits.
    tmux(&server, &["send-keys", "-t", "top", "Escape"]);
    let cleared = wait_for(Duration::from_secs(2), || {
        line_of(&screen(&server), "alpha").is_some()
    });
    assert!(
        cleared,
        "Esc did not clear the filter:\n{}",
        screen(&server)
    );
    tmux(&server, &["send-keys", "-t", "top", "q"]);
    let quit = wait_for(Duration::from_secs(2), || {
        !tmux(&server, &["has-session", "-t", "top"])
            .status
            .success()
    });
    if !quit {
        tmux(&server, &["kill-server"]);
    }
    assert!(quit, "q did not quit:\n{}", screen(&server));
    assert!(busy.wait().unwrap().success());
    assert!(slow.wait().unwrap().success());
}
