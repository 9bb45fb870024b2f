//! The controller's status, jobs, pools and pool trees as text.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_core::hostlist;
use sluice_core::rule::{Rate, Unit, format_rate_approx};

use crate::cluster::SegmentNote;
use crate::config::format_duration;
use crate::proto::{JobsReply, OutsideStage, PoolInfo, PoolListReply, StatusReply};

/// `sluice status`: the status lines, then one line per warning.
pub fn status_text(s: &StatusReply, now: SystemTime) -> String {
    status_lines(s, now)
        .iter()
        .map(|l| format!("{l}\n"))
        .chain(s.warnings.iter().map(|w| format!("warning: {w}\n")))
        .collect()
}

/// `n` and `thing`, plural when `n` is not 1: `1 job`, `3 locals`.
fn count(n: u32, thing: &str) -> String {
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

/// The status as an administrator reads it, `now` being the wall clock: who answers and
/// what it holds, then how its cycles go. Cycles are numbered by the wall clock (cycle `k`
/// closes at `k` intervals since the epoch), so the last one's age needs no other field.
pub fn status_lines(s: &StatusReply, now: SystemTime) -> [String; 2] {
    let links = match (s.role.as_str(), s.single_node) {
        (_, true) => " (single node)".to_owned(),
        ("global", _) => format!(": {} connected", count(s.locals, "local")),
        _ if s.global_connected => ": its global connected".to_owned(),
        _ => ": its global NOT connected".to_owned(),
    };
    let what = format!(
        "{} controller{links}, {}, {}, {}",
        s.role,
        count(s.jobs, "job"),
        count(s.pools, "pool"),
        count(s.rules, "rule")
    );
    let every = Duration::try_from_secs_f64(s.interval_s).unwrap_or_default();
    let boundary = Duration::try_from_secs_f64(s.cycle as f64 * s.interval_s).unwrap_or_default();
    let age = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .saturating_sub(boundary);
    let cycles = if s.cycle == 0 {
        format!("no cycle yet; one every {}", format_duration(every))
    } else {
        // Three intervals and a second of slack: a global waits half an interval for
        // late reports, and a busy machine wakes late.
        let late = if age > every * 3 + Duration::from_secs(1) {
            " (late)"
        } else {
            ""
        };
        format!(
            "last cycle {} ago{late}, one every {}; a cycle takes {} (median {})",
            age_text(age),
            format_duration(every),
            micros_text(s.cycle_us_last),
            micros_text(s.cycle_us_median)
        )
    };
    [what, cycles]
}

/// `0.4 s`, `12 s`, `5 min`, `3 h`: as precise as a glance needs.
fn age_text(age: Duration) -> String {
    let s = age.as_secs_f64();
    match s {
        ..10.0 => format!("{s:.1} s"),
        ..120.0 => format!("{s:.0} s"),
        ..7200.0 => format!("{:.0} min", s / 60.0),
        _ => format!("{:.0} h", s / 3600.0),
    }
}

/// `350 µs`, `12 ms`.
fn micros_text(us: f64) -> String {
    if us < 10_000.0 {
        format!("{us:.0} µs")
    } else {
        format!("{:.0} ms", us / 1e3)
    }
}

/// What each pool counts, by name, read from its capacity (`10k/s`, `auto 50MiB/s`); a
/// pool whose capacity cannot be read counts operations.
pub fn pool_units(pools: &PoolListReply) -> BTreeMap<String, Unit> {
    pools
        .pools
        .iter()
        .map(|p| {
            (
                p.name.clone(),
                capacity_rate(p).map_or(Unit::Ops, |r| r.unit),
            )
        })
        .collect()
}

fn capacity_rate(p: &PoolInfo) -> Option<Rate> {
    let typed = p.capacity.strip_prefix("auto ").unwrap_or(&p.capacity);
    typed.parse().ok()
}

/// A pool's capacity as shown: as the administrator set it, or for an automatic pool the
/// one it found, rounded (`auto 12k/s`).
pub fn capacity_text(p: &PoolInfo) -> String {
    match capacity_rate(p) {
        Some(r) if p.capacity.starts_with("auto ") => {
            format!("auto {}", format_rate_approx(r.per_sec as f64, r.unit))
        }
        _ => p.capacity.clone(),
    }
}

/// A figure of `pool` for reading, in the pool's unit (operations when unknown).
pub fn rate_in(units: &BTreeMap<String, Unit>, pool: &str, per_sec: f64) -> String {
    let unit = units.get(pool).copied().unwrap_or(Unit::Ops);
    format_rate_approx(per_sec, unit)
}

/// `sluice jobs`: a row per job and pool (a job in no pool has one row of dashes), in the
/// pools' units, then a line per segment note, then a line per executable of a job outside
/// the stage or using io_uring. When a pool weighs its operations (its units are cost
/// units), a column CALLS after NODES gives the calls per second beside the units of RATE.
pub fn jobs_table(reply: &JobsReply, units: &BTreeMap<String, Unit>) -> String {
    let weighed = reply
        .jobs
        .iter()
        .any(|j| j.pools.values().any(|s| s.calls > 0.0));
    let calls = |s: Option<&crate::proto::PoolShare>| -> String {
        match (weighed, s) {
            (false, _) => String::new(),
            (true, Some(s)) if s.calls > 0.0 => {
                format!("  {}", format_rate_approx(s.calls, Unit::Ops))
            }
            (true, _) => "  -".to_owned(),
        }
    };
    let mut out = format!(
        "{:<12} {:<10} {:<10} {:>10} {:>9} {:>9} {:>5}  NODES{}\n",
        "JOB",
        "USER",
        "POOL",
        "ALLOCATION",
        "RATE",
        "DEMAND",
        "WAIT",
        if weighed { "  CALLS" } else { "" }
    );
    for j in &reply.jobs {
        let nodes = hostlist::compress(&j.nodes);
        if j.pools.is_empty() {
            out += &format!(
                "{:<12} {:<10} {:<10} {:>10} {:>9} {:>9} {:>5}  {nodes}{}\n",
                j.job,
                j.user,
                "-",
                "-",
                "-",
                "-",
                "-",
                calls(None)
            );
        }
        for (pool, s) in &j.pools {
            let rate = |v| rate_in(units, pool, v);
            out += &format!(
                "{:<12} {:<10} {:<10} {:>10} {:>9} {:>9} {:>5.2}  {nodes}{}\n",
                j.job,
                j.user,
                pool,
                rate(s.allocation),
                rate(s.rate),
                rate(s.demand),
                s.wait,
                calls(Some(s))
            );
        }
    }
    for j in &reply.jobs {
        for n in &j.segments {
            out += &format!("job {} on {}: {}\n", j.job, n.node, SegmentNote::from(n));
        }
    }
    for j in &reply.jobs {
        for o in &j.outside {
            out += &format!("job {} on {}: {}\n", j.job, o.node, outside_text(o));
        }
    }
    out
}

/// One executable of a job outside the stage, for reading: `2 process(es) of /bin/prog
/// (pid 123): static, held by a supervisor`.
pub fn outside_text(o: &OutsideStage) -> String {
    let what = match (o.why.as_str(), o.held) {
        ("io_uring", _) => "use io_uring, whose requests are not held".to_owned(),
        (why, true) => format!("without the stage ({why}), held by a supervisor"),
        (why, false) => format!("without the stage ({why}), unheld"),
    };
    format!(
        "{} process(es) of {} (pid {}) {what}",
        o.processes, o.exe, o.pid
    )
}

/// The pools with a tree, each node on a line indented by its depth.
pub fn tree_table(pools: &PoolListReply) -> String {
    let units = pool_units(pools);
    let mut out = String::new();
    for p in pools.pools.iter().filter(|p| !p.tree.is_empty()) {
        let rate = |v| rate_in(&units, &p.name, v);
        out += &format!(
            "pool {} ({}), tree {}\n{:<32} {:>10} {:>9} {:>9} {:>7}\n",
            p.name,
            capacity_text(p),
            p.tree,
            "NODE",
            "ALLOCATION",
            "RATE",
            "DEMAND",
            "WEIGHT"
        );
        for n in &p.nodes {
            let label = format!("{}{}={}", "  ".repeat(n.depth as usize), n.level, n.name);
            out += &format!(
                "{label:<32} {:>10} {:>9} {:>9} {:>7.3}\n",
                rate(n.allocation),
                rate(n.rate),
                rate(n.demand),
                n.weight
            );
        }
    }
    if out.is_empty() {
        out = "no pool has a tree (sluice pool set NAME … --tree account,user,job)\n".to_owned();
    }
    out
}

/// `sluice pool list`: a row per pool, its figures in its unit, then a line per pool
/// that weighs its operations with their costs (and the server they are learned from).
pub fn pools_table(reply: &PoolListReply) -> String {
    let units = pool_units(reply);
    let mut out = format!(
        "{:<14} {:>10} {:<15} {:<13} {:>9} {:>9} {:>5}  MATCH\n",
        "POOL", "CAPACITY", "ALGORITHM", "ESTIMATOR", "ALLOCATED", "USED", "JOBS"
    );
    for p in &reply.pools {
        // An automatic pool: the capacity found, the latency that steers it
        // (the p99 of sampled calls, or the server's mean reply), its target.
        let capacity = if p.target_p99_s > 0.0 {
            let what = if p.latency_from_server { "mean" } else { "p99" };
            format!(
                "{} ({what} {:.2}ms, target {}ms)",
                capacity_text(p),
                p.latency_p99_s * 1e3,
                p.target_p99_s * 1e3
            )
        } else {
            capacity_text(p)
        };
        let rate = |v| rate_in(&units, &p.name, v);
        let estimator = if p.estimator.is_empty() {
            "-"
        } else {
            &p.estimator
        };
        out += &format!(
            "{:<14} {:>10} {:<15} {:<13} {:>9} {:>9} {:>5}  {}\n",
            p.name,
            capacity,
            p.algorithm,
            estimator,
            rate(p.allocated),
            rate(p.used),
            p.jobs,
            p.filter
        );
    }
    // Costs are a list that does not fit a column: a line per pool that weighs.
    for p in reply.pools.iter().filter(|p| !p.costs.is_empty()) {
        let from = if p.costs_from.is_empty() {
            String::new()
        } else {
            format!(" (learned from {})", p.costs_from)
        };
        out += &format!("pool {} costs{from}: {}\n", p.name, p.costs);
    }
    for p in reply
        .pools
        .iter()
        .filter(|p| p.costs.is_empty() && !p.costs_from.is_empty())
    {
        out += &format!(
            "pool {} costs: none learned yet from {}\n",
            p.name, p.costs_from
        );
    }
    out
}
