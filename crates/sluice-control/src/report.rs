//! Job reports: what sluice did to a job, made when it ends.
//!
//! The totals are made where they are exact: on each node, when the job's last launcher
//! there is gone, the local reads the job's segment one last time (calls admitted, bytes
//! charged and thread-seconds held, per pool, summed by the stage since the segment was
//! made, so a restart of the local loses none of them) and sends them, one node's row,
//! to the controller that divides the pools: its global, or itself in single-node mode.
//! That controller keeps one report per job: a row per node that reported the job's end,
//! their sums per pool, and the job's whole allocation over time, which it alone sees
//! (it samples every job's allocation each interval while the job runs). The report is
//! saved in its state directory (`reports/`) at every row, logged as one line, kept for
//! `report_retention`, and read through the Admin service's `Summary`: by the job's own
//! user, or by an administrator.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_core::hostlist;
use sluice_core::rule::{Unit, format_amount_approx, format_rate_approx};

use crate::cluster::JobView;
use crate::config::persist::write_atomically;
use crate::proto::{JobSummary, NodeTotals, PoolTotals};
use crate::segment_file::file_safe;

/// How long reports are kept unless `report_retention` says otherwise: a week, long
/// enough for a user to ask on Monday why Friday's job was slow.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Relative width of an allocation sample's bucket: a median is exact to half a percent.
const STEP: f64 = 1.01;

/// A rate sampled once per interval: least, most, and a histogram of log-spaced buckets
/// for the median, so that a job of a month costs a few hundred numbers, not millions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Allocation {
    min: f64,
    max: f64,
    samples: u32,
    buckets: BTreeMap<i32, u32>,
}

impl Allocation {
    /// Adds one interval's rate.
    pub fn add(&mut self, rate: f64) {
        if !rate.is_finite() {
            return;
        }
        let rate = rate.max(0.0);
        if self.samples == 0 {
            (self.min, self.max) = (rate, rate);
        }
        self.min = self.min.min(rate);
        self.max = self.max.max(rate);
        self.samples += 1;
        *self.buckets.entry(bucket(rate)).or_default() += 1;
    }

    /// The middle sample, to within a bucket (and never outside least and most).
    pub fn median(&self) -> f64 {
        let middle = self.samples.div_ceil(2);
        let mut seen = 0;
        for (&b, &n) in &self.buckets {
            seen += n;
            if seen >= middle {
                return rate_of(b).clamp(self.min, self.max);
            }
        }
        0.0
    }

    /// Writes least, median, most and the number of samples into `p`.
    pub fn write(&self, p: &mut PoolTotals) {
        if self.samples == 0 {
            return;
        }
        p.alloc_min = self.min;
        p.alloc_median = self.median();
        p.alloc_max = self.max;
        p.samples = self.samples;
    }
}

fn bucket(rate: f64) -> i32 {
    if rate < 1e-6 {
        i32::MIN
    } else {
        (rate.ln() / STEP.ln()).round() as i32
    }
}

fn rate_of(bucket: i32) -> f64 {
    match bucket {
        i32::MIN => 0.0,
        b => STEP.powi(b),
    }
}

/// Seconds since the epoch, now.
pub fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The reports a coordinator keeps, and the allocations of its running jobs.
#[derive(Debug, Default)]
pub struct Reports {
    /// `STATE_DIR/reports`; `None` keeps them in memory only.
    dir: Option<PathBuf>,
    retention: Duration,
    kept: BTreeMap<String, JobSummary>,
    /// Running jobs: by job, by pool, the job's whole allocation each interval.
    running: BTreeMap<String, BTreeMap<String, Allocation>>,
    /// When reports were last pruned, seconds since the epoch.
    pruned: f64,
}

impl Reports {
    /// The reports saved under `state_dir`, those older than `retention` removed; a file
    /// that cannot be read is logged and left alone.
    pub fn open(state_dir: Option<&Path>, retention: Duration) -> Reports {
        let mut reports = Reports {
            dir: state_dir.map(|d| d.join("reports")),
            retention,
            ..Reports::default()
        };
        if let Some(dir) = &reports.dir {
            if let Err(e) = std::fs::create_dir_all(dir) {
                tracing::warn!(dir = %dir.display(), "job reports not kept: {e}");
            }
            for path in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = path.path();
                if path.extension().is_none_or(|e| e != "json") {
                    continue;
                }
                match std::fs::read(&path)
                    .map_err(|e| e.to_string())
                    .and_then(|b| {
                        serde_json::from_slice::<JobSummary>(&b).map_err(|e| e.to_string())
                    }) {
                    Ok(s) => {
                        reports.kept.insert(s.job.clone(), s);
                    }
                    Err(e) => tracing::warn!(path = %path.display(), "unreadable job report: {e}"),
                }
            }
        }
        reports.prune(now_s());
        reports
    }

    /// Keeps reports for `retention` from now on.
    pub fn set_retention(&mut self, retention: Duration) {
        self.retention = retention;
    }

    /// One interval's allocations of the running jobs; the jobs gone since the last call
    /// have their report's allocation written one last time.
    pub fn sample(&mut self, jobs: &[JobView]) {
        // Pruned now and then, not every interval: a tenth of the retention, at most a
        // minute, bounds how long a report outlives it.
        let now = now_s();
        let every = (self.retention.as_secs_f64() / 10.0).min(60.0);
        if now - self.pruned >= every {
            self.prune(now);
        }
        let mut now = BTreeSet::new();
        for j in jobs {
            now.insert(j.job.as_str());
            let pools = self.running.entry(j.job.clone()).or_default();
            for (pool, share) in &j.pools {
                pools.entry(pool.clone()).or_default().add(share.allocation);
            }
        }
        let gone: Vec<String> = self
            .running
            .keys()
            .filter(|j| !now.contains(j.as_str()))
            .cloned()
            .collect();
        for job in gone {
            let alloc = self.running.remove(&job);
            if let Some(report) = self.kept.get_mut(&job) {
                sum_pools(report, alloc.as_ref());
                save(self.dir.as_deref(), report);
            }
        }
    }

    /// A node's row of a job that ended there (`row` holds one node, named by the caller
    /// that knows which node sent it): added to the job's report, saved and logged.
    /// A job attached again on a node where it had ended (a Slurm allocation's next
    /// step) adds to that node's row.
    pub fn finished(&mut self, node: &str, row: JobSummary) {
        let now = now_s();
        self.prune(now);
        let report = self
            .kept
            .entry(row.job.clone())
            .or_insert_with(|| JobSummary {
                job: row.job.clone(),
                user: row.user.clone(),
                uid: row.uid,
                started: row.started,
                ..JobSummary::default()
            });
        for mut n in row.nodes {
            n.node = node.to_owned();
            match report.nodes.iter_mut().find(|r| r.node == n.node) {
                Some(had) => add_node(had, n),
                None => report.nodes.push(n),
            }
        }
        report.started = report
            .nodes
            .iter()
            .map(|n| n.started)
            .fold(report.started, f64::min);
        report.ended = report.nodes.iter().map(|n| n.ended).fold(0.0, f64::max);
        sum_pools(report, self.running.get(&row.job));
        save(self.dir.as_deref(), report);
        tracing::info!(job = %report.job, user = %report.user, node, "job report: {}", line(report));
    }

    /// The report of `job`, if one is kept; `running` says whether the job still runs
    /// on some node (its report is then partial).
    pub fn get(&self, job: &str, running: bool) -> Option<JobSummary> {
        let mut report = self.kept.get(job)?.clone();
        report.running = running;
        Some(report)
    }

    /// Removes the reports of jobs that ended more than the retention before `now`.
    pub fn prune(&mut self, now: f64) {
        self.pruned = now;
        let cutoff = now - self.retention.as_secs_f64();
        let old: Vec<String> = self
            .kept
            .values()
            .filter(|r| r.ended < cutoff)
            .map(|r| r.job.clone())
            .collect();
        for job in old {
            self.kept.remove(&job);
            if let Some(dir) = &self.dir {
                let _ = std::fs::remove_file(path_of(dir, &job));
            }
            tracing::info!(job = %job, "job report removed: older than report_retention");
        }
    }
}

/// Adds a later attachment's row to a node's.
fn add_node(had: &mut NodeTotals, more: NodeTotals) {
    had.started = had.started.min(more.started);
    had.ended = had.ended.max(more.ended);
    had.attachments += more.attachments.max(1);
    for o in more.outside {
        crate::local::unstaged::merge(&mut had.outside, o);
    }
    for (pool, p) in more.pools {
        let t = had.pools.entry(pool).or_default();
        // The median of two stretches is not known from theirs: the longer one's stands.
        let (min, median, max) = match (t.samples, p.samples) {
            (_, 0) => (t.alloc_min, t.alloc_median, t.alloc_max),
            (0, _) => (p.alloc_min, p.alloc_median, p.alloc_max),
            (a, b) => (
                t.alloc_min.min(p.alloc_min),
                if b > a {
                    p.alloc_median
                } else {
                    t.alloc_median
                },
                t.alloc_max.max(p.alloc_max),
            ),
        };
        (t.alloc_min, t.alloc_median, t.alloc_max) = (min, median, max);
        t.samples += p.samples;
        t.calls += p.calls;
        t.bytes += p.bytes;
        t.held_s += p.held_s;
        t.in_bytes |= p.in_bytes;
    }
}

/// The report's per-pool sums over its nodes, with the job's whole allocation: sampled
/// while it ran (`alloc`), else as last written, else its one node's.
fn sum_pools(report: &mut JobSummary, alloc: Option<&BTreeMap<String, Allocation>>) {
    let mut pools: BTreeMap<String, PoolTotals> = BTreeMap::new();
    for n in &report.nodes {
        for (name, p) in &n.pools {
            let t = pools.entry(name.clone()).or_default();
            t.calls += p.calls;
            t.bytes += p.bytes;
            t.held_s += p.held_s;
            t.in_bytes |= p.in_bytes;
        }
    }
    for (name, t) in &mut pools {
        let sampled = alloc.and_then(|a| a.get(name)).filter(|a| a.samples > 0);
        let before = report.pools.get(name).filter(|p| p.samples > 0);
        let only_node = match report.nodes.as_slice() {
            [n] => n.pools.get(name),
            _ => None,
        };
        if let Some(a) = sampled {
            a.write(t);
        } else if let Some(p) = before.or(only_node) {
            (t.alloc_min, t.alloc_median, t.alloc_max, t.samples) =
                (p.alloc_min, p.alloc_median, p.alloc_max, p.samples);
        }
    }
    report.pools = pools;
}

/// `STATE_DIR/reports/SAFE-HASH.json`: the job id made safe for a file name, and a hash
/// of the id itself, so that two ids made alike stay two files.
fn path_of(dir: &Path, job: &str) -> PathBuf {
    // FNV-1a: stable across releases and platforms, which std's hasher is not.
    let hash = job.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    dir.join(format!("{}-{hash:016x}.json", file_safe(job)))
}

/// Saves `report`; a failure is logged (the report stays readable until a restart).
fn save(dir: Option<&Path>, report: &JobSummary) {
    let Some(dir) = dir else { return };
    let path = path_of(dir, &report.job);
    let text = serde_json::to_vec_pretty(report).expect("a report serializes");
    if let Err(e) = write_atomically(&path, &text) {
        tracing::warn!(path = %path.display(), "cannot save the job report: {e}");
    }
}

/// The pool's unit, for printing.
pub fn unit(p: &PoolTotals) -> Unit {
    match p.in_bytes {
        true => Unit::Bytes,
        false => Unit::Ops,
    }
}

/// One line of a report, as the log and Slurm's AdminComment hold it:
/// `sluice: n[1-2] 2.0m; md: 12k calls, held 31.2s, alloc 4.0k/s (3.1k/s..4.0k/s)`.
pub fn line(r: &JobSummary) -> String {
    let nodes = hostlist::compress(r.nodes.iter().map(|n| n.node.as_str()));
    let mut out = format!("sluice: {nodes} {}", span(r.ended - r.started));
    if r.pools.is_empty() {
        out.push_str("; no pool");
    }
    for (name, p) in &r.pools {
        out.push_str(&format!(
            "; {name}: {} calls",
            format_amount_approx(p.calls as f64, Unit::Ops)
        ));
        if p.bytes > 0 {
            out.push_str(&format!(
                " {}",
                format_amount_approx(p.bytes as f64, Unit::Bytes)
            ));
        }
        out.push_str(&format!(", held {}", span(p.held_s)));
        if p.samples > 0 {
            let rate = |x: f64| format_rate_approx(x, unit(p));
            out.push_str(&format!(
                ", alloc {} ({}..{})",
                rate(p.alloc_median),
                rate(p.alloc_min),
                rate(p.alloc_max)
            ));
        }
    }
    out
}

/// A length of time for a person: `850ms`, `31.2s`, `12.5m`, `3.2h`, `2.1d`.
pub fn span(secs: f64) -> String {
    let secs = secs.max(0.0);
    match secs {
        s if s < 1.0 => format!("{:.0}ms", s * 1e3),
        s if s < 60.0 => format!("{s:.1}s"),
        s if s < 3600.0 => format!("{:.1}m", s / 60.0),
        s if s < 86400.0 => format!("{:.1}h", s / 3600.0),
        s => format!("{:.1}d", s / 86400.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A constant allocation's median is the allocation itself, not its bucket's rate.
    #[test]
    fn allocation_median_within_a_bucket_and_exact_when_constant() {
        let mut a = Allocation::default();
        for _ in 0..10 {
            a.add(4000.0);
        }
        assert_eq!(a.median(), 4000.0);
        let mut a = Allocation::default();
        for r in [100.0, 2000.0, 3000.0, 50_000.0, 0.0] {
            a.add(r);
        }
        assert!(
            (a.median() - 2000.0).abs() / 2000.0 < 0.006,
            "{}",
            a.median()
        );
        let mut p = PoolTotals::default();
        a.write(&mut p);
        assert_eq!((p.alloc_min, p.alloc_max, p.samples), (0.0, 50_000.0, 5));
    }

    fn row(node: &str, calls: u64, ended: f64) -> JobSummary {
        let pool = PoolTotals {
            calls,
            held_s: 1.5,
            alloc_min: 10.0,
            alloc_median: 20.0,
            alloc_max: 30.0,
            samples: 4,
            ..PoolTotals::default()
        };
        JobSummary {
            job: "7".into(),
            user: "alice".into(),
            uid: 1000,
            nodes: vec![NodeTotals {
                node: node.into(),
                started: ended - 10.0,
                ended,
                attachments: 1,
                pools: BTreeMap::from([("md".to_owned(), pool)]),
                outside: Vec::new(),
            }],
            started: ended - 10.0,
            ended,
            ..JobSummary::default()
        }
    }

    /// Rows of two nodes sum; a second attachment on a node adds to its row; the report
    /// is saved and read back; past the retention it is gone, file and all.
    #[test]
    fn rows_add_up_are_kept_and_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let now = now_s();
        let mut r = Reports::open(Some(dir.path()), Duration::from_secs(60));
        r.finished("n1", row("x", 100, now));
        r.finished("n2", row("x", 50, now));
        r.finished("n1", row("x", 10, now));
        let got = r.get("7", false).unwrap();
        assert_eq!(got.nodes.len(), 2);
        assert_eq!(got.nodes[0].attachments, 2);
        assert_eq!(got.pools["md"].calls, 160);
        assert_eq!(got.pools["md"].held_s, 4.5);
        let again = Reports::open(Some(dir.path()), Duration::from_secs(60));
        assert_eq!(again.get("7", false), Some(got));
        let mut later = Reports::open(Some(dir.path()), Duration::from_secs(60));
        later.prune(now + 61.0);
        assert!(later.get("7", false).is_none());
        let files = std::fs::read_dir(dir.path().join("reports"))
            .unwrap()
            .count();
        assert_eq!(files, 0);
    }
}
