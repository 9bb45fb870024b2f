//! The site's configuration file as a daemon takes it at start, and as `sluice config
//! check` checks it offline: one reading for both, so that a file the check passes is one
//! the daemon starts with, and a file it refuses fails with the same line.
//!
//! A daemon reads its `--config` (default `/etc/sluice/global.toml` or
//! `/etc/sluice/local.toml`); a missing file stops the start unless `--config none` says
//! to start without one. Then the `[admin]` table's group and users must exist, its token
//! file must be readable and private, and a global's TLS files must load.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice_core::error::{Blame, Fault};

use crate::admin::Auth;
use crate::config::format_duration;
use crate::config::{ControlConfig, DEFAULT_STALE_AFTER};
use crate::tls::TlsError;
use crate::tls::{ServerConfig, server_config};
use crate::transport::{SecretError, read_token_file};

/// Which daemon a configuration is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `sluice global`: pools, rules, job settings, the `[admin]` table with TLS.
    Global,
    /// `sluice local`: the `[admin]` table, and in single-node mode pools and rules too.
    Local,
}

impl Role {
    /// The daemon's name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Role::Global => "global",
            Role::Local => "local",
        }
    }

    /// The file the daemon reads when given no `--config`.
    pub fn default_file(self) -> PathBuf {
        PathBuf::from(match self {
            Role::Global => "/etc/sluice/global.toml",
            Role::Local => "/etc/sluice/local.toml",
        })
    }

    /// The role a file's contents suggest: a global's when it holds what only a global
    /// (or a single-node local) uses, pools, rules, job settings, `stale_after`,
    /// `report_retention`, TLS; else a local's in a cluster, whose file holds its
    /// `[admin]` table.
    pub fn of(config: &ControlConfig) -> Role {
        let admin = &config.admin;
        let global = !config.pools.is_empty()
            || !config.rules.is_empty()
            || !config.jobs.is_empty()
            || config.stale_after != DEFAULT_STALE_AFTER
            || config.report_retention != crate::report::DEFAULT_RETENTION
            || admin.tls_cert.is_some()
            || admin.client_ca.is_some();
        if global { Role::Global } else { Role::Local }
    }
}

impl std::str::FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Role, String> {
        match s {
            "global" => Ok(Role::Global),
            "local" => Ok(Role::Local),
            other => Err(format!("{other:?}: expected global or local")),
        }
    }
}

/// A site's configuration, read and checked as a daemon starts with it.
pub struct Site {
    /// The file's configuration (the defaults without a file).
    pub config: ControlConfig,
    /// Who may change things.
    pub auth: Auth,
    /// A global's TLS on its port, when the file sets it.
    pub tls: Option<Arc<ServerConfig>>,
}

/// Why a daemon's configuration, or a file it names, cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    /// The configuration file.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The token file it names.
    #[error(transparent)]
    Token(#[from] SecretError),
    /// The certificate, key or CA it names.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

impl Blame for SiteError {
    fn fault(&self) -> Fault {
        match self {
            SiteError::Config(e) => e.fault(),
            SiteError::Token(e) => e.fault(),
            SiteError::Tls(e) => e.fault(),
        }
    }
}

impl Site {
    /// Reads `file` (`None`: `--config none`) for a daemon of `role`, reading every file
    /// it names now, so that one that will not do stops the start with one line.
    pub fn read(file: Option<&Path>, role: Role) -> Result<Site, SiteError> {
        let config = match file {
            Some(path) => ControlConfig::load_site(path)?,
            None => ControlConfig::default(),
        };
        let admin = &config.admin;
        let token = admin
            .token_file
            .as_deref()
            .map(read_token_file)
            .transpose()?;
        let tls = match (role, &admin.tls_cert, &admin.tls_key) {
            (Role::Global, Some(cert), Some(key)) => {
                Some(server_config(cert, key, admin.client_ca.as_deref())?)
            }
            _ => None,
        };
        let auth = Auth {
            group: admin.group.clone(),
            users: admin.users.clone(),
            token,
        };
        Ok(Site { config, auth, tls })
    }

    /// What a daemon of `role` ignores of this configuration, one line each.
    pub fn ignored(&self, role: Role) -> Vec<String> {
        let c = &self.config;
        let mut out = Vec::new();
        if role == Role::Local {
            if !c.pools.is_empty() || !c.rules.is_empty() || !c.jobs.is_empty() {
                out.push(
                    "pools, rules and job settings apply in single-node mode only (a local \
                     started with --global takes the global's)"
                        .to_owned(),
                );
            }
            if c.admin.tls_cert.is_some() || c.admin.client_ca.is_some() {
                out.push(
                    "admin.tls_cert, tls_key and client_ca are the global's: a local ignores \
                     them (its own are --ca, --cert, --key)"
                        .to_owned(),
                );
            }
        }
        out
    }

    /// What the configuration holds, on one line, for a daemon of `role`.
    pub fn summary(&self, role: Role) -> String {
        let c = &self.config;
        let mut parts = Vec::new();
        if role == Role::Global || !c.pools.is_empty() || !c.rules.is_empty() {
            parts.push(format!(
                "{} pool(s), {} rule(s), {} job setting(s)",
                c.pools.len(),
                c.rules.len(),
                c.jobs.len()
            ));
        }
        parts.push(format!("interval {}", format_duration(c.interval)));
        let admin = &c.admin;
        let mut who = vec!["root".to_owned()];
        who.extend(admin.users.iter().cloned());
        if let Some(g) = &admin.group {
            who.push(format!("group {g}"));
        }
        parts.push(format!("changes by {}", who.join(", ")));
        if let Some(t) = &admin.token_file {
            parts.push(format!("token file {}", t.display()));
        }
        if self.tls.is_some() {
            let clients = match admin.client_ca {
                Some(_) => " with client certificates",
                None => "",
            };
            parts.push(format!("TLS{clients}"));
        }
        parts.join("; ")
    }
}
