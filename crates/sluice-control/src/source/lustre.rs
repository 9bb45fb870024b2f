//! A Lustre MDT's statistics, as its server writes them (`lctl get_param` prints the
//! same text):
//!
//! - the MDS service's `stats` (`mds.MDS.mdt.stats`, under /sys/kernel/debug/lustre or
//!   /proc/fs/lustre): one line per request kind, `NAME COUNT samples [UNIT] MIN MAX SUM
//!   SUMSQ`, among them `req_waittime` (µs each request waited in the queue), `req_qdepth`
//!   (the queue's depth each request found) and the handlers' service times
//!   (`mds_getattr`, `mds_reint_create`, … in µs);
//! - an MDT's `md_stats` (`mdt.*.md_stats`): operations taken, the same line format
//!   (`open 2 samples [reqs]`, or with `[usecs] MIN MAX SUM SUMSQ` on newer servers);
//! - an MDT's `job_stats` (`mdt.*.job_stats`): the same per job, in YAML.
//!
//! No Lustre server runs here: the parsers are tested against recorded text.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::{Counters, OpTime, OpTimes, Queue, SourceError};

/// One line of an lprocfs statistics file.
#[derive(Clone, Debug, PartialEq)]
pub struct Stat {
    /// The counter's name (`req_waittime`, `open`, …).
    pub name: String,
    /// Events counted.
    pub samples: u64,
    /// Its unit, as written between brackets (`usec`, `usecs`, `reqs`, …).
    pub unit: String,
    /// Their values summed, when the line carries MIN MAX SUM.
    pub sum: Option<u64>,
}

/// The lines of an lprocfs statistics file (`md_stats`, a service's `stats`), without
/// the time stamps (`snapshot_time`, `start_time`, `elapsed_time`).
pub fn parse_stats(text: &str) -> Result<Vec<Stat>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() || matches!(f[0], "snapshot_time" | "start_time" | "elapsed_time") {
            continue;
        }
        let bad = || {
            format!(
                "line {}: {line:?}: expected NAME COUNT samples [UNIT] …",
                n + 1
            )
        };
        if f.len() < 4 || f[2] != "samples" {
            return Err(bad());
        }
        let unit = f[3]
            .strip_prefix('[')
            .and_then(|u| u.strip_suffix(']'))
            .ok_or_else(bad)?;
        out.push(Stat {
            name: f[0].to_owned(),
            samples: f[1].parse().map_err(|_| bad())?,
            unit: unit.to_owned(),
            sum: f.get(6).map(|s| s.parse()).transpose().map_err(|_| bad())?,
        });
    }
    Ok(out)
}

fn is_usec(unit: &str) -> bool {
    matches!(unit, "usec" | "usecs")
}

/// The counters of a statistics file. A service's `stats` (it has `req_waittime`): each
/// request's latency is its wait in the queue plus its handler's service time, and the
/// queue is `req_qdepth`. An MDT's `md_stats`: the requests are its operations, their
/// latency the `[usecs]` sums where the server keeps them; no queue.
pub fn counters(stats: &[Stat]) -> Counters {
    let find = |name: &str| stats.iter().find(|s| s.name == name);
    let timed = stats.iter().filter(|s| is_usec(&s.unit) && s.sum.is_some());
    let latency_sum_s = timed.clone().filter_map(|s| s.sum).sum::<u64>() as f64 / 1e6;
    if let Some(wait) = find("req_waittime") {
        return Counters {
            requests: wait.samples as f64,
            latency_count: wait.samples as f64,
            latency_sum_s,
            queue: find("req_qdepth").and_then(|q| {
                Some(Queue::Sampled {
                    count: q.samples as f64,
                    sum: q.sum? as f64,
                })
            }),
        };
    }
    // md_stats: every line is an operation of clients.
    Counters {
        requests: stats.iter().map(|s| s.samples).sum::<u64>() as f64,
        latency_count: timed.map(|s| s.samples).sum::<u64>() as f64,
        latency_sum_s,
        queue: None,
    }
}

/// Reads the statistics file at `path` within `deadline`.
pub fn read(path: &Path, deadline: Duration) -> Result<Counters, SourceError> {
    Ok(counters(&read_stats(path, deadline)?))
}

/// Reads each operation's count and summed time from the MDT's `md_stats` at `path`,
/// within `deadline`.
pub fn read_ops(path: &Path, deadline: Duration) -> Result<OpTimes, SourceError> {
    op_times(&read_stats(path, deadline)?).map_err(|why| SourceError::Format {
        path: path.to_owned(),
        why,
    })
}

/// Each timed operation of an MDT's `md_stats` (`open 2000 samples [usecs] MIN MAX SUM
/// SUMSQ`), by its name; refused for a service's `stats` (whose handlers' names are not
/// clients' operations) and for `md_stats` that keep counts only (before Lustre 2.15).
pub fn op_times(stats: &[Stat]) -> Result<OpTimes, String> {
    if stats.iter().any(|s| s.name == "req_waittime") {
        return Err(
            "a service's stats file: operation costs are learned from an MDT's md_stats".into(),
        );
    }
    let ops: OpTimes = stats
        .iter()
        .filter(|s| is_usec(&s.unit))
        .filter_map(|s| {
            Some((
                s.name.clone(),
                OpTime {
                    count: s.samples as f64,
                    sum_s: s.sum? as f64 / 1e6,
                },
            ))
        })
        .collect();
    if ops.is_empty() {
        return Err(
            "md_stats without times ([reqs] only, before Lustre 2.15): no operation's latency to learn from"
                .into(),
        );
    }
    Ok(ops)
}

/// The lines of the statistics file at `path`, read within `deadline` (the read runs in
/// a thread of its own, so that a server stuck in its statistics cannot hold the caller).
fn read_stats(path: &Path, deadline: Duration) -> Result<Vec<Stat>, SourceError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.to_owned();
    std::thread::Builder::new()
        .name("source-lustre".into())
        .spawn(move || {
            let _ = tx.send(std::fs::read_to_string(&p));
        })
        .map_err(|source| SourceError::Io {
            path: path.to_owned(),
            source,
        })?;
    let text = match rx.recv_timeout(deadline) {
        Ok(r) => r.map_err(|source| SourceError::Io {
            path: path.to_owned(),
            source,
        })?,
        Err(_) => {
            return Err(SourceError::Io {
                path: path.to_owned(),
                source: std::io::ErrorKind::TimedOut.into(),
            });
        }
    };
    let format = |why| SourceError::Format {
        path: path.to_owned(),
        why,
    };
    let stats = parse_stats(&text).map_err(format)?;
    if stats.is_empty() {
        return Err(format(
            "no statistics in it (a stats or md_stats file?)".into(),
        ));
    }
    Ok(stats)
}

/// One job's operations on an MDT, from `job_stats`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobStats {
    /// The job's id as the clients tag it (`jobid_name`, e.g. `4242:1000:node7`).
    pub job_id: String,
    /// By operation.
    pub ops: BTreeMap<String, Stat>,
}

impl JobStats {
    /// Operations the job sent.
    pub fn requests(&self) -> u64 {
        self.ops.values().map(|s| s.samples).sum()
    }

    /// Their mean service time at the MDT, seconds, where the server times them.
    pub fn mean_latency_s(&self) -> Option<f64> {
        let timed: Vec<&Stat> = self
            .ops
            .values()
            .filter(|s| is_usec(&s.unit) && s.sum.is_some())
            .collect();
        let n: u64 = timed.iter().map(|s| s.samples).sum();
        let sum: u64 = timed.iter().filter_map(|s| s.sum).sum();
        (n > 0).then(|| sum as f64 / n as f64 / 1e6)
    }
}

/// The jobs of a `job_stats` file (the YAML the MDT writes: `- job_id: ID`, then one
/// `OP: { samples: N, unit: U[, min: …, max: …, sum: S, sumsq: …] }` per operation).
pub fn parse_job_stats(text: &str) -> Result<Vec<JobStats>, String> {
    let mut jobs: Vec<JobStats> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let bad = |why: &str| format!("line {}: {line:?}: {why}", n + 1);
        let t = line.trim();
        if t.is_empty() || t == "job_stats:" || t.ends_with(".job_stats=") {
            continue;
        }
        if let Some(id) = t.strip_prefix("- job_id:") {
            jobs.push(JobStats {
                job_id: id.trim().trim_matches('"').to_owned(),
                ops: BTreeMap::new(),
            });
            continue;
        }
        let (key, value) = t
            .split_once(':')
            .ok_or_else(|| bad("expected KEY: VALUE"))?;
        let value = value.trim();
        let Some(fields) = value.strip_prefix('{').and_then(|v| v.strip_suffix('}')) else {
            // snapshot_time, start_time, elapsed_time: scalars.
            continue;
        };
        let job = jobs
            .last_mut()
            .ok_or_else(|| bad("an operation before any job_id"))?;
        let mut stat = Stat {
            name: key.trim().to_owned(),
            samples: 0,
            unit: String::new(),
            sum: None,
        };
        let mut has_samples = false;
        for pair in fields.split(',') {
            let (k, v) = pair
                .split_once(':')
                .ok_or_else(|| bad("expected k: v pairs"))?;
            let v = v.trim();
            match k.trim() {
                "samples" => {
                    stat.samples = v.parse().map_err(|_| bad("samples is not a count"))?;
                    has_samples = true;
                }
                "unit" => stat.unit = v.to_owned(),
                "sum" => stat.sum = Some(v.parse().map_err(|_| bad("sum is not a count"))?),
                _ => {}
            }
        }
        if !has_samples {
            return Err(bad("no samples"));
        }
        job.ops.insert(stat.name.clone(), stat);
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The MDS service's stats as Lustre 2.12 writes them (`lctl get_param
    /// mds.MDS.mdt.stats`), figures made up in the real format.
    const SERVICE: &str = "\
snapshot_time             1700000100.500000 secs.usecs
req_waittime              3000 samples [usec] 2 1074 189000 49094743
req_qdepth                3000 samples [reqs] 0 7 1500 4500
req_active                3000 samples [reqs] 1 3 3562 4586
req_timeout               3000 samples [sec] 1 15 3000 3043
reqbuf_avail              6554 samples [bufs] 63 64 414981 26276235
ldlm_ibits_enqueue        1000 samples [reqs] 1 1 1000 1000
mds_getattr               1000 samples [usec] 9 45 40000 3218000
mds_close                 1000 samples [usec] 7 104 71000 673621
";

    /// An MDT's md_stats: counts only (Lustre 2.12), then with times (2.15).
    const MD_STATS_COUNTS: &str = "\
snapshot_time             1700000100.500000 secs.usecs
open                      2000 samples [reqs]
close                     2000 samples [reqs]
mknod                     500 samples [reqs]
unlink                    500 samples [reqs]
getattr                   3000 samples [reqs]
";
    const MD_STATS_TIMED: &str = "\
snapshot_time             1700000100.500000 secs.usecs
start_time                1700000000.000000 secs.usecs
elapsed_time              100.500000 secs.usecs
open                      2000 samples [usecs] 3 900 60000 9000000
close                     2000 samples [usecs] 2 300 20000 900000
getattr                   3000 samples [usecs] 1 200 30000 600000
";

    const JOB_STATS: &str = "\
mdt.lustre-MDT0000.job_stats=
job_stats:
- job_id:          4242:1000:node7
  snapshot_time:   1700000100
  open:            { samples:        1200, unit:  usecs, min:        3, max:      900, sum:        36000, sumsq:      5400000 }
  close:           { samples:        1200, unit:  usecs, min:        2, max:      300, sum:        12000, sumsq:       540000 }
  mknod:           { samples:           0, unit:  usecs, min:        0, max:        0, sum:            0, sumsq:            0 }
  getattr:         { samples:         600, unit:  usecs, min:        1, max:      200, sum:         6000, sumsq:       120000 }
- job_id:          ls.500
  snapshot_time:   1700000099
  open:            { samples:           3, unit:  reqs }
  getattr:         { samples:          40, unit:  reqs }
";

    #[test]
    fn a_service_stats_file_gives_requests_wait_plus_service_and_queue() {
        let c = counters(&parse_stats(SERVICE).unwrap());
        assert_eq!(c.requests, 3000.0);
        assert_eq!(c.latency_count, 3000.0);
        // Waits 189000 µs + getattr 40000 + close 71000; not the [sec] or [reqs] lines.
        assert!((c.latency_sum_s - 0.3).abs() < 1e-9, "{}", c.latency_sum_s);
        assert_eq!(
            c.queue,
            Some(Queue::Sampled {
                count: 3000.0,
                sum: 1500.0
            })
        );
    }

    #[test]
    fn md_stats_give_operations_and_their_times_when_kept() {
        let c = counters(&parse_stats(MD_STATS_COUNTS).unwrap());
        assert_eq!((c.requests, c.latency_count, c.queue), (8000.0, 0.0, None));
        let c = counters(&parse_stats(MD_STATS_TIMED).unwrap());
        assert_eq!((c.requests, c.latency_count), (7000.0, 7000.0));
        assert!((c.latency_sum_s - 0.11).abs() < 1e-9);
    }

    #[test]
    fn timed_md_stats_give_each_operations_latency() {
        let ops = op_times(&parse_stats(MD_STATS_TIMED).unwrap()).unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(ops["open"].count, 2000.0);
        assert!((ops["open"].sum_s - 0.06).abs() < 1e-12);
        assert!((ops["getattr"].sum_s - 0.03).abs() < 1e-12);
        let e = op_times(&parse_stats(MD_STATS_COUNTS).unwrap()).unwrap_err();
        assert!(e.contains("without times"), "{e}");
        let e = op_times(&parse_stats(SERVICE).unwrap()).unwrap_err();
        assert!(e.contains("service's stats"), "{e}");
    }

    #[test]
    fn job_stats_are_read_per_job() {
        let jobs = parse_job_stats(JOB_STATS).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].job_id, "4242:1000:node7");
        assert_eq!(jobs[0].requests(), 3000);
        assert_eq!(jobs[0].ops["open"].sum, Some(36000));
        // (36000 + 12000 + 6000) µs over 3000 operations.
        assert!((jobs[0].mean_latency_s().unwrap() - 18e-6).abs() < 1e-12);
        assert_eq!(jobs[1].requests(), 43);
        assert_eq!(jobs[1].mean_latency_s(), None);
    }

    #[test]
    fn malformed_text_is_refused_with_its_line() {
        let e = parse_stats("open 12 [reqs]\n").unwrap_err();
        assert!(e.starts_with("line 1:"), "{e}");
        let e = parse_job_stats("job_stats:\n  open: { samples: 1, unit: reqs }\n").unwrap_err();
        assert!(e.contains("before any job_id"), "{e}");
    }

    #[test]
    fn a_file_that_is_not_there_is_an_io_error() {
        let e = read(Path::new("/nonexistent/mdt/stats"), Duration::from_secs(1)).unwrap_err();
        assert!(matches!(e, SourceError::Io { .. }), "{e}");
    }
}
