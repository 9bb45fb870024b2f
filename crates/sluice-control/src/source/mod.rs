//! Capacity read from the server (`auto = { source = "ceph-mds:PATH", target = "…" }`):
//! an automatic pool may steer by the file system server's own figures instead of the
//! latency its stages sample. The stage sees a call's whole round trip, client caches and
//! the client's own CPU included; the server's reply latency and queue say how loaded the
//! server itself is, whoever loads it (jobs outside sluice too).
//!
//! A source is read by a thread of its own every interval ([`Poller`]), each read with a
//! deadline; two reads make a [`ServerReading`] (the counters' differences over the time
//! between them). A read that fails is logged once (and its recovery too); the pool then
//! gets no reading and keeps its last capacity.
//!
//! - [`ceph`]: a Ceph MDS's admin socket (`perf dump`: `mds.request`,
//!   `mds.reply_latency`, `mds.q`).
//! - [`lustre`]: a Lustre MDT's statistics (`mdt.*.md_stats`, the MDS service's `stats`
//!   with `req_waittime` and `req_qdepth`, and `job_stats`), parsed from their text.
//!
//! A source may also tell what each operation costs the server (`costs_from =
//! "ceph-mds:PATH"`): the same thread then reads each operation's latency counters
//! ([`read_ops`]), and [`learn`] turns them into the pool's costs.

pub mod ceph;
pub mod learn;
pub mod lustre;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where an automatic pool reads its server's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceSpec {
    /// A Ceph MDS's admin socket: `ceph-mds:/var/run/ceph/ceph-mds.a.asok`.
    CephMds(PathBuf),
    /// A Lustre MDT's statistics file (the MDS service's `stats`, or an MDT's
    /// `md_stats`): `lustre-mdt:/sys/kernel/debug/lustre/mds/MDS/mdt/stats`.
    LustreMdt(PathBuf),
}

/// Why a source's text or a read was refused.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// `KIND:PATH` was not given as such.
    #[error(
        "{0:?}: expected ceph-mds:ADMIN_SOCKET or lustre-mdt:STATS_FILE, with an absolute path"
    )]
    Spec(String),
    /// The server could not be reached or read within the deadline.
    #[error("{path}: {source}")]
    Io {
        /// What was read.
        path: PathBuf,
        /// Why it failed (a timeout shows as `WouldBlock` or `TimedOut`).
        source: std::io::Error,
    },
    /// The server answered something this reader does not understand.
    #[error("{path}: {why}")]
    Format {
        /// What was read.
        path: PathBuf,
        /// What was missing or malformed.
        why: String,
    },
}

impl FromStr for SourceSpec {
    type Err = SourceError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || SourceError::Spec(text.to_owned());
        let (kind, path) = text.split_once(':').ok_or_else(bad)?;
        let path = PathBuf::from(path);
        if !path.is_absolute() {
            return Err(bad());
        }
        match kind {
            "ceph-mds" => Ok(SourceSpec::CephMds(path)),
            "lustre-mdt" => Ok(SourceSpec::LustreMdt(path)),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for SourceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceSpec::CephMds(p) => write!(f, "ceph-mds:{}", p.display()),
            SourceSpec::LustreMdt(p) => write!(f, "lustre-mdt:{}", p.display()),
        }
    }
}

/// A queue's figure as a server keeps it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Queue {
    /// Requests waiting at the instant of the read (Ceph's `mds.q`).
    Gauge(f64),
    /// The depth seen by each arriving request, summed (Lustre's `req_qdepth`): the
    /// interval's mean is the difference of sums over the difference of counts.
    Sampled {
        /// Requests that saw the queue.
        count: f64,
        /// Their depths, summed.
        sum: f64,
    },
}

/// One operation's counters at a server: replies, and their latencies summed. Read from
/// the server, each counted since it started; as a difference, over an interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OpTime {
    /// Requests answered.
    pub count: f64,
    /// Their latencies, summed, in seconds.
    pub sum_s: f64,
}

/// Each operation's [`OpTime`], by the server's own name of it (a Ceph MDS's `create`,
/// `lookup`; a Lustre MDT's `open`, `getattr`).
pub type OpTimes = BTreeMap<String, OpTime>;

/// What each operation did between two reads: the operations answered in between, with
/// the latency they took; an operation whose counters went back (the server restarted)
/// is left out.
pub fn op_deltas(before: &OpTimes, after: &OpTimes) -> OpTimes {
    after
        .iter()
        .filter_map(|(op, a)| {
            let b = before.get(op).copied().unwrap_or_default();
            let d = OpTime {
                count: a.count - b.count,
                sum_s: a.sum_s - b.sum_s,
            };
            (d.count > 0.0 && d.sum_s >= 0.0).then(|| (op.clone(), d))
        })
        .collect()
}

/// A server's counters at one instant, each counted since it started.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counters {
    /// Requests taken from clients.
    pub requests: f64,
    /// Requests whose latency is in `latency_sum_s`.
    pub latency_count: f64,
    /// Their latencies (from arrival to reply), summed, in seconds.
    pub latency_sum_s: f64,
    /// The queue, if the server reports one.
    pub queue: Option<Queue>,
}

/// What a server did between two reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ServerReading {
    /// Seconds between the reads.
    pub seconds: f64,
    /// Requests per second.
    pub requests_per_s: f64,
    /// The mean latency of the requests answered in between, seconds; `None` when none
    /// was.
    pub latency_s: Option<f64>,
    /// Requests queued: at the second read (a gauge), or the mean depth in between.
    pub queue: Option<f64>,
}

impl ServerReading {
    /// The difference of two reads `seconds` apart; `None` when the counters went back
    /// (the server restarted) or no time passed.
    pub fn between(before: &Counters, after: &Counters, seconds: f64) -> Option<ServerReading> {
        let requests = after.requests - before.requests;
        let count = after.latency_count - before.latency_count;
        let sum = after.latency_sum_s - before.latency_sum_s;
        if seconds.is_nan() || seconds <= 0.0 || requests < 0.0 || count < 0.0 || sum < 0.0 {
            return None;
        }
        let queue = match (before.queue, after.queue) {
            (_, Some(Queue::Gauge(q))) => Some(q),
            (Some(Queue::Sampled { count: c0, sum: s0 }), Some(Queue::Sampled { count, sum })) => {
                (count > c0 && sum >= s0).then(|| (sum - s0) / (count - c0))
            }
            _ => None,
        };
        Some(ServerReading {
            seconds,
            requests_per_s: requests / seconds,
            latency_s: (count > 0.0).then(|| sum / count),
            queue,
        })
    }
}

/// Reads a server latency target: a number (decimals allowed) and `us` (or `µs`), `ms`
/// or `s`, a whole number of microseconds above zero: `250us`, `0.4ms`.
pub fn parse_target(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a latency (e.g. 250us, 1.5ms)");
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        _ => return Err(bad()),
    };
    let value: f64 = number.parse().map_err(|_| bad())?;
    let us = value * scale * 1e6;
    if !(1.0..=3.6e9).contains(&us) || (us - us.round()).abs() > 1e-6 {
        return Err(format!(
            "{text:?}: a whole number of microseconds from 1us to 1h"
        ));
    }
    Ok(Duration::from_micros(us.round() as u64))
}

/// A latency target as [`parse_target`] reads it back: in µs below a millisecond's
/// multiples, else in ms.
pub fn format_target(d: Duration) -> String {
    let us = d.as_micros();
    if us.is_multiple_of(1000) {
        format!("{}ms", us / 1000)
    } else {
        format!("{us}us")
    }
}

/// Reads a source's counters once, within `deadline`.
pub fn read(spec: &SourceSpec, deadline: Duration) -> Result<Counters, SourceError> {
    match spec {
        SourceSpec::CephMds(path) => ceph::read(path, deadline),
        SourceSpec::LustreMdt(path) => lustre::read(path, deadline),
    }
}

/// Reads a source's per-operation counters once, within `deadline`.
pub fn read_ops(spec: &SourceSpec, deadline: Duration) -> Result<OpTimes, SourceError> {
    match spec {
        SourceSpec::CephMds(path) => ceph::read_ops(path, deadline),
        SourceSpec::LustreMdt(path) => lustre::read_ops(path, deadline),
    }
}

/// What a [`Poller`] reads of its source: the server's load (for a pool's capacity), its
/// operations' latencies (for a pool's costs), or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wants {
    /// Requests, reply latency and queue ([`read`]).
    pub capacity: bool,
    /// Each operation's latency ([`read_ops`]).
    pub costs: bool,
}

/// The last reading of a [`Poller`], whether it has been taken, and the operations
/// answered since the controller last took them.
#[derive(Default)]
struct Latest {
    reading: Option<ServerReading>,
    taken: bool,
    ops: OpTimes,
}

/// A thread reading one source every `interval`; the pool's controller takes each new
/// reading once. Dropped, the thread stops after its current read (it is not joined: a
/// read blocked on a stuck server ends at its deadline).
pub struct Poller {
    latest: Arc<Mutex<Latest>>,
    stop: Arc<AtomicBool>,
    spec: SourceSpec,
    wants: Wants,
}

impl Poller {
    /// Starts reading what `wants` says of `spec` for pool `pool` every `interval`, each
    /// read within the smaller of `interval` and 2 s.
    pub fn start(
        pool: &str,
        spec: SourceSpec,
        wants: Wants,
        interval: Duration,
    ) -> std::io::Result<Poller> {
        let latest = Arc::new(Mutex::new(Latest::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let deadline = interval.min(Duration::from_secs(2));
        let (l, s, sp, name) = (latest.clone(), stop.clone(), spec.clone(), pool.to_owned());
        std::thread::Builder::new()
            .name(format!("source-{pool}"))
            .spawn(move || poll(&name, &sp, wants, interval, deadline, &l, &s))?;
        Ok(Poller {
            latest,
            stop,
            spec,
            wants,
        })
    }

    /// What it reads.
    pub fn spec(&self) -> &SourceSpec {
        &self.spec
    }

    /// What it reads of it.
    pub fn wants(&self) -> Wants {
        self.wants
    }

    /// The operations the server answered since the last call (each with their summed
    /// latency), none if nothing new was read. Readings the controller did not take in
    /// time add up here rather than replace each other: every sample counts.
    pub fn take_ops(&self) -> OpTimes {
        let mut l = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut l.ops)
    }

    /// The reading made since the last call, if any.
    pub fn take(&self) -> Option<ServerReading> {
        let mut l = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        if l.taken {
            return None;
        }
        l.taken = true;
        l.reading
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn poll(
    pool: &str,
    spec: &SourceSpec,
    wants: Wants,
    interval: Duration,
    deadline: Duration,
    latest: &Mutex<Latest>,
    stop: &AtomicBool,
) {
    let mut before: Option<(Instant, Counters)> = None;
    let mut ops_before: Option<OpTimes> = None;
    let mut failing = false;
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let mut failed = None;
        if wants.capacity {
            match read(spec, deadline) {
                Ok(now) => {
                    if let Some((at, b)) = before
                        && let Some(r) = ServerReading::between(
                            &b,
                            &now,
                            started.duration_since(at).as_secs_f64(),
                        )
                    {
                        let mut l = latest.lock().unwrap_or_else(|e| e.into_inner());
                        l.reading = Some(r);
                        l.taken = false;
                    }
                    before = Some((started, now));
                }
                Err(e) => {
                    failed = Some(e);
                    // The next good read starts a new difference: one across the gap
                    // would mix two intervals.
                    before = None;
                }
            }
        }
        if wants.costs {
            match read_ops(spec, deadline) {
                Ok(now) => {
                    if let Some(b) = &ops_before {
                        let mut l = latest.lock().unwrap_or_else(|e| e.into_inner());
                        for (op, d) in op_deltas(b, &now) {
                            let sum = l.ops.entry(op).or_default();
                            sum.count += d.count;
                            sum.sum_s += d.sum_s;
                        }
                    }
                    ops_before = Some(now);
                }
                Err(e) => {
                    failed.get_or_insert(e);
                    ops_before = None;
                }
            }
        }
        match failed {
            None if failing => {
                tracing::info!(pool, source = %spec, "source answers again");
                failing = false;
            }
            Some(e) if !failing => {
                let what = match (wants.capacity, wants.costs) {
                    (true, true) => "capacity and costs",
                    (true, false) => "capacity",
                    _ => "costs",
                };
                tracing::warn!(
                    pool,
                    source = %spec,
                    "{what} source failed, the pool keeps its {what} until it answers: {e}"
                );
                failing = true;
            }
            _ => {}
        }
        std::thread::sleep(interval.saturating_sub(started.elapsed()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_kind_and_absolute_path() {
        let s: SourceSpec = "ceph-mds:/run/ceph/ceph-mds.a.asok".parse().unwrap();
        assert_eq!(s, SourceSpec::CephMds("/run/ceph/ceph-mds.a.asok".into()));
        assert_eq!(s.to_string(), "ceph-mds:/run/ceph/ceph-mds.a.asok");
        assert!(
            "lustre-mdt:/proc/fs/lustre/mds/MDS/mdt/stats"
                .parse::<SourceSpec>()
                .is_ok()
        );
        for bad in ["ceph-mds:relative.asok", "nfs:/x", "/run/x.asok", ""] {
            assert!(bad.parse::<SourceSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn targets_are_read_in_microseconds_and_written_back() {
        assert_eq!(parse_target("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_target("0.4ms"), Ok(Duration::from_micros(400)));
        assert_eq!(parse_target("2ms"), Ok(Duration::from_millis(2)));
        for bad in ["", "250", "0us", "0.5us", "5 ms", "-1ms", "1e3us"] {
            assert!(parse_target(bad).is_err(), "{bad}");
        }
        for text in ["250us", "2ms", "1500us"] {
            assert_eq!(format_target(parse_target(text).unwrap()), text);
        }
    }

    /// Counters with a sampled queue, of `requests` all answered but ten.
    fn counters(requests: f64, latency_sum_s: f64, queue_sum: f64) -> Counters {
        Counters {
            requests,
            latency_count: requests - 10.0,
            latency_sum_s,
            queue: Some(Queue::Sampled {
                count: requests,
                sum: queue_sum,
            }),
        }
    }

    #[test]
    fn an_operations_deltas_leave_out_the_idle_and_the_restarted() {
        let times = |list: &[(&str, f64, f64)]| -> OpTimes {
            list.iter()
                .map(|&(op, count, sum_s)| (op.to_owned(), OpTime { count, sum_s }))
                .collect()
        };
        let a = times(&[
            ("create", 100.0, 0.15),
            ("lookup", 50.0, 0.01),
            ("mkdir", 3.0, 0.01),
        ]);
        let b = times(&[
            ("create", 300.0, 0.45),
            ("lookup", 50.0, 0.01),
            ("mkdir", 1.0, 0.002),
            ("unlink", 10.0, 0.012),
        ]);
        let d = op_deltas(&a, &b);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d["create"].count, 200.0);
        assert!((d["create"].sum_s - 0.3).abs() < 1e-12);
        // New since the first read: counted from zero.
        assert_eq!(d["unlink"].count, 10.0);
    }

    #[test]
    fn a_reading_is_the_counters_difference() {
        let a = counters(1000.0, 0.5, 100.0);
        let b = counters(3000.0, 1.5, 4100.0);
        let r = ServerReading::between(&a, &b, 2.0).unwrap();
        assert_eq!(r.requests_per_s, 1000.0);
        assert_eq!(r.latency_s, Some(0.0005));
        assert_eq!(r.queue, Some(2.0));
        // Nothing answered in between: no latency, not zero.
        assert_eq!(ServerReading::between(&b, &b, 1.0).unwrap().latency_s, None);
        // A restarted server's counters go back: no reading.
        assert_eq!(ServerReading::between(&b, &a, 1.0), None);
    }
}
