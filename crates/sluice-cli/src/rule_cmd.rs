//! `sluice rule`: check rules before they are put to use.
//!
//! The checking and its wording are sluice_control::render::rule_check's; this module
//! holds the command line and where the answers go.

use std::io::{self, Write};
use std::path::PathBuf;

use sluice_control::render::rule_check::{check_file, check_rule};
use sluice_core::rule::FIELDS;

/// Rules: check them and see them in normal form.
#[derive(clap::Subcommand, Debug)]
pub enum RuleCmd {
    /// Check a rule, or a file of rules, and print it in normal form.
    ///
    /// A rule holds the I/O calls it matches to a rate. It is one line:
    ///
    ///     [NAME:] KEY=VALUE[,VALUE…] … rate=RATE [burst=N]
    ///
    /// Conditions must all hold; a condition's values are alternatives. Rates count
    /// operations (500/s, 5k/s, 2M/s) or bytes (100MiB/s, 1GB/s); rate=0/s holds
    /// matching calls until it is raised. burst is how much may pass at once after an
    /// idle period (default: 10 ms of the rate). Rules are tried in order and the
    /// first that matches a call applies.
    ///
    /// A valid rule is printed in normal form (single spaces, exact units, normalised
    /// paths) on stdout, with exit status 0. An invalid one is reported on stderr with
    /// its column and what was expected there, with exit status 2.
    ///
    /// Examples:
    ///
    ///     sluice rule check 'stats: user=alice op=getattr,access rate=2k/s'
    ///     sluice rule check 'job=4242 class=metadata rate=10k/s burst=500'
    ///     sluice rule check 'op=write size>=1MiB mount=/scratch rate=500MiB/s'
    ///     sluice rule check --file /etc/sluice/rules.toml
    ///
    /// The language and the rules file format are described in docs/rules.md.
    #[command(verbatim_doc_comment, after_long_help = keys_help())]
    Check {
        /// The rule, quoted as one argument.
        #[arg(
            value_name = "RULE",
            required_unless_present = "file",
            conflicts_with = "file"
        )]
        rule: Option<String>,
        /// Check every rule of this TOML rules file instead, and print them one per line.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
    },
    #[command(flatten)]
    Admin(crate::admin_cmd::RuleAdmin),
}

impl RuleCmd {
    /// Runs the subcommand and returns the exit code: 0 when everything checked is
    /// valid, 2 when something is not (already reported on stderr).
    pub fn run(&self) -> anyhow::Result<i32> {
        if let RuleCmd::Admin(admin) = self {
            return admin.run();
        }
        let (stdout, stderr) = (io::stdout(), io::stderr());
        Ok(self.run_to(&mut stdout.lock(), &mut stderr.lock())?)
    }

    fn run_to(&self, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<i32> {
        match self {
            RuleCmd::Check {
                rule: Some(rule), ..
            } => check_rule(rule, out, err),
            RuleCmd::Check {
                file: Some(path), ..
            } => check_file(path, out, err),
            // clap requires one of the two; say so rather than trust it blindly.
            RuleCmd::Check {
                rule: None,
                file: None,
            } => {
                writeln!(err, "sluice rule check: give a RULE or --file FILE")?;
                Ok(2)
            }
            RuleCmd::Admin(_) => unreachable!("run() answers the admin verbs"),
        }
    }
}

/// The list of keys at the end of `--help`, from the same table the parser uses.
fn keys_help() -> String {
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
    use clap::{CommandFactory, Parser};

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(subcommand)]
        cmd: RuleCmd,
    }

    /// Runs `sluice rule ARGS…` and returns (exit code, stdout, stderr).
    fn sluice_rule(args: &[&str]) -> (i32, String, String) {
        let cli = Cli::try_parse_from(std::iter::once("rule").chain(args.iter().copied()))
            .expect("arguments parse");
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = cli
            .cmd
            .run_to(&mut out, &mut err)
            .expect("writing to a Vec cannot fail");
        (
            code,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_valid_rule_prints_its_normal_form() {
        let (code, out, err) = sluice_rule(&["check", "md:  op=getattr,open   rate=5000/s"]);
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (0, "md: op=getattr,open rate=5k/s\n", "")
        );
    }

    #[test]
    fn an_invalid_rule_says_where_and_why_with_a_caret() {
        let (code, out, err) = sluice_rule(&["check", "op=getattr rat=5k/s"]);
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
        let (code, _, err) = sluice_rule(&["check", "op=open"]);
        assert_eq!(code, 2);
        assert!(err.ends_with("  op=open\n         ^\n"), "{err}");
    }

    #[test]
    fn a_rules_file_prints_every_rule_or_its_first_error() {
        let dir = std::env::temp_dir().join(format!("sluice-rule-cmd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let good = dir.join("good.toml");
        let bad = dir.join("bad.toml");
        std::fs::write(&good, "[[rule]]\nname = \"md\"\nmatch = \"op=getattr\"\nrate = \"5000/s\"\n\n[[rule]]\nrate = \"1GiB/s\"\n")
            .expect("write");
        std::fs::write(&bad, "[[rule]]\nmatch = \"op=stat\"\nrate = \"5k/s\"\n").expect("write");
        let good_run = sluice_rule(&["check", "--file", good.to_str().expect("utf-8 path")]);
        let bad_run = sluice_rule(&["check", "--file", bad.to_str().expect("utf-8 path")]);
        std::fs::remove_dir_all(&dir).expect("cleanup");
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
    fn a_rule_and_a_file_are_exclusive_and_one_is_required() {
        assert!(Cli::try_parse_from(["rule", "check"]).is_err());
        assert!(Cli::try_parse_from(["rule", "check", "rate=1/s", "--file", "x.toml"]).is_err());
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
