//! A Ceph MDS's admin socket: the command `perf dump` for the `mds` counters, as
//! `ceph daemon mds.NAME perf dump mds` sends it. The protocol: the command as JSON,
//! ended by a NUL byte; the answer, a 32-bit big-endian length then that many bytes of
//! JSON.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{Counters, OpTime, OpTimes, Queue, SourceError};

/// The MDS's own counters: requests taken (`mds.request`), replies with their latency
/// (`mds.reply_latency`: `avgcount`, `sum` in seconds) and the requests queued now
/// (`mds.q`).
const COMMAND: &[u8] = b"{\"prefix\": \"perf dump\", \"logger\": \"mds\"}\0";

/// The MDS server's counters, among them each operation's replies and their latency
/// (`mds_server.req_<op>_latency`).
const OPS_COMMAND: &[u8] = b"{\"prefix\": \"perf dump\", \"logger\": \"mds_server\"}\0";

/// No MDS answers a perf dump with more than this; a longer length is garbage.
const MAX_ANSWER: u32 = 16 << 20;

/// Reads the MDS's counters from its admin socket at `path`, within `deadline`.
pub fn read(path: &Path, deadline: Duration) -> Result<Counters, SourceError> {
    let answer = ask(path, COMMAND, deadline)?;
    parse(&answer).map_err(|why| SourceError::Format {
        path: path.to_owned(),
        why,
    })
}

/// Reads each operation's replies and their summed latency from the admin socket at
/// `path`, within `deadline`.
pub fn read_ops(path: &Path, deadline: Duration) -> Result<OpTimes, SourceError> {
    let answer = ask(path, OPS_COMMAND, deadline)?;
    parse_ops(&answer).map_err(|why| SourceError::Format {
        path: path.to_owned(),
        why,
    })
}

/// Sends `command` to the admin socket at `path` and returns its answer's JSON, all
/// within `deadline`.
fn ask(path: &Path, command: &[u8], deadline: Duration) -> Result<Vec<u8>, SourceError> {
    let io = |source| SourceError::Io {
        path: path.to_owned(),
        source,
    };
    let started = Instant::now();
    let mut s = UnixStream::connect(path).map_err(io)?;
    let left = || {
        deadline
            .checked_sub(started.elapsed())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::TimedOut))
    };
    s.set_write_timeout(Some(left().map_err(io)?)).map_err(io)?;
    s.write_all(command).map_err(io)?;
    let mut answer = Vec::new();
    let mut want: Option<usize> = None;
    let mut buf = [0u8; 16 << 10];
    loop {
        if let Some(n) = want
            && answer.len() >= 4 + n
        {
            break;
        }
        s.set_read_timeout(Some(left().map_err(io)?)).map_err(io)?;
        let got = s.read(&mut buf).map_err(io)?;
        if got == 0 {
            return Err(SourceError::Format {
                path: path.to_owned(),
                why: "the admin socket closed before its answer was whole".into(),
            });
        }
        answer.extend_from_slice(&buf[..got]);
        if want.is_none() && answer.len() >= 4 {
            let n = u32::from_be_bytes([answer[0], answer[1], answer[2], answer[3]]);
            if n > MAX_ANSWER {
                return Err(SourceError::Format {
                    path: path.to_owned(),
                    why: format!("an answer of {n} bytes: not an admin socket's"),
                });
            }
            want = Some(n as usize);
        }
    }
    let n = want.unwrap_or(0);
    answer.truncate(4 + n);
    answer.drain(..4);
    Ok(answer)
}

/// The counters in a `perf dump` answer (JSON).
pub fn parse(json: &[u8]) -> Result<Counters, String> {
    let v: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| format!("perf dump is not JSON: {e}"))?;
    let mds = v
        .get("mds")
        .ok_or("perf dump has no \"mds\" section: is this an MDS's admin socket?")?;
    let number = |value: Option<&serde_json::Value>, what: &str| {
        value
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| format!("perf dump: no number at mds.{what}"))
    };
    let latency = mds.get("reply_latency");
    Ok(Counters {
        requests: number(mds.get("request"), "request")?,
        latency_count: number(
            latency.and_then(|l| l.get("avgcount")),
            "reply_latency.avgcount",
        )?,
        latency_sum_s: number(latency.and_then(|l| l.get("sum")), "reply_latency.sum")?,
        queue: mds
            .get("q")
            .and_then(serde_json::Value::as_f64)
            .map(Queue::Gauge),
    })
}

/// Each operation's counters in a `perf dump` answer of the `mds_server` logger: every
/// `req_<op>_latency` (`avgcount` replies, `sum` seconds), by the MDS's name of the
/// operation (`create`, `lookup`, `unlink`, …).
pub fn parse_ops(json: &[u8]) -> Result<OpTimes, String> {
    let v: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| format!("perf dump is not JSON: {e}"))?;
    let server = v
        .get("mds_server")
        .and_then(serde_json::Value::as_object)
        .ok_or("perf dump has no \"mds_server\" section: is this an MDS's admin socket?")?;
    let mut ops = OpTimes::new();
    for (key, value) in server {
        let Some(op) = key
            .strip_prefix("req_")
            .and_then(|k| k.strip_suffix("_latency"))
        else {
            continue;
        };
        let number = |what: &str| {
            value
                .get(what)
                .and_then(serde_json::Value::as_f64)
                .ok_or_else(|| format!("perf dump: no number at mds_server.{key}.{what}"))
        };
        ops.insert(
            op.to_owned(),
            OpTime {
                count: number("avgcount")?,
                sum_s: number("sum")?,
            },
        );
    }
    if ops.is_empty() {
        return Err("perf dump: no req_<op>_latency in mds_server".into());
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Part of a real answer: ceph-mds 16.2.15 (Debian 12, experiments/cephfs) after
    /// one file was written on one mount and read on another; other counters cut.
    const SAMPLE: &str = r#"{
        "mds": {
            "request": 7,
            "reply": 7,
            "reply_latency": { "avgcount": 7, "sum": 0.001971983, "avgtime": 0.000281711 },
            "slow_reply": 0,
            "forward": 0,
            "q": 0,
            "load_cent": 1062
        },
        "mds_server": { "handle_client_request": 7 }
    }"#;

    #[test]
    fn reads_the_mds_counters_of_a_perf_dump() {
        let c = parse(SAMPLE.as_bytes()).unwrap();
        assert_eq!(c.requests, 7.0);
        assert_eq!(c.latency_count, 7.0);
        assert!((c.latency_sum_s - 0.001_971_983).abs() < 1e-12);
        assert_eq!(c.queue, Some(Queue::Gauge(0.0)));
    }

    #[test]
    fn says_what_is_missing() {
        let e = parse(br#"{"osd": {}}"#).unwrap_err();
        assert!(e.contains("no \"mds\" section"), "{e}");
        let e = parse(br#"{"mds": {"request": 1}}"#).unwrap_err();
        assert!(e.contains("reply_latency.avgcount"), "{e}");
        assert!(parse(b"not json").unwrap_err().contains("not JSON"));
    }

    #[test]
    fn reads_each_operations_latency_of_the_mds_server() {
        let ops = parse_ops(
            br#"{"mds_server": {"handle_client_request": 9, "dispatch_client_request": 9,
                "req_create_latency": {"avgcount": 4, "sum": 0.006, "avgtime": 0.0015},
                "req_lookup_latency": {"avgcount": 5, "sum": 0.002, "avgtime": 0.0004}}}"#,
        )
        .unwrap();
        assert_eq!(ops.len(), 2);
        assert_eq!(ops["create"].count, 4.0);
        assert!((ops["lookup"].sum_s - 0.002).abs() < 1e-12);
        let e = parse_ops(br#"{"mds": {}}"#).unwrap_err();
        assert!(e.contains("no \"mds_server\" section"), "{e}");
        let e = parse_ops(br#"{"mds_server": {"req_open_latency": {"avgcount": 1}}}"#).unwrap_err();
        assert!(e.contains("req_open_latency.sum"), "{e}");
        let e = parse_ops(br#"{"mds_server": {"handle_client_request": 1}}"#).unwrap_err();
        assert!(e.contains("no req_<op>_latency"), "{e}");
    }

    #[test]
    fn a_socket_nobody_serves_fails_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(&dir.path().join("none.asok"), Duration::from_secs(1)).unwrap_err();
        assert!(matches!(e, SourceError::Io { .. }), "{e}");
    }

    #[test]
    fn a_server_that_never_answers_fails_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mute.asok");
        // Accepts and reads, never answers: an MDS hung in its dispatch.
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let held = std::thread::spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            let mut sink = [0u8; 64];
            let _ = c.read(&mut sink);
            std::thread::sleep(Duration::from_secs(2));
        });
        let t = Instant::now();
        let e = read(&path, Duration::from_millis(300)).unwrap_err();
        assert!(matches!(e, SourceError::Io { .. }), "{e}");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        held.join().unwrap();
    }
}
