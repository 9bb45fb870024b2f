//! Rates: how many operations, or how many bytes, may pass per second.
//!
//! A rate is written as a number, an optional unit and `/s`: `500/s`, `5k/s`, `2M/s` count
//! operations; `100MiB/s`, `1GB/s`, `512B/s` count bytes. The unit's family decides what a
//! request costs (1 per operation, or its byte count); the multiplier is only notation,
//! so [`Rate`] keeps the value in base units and printing picks the notation again.

use std::fmt;
use std::str::FromStr;

use super::parse::ParseError;
use super::quantity::{self, QuantityError};

/// What a rate counts, which decides what one request costs against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Operations: every matching request costs 1.
    Ops,
    /// Bytes: a matching request costs its byte count.
    Bytes,
}

impl Unit {
    /// The name used in statistics and messages (`ops`, `bytes`).
    pub const fn name(self) -> &'static str {
        match self {
            Unit::Ops => "ops",
            Unit::Bytes => "bytes",
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Unit {
    type Err = ParseError;

    /// Reads `ops` or `bytes`, the names [`Unit`]'s `Display` writes.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Unit::Ops, Unit::Bytes]
            .into_iter()
            .find(|unit| unit.name() == s)
            .ok_or_else(|| ParseError::new(0, s, "a unit: ops or bytes"))
    }
}

/// A rate: `per_sec` units of `unit` per second.
///
/// Zero is a valid rate: it holds every matching request until the rate is raised (by an
/// administrator or a controller), which is how a job is paused without failing its calls.
///
/// ```
/// use sluice_core::rule::{Rate, Unit};
/// let rate: Rate = "2.5MiB/s".parse().unwrap();
/// assert_eq!(rate, Rate { per_sec: 2_621_440, unit: Unit::Bytes });
/// assert_eq!(rate.to_string(), "2560KiB/s");
/// assert_eq!("5000/s".parse::<Rate>().unwrap().to_string(), "5k/s");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rate {
    /// Units per second.
    pub per_sec: u64,
    /// What is counted.
    pub unit: Unit,
}

impl Rate {
    /// A rate of `per_sec` operations per second.
    pub const fn ops(per_sec: u64) -> Rate {
        Rate {
            per_sec,
            unit: Unit::Ops,
        }
    }

    /// A rate of `per_sec` bytes per second.
    pub const fn bytes(per_sec: u64) -> Rate {
        Rate {
            per_sec,
            unit: Unit::Bytes,
        }
    }

    /// The burst a rule gets when it names none: 10 ms worth of the rate, at least 1.
    ///
    /// 10 ms absorbs the jitter of a thread waking up late without letting a pent-up job
    /// exceed its rate noticeably over any window of a second.
    ///
    /// ```
    /// use sluice_core::rule::Rate;
    /// assert_eq!(Rate::ops(5000).default_burst(), 50);
    /// assert_eq!(Rate::ops(10).default_burst(), 1);
    /// assert_eq!(Rate::ops(0).default_burst(), 1);
    /// ```
    pub const fn default_burst(self) -> u64 {
        let burst = self.per_sec / 100;
        if burst == 0 { 1 } else { burst }
    }
}

impl fmt::Display for Rate {
    /// Writes the rate with the largest unit that represents it exactly: `5k/s`, `1MiB/s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/s", quantity::format(self.per_sec, self.unit))
    }
}

/// Writes a measured rate (a job's, a pool's) for a person to read at a glance: `5.0k/s`,
/// `1.2M/s`, `100MiB/s`. Unlike a [`Rate`]'s own printing it rounds, so it is for views
/// (`sluice jobs`, `sluice top`), never for what is typed back.
///
/// ```
/// use sluice_core::rule::{Unit, format_rate_approx};
/// assert_eq!(format_rate_approx(5012.0, Unit::Ops), "5.0k/s");
/// assert_eq!(format_rate_approx(104_857_600.0, Unit::Bytes), "100MiB/s");
/// ```
pub fn format_rate_approx(per_sec: f64, unit: Unit) -> String {
    format!("{}/s", quantity::format_approx(per_sec, unit))
}

/// Writes a measured amount (calls, bytes) as [`format_rate_approx`] writes a rate,
/// without `/s`: `12k`, `3.5GiB`.
///
/// ```
/// use sluice_core::rule::{Unit, format_amount_approx};
/// assert_eq!(format_amount_approx(12_000.0, Unit::Ops), "12k");
/// assert_eq!(format_amount_approx(3.0 * 1024.0 * 1024.0, Unit::Bytes), "3.0MiB");
/// ```
pub fn format_amount_approx(value: f64, unit: Unit) -> String {
    quantity::format_approx(value, unit)
}

impl FromStr for Rate {
    type Err = ParseError;

    /// Reads a rate; errors are positioned in `s`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        read_rate(s).map_err(|expected| ParseError::new(0, s, expected))
    }
}

/// Reads a rate, or says what was expected instead.
pub(crate) fn read_rate(text: &str) -> Result<Rate, String> {
    let Some(number) = text.strip_suffix("/s") else {
        return Err(match quantity::read(text) {
            Ok(_) => "a rate per second, ending in /s (e.g. 5k/s or 100MiB/s)".to_owned(),
            Err(err) => rate_expected(err),
        });
    };
    let (per_sec, unit) = quantity::read(number).map_err(rate_expected)?;
    Ok(Rate { per_sec, unit })
}

fn rate_expected(err: QuantityError) -> String {
    match err {
        QuantityError::NotANumber => {
            "a rate: a number, an optional unit and /s (e.g. 500/s, 5k/s, 100MiB/s)".to_owned()
        }
        QuantityError::Negative => "a rate of zero or more (rates cannot be negative)".to_owned(),
        QuantityError::UnknownSuffix => format!(
            "a rate unit: {} for operations; {} for bytes",
            quantity::list_suffixes(Unit::Ops, "/s"),
            quantity::list_suffixes(Unit::Bytes, "/s"),
        ),
        QuantityError::NotWhole => "a whole number of operations or bytes per second \
             (2.5k/s is 2500/s; 2.5/s is not whole)"
            .to_owned(),
        QuantityError::TooLarge => "a rate below 2^64 per second".to_owned(),
        QuantityError::TooPrecise => "a number with at most 24 digits after the point".to_owned(),
    }
}

/// Reads a burst for a rate counted in `unit`, or says what was expected instead.
///
/// A burst counts the rate's own unit: operations (`100`, `5k`) for an operations rate,
/// bytes (`4MiB`, or a bare byte count) for a bytes rate. Zero would admit nothing ever,
/// so it is refused.
pub(crate) fn read_burst(text: &str, unit: Unit) -> Result<u64, String> {
    let expected = |why: &str| match unit {
        Unit::Ops => {
            format!("a burst of operations (a whole number of 1 or more, e.g. burst=100){why}")
        }
        Unit::Bytes => format!("a burst of bytes (1 or more, e.g. burst=4MiB){why}"),
    };
    match quantity::read(text) {
        Ok((0, _)) => Err(expected(": a burst of 0 would never admit anything")),
        Ok((burst, written)) if written == unit || unit == Unit::Bytes => Ok(burst),
        Ok(_) => Err(expected(": the rate counts operations, not bytes")),
        Err(QuantityError::TooLarge) => Err(expected(": this one does not fit in 64 bits")),
        Err(_) => Err(expected("")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_in_every_unit() {
        let cases = [
            ("0/s", Rate::ops(0)),
            ("500/s", Rate::ops(500)),
            ("5k/s", Rate::ops(5_000)),
            ("2.5k/s", Rate::ops(2_500)),
            ("2M/s", Rate::ops(2_000_000)),
            ("1G/s", Rate::ops(1_000_000_000)),
            ("512B/s", Rate::bytes(512)),
            ("1KiB/s", Rate::bytes(1024)),
            ("100MiB/s", Rate::bytes(100 << 20)),
            ("1GiB/s", Rate::bytes(1 << 30)),
            ("1KB/s", Rate::bytes(1000)),
            ("3MB/s", Rate::bytes(3_000_000)),
            ("2GB/s", Rate::bytes(2_000_000_000)),
            ("1TB/s", Rate::bytes(1_000_000_000_000)),
        ];
        for (text, rate) in cases {
            assert_eq!(text.parse::<Rate>(), Ok(rate), "{text}");
            assert_eq!(rate.to_string().parse::<Rate>(), Ok(rate), "{text}");
        }
    }

    #[test]
    fn rates_print_in_the_largest_exact_unit() {
        assert_eq!(Rate::bytes(1_048_576).to_string(), "1MiB/s");
        assert_eq!(Rate::ops(5000).to_string(), "5k/s");
        assert_eq!(Rate::ops(0).to_string(), "0/s");
        assert_eq!(Rate::bytes(0).to_string(), "0B/s");
        assert_eq!(Rate::bytes(1000 << 20).to_string(), "1000MiB/s");
    }

    #[test]
    fn bad_rates_say_what_was_expected() {
        let expected = |text: &str| text.parse::<Rate>().unwrap_err().expected;
        assert!(expected("-5/s").contains("zero or more"));
        assert!(expected("fast/s").contains("a number"));
        assert!(expected("5x/s").contains("KiB/s"));
        assert!(expected("2.5/s").contains("whole"));
        assert!(expected("5k").contains("/s"));
        assert!(expected("99999999999G/s").contains("2^64"));
    }

    #[test]
    fn units_round_trip_through_their_names() {
        for unit in [Unit::Ops, Unit::Bytes] {
            assert_eq!(unit.to_string().parse::<Unit>(), Ok(unit));
        }
        assert_eq!("B".parse::<Unit>().unwrap_err().token, "B");
    }

    #[test]
    fn bursts_count_the_rate_unit() {
        assert_eq!(read_burst("100", Unit::Ops), Ok(100));
        assert_eq!(read_burst("5k", Unit::Ops), Ok(5000));
        assert_eq!(read_burst("4MiB", Unit::Bytes), Ok(4 << 20));
        assert_eq!(read_burst("4096", Unit::Bytes), Ok(4096));
        assert!(
            read_burst("4MiB", Unit::Ops)
                .unwrap_err()
                .contains("not bytes")
        );
        assert!(
            read_burst("0", Unit::Ops)
                .unwrap_err()
                .contains("never admit")
        );
        assert!(read_burst("-1", Unit::Ops).is_err());
    }
}
