//! Administering a running controller: the admin commands and the JSON API change pools,
//! rules and job settings; bad input changes nothing; changes are kept in the state
//! directory (the site's file is never written) and survive a restart; SIGHUP reloads
//! the file once it changed, and a new interval takes at once; only root (or the admin group) may
//! change things; garbage and malformed messages on the global's port drop that connection
//! only, and a node whose clock runs ahead does not stop the global.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use common::daemons::{Daemon, Local, daemon_dir, free_port, wait_for};
use common::{ok, sluice_bin};

static SERIAL: Mutex<()> = Mutex::new(());

/// One HTTP/1.1 request; returns (status, body).
fn http(port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the JSON API");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().expect("HTTP status");
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Exit 2, one line on stderr, and the saved configuration as it was.
fn refused(local: &Local, args: &[&str], file: &std::path::Path) {
    let before = std::fs::read(file).unwrap();
    let o = local.admin(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("sluice: "), "{args:?}: {err}");
    assert_eq!(
        std::fs::read(file).unwrap(),
        before,
        "{args:?} changed the file"
    );
}

#[test]
fn changes_are_checked_persisted_and_reloaded() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut local = Local::start(
        dir.path(),
        "interval = \"1s\"\n",
        &["--node", "n1", "--http", &addr],
        None,
    );
    let file = dir.path().join("local.toml");
    let saved = dir.path().join("state/config.toml");

    ok(&local.admin(&[
        "pool",
        "set",
        "md",
        "--match",
        "op=getattr",
        "--capacity",
        "5k/s",
        "--algorithm",
        "psfa",
    ]));
    ok(&local.admin(&["rule", "start", "cap: op=open rate=100/s"]));
    ok(&local.admin(&["job", "set", "42", "--pool", "md", "--limit", "1k/s"]));
    let kept = std::fs::read_to_string(&saved).unwrap();
    assert!(
        kept.contains("md") && kept.contains("cap: op=open rate=100/s") && kept.contains("42"),
        "{kept}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "interval = \"1s\"\n",
        "the site's file was written"
    );

    for bad in [
        &["pool", "set", "x", "--capacity", "5", "--algorithm", "psfa"][..],
        &[
            "pool",
            "set",
            "x",
            "--capacity",
            "5k/s",
            "--algorithm",
            "nope",
        ],
        &[
            "pool",
            "set",
            "x",
            "--match",
            "op=nope",
            "--capacity",
            "5k/s",
            "--algorithm",
            "psfa",
        ],
        &["pool", "rm", "nope"],
        &["rule", "start", "op=open rate=1/s"],
        &["rule", "start", "cap: op=open rate=1/s"],
        &["rule", "change", "nope", "rate=1/s"],
        &["rule", "change", "cap", "rate=fast"],
        &["rule", "stop", "nope"],
        &["job", "set", "42", "--pool", "nope", "--limit", "1k/s"],
        &["job", "set", "42", "--pool", "md", "--limit", "1MiB/s"],
    ] {
        refused(&local, bad, &saved);
    }

    // The JSON API.
    let (code, body) = http(port, "GET", "/api/v1/pools", "");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"md\""), "{body}");
    let pool = r#"{"match":"class=metadata","capacity":"20k/s","algorithm":"uniform-share"}"#;
    assert_eq!(http(port, "PUT", "/api/v1/pools/md2", pool).0, 204);
    assert_eq!(
        http(
            port,
            "PATCH",
            "/api/v1/rules/cap",
            r#"{"change":"rate=200/s"}"#
        )
        .0,
        204
    );
    let before = std::fs::read(&saved).unwrap();
    for (method, path, body, want) in [
        ("PUT", "/api/v1/pools/x", "{not json", 400),
        (
            "PUT",
            "/api/v1/pools/x",
            r#"{"capacity":"5k/s","algorithm":"psfa","extra":1}"#,
            400,
        ),
        (
            "PUT",
            "/api/v1/pools/x",
            r#"{"capacity":"-5/s","algorithm":"psfa"}"#,
            400,
        ),
        ("DELETE", "/api/v1/rules/nope", "", 404),
        (
            "POST",
            "/api/v1/rules",
            r#"{"rule":"no name rate=1/s"}"#,
            400,
        ),
        ("GET", "/api/v1/nothing", "", 404),
    ] {
        let (code, answer) = http(port, method, path, body);
        assert_eq!(code, want, "{method} {path} {body}: {answer}");
        let v: serde_json::Value = serde_json::from_str(&answer).expect("a JSON error");
        assert!(
            v["error"].as_str().is_some_and(|e| !e.contains('\n')),
            "{answer}"
        );
    }
    assert_eq!(
        std::fs::read(&saved).unwrap(),
        before,
        "a refused request changed the saved configuration"
    );

    // Reading needs nothing; changing needs root (or the admin group).
    let as_nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(sluice_bin())
            .args(args)
            .arg("--socket")
            .arg(&local.socket)
            .output()
            .unwrap()
    };
    if unsafe { libc::geteuid() } == 0 {
        assert!(ok(&as_nobody(&["rule", "list"])).contains("cap"));
        let o = as_nobody(&["rule", "stop", "cap"]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(String::from_utf8_lossy(&o.stderr).contains("may not change"));
    }

    // A restart loses nothing.
    local.restart();
    let pools = ok(&local.admin(&["pool", "list", "--json"]));
    assert!(
        pools.contains("\"md\"") && pools.contains("\"md2\""),
        "{pools}"
    );
    assert!(ok(&local.admin(&["rule", "list"])).contains("cap: op=open rate=200/s"));

    // SIGHUP reads the file again: edited, it replaces the configuration in force; a
    // broken file is refused and the old one stays.
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("\n[[rule]]\nrule = \"by-hand: op=mkdir rate=10/s\"\n");
    std::fs::write(&file, &text).unwrap();
    local.daemon.signal(libc::SIGHUP);
    assert!(wait_for(Duration::from_secs(5), || ok(
        &local.admin(&["rule", "list"])
    )
    .contains("by-hand")));
    assert!(!ok(&local.admin(&["rule", "list"])).contains("cap"));
    std::fs::write(&file, "interval = \"nonsense\"\n").unwrap();
    local.daemon.signal(libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(500));
    assert!(ok(&local.admin(&["rule", "list"])).contains("by-hand"));
}

/// Garbage bytes and a malformed report on the global's port: that connection ends,
/// the global serves on.
#[test]
fn garbage_on_the_global_port_drops_only_that_connection() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let (global, port, url) = start_global(dir.path(), &["--interval", "500ms"]);
    let status = || {
        Command::new(sluice_bin())
            .args(["status", "--server", &url])
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(
        wait_for(Duration::from_secs(10), status),
        "{}",
        global.log_text()
    );
    let junk: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 11) as u8)
        .collect();
    let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    for bytes in [
        &junk[..],
        &preface[..7],
        &[&preface[..], &junk[..]].concat(),
        b"GET / HTTP/1.1\r\n\r\n",
    ] {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _ = c.write_all(bytes);
    }
    // A well-formed stream with a malformed report, and one that never says hello.
    let ended = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(malformed_sessions(&url));
    assert!(ended, "the global kept a malformed stream open");
    assert!(
        status(),
        "the global stopped serving: {}",
        global.log_text()
    );
}

/// `sluice global` on a free loopback port with `extra` arguments, once it answers; its
/// port and URL.
fn start_global(dir: &std::path::Path, extra: &[&str]) -> (Daemon, u16, String) {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let listen = format!("127.0.0.1:{port}");
    let state = dir.join("global-state").display().to_string();
    let args: Vec<String> = ["global", "--listen", &listen, "--state-dir", &state]
        .into_iter()
        .chain(extra.iter().copied())
        .map(str::to_owned)
        .collect();
    let global = Daemon::start(None, &args, dir.join("global.log"));
    assert!(
        wait_for(Duration::from_secs(10), || global_cycle(&url, 1000)
            .is_some()),
        "the global never answered: {}",
        global.log_text()
    );
    (global, port, url)
}

/// The global's cycle as `sluice status --server --json` gives it, and the wall clock's
/// cycle of `interval_ms` at that moment.
fn global_cycle(url: &str, interval_ms: u64) -> Option<(u64, u64)> {
    let o = Command::new(sluice_bin())
        .args(["status", "--json", "--server", url])
        .output()
        .ok()?;
    let status: serde_json::Value = serde_json::from_slice(&o.stdout).ok()?;
    let wall_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_millis() as u64;
    Some((status["cycle"].as_u64()?, wall_ms / interval_ms))
}

/// A SIGHUP that changes the global's interval, longer then shorter: its cycles go on in
/// the new interval at once (a longer one left it waiting for cycles whose numbers, in
/// the old unit, it had passed: it computed nothing more).
#[test]
fn a_sighup_that_changes_the_globals_interval_keeps_its_cycles_going() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let file = dir.path().join("global.toml");
    let config = |interval: &str| {
        format!(
            "interval = \"{interval}\"\n\n[[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\n\
             capacity = \"1k/s\"\nalgorithm = \"psfa\"\n"
        )
    };
    std::fs::write(&file, config("250ms")).unwrap();
    let (global, _, url) = start_global(dir.path(), &["--config", &file.display().to_string()]);
    let node_dir = dir.path().join("n1");
    std::fs::create_dir(&node_dir).unwrap();
    let _local = Local::start(&node_dir, "", &["--global", &url, "--node", "n1"], None);
    // Computing in step with the wall clock: within two cycles of it, and moving on.
    let in_step = |interval_ms: u64| {
        wait_for(
            Duration::from_secs(10),
            || matches!(global_cycle(&url, interval_ms), Some((c, wall)) if c + 2 >= wall && c <= wall),
        ) && {
            let (first, _) = global_cycle(&url, interval_ms).unwrap();
            wait_for(Duration::from_millis(4 * interval_ms), || {
                global_cycle(&url, interval_ms).is_some_and(|(c, _)| c > first)
            })
        }
    };
    assert!(in_step(250), "{}", global.log_text());
    for (interval, ms) in [("1s", 1000), ("250ms", 250)] {
        std::fs::write(&file, config(interval)).unwrap();
        global.signal(libc::SIGHUP);
        assert!(
            in_step(ms),
            "after the interval became {interval}: {:?} (cycle, wall clock's cycle)\n{}",
            global_cycle(&url, ms),
            global.log_text()
        );
    }
}

/// A local whose clock runs far ahead (here its only one): its report is counted as of
/// the global's next cycle, and the global's cycles go on in step with the wall clock
/// (counted as of that cycle of the future, it left the global waiting for it).
#[test]
fn a_local_whose_clock_runs_ahead_does_not_stop_the_global() {
    use sluice_control::proto::control_client::ControlClient;
    use sluice_control::proto::{Hello, LocalMessage, Report, local_message};
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let (global, _, url) = start_global(dir.path(), &["--interval", "250ms"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let _session = rt.block_on(async {
        let endpoint = url.parse().unwrap();
        let channel = sluice_control::transport::connect(&endpoint, &Default::default())
            .await
            .unwrap();
        let wall = global_cycle(&url, 250).unwrap().1;
        for body in [
            local_message::Body::Hello(Hello {
                node: "ahead".into(),
                version: 1,
            }),
            // A year ahead.
            local_message::Body::Report(Report {
                cycle: wall + 4 * 86_400 * 365,
                interval_s: 0.25,
                ..Default::default()
            }),
        ] {
            tx.send(LocalMessage { body: Some(body) }).await.unwrap();
        }
        ControlClient::new(channel)
            .session(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
            .unwrap()
            .into_inner()
    });
    assert!(
        wait_for(Duration::from_secs(3), || global
            .log_text()
            .contains("intervals ahead of this global's clock")),
        "{}",
        global.log_text()
    );
    let (first, _) = global_cycle(&url, 250).unwrap();
    assert!(
        wait_for(Duration::from_secs(2), || {
            matches!(global_cycle(&url, 250), Some((c, wall)) if c > first && c + 2 >= wall && c <= wall + 1)
        }),
        "{:?} (cycle, wall clock's cycle)\n{}",
        global_cycle(&url, 250),
        global.log_text()
    );
    drop(tx);
}

async fn malformed_sessions(url: &str) -> bool {
    use sluice_control::proto::control_client::ControlClient;
    use sluice_control::proto::{Hello, LocalMessage, Report, local_message};
    let endpoint = url.parse().unwrap();
    let channel = sluice_control::transport::connect(&endpoint, &Default::default())
        .await
        .unwrap();
    let mut client = ControlClient::new(channel);
    let messages = vec![
        LocalMessage {
            body: Some(local_message::Body::Hello(Hello {
                node: "evil".into(),
                version: 1,
            })),
        },
        LocalMessage {
            body: Some(local_message::Body::Report(Report {
                cycle: 1,
                interval_s: f64::NAN,
                ..Default::default()
            })),
        },
    ];
    let mut inbound = client
        .session(tokio_stream::iter(messages))
        .await
        .unwrap()
        .into_inner();
    // The policy first, then the stream must end with an error.
    let mut ended = false;
    for _ in 0..3 {
        match tokio::time::timeout(Duration::from_secs(5), inbound.message()).await {
            Ok(Ok(Some(_))) => continue,
            Ok(Ok(None)) | Ok(Err(_)) => {
                ended = true;
                break;
            }
            Err(_) => break,
        }
    }
    let mut silent = client
        .session(tokio_stream::iter(vec![LocalMessage { body: None }]))
        .await
        .unwrap()
        .into_inner();
    let refused = matches!(
        tokio::time::timeout(Duration::from_secs(5), silent.message()).await,
        Ok(Err(_)) | Ok(Ok(None))
    );
    ended && refused
}
