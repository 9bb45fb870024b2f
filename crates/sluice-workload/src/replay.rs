//! The trace replayer: real metadata calls at a trace's rates, in its operation mix.
//!
//! Each operation of the trace has a schedule: its calls of trace second `s` fall due
//! evenly through that second (the n-th of `c` calls at `s + n/c`). Each operation has
//! threads of its own, as in PADLL's replayer, where each thread submits one type of
//! operation: a thread takes the next call of its operation that is due and not yet taken
//! by another, makes it, and sleeps until the next falls due. A call held back by a limit
//! holds its thread; meanwhile the calls that fall due pile up, and are made as soon as
//! the limit lets them: the replayer keeps a backlog and catches up, as PADLL's does, so a
//! throttled replay ends later than its trace and, while catching up, runs above the
//! trace's rate. Operations do not share threads, so a limit on one holds that one only
//! (threads shared among operations would hold them all to the pace of the throttled one).
//!
//! `scale` multiplies every rate; `speedup` plays each trace second in `1/speedup` wall
//! seconds at the same rates (PADLL played each minute of its trace in one second), so a
//! trace second holds `rate × scale / speedup` calls.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sluice_core::op::Op;

use crate::calls::Caller;
use crate::load::LoadError;
use crate::meter::Seconds;
use crate::trace::Trace;

/// What to replay, and how.
#[derive(Clone, Debug)]
pub struct ReplaySpec {
    /// Directory the threads work in (each in a directory of its own there).
    pub dir: PathBuf,
    /// Threads making the calls of each operation.
    pub threads: usize,
    /// Multiplies every rate of the trace.
    pub scale: f64,
    /// Trace seconds per wall second.
    pub speedup: f64,
}

/// One wall-clock second of a replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecondReport {
    /// The second, from 1: the interval `(second - 1, second]` since the replay started
    /// (the last one may end early, when the replay did).
    pub second: u64,
    /// Per operation of the trace: calls that fell due in this second.
    pub due: Vec<u64>,
    /// Per operation: calls made (returned) in this second.
    pub done: Vec<u64>,
    /// Per operation: calls due by the end of this second and not yet made.
    pub backlog: Vec<u64>,
}

/// What a replay did.
#[derive(Clone, Debug)]
pub struct ReplayReport {
    /// The trace's operations, in the order of the per-operation figures.
    pub ops: Vec<Op>,
    /// Every second, the last one possibly partial.
    pub seconds: Vec<SecondReport>,
    /// Calls made per operation (always the trace's calls: a replay ends when all are made).
    pub calls: Vec<u64>,
    /// Wall seconds the replay took.
    pub elapsed_s: f64,
    /// Wall seconds the trace lasts at this speed-up: what an unhindered replay takes.
    pub trace_s: f64,
}

/// The header of [`SecondReport::csv_rows`].
pub const CSV_HEADER: &str = "second,op,due,done,backlog\n";

impl SecondReport {
    /// `sluice replay`'s line for this second: calls made, due and owed, then each
    /// operation's calls (`ops` names them, in the report's order).
    pub fn line(&self, ops: &[Op]) -> String {
        let sum = |v: &[u64]| v.iter().sum::<u64>();
        let mut line = format!(
            "{:>4}s {:>9} calls/s  due {:>9}  backlog {:>9} ",
            self.second,
            sum(&self.done),
            sum(&self.due),
            sum(&self.backlog)
        );
        for (op, n) in ops.iter().zip(&self.done) {
            line += &format!(" {op} {n}");
        }
        line
    }

    /// The figures of every operation in this second, as CSV rows (see [`CSV_HEADER`]).
    pub fn csv_rows(&self, ops: &[Op]) -> String {
        let mut out = String::new();
        for (k, op) in ops.iter().enumerate() {
            out += &format!(
                "{},{op},{},{},{}\n",
                self.second, self.due[k], self.done[k], self.backlog[k]
            );
        }
        out
    }
}

impl std::fmt::Display for ReplayReport {
    /// `replayed N calls in T s (R calls/s); the trace lasts S s[, L s late]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let calls: u64 = self.calls.iter().sum();
        write!(
            f,
            "replayed {calls} calls in {:.2} s ({:.0} calls/s); the trace lasts {:.2} s",
            self.elapsed_s,
            calls as f64 / self.elapsed_s.max(1e-9),
            self.trace_s,
        )?;
        match self.elapsed_s - self.trace_s {
            late if late >= 0.05 => write!(f, ", {late:.2} s late"),
            _ => Ok(()),
        }
    }
}

/// When each operation's calls fall due.
struct Schedule {
    /// `cum[k][s]`: calls of operation `k` due by the start of trace second `s`, for `s`
    /// from 0 to the trace's length; rounded once, from exact sums, so that no second's
    /// rounding is lost.
    cum: Vec<Vec<u64>>,
}

impl Schedule {
    fn new(trace: &Trace, calls_per_rate: f64) -> Self {
        let cum = trace
            .rates
            .iter()
            .map(|column| {
                let mut sum = 0.0;
                std::iter::once(0)
                    .chain(column.iter().map(|r| {
                        sum += r * calls_per_rate;
                        sum.round() as u64
                    }))
                    .collect()
            })
            .collect();
        Schedule { cum }
    }

    /// All calls of operation `k`.
    fn total(&self, k: usize) -> u64 {
        self.cum[k].last().copied().unwrap_or(0)
    }

    /// Calls of operation `k` due by trace time `t` (seconds).
    fn due(&self, k: usize, t: f64) -> u64 {
        let cum = &self.cum[k];
        let s = t.max(0.0).floor() as usize;
        match (cum.get(s), cum.get(s + 1)) {
            (Some(&a), Some(&b)) => a + ((t - s as f64) * (b - a) as f64) as u64,
            _ => self.total(k),
        }
    }

    /// The trace time at which call `n` (from 1) of operation `k` falls due, if it exists.
    fn when(&self, k: usize, n: u64) -> Option<f64> {
        let cum = &self.cum[k];
        // The second s with cum[s] < n <= cum[s + 1].
        let s = cum.partition_point(|&c| c < n).checked_sub(1)?;
        let (a, b) = (cum[s], *cum.get(s + 1)?);
        Some(s as f64 + (n - a) as f64 / (b - a) as f64)
    }
}

/// The state the threads share.
struct Shared<'a> {
    ops: &'a [Op],
    schedule: Schedule,
    /// Calls taken, per operation.
    taken: Vec<AtomicU64>,
    /// Calls made (returned), per operation.
    made: Vec<AtomicU64>,
    start: std::time::Instant,
    speedup: f64,
}

impl Shared<'_> {
    /// Trace time now.
    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * self.speedup
    }

    /// Takes the next call of operation `k` if it is due by trace time `t`.
    fn take(&self, k: usize, t: f64) -> bool {
        let due = self.schedule.due(k, t);
        self.taken[k]
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                (c < due).then_some(c + 1)
            })
            .is_ok()
    }

    /// A thread's work for operation `k`: until every call of it is taken, make the
    /// next due call, or sleep until one falls due.
    fn work(&self, caller: &mut Caller, k: usize) {
        loop {
            if self.take(k, self.now()) {
                caller.make(self.ops[k]);
                self.made[k].fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let taken = self.taken[k].load(Ordering::Relaxed);
            let Some(due) = self.schedule.when(k, taken + 1) else {
                return;
            };
            let at = Duration::from_secs_f64(due / self.speedup);
            std::thread::sleep(at.saturating_sub(self.start.elapsed()));
        }
    }
}

/// Replays `trace`; `each_second` is called with every second's figures as it ends.
pub fn replay(
    trace: &Trace,
    spec: &ReplaySpec,
    mut each_second: impl FnMut(&SecondReport),
) -> Result<ReplayReport, LoadError> {
    let n = trace.ops.len();
    let per_op = spec.threads.max(1);
    let mut callers = (0..n * per_op)
        .map(|t| Caller::new(&spec.dir, t, 1))
        .collect::<Result<Vec<_>, _>>()?;
    let mut seconds = Seconds::start();
    let shared = Shared {
        ops: &trace.ops,
        schedule: Schedule::new(trace, spec.scale / spec.speedup),
        taken: (0..n).map(|_| AtomicU64::new(0)).collect(),
        made: (0..n).map(|_| AtomicU64::new(0)).collect(),
        start: seconds.started(),
        speedup: spec.speedup,
    };
    let mut reports = Vec::new();
    std::thread::scope(|s| {
        let workers: Vec<_> = callers
            .iter_mut()
            .enumerate()
            .map(|(t, caller)| {
                let shared = &shared;
                s.spawn(move || shared.work(caller, t / per_op))
            })
            .collect();
        let mut last = Figures::zero(n);
        let mut second = 0;
        let finished = || workers.iter().all(|w| w.is_finished());
        while let Some(sec) = seconds.next(finished) {
            second = sec;
            let now = Figures::at(&shared, sec as f64 * spec.speedup);
            let report = now.since(&last, sec);
            each_second(&report);
            reports.push(report);
            last = now;
        }
        // The part of a second in which the replay ended.
        let now = Figures::at(&shared, shared.now());
        if now.made != last.made {
            let report = now.since(&last, second + 1);
            each_second(&report);
            reports.push(report);
        }
    });
    Ok(ReplayReport {
        ops: trace.ops.clone(),
        seconds: reports,
        calls: shared
            .made
            .iter()
            .map(|m| m.load(Ordering::Relaxed))
            .collect(),
        elapsed_s: seconds.started().elapsed().as_secs_f64(),
        trace_s: trace.seconds() as f64 / spec.speedup,
    })
}

/// Per operation, calls due and made by one instant.
struct Figures {
    due: Vec<u64>,
    made: Vec<u64>,
}

impl Figures {
    fn zero(n: usize) -> Self {
        Figures {
            due: vec![0; n],
            made: vec![0; n],
        }
    }

    /// The figures at trace time `t`.
    fn at(shared: &Shared, t: f64) -> Self {
        let n = shared.ops.len();
        Figures {
            due: (0..n).map(|k| shared.schedule.due(k, t)).collect(),
            made: shared
                .made
                .iter()
                .map(|m| m.load(Ordering::Relaxed))
                .collect(),
        }
    }

    /// The second that ends with these figures, after `before`.
    fn since(&self, before: &Figures, second: u64) -> SecondReport {
        let diff = |a: &[u64], b: &[u64]| a.iter().zip(b).map(|(x, y)| x - y).collect();
        SecondReport {
            second,
            due: diff(&self.due, &before.due),
            done: diff(&self.made, &before.made),
            backlog: self
                .due
                .iter()
                .zip(&self.made)
                .map(|(d, m)| d.saturating_sub(*m))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(rates: &[f64]) -> Schedule {
        let trace = Trace {
            ops: vec![Op::Getattr],
            rates: vec![rates.to_vec()],
        };
        Schedule::new(&trace, 1.0)
    }

    #[test]
    fn calls_fall_due_evenly_through_each_second() {
        let s = schedule(&[4.0, 0.0, 2.0]);
        assert_eq!(s.total(0), 6);
        let due: Vec<u64> = [0.0, 0.24, 0.25, 0.5, 1.0, 1.9, 2.49, 2.5, 3.0, 9.0]
            .iter()
            .map(|&t| s.due(0, t))
            .collect();
        assert_eq!(due, [0, 0, 1, 2, 4, 4, 4, 5, 6, 6]);
        assert_eq!(s.when(0, 1), Some(0.25));
        assert_eq!(s.when(0, 4), Some(1.0));
        assert_eq!(s.when(0, 5), Some(2.5));
        assert_eq!(s.when(0, 7), None);
    }

    #[test]
    fn fractions_of_a_call_carry_over_to_later_seconds() {
        let s = schedule(&[0.4, 0.4, 0.4, 0.4, 0.4]);
        assert_eq!(s.cum[0], [0, 0, 1, 1, 2, 2]);
    }
}
