//! The rule language: ordered rules, first match wins, in the shape of Lustre NRS TBF.
//!
//! One line per rule: `[NAME:] KEY=VALUE[,VALUE…] … rate=RATE [burst=N]`. A rule is an AND
//! of its conditions; a condition is an OR of its values. Parsing yields a [`Rule`] value
//! that is checked completely before anything is applied; printing a rule gives its
//! normalised form, and parsing that form gives the same rule back.
//!
//! ```
//! use sluice_core::op::Op;
//! use sluice_core::rule::{Identity, Rule};
//! let rule: Rule = "stats: user=alice op=getattr rate=2k/s".parse().unwrap();
//! let alice = Identity { uid: 1000, user: Some("alice".into()), ..Identity::default() };
//! assert!(rule.matches_identity(&alice) && rule.matches_op(Op::Getattr));
//! assert!(!rule.matches_op(Op::Read));
//! assert_eq!(rule.burst_or_default(), 20);
//! ```
//!
//! The keys, their value syntax and when each is decided come from one table,
//! [`FIELDS`]; the administrator's guide is `docs/rules.md`.

mod fields;
mod file;
mod parse;
mod print;
mod quantity;
mod rate;
mod value;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

pub use fields::{Cond, FIELDS, Field, Scope, keys_markdown};
pub use file::{RulesFile, RulesFileError};
pub use parse::{ParseError, parse_conditions, parse_rule};
pub use rate::{Rate, Unit, format_amount_approx, format_rate_approx};

/// A size in bytes as every command and file of sluice reads it: a number, optionally with
/// a unit (`4096`, `64KiB`, `1MiB`; `k`, `M`, `G` count in thousands), the reader of the
/// rule language's `size` field.
pub fn parse_size(text: &str) -> Result<u64, String> {
    value::size(text).map_err(|expected| format!("'{text}': expected {expected}"))
}

use crate::op::Op;

/// One rule: conditions on a request and the rate its matching requests are held to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Optional name, printed before the conditions (`NAME: …`).
    pub name: Option<String>,
    /// Conditions, all of which must hold (in the order written; at most one per key).
    pub conds: Vec<Cond>,
    /// The rate matching requests are held to.
    pub rate: Rate,
    /// How many units may pass at once after an idle period; `None` means the default.
    pub burst: Option<u64>,
}

/// A comparison used by the `size` condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `=`
    Eq,
}

impl Cmp {
    /// Every comparison.
    pub const ALL: [Cmp; 5] = [Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge, Cmp::Eq];

    /// How the comparison is written.
    pub const fn symbol(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
            Cmp::Eq => "=",
        }
    }

    /// The comparison `text` starts with, longest first (`<=` before `<`), and its length.
    pub fn at_start_of(text: &str) -> Option<(Cmp, usize)> {
        Cmp::ALL
            .into_iter()
            .filter(|cmp| text.starts_with(cmp.symbol()))
            .max_by_key(|cmp| cmp.symbol().len())
            .map(|cmp| (cmp, cmp.symbol().len()))
    }

    /// Whether `value CMP bound` holds.
    pub fn holds(self, value: u64, bound: u64) -> bool {
        match self {
            Cmp::Lt => value < bound,
            Cmp::Le => value <= bound,
            Cmp::Gt => value > bound,
            Cmp::Ge => value >= bound,
            Cmp::Eq => value == bound,
        }
    }
}

/// A user named in a rule: by name or by numeric uid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserSpec {
    /// A numeric uid.
    Uid(u32),
    /// A login name, resolved by the caller.
    Name(String),
}

/// Who is making requests: what a rule's process-level conditions are matched against.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    /// Job identifier.
    pub job: String,
    /// Real uid.
    pub uid: u32,
    /// Login name of `uid`, when known.
    pub user: Option<String>,
    /// Program name (last component of the executable's path).
    pub exe: String,
}

impl Rule {
    /// Whether the process described by `id` is subject to this rule: every `job`, `user`
    /// and `exe` condition holds. A rule without them concerns every process.
    ///
    /// Decided once per process (its identity does not change), so this may take its time;
    /// it does not allocate anyway.
    pub fn matches_identity(&self, id: &Identity) -> bool {
        self.conds.iter().all(|cond| cond.holds_for_process(id))
    }

    /// Whether requests of operation `op` are subject to this rule: every `op` and `class`
    /// condition holds.
    ///
    /// `mmap` is held only by a rule that names it (`op=mmap`), never by a class or a
    /// catch-all: a mapping's later page faults are not intercepted, so holding the call
    /// itself would charge a cost unrelated to the I/O it causes.
    pub fn matches_op(&self, op: Op) -> bool {
        if op == Op::Mmap && !self.names_op(op) {
            return false;
        }
        self.conds.iter().all(|cond| cond.holds_for_op(op))
    }

    /// Whether an `op=` condition of this rule lists `op` by name.
    pub fn names_op(&self, op: Op) -> bool {
        self.conds
            .iter()
            .any(|cond| matches!(cond, Cond::Op(ops) if ops.contains(&op)))
    }

    /// The normalised absolute paths of the `mount=` condition, if the rule has one: the
    /// rule concerns only targets at or under one of them.
    pub fn mount_paths(&self) -> Option<&[String]> {
        self.conds.iter().find_map(|cond| match cond {
            Cond::Mount(paths) => Some(paths.as_slice()),
            _ => None,
        })
    }

    /// The `size` condition, if the rule has one: the rule concerns only requests whose
    /// byte count `n` satisfies `cmp.holds(n, bound)` (metadata calls count 0).
    pub fn size_cond(&self) -> Option<(Cmp, u64)> {
        self.conds.iter().find_map(|cond| match cond {
            Cond::Size(cmp, bound) => Some((*cmp, *bound)),
            _ => None,
        })
    }

    /// The conditions in normal form, separated by single spaces, without name or rate:
    /// a pool's filter, a rules file's `match`.
    pub fn filter(&self) -> String {
        print::Conditions(&self.conds).to_string()
    }

    /// The burst: the one written in the rule, else [`Rate::default_burst`], 10 ms worth
    /// of the rate and at least 1 (`rate=5k/s` bursts 50 operations, `rate=100MiB/s`
    /// 1 MiB).
    pub fn burst_or_default(&self) -> u64 {
        self.burst.unwrap_or(self.rate.default_burst())
    }
}
