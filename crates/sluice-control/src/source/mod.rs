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

pub mod ceph;
pub mod lustre;

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

/// The last reading of a [`Poller`], and whether it has been taken.
#[derive(Default)]
struct Latest {
    reading: Option<ServerReading>,
    taken: bool,
}

/// A thread reading one source every `interval`; the pool's controller takes each new
/// reading once. Dropped, the thread stops after its current read (it is not joined: a
/// read blocked on a stuck server ends at its deadline).
pub struct Poller {
    latest: Arc<Mutex<Latest>>,
    stop: Arc<AtomicBool>,
    spec: SourceSpec,
}

impl Poller {
    /// Starts reading `spec` for pool `pool` every `interval`, each read within the
    /// smaller of `interval` and 2 s.
    pub fn start(pool: &str, spec: SourceSpec, interval: Duration) -> std::io::Result<Poller> {
        let latest = Arc::new(Mutex::new(Latest::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let deadline = interval.min(Duration::from_secs(2));
        let (l, s, sp, name) = (latest.clone(), stop.clone(), spec.clone(), pool.to_owned());
        std::thread::Builder::new()
            .name(format!("source-{pool}"))
            .spawn(move || poll(&name, &sp, interval, deadline, &l, &s))?;
        Ok(Poller { latest, stop, spec })
    }

    /// What it reads.
    pub fn spec(&self) -> &SourceSpec {
        &self.spec
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
    interval: Duration,
    deadline: Duration,
    latest: &Mutex<Latest>,
    stop: &AtomicBool,
) {
    let mut before: Option<(Instant, Counters)> = None;
    let mut failing = false;
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        match read(spec, deadline) {
            Ok(now) => {
                if failing {
                    tracing::info!(pool, source = %spec, "capacity source answers again");
                    failing = false;
                }
                if let Some((at, b)) = before
                    && let Some(r) =
                        ServerReading::between(&b, &now, started.duration_since(at).as_secs_f64())
                {
                    let mut l = latest.lock().unwrap_or_else(|e| e.into_inner());
                    *l = Latest {
                        reading: Some(r),
                        taken: false,
                    };
                }
                before = Some((started, now));
            }
            Err(e) => {
                if !failing {
                    tracing::warn!(
                        pool,
                        source = %spec,
                        "capacity source failed, the pool keeps its capacity until it answers: {e}"
                    );
                    failing = true;
                }
                // The next good read starts a new difference: one across the gap would
                // mix two intervals.
                before = None;
            }
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
