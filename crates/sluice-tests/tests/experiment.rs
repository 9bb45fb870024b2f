//! The scenario runner end to end: a small scenario (two jobs, one pool, Baseline and
//! PSFA) run with the real control plane and real replayers; then compared.

use crate::common;

use std::process::Command;

use common::{path_str, shm_dir, sluice_bin};
use serde_json::Value;

const SCENARIO: &str = r#"
name = "small"
interval = "500ms"
timeout = 60

[pool]
name = "md"
match = "class=metadata"
capacity = "3k/s"

[trace]
mean = "4k/s"
seconds = 10
seed = 7

[[job]]
name = "a"
start = 0
processes = 2
load = 0.5
limit = "1k/s"

[[job]]
name = "b"
start = 2
load = 0.5
limit = "2k/s"

[[setup]]
name = "Baseline"
algorithm = "none"

[[setup]]
name = "PSFA"
algorithm = "psfa"
"#;

#[test]
fn a_scenario_runs_each_setup_and_the_controlled_one_holds_the_pool() {
    let dir = shm_dir();
    let out = run_scenario(&dir, "small.toml", SCENARIO);
    for f in [
        "Baseline.csv",
        "Baseline.png",
        "PSFA.csv",
        "PSFA.png",
        "summary.md",
        "trace.csv",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let setups = summary["setups"].as_array().unwrap();
    let (base, psfa) = (&setups[0], &setups[1]);
    eprintln!("{summary:#}");
    // Every call of the trace is made in both (a throttled replay catches up).
    assert_eq!(base["total_calls"], psfa["total_calls"]);
    assert!(
        base["seconds_over_capacity"].as_u64().unwrap() > 0,
        "{base}"
    );
    assert_eq!(psfa["seconds_over_capacity"], 0, "{psfa}");
    assert!(psfa["makespan"].as_f64().unwrap() >= base["makespan"].as_f64().unwrap());
    // Allocations were sampled under control, none without.
    let csv = std::fs::read_to_string(out.join("PSFA.csv")).unwrap();
    assert!(
        csv.lines().skip(1).any(|l| !l.ends_with(',')),
        "no allocations: {csv}"
    );
    let csv = std::fs::read_to_string(out.join("Baseline.csv")).unwrap();
    assert!(csv.lines().skip(1).all(|l| l.ends_with(',')), "{csv}");

    let o = Command::new(sluice_bin())
        .args(["experiment", "compare", &path_str(&out), &path_str(&out)])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success()
            && table.contains("| | small: Baseline | small: PSFA | small: Baseline |"),
        "{table}"
    );

    // Bad input: one line, exit 2, nothing run.
    let err = refused(
        &dir.path().join("small.toml"),
        &SCENARIO.replace("\"psfa\"", "\"fastest\""),
    );
    assert!(err.contains("fastest"), "{err}");
}

/// Two data jobs with reservations (SDQoS' desired bandwidths) in a bytes pool: each gets
/// what it asked for. The pool's capacity stands in for a file system here (the test
/// writes to a temporary directory), so the check is sluice's enforcement alone.
const BANDWIDTH: &str = r#"
name = "bw"
interval = "100ms"
timeout = 60

[pool]
name = "bw"
match = "class=data"
capacity = "32MB/s"
min_share = 0

[[job]]
name = "a"
desired = "8MB/s"

[job.workload]
kind = "continuous"
block = "256KiB"
threads = 2
seconds = 6

[[job]]
name = "b"

[job.workload]
kind = "periodic"
block = "256KiB"
compute = 0.5
volume = "2MiB"
iterations = 6

[[setup]]
name = "Reserved"
algorithm = "reservations"
params = { work_conserving = false }
limits = { a = "8MB/s", b = "4MB/s" }
"#;

#[test]
fn data_jobs_get_their_desired_bandwidth_and_record_their_phases() {
    let dir = shm_dir();
    let out = run_scenario(&dir, "bw.toml", BANDWIDTH);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    eprintln!("{summary:#}");
    assert_eq!(summary["unit"], "bytes");
    let rates = summary["setups"][0]["rates"].as_array().unwrap();
    // The first 100-ms interval runs at the controller's initial rate: over a 6-s run
    // that is worth up to 2%; a long run (make experiments) is within 1%.
    let a = &rates[0];
    assert_eq!(a["desired"].as_f64(), Some(8e6), "{a}");
    let deviation = a["deviation_pct"].as_f64().unwrap();
    assert!(
        deviation <= 3.0,
        "job a: {deviation}% from its desired rate: {a}"
    );
    // b's desired rate is its set-up's limit; its rate is over its I/O phases, which
    // run at that limit.
    let b = &rates[1];
    assert_eq!(b["desired"].as_f64(), Some(4e6), "{b}");
    let deviation = b["deviation_pct"].as_f64().unwrap();
    assert!(
        deviation <= 5.0,
        "job b: {deviation}% from its desired rate: {b}"
    );
    let csv = std::fs::read_to_string(out.join("Reserved.csv")).unwrap();
    assert!(csv.starts_with("second,job,bytes,allocation\n"), "{csv}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("| a deviation (%) |"), "{md}");
}

/// Two data jobs of the same volume in two accounts (shares 3 and 1), each attached for
/// a user of its own, in a pool divided down `account,user,job`.
const TREE: &str = r#"
name = "tree"
interval = "100ms"
timeout = 60

[pool]
name = "bw"
match = "class=data"
capacity = "16MB/s"

[shares.account]
phys = 3
chem = 1

[[job]]
name = "x"
account = "phys"
uid = 61001
[job.workload]
kind = "continuous"
block = "256KiB"
threads = 2
volume = "24MiB"

[[job]]
name = "y"
account = "chem"
uid = 61002
[job.workload]
kind = "continuous"
block = "256KiB"
threads = 2
volume = "24MiB"

[[setup]]
name = "Tree"
algorithm = "drf"
tree = "account,user,job"
"#;

#[test]
fn a_tree_setup_divides_by_account_and_reports_each_jobs_slowdown() {
    let dir = shm_dir();
    let out = run_scenario(&dir, "tree.toml", TREE);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let setup = &summary["setups"][0];
    eprintln!("{setup:#}");
    let completion = |k: usize| setup["completion"][k][1].as_f64().unwrap();
    // phys has three quarters while both write: x ends well before y, which then has
    // the whole pool (x about 2.1 s, y about 3.1 s).
    assert!(completion(0) < 0.85 * completion(1), "{setup}");
    // Each job's slowdown: its completion over 24 MiB at 16 MB/s alone (1.57 s).
    let slowdown: Vec<f64> = setup["slowdown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().expect("a slowdown per job"))
        .collect();
    let alone = 24.0 * 1024.0 * 1024.0 / 16e6;
    for (k, s) in slowdown.iter().enumerate() {
        assert!(
            (s - completion(k) / alone).abs() < 1e-6 && *s > 0.95,
            "job {k}: slowdown {s}: {setup}"
        );
    }
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("| slowdown's coefficient of variation |"),
        "{md}"
    );
}

/// A periodic job of about 6 s in a scenario that measures [0.5 s, 2 s] and stops at 2.5 s.
const STOPPED: &str = r#"
name = "stopped"
interval = "100ms"
timeout = 60

[pool]
name = "bw"
match = "class=data"
capacity = "32MB/s"

[metrics]
window = [0.5, 2]
stop = 2.5

[[job]]
name = "p"
[job.workload]
kind = "periodic"
block = "64KiB"
compute = 0.3
volume = "1MiB"
iterations = 20

[[setup]]
name = "Bare"
algorithm = "none"
"#;

#[test]
fn metrics_stop_ends_data_jobs_after_the_window_and_their_measures_cover_it() {
    let dir = shm_dir();
    let begun = std::time::Instant::now();
    let out = run_scenario(&dir, "stopped.toml", STOPPED);
    assert!(begun.elapsed().as_secs_f64() < 6.0, "{:?}", begun.elapsed());
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let setup = &summary["setups"][0];
    assert_eq!(setup["completion"][0][1], Value::Null, "{setup}");
    let makespan = setup["makespan"].as_f64().unwrap();
    assert!((2.5..=4.0).contains(&makespan), "{setup}");
    let io = &setup["iosets"];
    assert_eq!(io["covered"], true, "{io}");
    assert!(io["utilization"].as_f64().unwrap() > 0.5, "{io}");
    // Only data jobs can be stopped: a command job is refused, nothing run.
    let text = STOPPED.replace(
        "[[setup]]",
        "[[job]]\nname = \"c\"\n[job.workload]\nkind = \"command\"\nargv = [\"true\"]\n\n[[setup]]",
    );
    let err = refused(&dir.path().join("bad.toml"), &text);
    assert!(
        err.contains("metrics.stop: job c is not a data job"),
        "{err}"
    );
}

/// A run interrupted (Ctrl-C) while a program runs standalone under the stage stops it
/// and exits 130, leaving no segment behind in /dev/shm: `sluice run` is given SIGTERM
/// and time to remove its own, as a killed one could not.
#[test]
fn an_interrupted_run_leaves_no_standalone_segment() {
    let dir = shm_dir();
    let job = format!("interrupted{}", std::process::id());
    let scenario = dir.path().join("interrupted.toml");
    let text = format!(
        "name = \"interrupted\"\ntimeout = 60\n[pool]\nname = \"md\"\n\
         match = \"class=metadata\"\ncapacity = \"1k/s\"\n[[job]]\nname = \"{job}\"\n\
         [job.workload]\nkind = \"command\"\nargv = [\"sleep\", \"50\"]\n\
         [[setup]]\nname = \"Baseline\"\nalgorithm = \"none\"\n"
    );
    std::fs::write(&scenario, text).unwrap();
    // In a group of its own, killed with its jobs if the test fails before the end.
    let mut runner = sluice_workload::harness::Process::start(
        Command::new(sluice_bin())
            .env("SLUICE_STAGE", common::stage_lib())
            .args(["experiment", "run"])
            .arg(&scenario)
            .arg("--out")
            .arg(dir.path().join("out"))
            .stderr(std::process::Stdio::piped()),
    )
    .unwrap();
    let prefix = format!("sluice.{job}.");
    let segments = || -> Vec<String> {
        std::fs::read_dir("/dev/shm")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with(&prefix))
            .collect()
    };
    let start = std::time::Instant::now();
    while segments().is_empty() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "the job's standalone segment never appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    runner.signal(libc::SIGINT);
    let status = runner.child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(runner.child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert_eq!(segments(), Vec::<String>::new(), "left in /dev/shm");
}

/// Writes `text` to `scenario` and runs it: it must be refused as bad input (exit 2,
/// nothing run); returns its standard error.
fn refused(scenario: &std::path::Path, text: &str) -> String {
    std::fs::write(scenario, text).unwrap();
    let o = Command::new(sluice_bin())
        .args(["experiment", "run"])
        .arg(scenario)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    err
}

/// Runs `text` as scenario `name` in `dir`; returns its output directory. The tests give
/// a `dir` on tmpfs: the jobs write their files under it, and the pool stands in for a
/// file system only where the disk is faster than the pool. Beside a large write to disk
/// (`make test` copies 4 GB of the old release meanwhile), two data jobs in /tmp were held
/// by writeback rather than by their pool, and shared it evenly whatever the tree said.
fn run_scenario(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
    run_scenario_with(dir, name, text, &[]).0
}

/// [`run_scenario`] with `extra` arguments; also returns its standard output.
fn run_scenario_with(
    dir: &tempfile::TempDir,
    name: &str,
    text: &str,
    extra: &[&str],
) -> (std::path::PathBuf, String) {
    let scenario = dir.path().join(name);
    std::fs::write(&scenario, text).unwrap();
    let out = dir.path().join("out");
    let o = Command::new(sluice_bin())
        .env("SLUICE_STAGE", common::stage_lib())
        .args(["experiment", "run"])
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (out, String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Real programs as jobs: a shell loop creating and deleting files (its directory made
/// by its `setup`), and `sluice load` itself through `{sluice}` at a pace of its own
/// (a rule of the job's), under a 400-calls/s pool.
const COMMANDS: &str = r#"
name = "commands"
interval = "200ms"
timeout = 60

[pool]
name = "md"
match = "class=metadata"
capacity = "400/s"

[[job]]
name = "touch"
limit = "200/s"
[job.workload]
kind = "command"
setup = ["mkdir", "{dir}/t"]
argv = ["sh", "-c", "for i in $(seq 300); do : > t/f$i; done; rm -f {dir}/t/f*"]

[[job]]
name = "stat"
start = 0.5
limit = "200/s"
rules = ["stat-pace: op=getattr rate=300/s"]
[job.workload]
kind = "command"
argv = ["{sluice}", "load", "--dir", "{dir}", "--ops", "getattr", "--count", "400"]

[[setup]]
name = "Baseline"
algorithm = "none"

[[setup]]
name = "PSFA"
algorithm = "psfa"
"#;

#[test]
fn command_jobs_are_timed_counted_and_held_to_the_pool() {
    let dir = shm_dir();
    let (out, live) = run_scenario_with(&dir, "commands.toml", COMMANDS, &["--live"]);
    eprintln!("{live}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    eprintln!("{summary:#}");
    let setups = summary["setups"].as_array().unwrap();
    let (base, psfa) = (&setups[0], &setups[1]);
    let completion = |m: &Value, k: usize| m["completion"][k][1].as_f64().unwrap();
    // Each program's run is timed: bare in a fraction of a second, held by the pool
    // (≈ 1,300 calls at 400/s) for seconds.
    assert!(completion(base, 0) < 2.0, "{base}");
    assert!(completion(psfa, 0) > 2.0, "{psfa}");
    assert!(completion(psfa, 0) > completion(base, 0) * 2.0);
    assert!(completion(psfa, 1) > 0.5, "{psfa}");
    // Counted by the stage in both: 300 creations (open, close), 300 unlinks, 400
    // getattrs at least, the same in both set-ups.
    let total = |m: &Value| m["total_calls"].as_f64().unwrap();
    assert!(total(base) >= 1300.0, "{base}");
    assert!((total(base) - total(psfa)).abs() <= total(base) * 0.01);
    assert!(
        base["seconds_over_capacity"].as_u64().unwrap() > 0,
        "{base}"
    );
    assert_eq!(psfa["seconds_over_capacity"], 0, "{psfa}");
    let csv = std::fs::read_to_string(out.join("PSFA.csv")).unwrap();
    assert!(csv.lines().any(|l| l.starts_with("2,touch,")), "{csv}");
    // The job's own rule holds it uncontrolled too (300/s and its burst), and its calls
    // are counted once, by the first rule that holds them (the totals above match).
    let base_csv = std::fs::read_to_string(out.join("Baseline.csv")).unwrap();
    let stat: Vec<f64> = base_csv
        .lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f.get(1) == Some(&"stat"))
        .filter_map(|f| f.get(2)?.parse().ok())
        .collect();
    assert!(
        !stat.is_empty() && stat.iter().all(|&c| c <= 320.0),
        "{base_csv}"
    );
    // Watched live: the jobs and their rules, a line a second, the dashboard's address
    // under control, the means at the end.
    assert!(
        live.contains("its own rules: stat-pace: op=getattr rate=300/s"),
        "{live}"
    );
    assert!(
        live.contains("live dashboard while it runs: http://127.0.0.1:"),
        "{live}"
    );
    assert!(
        live.contains("all / capacity") && live.contains("/ 0.4k"),
        "{live}"
    );
    assert!(live.contains("With all jobs running"), "{live}");
    assert!(out.join("timelines.png").is_file());

    // A program that fails fails its set-up, with its standard error's tail.
    for (what, job) in [
        ("argv", r#"argv = ["sh", "-c", "echo boom >&2; exit 3"]"#),
        (
            "setup",
            "setup = [\"sh\", \"-c\", \"echo boom >&2; exit 3\"]\nargv = [\"true\"]",
        ),
    ] {
        let scenario = dir.path().join("fails.toml");
        let text = format!(
            "name = \"fails\"\ntimeout = 20\n[pool]\nname = \"md\"\nmatch = \"class=metadata\"\n\
             capacity = \"1k/s\"\n[[job]]\nname = \"f\"\n[job.workload]\nkind = \"command\"\n\
             {job}\n[[setup]]\nname = \"Baseline\"\nalgorithm = \"none\"\n"
        );
        std::fs::write(&scenario, text).unwrap();
        let o = Command::new(sluice_bin())
            .env("SLUICE_STAGE", common::stage_lib())
            .args(["experiment", "run"])
            .arg(&scenario)
            .arg("--out")
            .arg(dir.path().join("fails"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{what}: {err}");
        assert!(
            err.contains("boom") && err.contains("job f"),
            "{what}: {err}"
        );
    }
}

/// Two nodes on this machine: a global and a local per node. Job `a` runs a process on
/// each node, `b` on node 1; the pool holds, and the control plane sees `a` on both.
const TWO_NODES: &str = r#"
name = "two-nodes"
interval = "500ms"
timeout = 60
nodes = 2

[pool]
name = "md"
match = "class=metadata"
capacity = "3k/s"

[trace]
mean = "4k/s"
seconds = 10
seed = 7

[[job]]
name = "a"
processes = 2
nodes = [0, 1]
load = 0.5
limit = "1k/s"

[[job]]
name = "b"
start = 2
nodes = [1]
load = 0.5
limit = "2k/s"

[[setup]]
name = "PSFA"
algorithm = "psfa"
"#;

#[test]
fn a_job_on_two_nodes_is_one_job_of_the_cluster_and_the_pool_holds() {
    let dir = shm_dir();
    let scenario = dir.path().join("two.toml");
    std::fs::write(&scenario, TWO_NODES).unwrap();
    let out = dir.path().join("out");
    let o = Command::new(sluice_bin())
        .env("SLUICE_STAGE", common::stage_lib())
        .args(["experiment", "run"])
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // What the global's `sluice jobs` showed while the jobs ran.
    assert!(
        stdout.contains("job a ran on nodes: node0, node1"),
        "{stdout}"
    );
    assert!(stdout.contains("job b ran on nodes: node1\n"), "{stdout}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    eprintln!("{summary:#}");
    let psfa = &summary["setups"][0];
    assert_eq!(psfa["seconds_over_capacity"], 0, "{psfa}");
    // Every call of the trace was made (4k/s × 10 s), by both jobs.
    let total = psfa["total_calls"].as_f64().unwrap();
    assert!((total - 40_000.0).abs() <= 400.0, "{psfa}");
    let csv = std::fs::read_to_string(out.join("PSFA.csv")).unwrap();
    for job in ["a", "b"] {
        assert!(
            csv.lines()
                .any(|l| l.split(',').nth(1) == Some(job) && !l.ends_with(',')),
            "no allocation for {job}: {csv}"
        );
    }

    // A node the scenario does not have: one line, exit 2, nothing run.
    let err = refused(&scenario, &TWO_NODES.replace("[0, 1]", "[0, 2]"));
    assert!(err.contains("job a: no node 2"), "{err}");
}
