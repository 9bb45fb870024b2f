//! The controller's status, jobs, pools and pool trees as text.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_core::hostlist;
use sluice_core::rule::{Rate, Unit, format_rate_approx};

use crate::cluster::SegmentNote;
use crate::config::format_duration;
use crate::proto::{
    JobsReply, OutsideStage, Period, PoolInfo, PoolListReply, PoolShare, StatusReply,
};

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
/// units), a column CALLS after NODES gives the calls per second beside the units of RATE;
/// when a pool's algorithm places jobs by their I/O period (SET-10), a column PERIOD last
/// says by which ([`period_text`]).
pub fn jobs_table(reply: &JobsReply, units: &BTreeMap<String, Unit>) -> String {
    let shares = || reply.jobs.iter().flat_map(|j| j.pools.values());
    let weighed = shares().any(|s| s.calls > 0.0);
    let periodic = shares().any(|s| s.period.is_some());
    let last = |s: Option<&PoolShare>| -> String {
        let mut text = String::new();
        if weighed {
            text += &match s {
                Some(s) if s.calls > 0.0 => format!("  {}", format_rate_approx(s.calls, Unit::Ops)),
                _ => "  -".to_owned(),
            };
        }
        if periodic {
            text += "  ";
            text += &s
                .and_then(|s| s.period.as_ref())
                .map_or("-".to_owned(), period_text);
        }
        text
    };
    let mut out = format!(
        "{:<12} {:<10} {:<10} {:>10} {:>9} {:>9} {:>5}  NODES{}{}\n",
        "JOB",
        "USER",
        "POOL",
        "ALLOCATION",
        "RATE",
        "DEMAND",
        "WAIT",
        if weighed { "  CALLS" } else { "" },
        if periodic { "  PERIOD" } else { "" }
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
                last(None)
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
                last(Some(s))
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

/// A job's I/O period as SET-10 places it: `38.4s detected (0.97)` (the last
/// detection's confidence), `1.92s given`, `36s silence` (set10-silence's lower bound),
/// `unknown` before any detection, `unknown, seen 71.2s at 0.41` after one not confident
/// enough, or whose period's bounds straddle two sets.
pub fn period_text(p: &Period) -> String {
    let seen = (p.detected > 0.0).then(|| (seconds_text(p.detected), p.confidence));
    match (p.from.as_str(), seen) {
        ("", None) => "unknown".to_owned(),
        ("", Some((at, confidence))) => format!("unknown, seen {at} at {confidence:.2}"),
        ("detected", _) => format!("{} detected ({:.2})", seconds_text(p.seconds), p.confidence),
        (from, _) => format!("{} {from}", seconds_text(p.seconds)),
    }
}

/// Seconds to three significant figures: `1.92s`, `38.4s`, `384s`.
fn seconds_text(s: f64) -> String {
    let decimals = match s {
        s if s < 10.0 => 2,
        s if s < 100.0 => 1,
        _ => 0,
    };
    format!("{s:.decimals$}s")
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::JobInfo;

    fn period(seconds: f64, from: &str, detected: f64, confidence: f64) -> Period {
        Period {
            seconds,
            from: from.to_owned(),
            detected,
            confidence,
            ..Period::default()
        }
    }

    #[test]
    fn a_period_says_where_it_comes_from_and_how_sure_the_detection_is() {
        let cases = [
            (
                period(38.4, "detected", 38.1, 0.97),
                "38.4s detected (0.97)",
            ),
            (period(1.92, "given", 0.0, 0.0), "1.92s given"),
            (period(384.0, "silence", 0.0, 0.0), "384s silence"),
            (period(0.0, "", 0.0, 0.0), "unknown"),
            (period(0.0, "", 71.24, 0.41), "unknown, seen 71.2s at 0.41"),
        ];
        for (p, text) in cases {
            assert_eq!(period_text(&p), text);
        }
    }

    #[test]
    fn the_period_column_shows_only_when_a_pool_places_jobs_by_period() {
        let job = |name: &str, p: Option<Period>| JobInfo {
            job: name.to_owned(),
            user: "alice".to_owned(),
            pools: [(
                "bw".to_owned(),
                PoolShare {
                    period: p,
                    ..PoolShare::default()
                },
            )]
            .into(),
            ..JobInfo::default()
        };
        let units = BTreeMap::new();
        let plain = JobsReply {
            jobs: vec![job("1", None)],
        };
        assert!(!jobs_table(&plain, &units).contains("PERIOD"));
        let set10 = JobsReply {
            jobs: vec![
                job("1", Some(period(1.92, "given", 0.0, 0.0))),
                job("2", None),
            ],
        };
        let text = jobs_table(&set10, &units);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].ends_with("NODES  PERIOD"), "{text}");
        assert!(lines[1].ends_with("  1.92s given"), "{text}");
        assert!(lines[2].ends_with("  -"), "{text}");
    }
}
