//! Rules files: an ordered list of rules in TOML, for a site or a job.
//!
//! ```toml
//! [[rule]]
//! name = "md"                            # optional
//! match = "op=getattr,open user=alice"   # optional: without it the rule matches everything
//! rate = "5k/s"
//! burst = 100                            # optional; bytes rates may write "4MiB"
//! ```
//!
//! One `[[rule]]` table per rule, in order (the first that matches a request applies).
//! The rule's parts are separate fields, and `match` holds the conditions in the one-line
//! syntax, so that a file reads like a table and a rule copies from the command line to a
//! file without translation. Every error names the file, the line, the rule and its field.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::parse::{ParseError, parse_conditions, read_name_text};
use super::rate::{self, Rate, Unit};
use super::{Rule, quantity};
use crate::toml_text::{self, TomlError, line_and_column};

/// The TOML schema of a rules file (see the module documentation and `docs/rules.md`).
///
/// ```
/// use sluice_core::rule::RulesFile;
/// let rules = RulesFile::parse(
///     r#"
///     [[rule]]
///     name = "md"
///     match = "op=getattr,open user=alice"
///     rate = "5k/s"
///
///     [[rule]]
///     rate = "100MiB/s"
///     burst = "4MiB"
///     "#,
/// )
/// .unwrap();
/// assert_eq!(rules[0].to_string(), "md: op=getattr,open user=alice rate=5k/s");
/// assert_eq!(rules[1].to_string(), "rate=100MiB/s burst=4MiB");
/// assert_eq!(RulesFile::parse(&RulesFile::render(&rules)).unwrap(), rules);
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesFile {
    /// The rules, in order, each with the span of its table (for error lines).
    #[serde(default)]
    rule: Vec<Spanned<Entry>>,
}

/// One `[[rule]]` table as written; checked into a [`Rule`] by [`Entry::check`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: Option<Spanned<String>>,
    #[serde(rename = "match")]
    conditions: Option<Spanned<String>>,
    rate: Option<Spanned<String>>,
    /// An integer, or a string with a unit; anything else is reported by [`Entry::check`].
    burst: Option<Spanned<toml::Value>>,
}

/// Why a rules file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RulesFileError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The text is not TOML, or not in the schema (an unknown field, a wrong type); the
    /// file is `rules file` when parsed from text.
    #[error(transparent)]
    Toml(#[from] TomlError),
    /// A rule has no `rate`.
    #[error(
        "{file}:{line}: rule {index}: rate: missing (every rule needs one, e.g. rate = \"5k/s\")"
    )]
    MissingRate {
        /// The file, or `rules file` when parsed from text.
        file: String,
        /// 1-based line of the rule's table.
        line: usize,
        /// 1-based position of the rule in the file.
        index: usize,
    },
    /// A field of a rule is invalid.
    #[error("{file}:{line}: rule {index}{}: {field}: {error}", in_parens(name))]
    Rule {
        /// The file, or `rules file` when parsed from text.
        file: String,
        /// 1-based line of the field.
        line: usize,
        /// 1-based position of the rule in the file.
        index: usize,
        /// The rule's name, if it has a valid one.
        name: Option<String>,
        /// The field: `name`, `match`, `rate` or `burst`.
        field: &'static str,
        /// What is wrong, positioned in the field's text (boxed: errors are rare, and a
        /// small `Result` keeps the happy path cheap to return).
        error: Box<ParseError>,
    },
}

/// ` (NAME)` for a named rule in an error, nothing otherwise.
fn in_parens(name: &Option<String>) -> String {
    name.as_deref()
        .map(|name| format!(" ({name})"))
        .unwrap_or_default()
}

/// The file name used in errors when the text did not come from a file.
const UNNAMED: &str = "rules file";

impl RulesFile {
    /// Reads the rules of a rules file's text, in order.
    pub fn parse(text: &str) -> Result<Vec<Rule>, RulesFileError> {
        Self::parse_named(text, UNNAMED)
    }

    /// Reads the rules of the file at `path`, in order.
    pub fn load(path: impl AsRef<Path>) -> Result<Vec<Rule>, RulesFileError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| RulesFileError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse_named(&text, &path.display().to_string())
    }

    /// Writes `rules` as a rules file that [`RulesFile::parse`] reads back as `rules`:
    /// for the daemons that persist the administrator's rules.
    pub fn render(rules: &[Rule]) -> String {
        let quote = |text: &str| toml::Value::String(text.to_owned()).to_string();
        let mut out = String::new();
        for (i, rule) in rules.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str("[[rule]]\n");
            // Writing to a String cannot fail.
            if let Some(name) = &rule.name {
                let _ = writeln!(out, "name = {}", quote(name));
            }
            if !rule.conds.is_empty() {
                let _ = writeln!(out, "match = {}", quote(&rule.filter()));
            }
            let _ = writeln!(out, "rate = {}", quote(&rule.rate.to_string()));
            // A count of operations is a TOML integer while it fits one; anything else is
            // a string in the notation of the rule line.
            match (rule.burst, rule.rate.unit) {
                (Some(burst), Unit::Ops) if i64::try_from(burst).is_ok() => {
                    let _ = writeln!(out, "burst = {burst}");
                }
                (Some(burst), unit) => {
                    let _ = writeln!(out, "burst = {}", quote(&quantity::format(burst, unit)));
                }
                (None, _) => {}
            }
        }
        out
    }

    fn parse_named(text: &str, file: &str) -> Result<Vec<Rule>, RulesFileError> {
        let doc: RulesFile = toml_text::parse(text, file)?;
        let mut rules: Vec<Rule> = Vec::with_capacity(doc.rule.len());
        for (i, entry) in doc.rule.iter().enumerate() {
            let rule = entry
                .get_ref()
                .check(text, file, i + 1, entry.span().start)?;
            // Names identify rules to the administrator and the daemons: one rule each.
            if let Some(name) = &entry.get_ref().name {
                let first = rules
                    .iter()
                    .position(|r| r.name.as_deref() == Some(name.get_ref().as_str()));
                if let Some(first) = first {
                    return Err(RulesFileError::Rule {
                        file: file.to_owned(),
                        line: line_and_column(text, name.span().start).0,
                        index: i + 1,
                        name: None,
                        field: "name",
                        error: Box::new(ParseError::new(
                            0,
                            name.get_ref(),
                            format!("a name of its own (rule {} is also named so)", first + 1),
                        )),
                    });
                }
            }
            rules.push(rule);
        }
        Ok(rules)
    }
}

impl Entry {
    /// Checks the entry the way a rule line is checked, with errors located in the file.
    fn check(
        &self,
        text: &str,
        file: &str,
        index: usize,
        table_at: usize,
    ) -> Result<Rule, RulesFileError> {
        let mut name = None;
        let fail = |name: &Option<String>, field: &'static str, at: usize, error: ParseError| {
            RulesFileError::Rule {
                file: file.to_owned(),
                line: line_and_column(text, at).0,
                index,
                name: name.clone(),
                field,
                error: Box::new(error),
            }
        };
        if let Some(given) = &self.name {
            let valid = read_name_text(given.get_ref()).map_err(|e| {
                fail(
                    &None,
                    "name",
                    given.span().start,
                    ParseError::new(0, given.get_ref(), e),
                )
            })?;
            name = Some(valid);
        }
        let conds = match &self.conditions {
            Some(given) => parse_conditions(given.get_ref())
                .map_err(|e| fail(&name, "match", given.span().start, e))?,
            None => Vec::new(),
        };
        let Some(given_rate) = &self.rate else {
            return Err(RulesFileError::MissingRate {
                file: file.to_owned(),
                line: line_and_column(text, table_at).0,
                index,
            });
        };
        let rate_at = given_rate.span().start;
        let rate: Rate = given_rate
            .get_ref()
            .parse()
            .map_err(|e| fail(&name, "rate", rate_at, e))?;
        let burst = match &self.burst {
            Some(given) => {
                let text_of_burst = match given.get_ref() {
                    toml::Value::Integer(n) => n.to_string(),
                    toml::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let at = given.span().start;
                let burst = rate::read_burst(&text_of_burst, rate.unit)
                    .map_err(|e| fail(&name, "burst", at, ParseError::new(0, &text_of_burst, e)))?;
                Some(burst)
            }
            None => None,
        };
        let rule = Rule {
            name,
            conds,
            rate,
            burst,
        };
        rule.check_rate_unit().map_err(|e| {
            fail(
                &rule.name,
                "rate",
                rate_at,
                ParseError::new(0, given_rate.get_ref(), e),
            )
        })?;
        Ok(rule)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        RulesFile::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn reads_rules_in_order() {
        let rules = RulesFile::parse(
            "# site rules\n[[rule]]\nname = \"md\"\nmatch = \"op=getattr\"\nrate = \"5k/s\"\nburst = 100\n\n[[rule]]\nrate = \"0/s\"\n",
        )
        .unwrap();
        let lines: Vec<String> = rules.iter().map(Rule::to_string).collect();
        assert_eq!(lines, ["md: op=getattr rate=5k/s burst=100", "rate=0/s"]);
    }

    #[test]
    fn an_empty_file_has_no_rules() {
        assert_eq!(RulesFile::parse("").unwrap(), Vec::new());
        assert_eq!(RulesFile::parse("# nothing yet\n").unwrap(), Vec::new());
    }

    #[test]
    fn errors_name_the_line_the_rule_and_the_field() {
        let cases = [
            (
                "[[rule]]\nrate = \"1k/s\"\n\n[[rule]]\nname = \"md\"\nmatch = \"op=stat\"\nrate = \"5k/s\"\n",
                "rules file:6: rule 2 (md): match: at column 4 ('stat'): expected an operation (",
            ),
            (
                "[[rule]]\nmatch = \"op=open\"\n",
                "rules file:1: rule 1: rate: missing (every rule needs one, e.g. rate = \"5k/s\")",
            ),
            (
                "[[rule]]\nrate = \"5x/s\"\n",
                "rules file:2: rule 1: rate: at column 1 ('5x/s'): expected a rate unit",
            ),
            (
                "[[rule]]\nrate = \"5k/s\"\nburst = 0\n",
                "rules file:3: rule 1: burst: at column 1 ('0'): expected a burst",
            ),
            (
                "[[rule]]\nrate = \"5k/s\"\nburst = 1.5\n",
                "rules file:3: rule 1: burst: at column 1 ('1.5'): expected a burst",
            ),
            (
                "[[rule]]\nname = \"a b\"\nrate = \"5k/s\"\n",
                "rules file:2: rule 1: name: at column 1 ('a b'): expected a rule name",
            ),
            (
                "[[rule]]\nmatch = \"op=getattr\"\nrate = \"1MiB/s\"\n",
                "rules file:3: rule 1: rate: at column 1 ('1MiB/s'): expected a rate in operations",
            ),
            (
                "[[rule]]\nmatch = \"op=open rate=5k/s\"\nrate = \"5k/s\"\n",
                "rules file:2: rule 1: match: at column 9 ('rate=5k/s'): expected a key (op, class",
            ),
        ];
        for (text, start) in cases {
            let message = error(text);
            assert!(message.starts_with(start), "{text:?}: {message}");
        }
        assert!(
            error(cases[7].0)
                .ends_with("(rate is a field of its own in a rules file: rate = \"…\")")
        );
    }

    #[test]
    fn schema_errors_come_from_toml_with_their_place() {
        assert_eq!(
            error("[[rule]]\nrat = \"5k/s\"\n"),
            "rules file:2:1: unknown field `rat`, expected one of `name`, `match`, `rate`, `burst`"
        );
        assert!(
            error("[[rules]]\nrate = \"5k/s\"\n")
                .starts_with("rules file:1:3: unknown field `rules`")
        );
        assert!(error("[[rule]\n").starts_with("rules file:1:"));
    }

    #[test]
    fn names_are_unique_within_a_file() {
        let text =
            "[[rule]]\nname = \"md\"\nrate = \"1k/s\"\n[[rule]]\nname = \"md\"\nrate = \"2k/s\"\n";
        assert_eq!(
            error(text),
            "rules file:5: rule 2: name: at column 1 ('md'): expected a name of its own (rule 1 is also named so)"
        );
    }

    #[test]
    fn load_names_the_file() {
        let missing = RulesFile::load("/nonexistent/sluice-rules.toml").unwrap_err();
        assert!(matches!(missing, RulesFileError::Read { .. }));
        assert!(
            missing
                .to_string()
                .starts_with("/nonexistent/sluice-rules.toml: ")
        );
        let dir = std::env::temp_dir().join(format!("sluice-rules-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rules.toml");
        std::fs::write(&path, "[[rule]]\nrate = \"-1/s\"\n").unwrap();
        let message = RulesFile::load(&path).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            message.starts_with(&format!("{}:2: rule 1: rate: ", path.display())),
            "{message}"
        );
    }

    #[test]
    fn render_writes_what_parse_reads() {
        let rules: Vec<Rule> = [
            "md: op=getattr,open user=alice rate=5k/s burst=100",
            "op=write size>=1MiB rate=100MiB/s burst=4MiB",
            "rate=0/s",
        ]
        .iter()
        .map(|line| line.parse().unwrap())
        .collect();
        let text = RulesFile::render(&rules);
        assert!(
            text.contains("burst = 100\n") && text.contains("burst = \"4MiB\"\n"),
            "{text}"
        );
        assert_eq!(RulesFile::parse(&text).unwrap(), rules);
    }
}
