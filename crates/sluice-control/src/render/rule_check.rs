//! `sluice rule check`'s answers: a rule or a rules file in normal form, or the error
//! worded for a terminal with a caret under its column, and the exit code (0 valid, 2
//! invalid). The checking itself is sluice-core's parser.

use std::io::{self, Write};
use std::path::Path;

use sluice_core::rule::{FIELDS, ParseError, RulesFile, parse_rule};

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

/// The list of keys at the end of `sluice rule check --help`, from the same table the
/// parser uses.
pub fn keys_help() -> String {
    let mut help = String::from("Keys:\n");
    for field in FIELDS {
        help.push_str(&format!(
            "  {:<7}{}\n",
            field.key,
            field.doc.trim().replace('`', "")
        ));
    }
    help
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks `rule` (or the file `path`) and returns (exit code, stdout, stderr).
    fn checked(
        check: impl FnOnce(&mut dyn Write, &mut dyn Write) -> io::Result<i32>,
    ) -> (i32, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = check(&mut out, &mut err).expect("writing to a Vec cannot fail");
        (
            code,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    }

    #[test]
    fn a_valid_rule_prints_its_normal_form() {
        let (code, out, err) =
            checked(|o, e| check_rule("md:  op=getattr,open   rate=5000/s", o, e));
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (0, "md: op=getattr,open rate=5k/s\n", "")
        );
    }

    #[test]
    fn an_invalid_rule_says_where_and_why_with_a_caret() {
        let (code, out, err) = checked(|o, e| check_rule("op=getattr rat=5k/s", o, e));
        assert_eq!((code, out.as_str()), (2, ""));
        assert_eq!(
            err,
            "sluice rule check: at column 12 ('rat=5k/s'): expected a key (op, class, job, user, exe, mount, size) or rate=\n\
             \x20 op=getattr rat=5k/s\n\
             \x20            ^\n"
        );
    }

    #[test]
    fn a_missing_rate_points_past_the_end() {
        let (code, _, err) = checked(|o, e| check_rule("op=open", o, e));
        assert_eq!(code, 2);
        assert!(err.ends_with("  op=open\n         ^\n"), "{err}");
    }

    #[test]
    fn a_rules_file_prints_every_rule_or_its_first_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let good = dir.path().join("good.toml");
        let bad = dir.path().join("bad.toml");
        std::fs::write(&good, "[[rule]]\nname = \"md\"\nmatch = \"op=getattr\"\nrate = \"5000/s\"\n\n[[rule]]\nrate = \"1GiB/s\"\n")
            .expect("write");
        std::fs::write(&bad, "[[rule]]\nmatch = \"op=stat\"\nrate = \"5k/s\"\n").expect("write");
        let good_run = checked(|o, e| check_file(&good, o, e));
        let bad_run = checked(|o, e| check_file(&bad, o, e));
        assert_eq!(
            good_run,
            (
                0,
                "md: op=getattr rate=5k/s\nrate=1GiB/s\n".to_owned(),
                String::new()
            )
        );
        assert_eq!(bad_run.0, 2);
        assert!(
            bad_run.2.starts_with(&format!(
                "sluice rule check: {}:2: rule 1: match: at column 4 ('stat')",
                bad.display()
            )),
            "{}",
            bad_run.2
        );
    }

    #[test]
    fn help_lists_every_key() {
        let help = keys_help();
        assert!(
            FIELDS
                .iter()
                .all(|field| help.contains(&format!("  {:<7}", field.key))),
            "{help}"
        );
    }
}
