//! The figures of `sluice load` and `sluice bench` as they are printed: a line per second
//! and a total for the loads, a sentence or one JSON object for the benchmarks.

use crate::bench_control::ControlBench;
use crate::bench_cycle::CycleBench;
use crate::bench_period::PeriodRow;
use crate::bench_stage::StageBench;
use crate::ior::IorReport;
use crate::load::LoadReport;

/// A closed loop's second: `second,operations` for scripts, else a line for a person.
pub fn load_second(csv: bool, sec: u64, n: u64) -> String {
    if csv {
        format!("{sec},{n}\n")
    } else {
        format!("{sec:>4}s {n:>10} ops/s\n")
    }
}

/// A closed loop's total (nothing for scripts).
pub fn load_total(csv: bool, report: &LoadReport) -> String {
    if csv {
        return String::new();
    }
    format!(
        "total {} ops in {:.2} s: {:.0} ops/s\n",
        report.total,
        report.elapsed_s,
        report.rate()
    )
}

/// Bytes as MiB, for reports.
fn mib(bytes: f64) -> f64 {
    bytes / f64::from(1 << 20)
}

/// An IOR-like load's second: `second,calls,bytes` for scripts, else a line for a person.
pub fn ior_second(csv: bool, sec: u64, calls: u64, bytes: u64) -> String {
    if csv {
        format!("{sec},{calls},{bytes}\n")
    } else {
        format!(
            "{sec:>4}s {calls:>8} calls/s {:>10.1} MiB/s\n",
            mib(bytes as f64)
        )
    }
}

/// An IOR-like load's phases and total (nothing for scripts).
pub fn ior_total(csv: bool, report: &IorReport) -> String {
    if csv {
        return String::new();
    }
    let mut out = String::new();
    for (i, p) in report.phases.iter().enumerate() {
        out += &format!(
            "phase {}: I/O from {:.2} s for {:.2} s, {:.1} MiB at {:.1} MiB/s\n",
            i + 1,
            p.start_s,
            p.io_s,
            mib(p.bytes as f64),
            mib(p.bytes as f64) / p.io_s.max(1e-9)
        );
    }
    out + &format!(
        "total {:.1} MiB in {:.2} s\n",
        mib(report.bytes as f64),
        report.elapsed_s
    )
}

/// `sluice bench stage`'s figures.
pub fn stage(b: &StageBench, json: bool) -> String {
    if json {
        let threads: Vec<_> = b
            .threads
            .iter()
            .map(|t| serde_json::json!({"n": t.n, "mops": round2(t.mops)}))
            .collect();
        let v = serde_json::json!({
            "managed_ns_per_op": round2(b.managed_ns_per_op),
            "unmanaged_ns_per_op": round2(b.unmanaged_ns_per_op),
            "threads": threads,
        });
        return format!("{v}\n");
    }
    let mut out = format!("managed, unthrottled: {:>7.1} ns/op\n", b.managed_ns_per_op);
    out += &format!(
        "unmanaged:            {:>7.1} ns/op\n",
        b.unmanaged_ns_per_op
    );
    let one = b.threads.first().map_or(1.0, |t| t.mops);
    for t in &b.threads {
        out += &format!(
            "{} thread(s):          {:>7.2} Mops/s ({:.2}x)\n",
            t.n,
            t.mops,
            t.mops / one
        );
    }
    out
}

/// `sluice bench cycle`'s figures, for `locals` nodes, with churn or not, down `tree`
/// (as the administrator wrote it) or flat.
pub fn cycle(b: &CycleBench, locals: usize, churn: bool, tree: Option<&str>, json: bool) -> String {
    if json {
        let v = serde_json::json!({
            "locals": locals,
            "jobs": b.jobs,
            "churn": churn,
            "tree": tree,
            "median_us": round2(b.median_us),
            "p99_us": round2(b.p99_us),
        });
        return format!("{v}\n");
    }
    let churn = if churn {
        ", a job starting and one ending every cycle"
    } else {
        ""
    };
    let churn = match tree {
        Some(tree) => format!("{churn}, divided down the tree {tree}"),
        None => churn.to_owned(),
    };
    format!(
        "{} nodes, {} jobs{churn}: one cycle's computation median {:.0} µs, p99 {:.0} µs \
         ({:.3} µs per job; caches warm)\n",
        locals,
        b.jobs,
        b.median_us,
        b.p99_us,
        b.median_us / b.jobs as f64,
    )
}

/// `sluice bench control`'s figures, `interval` as the administrator wrote it.
pub fn control(b: &ControlBench, interval: &str, json: bool) -> String {
    if json {
        let v = serde_json::json!({
            "locals": b.locals,
            "median_us": b.median_us.map(round2),
            "p99_us": b.p99_us.map(round2),
            "cpu_us_per_local": round2(b.cpu_us_per_local),
            "timeouts": b.timeouts,
        });
        return format!("{v}\n");
    }
    format!(
        "{} locals, {} cycles of {}: cycle median {}, p99 {}; \
         global CPU {:.2} µs per local per cycle (simulator {:.2})\n\
         medians from the boundary: last report sent {}, first rates {}; \
         {} timeout(s); rates reached at least {} locals per cycle\n",
        b.locals,
        b.cycles,
        interval,
        ms(b.median_us),
        ms(b.p99_us),
        b.cpu_us_per_local,
        b.simulator_cpu_us_per_local,
        ms(b.sent_median_us),
        ms(b.first_median_us),
        b.timeouts,
        b.min_reached
    )
}

/// Microseconds as milliseconds, or "none" when no cycle completed.
fn ms(us: Option<f64>) -> String {
    us.map_or_else(|| "none".to_owned(), |us| format!("{:.2} ms", us / 1e3))
}

/// `sluice bench period`'s figures: a Markdown table, or one JSON array of the rows.
pub fn period(rows: &[PeriodRow], json: bool) -> String {
    if json {
        let v: Vec<_> = rows
            .iter()
            .map(|r| serde_json::json!({"samples": r.samples, "what": r.what, "us": round2(r.us)}))
            .collect();
        return format!("{}\n", serde_json::Value::from(v));
    }
    let mut out = String::from("| window (samples) | what | µs per detection |\n|---|---|---|\n");
    for r in rows {
        out += &format!("| {} | {} | {:.0} |\n", r.samples, r.what, r.us);
    }
    out
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
