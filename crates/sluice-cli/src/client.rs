//! How the command line reaches the controllers: the local controller's socket, or a
//! `--server` URL (sluice_control::admin_client does the asking).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use sluice_control::admin_client::AdminTarget;
use sluice_control::config::parse_duration;
use sluice_control::transport::Endpoint;

use crate::Usage;

/// Where the local controller listens when neither `--socket` nor `$SLUICE_SOCKET` says.
pub const DEFAULT_SOCKET: &str = "/run/sluice/local.sock";

/// The local controller's socket: `given`, else `$SLUICE_SOCKET`, else the default.
pub fn local_socket(given: Option<&PathBuf>) -> PathBuf {
    given
        .cloned()
        .or_else(|| std::env::var_os("SLUICE_SOCKET").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET))
}

/// Which controller an admin command talks to.
#[derive(clap::Args, Debug, Clone)]
pub struct ServerArgs {
    /// The controller: http://HOST:PORT, https://HOST:PORT or unix:PATH; default the
    /// local controller's socket (which answers in single-node mode and forwards to its
    /// global otherwise).
    #[arg(long, value_name = "URL", global = true)]
    server: Option<String>,
    /// The local controller's socket (default $SLUICE_SOCKET, else /run/sluice/local.sock).
    #[arg(long, value_name = "PATH", global = true)]
    socket: Option<PathBuf>,
    /// A file holding the bearer token for changes over TCP.
    #[arg(long, value_name = "FILE", global = true)]
    token_file: Option<PathBuf>,
    /// PEM file of the CA that signed an https:// server's certificate.
    #[arg(long, value_name = "FILE", global = true)]
    ca: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    /// How long to wait for the controller's answer (connection included), e.g. 500ms
    /// or 10s; a controller that does not answer in time fails the command.
    #[arg(long, value_name = "DUR", global = true, env = "SLUICE_DEADLINE",
          default_value = "2s", value_parser = deadline)]
    pub deadline: Duration,
}

/// `--deadline`'s value.
pub fn deadline(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

pub use sluice_control::admin_client::Admin;

impl ServerArgs {
    /// The controller's address.
    pub fn endpoint(&self) -> Result<Endpoint> {
        Ok(match &self.server {
            Some(url) => url.parse().map_err(|e| Usage(format!("--server: {e}")))?,
            None => Endpoint::Unix(local_socket(self.socket.as_ref())),
        })
    }

    /// The controller to ask, and how.
    pub fn target(&self) -> Result<AdminTarget> {
        Ok(AdminTarget {
            endpoint: self.endpoint()?,
            deadline: self.deadline,
            token_file: self.token_file.clone(),
            ca: self.ca.clone(),
        })
    }

    /// Connects and makes one call, `ask`, all within the deadline; returns the
    /// controller's answer.
    pub fn ask<T>(
        &self,
        ask: impl AsyncFnOnce(&mut Admin) -> Result<tonic::Response<T>, tonic::Status>,
    ) -> Result<T> {
        Ok(self.target()?.ask(ask)?)
    }

    /// [`ServerArgs::ask`] for a change, whose failure to answer in time says that it
    /// may be in force already.
    pub fn change<T>(
        &self,
        ask: impl AsyncFnOnce(&mut Admin) -> Result<tonic::Response<T>, tonic::Status>,
    ) -> Result<T> {
        Ok(self.target()?.change(ask)?)
    }
}
