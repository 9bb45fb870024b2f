//! What a set-up did: per-second figures, the summary measures, the files written, and
//! summaries side by side.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::plot::{Panel, Series, png};
use serde::{Deserialize, Serialize};

use super::iosets::{self, IoSetsMeasures};
use super::scenario::{CephSpec, LatencyTarget, Scenario, Workload};
use super::{ExperimentError, Result};
use crate::error::Doing as _;

/// A second's total may pass the capacity by this fraction before it counts as over: the
/// replayers' seconds start at their own instants, so a wall-clock second holds parts of
/// two of theirs.
pub(super) const OVER_TOLERANCE: f64 = 0.05;

/// One set-up's run.
pub struct Outcome {
    /// The set-up's name.
    pub setup: String,
    /// Its algorithm (`none`: uncontrolled).
    pub algorithm: String,
    /// The jobs' names, in the scenario's order.
    pub jobs: Vec<String>,
    /// When each job arrived (s).
    pub starts: Vec<f64>,
    /// When each job's last process ended (s); `None` if it was stopped at the timeout.
    pub ends: Vec<Option<f64>>,
    /// Calls made by job `i` in second `s`.
    pub calls: BTreeMap<(usize, u64), f64>,
    /// Job `i`'s allocation sampled at second `s`.
    pub allocation: BTreeMap<(usize, u64), f64>,
    /// The data processes' stretches of I/O and of computing.
    pub phases: Vec<PhaseRecord>,
    /// Each job's limit in this set-up.
    pub limits: Vec<Option<f64>>,
    /// Each job's desired rate in this set-up.
    pub desired: Vec<Option<f64>>,
    /// With `[cephfs]`: the MDS's requests, mean reply latency and queue, per second
    /// (the reading ending at that second).
    pub mds: BTreeMap<u64, sluice_control::source::ServerReading>,
    /// An automatic pool's capacity as the controller found it, sampled at second `s`
    /// (empty for a pool of fixed capacity).
    pub capacity: BTreeMap<u64, f64>,
    /// Job `i`'s I/O period as the pool's algorithm placed it, sampled at second `s`
    /// (only where the algorithm places jobs by their period: SET-10).
    pub periods: BTreeMap<(usize, u64), PeriodSample>,
}

/// A job's I/O period as `sluice jobs --json` gave it at one sample.
#[derive(Clone, Debug, PartialEq)]
pub struct PeriodSample {
    /// The period the job is placed by, seconds; 0 while unknown.
    pub seconds: f64,
    /// Where it comes from: `given`, `detected`, `silence`; empty while unknown.
    pub from: String,
    /// The last detection's period (0 before one) and confidence.
    pub detected: f64,
    /// See `detected`.
    pub confidence: f64,
}

/// A stretch of one data process's run, on the set-up's clock.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseRecord {
    /// The job.
    pub job: usize,
    /// The process (unique within the set-up).
    pub process: usize,
    /// I/O (else computing).
    pub io: bool,
    /// Its start, s from the set-up's start.
    pub start: f64,
    /// Its end.
    pub end: f64,
    /// Bytes moved.
    pub bytes: f64,
}

impl Outcome {
    /// The last second with calls counted.
    pub(super) fn last_second(&self) -> u64 {
        self.calls.keys().map(|k| k.1).max().unwrap_or(0)
    }

    fn total_at(&self, s: u64) -> f64 {
        (0..self.jobs.len())
            .filter_map(|i| self.calls.get(&(i, s)))
            .sum()
    }

    /// Seconds from the first arrival to the last job's end (to the end of the run's last
    /// second when a job was stopped).
    pub fn makespan(&self) -> f64 {
        let stopped = self.last_second() as f64 + 1.0;
        self.ends
            .iter()
            .map(|e| e.unwrap_or(stopped))
            .fold(0.0, f64::max)
    }

    /// Seconds whose calls, all jobs together, passed the capacity (with the
    /// tolerance): an automatic pool's as sampled in that second, else `capacity`.
    pub fn seconds_over(&self, capacity: f64) -> usize {
        (0..=self.last_second())
            .filter(|&s| {
                let capacity = self.capacity.get(&s).copied().unwrap_or(capacity);
                self.total_at(s) > capacity * (1.0 + OVER_TOLERANCE)
            })
            .count()
    }

    /// The whole seconds `[from, to)` when every job was running, from `settle` seconds
    /// after the last arrival to the first job's end.
    pub(super) fn together(&self, settle: f64) -> (u64, u64) {
        let from = (self.starts.iter().copied().fold(0.0, f64::max) + settle).ceil() as u64;
        let to = self
            .ends
            .iter()
            .map(|e| e.unwrap_or(f64::INFINITY))
            .fold(f64::INFINITY, f64::min)
            // A job stopped at the timeout has no end: the run's last second stands in.
            .min(self.last_second() as f64 + 1.0)
            .floor() as u64;
        (from, to)
    }

    /// Jain's fairness index of the jobs' rates, each as a fraction of its limit, over
    /// the seconds when every job was running (each job's whole run when they never all
    /// ran at once): 1 when every job got the same fraction of its limit.
    pub fn jain(&self, limits: &[f64]) -> f64 {
        let (from, to) = self.together(0.0);
        let x: Vec<f64> = (0..self.jobs.len())
            .map(|i| {
                let (a, b) = if to > from {
                    (from, to)
                } else {
                    let end = self.ends[i].map_or(self.last_second(), |e| e as u64);
                    (self.starts[i] as u64, end.max(self.starts[i] as u64 + 1))
                };
                let sum: f64 = (a..b).filter_map(|s| self.calls.get(&(i, s))).sum();
                sum / (b - a) as f64 / limits[i]
            })
            .collect();
        let (s, s2) = x.iter().fold((0.0, 0.0), |(s, s2), v| (s + v, s2 + v * v));
        if s2 == 0.0 {
            return 0.0;
        }
        s * s / (x.len() as f64 * s2)
    }

    fn total(&self) -> f64 {
        self.calls.values().sum()
    }

    /// Job `i`'s rate: for a data job, its bytes over the time its I/O took (each
    /// process's stretches of I/O; what IOR reports as bandwidth), summed over its
    /// processes running at once, i.e. bytes ÷ the union of its I/O time; for a trace job,
    /// its calls over its completion time.
    pub fn achieved(&self, i: usize) -> Option<f64> {
        let mut spans: Vec<(f64, f64)> = self
            .phases
            .iter()
            .filter(|p| p.job == i && p.io)
            .map(|p| (p.start, p.end))
            .collect();
        if spans.is_empty() {
            let total: f64 = self
                .calls
                .iter()
                .filter(|((j, _), _)| *j == i)
                .map(|(_, c)| c)
                .sum();
            let took = self.ends[i]? - self.starts[i];
            return (took > 0.0).then_some(total / took);
        }
        let bytes: f64 = self
            .phases
            .iter()
            .filter(|p| p.job == i && p.io)
            .map(|p| p.bytes)
            .sum();
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut busy = 0.0;
        let mut reach = f64::NEG_INFINITY;
        for (a, b) in spans {
            let a = a.max(reach);
            if b > a {
                busy += b - a;
                reach = b;
            }
        }
        (busy > 0.0).then_some(bytes / busy)
    }

    /// How far job `i`'s rate is from its desired rate, in percent of the latter.
    pub fn deviation(&self, i: usize) -> Option<f64> {
        let desired = self.desired[i]?;
        Some((self.achieved(i)? - desired).abs() / desired * 100.0)
    }

    /// The share of the pool's capacity the jobs used together, from the first arrival to
    /// the last job's end.
    pub fn utilization(&self, capacity: f64) -> f64 {
        let from = self.starts.iter().copied().fold(f64::INFINITY, f64::min);
        let span = self.makespan() - from;
        if span > 0.0 {
            self.total() / (capacity * span)
        } else {
            0.0
        }
    }

    /// The earliest an uncontrolled run's load could end held to `capacity`: its calls
    /// of each second, as it issued them, served at most `capacity` a second, what is
    /// left carried to the next; seconds from the set-up's start. No set-up held to the
    /// pool can end earlier, whatever its algorithm: a bound on the makespan that the
    /// load, not the division, sets.
    pub fn capacity_bound(&self, capacity: f64) -> f64 {
        let mut backlog = 0.0;
        let mut end = 0.0;
        for s in 1..=self.last_second() {
            backlog += self.total_at(s);
            let served = backlog.min(capacity);
            backlog -= served;
            if served > 0.0 {
                end = (s - 1) as f64 + served / capacity;
            }
        }
        end + backlog / capacity
    }

    /// Seconds of false allocation (PADLL §4.2): some job used less than 90% of its
    /// allocation while another, held to its own, used 98% or more of it.
    pub fn false_allocation(&self) -> usize {
        let seconds: std::collections::BTreeSet<u64> =
            self.allocation.keys().map(|k| k.1).collect();
        seconds
            .into_iter()
            .filter(|&s| {
                let use_of = |i: usize| {
                    let a = self.allocation.get(&(i, s)).copied()?;
                    (a > 0.0).then(|| self.calls.get(&(i, s)).copied().unwrap_or(0.0) / a)
                };
                let uses: Vec<f64> = (0..self.jobs.len()).filter_map(use_of).collect();
                uses.iter().any(|&u| u < 0.9) && uses.iter().any(|&u| u >= 0.98)
            })
            .count()
    }
}

/// A set-up's measures, as summary.json keeps them.
#[derive(Serialize, Deserialize)]
struct Measures {
    setup: String,
    algorithm: String,
    /// Per job: its name and completion time (s), `null` when stopped at the timeout.
    completion: Vec<(String, Option<f64>)>,
    makespan: f64,
    seconds_over_capacity: usize,
    false_allocation_seconds: usize,
    jain: f64,
    total_calls: f64,
    /// Per job: its rate (see [`Outcome::achieved`]), its desired rate and the
    /// deviation from it (%).
    #[serde(default)]
    rates: Vec<JobRate>,
    /// The share of the capacity used, first arrival to last end.
    #[serde(default)]
    utilization: f64,
    /// IO-SETS' measures, when the scenario asks for them.
    #[serde(default)]
    iosets: Option<IoSetsMeasures>,
    /// Per job: its completion time over its time with the whole pool to itself
    /// ([`Scenario::ideal`]); `null` for a job without a fixed amount of work or stopped.
    #[serde(default)]
    slowdown: Vec<Option<f64>>,
}

impl Measures {
    /// The jobs' slowdowns, when every job has one.
    fn slowdowns(&self) -> Option<Vec<f64>> {
        let v: Option<Vec<f64>> = self.slowdown.iter().copied().collect();
        v.filter(|v| !v.is_empty())
    }

    /// The mean of the jobs' slowdowns.
    fn slowdown_mean(&self) -> Option<f64> {
        let v = self.slowdowns()?;
        Some(v.iter().sum::<f64>() / v.len() as f64)
    }

    /// The coefficient of variation of the jobs' slowdowns (standard deviation over
    /// the jobs ÷ mean): 0 when every job is slowed alike.
    fn slowdown_cv(&self) -> Option<f64> {
        let v = self.slowdowns()?;
        let mean = self.slowdown_mean()?;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        Some(var.sqrt() / mean)
    }
}

/// One job's rate against what it wanted.
#[derive(Serialize, Deserialize)]
struct JobRate {
    job: String,
    achieved: Option<f64>,
    desired: Option<f64>,
    deviation_pct: Option<f64>,
}

/// summary.json.
#[derive(Serialize, Deserialize)]
struct Summary {
    scenario: String,
    capacity: f64,
    /// `calls` or `bytes`: what the rates count.
    #[serde(default)]
    unit: Option<String>,
    /// The uncontrolled set-up's [`Outcome::capacity_bound`], s, when there is one.
    #[serde(default)]
    capacity_bound: Option<f64>,
    setups: Vec<Measures>,
}

/// Writes SETUP.csv and SETUP.png for each outcome, timelines.png (every set-up's
/// timeline, one under another), and summary.json and summary.md.
pub fn write_outputs(sc: &Scenario, outcomes: &[Outcome], out: &Path) -> Result<()> {
    let capacity = sc.pool.capacity.per_sec as f64;
    let bytes = sc.has_data();
    // Data timelines in MB/s (SDQoS' and AdapTBF's unit), calls in calls/s.
    let (scale, unit) = if bytes {
        (1e-6, "MB per second")
    } else {
        (1.0, "metadata calls per second")
    };
    let mut panels = Vec::new();
    for o in outcomes {
        let mut csv = String::from("second,job,calls,allocation\n");
        if bytes {
            csv = String::from("second,job,bytes,allocation\n");
        }
        for s in 0..=o.last_second() {
            for (i, job) in o.jobs.iter().enumerate() {
                let c = o.calls.get(&(i, s)).copied();
                let a = o.allocation.get(&(i, s)).copied();
                if c.is_some() || a.is_some() {
                    let _ = writeln!(
                        csv,
                        "{s},{job},{:.0},{}",
                        c.unwrap_or(0.0),
                        a.map(|a| format!("{a:.0}")).unwrap_or_default()
                    );
                }
            }
        }
        let base = out.join(file_name(&o.setup));
        write(&base.with_extension("csv"), &csv)?;
        if !o.phases.is_empty() {
            // Each data process's phases, from which IO-SETS' measures can be taken
            // again with another B or frame.
            let mut phases = String::from("job,process,io,start,end,bytes\n");
            for p in &o.phases {
                let _ = writeln!(
                    phases,
                    "{},{},{},{:.3},{:.3},{:.0}",
                    o.jobs[p.job], p.process, p.io, p.start, p.end, p.bytes
                );
            }
            let name = format!("{}-phases.csv", file_name(&o.setup));
            write(&out.join(name), &phases)?;
        }
        if !o.periods.is_empty() {
            let mut periods = String::from("second,job,placed_by_s,from,detected_s,confidence\n");
            for ((i, s), p) in &o.periods {
                let _ = writeln!(
                    periods,
                    "{s},{},{:.3},{},{:.3},{:.3}",
                    o.jobs[*i], p.seconds, p.from, p.detected, p.confidence
                );
            }
            let name = format!("{}-periods.csv", file_name(&o.setup));
            write(&out.join(name), &periods)?;
        }
        let setup = sc.setups.iter().find(|s| s.name == o.setup);
        // A weighed pool's limits and allocations are cost units, its jobs' rates calls.
        let units = if setup.is_some_and(|s| !s.costs.is_empty() || s.costs_from.is_some()) {
            " units"
        } else {
            ""
        };
        let series = o
            .jobs
            .iter()
            .enumerate()
            .map(|(i, job)| Series {
                name: match o.limits[i] {
                    Some(l) if bytes => format!("{job} (limit {:.1} MB/s)", l * scale),
                    Some(l) => format!("{job} (limit {l}{units}/s)"),
                    None => job.clone(),
                },
                rate: o
                    .calls
                    .iter()
                    .filter(|((j, _), _)| *j == i)
                    .map(|((_, s), c)| (*s as f64, *c * scale))
                    .collect(),
                allocation: o
                    .allocation
                    .iter()
                    .filter(|((j, _), _)| *j == i)
                    .map(|((_, s), a)| (*s as f64, *a * scale))
                    .collect(),
            })
            .collect();
        let panel = Panel {
            title: format!(
                "{} ({}): makespan {:.1} s, {} s over capacity, utilization {:.0}%",
                o.setup,
                o.algorithm,
                o.makespan(),
                o.seconds_over(capacity),
                o.utilization(capacity) * 100.0
            ),
            series,
            total: (0..=o.last_second())
                .map(|s| (s as f64, o.total_at(s) * scale))
                .collect(),
            capacity: capacity * scale,
            capacity_label: setup.and_then(|s| s.auto.as_ref()).map(|_| {
                match o.capacity.is_empty() {
                    true => format!(
                        "the scenario's pool, {}{units}/s; this one's is automatic: its allocations",
                        crate::plot::short(capacity * scale)
                    ),
                    false => format!(
                        "the pool's capacity as the controller found it{}",
                        if units.is_empty() { "" } else { " (cost units/s)" }
                    ),
                }
            }),
            capacity_line: o
                .capacity
                .iter()
                .map(|(s, c)| (*s as f64, c * scale))
                .collect(),
        };
        png(
            &base.with_extension("png"),
            &format!("{}: {}", sc.name, o.setup),
            unit,
            std::slice::from_ref(&panel),
        )?;
        panels.push(panel);
    }
    if !panels.is_empty() {
        png(&out.join("timelines.png"), &sc.name, unit, &panels)?;
    }
    // IO-SETS' B, once for all set-ups, as the paper takes it over all its runs: the
    // bandwidth a job sees in isolation, from the phases alone of the set-ups without
    // control when there are any (iosets::isolation_bandwidth says why).
    let (bandwidth, solo) = iosets::isolation_bandwidth(outcomes).unwrap_or((capacity, 0));
    let summary = Summary {
        scenario: sc.name.clone(),
        capacity,
        unit: Some(if bytes { "bytes" } else { "calls" }.into()),
        // Only a trace's calls are a fixed amount of work; a command may run for a
        // time (the real applications' `sluice load --duration`), and then ending
        // sooner under Max_R means nothing.
        capacity_bound: outcomes
            .iter()
            .find(|o| o.algorithm == "none" && !bytes)
            .filter(|_| {
                sc.jobs
                    .iter()
                    .all(|j| matches!(j.workload.list(), [Workload::Trace]))
            })
            .map(|o| o.capacity_bound(capacity)),
        setups: outcomes
            .iter()
            .map(|o| Measures {
                setup: o.setup.clone(),
                algorithm: o.algorithm.clone(),
                completion: o
                    .jobs
                    .iter()
                    .enumerate()
                    .map(|(i, j)| (j.clone(), o.ends[i].map(|e| e - o.starts[i])))
                    .collect(),
                makespan: o.makespan(),
                seconds_over_capacity: o.seconds_over(capacity),
                false_allocation_seconds: o.false_allocation(),
                jain: o.jain(
                    &o.limits
                        .iter()
                        .map(|l| l.unwrap_or(1.0))
                        .collect::<Vec<_>>(),
                ),
                total_calls: o.total(),
                rates: o
                    .jobs
                    .iter()
                    .enumerate()
                    .map(|(i, j)| JobRate {
                        job: j.clone(),
                        achieved: o.achieved(i),
                        desired: o.desired[i],
                        deviation_pct: o.deviation(i),
                    })
                    .collect(),
                utilization: o.utilization(capacity),
                iosets: sc
                    .metrics
                    .window
                    .and_then(|w| iosets::measures(o, w, bandwidth, solo)),
                slowdown: (0..o.jobs.len())
                    .map(|i| Some(o.ends[i]? - o.starts[i]).zip(sc.ideal(i)))
                    .map(|x| x.map(|(took, ideal)| took / ideal))
                    .collect(),
            })
            .collect(),
    };
    let json = serde_json::to_string_pretty(&summary).map_err(|source| ExperimentError::Json {
        what: "summary.json".into(),
        source,
    })?;
    write(&out.join("summary.json"), &json)?;
    let mut md = markdown(std::slice::from_ref(&summary));
    md += &checks(&summary);
    md += &placements(outcomes);
    if let Some(ceph) = &sc.cephfs {
        md += &mds_outputs(sc, ceph, outcomes, out)?;
    }
    write(&out.join("summary.md"), &md)
}

/// For summary.md, each set-up whose algorithm placed jobs by a period it found (not
/// given): when each job was first placed, by what period and how. Empty otherwise.
fn placements(outcomes: &[Outcome]) -> String {
    let mut md = String::new();
    for o in outcomes {
        let found = |from: &str| !from.is_empty() && from != "given";
        if !o.periods.values().any(|p| found(&p.from)) {
            continue;
        }
        if md.is_empty() {
            md += "\n## When each job was placed by its period\n\n\
                   The first sample (once a second) at which the pool's algorithm placed \
                   the job by a period it found: `detected` (with the detection's \
                   confidence) or `silence` (set10-silence's lower bound).\n";
        }
        let _ = write!(md, "\n{}: ", o.setup);
        let mut first: BTreeMap<usize, (u64, &PeriodSample)> = BTreeMap::new();
        for ((i, s), p) in &o.periods {
            if found(&p.from) {
                first.entry(*i).or_insert((*s, p));
            }
        }
        let placed: Vec<String> = (0..o.jobs.len())
            .map(|i| match first.get(&i) {
                Some((s, p)) if p.from == "detected" => format!(
                    "{} at {s} s ({:.1} s detected, {:.2})",
                    o.jobs[i], p.seconds, p.confidence
                ),
                Some((s, p)) => format!("{} at {s} s ({:.1} s, {})", o.jobs[i], p.seconds, p.from),
                None => match o.periods.range((i, 0)..(i + 1, 0)).next() {
                    Some((_, p)) if p.from == "given" => {
                        format!("{} given ({:.2} s)", o.jobs[i], p.seconds)
                    }
                    _ => format!("{} never", o.jobs[i]),
                },
            })
            .collect();
        md += &placed.join("; ");
        md += "\n";
    }
    md
}

/// The MDS's figures of each set-up: SETUP-mds.csv, SETUP-mds.png (reply latency against
/// the target, and the queue), and a table for summary.md over the settled seconds (from
/// `settle` after the last arrival to the first job's end).
fn mds_outputs(sc: &Scenario, ceph: &CephSpec, outcomes: &[Outcome], out: &Path) -> Result<String> {
    let target = latency_target(ceph, outcomes);
    let target_us = target.as_ref().map(|t| t.us);
    let mut md = String::from(
        "\n## The MDS (its admin socket, each second)\n\n\
         Settled: from `settle` seconds after the last arrival to the first job's end. \
         Latency: the mean reply latency of each second's requests (the MDS keeps no \
         histogram).\n\n\
         Allocated: the pool's allocation to all jobs at the end, and the second from which \
         it stays within ±15% of that (its median over the last 10 s).\n\n",
    );
    if let Some(t) = &target {
        let _ = write!(md, "Latency target: {:.0} µs ({}).\n\n", t.us, t.how);
    }
    md += "| set-up | jobs' calls/s (settled) | MDS requests/s | reply latency µs (median of seconds) | p90 of seconds | queue (mean) | seconds within target | allocated (settled from) |\n\
           |---|---|---|---|---|---|---|---|\n";
    for o in outcomes {
        // The pool's allocation (all jobs') per second: an automatic pool's capacity as
        // its algorithm hands it out.
        let mut allocated: BTreeMap<u64, f64> = BTreeMap::new();
        for ((_, s), a) in &o.allocation {
            *allocated.entry(*s).or_default() += a;
        }
        let mut csv = String::from("second,requests_per_s,reply_latency_us,queue,allocated\n");
        for (s, r) in &o.mds {
            let _ = writeln!(
                csv,
                "{s},{:.1},{},{},{}",
                r.requests_per_s,
                r.latency_s
                    .map(|l| format!("{:.1}", l * 1e6))
                    .unwrap_or_default(),
                r.queue.map(|q| format!("{q}")).unwrap_or_default(),
                allocated
                    .get(s)
                    .map(|a| format!("{a:.0}"))
                    .unwrap_or_default()
            );
        }
        let settled_at = settling(&allocated);
        let base = out.join(format!("{}-mds", file_name(&o.setup)));
        write(&base.with_extension("csv"), &csv)?;
        let latency: Vec<(f64, f64)> = o
            .mds
            .iter()
            .filter_map(|(s, r)| Some((*s as f64, r.latency_s? * 1e6)))
            .collect();
        let panel = Panel {
            title: format!("{}: the MDS's mean reply latency and queue", o.setup),
            series: vec![
                Series {
                    name: "reply latency (µs)".into(),
                    rate: latency,
                    allocation: Vec::new(),
                },
                Series {
                    name: "queue (requests)".into(),
                    rate: o
                        .mds
                        .iter()
                        .filter_map(|(s, r)| Some((*s as f64, r.queue?)))
                        .collect(),
                    allocation: Vec::new(),
                },
            ],
            total: o
                .mds
                .iter()
                .map(|(s, r)| (*s as f64, r.requests_per_s / 10.0))
                .collect(),
            capacity: target_us.unwrap_or(0.0),
            capacity_line: Vec::new(),
            capacity_label: Some(match target_us {
                Some(t) => format!("latency target {t:.0} µs"),
                None => "no latency target".into(),
            }),
        };
        png(
            &base.with_extension("png"),
            &format!(
                "{}: {} (black: MDS requests/s ÷ 10; red: the latency target)",
                sc.name, o.setup
            ),
            "µs, requests",
            &[panel],
        )?;
        let (from, to) = settled_span(o, ceph.settle);
        let settled = settled_readings(o, ceph.settle);
        let lat = latencies_us(&settled);
        let at = |q: f64| quantile_of(&lat, q);
        let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        let within = target_us.and_then(|t| {
            (!lat.is_empty())
                .then(|| lat.iter().filter(|l| **l <= t).count() as f64 / lat.len() as f64)
        });
        let f = |x: Option<f64>, d: usize| x.map_or("–".into(), |x| format!("{x:.d$}"));
        let seconds = |i: usize| {
            o.calls
                .iter()
                .filter(|((j, s), _)| *j == i && (*s as f64) >= from && (*s as f64) < to.floor())
                .map(|(_, c)| *c)
                .collect::<Vec<f64>>()
        };
        let rates: Vec<String> = o
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| format!("{j} {}", f(mean(seconds(i)), 0)))
            .collect();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            o.setup,
            rates.join(", "),
            f(mean(settled.iter().map(|r| r.requests_per_s).collect()), 0),
            f(at(0.5), 0),
            f(at(0.9), 0),
            f(mean(settled.iter().filter_map(|r| r.queue).collect()), 1),
            within.map_or("–".into(), |w| format!(
                "{:.0}% of {}",
                w * 100.0,
                lat.len()
            )),
            settled_at.map_or("–".into(), |(level, at)| format!("{level:.0}/s ({at} s)")),
        );
    }
    Ok(md)
}

/// A set-up's settled seconds: from `settle` after the last arrival to the first job's
/// end.
fn settled_span(o: &Outcome, settle: f64) -> (f64, f64) {
    let from = o.starts.iter().copied().fold(0.0, f64::max) + settle;
    let to = o
        .ends
        .iter()
        .map(|e| e.unwrap_or(f64::INFINITY))
        .fold(f64::INFINITY, f64::min);
    (from, to)
}

/// The MDS's readings over a set-up's settled seconds.
fn settled_readings(o: &Outcome, settle: f64) -> Vec<&sluice_control::source::ServerReading> {
    let (from, to) = settled_span(o, settle);
    o.mds
        .iter()
        .filter(|(s, _)| (**s as f64) >= from && (**s as f64) <= to)
        .map(|(_, r)| r)
        .collect()
}

/// The reply latencies of `readings` that have one, µs, sorted.
fn latencies_us(readings: &[&sluice_control::source::ServerReading]) -> Vec<f64> {
    let mut lat: Vec<f64> = readings
        .iter()
        .filter_map(|r| r.latency_s)
        .map(|l| l * 1e6)
        .collect();
    lat.sort_by(f64::total_cmp);
    lat
}

/// The `q` quantile of the sorted `values` (the nearest rank); `None` when empty.
fn quantile_of(values: &[f64], q: f64) -> Option<f64> {
    (!values.is_empty()).then(|| values[((values.len() - 1) as f64 * q).round() as usize])
}

/// The MDS's latency target of a run, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedTarget {
    /// The target, whole µs.
    pub us: f64,
    /// Where it comes from, for the summary and the runner's output.
    pub how: String,
}

/// The scenario's MDS latency target given the set-ups run so far: `None` without one,
/// or while a relative target's reference has not run (or had no settled reading).
pub fn latency_target(ceph: &CephSpec, outcomes: &[Outcome]) -> Option<ResolvedTarget> {
    match ceph.target.as_ref()? {
        LatencyTarget::Fixed(t) => Some(ResolvedTarget {
            us: (t.as_secs_f64() * 1e6).round(),
            how: "fixed".into(),
        }),
        LatencyTarget::Relative { factor, reference } => {
            let o = outcomes.iter().find(|o| &o.setup == reference)?;
            let lat = latencies_us(&settled_readings(o, ceph.settle));
            let median = quantile_of(&lat, 0.5)?;
            Some(ResolvedTarget {
                us: (factor * median).round().max(1.0),
                how: format!(
                    "{factor} × {median:.0} µs, the median of the MDS's settled seconds in {reference}"
                ),
            })
        }
    }
}

/// The level a per-second series ends at (its median over the last 10 s) and the second
/// from which it stays within ±15% of it; `None` without 10 seconds.
fn settling(series: &BTreeMap<u64, f64>) -> Option<(f64, u64)> {
    let values: Vec<(u64, f64)> = series.iter().map(|(s, v)| (*s, *v)).collect();
    if values.len() < 10 {
        return None;
    }
    let mut last: Vec<f64> = values[values.len() - 10..]
        .iter()
        .map(|(_, v)| *v)
        .collect();
    last.sort_by(f64::total_cmp);
    let level = last[5];
    let outside = values
        .iter()
        .rposition(|(_, v)| (v - level).abs() > 0.15 * level.abs());
    let at = match outside {
        Some(k) => values.get(k + 1).map_or(values[k].0, |(s, _)| *s),
        None => values[0].0,
    };
    Some((level, at))
}

/// The shape PADLL §5.3 reports, checked on the set-ups of these algorithms present.
fn checks(summary: &Summary) -> String {
    let by = |algorithm: &str| summary.setups.iter().find(|m| m.algorithm == algorithm);
    let mut lines = Vec::new();
    let mut check = |holds: bool, what: String| {
        lines.push(format!("- [{}] {what}", if holds { "x" } else { " " }));
    };
    let controlled: Vec<&Measures> = summary
        .setups
        .iter()
        .filter(|m| m.algorithm != "none")
        .collect();
    if !controlled.is_empty() {
        let worst = controlled
            .iter()
            .map(|m| m.seconds_over_capacity)
            .max()
            .unwrap_or(0);
        check(
            worst == 0,
            format!("no controlled set-up passes the capacity in any second (most: {worst})"),
        );
    }
    if let Some(base) = by("none").filter(|_| summary.unit.as_deref() != Some("bytes")) {
        check(
            base.seconds_over_capacity > 0,
            format!("Baseline passes it ({} s)", base.seconds_over_capacity),
        );
        if let Some(psfa) = by("psfa") {
            let d = (psfa.makespan - base.makespan) / base.makespan * 100.0;
            // What the load alone allows, so that a miss can be read: when no set-up
            // held to the capacity can end within 5%, the check cannot hold.
            let bound = summary.capacity_bound.map_or(String::new(), |b| {
                format!(
                    "; held to the capacity, this load cannot end before {b:.1} s, {:+.1}%",
                    (b - base.makespan) / base.makespan * 100.0
                )
            });
            check(
                d.abs() <= 5.0,
                format!("PSFA's makespan is Baseline's within 5% ({d:+.1}%{bound})"),
            );
        }
    }
    if let (Some(ps), Some(psfa)) = (by("psharing"), by("psfa")) {
        check(
            ps.false_allocation_seconds > psfa.false_allocation_seconds,
            format!(
                "PSharing has seconds of false allocation that PSFA does not ({} against {})",
                ps.false_allocation_seconds, psfa.false_allocation_seconds
            ),
        );
    }
    if let (Some(pr), Some(psfa)) = (by("priority"), by("psfa")) {
        check(
            pr.makespan > psfa.makespan,
            format!(
                "Priority's makespan is longer than PSFA's ({:.1} s against {:.1} s)",
                pr.makespan, psfa.makespan
            ),
        );
    }
    // SDQoS: each desired rate met within 2% (the paper's were within 10%), where it
    // fits in the capacity.
    for m in &summary.setups {
        for r in &m.rates {
            if let (Some(d), Some(dev)) = (r.desired, r.deviation_pct) {
                let fits =
                    m.rates.iter().filter_map(|r| r.desired).sum::<f64>() <= summary.capacity;
                check(
                    dev <= 2.0 || !fits,
                    format!(
                        "{}: {} gets its desired rate within 2% ({dev:.2}%){}",
                        m.setup,
                        r.job,
                        if fits {
                            String::new()
                        } else {
                            format!(
                                " — not checked: the desired rates pass the capacity ({:.1} > {:.1})",
                                d * rate_scale(summary),
                                summary.capacity * rate_scale(summary)
                            )
                        }
                    ),
                );
            }
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    format!("\n## Checks\n\n{}\n", lines.join("\n"))
}

/// The factor from a summary's unit to the unit shown: MB/s for bytes.
fn rate_scale(summary: &Summary) -> f64 {
    if summary.unit.as_deref() == Some("bytes") {
        1e-6
    } else {
        1.0
    }
}

fn file_name(setup: &str) -> String {
    setup
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn write(path: &Path, text: &str) -> Result<()> {
    Ok(std::fs::write(path, text).doing(|| format!("write {}", path.display()))?)
}

/// The summaries' set-ups as the columns of one table.
fn markdown(summaries: &[Summary]) -> String {
    let cols: Vec<(&Summary, &Measures)> = summaries
        .iter()
        .flat_map(|s| s.setups.iter().map(move |m| (s, m)))
        .collect();
    let many = summaries.len() > 1;
    let head = |s: &Summary, m: &Measures| match many {
        true => format!("{}: {}", s.scenario, m.setup),
        false => m.setup.clone(),
    };
    let mut t = String::new();
    if !many {
        let _ = writeln!(
            t,
            "# {}\n\nPool capacity {}. Completion times in seconds from each job's arrival.\n",
            summaries[0].scenario,
            if summaries[0].unit.as_deref() == Some("bytes") {
                format!("{:.2} MB/s", summaries[0].capacity * 1e-6)
            } else {
                format!("{:.0} calls/s", summaries[0].capacity)
            }
        );
    }
    let _ = writeln!(
        t,
        "| | {} |\n|---|{}",
        cols.iter()
            .map(|(s, m)| head(s, m))
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(cols.len())
    );
    let row = |t: &mut String, name: &str, f: &dyn Fn(&Measures) -> String| {
        let cells: Vec<String> = cols.iter().map(|(_, m)| f(m)).collect();
        let _ = writeln!(t, "| {name} | {} |", cells.join(" | "));
    };
    row(&mut t, "algorithm", &|m| m.algorithm.clone());
    let jobs: Vec<String> = cols
        .first()
        .map(|(_, m)| m.completion.iter().map(|(j, _)| j.clone()).collect())
        .unwrap_or_default();
    for (k, job) in jobs.iter().enumerate() {
        row(&mut t, &format!("{job} completion (s)"), &|m| match m
            .completion
            .get(k)
            .and_then(|c| c.1)
        {
            Some(c) => format!("{c:.1}"),
            None => "stopped".into(),
        });
    }
    let data = summaries.iter().any(|s| s.unit.as_deref() == Some("bytes"));
    let (scale, unit) = if data { (1e-6, "MB/s") } else { (1.0, "/s") };
    for (k, job) in jobs.iter().enumerate() {
        fn at(m: &Measures, k: usize) -> Option<&JobRate> {
            m.rates.get(k)
        }
        if cols
            .iter()
            .any(|(_, m)| at(m, k).is_some_and(|r| r.achieved.is_some()))
        {
            row(&mut t, &format!("{job} rate ({unit})"), &|m| {
                at(m, k)
                    .and_then(|r| r.achieved)
                    .map_or("–".into(), |a| format!("{:.2}", a * scale))
            });
        }
        if cols
            .iter()
            .any(|(_, m)| at(m, k).is_some_and(|r| r.desired.is_some()))
        {
            row(&mut t, &format!("{job} desired ({unit})"), &|m| {
                at(m, k)
                    .and_then(|r| r.desired)
                    .map_or("–".into(), |d| format!("{:.2}", d * scale))
            });
            row(&mut t, &format!("{job} deviation (%)"), &|m| {
                at(m, k)
                    .and_then(|r| r.deviation_pct)
                    .map_or("–".into(), |d| format!("{d:.2}"))
            });
        }
    }
    for (k, job) in jobs.iter().enumerate() {
        if cols
            .iter()
            .any(|(_, m)| m.slowdown.get(k).is_some_and(Option::is_some))
        {
            row(&mut t, &format!("{job} slowdown"), &|m| {
                m.slowdown
                    .get(k)
                    .copied()
                    .flatten()
                    .map_or("–".into(), |x| format!("{x:.2}"))
            });
        }
    }
    if cols.iter().any(|(_, m)| m.slowdown_cv().is_some()) {
        let show = |x: Option<f64>| x.map_or("–".into(), |x| format!("{x:.3}"));
        row(&mut t, "mean slowdown", &|m| show(m.slowdown_mean()));
        row(&mut t, "slowdown's coefficient of variation", &|m| {
            show(m.slowdown_cv())
        });
    }
    row(&mut t, "makespan (s)", &|m| format!("{:.1}", m.makespan));
    row(&mut t, "seconds over capacity", &|m| {
        m.seconds_over_capacity.to_string()
    });
    if !data {
        row(&mut t, "seconds of false allocation", &|m| {
            m.false_allocation_seconds.to_string()
        });
        row(&mut t, "Jain's index (rate ÷ limit)", &|m| {
            format!("{:.3}", m.jain)
        });
    }
    if data {
        row(&mut t, "total bytes (MB)", &|m| {
            format!("{:.1}", m.total_calls * 1e-6)
        });
        row(&mut t, "utilization of the pool", &|m| {
            format!("{:.1}%", m.utilization * 100.0)
        });
    } else {
        row(&mut t, "total calls", &|m| format!("{:.0}", m.total_calls));
    }
    if cols.iter().any(|(_, m)| m.iosets.is_some()) {
        let io = |f: fn(&IoSetsMeasures) -> String| {
            move |m: &Measures| m.iosets.as_ref().map_or("–".into(), f)
        };
        row(
            &mut t,
            "IO-SETS max stretch",
            &io(|x| format!("{:.3}", x.max_stretch)),
        );
        row(
            &mut t,
            "IO-SETS geometric-mean stretch",
            &io(|x| format!("{:.3}", x.gmean_stretch)),
        );
        row(
            &mut t,
            "IO-SETS I/O slowdown",
            &io(|x| format!("{:.3}", x.io_slowdown)),
        );
        row(
            &mut t,
            "IO-SETS utilization",
            &io(|x| format!("{:.3}", x.utilization)),
        );
        row(
            &mut t,
            "IO-SETS B (MB/s; phases alone)",
            &io(|x| format!("{:.1} ({})", x.bandwidth * 1e-6, x.solo_phases)),
        );
    }
    t
}

/// `sluice experiment compare DIR…`.
pub fn compare(dirs: &[PathBuf]) -> Result<i32> {
    let mut summaries = Vec::new();
    for d in dirs {
        let path = d.join("summary.json");
        let text = std::fs::read_to_string(&path)
            .doing(|| format!("read {} (written by sluice experiment run)", path.display()))?;
        summaries.push(serde_json::from_str::<Summary>(&text).map_err(|source| {
            ExperimentError::Json {
                what: format!("{}: not a summary", path.display()),
                source,
            }
        })?);
    }
    print!("{}", markdown(&summaries));
    print!("{}", runs_table(&summaries, &IOSETS_MEASURES));
    print!("{}", runs_table(&summaries, &SLOWDOWN_MEASURES));
    Ok(0)
}

/// A measure of one set-up in one run, if it has it.
type Measure = fn(&Summary, &Measures) -> Option<f64>;

/// IO-SETS' measures, for [`runs_table`].
const IOSETS_MEASURES: [(&str, Measure); 5] = [
    ("max stretch", |_, m| Some(m.iosets.as_ref()?.max_stretch)),
    ("geometric-mean stretch", |_, m| {
        Some(m.iosets.as_ref()?.gmean_stretch)
    }),
    ("I/O slowdown", |_, m| Some(m.iosets.as_ref()?.io_slowdown)),
    ("utilization", |_, m| Some(m.iosets.as_ref()?.utilization)),
    ("B (MB/s)", |_, m| Some(m.iosets.as_ref()?.bandwidth * 1e-6)),
];

/// Throughput and the jobs' slowdowns (ThemisIO's comparison), for [`runs_table`].
const SLOWDOWN_MEASURES: [(&str, Measure); 4] = [
    ("throughput (MB/s)", |s, m| {
        m.slowdown_cv()?;
        Some(m.utilization * s.capacity * 1e-6)
    }),
    ("mean slowdown", |_, m| m.slowdown_mean()),
    ("max slowdown", |_, m| {
        Some(m.slowdowns()?.into_iter().fold(0.0, f64::max))
    }),
    ("slowdown's CV", |_, m| m.slowdown_cv()),
];

/// Each of `measures` over several runs of one scenario: per set-up (in the first
/// run's order), its mean, its range and the number of runs, and the mean's change
/// against the first set-up's. Empty unless some set-up has the first measure in two
/// runs or more.
fn runs_table(summaries: &[Summary], measures: &[(&str, Measure)]) -> String {
    let Some(first) = summaries.first() else {
        return String::new();
    };
    let Some(&(_, key)) = measures.first() else {
        return String::new();
    };
    let runs = |setup: &str| -> Vec<(&Summary, &Measures)> {
        summaries
            .iter()
            .filter(|s| s.scenario == first.scenario)
            .flat_map(|s| s.setups.iter().map(move |m| (s, m)))
            .filter(|(s, m)| m.setup == setup && key(s, m).is_some())
            .collect()
    };
    if !first.setups.iter().any(|m| runs(&m.setup).len() > 1) {
        return String::new();
    }
    let values = |v: &[(&Summary, &Measures)], f: Measure| -> Vec<f64> {
        v.iter().filter_map(|(s, m)| f(s, m)).collect()
    };
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len().max(1) as f64;
    let base = runs(&first.setups[0].setup);
    let mut t = format!(
        "\n{}: mean (min–max) over the runs, and the mean's change against {}\n\n| | runs |",
        first.scenario, first.setups[0].setup
    );
    for (name, _) in measures {
        let _ = write!(t, " {name} |");
    }
    let _ = writeln!(t, "\n|---|---|{}", "---|".repeat(measures.len()));
    for m in &first.setups {
        let v = runs(&m.setup);
        if v.is_empty() {
            continue;
        }
        let _ = write!(t, "| {} | {} |", m.setup, v.len());
        for (_, f) in measures {
            let x = values(&v, *f);
            let lo = x.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let avg = mean(&x);
            let change = (avg / mean(&values(&base, *f)) - 1.0) * 100.0;
            let _ = write!(t, " {avg:.3} ({lo:.3}–{hi:.3}) {change:+.0}% |");
        }
        t.push('\n');
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An uncontrolled outcome of jobs starting at 0: calls per (job, second), and ends.
    fn outcome(calls: &[((usize, u64), f64)], ends: Vec<Option<f64>>) -> Outcome {
        let n = ends.len();
        Outcome {
            setup: "Baseline".into(),
            algorithm: "none".into(),
            jobs: (0..n).map(|i| format!("job{i}")).collect(),
            starts: vec![0.0; n],
            ends,
            calls: calls.iter().copied().collect(),
            allocation: BTreeMap::new(),
            phases: Vec::new(),
            limits: vec![None; n],
            desired: vec![None; n],
            mds: BTreeMap::new(),
            capacity: BTreeMap::new(),
            periods: BTreeMap::new(),
        }
    }

    #[test]
    fn a_relative_latency_target_is_its_factor_times_the_references_settled_median() {
        // The reference's MDS answered in 900 µs in its first (unsettled) seconds, then in
        // 100, 120 and 140 µs; the job ended at 20 s.
        let mut held = outcome(&[], vec![Some(20.0)]);
        held.setup = "Held".into();
        for (s, us) in [
            (2, 900.0),
            (11, 100.0),
            (12, 140.0),
            (13, 120.0),
            (25, 900.0),
        ] {
            held.mds.insert(
                s,
                sluice_control::source::ServerReading {
                    seconds: 1.0,
                    requests_per_s: 1000.0,
                    latency_s: Some(us * 1e-6),
                    queue: None,
                },
            );
        }
        let ceph = |target: &str| CephSpec {
            small_cache: Vec::new(),
            target: Some(target.parse().expect("a target")),
            settle: 10.0,
        };
        let t = latency_target(&ceph("1.5x Held"), std::slice::from_ref(&held))
            .expect("the reference ran");
        assert_eq!(t.us, 180.0);
        assert!(t.how.contains("1.5 × 120 µs"), "{}", t.how);
        assert_eq!(latency_target(&ceph("1.5x Held"), &[]), None);
        let fixed = latency_target(&ceph("150us"), &[]).expect("a fixed target");
        assert_eq!(fixed.us, 150.0);
    }

    #[test]
    fn an_automatic_pool_is_over_when_past_the_capacity_it_had_that_second() {
        // 100 calls in each of seconds 0-2; the fixed capacity 200, an automatic one
        // found at 80 in second 1 and 150 in second 2 (none sampled in second 0).
        let mut o = outcome(
            &[((0, 0), 100.0), ((0, 1), 100.0), ((0, 2), 100.0)],
            vec![None],
        );
        assert_eq!(o.seconds_over(200.0), 0);
        o.capacity = BTreeMap::from([(1, 80.0), (2, 150.0)]);
        assert_eq!(o.seconds_over(200.0), 1);
    }

    #[test]
    fn each_job_is_said_placed_at_the_first_sample_of_a_period_found() {
        let sample = |seconds: f64, from: &str, confidence: f64| PeriodSample {
            seconds,
            from: from.into(),
            detected: seconds,
            confidence,
        };
        let mut o = outcome(&[], vec![None, None, None]);
        // job0 given (not found), job1 unknown then detected, job2 never placed.
        for s in 1..=4 {
            o.periods.insert((0, s), sample(1.92, "given", 0.0));
            o.periods.insert((2, s), sample(0.0, "", 0.3));
        }
        o.periods.insert((1, 1), sample(0.0, "", 0.4));
        o.periods.insert((1, 3), sample(38.4, "detected", 0.97));
        o.periods.insert((1, 4), sample(38.1, "detected", 0.99));
        let text = placements(std::slice::from_ref(&o));
        assert!(
            text.ends_with(
                "Baseline: job0 given (1.92 s); job1 at 3 s (38.4 s detected, 0.97); job2 never\n"
            ),
            "{text}"
        );
        o.periods.remove(&(1, 3));
        o.periods.remove(&(1, 4));
        assert_eq!(placements(&[o]), "", "nothing found, nothing to say");
    }

    #[test]
    fn the_capacity_bound_carries_what_passes_the_capacity_into_later_seconds() {
        // Capacity 10/s. Seconds 1-2: 5 each (served at once); second 3: 30 (10 served,
        // 20 carried); second 4: none. The 20 left take two more seconds: the load cannot
        // end before 5 s.
        let o = outcome(
            &[((0, 1), 5.0), ((0, 2), 5.0), ((0, 3), 30.0), ((0, 4), 0.0)],
            vec![Some(3.0)],
        );
        assert!((o.capacity_bound(10.0) - 5.0).abs() < 1e-9);
        // Under a capacity it never reaches, the last second's calls end it in part.
        assert!((o.capacity_bound(60.0) - (2.0 + 30.0 / 60.0)).abs() < 1e-9);
    }

    #[test]
    fn a_stopped_job_runs_to_the_end_of_the_last_second() {
        let o = outcome(&[((0, 1), 5.0), ((1, 4), 5.0)], vec![Some(3.0), None]);
        assert!((o.makespan() - 5.0).abs() < 1e-9);
    }
}
