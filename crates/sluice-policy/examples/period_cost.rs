//! What one period detection costs, at the window sizes the controller uses (the
//! 1,024 recent samples a History searches first, a whole fine level of 2,048, and one
//! short of full) and at
//! IO-SETS' whole frame at 100 ms (28,000 samples, as tests/period.rs searches it):
//! `cargo run --release -p sluice-policy --example period_cost`.

use std::time::{Duration, Instant};

use sluice_policy::period::{History, detect_period};

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

fn main() {
    println!("| window (samples) | what | µs per detection |");
    println!("|---|---|---|");
    for (n, what) in [
        (1000, "a level not yet full (Bluestein)"),
        (1024, "the recent fine samples (radix 2)"),
        (2048, "a whole level (radix 2)"),
        (28_000, "IO-SETS' frame at 100 ms"),
    ] {
        let samples = bursts(n, 192, 12);
        let t = time(|| {
            std::hint::black_box(detect_period(std::hint::black_box(&samples), 0.1));
        });
        println!("| {n} | {what} | {:.0} |", t.as_secs_f64() * 1e6);
    }
    // What set10 runs every 16 intervals per job of unknown period: a short period
    // settles on the fine level alone; a long one needs both.
    for (period, on, what) in [
        (
            19,
            2,
            "History::detect, a 1.9-s period (recent fine samples only)",
        ),
        (
            384,
            24,
            "History::detect, a 38.4-s period (all three windows)",
        ),
    ] {
        let mut history = History::new();
        for s in bursts(2048 * 16, period, on) {
            history.push(s);
        }
        let t = time(|| {
            std::hint::black_box(history.detect(0.1));
        });
        println!("| 2 × 2048 | {what} | {:.0} |", t.as_secs_f64() * 1e6);
    }
}
