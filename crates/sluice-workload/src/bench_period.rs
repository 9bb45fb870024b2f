//! `sluice bench period`: what one period detection costs, at the window sizes the
//! controller searches and at IO-SETS' whole frame.
//!
//! It lives here rather than in sluice-policy because it reads a clock, which the
//! detector never does. The signals are fixed bursts, so two runs time the same work.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde::Serialize;

use sluice_policy::period::{Detection, History, detect_period};

/// The sampling interval of every signal timed here, seconds (the experiments' 100 ms).
const DT: f64 = 0.1;

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct PeriodRow {
    /// Samples the detector searched (for a [`History`], its level length).
    pub samples: usize,
    /// What was timed.
    pub what: &'static str,
    /// Mean time of one detection, microseconds.
    pub us: f64,
}

/// Bursts of `on` samples every `period` samples: I/O phases between compute phases.
fn bursts(n: usize, period: usize, on: usize) -> Vec<f64> {
    (0..n)
        .map(|i| if i % period < on { 100.0 } else { 0.0 })
        .collect()
}

/// Mean time of `f` over at least half a second and at least ten calls.
fn time(mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    let mut calls = 0u32;
    while calls < 10 || start.elapsed() < Duration::from_millis(500) {
        f();
        calls += 1;
    }
    start.elapsed() / calls
}

/// Times one detection on each window the controller uses (the 1,024 recent samples a
/// [`History`] searches first, a whole fine level of 2,048, one short of a power of two),
/// IO-SETS' frame at 100 ms (28,000 samples), `History::detect` as `set10` runs it for a
/// short and a long period, and `History::detect_ftio` as `set10-ftio` runs it.
pub fn run() -> Vec<PeriodRow> {
    let mut rows = Vec::new();
    for (n, what) in [
        (1000, "a level not yet full (Bluestein)"),
        (1024, "the recent fine samples (radix 2)"),
        (2048, "a whole level (radix 2)"),
        (28_000, "IO-SETS' frame at 100 ms"),
    ] {
        let samples = bursts(n, 192, 12);
        let t = time(|| {
            black_box(detect_period(black_box(&samples), DT));
        });
        rows.push(PeriodRow {
            samples: n,
            what,
            us: t.as_secs_f64() * 1e6,
        });
    }
    // A short period settles on the fine level alone; a long one needs both. FTIO's
    // rule (`set10-ftio`) searches the fine level once.
    type Detect = fn(&History, f64) -> Option<Detection>;
    let detections: [(usize, usize, &'static str, Detect); 3] = [
        (
            19,
            2,
            "History::detect, a 1.9-s period (recent fine samples only)",
            History::detect,
        ),
        (
            384,
            24,
            "History::detect, a 38.4-s period (all three windows)",
            History::detect,
        ),
        (
            384,
            24,
            "History::detect_ftio, a 38.4-s period (FTIO's rule, the fine level)",
            History::detect_ftio,
        ),
    ];
    for (period, on, what, detect) in detections {
        let mut history = History::new();
        for s in bursts(2048 * 16, period, on) {
            history.push(s);
        }
        let t = time(|| {
            black_box(detect(&history, DT));
        });
        rows.push(PeriodRow {
            samples: 2048,
            what,
            us: t.as_secs_f64() * 1e6,
        });
    }
    rows
}
