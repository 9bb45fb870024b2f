//! `sluice rule check`'s answers: a rule or a rules file in normal form, or the error
//! worded for a terminal with a caret under its column, and the exit code (0 valid, 2
//! invalid). The checking itself is sluice-core's parser.

use std::io::{self, Write};
use std::path::Path;

use sluice_core::rule::{ParseError, RulesFile, parse_rule};

/// The prefix of every error line, so that it is clear which command complains.
const PREFIX: &str = "sluice rule check";

/// Checks one rule: its normal form on `out` and 0, or on `err` the error with the rule
/// echoed and a caret under the column, and 2.
pub fn check_rule(rule: &str, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<i32> {
    match parse_rule(rule) {
        Ok(rule) => {
            writeln!(out, "{rule}")?;
            Ok(0)
        }
        Err(error) => {
            writeln!(err, "{PREFIX}: {error}")?;
            write_caret(rule, &error, err)?;
            Ok(2)
        }
    }
}

/// Echoes a one-line rule and puts a caret under the error's column.
fn write_caret(rule: &str, error: &ParseError, err: &mut dyn Write) -> io::Result<()> {
    if rule.contains(['\n', '\r']) {
        return Ok(());
    }
    // Tabs become single spaces so that the caret lines up with what is echoed.
    let echoed = rule.replace('\t', " ");
    writeln!(err, "  {echoed}")?;
    writeln!(err, "  {:>width$}", "^", width = error.column_in(rule))
}

/// Checks a rules file: every rule in normal form on `out` and 0, or its first error on
/// `err` (pointing to `sluice config check` for a controller configuration) and 2.
pub fn check_file(path: &Path, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<i32> {
    match RulesFile::load(path) {
        Ok(rules) => {
            for rule in rules {
                writeln!(out, "{rule}")?;
            }
            Ok(0)
        }
        Err(_) if is_controller_config(path) => {
            writeln!(
                err,
                "{PREFIX}: {} is a controller configuration (interval, [admin], [[pool]], \
                 [[rule]] rule = …), not a rules file: check it with `sluice config check {}`",
                path.display(),
                path.display()
            )?;
            Ok(2)
        }
        Err(error) => {
            writeln!(err, "{PREFIX}: {error}")?;
            Ok(2)
        }
    }
}

/// Whether `path` holds TOML with what only a controller's configuration has: its
/// top-level settings and tables, or `[[rule]]` entries written `rule = "…"`.
fn is_controller_config(path: &Path) -> bool {
    let Some(table) = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
    else {
        return false;
    };
    let settings = ["interval", "stale_after", "admin", "pool", "job"];
    let rule_lines = table
        .get("rule")
        .and_then(toml::Value::as_array)
        .is_some_and(|rules| rules.iter().any(|r| r.get("rule").is_some()));
    rule_lines || settings.iter().any(|key| table.contains_key(*key))
}
