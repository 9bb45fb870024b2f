//! The stage's configuration as it travels in a segment: plain text, one item a line.
//!
//! ```text
//! job 4242
//! user alice
//! mount /scratch
//! fstype lustre
//! rule md: op=getattr rate=5k/s
//! ```
//! Text rather than a binary layout so that an administrator can read it from the segment
//! with `strings`, and so that the rule language stays the one format for rules.

use std::fmt::Write as _;

use crate::rule::{ParseError, Rule, parse_rule};

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
    /// Rules in order; rule `i` uses bucket `i`.
    pub rules: Vec<Rule>,
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
    /// A rule that does not parse.
    #[error("line {line}: {source}")]
    Rule {
        /// 1-based line number.
        line: usize,
        /// Why.
        source: ParseError,
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
            let _ = writeln!(s, "rule {r}");
        }
        s
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
                "rule" => c
                    .rules
                    .push(parse_rule(value).map_err(|source| ConfigError::Rule {
                        line: i + 1,
                        source,
                    })?),
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
            rules: vec![parse_rule("op=getattr rate=5k/s").unwrap()],
        };
        assert_eq!(StageConfig::from_text(&c.to_text()).unwrap(), c);
    }
}
