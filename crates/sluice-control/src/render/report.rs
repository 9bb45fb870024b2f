//! `sluice report`'s table: what sluice did to a job that ended.

use sluice_core::hostlist;
use sluice_core::rule::{Unit, format_amount_approx, format_rate_approx};

use crate::proto::{JobSummary, PoolTotals};
use crate::report::{span, unit};

/// The report for a person: a heading line, then one row per pool over every node and,
/// for a job of more than one node, one row per pool and node.
pub fn report_table(r: &JobSummary, now: f64) -> String {
    let nodes = hostlist::compress(r.nodes.iter().map(|n| n.node.as_str()));
    let mut out = format!(
        "job {} of {} (uid {}) on {nodes}: ran {}, ended {} ago{}\n",
        r.job,
        if r.user.is_empty() { "?" } else { &r.user },
        r.uid,
        span(r.ended - r.started),
        span(now - r.ended),
        if r.running {
            "; still running on another node, so far"
        } else {
            ""
        }
    );
    let mut rows = vec![
        [
            "POOL",
            "NODE",
            "CALLS",
            "BYTES",
            "HELD",
            "ALLOC MIN",
            "MEDIAN",
            "MAX",
        ]
        .map(str::to_owned),
    ];
    for (pool, p) in &r.pools {
        rows.push(row(pool, "all", p));
        if r.nodes.len() > 1 {
            for n in &r.nodes {
                if let Some(p) = n.pools.get(pool) {
                    rows.push(row(pool, &n.node, p));
                }
            }
        }
    }
    if r.pools.is_empty() {
        out.push_str("no pool counted its calls\n");
        out += &outside_lines(r);
        return out;
    }
    let widths: Vec<usize> = (0..8)
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out += &outside_lines(r);
    out
}

/// A line per executable of the job seen outside the stage (or using io_uring) on a node.
fn outside_lines(r: &JobSummary) -> String {
    let mut out = String::new();
    for n in &r.nodes {
        for o in &n.outside {
            out += &format!("on {}: {}\n", n.node, crate::render::admin::outside_text(o));
        }
    }
    out
}

fn row(pool: &str, node: &str, p: &PoolTotals) -> [String; 8] {
    let rate = |x: f64| match p.samples {
        0 => "-".to_owned(),
        _ => format_rate_approx(x, unit(p)),
    };
    [
        pool.to_owned(),
        node.to_owned(),
        format_amount_approx(p.calls as f64, Unit::Ops),
        format_amount_approx(p.bytes as f64, Unit::Bytes),
        span(p.held_s),
        rate(p.alloc_min),
        rate(p.alloc_median),
        rate(p.alloc_max),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::NodeTotals;

    #[test]
    fn a_report_of_two_nodes_in_units() {
        let pool = |calls, held_s| PoolTotals {
            calls,
            held_s,
            alloc_min: 1000.0,
            alloc_median: 2000.0,
            alloc_max: 4000.0,
            samples: 10,
            ..PoolTotals::default()
        };
        let node = |name: &str, calls| NodeTotals {
            node: name.into(),
            started: 0.0,
            ended: 120.0,
            attachments: 1,
            pools: [("md".to_owned(), pool(calls, 15.0))].into(),
            outside: Vec::new(),
        };
        let r = JobSummary {
            job: "4242".into(),
            user: "alice".into(),
            uid: 1000,
            nodes: vec![node("n1", 6000), node("n2", 6000)],
            pools: [("md".to_owned(), pool(12_000, 30.0))].into(),
            started: 0.0,
            ended: 120.0,
            ..JobSummary::default()
        };
        let text = report_table(&r, 180.0);
        assert_eq!(
            text,
            "job 4242 of alice (uid 1000) on n[1-2]: ran 2.0m, ended 1.0m ago\n\
             POOL  NODE  CALLS  BYTES  HELD   ALLOC MIN  MEDIAN  MAX\n\
             md    all   12k    0B     30.0s  1.0k/s     2.0k/s  4.0k/s\n\
             md    n1    6.0k   0B     15.0s  1.0k/s     2.0k/s  4.0k/s\n\
             md    n2    6.0k   0B     15.0s  1.0k/s     2.0k/s  4.0k/s\n"
        );
    }
}
