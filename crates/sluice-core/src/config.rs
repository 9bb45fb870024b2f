//! The stage's configuration as it travels in a segment: plain text, one item a line.
//!
//! ```text
//! job 4242
//! user alice
//! mount /scratch
//! fstype lustre
//! rule 0 md: op=getattr rate=5k/s
//! pool 0 scratch-md: class=metadata mount=/scratch rate=10k/s
//! watch 0 op=getattr,open
//! cost 0 metadata=4,getattr=1
//! latency_sample 64
//! ```
//! `cost SLOT COSTS` (optional, one per pool at most): what each operation costs the pool
//! in its units (module [`crate::cost`]); a pool without one charges one unit a call.
//! `latency_sample N` (optional, [`DEFAULT_LATENCY_SAMPLE`] when absent, 0 for none): each
//! thread times one real call in N of those a pool admits, into the pool's latency
//! histogram in the segment ([`latency_sample_of`] reads it; [`StageConfig`] itself does
//! not carry it, so that its literal constructions stay valid).
//! `watch SLOT CONDITIONS` (optional, one per pool at most): only the pool's calls that
//! also meet these conditions are timed for its latency histogram (an automatic pool's
//! capacity steers by the latency of the calls that matter, not of every call it holds).
//! Rules are in the order they are tried (first match wins); the number before each is its
//! slot: the bucket and counters it uses, which stay its own while it lives, so that a
//! controller can add or remove other rules without resetting its counters. A pool is
//! written as a rule whose rate is the pool's capacity; the job's share of it is the rate
//! in the pool's bucket. Text rather than a binary layout so that an administrator can read
//! it from the segment with `strings`, and so that the rule language stays the one format.

use std::fmt::Write as _;

use crate::cost::{CostError, Costs};
use crate::rule::{ParseError, Rate, Rule, parse_conditions, parse_rule};
use crate::segment::{MAX_POOLS, MAX_RULES};

/// A rule or a pool with the slot of the segment it uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slotted {
    /// Index among the segment's rule slots (or pool slots).
    pub slot: u8,
    /// The rule; for a pool, its filter with the pool's capacity as the rate.
    pub rule: Rule,
}

/// What a stage needs to know besides the counters: who it runs for and what it enforces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StageConfig {
    /// Job identifier.
    pub job: String,
    /// Login name of the user the job runs as, when known.
    pub user: Option<String>,
    /// Managed places (absolute paths); empty with no `fs_types` means "everything".
    pub mounts: Vec<String>,
    /// File-system types whose mounts are managed (`lustre`, `fuse.*`).
    pub fs_types: Vec<String>,
    /// Rules in the order they are tried.
    pub rules: Vec<Slotted>,
    /// Pools the job shares; every matching pool admits a call, besides its rule.
    pub pools: Vec<Slotted>,
    /// Which calls of a pool are timed for its latency, by pool slot: a pool with no watch
    /// here has every call timed. Made by [`Slotted::watch`]: only the conditions count.
    pub watches: Vec<Slotted>,
    /// What each operation costs a pool, by pool slot: a pool with none here charges one
    /// unit a call.
    pub costs: Vec<SlottedCosts>,
}

/// The costs of the pool in `slot` ([`StageConfig::costs`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlottedCosts {
    /// The pool's slot.
    pub slot: u8,
    /// What each operation costs it.
    pub costs: Costs,
}

impl Slotted {
    /// The watch of the pool in `slot`: the conditions a call of the pool must also meet
    /// to be timed (`op=getattr,open`), held as a rule whose rate is nominal and never
    /// read, so that it compiles as a pool's filter does.
    pub fn watch(slot: u8, conditions: &str) -> Result<Slotted, ParseError> {
        Ok(Slotted {
            slot,
            rule: Rule {
                name: None,
                conds: parse_conditions(conditions)?,
                rate: Rate::ops(1),
                burst: None,
            },
        })
    }
}

/// A line of configuration text that cannot be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A line whose first word is not a known item.
    #[error("line {line}: unknown item '{item}'")]
    UnknownItem {
        /// 1-based line number.
        line: usize,
        /// The first word.
        item: String,
    },
    /// A slot that is not a number, is out of range or is used twice.
    #[error("line {line}: bad slot '{slot}'")]
    BadSlot {
        /// 1-based line number.
        line: usize,
        /// The slot as written.
        slot: String,
    },
    /// An item whose value is not what it takes.
    #[error("line {line}: '{item}' takes {wants}, not '{value}'")]
    BadValue {
        /// 1-based line number.
        line: usize,
        /// The item.
        item: String,
        /// What it takes.
        wants: &'static str,
        /// The value as written.
        value: String,
    },
    /// A rule that does not parse.
    #[error("line {line}: {source}")]
    Rule {
        /// 1-based line number.
        line: usize,
        /// Why.
        source: ParseError,
    },
    /// A pool's costs that do not parse.
    #[error("line {line}: {source}")]
    Cost {
        /// 1-based line number.
        line: usize,
        /// Why.
        source: CostError,
    },
}

impl StageConfig {
    /// The text form.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "job {}", self.job);
        if let Some(u) = &self.user {
            let _ = writeln!(s, "user {u}");
        }
        for m in &self.mounts {
            let _ = writeln!(s, "mount {m}");
        }
        for t in &self.fs_types {
            let _ = writeln!(s, "fstype {t}");
        }
        for r in &self.rules {
            let _ = writeln!(s, "rule {} {}", r.slot, r.rule);
        }
        for p in &self.pools {
            let _ = writeln!(s, "pool {} {}", p.slot, p.rule);
        }
        for w in &self.watches {
            let _ = writeln!(s, "{WATCH_ITEM} {} {}", w.slot, w.rule.filter());
        }
        for c in &self.costs {
            let _ = writeln!(s, "{COST_ITEM} {} {}", c.slot, c.costs);
        }
        s
    }

    /// `rules` in slots 0, 1, … in order: a job whose rules never change.
    pub fn slot_in_order(rules: Vec<Rule>) -> Vec<Slotted> {
        rules
            .into_iter()
            .enumerate()
            .map(|(i, rule)| Slotted {
                slot: i as u8,
                rule,
            })
            .collect()
    }

    /// Parses the text form.
    pub fn from_text(text: &str) -> Result<Self, ConfigError> {
        let mut c = StageConfig::default();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
            let (item, value) = line.split_once(' ').unwrap_or((line, ""));
            match item {
                "job" => c.job = value.to_owned(),
                "user" => c.user = Some(value.to_owned()),
                "mount" => c.mounts.push(value.to_owned()),
                "fstype" => c.fs_types.push(value.to_owned()),
                LATENCY_SAMPLE_ITEM => {
                    parse_latency_sample(i + 1, value)?;
                }
                COST_ITEM => {
                    let (slot_text, text) = value.split_once(' ').unwrap_or((value, ""));
                    let slot = slot_text
                        .parse::<u8>()
                        .ok()
                        .filter(|&s| {
                            (s as usize) < MAX_POOLS && c.costs.iter().all(|t| t.slot != s)
                        })
                        .ok_or_else(|| ConfigError::BadSlot {
                            line: i + 1,
                            slot: slot_text.to_owned(),
                        })?;
                    let costs = text.parse().map_err(|source| ConfigError::Cost {
                        line: i + 1,
                        source,
                    })?;
                    c.costs.push(SlottedCosts { slot, costs });
                }
                "rule" | "pool" | WATCH_ITEM => {
                    let (slots, max, list) = match item {
                        "rule" => (&c.rules, MAX_RULES, 0),
                        "pool" => (&c.pools, MAX_POOLS, 1),
                        _ => (&c.watches, MAX_POOLS, 2),
                    };
                    let entry = slotted(i + 1, value, max, slots, item == WATCH_ITEM)?;
                    [&mut c.rules, &mut c.pools, &mut c.watches][list].push(entry);
                }
                _ => {
                    return Err(ConfigError::UnknownItem {
                        line: i + 1,
                        item: item.to_owned(),
                    });
                }
            }
        }
        Ok(c)
    }
}

/// The configuration item that sets how often a stage samples latency.
pub const LATENCY_SAMPLE_ITEM: &str = "latency_sample";
/// One real call in this many (per thread, among those a pool admits) is timed.
pub const DEFAULT_LATENCY_SAMPLE: u32 = 64;

fn parse_latency_sample(line: usize, value: &str) -> Result<u32, ConfigError> {
    value.parse::<u32>().map_err(|_| ConfigError::BadValue {
        line,
        item: LATENCY_SAMPLE_ITEM.to_owned(),
        wants: "a whole number of calls (0: no sampling)",
        value: value.to_owned(),
    })
}

/// The latency sampling period a configuration text sets (`latency_sample N`, the last one
/// if several), [`DEFAULT_LATENCY_SAMPLE`] when it sets none or an invalid one
/// ([`StageConfig::from_text`] refuses the latter).
pub fn latency_sample_of(text: &str) -> u32 {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let (item, value) = l.split_once(' ')?;
            (item == LATENCY_SAMPLE_ITEM).then(|| parse_latency_sample(i + 1, value).ok())?
        })
        .last()
        .unwrap_or(DEFAULT_LATENCY_SAMPLE)
}

/// `text` with its latency sampling period set to `every` (a line appended: the last one
/// counts).
pub fn with_latency_sample(mut text: String, every: u32) -> String {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let _ = writeln!(text, "{LATENCY_SAMPLE_ITEM} {every}");
    text
}

/// The configuration item naming which calls of a pool are timed.
const WATCH_ITEM: &str = "watch";
/// The configuration item giving what each operation costs a pool.
const COST_ITEM: &str = "cost";

/// Reads `SLOT RULE` (or `SLOT CONDITIONS` for a `watch`) whose slot is below `max` and
/// not among `taken`.
fn slotted(
    line: usize,
    value: &str,
    max: usize,
    taken: &[Slotted],
    watch: bool,
) -> Result<Slotted, ConfigError> {
    let (slot_text, rule_text) = value.split_once(' ').unwrap_or((value, ""));
    let slot = slot_text
        .parse::<u8>()
        .ok()
        .filter(|&s| (s as usize) < max && taken.iter().all(|t| t.slot != s))
        .ok_or_else(|| ConfigError::BadSlot {
            line,
            slot: slot_text.to_owned(),
        })?;
    let rule = if watch {
        Slotted::watch(slot, rule_text).map(|w| w.rule)
    } else {
        parse_rule(rule_text)
    };
    let rule = rule.map_err(|source| ConfigError::Rule { line, source })?;
    Ok(Slotted { slot, rule })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trip() {
        let c = StageConfig {
            job: "job 7".into(),
            user: Some("alice".into()),
            mounts: vec!["/scratch".into()],
            fs_types: vec!["lustre".into()],
            rules: StageConfig::slot_in_order(vec![parse_rule("op=getattr rate=5k/s").unwrap()]),
            pools: vec![Slotted {
                slot: 3,
                rule: parse_rule("md: class=metadata rate=10k/s").unwrap(),
            }],
            watches: vec![Slotted::watch(3, "op=getattr,open job=7").unwrap()],
            costs: vec![SlottedCosts {
                slot: 3,
                costs: "metadata=4,getattr=1".parse().unwrap(),
            }],
        };
        assert!(c.to_text().contains("\nwatch 3 op=getattr,open job=7\n"));
        assert!(c.to_text().contains("\ncost 3 metadata=4,getattr=1\n"));
        assert_eq!(StageConfig::from_text(&c.to_text()).unwrap(), c);
    }

    #[test]
    fn latency_sample_is_read_and_checked() {
        let c = StageConfig {
            job: "7".into(),
            ..Default::default()
        };
        assert_eq!(latency_sample_of(&c.to_text()), DEFAULT_LATENCY_SAMPLE);
        let text = with_latency_sample(c.to_text(), 16);
        assert_eq!(latency_sample_of(&text), 16);
        assert_eq!(StageConfig::from_text(&text).unwrap(), c);
        assert_eq!(latency_sample_of(&with_latency_sample(text, 0)), 0);
        assert!(matches!(
            StageConfig::from_text("latency_sample often"),
            Err(ConfigError::BadValue { line: 1, .. })
        ));
    }

    #[test]
    fn slots_are_checked() {
        for text in [
            "rule 64 rate=1/s",
            "pool 16 rate=1/s",
            "rule x rate=1/s",
            "rule 1 rate=1/s\nrule 1 rate=2/s",
            "cost 16 open=2",
            "cost 1 open=2\ncost 1 open=3",
        ] {
            assert!(
                matches!(
                    StageConfig::from_text(text),
                    Err(ConfigError::BadSlot { .. })
                ),
                "{text}"
            );
        }
        assert!(matches!(
            StageConfig::from_text("cost 1 open=0"),
            Err(ConfigError::Cost { line: 1, .. })
        ));
    }
}
