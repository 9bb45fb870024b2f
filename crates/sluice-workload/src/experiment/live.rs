//! The live view of a run (`sluice experiment run --live`, `sluice demo`): what an
//! administrator watching sees. Before the set-ups, the scenario (its description, the
//! pool, each job's arrival and rules); during each set-up, a line a second with every
//! job's rate (and its allocation, when controlled) and their total against the pool's
//! capacity; at the end, each job's mean rate over the seconds when all jobs ran, the
//! set-ups side by side.

use std::collections::BTreeMap;

use super::scenario::{Scenario, Setup};
use super::summary::{OVER_TOLERANCE, Outcome};

/// Seconds after the last arrival before the closing table's means start: an algorithm
/// grows a newcomer's share over a few intervals, and the means are of the settled
/// division.
const SETTLE_S: f64 = 2.0;

/// The live view of one scenario's run.
pub(super) struct Live<'a> {
    sc: &'a Scenario,
    /// Whether the rates are bytes (shown in MB/s) rather than calls.
    bytes: bool,
}

impl<'a> Live<'a> {
    pub(super) fn new(sc: &'a Scenario) -> Self {
        Live {
            sc,
            bytes: sc.has_data(),
        }
    }

    /// A rate as shown: calls in thousands (`15.9k`), bytes in MB (`12.3M`).
    fn rate(&self, v: f64) -> String {
        match self.bytes {
            true => format!("{:.1}M", v / 1e6),
            false => format!("{:.1}k", v / 1e3),
        }
    }

    fn unit(&self) -> &'static str {
        match self.bytes {
            true => "bytes/s",
            false => "calls/s",
        }
    }

    /// The scenario, before its first set-up.
    pub(super) fn scenario(&self) {
        let sc = self.sc;
        if let Some(d) = &sc.description {
            println!("{}\n", d.trim_end());
        }
        let nodes = match sc.nodes {
            1 => "one node".to_owned(),
            n => format!("{n} nodes"),
        };
        println!(
            "Pool '{}' ({}): capacity {}/s on {nodes}, divided every {} ms under control.",
            sc.pool.name,
            sc.pool.matches,
            self.rate(sc.pool.capacity.per_sec as f64),
            sc.interval.as_millis()
        );
        for j in &sc.jobs {
            let rules = match j.rules.is_empty() {
                true => String::new(),
                false => format!("  its own rules: {}", j.rules.join("; ")),
            };
            println!(
                "  {:<8} from t={:>3} s{rules}",
                j.name,
                j.start.as_secs_f64()
            );
        }
    }

    /// A set-up's start: what its table shows, the dashboard's address, the header.
    pub(super) fn setup(&self, setup: &Setup, dashboard: Option<&str>) {
        let controlled = setup.algorithm != "none";
        println!(
            "  each second, each job's {}{}:",
            self.unit(),
            if controlled { " / its allocation" } else { "" }
        );
        if let Some(url) = dashboard {
            println!("  live dashboard while it runs: {url}/");
        }
        let mut line = format!("\n  {:>6}", "second");
        for j in &self.sc.jobs {
            line += &format!("  {:>15}", j.name);
        }
        println!("{line}  {:>17}", "all / capacity");
    }

    /// Second `s` of a set-up: each job's rate (and allocation), the total.
    pub(super) fn row(
        &self,
        s: u64,
        calls: &BTreeMap<(usize, u64), f64>,
        allocation: &BTreeMap<(usize, u64), f64>,
    ) {
        let capacity = self.sc.pool.capacity.per_sec as f64;
        let mut line = format!("  {s:>6}");
        let mut total = 0.0;
        for i in 0..self.sc.jobs.len() {
            let cell = match (calls.get(&(i, s)), allocation.get(&(i, s))) {
                (None, None) => "-".to_owned(),
                (c, None) => self.rate(c.copied().unwrap_or(0.0)),
                (c, Some(a)) => format!(
                    "{} / {}",
                    self.rate(c.copied().unwrap_or(0.0)),
                    self.rate(*a)
                ),
            };
            total += calls.get(&(i, s)).copied().unwrap_or(0.0);
            line += &format!("  {cell:>15}");
        }
        let over = match total > capacity * (1.0 + OVER_TOLERANCE) {
            true => "  over capacity",
            false => "",
        };
        println!(
            "{line}  {:>8} / {}{over}",
            self.rate(total),
            self.rate(capacity)
        );
    }

    /// After the last set-up: each job's mean rate (and allocation) over the seconds
    /// when every job ran, settled, one column per set-up.
    pub(super) fn closing(&self, outcomes: &[Outcome]) {
        let Some(first) = outcomes.first() else {
            return;
        };
        let (from, _) = first.together(SETTLE_S);
        println!(
            "\nWith all jobs running (from second {from} to the first job's end), mean {}:\n",
            self.unit()
        );
        let mut head = format!("  {:<8}", "job");
        for o in outcomes {
            head += &format!("  {:>24}", format!("{} ({})", o.setup, o.algorithm));
        }
        println!("{head}");
        let n = self.sc.jobs.len();
        let mut totals = vec![(0.0, 0.0); outcomes.len()];
        for i in 0..=n {
            let name = self.sc.jobs.get(i).map_or("all", |j| j.name.as_str());
            let mut line = format!("  {name:<8}");
            for (k, o) in outcomes.iter().enumerate() {
                let (from, to) = o.together(SETTLE_S);
                let mean = |m: &BTreeMap<(usize, u64), f64>| {
                    let v: Vec<f64> = (from..to).filter_map(|s| m.get(&(i, s)).copied()).collect();
                    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
                };
                let (rate, allocation) = match i < n {
                    true => (mean(&o.calls), mean(&o.allocation)),
                    false => (Some(totals[k].0), Some(totals[k].1)),
                };
                if i < n {
                    totals[k].0 += rate.unwrap_or(0.0);
                    totals[k].1 += allocation.unwrap_or(0.0);
                }
                let cell = match (rate, allocation) {
                    (None, _) => "–".to_owned(),
                    (Some(r), _) if o.algorithm == "none" => self.rate(r),
                    (Some(r), a) => format!("{} / {}", self.rate(r), self.rate(a.unwrap_or(0.0))),
                };
                line += &format!("  {cell:>24}");
            }
            if i == n {
                let capacity = self.sc.pool.capacity.per_sec as f64;
                line += &format!("   pool capacity {}", self.rate(capacity));
            }
            println!("{line}");
        }
    }
}
