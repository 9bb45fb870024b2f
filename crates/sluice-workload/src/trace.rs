//! Metadata traces: per-second rates of each operation, read from and written to CSV.
//!
//! The format is CSV with the header `second,op,rate` and one row per second and
//! operation: `second` counts from 0, `op` is an operation name of docs/operations.md that
//! the replayer can make, `rate` is calls per second (a number ≥ 0, decimals allowed). A
//! second or operation with no row has rate 0; rows may come in any order; blank lines are
//! ignored. Everything else is an error that names the file, the line and what is wrong.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::path::Path;

use sluice_core::op::Op;

use crate::calls::{CALLABLE, callable_names};

/// The header line of every trace.
pub const HEADER: &str = "second,op,rate";

/// The longest trace read: 1,000,000 seconds (11.6 days), so that a typo in a second
/// cannot ask for gigabytes.
pub const MAX_SECONDS: usize = 1_000_000;

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read.
    #[error("{file}: {source}")]
    Read {
        /// The file.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is wrong.
    #[error("{file}:{line}: {what}")]
    Line {
        /// The file.
        file: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        what: String,
    },
}

/// A trace: for each operation it names, its rate in calls per second, second by second.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The operations with at least one row, in the order of docs/operations.md.
    pub ops: Vec<Op>,
    /// `rates[k][s]`: calls per second of `ops[k]` in second `s`; every column has the
    /// trace's length.
    pub rates: Vec<Vec<f64>>,
}

impl Trace {
    /// Seconds the trace lasts.
    pub fn seconds(&self) -> usize {
        self.rates.first().map_or(0, Vec::len)
    }

    /// Reads a trace file.
    pub fn read(path: &Path) -> Result<Trace, TraceError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TraceError::Read {
            file: file.clone(),
            source,
        })?;
        Trace::parse(&text, &file)
    }

    /// Reads a trace from `text`; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Trace, TraceError> {
        let at = |line: usize, what: String| TraceError::Line {
            file: file.to_owned(),
            line,
            what,
        };
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty());
        match lines.next() {
            Some((_, HEADER)) => {}
            Some((n, other)) => {
                return Err(at(
                    n,
                    format!("expected the header '{HEADER}', found '{other}'"),
                ));
            }
            None => return Err(at(1, format!("empty: expected the header '{HEADER}'"))),
        }
        // (second, op) → the line that gave it, to name both lines of a duplicate.
        let mut seen: HashMap<(usize, Op), usize> = HashMap::new();
        let mut rows = Vec::new();
        for (n, line) in lines {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            let [second, op, rate] = fields[..] else {
                return Err(at(
                    n,
                    format!(
                        "expected 3 fields (second,op,rate), found {}: '{line}'",
                        fields.len()
                    ),
                ));
            };
            let second = second
                .parse::<usize>()
                .ok()
                .filter(|&s| s < MAX_SECONDS)
                .ok_or_else(|| {
                    at(
                        n,
                        format!(
                            "second '{second}': expected a whole number from 0 to {}",
                            MAX_SECONDS - 1
                        ),
                    )
                })?;
            let op = match op.parse::<Op>() {
                Ok(o) if CALLABLE.contains(&o) => o,
                Ok(_) => {
                    return Err(at(
                        n,
                        format!(
                            "op '{op}' cannot be replayed (replayable: {})",
                            callable_names()
                        ),
                    ));
                }
                Err(_) => {
                    return Err(at(
                        n,
                        format!("op '{op}': no such operation (see docs/operations.md)"),
                    ));
                }
            };
            let rate = rate
                .parse::<f64>()
                .ok()
                .filter(|r| r.is_finite() && *r >= 0.0)
                .ok_or_else(|| {
                    at(
                        n,
                        format!("rate '{rate}': expected calls per second, a number ≥ 0"),
                    )
                })?;
            if let Some(first) = seen.insert((second, op), n) {
                return Err(at(
                    n,
                    format!("second {second} of {op} again (first on line {first})"),
                ));
            }
            rows.push((second, op, rate));
        }
        if rows.is_empty() {
            return Err(at(1, "no rows after the header".to_owned()));
        }
        let len = rows.iter().map(|r| r.0).max().unwrap_or(0) + 1;
        let mut ops: Vec<Op> = rows.iter().map(|r| r.1).collect();
        ops.sort_unstable();
        ops.dedup();
        let mut rates = vec![vec![0.0; len]; ops.len()];
        for (second, op, rate) in rows {
            if let Ok(k) = ops.binary_search(&op) {
                rates[k][second] = rate;
            }
        }
        Ok(Trace { ops, rates })
    }

    /// Writes the trace as CSV: the header, then every second's row of every operation,
    /// zeros included (one table a spreadsheet can pivot).
    pub fn write_csv(&self, mut w: impl Write) -> std::io::Result<()> {
        writeln!(w, "{HEADER}")?;
        for s in 0..self.seconds() {
            for (op, column) in self.ops.iter().zip(&self.rates) {
                writeln!(w, "{s},{op},{}", column[s])?;
            }
        }
        w.flush()
    }

    /// Calls per second of all operations together, second by second.
    pub fn totals(&self) -> Vec<f64> {
        (0..self.seconds())
            .map(|s| self.rates.iter().map(|c| c[s]).sum())
            .collect()
    }

    /// The figures §2.1 of the PADLL paper gives of a production trace, for this one.
    pub fn stats(&self) -> TraceStats {
        let totals = self.totals();
        let n = totals.len().max(1) as f64;
        let mean = totals.iter().sum::<f64>() / n;
        let share =
            |pred: &dyn Fn(f64) -> bool| totals.iter().filter(|&&t| pred(t)).count() as f64 / n;
        let variance = totals.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / n;
        let all: f64 = totals.iter().sum();
        TraceStats {
            seconds: totals.len(),
            mean,
            peak: totals.iter().copied().fold(0.0, f64::max),
            low: totals.iter().copied().fold(f64::INFINITY, f64::min),
            lull: share(&|t| t <= mean / 4.0),
            high: share(&|t| t >= 2.0 * mean),
            cv: if mean > 0.0 {
                variance.sqrt() / mean
            } else {
                0.0
            },
            mix: self
                .ops
                .iter()
                .zip(&self.rates)
                .map(|(&op, c)| {
                    (
                        op,
                        if all > 0.0 {
                            c.iter().sum::<f64>() / all
                        } else {
                            0.0
                        },
                    )
                })
                .collect(),
        }
    }
}

/// A trace's load, in the terms of §2.1 of the PADLL paper.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceStats {
    /// Length in seconds.
    pub seconds: usize,
    /// Mean calls per second.
    pub mean: f64,
    /// The busiest second's calls.
    pub peak: f64,
    /// The quietest second's calls.
    pub low: f64,
    /// Share of seconds at a quarter of the mean or less (lulls).
    pub lull: f64,
    /// Share of seconds at twice the mean or more.
    pub high: f64,
    /// Coefficient of variation of the per-second totals: how volatile the load is.
    pub cv: f64,
    /// Each operation's share of all calls.
    pub mix: Vec<(Op, f64)>,
}

impl fmt::Display for TraceStats {
    /// Two lines: the load over time, then the operation mix, largest share first.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.mean.max(f64::MIN_POSITIVE);
        writeln!(
            f,
            "{} s, mean {:.0} calls/s, peak {:.0} ({:.2}× mean), low {:.0} ({:.2}×); {:.0}% of seconds ≤ mean/4, {:.0}% ≥ 2× mean; cv {:.2}",
            self.seconds,
            self.mean,
            self.peak,
            self.peak / m,
            self.low,
            self.low / m,
            self.lull * 100.0,
            self.high * 100.0,
            self.cv
        )?;
        let mut mix = self.mix.clone();
        mix.sort_by(|a, b| b.1.total_cmp(&a.1));
        let parts: Vec<String> = mix
            .iter()
            .map(|(op, s)| format!("{op} {:.2}%", s * 100.0))
            .collect();
        write!(f, "mix: {}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        Trace::parse(text, "t.csv").unwrap_err().to_string()
    }

    #[test]
    fn reads_rows_in_any_order_with_gaps_as_zero() {
        let t = Trace::parse(
            "second,op,rate\n2,getattr,5\n0,open,1.5\n\n0,getattr,3\n",
            "t",
        )
        .unwrap();
        assert_eq!(t.ops, vec![Op::Open, Op::Getattr]);
        assert_eq!(t.rates, vec![vec![1.5, 0.0, 0.0], vec![3.0, 0.0, 5.0]]);
        let mut out = Vec::new();
        t.write_csv(&mut out).unwrap();
        assert_eq!(
            Trace::parse(std::str::from_utf8(&out).unwrap(), "t").unwrap(),
            t
        );
    }

    #[test]
    fn errors_name_the_line_and_what_is_wrong() {
        assert_eq!(
            err(""),
            "t.csv:1: empty: expected the header 'second,op,rate'"
        );
        assert_eq!(
            err("sec,op,rate\n"),
            "t.csv:1: expected the header 'second,op,rate', found 'sec,op,rate'"
        );
        assert_eq!(err("second,op,rate\n"), "t.csv:1: no rows after the header");
        assert!(err("second,op,rate\n0,getattr\n").starts_with("t.csv:2: expected 3 fields"));
        assert!(err("second,op,rate\n-1,getattr,5\n").starts_with("t.csv:2: second '-1'"));
        assert!(
            err("second,op,rate\n0,stat,5\n").starts_with("t.csv:2: op 'stat': no such operation")
        );
        assert!(
            err("second,op,rate\n0,mmap,5\n").starts_with("t.csv:2: op 'mmap' cannot be replayed")
        );
        assert!(err("second,op,rate\n0,open,NaN\n").starts_with("t.csv:2: rate 'NaN'"));
        assert!(err("second,op,rate\n0,open,-2\n").starts_with("t.csv:2: rate '-2'"));
        assert_eq!(
            err("second,op,rate\n0,open,1\n\n0,open,2\n"),
            "t.csv:4: second 0 of open again (first on line 2)"
        );
    }

    #[test]
    fn stats_measure_mean_peak_lulls_and_mix() {
        let t = Trace::parse(
            "second,op,rate\n0,getattr,100\n1,getattr,20\n2,getattr,180\n0,open,100\n",
            "t",
        )
        .unwrap();
        let s = t.stats();
        assert_eq!(
            (s.seconds, s.mean, s.peak, s.low),
            (3, 400.0 / 3.0, 200.0, 20.0)
        );
        assert_eq!(s.lull, 1.0 / 3.0);
        assert_eq!(s.mix, vec![(Op::Open, 0.25), (Op::Getattr, 0.75)]);
    }
}
