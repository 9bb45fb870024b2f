//! Reading rules: `[NAME:] KEY=VALUE[,VALUE…] … rate=RATE [burst=N]`.
//!
//! The input is split into whitespace-separated tokens, each remembered with its byte
//! offset, so that every error can say where it is, what is there and what was expected.
//! The whole rule is read and checked into a [`Rule`] value before anyone acts on it.
//!
//! The order is fixed: the name, the conditions (any order, each key once), `rate=`,
//! then `burst=`. One order means one way to read a rule, which is how it is printed.

use std::fmt;
use std::str::FromStr;

use super::fields::{self, Field};
use super::rate::{self, Unit};
use super::value;
use super::{Cmp, Cond, Rule};
use crate::op::{Class, Op};

/// Why a rule could not be read: where, what was there, and what was expected instead.
///
/// ```
/// use sluice_core::rule::parse_rule;
/// let err = parse_rule("op=getattr rat=5k/s").unwrap_err();
/// assert_eq!((err.offset, err.token.as_str()), (11, "rat=5k/s"));
/// assert_eq!(
///     err.to_string(),
///     "at column 12 ('rat=5k/s'): expected a key (op, class, job, user, exe, mount, size) or rate="
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Byte offset of `token` in the input.
    pub offset: usize,
    /// The offending text: a whole token, or the value or operator inside it that is
    /// wrong; empty when something is missing at the end.
    pub token: String,
    /// What would have been accepted at `offset`, in words for an administrator.
    pub expected: String,
}

impl ParseError {
    pub(crate) fn new(offset: usize, token: &str, expected: impl Into<String>) -> ParseError {
        ParseError {
            offset,
            token: token.to_owned(),
            expected: expected.into(),
        }
    }

    /// The 1-based column of the error, counted in characters of `input` (the text that
    /// was parsed), for pointing at it under the input.
    pub fn column_in(&self, input: &str) -> usize {
        input
            .get(..self.offset)
            .map_or(self.offset, |before| before.chars().count())
            + 1
    }
}

impl fmt::Display for ParseError {
    /// `at column 12 ('rat=5'): expected …`; the column counts bytes, which are characters
    /// in every rule that is all ASCII.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at column {}", self.offset + 1)?;
        if !self.token.is_empty() {
            write!(f, " ('{}')", self.token)?;
        }
        write!(f, ": expected {}", self.expected)
    }
}

impl std::error::Error for ParseError {}

/// Reads one rule.
///
/// ```
/// use sluice_core::rule::{Cmp, Cond, Rate, parse_rule};
/// let rule = parse_rule("big: op=write size>=1MiB rate=100MiB/s burst=4MiB").unwrap();
/// assert_eq!(rule.name.as_deref(), Some("big"));
/// assert_eq!(rule.conds[1], Cond::Size(Cmp::Ge, 1 << 20));
/// assert_eq!(rule.rate, Rate::bytes(100 << 20));
/// assert_eq!(rule.burst, Some(4 << 20));
/// ```
pub fn parse_rule(input: &str) -> Result<Rule, ParseError> {
    let mut tokens = tokens(input).peekable();
    let Some(&first) = tokens.peek() else {
        return Err(ParseError::new(
            0,
            "",
            "a rule such as 'op=getattr rate=5k/s' (this one is empty)",
        ));
    };
    let name = read_name(first)?;
    if name.is_some() {
        tokens.next();
    }
    let mut conds = Vec::new();
    let mut rate: Option<(rate::Rate, Token<'_>)> = None;
    let mut burst: Option<(u64, Token<'_>)> = None;
    for token in tokens {
        let expected = move || match (rate, burst) {
            (None, _) if token.at == first.at && value::is_name(token.text) => {
                format!(
                    "{} (a rule's name ends with ':', as in 'md: …')",
                    expected_key(true)
                )
            }
            (None, _) => expected_key(true),
            (Some(_), None) => {
                "burst= or the end of the rule (conditions come before rate=)".to_owned()
            }
            (Some(_), Some(_)) => "the end of the rule".to_owned(),
        };
        let Some(pair) = Pair::split(token) else {
            return Err(token.error(expected()));
        };
        match (pair.key.text, rate, burst) {
            ("rate", Some((_, earlier)), _) | ("burst", _, Some((_, earlier))) => {
                return Err(repeated(token, pair.key.text, earlier));
            }
            ("rate", None, _) => {
                let rate_value =
                    rate::read_rate(pair.equals()?.text).map_err(|e| pair.value.error(e))?;
                rate = Some((rate_value, token));
            }
            ("burst", Some((rate_value, _)), None) => {
                let burst_value = rate::read_burst(pair.equals()?.text, rate_value.unit)
                    .map_err(|e| pair.value.error(e))?;
                burst = Some((burst_value, token));
            }
            ("burst", None, _) => {
                return Err(token.error(format!("{} (burst= comes after rate=)", expected())));
            }
            (_, Some(_), _) => return Err(token.error(expected())),
            (_, None, _) => push_cond(&mut conds, &pair, true)?,
        }
    }
    let Some((rate, rate_token)) = rate else {
        let end = input.trim_end().len();
        return Err(ParseError::new(
            end,
            "",
            "rate=RATE at the end of the rule: every rule needs one (e.g. rate=5k/s)",
        ));
    };
    let rule = Rule {
        name,
        conds: conds.into_iter().map(|(cond, _)| cond).collect(),
        rate,
        burst: burst.map(|(b, _)| b),
    };
    rule.check_rate_unit().map_err(|e| rate_token.error(e))?;
    Ok(rule)
}

impl FromStr for Rule {
    type Err = ParseError;

    /// Same as [`parse_rule`].
    fn from_str(s: &str) -> Result<Rule, ParseError> {
        parse_rule(s)
    }
}

/// Reads the conditions alone (the `match` of a rules file, a pool's watch): no name,
/// rate or burst.
pub fn parse_conditions(input: &str) -> Result<Vec<Cond>, ParseError> {
    let mut conds = Vec::new();
    for token in tokens(input) {
        match Pair::split(token) {
            Some(pair) if !matches!(pair.key.text, "rate" | "burst") => {
                push_cond(&mut conds, &pair, false)?
            }
            Some(pair) => {
                let key = pair.key.text;
                return Err(token.error(format!(
                    "{} ({key} is a field of its own in a rules file: {key} = \"…\")",
                    expected_key(false)
                )));
            }
            None => return Err(token.error(expected_key(false))),
        }
    }
    Ok(conds.into_iter().map(|(cond, _)| cond).collect())
}

/// Reads the rule name if `token` is one (`md:`); `Ok(None)` if it is something else.
fn read_name(token: Token<'_>) -> Result<Option<String>, ParseError> {
    match token.text.strip_suffix(':') {
        Some(name) if !name.contains(['=', '<', '>']) => read_name_text(name)
            .map(Some)
            .map_err(|expected| token.error(format!("{expected}, followed by ':'"))),
        _ => Ok(None),
    }
}

/// Checks a rule name, in the rule line or in a rules file.
pub(crate) fn read_name_text(name: &str) -> Result<String, String> {
    if value::is_name(name) {
        Ok(name.to_owned())
    } else {
        Err("a rule name of letters, digits, '_', '.' or '-'".to_owned())
    }
}

/// What may start a condition: `a key (op, class, …)`, plus `or rate=` in a rule line.
fn expected_key(rate_allowed: bool) -> String {
    let or_rate = if rate_allowed { " or rate=" } else { "" };
    format!("a key ({}){or_rate}", fields::key_list())
}

/// A key given twice: an error at the second, pointing back at the first.
fn repeated(token: Token<'_>, key: &str, earlier: Token<'_>) -> ParseError {
    token.error(format!(
        "each key once ({key}= is already given at column {})",
        earlier.at + 1
    ))
}

/// Reads the condition in `pair` and appends it, refusing a key already given.
fn push_cond<'a>(
    conds: &mut Vec<(Cond, Token<'a>)>,
    pair: &Pair<'a>,
    rate_allowed: bool,
) -> Result<(), ParseError> {
    let Some(field) = Field::find(pair.key.text) else {
        return Err(pair.token.error(expected_key(rate_allowed)));
    };
    if let Some((_, earlier)) = conds.iter().find(|(cond, _)| cond.key() == field.key) {
        return Err(repeated(pair.token, field.key, *earlier));
    }
    if !field.compares && pair.cmp != Cmp::Eq {
        return Err(pair.op.error(format!(
            "'=' (only {} can use <, <=, >, >=)",
            fields::comparing_keys()
        )));
    }
    let cond = (field.read)(pair.cmp, pair.value.text)
        .map_err(|e| ParseError::new(pair.value.at + e.at, &e.token, e.expected))?;
    conds.push((cond, pair.token));
    Ok(())
}

impl Rule {
    /// Refuses a bytes rate on a rule that selects no data operation.
    ///
    /// A bytes rate charges each request its byte count; on `op=getattr` it would charge
    /// nothing and so hold nothing, which is never what was meant (usually `1M/s` was).
    pub(crate) fn check_rate_unit(&self) -> Result<(), String> {
        let data_ops = || {
            Op::ALL
                .iter()
                .copied()
                .filter(|op| op.class() == Class::Data)
        };
        if self.rate.unit == Unit::Ops || data_ops().any(|op| self.matches_op(op)) {
            return Ok(());
        }
        let names: Vec<&str> = data_ops().map(Op::name).collect();
        Err(format!(
            "a rate in operations per second (e.g. 5k/s): a bytes rate holds only data \
             operations ({}), and this rule selects none",
            names.join(", ")
        ))
    }
}

/// A whitespace-separated piece of the input and the byte offset where it starts.
#[derive(Clone, Copy, Debug)]
struct Token<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Token<'a> {
    fn error(self, expected: impl Into<String>) -> ParseError {
        ParseError::new(self.at, self.text, expected)
    }

    fn slice(self, from: usize, to: usize) -> Token<'a> {
        Token {
            text: &self.text[from..to],
            at: self.at + from,
        }
    }
}

/// The tokens of `input`, split at whitespace (any Unicode whitespace, so that tabs and
/// the newlines of a multi-line TOML string separate tokens too).
fn tokens(input: &str) -> impl Iterator<Item = Token<'_>> {
    let mut rest = input;
    let mut base = 0;
    std::iter::from_fn(move || {
        let start = rest.find(|c: char| !c.is_whitespace())?;
        let after = &rest[start..];
        let len = after.find(char::is_whitespace).unwrap_or(after.len());
        let token = Token {
            text: &after[..len],
            at: base + start,
        };
        base += start + len;
        rest = &after[len..];
        Some(token)
    })
}

/// A token `KEY CMP VALUE`, split at the first `<`, `>` or `=`.
struct Pair<'a> {
    token: Token<'a>,
    key: Token<'a>,
    op: Token<'a>,
    cmp: Cmp,
    value: Token<'a>,
}

impl<'a> Pair<'a> {
    fn split(token: Token<'a>) -> Option<Pair<'a>> {
        let at = token.text.find(['<', '>', '='])?;
        let (cmp, len) = Cmp::at_start_of(&token.text[at..])?;
        Some(Pair {
            token,
            key: token.slice(0, at),
            op: token.slice(at, at + len),
            cmp,
            value: token.slice(at + len, token.text.len()),
        })
    }

    /// The value of a `KEY=VALUE` pair whose key takes no comparison (`rate`, `burst`).
    fn equals(&self) -> Result<Token<'a>, ParseError> {
        if self.cmp == Cmp::Eq {
            Ok(self.value)
        } else {
            Err(self.op.error("'='"))
        }
    }
}
