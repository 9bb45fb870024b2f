//! The control plane on one node: a real `sluice local` in single-node mode, jobs attached
//! by real `sluice run` launchers running real programs under the stage.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use common::daemons::{
    Local, assert_pool_held, call_times, daemon_dir, free_port, has_file_starting, http_get,
    monotonic_ns, rate_between, share, wait_for,
};
use common::{Scratch, Stats, c_prog, path_str, sluice_bin, tmp_dir};
use serde_json::json;

/// The tests of this file measure rates: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const SEC: u64 = 1_000_000_000;

fn pool_config(interval: &str, extra: &str) -> String {
    format!(
        "interval = \"{interval}\"\n\n[[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\n\
         capacity = \"10k/s\"\nalgorithm = \"psfa\"\nmin_share = 0.0\n{extra}"
    )
}

/// What `sluice alloc` computes from `input`, its file written in `dir`.
fn alloc(dir: &Path, input: &serde_json::Value) -> serde_json::Value {
    let input_path = dir.join("alloc.json");
    std::fs::write(&input_path, input.to_string()).unwrap();
    let o = Command::new(sluice_bin())
        .args(["alloc", "--input"])
        .arg(&input_path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Two jobs under one pool of 10,000 getattr/s with psfa, one of them with a reservation
/// of 3,000/s: together they never pass 10,000 + burst in any second, and each holds
/// the rate `sluice alloc` computes from the observations `sluice jobs` shows.
#[test]
fn two_jobs_share_a_pool_as_psfa_computes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let config = pool_config(
        "500ms",
        "\n[[job]]\njob = \"A\"\npool = \"md\"\nlimit = \"3k/s\"\n",
    );
    let local = Local::start(dir.path(), &config, &["--node", "n1"], None);
    let s = Scratch::new();
    let rate = c_prog("rate");
    let (out_a, out_b) = (tmp_dir(), tmp_dir());
    let start = monotonic_ns();
    let ms = "9000";
    let mut a = local.job(
        "A",
        &["--mount", &s.file],
        &[&rate, "one", &s.file, &path_str(out_a.path()), ms],
    );
    let mut b = local.job(
        "B",
        &["--mount", &s.file],
        &[&rate, "one", &s.file, &path_str(out_b.path()), ms],
    );
    // The observations of a steady interval, while both run.
    std::thread::sleep(Duration::from_secs(5));
    let jobs = local.jobs();
    assert!(a.wait().unwrap().success() && b.wait().unwrap().success());

    let (ta, tb) = (call_times(out_a.path()), call_times(out_b.path()));
    let mut all: Vec<u64> = ta.iter().chain(&tb).copied().collect();
    all.sort_unstable();
    // The steady part: after the first cycles, before the end.
    let (from, to) = (start + 3 * SEC, start + 8 * SEC);
    let (most_settled, most) = assert_pool_held(&all, from, 10_000, 2);
    eprintln!("busiest second {most_settled} once settled, {most} in all");

    // What sluice alloc makes of the same observations.
    let observation = |job: &str| {
        let (_, rate, demand) = share(&jobs, job, "md").expect("job in the pool");
        let limit = if job == "A" { 3000.0 } else { demand.max(rate) };
        json!({"id": job, "limit": limit, "usage": rate, "arrivals": demand.max(rate), "weight": 1.0, "nodes": 1})
    };
    let input = json!({"algorithm": "psfa", "capacity": 10000.0, "params": {"interval_s": 0.5},
        "intervals": [{"jobs": [observation("A"), observation("B")]}]});
    let computed = alloc(dir.path(), &input);
    for (job, times) in [("A", &ta), ("B", &tb)] {
        let want = computed["intervals"][0]["rates"][job].as_f64().unwrap();
        let got = rate_between(times, from, to);
        eprintln!("job {job}: {got:.0} calls/s, sluice alloc says {want:.0}/s");
        assert!(
            (got - want).abs() <= want * 0.05,
            "job {job}: {got:.0}/s vs {want:.0}/s ({jobs})"
        );
    }
}

/// `sluice rule change` on a running job: from the command's start to the job's calls at
/// the new rate (the first ten calls within the new pace), measured on the clock the
/// program records its calls with. The job's launch and the command's answer both wait
/// for the disk (its attachment's record, the change's save): the changes start once the
/// job runs, and the job runs long enough for slow answers.
#[test]
fn a_rule_change_is_enforced_within_50ms() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let config = "interval = \"1s\"\n\n[[rule]]\nrule = \"cap: op=getattr rate=2/s\"\n";
    let local = Local::start(dir.path(), config, &["--node", "n1"], None);
    let s = Scratch::new();
    let rate = c_prog("rate");
    let out = tmp_dir();
    // Already there: the program starts at once, and says so in its ready file.
    let start = s.path("start");
    std::fs::write(&start, "").unwrap();
    let mut job = local
        .job_command(
            "R",
            &["--mount", &s.file],
            &[&rate, "one", &s.file, &path_str(out.path()), "8000"],
        )
        .env("RATE_START", &start)
        .spawn()
        .expect("sluice run");
    assert!(
        wait_for(Duration::from_secs(30), || has_file_starting(
            out.path(),
            "ready."
        )),
        "the job never started"
    );
    std::thread::sleep(Duration::from_millis(1500));
    let mut changes = Vec::new();
    for (to, pace_ns) in [
        ("rate=5000/s", 400_000),
        ("rate=2/s", 0),
        ("rate=5000/s", 400_000),
    ] {
        let issued = monotonic_ns();
        // The answer waits for the save, which a busy disk can hold past the default 2 s
        // deadline; the enforcement is what is measured.
        let o = local.admin(&["rule", "change", "cap", to, "--deadline", "30s"]);
        let answered_ms = (monotonic_ns() - issued) as f64 / 1e6;
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        if pace_ns > 0 {
            changes.push((issued, pace_ns, answered_ms));
        }
        std::thread::sleep(Duration::from_millis(400));
    }
    let measured_until = monotonic_ns();
    assert!(job.wait().unwrap().success());
    let times = call_times(out.path());
    assert!(
        times.last().is_some_and(|&t| t >= measured_until),
        "the job ended within 400 ms of the last change: the commands answered too slowly"
    );
    let enforced: Vec<f64> = changes
        .iter()
        .map(|&(issued, pace, answered_ms)| {
            // The first call that starts a run of ten calls at the new pace.
            let after: Vec<u64> = times.iter().copied().filter(|&t| t >= issued).collect();
            let at = after
                .windows(10)
                .find(|w| w[9] - w[0] <= 9 * pace)
                .map(|w| w[0])
                .expect("the new rate was never reached");
            let ms = (at - issued) as f64 / 1e6;
            eprintln!(
                "rule change enforced {ms:.1} ms after the command started \
                 (answered after {answered_ms:.1} ms)"
            );
            ms
        })
        .collect();
    for ms in enforced {
        assert!(ms <= 50.0, "rule change enforced after {ms:.1} ms");
    }
}

/// A controller writing a new rate wakes a thread asleep on its reservation: it re-plans
/// at once instead of sleeping out a reservation made at the old rate.
#[test]
fn a_rate_change_wakes_a_waiting_thread_within_10ms() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let config = "interval = \"1s\"\n\n[[rule]]\nrule = \"slow: op=getattr rate=1/s burst=1\"\n";
    let local = Local::start(dir.path(), config, &["--node", "n1"], None);
    let s = Scratch::new();
    let rate = c_prog("rate");
    let out = tmp_dir();
    let mut job = local.job(
        "W",
        &["--mount", &s.file],
        &[&rate, "one", &s.file, &path_str(out.path()), "2500"],
    );
    let segment = dir.path().join("state/jobs/W.json");
    assert!(wait_for(Duration::from_secs(5), || segment.exists()));
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&segment).unwrap()).unwrap();
    let seg =
        sluice_control::segment_file::SegmentFile::open(record["segment"].as_str().unwrap().into())
            .unwrap();
    let slot = record["rule_slots"]["slow"].as_u64().unwrap() as usize;
    // A thread is now asleep for up to a second on its next reservation.
    std::thread::sleep(Duration::from_millis(1300));
    let written = monotonic_ns();
    seg.set_limit(slot, sluice_core::bucket::Limit::new(100_000, 100));
    assert!(job.wait().unwrap().success());
    let times = call_times(out.path());
    let first = times
        .iter()
        .copied()
        .find(|&t| t >= written)
        .expect("calls after the change");
    let ms = (first - written) as f64 / 1e6;
    eprintln!("first call {ms:.2} ms after the rate was written");
    assert!(ms <= 10.0, "the waiting thread re-planned after {ms:.2} ms");
}

/// The demand a job would have without its limit: a closed-loop job whose calls each
/// take about 200 µs of work, held to half its natural rate, is estimated within 10%.
#[test]
fn demand_of_a_job_held_to_half_its_rate_is_estimated_within_10_percent() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new();
    let spin = c_prog("spin");
    // Its natural rate, unthrottled, under the stage.
    let natural = |secs: &str| -> f64 {
        let o = Command::new(&spin)
            .args([&s.file, secs, "200"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    let before = natural("2");
    let dir = daemon_dir();
    let cap = (before / 2.0).round();
    let config = format!(
        "interval = \"1s\"\n\n[[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\n\
         capacity = \"{cap}/s\"\nalgorithm = \"psfa\"\nmin_share = 0.0\n"
    );
    let local = Local::start(dir.path(), &config, &["--node", "n1"], None);
    // 8 s: the three samples end near 6 s, and a job that ended is no longer listed.
    let mut job = local.job("D", &["--mount", &s.file], &[&spin, &s.file, "8", "200"]);
    let mut estimates = Vec::new();
    std::thread::sleep(Duration::from_secs(3));
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(1000));
        let (_, rate, demand) = share(&local.jobs(), "D", "md").unwrap();
        estimates.push((rate, demand));
    }
    assert!(job.wait().unwrap().success());
    let after = natural("2");
    let truth = (before + after) / 2.0;
    let mut demands: Vec<f64> = estimates.iter().map(|e| e.1).collect();
    demands.sort_by(f64::total_cmp);
    let median = demands[1];
    eprintln!("natural {before:.0}/{after:.0} calls/s; held at {cap}/s; estimates {estimates:?}");
    assert!(
        (median - truth).abs() <= 0.10 * truth,
        "demand estimated {median:.0}/s, natural rate {truth:.0}/s"
    );
}

/// Two launchers of one job on one node share its segment: a rule of 1,000/s holds both
/// together, not each.
#[test]
fn launchers_of_one_job_share_one_budget() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let config = "interval = \"1s\"\n\n[[rule]]\nrule = \"cap: op=getattr rate=1000/s\"\n";
    let local = Local::start(dir.path(), config, &["--node", "n1"], None);
    let s = Scratch::new();
    let rate = c_prog("rate");
    let (out_1, out_2) = (tmp_dir(), tmp_dir());
    let start = monotonic_ns();
    let mut one = local.job(
        "S",
        &["--mount", &s.file],
        &[&rate, "one", &s.file, &path_str(out_1.path()), "4000"],
    );
    let mut two = local.job(
        "S",
        &["--mount", &s.file],
        &[&rate, "one", &s.file, &path_str(out_2.path()), "4000"],
    );
    assert!(one.wait().unwrap().success() && two.wait().unwrap().success());
    let mut all = call_times(out_1.path());
    all.extend(call_times(out_2.path()));
    all.sort_unstable();
    let got = rate_between(&all, start + SEC, start + 4 * SEC);
    eprintln!("two launchers of one job: {got:.0} calls/s together under 1,000/s");
    assert!(
        (got - 1000.0).abs() <= 20.0,
        "{got:.0}/s for two launchers under 1,000/s"
    );
}

/// An automatic pool's `watch` reaches the stages: of two pools holding the same creates
/// and unlinks, the one watching `op=getattr` times none of them (no p99) while the other
/// does, until a job making getattr calls joins.
#[test]
fn an_automatic_pool_times_only_the_calls_it_watches() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let auto_pool = |name: &str, watch: &str| {
        format!(
            "\n[[pool]]\nname = \"{name}\"\nmatch = \"class=metadata,directory\"\n\
             capacity = \"auto\"\nalgorithm = \"psfa\"\n\
             auto = {{ target_p99 = \"10s\", start = \"1M/s\"{watch} }}\n"
        )
    };
    let config = format!(
        "interval = \"500ms\"\n{}{}",
        auto_pool("stats", ", watch = \"op=getattr\""),
        auto_pool("all", "")
    );
    let local = Local::start(dir.path(), &config, &["--node", "n1"], None);
    let s = Scratch::new();
    let p99 = || {
        let v = local.pools();
        let of = |name: &str| {
            v["pools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == name)
                .and_then(|p| p["latency_p99_s"].as_f64())
                .unwrap_or(0.0)
        };
        (of("stats"), of("all"))
    };
    let load = |job: &str, ops: &str, seconds: &str| {
        let work = s.path(job);
        std::fs::create_dir(&work).unwrap();
        let dir = path_str(s.dir.path());
        let bin = path_str(&sluice_bin());
        let args = ["load", "--dir", &work, "--ops", ops, "--duration", seconds];
        let cmd: Vec<&str> = std::iter::once(bin.as_str()).chain(args).collect();
        local.job(job, &["--mount", &dir], &cmd)
    };
    let mut creates = load("W", "mknod,unlink", "6");
    assert!(
        wait_for(Duration::from_secs(4), || p99().1 > 0.0),
        "the unwatched pool never timed a create or an unlink"
    );
    let (stats, all) = p99();
    assert_eq!(
        stats, 0.0,
        "the getattr pool timed creates (p99 of all: {all})"
    );
    let mut stats_job = load("G", "getattr", "3");
    assert!(
        wait_for(Duration::from_secs(3), || p99().0 > 0.0),
        "the getattr pool never timed a getattr"
    );
    assert!(stats_job.wait().unwrap().success() && creates.wait().unwrap().success());
}

/// An automatic pool steered by its server's own figures (`source`): a Lustre MDS's
/// service statistics, written here as the server writes them, say every request took
/// 10 ms against a 1 ms target, and the capacity backs off from its start each interval
/// it may; `sluice pool list` labels the figure the server's mean. When the file stops
/// making sense the pool keeps its last capacity and the log says so once.
#[test]
fn an_automatic_pool_backs_off_on_its_servers_mean_latency() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let stats = dir.path().join("mdt-stats");
    let config = format!(
        "interval = \"500ms\"\n[[pool]]\nname = \"md\"\nmatch = \"class=metadata\"\n\
         capacity = \"auto\"\nalgorithm = \"psfa\"\n\
         auto = {{ source = \"lustre-mdt:{}\", target = \"1ms\", start = \"2k/s\" }}\n",
        path_str(&stats)
    );
    // The server's counters, rewritten every 100 ms: 100 more requests, each waiting
    // 10 ms (req_waittime, in µs).
    let write = |requests: u64, text: Option<&str>| {
        let tmp = stats.with_extension("tmp");
        let body = text.map_or_else(
            || {
                format!(
                    "snapshot_time 1700000100.5 secs.usecs\n\
                     req_waittime {requests} samples [usec] 1 20000 {} 1\n",
                    requests * 10_000
                )
            },
            str::to_owned,
        );
        std::fs::write(&tmp, body).unwrap();
        std::fs::rename(&tmp, &stats).unwrap();
    };
    write(0, None);
    let local = Local::start(dir.path(), &config, &["--node", "n1"], None);
    let pool = || local.pools()["pools"][0].clone();
    let capacity = || {
        // "auto 1.4k/s", "auto 980/s"
        let text = pool()["capacity"].as_str().unwrap_or_default().to_owned();
        let rate = text.trim_start_matches("auto ").trim_end_matches("/s");
        let (digits, scale) = match rate.strip_suffix('k') {
            Some(d) => (d, 1e3),
            None => (rate, 1.0),
        };
        digits.parse::<f64>().map_or(0.0, |v| v * scale)
    };
    let mut requests = 0;
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(4) && capacity() > 1000.0 {
        requests += 100;
        write(requests, None);
        std::thread::sleep(Duration::from_millis(100));
    }
    let p = pool();
    assert!(
        capacity() <= 1000.0,
        "the capacity did not back off under a 10 ms mean: {p}"
    );
    assert_eq!(p["latency_from_server"], true, "{p}");
    let mean = p["latency_p99_s"].as_f64().unwrap();
    assert!((mean - 0.010).abs() < 1e-6, "the server's mean: {p}");
    let list = local.admin(&["pool", "list"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(text.contains("(mean 10.00ms, target 1ms)"), "{text}");
    write(requests, Some("not the statistics of a Lustre server\n"));
    let held = capacity();
    std::thread::sleep(Duration::from_millis(1600));
    assert_eq!(
        capacity(),
        held,
        "the capacity moved on an unreadable source"
    );
    let log = local.daemon.log_text();
    assert_eq!(
        log.matches("capacity source failed").count(),
        1,
        "the failing source, logged once: {log}"
    );
}

/// A job held only by a pool that times its calls (no watch): its stats, opens and closes
/// take the hooks' managed lane, yet each is counted and admitted by the pool exactly, and
/// the pool still times one call in 64 (`latency_sample`), and the first after each tick
/// of the coarse clock: never fewer, and no more than one per millisecond the job ran.
#[test]
fn a_pool_that_times_its_calls_counts_and_times_them_through_the_lane() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let config = "interval = \"500ms\"\n\n[[pool]]\nname = \"md\"\nmatch = \"class=metadata\"\n\
                  capacity = \"1M/s\"\nalgorithm = \"psfa\"\n";
    let local = Local::start(dir.path(), config, &["--node", "n1"], None);
    let s = Scratch::new();
    let stats = s.path("stats.json");
    let prog = c_prog("fsdo");
    let began = std::time::Instant::now();
    let mut job = local.job(
        "P",
        &["--mount", &path_str(s.dir.path()), "--stats", &stats],
        &[&prog, "stat@3000", &s.file, "open@2000", &s.file],
    );
    assert!(job.wait().unwrap().success());
    let ran_ms = began.elapsed().as_millis() as u64;
    let stats = Stats(serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap());
    stats.assert_calls_exactly(
        &[("getattr", 3000), ("open", 2000), ("close", 2000)],
        "under the pool",
    );
    let pool = &stats.0["pools"][0];
    assert_eq!(pool["admitted"], 7000, "admitted by the pool: {pool}");
    let timed = pool["timed"].as_u64().expect("the pool's timed calls");
    assert!(
        (7000 / 64..=7000 / 64 + ran_ms + 2).contains(&timed),
        "{timed} calls of 7,000 timed in {ran_ms} ms"
    );
}

/// A pool under `psfa` divides what Algorithm 1 gives on the figure its estimator names:
/// by default the admitted rate (the paper's usageᵢ), then the arrivals, then sluice's
/// wait-inflated demand, each set live with `sluice pool set --estimator` and shown by
/// `sluice pool list`; checked against `sluice alloc` on the figures `sluice jobs`
/// shows for the same cycle.
#[test]
fn psfa_divides_by_the_figure_its_estimator_names() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let config = "interval = \"500ms\"\n\n[[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\n\
                  capacity = \"6k/s\"\nalgorithm = \"psfa\"\nmin_share = 0.0\n\n\
                  [[job]]\njob = \"A\"\npool = \"md\"\nlimit = \"2k/s\"\n\n\
                  [[job]]\njob = \"B\"\npool = \"md\"\nlimit = \"3k/s\"\n";
    let local = Local::start(dir.path(), config, &["--node", "n1"], None);
    let s = Scratch::new();
    let rate = c_prog("rate");
    let outs = [tmp_dir(), tmp_dir()];
    let mut jobs: Vec<_> = [("A", "one"), ("B", "threads")]
        .iter()
        .zip(&outs)
        .map(|(&(job, mode), out)| {
            local.job(
                job,
                &["--mount", &s.file],
                &[&rate, mode, &s.file, &path_str(out.path()), "9000"],
            )
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let mut checked = Vec::new();
    for estimator in [None, Some("arrivals"), Some("wait-inflated")] {
        if let Some(e) = estimator {
            let set = "pool set md --match op=getattr --capacity 6k/s --algorithm psfa --estimator";
            let set = local.admin(&[set.split(' ').collect(), vec![e]].concat());
            assert!(
                set.status.success(),
                "{}",
                String::from_utf8_lossy(&set.stderr)
            );
            std::thread::sleep(Duration::from_millis(1500));
        }
        let shown = local.pools()["pools"][0]["estimator"].clone();
        assert_eq!(shown, estimator.unwrap_or("usage"), "pool list");
        let view = local.jobs();
        // The figure each job was fed as its usageᵢ, given to sluice alloc as arrivals.
        let share = |job: &str| {
            view["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|j| j["job"] == job)
                .map(|j| j["pools"]["md"].clone())
                .unwrap()
        };
        let field = match estimator {
            None => "rate",
            Some("arrivals") => "arrivals",
            _ => "demand",
        };
        let observation = |job: &str| {
            let s = share(job);
            json!({"id": job, "limit": s["limit"], "arrivals": s[field]})
        };
        let input = json!({"algorithm": "psfa", "capacity": 6000.0, "estimator": "arrivals",
            "params": {"interval_s": 0.5},
            "intervals": [{"jobs": [observation("A"), observation("B")]}]});
        let computed = alloc(dir.path(), &input);
        for job in ["A", "B"] {
            let want = computed["intervals"][0]["rates"][job].as_f64().unwrap();
            let got = share(job)["allocation"].as_f64().unwrap();
            let fed = share(job)[field].as_f64().unwrap();
            checked.push(format!(
                "{}: {job} fed {fed:.0}/s, allocated {got:.1}/s",
                estimator.unwrap_or("usage (default)")
            ));
            assert!(
                (got - want).abs() <= 1e-6 * want.max(1.0),
                "{estimator:?}: job {job} allocated {got} where Algorithm 1 gives {want}: {view}"
            );
        }
    }
    eprintln!("{}", checked.join("; "));
    for j in &mut jobs {
        assert!(j.wait().unwrap().success());
    }
    // The pool held all along.
    let mut all: Vec<u64> = outs.iter().flat_map(|o| call_times(o.path())).collect();
    all.sort_unstable();
    assert_pool_held(&all, u64::MAX, 6_000, 3);
}

/// A pool that weighs its operations (`costs`): under the same 400 units/s, a loop of
/// creates and removals (mknod and unlink, 4 units each) is held to a quarter of the
/// call rate of a loop of stats (getattr, 1 unit), and `sluice jobs` shows the calls
/// beside the units.
#[test]
fn a_pool_weighing_creates_holds_them_to_a_quarter_of_the_stats() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let config = "interval = \"500ms\"\n\n[[pool]]\nname = \"md\"\n\
         match = \"op=getattr,mknod,unlink\"\ncapacity = \"800/s\"\n\
         algorithm = \"reservations\"\nparams = { work_conserving = false }\nmin_share = 0.0\n\
         costs = { mknod = 4, unlink = 4 }\n\n\
         [[job]]\njob = \"S\"\npool = \"md\"\nlimit = \"400/s\"\n\n\
         [[job]]\njob = \"C\"\npool = \"md\"\nlimit = \"400/s\"\n";
    let local = Local::start(dir.path(), config, &["--node", "n1"], None);
    let s = Scratch::new();
    let load = |job: &str, ops: &str| {
        let work = s.path(job);
        std::fs::create_dir(&work).unwrap();
        let dir = path_str(s.dir.path());
        let bin = path_str(&sluice_bin());
        let args = ["load", "--dir", &work, "--ops", ops, "--duration", "4"];
        let cmd: Vec<&str> = std::iter::once(bin.as_str()).chain(args).collect();
        let mut c = local.job_command(job, &["--mount", &dir], &cmd);
        c.stdout(std::process::Stdio::piped());
        c.spawn().expect("sluice run")
    };
    let stats = load("S", "getattr");
    let creates = load("C", "mknod,unlink");
    std::thread::sleep(Duration::from_secs(3));
    let jobs = local.jobs();
    let table = local.admin(&["jobs"]);
    let rate = |child: std::process::Child| {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success());
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        // "total N ops in T s: R ops/s"
        let total = text
            .lines()
            .find_map(|l| l.strip_prefix("total "))
            .unwrap_or("");
        let words: Vec<&str> = total.split_whitespace().collect();
        let (n, t): (f64, f64) = (words[0].parse().unwrap(), words[3].parse().unwrap());
        n / t
    };
    let (s_rate, c_rate) = (rate(stats), rate(creates));
    eprintln!("stats {s_rate:.0} calls/s, creates and removals {c_rate:.0} calls/s");
    // The first half-second runs at the start share; both lose it alike.
    assert!(
        (250.0..=440.0).contains(&s_rate),
        "the stats ran at {s_rate:.0}/s under 400 units/s"
    );
    let ratio = s_rate / c_rate;
    assert!(
        (3.4..=4.6).contains(&ratio),
        "stats {s_rate:.0}/s against creates {c_rate:.0}/s: {ratio:.2}, not 4"
    );
    let calls = |job: &str| {
        let j = jobs["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["job"] == job);
        let p = &j.expect("job listed")["pools"]["md"];
        (p["rate"].as_f64().unwrap(), p["calls"].as_f64().unwrap())
    };
    let (units, c_calls) = calls("C");
    assert!(
        (3.0..=5.0).contains(&(units / c_calls)),
        "sluice jobs: {units:.0} units/s for {c_calls:.0} calls/s ({jobs})"
    );
    let (units, s_calls) = calls("S");
    assert!(
        (0.8..=1.25).contains(&(units / s_calls)),
        "sluice jobs: {units:.0} units/s for {s_calls:.0} stats/s ({jobs})"
    );
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.lines().next().unwrap_or("").ends_with("NODES  CALLS"),
        "{table}"
    );
}

/// A pool that learns its costs from its server (`costs_from`): a Lustre MDT's md_stats,
/// written here as the server writes them, say a getattr takes 100 µs and an mknod or an
/// unlink 400 µs. The pool learns getattr=1, unlink=4, mknod=4, logs it as an audit line
/// naming the source, pushes it to the stage, exports it on `/metrics`
/// (`sluice_pool_cost_units`, none before it learned), and a job's creates and removals
/// are charged four units each (`sluice jobs`: units beside calls).
#[test]
fn a_pool_learns_its_costs_from_its_servers_latencies() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let stats = dir.path().join("md_stats");
    // The server's counters, each operation answered n times.
    let write = |n: u64| {
        let tmp = stats.with_extension("tmp");
        let body = format!(
            "snapshot_time 1700000100.5 secs.usecs\n\
             getattr {n} samples [usecs] 50 200 {} 1\n\
             mknod {n} samples [usecs] 200 800 {} 1\n\
             unlink {n} samples [usecs] 200 800 {} 1\n",
            n * 100,
            n * 400,
            n * 400
        );
        std::fs::write(&tmp, body).unwrap();
        std::fs::rename(&tmp, &stats).unwrap();
    };
    write(0);
    let config = format!(
        "interval = \"500ms\"\n\n[[pool]]\nname = \"md\"\n\
         match = \"op=getattr,mknod,unlink\"\ncapacity = \"100k/s\"\nalgorithm = \"psfa\"\n\
         costs_from = \"lustre-mdt:{}\"\n",
        path_str(&stats)
    );
    let http = format!("127.0.0.1:{}", free_port());
    let local = Local::start(
        dir.path(),
        &config,
        &["--node", "n1", "--http", &http],
        None,
    );
    // A cycle recorded, nothing learned: the pool weighs nothing yet and exports no cost.
    let mut metrics = String::new();
    let scraped = wait_for(Duration::from_secs(5), || {
        metrics = http_get(&http, "/metrics").unwrap_or_default();
        metrics.contains("sluice_pool_capacity{pool=\"md\"}")
    });
    assert!(scraped, "no pool on /metrics: {metrics}");
    assert!(!metrics.contains("sluice_pool_cost_units{"), "{metrics}");
    let costs = || {
        local.pools()["pools"][0]["costs"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    let mut n = 0;
    let learned = wait_for(Duration::from_secs(5), || {
        n += 100;
        write(n);
        costs() == "getattr=1,unlink=4,mknod=4"
    });
    assert!(learned, "costs learned: {:?}", costs());
    // The gauges follow at the end of the cycle that learned them.
    let want = [("getattr", 1), ("unlink", 4), ("mknod", 4)]
        .map(|(op, n)| format!("sluice_pool_cost_units{{pool=\"md\",op=\"{op}\"}} {n}\n"));
    let exported = wait_for(Duration::from_secs(3), || {
        metrics = http_get(&http, "/metrics").unwrap_or_default();
        want.iter().all(|w| metrics.contains(w.as_str()))
    });
    assert!(exported, "{want:?} on /metrics: {metrics}");
    assert_eq!(
        metrics.matches("sluice_pool_cost_units{").count(),
        3,
        "{metrics}"
    );
    let list = local.admin(&["pool", "list"]);
    let text = String::from_utf8_lossy(&list.stdout);
    let line = format!(
        "pool md costs (learned from lustre-mdt:{}): getattr=1,unlink=4,mknod=4",
        path_str(&stats)
    );
    assert!(text.contains(&line), "{text}");
    let log = local.daemon.log_text();
    assert!(
        log.contains("costs_learned done by lustre-mdt:")
            && log.contains("getattr 100us, unlink 400us, mknod 400us")
            && log.contains("(none) → getattr=1,unlink=4,mknod=4"),
        "the change, audited once with its reason: {log}"
    );
    let s = Scratch::new();
    let work = s.path("C");
    std::fs::create_dir(&work).unwrap();
    let bin = path_str(&sluice_bin());
    let args = [
        "load",
        "--dir",
        &work,
        "--ops",
        "mknod,unlink",
        "--duration",
        "3",
    ];
    let cmd: Vec<&str> = std::iter::once(bin.as_str()).chain(args).collect();
    let mut job = local
        .job_command("C", &["--mount", &path_str(s.dir.path())], &cmd)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("sluice run");
    let charged = |jobs: &serde_json::Value| {
        let p = jobs["jobs"].as_array()?.iter().find(|j| j["job"] == "C")?["pools"]["md"].clone();
        let (units, calls) = (p["rate"].as_f64()?, p["calls"].as_f64()?);
        (calls > 0.0).then_some(units / calls)
    };
    let mut jobs = serde_json::Value::Null;
    let seen = wait_for(Duration::from_secs(3), || {
        jobs = local.jobs();
        charged(&jobs).is_some()
    });
    assert!(seen, "the job's calls never showed: {jobs}");
    let ratio = charged(&jobs).unwrap_or(0.0);
    assert!(
        (3.5..=4.5).contains(&ratio),
        "creates and removals charged {ratio:.2} units each, not 4: {jobs}"
    );
    assert!(job.wait().unwrap().success());
}

/// A job whose one call sits inside the file system for intervals on end (`dd` writing
/// 1 MiB into a FIFO nobody reads yet: the kernel takes 64 KiB and holds the call)
/// neither arrives nor waits at its gate, yet asks: the local sees it ask (its demand
/// is the rate it holds, not 0), so that SET-10 does not end its phase. Once the write
/// returned and the job only sleeps, it is seen idle again.
#[test]
fn a_job_inside_a_slow_call_is_seen_asking() {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let config = "interval = \"100ms\"\n\n[[pool]]\nname = \"data\"\nmatch = \"op=write\"\n\
                  capacity = \"100MiB/s\"\nalgorithm = \"set10\"\n";
    let local = Local::start(dir.path(), config, &["--node", "n1"], None);
    let s = Scratch::new();
    let fifo = s.path("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    // Opened first without blocking, so that dd's open for writing returns at once.
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .expect("the FIFO opens for reading");
    let script = "dd if=/dev/zero of=\"$0\" bs=1M count=1 2>/dev/null && sleep 3";
    let mut job = local.job(
        "J",
        &["--mount", &path_str(s.dir.path())],
        &["sh", "-c", script, &fifo],
    );
    let demand = || share(&local.jobs(), "J", "data").map_or(0.0, |s| s.2);
    // The job's write is held after its first 64 KiB; a second on, its gate has seen
    // nothing for ten intervals.
    let mut first = [0u8; 1];
    let wrote = wait_for(Duration::from_secs(10), || {
        matches!(reader.read(&mut first), Ok(1))
    });
    std::thread::sleep(Duration::from_secs(1));
    let inside = local.jobs();
    let asking = share(&inside, "J", "data").map_or(0.0, |s| s.2);
    // Drain the FIFO: the write returns, dd exits, the job sleeps.
    let mut buf = vec![0u8; 1 << 16];
    let mut drained = 1;
    let drain = wait_for(Duration::from_secs(10), || match reader.read(&mut buf) {
        Ok(0) => true,
        Ok(n) => {
            drained += n;
            false
        }
        Err(_) => false,
    });
    let idle = wait_for(Duration::from_secs(2), || demand() == 0.0);
    assert!(job.wait().unwrap().success());
    assert!(
        wrote && drain,
        "dd wrote {drained} bytes into the FIFO, not 1 MiB"
    );
    assert_eq!(drained, 1 << 20);
    assert!(
        asking > 0.0,
        "a job inside its write for a second should be seen asking: {inside}"
    );
    assert!(idle, "the job sleeps, yet is seen asking: {}", local.jobs());
}
