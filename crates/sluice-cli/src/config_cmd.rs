//! `sluice config check FILE [--role global|local]`: a controller's configuration checked
//! offline, by the same reading the daemon does at start (sluice-control's `site`), so
//! that it fails with the daemon's own line and exit code.

use std::path::PathBuf;

use anyhow::Result;
use sluice_control::site::{Role, Site};
use sluice_core::error::Chain;

/// Controller configurations: check them before a daemon reads them.
#[derive(clap::Subcommand, Debug)]
pub enum ConfigCmd {
    Check(CheckArgs),
}

/// Check a global's or a local's configuration file offline, as the daemon reads it at
/// start: the TOML and every value, the [admin] group and users (they must exist on this
/// host), the token file (readable, mode 0600) and, for a global, its TLS files.
///
/// Run it as the user the daemon runs as, on the host it runs on: users, groups and
/// file permissions are that host's. Errors are the daemon's own, one line, exit 2 for a
/// mistake in the file. Without --role the role is inferred from the contents: pools,
/// rules, job settings, stale_after or TLS make it a global's (a single-node local reads
/// the same), an [admin] table alone a local's.
///
/// Example: sluice config check /etc/sluice/global.toml
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The configuration file.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Check it as this daemon's (default: inferred from the file).
    #[arg(long, value_enum, value_name = "ROLE")]
    role: Option<RoleArg>,
}

/// `--role`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum RoleArg {
    /// `sluice global`.
    Global,
    /// `sluice local`.
    Local,
}

impl ConfigCmd {
    /// Runs the subcommand.
    pub fn run(&self) -> Result<i32> {
        match self {
            ConfigCmd::Check(a) => a.run(),
        }
    }
}

impl CheckArgs {
    fn run(&self) -> Result<i32> {
        let given = self.role.map(|r| match r {
            RoleArg::Global => Role::Global,
            RoleArg::Local => Role::Local,
        });
        // Read as a global's: the TLS files are read only when the file sets them, and
        // a file that sets them is a global's.
        let site = match Site::read(Some(&self.file), given.unwrap_or(Role::Global)) {
            Ok(site) => site,
            Err(e) => {
                let checked = match given {
                    Some(role) => format!(" (checked as a {} configuration)", role.name()),
                    None => String::new(),
                };
                eprintln!("sluice: {}{checked}", Chain(&e));
                return Ok(crate::exit_code(&e));
            }
        };
        let role = given.unwrap_or_else(|| Role::of(&site.config));
        let how = match given {
            Some(_) => "",
            None => " (inferred from its contents; --role to choose)",
        };
        println!(
            "{}: a valid {} configuration{how}: {}",
            self.file.display(),
            role.name(),
            site.summary(role)
        );
        for ignored in site.ignored(role) {
            println!("note: {ignored}");
        }
        Ok(0)
    }
}
