//! How the command line reaches the controllers: the local controller's socket, or a
//! `--server` URL, and gRPC errors worded as sluice's errors (bad input exits 2).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use sluice_control::proto::admin_client::AdminClient;
use sluice_control::transport::{Bearer, ConnectOptions, Endpoint, connect, read_token_file};
use tonic::Code;
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
}

/// An Admin client with its token.
pub type Admin = AdminClient<InterceptedService<Channel, Bearer>>;

impl ServerArgs {
    /// Connects to the controller.
    pub async fn admin(&self) -> Result<Admin> {
        let endpoint: Endpoint = match &self.server {
            Some(url) => url.parse().map_err(|e| Usage(format!("--server: {e}")))?,
            None => Endpoint::Unix(local_socket(self.socket.as_ref())),
        };
        let token = match &self.token_file {
            Some(p) => Some(read_token_file(p)?),
            None => None,
        };
        let options = ConnectOptions {
            connect_timeout: Duration::from_secs(5),
            token,
            ca_file: self.ca.clone(),
            identity: None,
        };
        let channel = connect(&endpoint, &options)
            .await
            .with_context(|| format!("cannot reach the controller at {endpoint}"))?;
        Ok(AdminClient::with_interceptor(channel, options.bearer()?))
    }
}

/// A refused call as an error: what the administrator got wrong (invalid, not found, not
/// allowed) exits 2, anything else 1.
pub fn refused(status: tonic::Status) -> anyhow::Error {
    match status.code() {
        Code::InvalidArgument | Code::NotFound | Code::PermissionDenied | Code::Unauthenticated => {
            Usage(status.message().to_owned()).into()
        }
        _ => anyhow::anyhow!("{}", status.message()),
    }
}

/// Runs `f` on a small runtime of its own.
pub fn block_on<T>(f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(f)
}
