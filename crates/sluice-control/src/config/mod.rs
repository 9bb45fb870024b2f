//! The control plane's configuration: pools, the administrator's rules and job settings,
//! how they are checked, changed and kept across restarts.
//!
//! `sluice global --config FILE` and `sluice local --config FILE` read a TOML file:
//!
//! ```toml
//! interval = "1s"                      # 10ms to 1h; default 1s
//! stale_after = "5m"                   # a silent node's shares stay counted; 1s to 24h
//! report_retention = "7d"              # job reports kept this long; 1s to 3650d
//! slurm_shares = true                  # trees' shares from sacctmgr, at start and on SIGHUP
//!
//! [admin]
//! group = "sluiceadm"                  # members (and root) may change things on the UNIX socket
//! users = ["alice"]                    # so may these users, by login name
//! token_file = "/etc/sluice/token"     # bearer token for changes over TCP and for locals
//! tls_cert = "/etc/sluice/cert.pem"    # TLS on the TCP listener: both or neither
//! tls_key = "/etc/sluice/key.pem"
//! client_ca = "/etc/sluice/ca.pem"     # locals must present a certificate it signed
//!
//! [[pool]]
//! name = "scratch-md"
//! match = "class=metadata mount=/scratch"   # conditions of a rule; absent: every call
//! capacity = "10k/s"
//! algorithm = "psfa"
//! params = { epsilon = 0.25 }               # numbers or booleans
//! min_share = 0.01                          # default 0.01, at most 0.5
//! estimator = "usage"                       # usage, arrivals or wait-inflated; default the algorithm's
//!
//! [[rule]]                                  # static rules, in order: first match wins
//! rule = "cap-alice: user=alice op=open rate=2k/s"
//!
//! [[job]]
//! job = "4242"
//! pool = "scratch-md"                       # absent: every pool counting the limit's unit
//! limit = "5k/s"
//! weight = 2.0
//!
//! [[pool]]                                  # hierarchical fair share
//! name = "scratch-bw"
//! capacity = "20GiB/s"
//! tree = "account,user,job"                 # or "account:share,user:equal,job:nodes"
//!
//! [shares.account]                          # share of each node of a tree; default 1
//! physics = 7
//! chemistry = 3
//! [shares.user]
//! "physics/alice" = 2                       # alice under physics only; "alice" anywhere
//! ```
//!
//! A [`ControlConfig`] is always valid: [`ControlConfig::parse`] checks everything and
//! the admin mutations ([`ControlConfig::pool_set`] and the others) check the whole result
//! before changing anything, so an administrator's mistake never reaches a running
//! controller half-applied. Every error is one line that says where and why.

mod admin;
mod duration;
mod file;
mod job;
pub(crate) mod persist;
mod pool;
mod store;
#[cfg(test)]
mod tests;

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use sluice_core::rule::{Rate, Rule};
use sluice_policy::tree::Shares;

pub use admin::{AdminError, AdminErrorKind, parse_share_node};
pub use duration::{
    DurationError, MAX_INTERVAL, MIN_INTERVAL, format_duration, parse_duration, parse_millis,
};
pub use job::JobSpec;
pub use pool::{AutoSpec, PoolSpec};
pub use store::{ConfigStore, FileReplaced, Reloaded, Started, StartedFrom};

/// Everything the global controller (or a local one in single-node mode) is configured
/// with; see the module documentation for the file format.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlConfig {
    /// How often each pool's capacity is divided again.
    pub interval: Duration,
    /// How long the shares of a node whose local went silent stay counted in their pools:
    /// its jobs run on at them (the stage keeps its last rates), so giving them away at
    /// once would let the pool be exceeded; past this, a node presumed dead no longer
    /// holds capacity.
    pub stale_after: Duration,
    /// How long a job's report is kept after the job ended (see [`crate::report`]).
    pub report_retention: Duration,
    /// Who may change things, and how the TCP listener is secured.
    pub admin: AdminConfig,
    /// The pools, in the order written; names are unique.
    pub pools: Vec<PoolSpec>,
    /// The administrator's rules, in order (the first that matches a call applies);
    /// names, where given, are unique.
    pub rules: Vec<Rule>,
    /// Per-job limits and weights; at most one entry per job and pool.
    pub jobs: Vec<JobSpec>,
    /// The shares of the nodes of pools' trees (`[shares.account]`, …), as the
    /// administrator set them; they win over shares read from Slurm.
    pub shares: Shares,
    /// `slurm_shares = true`: read the accounts' and users' shares from Slurm's
    /// association tree (`sacctmgr`) at start and on SIGHUP.
    pub slurm_shares: bool,
}

/// How long a silent node's shares stay counted unless the configuration says otherwise:
/// Slurm's own default for declaring a silent node down (`SlurmdTimeout`, 300 s).
pub const DEFAULT_STALE_AFTER: Duration = Duration::from_secs(300);

/// The shortest and longest `stale_after`: below a second a cut link's first ping would
/// already give shares away; beyond a day a dead node's capacity is as good as lost.
pub const STALE_AFTER_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(24 * 3600);

/// The shortest and longest `report_retention`: a second (tests, or a site that wants
/// only the log line) to ten years.
pub const REPORT_RETENTION_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(3650 * 24 * 3600);

impl Default for ControlConfig {
    /// No pools, rules or job settings, a control interval of one second, and silent
    /// nodes' shares kept for [`DEFAULT_STALE_AFTER`].
    fn default() -> Self {
        ControlConfig {
            interval: Duration::from_secs(1),
            stale_after: DEFAULT_STALE_AFTER,
            report_retention: crate::report::DEFAULT_RETENTION,
            admin: AdminConfig::default(),
            pools: Vec::new(),
            rules: Vec::new(),
            jobs: Vec::new(),
            shares: Shares::new(),
            slurm_shares: false,
        }
    }
}

/// The `[admin]` table: who may change the configuration through the admin API, and who
/// may be a global's local controller.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    /// Members of this group (and root) may make changes over the UNIX socket.
    pub group: Option<String>,
    /// These users (by login name) may make changes over the UNIX socket too.
    #[serde(default)]
    pub users: Vec<String>,
    /// A file holding the bearer token that changes over TCP, and a global's locals,
    /// must present.
    pub token_file: Option<PathBuf>,
    /// The TLS certificate of the TCP listener (set together with `tls_key`).
    pub tls_cert: Option<PathBuf>,
    /// The TLS private key of the TCP listener (set together with `tls_cert`).
    pub tls_key: Option<PathBuf>,
    /// The CA whose signature a global's locals must present on a client certificate
    /// (needs `tls_cert`).
    pub client_ca: Option<PathBuf>,
}

/// Why a configuration could not be read or saved; every message is one line.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The file does not exist: a daemon refuses to start without the file it was
    /// given (or, given none, its default), so that a typo does not start it with no
    /// policy.
    #[error(
        "{}: no such configuration file (`--config none` starts without one)",
        path.display()
    )]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// The file could not be written.
    #[error("{}: cannot save: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The text is not TOML, or not in the schema (an unknown key, a wrong type, a
    /// missing field); the file is `config` when parsed from text.
    #[error(transparent)]
    Toml(#[from] sluice_core::toml_text::TomlError),
    /// A value is not valid: `pool[1] "scratch-md": match: at column 7 (…): expected …`.
    #[error("{file}:{line}: {problem}")]
    Invalid {
        /// The file, or `config` when parsed from text.
        file: String,
        /// 1-based line of the value.
        line: usize,
        /// Which item (`pool[1] "scratch-md"`, 1-based), which field, and why.
        problem: String,
    },
}

impl ControlConfig {
    /// Reads and checks a configuration's text; errors name the file as `config`.
    pub fn parse(text: &str) -> Result<ControlConfig, ConfigError> {
        file::parse(text, "config")
    }

    /// Reads and checks the configuration file at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<ControlConfig, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        file::parse(&text, &path.display().to_string())
    }

    /// Reads the site's file at `path` as a daemon does at start: it must exist, and the
    /// admin group and users it names must exist on this host (a mistyped name would
    /// leave the administrators locked out with no word why).
    pub fn load_site(path: impl AsRef<Path>) -> Result<ControlConfig, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => ConfigError::Missing {
                path: path.to_owned(),
            },
            _ => ConfigError::Read {
                path: path.to_owned(),
                source,
            },
        })?;
        let file = path.display().to_string();
        let config = file::parse(&text, &file)?;
        file::check_identities(&config.admin, &text, &file)?;
        Ok(config)
    }

    /// The configuration as a file that [`ControlConfig::parse`] reads back as `self`.
    pub fn to_toml(&self) -> String {
        file::render(self)
    }

    /// Writes the configuration to `path` atomically: a reader (or a restart after a
    /// crash) sees the old file or the new one, never a mix. An existing file keeps its
    /// permission bits; a new one is made 0600, since it names the token and key files.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), ConfigError> {
        let path = path.as_ref();
        persist::write_atomically(path, self.to_toml().as_bytes()).map_err(|source| {
            ConfigError::Write {
                path: path.to_owned(),
                source,
            }
        })
    }

    /// The pool called `name`.
    pub fn pool(&self, name: &str) -> Option<&PoolSpec> {
        self.pools.iter().find(|pool| pool.name == name)
    }

    /// The limit and the weight set for `job` in `pool`: an entry naming the pool wins,
    /// field by field, over the job's entry for every pool, whose limit applies only to
    /// pools counting the same unit (an ops limit says nothing about a bandwidth).
    pub fn job_terms(&self, job: &str, pool: &PoolSpec) -> (Option<Rate>, Option<f64>) {
        let entry = |for_pool: Option<&str>| {
            self.jobs
                .iter()
                .find(|spec| spec.job == job && spec.pool.as_deref() == for_pool)
        };
        let own = entry(Some(&pool.name));
        let general = entry(None);
        let limit = own.and_then(|spec| spec.limit).or_else(|| {
            general
                .and_then(|spec| spec.limit)
                .filter(|limit| limit.unit == pool.capacity.unit)
        });
        let weight = own
            .and_then(|spec| spec.weight)
            .or_else(|| general.and_then(|spec| spec.weight));
        (limit, weight)
    }
}
