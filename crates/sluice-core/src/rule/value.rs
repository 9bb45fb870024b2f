//! Readers for the values of each condition key, named in the field table.
//!
//! Each reader takes the text of one value (between commas) and returns the value or a
//! description of what was expected, which the parser places at the value's offset.
//! Values never contain whitespace or commas (they separate tokens and values), so every
//! value a reader accepts prints back to the same text.

use std::fmt;

use super::quantity::{self, QuantityError};
use super::{Identity, Unit, UserSpec};
use crate::op::{Class, Op};

/// A value that could not be read: where in the value text, what was there, and what was
/// expected instead. The parser adds the offset of the value text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ValueError {
    pub at: usize,
    pub token: String,
    pub expected: String,
}

/// Reads a comma-separated list with `read`, refusing empty and repeated values.
///
/// A repeated value is refused rather than dropped because it is almost always a typo for
/// another value, and because keeping the list as written keeps printing faithful.
pub(crate) fn list<T: PartialEq + fmt::Display>(
    text: &str,
    read: fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, ValueError> {
    let mut values: Vec<T> = Vec::new();
    let mut at = 0;
    for item in text.split(',') {
        let fail = |expected: String| ValueError {
            at,
            token: item.to_owned(),
            expected,
        };
        let value = read(item).map_err(fail)?;
        if values.contains(&value) {
            return Err(fail(format!(
                "each value once ('{value}' is already listed)"
            )));
        }
        values.push(value);
        at += item.len() + 1;
    }
    Ok(values)
}

/// Reads a single value with `read` (the bound of a comparison).
pub(crate) fn single<T>(text: &str, read: fn(&str) -> Result<T, String>) -> Result<T, ValueError> {
    read(text).map_err(|expected| ValueError {
        at: 0,
        token: text.to_owned(),
        expected,
    })
}

/// Writes a list as it is read: values separated by commas.
pub(crate) fn write_list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, values: &[T]) -> fmt::Result {
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{value}")?;
    }
    Ok(())
}

/// Names: rule names and login names. Kept to a portable set so that they survive shells,
/// TOML and log lines without quoting.
pub(crate) fn is_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

/// Characters a job identifier or program name may hold: anything printable except the
/// separators of the rule syntax.
fn is_word(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| !c.is_whitespace() && !c.is_control() && c != ',')
}

/// `op=`: an operation name from [`Op::ALL`].
pub(crate) fn op(text: &str) -> Result<Op, String> {
    text.parse().map_err(|_| {
        let names: Vec<&str> = Op::ALL.iter().map(|op| op.name()).collect();
        format!("an operation ({})", names.join(", "))
    })
}

/// `class=`: a class name from [`Class::ALL`].
pub(crate) fn class(text: &str) -> Result<Class, String> {
    text.parse().map_err(|_| {
        let names: Vec<&str> = Class::ALL.iter().map(|class| class.name()).collect();
        format!("a class ({})", names.join(", "))
    })
}

/// `job=`: a job identifier as the resource manager writes it (`4242`, `4242_7`, `4242+1`).
pub(crate) fn job(text: &str) -> Result<String, String> {
    if is_word(text) {
        Ok(text.to_owned())
    } else {
        Err("a job identifier (e.g. 4242 or 4242_7)".to_owned())
    }
}

/// `user=`: digits are a uid, anything else a login name.
pub(crate) fn user(text: &str) -> Result<UserSpec, String> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse()
            .map(UserSpec::Uid)
            .map_err(|_| "a uid below 2^32".to_owned());
    }
    if is_name(text) {
        Ok(UserSpec::Name(text.to_owned()))
    } else {
        Err("a login name (letters, digits, '_', '.', '-') or a numeric uid".to_owned())
    }
}

/// `exe=`: a program's name, the last component of its path; a path would never match.
pub(crate) fn exe(text: &str) -> Result<String, String> {
    if is_word(text) && !text.contains('/') {
        Ok(text.to_owned())
    } else {
        Err("a program name without '/' (the last component of its path, e.g. ior)".to_owned())
    }
}

/// `mount=`: an absolute path, normalised lexically so that `/scratch/`, `//scratch` and
/// `/scratch/x/..` are one mount.
pub(crate) fn mount(text: &str) -> Result<String, String> {
    if !is_word(text) || !text.starts_with('/') {
        return Err("an absolute path (e.g. /scratch)".to_owned());
    }
    Ok(normalise_path(text))
}

/// Normalises an absolute path lexically: no empty or `.` components, `..` removes the
/// component before it (and stays at `/`), no trailing slash except for `/` itself.
///
/// Lexical, not resolved against the file system: rules are read on machines where the
/// path may not exist, and the stage resolves the paths of requests the same way.
pub(crate) fn normalise_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

/// `size`: a byte count; `k`, `M`, `G` count in thousands like every other quantity.
pub(crate) fn size(text: &str) -> Result<u64, String> {
    quantity::read(text)
        .map(|(bytes, _)| bytes)
        .map_err(|err| match err {
            QuantityError::Negative => "a size of zero or more bytes".to_owned(),
            QuantityError::NotWhole => "a whole number of bytes".to_owned(),
            QuantityError::TooLarge => "a size below 2^64 bytes".to_owned(),
            QuantityError::TooPrecise => {
                "a number with at most 24 digits after the point".to_owned()
            }
            QuantityError::NotANumber | QuantityError::UnknownSuffix => format!(
                "a size in bytes: a number, optionally followed by {}, {} (e.g. 4096, 64KiB, 1MiB)",
                quantity::list_suffixes(Unit::Bytes, ""),
                quantity::list_suffixes(Unit::Ops, ""),
            ),
        })
}

impl UserSpec {
    /// Whether this user is the one in `id`: a uid matches the uid, a name matches the
    /// login name when the caller knows it (names are never resolved here: no I/O in core).
    pub fn matches(&self, id: &Identity) -> bool {
        match self {
            UserSpec::Uid(uid) => *uid == id.uid,
            UserSpec::Name(name) => id.user.as_deref() == Some(name.as_str()),
        }
    }
}

impl fmt::Display for UserSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UserSpec::Uid(uid) => write!(f, "{uid}"),
            UserSpec::Name(name) => f.write_str(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_paths_are_normalised_lexically() {
        for (given, normal) in [
            ("/", "/"),
            ("//", "/"),
            ("/scratch/", "/scratch"),
            ("//scratch//a", "/scratch/a"),
            ("/scratch/./a/", "/scratch/a"),
            ("/scratch/x/..", "/scratch"),
            ("/..", "/"),
            ("/a/../../b", "/b"),
        ] {
            assert_eq!(mount(given), Ok(normal.to_owned()), "{given}");
        }
        assert!(mount("scratch").is_err());
        assert!(mount("").is_err());
    }

    #[test]
    fn users_are_uids_when_numeric() {
        assert_eq!(user("1000"), Ok(UserSpec::Uid(1000)));
        assert_eq!(user("alice"), Ok(UserSpec::Name("alice".into())));
        assert_eq!(user("a1000"), Ok(UserSpec::Name("a1000".into())));
        assert!(user("4294967296").unwrap_err().contains("2^32"));
        assert!(user("al/ice").is_err());
    }

    #[test]
    fn user_names_match_only_a_known_login() {
        let id = Identity {
            uid: 1000,
            user: Some("alice".into()),
            ..Identity::default()
        };
        assert!(UserSpec::Uid(1000).matches(&id));
        assert!(UserSpec::Name("alice".into()).matches(&id));
        assert!(!UserSpec::Name("bob".into()).matches(&id));
        let anonymous = Identity { user: None, ..id };
        assert!(!UserSpec::Name("alice".into()).matches(&anonymous));
    }

    #[test]
    fn sizes_accept_every_byte_unit() {
        assert_eq!(size("4096"), Ok(4096));
        assert_eq!(size("4k"), Ok(4000));
        assert_eq!(size("4KiB"), Ok(4096));
        assert_eq!(size("1MB"), Ok(1_000_000));
        assert_eq!(size("1.5MiB"), Ok(3 << 19));
        assert!(size("1.5B").unwrap_err().contains("whole"));
        assert!(size("big").unwrap_err().contains("MiB"));
    }
}
