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
                let mut cli = crate::Cli::command().disable_help_subcommand(true);
                cli.build();
                man_pages(&cli, dir).with_context(|| {
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

/// The page of `cmd` and of each of its visible subcommands, as `clap_mangen::generate_to`
/// writes them but for the header: its default names a subcommand's page after the
/// subcommand alone ("set 0.1.0" on `sluice-pool-set(1)`), so every page says here which
/// program and release it belongs to ("sluice 0.1.0"), as the pages of git or coreutils do.
fn man_pages(cmd: &clap::Command, dir: &Path) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        man_pages(sub, dir)?;
    }
    let source = format!("sluice {}", env!("CARGO_PKG_VERSION"));
    clap_mangen::Man::new(cmd.clone())
        .source(source)
        .generate_to(dir)?;
    Ok(())
}

fn create(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_man_page_is_titled_by_its_full_command_and_names_sluice_and_its_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        GenerateCmd::Man {
            dir: dir.path().to_owned(),
        }
        .run()
        .expect("sluice generate man");
        let version = env!("CARGO_PKG_VERSION");
        let mut pages = 0;
        for entry in std::fs::read_dir(dir.path()).expect("the pages") {
            let path = entry.expect("a page").path();
            let name = path.file_stem().expect("a name").to_string_lossy();
            let text = std::fs::read_to_string(&path).expect("a page's text");
            let header = text
                .lines()
                .find(|l| l.starts_with(".TH "))
                .unwrap_or_else(|| panic!("{name}: no .TH line"));
            assert_eq!(
                header.split_whitespace().collect::<Vec<_>>(),
                [".TH", &name, "1", "\"sluice", &format!("{version}\"")],
                "{name}'s header"
            );
            pages += 1;
        }
        // sluice, sluice-pool, sluice-pool-set, … with no page of the hidden `generate`.
        assert!(pages > 30, "only {pages} pages");
        assert!(dir.path().join("sluice-pool-set.1").is_file());
        assert!(!dir.path().join("sluice-generate.1").exists());
    }
}
