//! Control intervals as administrators write them: `200ms`, `1s`, `2.5s`, `1m`.

use std::time::Duration;

/// The shortest control interval: shorter rounds would cost the controllers more than
/// the rates they adjust are worth, and observations would be mostly noise.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// The longest control interval: beyond it a pool would hardly be controlled at all.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);

/// Suffixes and their length in milliseconds, largest first (the order printing tries).
const UNITS: [(&str, u64); 4] = [("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)];

/// Why a text is not a control interval.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a number followed by `ms`, `s`, `m` or `h`.
    #[error("{0:?} is not a duration (e.g. 200ms, 1s)")]
    NotADuration(String),
    /// Finer than a millisecond, which no controller could keep to.
    #[error("{0:?} is not a whole number of milliseconds")]
    NotWhole(String),
    /// Outside [`MIN_INTERVAL`] to [`MAX_INTERVAL`].
    #[error(
        "{0:?} is out of range (from {min} to {max})",
        min = format_duration(MIN_INTERVAL),
        max = format_duration(MAX_INTERVAL)
    )]
    OutOfRange(String),
}

/// Reads a control interval: a number (decimals allowed) and a unit among `ms`, `s`,
/// `m` and `h`, a whole number of milliseconds from 10ms to 1h.
///
/// ```
/// # use sluice_control::config::parse_duration;
/// # use std::time::Duration;
/// assert_eq!(parse_duration("2.5s"), Ok(Duration::from_millis(2500)));
/// assert_eq!(
///     parse_duration("5 parsecs").unwrap_err().to_string(),
///     "\"5 parsecs\" is not a duration (e.g. 200ms, 1s)"
/// );
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let duration = parse_millis(text)?;
    if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&duration) {
        return Err(DurationError::OutOfRange(text.to_owned()));
    }
    Ok(duration)
}

/// Reads a duration as [`parse_duration`] does, without its range: a whole number of
/// milliseconds (0 included) up to about 30,000 years.
pub fn parse_millis(text: &str) -> Result<Duration, DurationError> {
    let not_a_duration = || DurationError::NotADuration(text.to_owned());
    let number_len = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(number_len);
    let unit_ms = UNITS
        .iter()
        .find(|(name, _)| *name == suffix)
        .map(|(_, ms)| u128::from(*ms))
        .ok_or_else(not_a_duration)?;
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || number.ends_with('.') {
        return Err(not_a_duration());
    }
    // Digits beyond these could only overflow or fall below a millisecond.
    let fraction = fraction.trim_end_matches('0');
    if whole.len() > 12 {
        return Err(DurationError::OutOfRange(text.to_owned()));
    }
    if fraction.len() > 9 {
        return Err(DurationError::NotWhole(text.to_owned()));
    }
    let parse = |part: &str| part.parse::<u128>().unwrap_or(0);
    let scale = 10u128.pow(fraction.len() as u32);
    let fraction_ms = parse(fraction) * unit_ms;
    if !fraction_ms.is_multiple_of(scale) {
        return Err(DurationError::NotWhole(text.to_owned()));
    }
    let ms = parse(whole) * unit_ms + fraction_ms / scale;
    Ok(Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX)))
}

/// Writes a duration in the largest unit that is exact (`1m`, `2500ms`), which
/// [`parse_duration`] reads back; anything finer than a millisecond is dropped.
pub fn format_duration(duration: Duration) -> String {
    let ms = duration.as_millis();
    let (name, unit) = UNITS
        .iter()
        .map(|(name, unit)| (name, u128::from(*unit)))
        .find(|(_, unit)| ms >= *unit && ms.is_multiple_of(*unit))
        .unwrap_or((&"ms", 1));
    format!("{}{name}", ms / unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_unit_and_decimals() {
        let cases = [
            ("200ms", 200),
            ("10ms", 10),
            ("1s", 1_000),
            ("2.5s", 2_500),
            ("0.01s", 10),
            ("1.50m", 90_000),
            ("1m", 60_000),
            ("1h", 3_600_000),
        ];
        for (text, ms) in cases {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_millis(ms)),
                "{text}"
            );
        }
    }

    #[test]
    fn says_why_a_text_is_refused() {
        let error = |text: &str| parse_duration(text).unwrap_err().to_string();
        assert_eq!(
            error("5 parsecs"),
            "\"5 parsecs\" is not a duration (e.g. 200ms, 1s)"
        );
        for text in [
            "", "s", "1", "1.s", ".5s", "-1s", "1e3ms", "1 s", "1sec", "1.2.3s",
        ] {
            assert!(
                error(text).ends_with("is not a duration (e.g. 200ms, 1s)"),
                "{text}"
            );
        }
        assert_eq!(
            error("1.0005s"),
            "\"1.0005s\" is not a whole number of milliseconds"
        );
        assert_eq!(
            error("0.5ms"),
            "\"0.5ms\" is not a whole number of milliseconds"
        );
        assert_eq!(error("9ms"), "\"9ms\" is out of range (from 10ms to 1h)");
        assert_eq!(error("61m"), "\"61m\" is out of range (from 10ms to 1h)");
        assert!(error("99999999999999999999h").contains("out of range"));
    }

    #[test]
    fn prints_the_largest_exact_unit_and_reads_it_back() {
        for (ms, text) in [
            (10, "10ms"),
            (2_500, "2500ms"),
            (1_000, "1s"),
            (90_000, "90s"),
        ] {
            let duration = Duration::from_millis(ms);
            assert_eq!(format_duration(duration), text);
            assert_eq!(parse_duration(text), Ok(duration));
        }
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h");
        assert_eq!(format_duration(Duration::from_secs(120)), "2m");
    }
}
