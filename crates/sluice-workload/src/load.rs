//! A closed-loop load: each thread makes one call after another, as fast as it is let.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use sluice_core::op::Op;

use crate::calls::Caller;
use crate::meter::Seconds;

/// Errors setting a load up.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// An operation the load generator cannot drive.
    #[error("operation '{0}' cannot be generated (try: {ops})", ops = crate::calls::callable_names())]
    Unsupported(String),
    /// The directory is unusable.
    #[error("{path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What to run.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    /// Directory the load works in (each thread works in a directory of its own there).
    pub dir: PathBuf,
    /// Operations, made in turn by every thread, one counted call each.
    pub ops: Vec<Op>,
    /// Threads.
    pub threads: usize,
    /// Stop after this long…
    pub duration: Option<Duration>,
    /// …or after this many operations per thread.
    pub count: Option<u64>,
    /// Bytes per read or write.
    pub block: usize,
}

/// What a load achieved.
#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    /// Operations made in each whole second.
    pub per_second: Vec<u64>,
    /// Operations made in all.
    pub total: u64,
    /// Seconds the load ran.
    pub elapsed_s: f64,
}

impl LoadReport {
    /// Operations per second over the whole run.
    pub fn rate(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.total as f64 / self.elapsed_s
        } else {
            0.0
        }
    }
}

/// Runs the load; `each_second` is called with (second, operations in it) as they end.
pub fn run(
    spec: &LoadSpec,
    mut each_second: impl FnMut(u64, u64),
) -> Result<LoadReport, LoadError> {
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let mut callers = (0..spec.threads.max(1))
        .map(|t| Caller::new(&spec.dir, t, spec.block))
        .collect::<Result<Vec<_>, _>>()?;
    let mut seconds = Seconds::start();
    let mut report = LoadReport::default();
    std::thread::scope(|s| {
        let workers: Vec<_> = callers
            .iter_mut()
            .map(|caller| {
                let (done, stop, ops, count) = (&done, &stop, &spec.ops, spec.count);
                s.spawn(move || {
                    let mut n = 0u64;
                    'outer: while !stop.load(Ordering::Relaxed) {
                        for &op in ops {
                            if count.is_some_and(|c| n >= c) {
                                break 'outer;
                            }
                            caller.make(op);
                            n += 1;
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        let mut last = 0u64;
        while let Some(sec) = seconds.next(|| workers.iter().all(|w| w.is_finished())) {
            let now = done.load(Ordering::Relaxed);
            report.per_second.push(now - last);
            each_second(sec, now - last);
            last = now;
            if spec.duration.is_some_and(|d| Duration::from_secs(sec) >= d) {
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    report.elapsed_s = seconds.started().elapsed().as_secs_f64();
    report.total = done.load(Ordering::Relaxed);
    Ok(report)
}
