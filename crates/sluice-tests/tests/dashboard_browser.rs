//! The live dashboard in a real browser: headless Chromium (Debian's `chromium`, installed
//! by tests/deps.sh) opens the page from a running controller after two jobs have shared a
//! pool for some cycles, and the page's own plot data (`#state`, what its canvases draw)
//! must hold those cycles at its first snapshot, then show both jobs' lines moving under
//! their allocations, and the pool's tree drawn (accounts, users, jobs). A screenshot is
//! kept in experiments/dashboard/dashboard.png (`SLUICE_BLESS=1` rewrites it).

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::daemons::{daemon_dir, dashboard_local, two_stat_jobs, wait_for};
use common::{Scratch, path_str, tmp_dir, workspace};
use serde_json::{Value, json};
use tempfile::TempDir;
use tungstenite::{Message, WebSocket, stream::MaybeTlsStream};

/// A headless Chromium driven over the DevTools protocol, killed when dropped.
struct Browser {
    child: Child,
    port: u16,
    _profile: TempDir,
}

impl Browser {
    fn start() -> Browser {
        let profile = tmp_dir();
        let mut child = Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--window-size=1200,900",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", path_str(profile.path())))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start chromium (tests/deps.sh installs it)");
        // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/…". Its stderr is
        // read to the end, so that Chromium never writes into a closed pipe.
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if let Some(rest) = line.split("ws://127.0.0.1:").nth(1) {
                    let _ = tx.send(rest.split('/').next().and_then(|p| p.parse().ok()));
                }
            }
        });
        let port = rx.recv_timeout(Duration::from_secs(30)).ok().flatten();
        Browser {
            child,
            port: port.expect("chromium never said where DevTools listen"),
            _profile: profile,
        }
    }

    /// Opens `url` in a new tab; returns the tab's DevTools connection.
    fn open(&self, url: &str) -> Tab {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        // Chromium answers HTTP/1.1 only, and keeps the connection: read by Content-Length.
        write!(
            s,
            "PUT /json/new?{url} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
            self.port
        )
        .unwrap();
        let mut reply = BufReader::new(s);
        let mut length = 0;
        loop {
            let mut line = String::new();
            reply.read_line(&mut line).unwrap();
            let line = line.trim_end().to_ascii_lowercase();
            if line.is_empty() {
                break;
            }
            if let Some(n) = line.strip_prefix("content-length:") {
                length = n.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reply.read_exact(&mut body).unwrap();
        let target: Value = serde_json::from_slice(&body).expect("the new tab's JSON");
        let ws = target["webSocketDebuggerUrl"].as_str().expect("a tab URL");
        let (socket, _) = tungstenite::connect(ws).expect("DevTools websocket");
        Tab { socket, next: 0 }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One tab's DevTools connection.
struct Tab {
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    next: u64,
}

impl Tab {
    /// Calls DevTools `method`; returns its result.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let msg = json!({"id": id, "method": method, "params": params});
        self.socket.send(Message::text(msg.to_string())).unwrap();
        loop {
            let Message::Text(text) = self.socket.read().expect("DevTools reply") else {
                continue;
            };
            let v: Value = serde_json::from_str(&text).unwrap();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    /// The page's `#state`: what its plots hold.
    fn state(&mut self) -> Option<Value> {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": "document.getElementById('state').textContent", "returnByValue": true}),
        );
        serde_json::from_str(r["result"]["value"].as_str()?).ok()
    }
}

/// How many points the controller's history holds for `job` in pool `md`.
fn history_points(addr: &str, job: &str) -> usize {
    let mut s = TcpStream::connect(addr).expect("connect to the dashboard");
    write!(s, "GET /api/v1/history HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    let history: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    history["pools"]["md"]["jobs"][job]["rate"]
        .as_array()
        .map_or(0, Vec::len)
}

#[test]
fn chromium_draws_the_history_at_once_and_both_jobs_moving_under_their_allocations() {
    let dir = daemon_dir();
    let (local, addr) = dashboard_local(dir.path());
    let browser = Browser::start();
    let s = Scratch::new();
    let (out_a, out_b) = (tmp_dir(), tmp_dir());
    let mut jobs = two_stat_jobs(&local, &s.file, [out_a.path(), out_b.path()], "9000");
    // The page is opened once the controller holds 8 cycles of both (4 s at 500 ms).
    let held = wait_for(Duration::from_secs(10), || {
        ["A", "B"].iter().all(|j| history_points(&addr, j) >= 8)
    });
    assert!(held, "the history never held 8 points of both jobs");
    let before = history_points(&addr, "A").min(history_points(&addr, "B"));
    let mut tab = browser.open(&format!("http://{addr}/"));
    let points = |st: &Value, key: &str| st["series"][key].as_array().map_or(0, Vec::len);
    let mut state = Value::Null;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) && state["snapshots"].as_u64().is_none() {
        std::thread::sleep(Duration::from_millis(100));
        state = tab.state().unwrap_or(Value::Null);
    }
    // At the first snapshot drawn, all the cycles before the page was opened.
    for key in ["md/A", "md/B"] {
        assert!(
            points(&state, key) >= before,
            "{key}: {} points at the first snapshot, {before} held before: {state}",
            points(&state, key)
        );
    }
    let at_open = state["snapshots"].clone();
    // Then until both lines hold 6 more points than when opened, or 20 s.
    let enough = |st: &Value| ["md/A", "md/B"].iter().all(|k| points(st, k) >= before + 6);
    while start.elapsed() < Duration::from_secs(20) && !enough(&state) {
        std::thread::sleep(Duration::from_millis(500));
        state = tab.state().unwrap_or(Value::Null);
    }
    let shot = tab.call("Page.captureScreenshot", json!({"format": "png"}));
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().expect("screenshot data"))
        .unwrap();
    // The tracked screenshot is rewritten only when asked, so that a test run leaves the
    // tree as it found it.
    assert!(png.starts_with(b"\x89PNG"), "the screenshot is no PNG");
    if std::env::var_os("SLUICE_BLESS").is_some() {
        let out = workspace().join("experiments/dashboard");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("dashboard.png"), &png).unwrap();
    }
    for j in &mut jobs {
        assert!(j.wait().unwrap().success());
    }

    assert!(enough(&state), "the page never plotted both jobs: {state}");
    for key in ["md/A", "md/B"] {
        let points = state["series"][key].as_array().unwrap();
        let at = |i: usize, f: usize| points[i][f].as_f64().unwrap();
        assert!(
            (1..points.len()).all(|i| at(i, 0) > at(i - 1, 0)),
            "{key}: time does not advance: {points:?}"
        );
        // After the controller's first intervals, each point under its allocation.
        for i in 3..points.len() {
            assert!(
                at(i, 1) <= at(i, 2) * 1.05 + 10.0,
                "{key}: rate {} over allocation {}: {points:?}",
                at(i, 1),
                at(i, 2)
            );
        }
        assert!(
            (1..points.len()).any(|i| at(i, 1) != at(0, 1)),
            "{key}: the line does not move: {points:?}"
        );
    }
    // The pool's tree as the page drew it: both accounts over their user and job, each
    // job with its allocation.
    let drawn = state["trees"]["md"]
        .as_array()
        .expect("the page drew no tree");
    let labels: Vec<&str> = drawn.iter().filter_map(|n| n["label"].as_str()).collect();
    for label in ["account=phys", "account=chem", "job=A", "job=B"] {
        assert!(labels.contains(&label), "{label} not drawn: {labels:?}");
    }
    assert!(labels.iter().any(|l| l.starts_with("user=")), "{labels:?}");
    assert!(
        drawn
            .iter()
            .filter(|n| n["depth"] == 2)
            .all(|n| n["allocation"].as_f64().is_some_and(|a| a > 0.0)),
        "{drawn:?}"
    );
    eprintln!(
        "{before} points held before opening, {at_open} snapshot(s) at the first look; \
         A: {} points, B: {} points; screenshot {} bytes",
        state["series"]["md/A"].as_array().unwrap().len(),
        state["series"]["md/B"].as_array().unwrap().len(),
        png.len()
    );
}
