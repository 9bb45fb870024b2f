//! What the daemons tell an operator: an audit line (target `audit`: who by uid and name,
//! from where, what, old → new) for every admin change and every refusal, counted in
//! `sluice_audit_events_total` on `/metrics`; `--log-format json` writes one JSON object
//! per line; a text log written to a file has no escape codes; a `--mount` that does not
//! exist or an `fs-type` with no mount on the node is a warning in the log and in
//! `sluice status`.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::daemons::{Local, daemon_dir, free_port, http_get, start_global, wait_for};
use common::{ok, open_to_all, path_str, sluice_bin};
use serde_json::Value;

/// The value of the audit counter for `action` and `outcome` in the `/metrics` at `addr`.
fn audit_count(addr: &str, action: &str, outcome: &str) -> Option<f64> {
    let text = http_get(addr, "/metrics")?;
    let series = format!("sluice_audit_events_total{{action=\"{action}\",outcome=\"{outcome}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .and_then(|v| v.trim().parse().ok())
}

/// The log's JSON lines (every line must be one) whose target is `audit`.
fn audit_lines(log: &str) -> Vec<Value> {
    log.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .filter(|v| v["target"] == "audit")
        .collect()
}

#[test]
fn a_pool_set_and_a_refused_change_are_audited_in_the_json_log_and_counted() {
    let dir = daemon_dir();
    open_to_all(dir.path(), 0o755);
    let addr = format!("127.0.0.1:{}", free_port());
    let local = Local::start(
        dir.path(),
        "interval = \"500ms\"\n",
        &["--node", "n1", "--http", &addr, "--log-format", "json"],
        None,
    );
    let set = |capacity: &str| {
        let args = [
            "pool",
            "set",
            "md",
            "--match",
            "op=getattr",
            "--capacity",
            capacity,
        ];
        local.admin(&[&args[..], &["--algorithm", "psfa"]].concat())
    };
    ok(&set("5k/s"));
    ok(&set("6k/s"));
    let done: Vec<Value> = audit_lines(&local.daemon.log_text());
    assert_eq!(done.len(), 2, "{done:?}");
    let second = &done[1];
    assert_eq!(second["action"], "pool_set", "{second}");
    assert_eq!(second["outcome"], "done", "{second}");
    assert_eq!(second["uid"], 0, "{second}");
    assert_eq!(second["user"], "root", "{second}");
    assert!(second["pid"].as_u64().is_some(), "{second}");
    let message = second["message"].as_str().unwrap();
    assert!(
        message.starts_with("pool_set done by uid 0 (root) pid ")
            && message.contains("pool \"md\": match=\"op=getattr\" capacity=5")
            && message.contains(" → match=\"op=getattr\" capacity=6"),
        "{message}"
    );
    assert!(
        done[0]["message"].as_str().unwrap().contains(": (none) → "),
        "{}",
        done[0]
    );

    // A user who is not an administrator: refused, audited with its uid and name.
    if unsafe { libc::geteuid() } == 0 {
        let o = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(sluice_bin())
            .args(["pool", "rm", "md", "--socket"])
            .arg(&local.socket)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let log = local.daemon.log_text();
        let refused = audit_lines(&log)
            .into_iter()
            .find(|v| v["outcome"] == "refused")
            .unwrap_or_else(|| panic!("no refusal audited: {log}"));
        assert_eq!(refused["action"], "pool_rm", "{refused}");
        assert_eq!(refused["uid"], 65534, "{refused}");
        assert!(refused["user"].is_string(), "{refused}");
        assert!(
            refused["message"]
                .as_str()
                .unwrap()
                .contains("may not change sluice's configuration"),
            "{refused}"
        );
        assert_eq!(audit_count(&addr, "pool_rm", "refused"), Some(1.0));
    }

    // A change the controller cannot make: audited as failed, the pool named once.
    let bad = local.admin(&["pool", "rm", "nope"]);
    assert_ne!(bad.status.code(), Some(0), "{bad:?}");
    let log = local.daemon.log_text();
    let invalid = audit_lines(&log)
        .into_iter()
        .find(|v| v["outcome"] == "failed" && v["action"] == "pool_rm")
        .unwrap_or_else(|| panic!("no failure audited: {log}"));
    let message = invalid["message"].as_str().unwrap();
    assert!(
        message.contains(": pool \"nope\": no such pool (pools: md)")
            && message.matches("pool \"nope\"").count() == 1,
        "{message}"
    );
    assert_eq!(audit_count(&addr, "pool_set", "done"), Some(2.0));
    assert!(ok(&local.admin(&["pool", "list"])).contains("md"));
}

#[test]
fn the_global_audits_changes_over_tcp_and_counts_them_on_its_metrics() {
    let dir = daemon_dir();
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret-token\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = dir.path().join("global.toml");
    std::fs::write(
        &config,
        format!("[admin]\ntoken_file = \"{}\"\n", path_str(&token)),
    )
    .unwrap();
    let http = format!("127.0.0.1:{}", free_port());
    let (global, url) = start_global(
        dir.path(),
        &["--http", &http, "--config", &path_str(&config)],
    );
    assert!(
        wait_for(Duration::from_secs(10), || http_get(&http, "/metrics")
            .is_some()),
        "{}",
        global.log_text()
    );
    let pool = |extra: &[&str]| {
        Command::new(sluice_bin())
            .args([
                "pool",
                "set",
                "md",
                "--capacity",
                "5k/s",
                "--algorithm",
                "psfa",
            ])
            .args(["--server", &url])
            .args(extra)
            .output()
            .unwrap()
    };
    let o = pool(&[]);
    assert!(!o.status.success(), "a change without the token was made");
    ok(&pool(&["--token-file", &path_str(&token)]));
    let log = global.log_text();
    assert!(!log.contains('\x1b'), "escape codes in a log file: {log:?}");
    let line = |outcome: &str| {
        log.lines()
            .find(|l| l.contains(&format!("pool_set {outcome} by 127.0.0.1:")))
            .unwrap_or_else(|| panic!("no {outcome} line: {log}"))
            .to_owned()
    };
    assert!(line("refused").contains("audit"), "{}", line("refused"));
    assert!(
        line("done").contains("pool \"md\": (none) → "),
        "{}",
        line("done")
    );
    assert_eq!(audit_count(&http, "pool_set", "refused"), Some(1.0));
    assert_eq!(audit_count(&http, "pool_set", "done"), Some(1.0));
}

#[test]
fn a_missing_mount_and_an_unmounted_fs_type_warn_in_the_log_and_in_status() {
    let dir = daemon_dir();
    let local = Local::start(
        dir.path(),
        "interval = \"500ms\"\n",
        &["--node", "n1"],
        None,
    );
    let mounted = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let absent = ["lustre", "gpfs", "beegfs"]
        .into_iter()
        .find(|t| !mounted.contains(&format!(" - {t} ")))
        .expect("a file-system type this machine has not mounted");
    let o = local
        .job_command(
            "W",
            &["--mount", "/does/not/exist", "--fs-type", absent],
            &["true"],
        )
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let status = ok(&local.admin(&["status"]));
    assert!(
        status.contains("warning: mount \"/does/not/exist\" (job \"W\"): no such directory"),
        "{status}"
    );
    assert!(
        status.contains(&format!("warning: fs-type \"{absent}\"")),
        "{status}"
    );
    let json: Value = serde_json::from_str(&ok(&local.admin(&["status", "--json"]))).unwrap();
    assert_eq!(json["warnings"].as_array().map(Vec::len), Some(2), "{json}");
    let log = local.daemon.log_text();
    assert!(
        log.contains("WARN") && log.contains("mount \"/does/not/exist\""),
        "{log}"
    );
}
