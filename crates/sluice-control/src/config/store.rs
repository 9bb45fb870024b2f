//! Where a controller's configuration comes from and where it is kept: the site's file
//! (`--config`, read, never written: it is the site's, often a configuration manager's)
//! and the state directory, which holds the configuration in force, written atomically
//! on every administrator's change, so that no restart loses one.
//!
//! How the two combine:
//! - without a file, the saved configuration is the one in force (none saved: no pools,
//!   no rules, an interval of one second);
//! - with a file, the saved configuration wins for as long as the file holds the text it
//!   held when it was last read (kept beside it, `config-file.toml`): the changes made
//!   through the admin API since then stay in force;
//! - once the file's text differs (edited, or replaced by a configuration manager) it
//!   replaces the saved configuration, at start as on SIGHUP, and what the admin API had
//!   changed is dropped (the replaced configuration is kept as `config.replaced.toml`);
//! - the `[admin]` table (who may change things, the TLS files) is always the file's, and
//!   never saved: the admin API cannot set it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{AdminConfig, ConfigError, ControlConfig};
use crate::config::persist::write_atomically;

/// The configuration in force, in the file format (a site may copy it to its `--config`).
const IN_FORCE: &str = "config.toml";
/// The text of `--config` as it was last read.
const FILE_AS_READ: &str = "config-file.toml";
/// The saved configuration the file's new text replaced last.
const REPLACED: &str = "config.replaced.toml";

/// A controller's configuration file and state directory.
#[derive(Clone, Debug)]
pub struct ConfigStore {
    file: Option<PathBuf>,
    state_dir: PathBuf,
}

/// The configuration a controller starts with, and why.
#[derive(Debug)]
pub struct Started {
    /// The configuration to put in force.
    pub config: ControlConfig,
    /// Where it came from.
    pub from: StartedFrom,
}

/// Where a starting configuration came from.
#[derive(Debug, PartialEq)]
pub enum StartedFrom {
    /// No file and nothing saved: no pools, no rules.
    Nothing,
    /// The file, nothing being saved yet.
    File,
    /// The saved configuration; `file_unchanged` when a file is given (and holds the
    /// text last read).
    Saved {
        /// Whether a `--config` file is given (unchanged since it was last read).
        file_unchanged: bool,
    },
    /// The file, whose text changed since it was last read, over a saved configuration
    /// that differed from it in these items (each `pool NAME`, `rule NAME`, `job ID`,
    /// `job ID in POOL` or `interval`).
    FileChanged {
        /// What the saved configuration had that the file's does not.
        dropped: Vec<String>,
    },
}

/// What a SIGHUP found.
#[derive(Debug)]
pub enum Reloaded {
    /// No `--config` was given.
    NoFile,
    /// The file holds the text last read: the configuration in force stays, with the
    /// changes made through the admin API.
    Unchanged,
    /// The file's new configuration, to put in force; `dropped` as in
    /// [`StartedFrom::FileChanged`]. [`ConfigStore::keep_file`] then records it.
    Changed {
        /// The file's configuration.
        config: Box<ControlConfig>,
        /// Its text, as read.
        text: String,
        /// What the configuration in force had that the file's does not.
        dropped: Vec<String>,
    },
}

impl ConfigStore {
    /// The store of a controller given `file` (`--config`) and `state_dir`; creates
    /// the state directory.
    pub fn new(file: Option<PathBuf>, state_dir: PathBuf) -> Result<ConfigStore, ConfigError> {
        std::fs::create_dir_all(&state_dir).map_err(|source| ConfigError::Write {
            path: state_dir.clone(),
            source,
        })?;
        Ok(ConfigStore { file, state_dir })
    }

    /// The state directory it keeps the configuration in.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The file the configuration in force is kept in.
    pub fn in_force_path(&self) -> PathBuf {
        self.state_dir.join(IN_FORCE)
    }

    /// The configuration to start with (see the module documentation), its interval
    /// replaced by `interval` when given; it is saved before it is returned, so that a
    /// state directory this daemon cannot write is an error now, not a loss later.
    pub fn start(&self, interval: Option<Duration>) -> Result<Started, ConfigError> {
        let file = self.read_file()?;
        let saved = self.read_saved()?;
        let (mut config, from) = match (file, saved) {
            (None, None) => (ControlConfig::default(), StartedFrom::Nothing),
            (None, Some(saved)) => (
                saved,
                StartedFrom::Saved {
                    file_unchanged: false,
                },
            ),
            (Some((text, config)), None) => {
                self.remember_file(&text)?;
                (config, StartedFrom::File)
            }
            (Some((text, config)), Some(saved)) if self.file_as_read().as_ref() == Some(&text) => {
                let config = ControlConfig {
                    admin: config.admin,
                    ..saved
                };
                (
                    config,
                    StartedFrom::Saved {
                        file_unchanged: true,
                    },
                )
            }
            (Some((text, config)), Some(saved)) => {
                let dropped = self.replace(&saved, &config)?;
                self.remember_file(&text)?;
                (config, StartedFrom::FileChanged { dropped })
            }
        };
        if let Some(interval) = interval {
            config.interval = interval;
        }
        self.save(&config)?;
        Ok(Started { config, from })
    }

    /// Reads the file again (SIGHUP), to compare with what it held when last read.
    pub fn reload(&self, in_force: &ControlConfig) -> Result<Reloaded, ConfigError> {
        let Some(path) = &self.file else {
            return Ok(Reloaded::NoFile);
        };
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        if self.file_as_read().as_ref() == Some(&text) {
            return Ok(Reloaded::Unchanged);
        }
        let config = super::file::parse(&text, &path.display().to_string())?;
        let dropped = differences(in_force, &config);
        Ok(Reloaded::Changed {
            config: Box::new(config),
            text,
            dropped,
        })
    }

    /// Records a reloaded file's configuration, now in force, over `in_force_before`.
    pub fn keep_file(
        &self,
        in_force_before: &ControlConfig,
        config: &ControlConfig,
        text: &str,
    ) -> Result<(), ConfigError> {
        self.replace(in_force_before, config)?;
        self.save(config)?;
        self.remember_file(text)
    }

    /// Keeps `config` as the configuration in force (all but its `[admin]` table).
    pub fn save(&self, config: &ControlConfig) -> Result<(), ConfigError> {
        without_admin(config).save(self.in_force_path())
    }

    /// Where the replaced configuration is kept.
    pub fn replaced_path(&self) -> PathBuf {
        self.state_dir.join(REPLACED)
    }

    /// The file's text and configuration; `None` without a file or when it does not
    /// exist (a controller may start before its configuration is installed).
    fn read_file(&self) -> Result<Option<(String, ControlConfig)>, ConfigError> {
        let Some(path) = &self.file else {
            return Ok(None);
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.clone(),
                    source,
                });
            }
        };
        let config = super::file::parse(&text, &path.display().to_string())?;
        Ok(Some((text, config)))
    }

    /// The configuration saved last, if any; one that cannot be read is an error (it
    /// was written whole, so it was damaged or edited: the administrator decides).
    fn read_saved(&self) -> Result<Option<ControlConfig>, ConfigError> {
        let path = self.in_force_path();
        match std::fs::read_to_string(&path) {
            Ok(text) => super::file::parse(&text, &path.display().to_string()).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ConfigError::Read { path, source }),
        }
    }

    fn file_as_read(&self) -> Option<String> {
        std::fs::read_to_string(self.state_dir.join(FILE_AS_READ)).ok()
    }

    fn remember_file(&self, text: &str) -> Result<(), ConfigError> {
        let path = self.state_dir.join(FILE_AS_READ);
        write_atomically(&path, text.as_bytes())
            .map_err(|source| ConfigError::Write { path, source })
    }

    /// Keeps `saved` as the replaced configuration when `next` differs from it; what
    /// differs.
    fn replace(
        &self,
        saved: &ControlConfig,
        next: &ControlConfig,
    ) -> Result<Vec<String>, ConfigError> {
        let dropped = differences(saved, next);
        if !dropped.is_empty() {
            without_admin(saved).save(self.replaced_path())?;
        }
        Ok(dropped)
    }
}

/// `config` as it is kept: the `[admin]` table is the file's alone.
fn without_admin(config: &ControlConfig) -> ControlConfig {
    ControlConfig {
        admin: AdminConfig::default(),
        ..config.clone()
    }
}

impl std::fmt::Display for Started {
    /// The line the log gives at start.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.config;
        write!(
            f,
            "{} pools, {} rules, {} job settings, interval {}: ",
            c.pools.len(),
            c.rules.len(),
            c.jobs.len(),
            super::format_duration(c.interval)
        )?;
        match &self.from {
            StartedFrom::Nothing => f.write_str("no configuration file and nothing saved"),
            StartedFrom::File => f.write_str("read from the configuration file (nothing saved)"),
            StartedFrom::Saved {
                file_unchanged: true,
            } => f.write_str(
                "restored from the state directory: the configuration file is unchanged \
                 since it was last read, and the admin changes made since stay",
            ),
            StartedFrom::Saved {
                file_unchanged: false,
            } => f.write_str("restored from the state directory (no configuration file)"),
            StartedFrom::FileChanged { dropped } => {
                write!(f, "{}", FileReplaced(dropped))
            }
        }
    }
}

/// The log's words for a file that replaced the configuration in force.
pub struct FileReplaced<'a>(pub &'a [String]);

impl std::fmt::Display for FileReplaced<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "the configuration file changed since it was last read and replaces the saved \
             configuration",
        )?;
        if self.0.is_empty() {
            return Ok(());
        }
        write!(
            f,
            "; dropped ({}), kept in {REPLACED} in the state directory",
            self.0.join(", ")
        )
    }
}

/// The items `a` holds that `b` does not hold the same: `interval`, `pool NAME`,
/// `rule NAME` (or its text), `job ID` or `job ID in POOL`.
fn differences(a: &ControlConfig, b: &ControlConfig) -> Vec<String> {
    let mut out = Vec::new();
    if a.interval != b.interval {
        out.push("interval".to_owned());
    }
    for pool in &a.pools {
        if b.pool(&pool.name) != Some(pool) {
            out.push(format!("pool {}", pool.name));
        }
    }
    for rule in &a.rules {
        if !b.rules.contains(rule) {
            let key = rule.name.clone().unwrap_or_else(|| rule.to_string());
            out.push(format!("rule {key}"));
        }
    }
    for job in &a.jobs {
        if !b.jobs.contains(job) {
            out.push(match &job.pool {
                Some(pool) => format!("job {} in {pool}", job.job),
                None => format!("job {}", job.job),
            });
        }
    }
    out
}
