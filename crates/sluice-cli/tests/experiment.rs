//! The scenario runner end to end: a small scenario (two jobs, one pool, Baseline and
//! PSFA) run with the real control plane and real replayers; then compared.

mod common;

use std::process::Command;

use common::{path_str, sluice_bin, tmp_dir};
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
    let dir = tmp_dir();
    let scenario = dir.path().join("small.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let out = dir.path().join("out");
    let o = Command::new(sluice_bin())
        .env("SLUICE_STAGE", common::stage_lib())
        .args(["experiment", "run"])
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
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
    std::fs::write(&scenario, SCENARIO.replace("\"psfa\"", "\"fastest\"")).unwrap();
    let o = Command::new(sluice_bin())
        .args(["experiment", "run"])
        .arg(&scenario)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("fastest"), "{err}");
}
