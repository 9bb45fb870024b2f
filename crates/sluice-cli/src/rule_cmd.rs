//! `sluice rule`: check rules before they are put to use.
//!
//! The checking and its wording are sluice_control::render::rule_check's; this module
//! holds the command line and where the answers go.

use std::io::{self, Write};
use std::path::PathBuf;

use sluice_control::render::rule_check::{check_file, check_rule, keys_help};

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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(subcommand)]
        cmd: RuleCmd,
    }

    // The answers' wording is tested beside it, in sluice_control::render::rule_check.

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_rule_and_a_file_are_exclusive_and_one_is_required() {
        assert!(Cli::try_parse_from(["rule", "check"]).is_err());
        assert!(Cli::try_parse_from(["rule", "check", "rate=1/s", "--file", "x.toml"]).is_err());
    }
}
