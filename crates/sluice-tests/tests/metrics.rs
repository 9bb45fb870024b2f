//! `/metrics` scraped by a real Prometheus (Debian's package, installed by
//! tests/deps.sh): a PromQL `rate()` of a job's admitted calls gives back the rate the
//! job's own calls show for the same window, and every query of the Grafana dashboard
//! (docs/grafana-dashboard.json) answers.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::daemons::{
    Daemon, Local, call_times, daemon_dir, free_port, monotonic_ns, rate_between, wait_for,
};
use common::{Scratch, c_prog, path_str, tmp_dir};
use serde_json::Value;

const SEC: u64 = 1_000_000_000;

/// A GET over HTTP/1.0 (no chunked answer to undo); the body.
fn get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200")
        .then(|| body.to_owned())
        .or_else(|| head.starts_with("HTTP/1.0 200").then(|| body.to_owned()))
}

/// Prometheus on loopback, scraping `target` every second, its data in `dir`.
struct Prometheus {
    child: Child,
    port: u16,
}

impl Prometheus {
    fn start(dir: &Path, target: u16) -> Prometheus {
        let port = free_port();
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: sluice\n    \
                 static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", path_str(&config)))
            .arg(format!(
                "--storage.tsdb.path={}",
                path_str(&dir.join("tsdb"))
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus (tests/deps.sh installs it)");
        let p = Prometheus { child, port };
        assert!(
            wait_for(Duration::from_secs(30), || get(port, "/-/ready").is_some()),
            "prometheus never became ready: {}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        p
    }

    /// The `result` of an instant PromQL query.
    fn result(&self, promql: &str) -> Option<Value> {
        let encoded: String = promql
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let body = get(self.port, &format!("/api/v1/query?query={encoded}"))?;
        let v: Value = serde_json::from_str(&body).ok()?;
        Some(v["data"]["result"].clone())
    }

    /// The value of an instant PromQL query.
    fn query(&self, promql: &str) -> Option<f64> {
        self.result(promql)?[0]["value"][1].as_str()?.parse().ok()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn prometheus_rate_of_a_job_matches_its_calls() {
    let dir = daemon_dir();
    let (grpc, http) = (free_port(), free_port());
    std::fs::write(
        dir.path().join("global.toml"),
        "interval = \"200ms\"\n\n[[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\n\
         capacity = \"2k/s\"\nalgorithm = \"psfa\"\n",
    )
    .unwrap();
    let args: Vec<String> = [
        "global",
        "--listen",
        &format!("127.0.0.1:{grpc}"),
        "--http",
        &format!("127.0.0.1:{http}"),
        "--config",
        &path_str(&dir.path().join("global.toml")),
        "--state-dir",
        &path_str(&dir.path().join("global-state")),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let global = Daemon::start(None, &args, dir.path().join("global.log"));
    assert!(
        wait_for(Duration::from_secs(10), || get(http, "/metrics").is_some()),
        "no /metrics on the global: {}",
        global.log_text()
    );
    let node_dir = dir.path().join("n0");
    std::fs::create_dir_all(&node_dir).unwrap();
    let url = format!("http://127.0.0.1:{grpc}");
    let local = Local::start(&node_dir, "", &["--global", &url, "--node", "n0"], None);
    let prometheus = Prometheus::start(dir.path(), http);
    assert!(
        wait_for(Duration::from_secs(10), || prometheus
            .query("up{job=\"sluice\"}")
            .is_some_and(|up| up == 1.0)),
        "prometheus never scraped the global"
    );

    let s = Scratch::new();
    let out = tmp_dir();
    let rate = c_prog("rate");
    let mut job = local.job(
        "A",
        &["--mount", &s.file],
        &[&rate, "one", &s.file, &path_str(out.path()), "14000"],
    );
    std::thread::sleep(Duration::from_secs(12));
    let at = monotonic_ns();
    let promql = "rate(sluice_job_admitted_total{job_id=\"A\",pool=\"md\"}[8s])";
    let promised = prometheus.query(promql);
    // Every query of the Grafana dashboard answers, while the job runs.
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(common::workspace().join("docs/grafana-dashboard.json")).unwrap(),
    )
    .unwrap();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            let concrete = expr
                .replace("$pool", ".*")
                .replace("$__rate_interval", "4s");
            assert!(
                prometheus.query(&concrete).is_some(),
                "the dashboard's {expr:?} has no answer"
            );
        }
    }
    assert!(job.wait().unwrap().success());
    let times = call_times(out.path());
    // The counters lag the calls by up to an interval and a report: the window of the
    // calls is the query's, shifted by that much.
    let calls = rate_between(&times, at - 8 * SEC - SEC / 5, at - SEC / 5);
    let samples = prometheus.result("sluice_job_admitted_total{job_id=\"A\"}[12s]");
    let promised = promised.unwrap_or_else(|| {
        panic!(
            "no answer to {promql}: {}",
            get(http, "/metrics").unwrap_or_default()
        )
    });
    eprintln!("PromQL {promql}: {promised:.0}/s; the job's calls: {calls:.0}/s");
    assert!(
        (promised - calls).abs() <= calls * 0.05,
        "PromQL says {promised:.0}/s, the job made {calls:.0}/s; samples: {samples:?}"
    );
    let text = get(http, "/metrics").unwrap();
    for family in [
        "sluice_job_allocation",
        "sluice_pool_capacity",
        "sluice_cycle_duration_seconds_bucket",
        "sluice_locals_connected 1",
        "sluice_messages_dropped_total",
    ] {
        assert!(text.contains(family), "{family} missing:\n{text}");
    }
    drop(prometheus);
}
