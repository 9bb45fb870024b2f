//! The live dashboard: the page is served whole by the controller (nothing fetched from
//! elsewhere), and its event stream sends a snapshot at least every second in which both
//! running jobs move and stay within their allocations; the history, asked afterwards,
//! holds a point for every cycle the stream showed; each snapshot carries the pool's tree
//! (account, user, job) the page draws.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::daemons::{daemon_dir, dashboard_local, two_stat_jobs};
use common::{Scratch, tmp_dir};
use serde_json::Value;

fn request(port: u16, path: &str) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the dashboard");
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
    s
}

#[test]
fn the_dashboard_is_self_contained_and_its_events_follow_the_jobs() {
    let dir = daemon_dir();
    let (local, addr) = dashboard_local(dir.path());
    let http: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    let mut page = String::new();
    request(http, "/").read_to_string(&mut page).unwrap();
    assert!(
        page.starts_with("HTTP/1.1 200") || page.starts_with("HTTP/1.0 200"),
        "{page}"
    );
    assert!(page.contains("EventSource(\"api/v1/events\")"));
    for outside in ["src=\"http", "href=\"http", "src=\"//", "import "] {
        assert!(
            !page.contains(outside),
            "the page fetches from elsewhere: {outside}"
        );
    }

    let s = Scratch::new();
    let (out_a, out_b) = (tmp_dir(), tmp_dir());
    let mut jobs = two_stat_jobs(&local, &s.file, [out_a.path(), out_b.path()], "6000");
    let events = request(http, "/api/v1/events");
    events
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let mut lines = BufReader::new(events).lines();
    let start = Instant::now();
    let mut last_at = Instant::now();
    let mut longest_gap = Duration::ZERO;
    let mut rates: Vec<(f64, f64, f64, f64)> = Vec::new();
    let mut cycles: Option<(u64, u64)> = None;
    // The pool's tree in the last snapshot with both jobs.
    let mut tree = Value::Null;
    while start.elapsed() < Duration::from_secs(5) {
        let line = lines
            .next()
            .expect("the event stream ended")
            .expect("no event within 3 s");
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        longest_gap = longest_gap.max(last_at.elapsed());
        last_at = Instant::now();
        let v: Value = serde_json::from_str(data).unwrap();
        let share = |job: &str| {
            v["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|j| j["job"] == job)
                .map(|j| {
                    let s = &j["pools"]["md"];
                    (
                        s["rate"].as_f64().unwrap(),
                        s["allocation"].as_f64().unwrap(),
                    )
                })
        };
        if let (Some(a), Some(b)) = (share("A"), share("B")) {
            rates.push((a.0, a.1, b.0, b.1));
            tree = v["pools"][0].clone();
            let cycle = v["status"]["cycle"].as_u64().unwrap();
            cycles = Some(cycles.map_or((cycle, cycle), |(first, _)| (first, cycle)));
        }
    }
    // Asked now, the history holds every cycle the stream showed both jobs in, and more.
    let mut answer = String::new();
    request(http, "/api/v1/history")
        .read_to_string(&mut answer)
        .unwrap();
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    let history: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer}"));
    assert_eq!(history["interval_s"], 0.5, "{history}");
    let (first, last) = cycles.expect("no snapshot with both jobs");
    let md = &history["pools"]["md"];
    let end_cycle = (md["end"].as_f64().unwrap() / 0.5).round() as u64;
    assert!(
        end_cycle >= last,
        "the history ends at {end_cycle}, before {last}"
    );
    let figures = |v: &Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap_or(f64::NAN))
            .collect()
    };
    assert!(
        figures(&md["capacity"]).iter().all(|&c| c == 3000.0),
        "{md}"
    );
    for job in ["A", "B"] {
        let (rate, allocation) = (
            figures(&md["jobs"][job]["rate"]),
            figures(&md["jobs"][job]["allocation"]),
        );
        assert!(
            rate.len() as u64 > last - first && rate.len() == allocation.len(),
            "{job}: {} points for cycles {first}..={last}: {md}",
            rate.len()
        );
        assert!(
            rate.iter().chain(&allocation).all(|f| f.is_finite()),
            "{md}"
        );
    }
    for j in &mut jobs {
        assert!(j.wait().unwrap().success());
    }
    eprintln!(
        "{} snapshots with both jobs, longest gap {longest_gap:?}",
        rates.len()
    );
    assert!(
        longest_gap <= Duration::from_millis(1100),
        "a gap of {longest_gap:?}"
    );
    assert!(rates.len() >= 5, "{rates:?}");
    // Once both run steadily (after two intervals), each within its allocation.
    for &(ra, aa, rb, ab) in &rates[3..] {
        assert!(
            ra <= aa * 1.05 + 10.0 && rb <= ab * 1.05 + 10.0,
            "{rates:?}"
        );
    }
    let first = rates[0];
    assert!(
        rates.iter().any(|r| r.0 != first.0 && r.2 != first.2),
        "the lines do not move: {rates:?}"
    );
    // The snapshot carries the tree the page draws: accounts, then users, then jobs,
    // each with its allocation, rate and demand; both accounts saturated, phys (share
    // 2) is given about twice chem's (1).
    assert!(page.contains("function drawTree"));
    let nodes = tree["nodes"].as_array().expect("the pool's tree nodes");
    let node = |label: &str| {
        nodes
            .iter()
            .find(|n| {
                format!(
                    "{}={}",
                    n["level"].as_str().unwrap(),
                    n["name"].as_str().unwrap()
                ) == label
            })
            .unwrap_or_else(|| panic!("no {label} in {tree}"))
    };
    let figure = |n: &Value, k: &str| n[k].as_f64().unwrap_or_else(|| panic!("{k}: {n}"));
    for (label, depth) in [
        ("account=phys", 0),
        ("account=chem", 0),
        ("job=A", 2),
        ("job=B", 2),
    ] {
        let n = node(label);
        assert_eq!(n["depth"], depth, "{n}");
        assert!(
            figure(n, "allocation") > 0.0 && figure(n, "demand") > 0.0,
            "{n}"
        );
        assert!(figure(n, "rate") >= 0.0, "{n}");
    }
    assert!(
        nodes
            .iter()
            .any(|n| n["level"] == "user" && n["depth"] == 1),
        "{tree}"
    );
    let ratio =
        figure(node("account=phys"), "allocation") / figure(node("account=chem"), "allocation");
    assert!(
        (1.6..=2.4).contains(&ratio),
        "phys ÷ chem allocation {ratio}: {tree}"
    );
}
