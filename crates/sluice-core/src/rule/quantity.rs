//! Numbers with unit suffixes: the one reader and writer of `5k`, `2.5MiB`, `4096`.
//!
//! Rates, sizes and bursts are all a number followed by a suffix from [`SUFFIXES`], so they
//! share this code: the same number syntax, the same exactness rule and the same printing
//! rule everywhere an administrator types a quantity.

use super::rate::Unit;

/// A unit suffix: how it is written, which kind of quantity it measures, its multiplier.
struct Suffix {
    text: &'static str,
    unit: Unit,
    factor: u64,
}

const fn suffix(text: &'static str, unit: Unit, factor: u64) -> Suffix {
    Suffix { text, unit, factor }
}

/// Every suffix. `k`, `M`, `G` and the `…B` units are powers of 1000, the `…iB` units
/// powers of 1024, as in the SI and IEC standards (and unlike `dd`, where `4k` is 4096).
const SUFFIXES: &[Suffix] = &[
    suffix("", Unit::Ops, 1),
    suffix("k", Unit::Ops, 1_000),
    suffix("M", Unit::Ops, 1_000_000),
    suffix("G", Unit::Ops, 1_000_000_000),
    suffix("B", Unit::Bytes, 1),
    suffix("KB", Unit::Bytes, 1_000),
    suffix("MB", Unit::Bytes, 1_000_000),
    suffix("GB", Unit::Bytes, 1_000_000_000),
    suffix("TB", Unit::Bytes, 1_000_000_000_000),
    suffix("KiB", Unit::Bytes, 1 << 10),
    suffix("MiB", Unit::Bytes, 1 << 20),
    suffix("GiB", Unit::Bytes, 1 << 30),
    suffix("TiB", Unit::Bytes, 1 << 40),
];

/// Why a quantity could not be read; the caller words it for its context (rate, size…).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QuantityError {
    /// It does not start with a digit.
    NotANumber,
    /// It starts with `-` and a digit.
    Negative,
    /// The text after the number is not a known suffix.
    UnknownSuffix,
    /// The value is not a whole number of base units (`2.5/s`, `0.1B`).
    NotWhole,
    /// The value does not fit in 64 bits.
    TooLarge,
    /// More than [`MAX_FRACTION_DIGITS`] significant digits after the decimal point.
    TooPrecise,
}

/// Reads `DIGITS[.DIGITS]SUFFIX` exactly: the value and the kind of its suffix.
///
/// Decimals are allowed when the result is a whole number of base units (`2.5k` is 2500,
/// `1.5KiB` is 1536), so that no rounding rule is ever needed.
pub(crate) fn read(text: &str) -> Result<(u64, Unit), QuantityError> {
    let int_len = text.bytes().take_while(u8::is_ascii_digit).count();
    if int_len == 0 {
        let negative = text
            .strip_prefix('-')
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
        return Err(if negative {
            QuantityError::Negative
        } else {
            QuantityError::NotANumber
        });
    }
    let (int, rest) = text.split_at(int_len);
    let (frac, rest) = match rest.strip_prefix('.') {
        Some(after) => {
            let frac_len = after.bytes().take_while(u8::is_ascii_digit).count();
            if frac_len == 0 {
                return Err(QuantityError::NotANumber);
            }
            after.split_at(frac_len)
        }
        None => ("", rest),
    };
    let suffix = SUFFIXES
        .iter()
        .find(|s| s.text == rest)
        .ok_or(QuantityError::UnknownSuffix)?;
    // Trailing zeros of the fraction change nothing.
    let frac = frac.trim_end_matches('0');
    if frac.len() > MAX_FRACTION_DIGITS {
        return Err(QuantityError::TooPrecise);
    }
    let factor = u128::from(suffix.factor);
    let whole = digits(int).ok_or(QuantityError::TooLarge)?;
    // frac < 10^24 and factor <= 2^40, so the product fits in a u128 (< 2^120).
    let (frac, scale) = (digits(frac).unwrap_or(0), 10u128.pow(frac.len() as u32));
    if !(frac * factor).is_multiple_of(scale) {
        return Err(QuantityError::NotWhole);
    }
    let value = whole.checked_mul(factor).map(|w| w + frac * factor / scale);
    let value = value
        .and_then(|v| u64::try_from(v).ok())
        .ok_or(QuantityError::TooLarge)?;
    Ok((value, suffix.unit))
}

/// How many significant digits may follow the decimal point: enough for any exact value
/// in practice (`0.0009765625KiB` is 1 byte), few enough for exact 128-bit arithmetic.
const MAX_FRACTION_DIGITS: usize = 24;

/// The value of a string of ASCII digits, if it fits in 64 bits (leading zeros are free).
fn digits(text: &str) -> Option<u128> {
    text.bytes().try_fold(0u128, |n, digit| {
        let n = n * 10 + u128::from(digit - b'0');
        (n <= u128::from(u64::MAX)).then_some(n)
    })
}

/// Writes `value` with the largest suffix of `unit` that represents it exactly
/// (1048576 bytes → `1MiB`, 5000 ops → `5k`), so that reading it back gives `value`.
/// Zero is written with the base suffix (`0`, `0B`).
pub(crate) fn format(value: u64, unit: Unit) -> String {
    let base = SUFFIXES.iter().find(|s| s.unit == unit && s.factor == 1);
    let best = SUFFIXES
        .iter()
        .filter(|s| s.unit == unit && value != 0 && value.is_multiple_of(s.factor))
        .max_by_key(|s| s.factor)
        .or(base);
    match best {
        Some(s) => format!("{}{}", value / s.factor, s.text),
        // Unreachable: the table has a base suffix for each unit.
        None => value.to_string(),
    }
}

/// Writes `value` for a person to read at a glance, not to type back: whole units of the
/// largest suffix of `unit` not above it (`12k`, `512`, `1000B`),
/// bytes in the binary suffixes only (`100MiB`), as sizes are read on Linux.
/// Values below 10 keep one decimal, so that `5.0k` and `5.4k` differ; the rounding that
/// carries a value into the next suffix (999.96k) moves it there (`1.0M`).
pub(crate) fn format_approx(value: f64, unit: Unit) -> String {
    if !value.is_finite() || value <= 0.0 {
        let base = if unit == Unit::Bytes { "B" } else { "" };
        return format!("0{base}");
    }
    let scale = |s: &&Suffix| s.unit == unit && (unit == Unit::Ops || s.factor.is_power_of_two());
    let suffixes: Vec<&Suffix> = SUFFIXES.iter().filter(scale).collect();
    let mut at = suffixes
        .iter()
        .rposition(|s| value >= s.factor as f64)
        .unwrap_or(0);
    loop {
        let scaled = value / suffixes[at].factor as f64;
        let decimals = usize::from(scaled < 9.95);
        let rounded: f64 = format!("{scaled:.decimals$}").parse().unwrap_or(scaled);
        let next = suffixes.get(at + 1);
        // 999.6k is 1.0M; 1023.9KiB is 1.0MiB.
        if next.is_some_and(|n| rounded * suffixes[at].factor as f64 >= n.factor as f64) {
            at += 1;
            continue;
        }
        return format!("{scaled:.decimals$}{}", suffixes[at].text);
    }
}

/// Writes a byte count (a `size` bound): `512B`, `4KiB`, `1MB`.
pub(crate) fn format_bytes(value: u64) -> String {
    format(value, Unit::Bytes)
}

/// The suffixes of `unit` followed by `tail`, for error messages: `B/s, KB/s, …`.
/// The empty suffix is listed only when `tail` makes it visible (`/s`).
pub(crate) fn list_suffixes(unit: Unit, tail: &str) -> String {
    let names: Vec<String> = SUFFIXES
        .iter()
        .filter(|s| s.unit == unit && !(s.text.is_empty() && tail.is_empty()))
        .map(|s| format!("{}{tail}", s.text))
        .collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_whole_and_exact_decimal_values() {
        assert_eq!(read("0"), Ok((0, Unit::Ops)));
        assert_eq!(read("2.5k"), Ok((2500, Unit::Ops)));
        assert_eq!(read("1.5KiB"), Ok((1536, Unit::Bytes)));
        assert_eq!(read("0.001M"), Ok((1000, Unit::Ops)));
        assert_eq!(read("5.000"), Ok((5, Unit::Ops)));
        assert_eq!(read("18446744073709551615"), Ok((u64::MAX, Unit::Ops)));
        assert_eq!(
            read("000000000000000000000000000000000000000007B"),
            Ok((7, Unit::Bytes))
        );
        assert_eq!(read("0.0009765625KiB"), Ok((1, Unit::Bytes)));
        assert_eq!(read("1.5TiB"), Ok((3 << 39, Unit::Bytes)));
    }

    #[test]
    fn rejects_what_is_not_an_exact_quantity() {
        assert_eq!(read("2.5"), Err(QuantityError::NotWhole));
        assert_eq!(read("0.1B"), Err(QuantityError::NotWhole));
        assert_eq!(read("-5"), Err(QuantityError::Negative));
        assert_eq!(read("-x"), Err(QuantityError::NotANumber));
        assert_eq!(read("fast"), Err(QuantityError::NotANumber));
        assert_eq!(read(".5k"), Err(QuantityError::NotANumber));
        assert_eq!(read("5.k"), Err(QuantityError::NotANumber));
        assert_eq!(read("5K"), Err(QuantityError::UnknownSuffix));
        assert_eq!(read("1e3"), Err(QuantityError::UnknownSuffix));
        assert_eq!(read("18446744073709551616"), Err(QuantityError::TooLarge));
        assert_eq!(read("20000000TiB"), Err(QuantityError::TooLarge));
        assert_eq!(
            read(&format!("1.{}1", "0".repeat(60))),
            Err(QuantityError::TooPrecise)
        );
        assert_eq!(read(&format!("1.{}", "0".repeat(60))), Ok((1, Unit::Ops)));
    }

    #[test]
    fn prints_with_the_largest_exact_suffix() {
        assert_eq!(format(0, Unit::Ops), "0");
        assert_eq!(format(0, Unit::Bytes), "0B");
        assert_eq!(format(5000, Unit::Ops), "5k");
        assert_eq!(format(5001, Unit::Ops), "5001");
        assert_eq!(format(1 << 20, Unit::Bytes), "1MiB");
        assert_eq!(format(1_000_000, Unit::Bytes), "1MB");
        assert_eq!(format(1536, Unit::Bytes), "1536B");
        assert_eq!(format(u64::MAX, Unit::Bytes), "18446744073709551615B");
    }

    #[test]
    fn approximate_values_round_and_carry_into_the_next_suffix() {
        let ops = |v: f64| format_approx(v, Unit::Ops);
        let bytes = |v: f64| format_approx(v, Unit::Bytes);
        assert_eq!(ops(0.0), "0");
        assert_eq!(ops(-1.0), "0");
        assert_eq!(ops(f64::NAN), "0");
        assert_eq!(ops(0.25), "0.2");
        assert_eq!(ops(7.0), "7.0");
        assert_eq!(ops(512.4), "512");
        assert_eq!(ops(999.7), "1.0k");
        assert_eq!(ops(5000.0), "5.0k");
        assert_eq!(ops(5449.0), "5.4k");
        assert_eq!(ops(9960.0), "10k");
        assert_eq!(ops(12_345.0), "12k");
        assert_eq!(ops(999_600.0), "1.0M");
        assert_eq!(ops(1_234_567.0), "1.2M");
        assert_eq!(ops(3e12), "3000G");
        assert_eq!(bytes(0.0), "0B");
        assert_eq!(bytes(512.0), "512B");
        assert_eq!(bytes(1000.0), "1000B");
        assert_eq!(bytes(1023.9), "1.0KiB");
        assert_eq!(bytes(104_857_600.0), "100MiB");
        assert_eq!(bytes(1.5 * (1u64 << 30) as f64), "1.5GiB");
    }
}
