//! `sluice generate`: the man pages and shell completions the packages ship, made from
//! the one command-line definition at package build time, so that neither can drift from
//! what `sluice` accepts. Hidden from the help: it is for packagers (packaging/tree.sh).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::CommandFactory as _;
use clap_complete::Shell;

/// Write the man pages or the shell completions into a directory.
#[derive(clap::Subcommand, Debug)]
pub enum GenerateCmd {
    /// One man page per command and subcommand (sluice.1, sluice-pool-set.1, …) into DIR.
    Man {
        /// Where to write them (created if missing).
        dir: PathBuf,
    },
    /// Completions for bash (sluice.bash), zsh (_sluice) and fish (sluice.fish) into DIR.
    Completions {
        /// Where to write them (created if missing).
        dir: PathBuf,
    },
}

impl GenerateCmd {
    /// Writes the files; a directory that cannot be written is a failure (exit 1).
    pub fn run(&self) -> Result<i32> {
        match self {
            Self::Man { dir } => {
                create(dir)?;
                clap_mangen::generate_to(crate::Cli::command(), dir).with_context(|| {
                    format!("cannot write the man pages into {}", dir.display())
                })?;
            }
            Self::Completions { dir } => {
                create(dir)?;
                let mut cli = crate::Cli::command();
                for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
                    clap_complete::generate_to(shell, &mut cli, "sluice", dir).with_context(
                        || {
                            format!(
                                "cannot write the {shell} completions into {}",
                                dir.display()
                            )
                        },
                    )?;
                }
            }
        }
        Ok(0)
    }
}

fn create(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))
}
