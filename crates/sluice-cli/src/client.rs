//! How the command line reaches the controllers: the local controller's socket, or a
//! `--server` URL, and gRPC errors worded as sluice's errors (bad input exits 2).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use sluice_control::config::parse_duration;
use sluice_control::proto::admin_client::AdminClient;
use sluice_control::transport::{
    Bearer, CallError, ConnectOptions, Endpoint, NoAnswer, connect, read_token_file, within,
};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

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

/// An Admin client with its token.
pub type Admin = AdminClient<InterceptedService<Channel, Bearer>>;

impl ServerArgs {
    /// The controller's address.
    pub fn endpoint(&self) -> Result<Endpoint> {
        Ok(match &self.server {
            Some(url) => url.parse().map_err(|e| Usage(format!("--server: {e}")))?,
            None => Endpoint::Unix(local_socket(self.socket.as_ref())),
        })
    }

    /// Connects to the controller, within the deadline.
    pub async fn admin(&self) -> Result<Admin> {
        let endpoint = self.endpoint()?;
        self.within(&endpoint, async {
            let token = match &self.token_file {
                Some(p) => Some(read_token_file(p)?),
                None => None,
            };
            let options = ConnectOptions {
                connect_timeout: self.deadline,
                token,
                ca_file: self.ca.clone(),
                identity: None,
            };
            let channel = connect(&endpoint, &options)
                .await
                .with_context(|| format!("cannot reach the controller at {endpoint}"))?;
            Ok(AdminClient::with_interceptor(channel, options.bearer()?))
        })
        .await
    }

    /// Runs `call` (on a client from [`ServerArgs::admin`]) within the deadline.
    pub async fn within<T>(
        &self,
        endpoint: &Endpoint,
        call: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        within(endpoint, self.deadline, call).await.map_err(|e| {
            match e.downcast_ref::<NoAnswer>() {
                Some(late) => anyhow::anyhow!(
                    "the controller at {late}: is it stopped or overloaded? (--deadline waits longer)"
                ),
                None => e,
            }
        })
    }

    /// Connects and makes one call, `ask`, all within the deadline, on a runtime of its
    /// own; returns the controller's answer.
    pub fn ask<T>(
        &self,
        ask: impl AsyncFnOnce(&mut Admin) -> Result<tonic::Response<T>, tonic::Status>,
    ) -> Result<T> {
        let endpoint = self.endpoint()?;
        block_on(self.within(&endpoint, async {
            let mut admin = self.admin().await?;
            Ok(ask(&mut admin).await.map_err(refused)?.into_inner())
        }))
    }
}

/// A refused call as an error: its message is the controller's, and whose fault it is
/// (invalid, not found, not allowed: the administrator's) is [`CallError`]'s to say.
pub fn refused(status: tonic::Status) -> anyhow::Error {
    CallError::Status(status).into()
}

/// Runs `f` on a small runtime of its own.
fn block_on<T>(f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(f)
}
