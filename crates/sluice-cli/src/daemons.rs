//! `sluice local` and `sluice global`: the two daemons of the control plane.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use sluice_control::config::parse_duration;
use sluice_control::daemon::{DaemonError, GlobalOptions, LocalOptions, run_global, run_local};
use sluice_control::segment_file::SHM_DIR;
use sluice_control::site::Role;
use sluice_control::tls::ClientIdentity;
use sluice_control::transport::{ConnectOptions, Endpoint, read_token_file};

use crate::Usage;
use crate::client::local_socket;

fn interval(text: Option<&String>) -> Result<Option<Duration>> {
    text.map(|t| parse_duration(t).map_err(|e| Usage(format!("--interval: {e}")).into()))
        .transpose()
}

/// The file a daemon reads: `--config FILE`, its default without one, none for `--config
/// none`.
fn config_file(given: Option<&PathBuf>, role: Role) -> Option<PathBuf> {
    match given {
        Some(none) if none.as_os_str() == "none" => None,
        Some(file) => Some(file.clone()),
        None => Some(role.default_file()),
    }
}

/// How the daemons write their log (on stderr, for journald or a file).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default)]
pub enum LogFormat {
    /// One line per event, colours only on a terminal.
    #[default]
    Text,
    /// One JSON object per line, the event's fields as keys (`target` is `audit` for the
    /// audit lines).
    Json,
}

/// The log's options, the same for both daemons.
#[derive(clap::Args, Debug)]
pub struct LogArgs {
    /// text (default) or json: one JSON object per line, for a log collector. Levels and
    /// targets are chosen by $SLUICE_LOG_LEVEL (e.g. info, or audit=info,warn).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t)]
    log_format: LogFormat,
}

/// Runs `daemon` on a runtime of its own until it returns (on SIGTERM or SIGINT).
fn run_daemon(
    log: &LogArgs,
    daemon: impl std::future::Future<Output = Result<(), DaemonError>>,
) -> Result<i32> {
    init_log(log.log_format);
    let rt = runtime()?;
    let result = rt.block_on(daemon);
    // What is still running (held attachments, HTTP connections) is dropped, not waited
    // for: a stopped daemon is gone within its grace period.
    rt.shutdown_timeout(Duration::from_millis(100));
    Ok(result.map(|()| 0)?)
}

fn init_log(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SLUICE_LOG_LEVEL")
        .unwrap_or_else(|_| "info".into());
    let log = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        // Colours only for a terminal: not in the journal, nor in a file.
        LogFormat::Text => log.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => log.json().flatten_event(true).with_ansi(false).init(),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Run the local controller of this node.
///
/// It attaches jobs for their launchers (`sluice run`, the Slurm plugin) on its UNIX
/// socket, owns their segments, observes them every interval, and writes into them the
/// rates its global controller sends. Without --global it divides the pools of its own
/// --config among the node's jobs (single-node mode).
///
/// Example: sluice local --global http://head:7401 --state-dir /var/lib/sluice --config /etc/sluice/local.toml
#[derive(clap::Args, Debug)]
pub struct LocalArgs {
    /// The socket launchers and admin commands reach (default $SLUICE_SOCKET, else
    /// /run/sluice/local.sock).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Where job records are kept, so that a restarted local adopts its jobs; in
    /// single-node mode also the configuration in force (admin changes included).
    #[arg(long, value_name = "DIR", default_value = "/var/lib/sluice")]
    state_dir: PathBuf,
    /// The global controller (http://HOST:PORT or https://HOST:PORT); absent: single-node.
    #[arg(long, value_name = "URL")]
    global: Option<String>,
    /// Configuration (TOML): pools, rules and settings in single-node mode; the [admin]
    /// table in both modes (default /etc/sluice/local.toml). It must exist: `none` starts
    /// without one. Never written: admin changes are kept in --state-dir. `sluice config
    /// check FILE` checks it offline.
    #[arg(long, value_name = "FILE|none")]
    config: Option<PathBuf>,
    /// The control interval, e.g. 200ms or 1s (default: the configuration's, else 1s).
    #[arg(long, value_name = "DUR")]
    interval: Option<String>,
    /// HTTP: /metrics for Prometheus, and in single-node mode the JSON API under
    /// /api/v1 (with --global the API is the global's), e.g. 127.0.0.1:7402.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// This node's name (default: the host name).
    #[arg(long, value_name = "NAME")]
    node: Option<String>,
    /// Where segments are created (a tmpfs).
    #[arg(long, value_name = "DIR", default_value = SHM_DIR)]
    shm_dir: PathBuf,
    /// A file (mode 0600) holding the token to present to the global: what its
    /// admin.token_file holds.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// PEM file of the CA that signed the global's certificate (https://).
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// PEM file of this node's client certificate, for a global that requires one
    /// (admin.client_ca); with --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<PathBuf>,
    /// PEM file (mode 0600) of the private key of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
    #[command(flatten)]
    log: LogArgs,
}

impl LocalArgs {
    /// Runs until SIGTERM or SIGINT.
    pub fn run(&self) -> Result<i32> {
        let global = self
            .global
            .as_ref()
            .map(|g| {
                g.parse::<Endpoint>()
                    .map_err(|e| Usage(format!("--global: {e}")))
            })
            .transpose()?;
        let token = match &self.token_file {
            Some(p) => Some(read_token_file(p)?),
            None => None,
        };
        let identity = self.cert.clone().zip(self.key.clone());
        let connect = ConnectOptions {
            connect_timeout: Duration::from_secs(5),
            token,
            ca_file: self.ca.clone(),
            identity: identity.map(|(cert, key)| ClientIdentity { cert, key }),
        };
        // The certificates are read again at each connection (a renewed one is used
        // without a restart); reading them now stops a start with files that will not do.
        if let Some(global) = &global {
            connect.tls(global)?;
        }
        let options = LocalOptions {
            socket: local_socket(self.socket.as_ref()),
            state_dir: self.state_dir.clone(),
            shm_dir: self.shm_dir.clone(),
            node: self.node.clone().unwrap_or_else(hostname),
            global,
            connect,
            config: config_file(self.config.as_ref(), Role::Local),
            interval: interval(self.interval.as_ref())?,
            http: self.http,
        };
        run_daemon(&self.log, run_local(options))
    }
}

/// Run the global controller of the cluster.
///
/// It holds the pools, the administrator's rules and the job settings (--config, and
/// every admin change since, kept in --state-dir), hears every local controller on one
/// gRPC stream each, and every interval divides each pool's capacity among the running
/// jobs.
///
/// Example: sluice global --listen 0.0.0.0:7401 --http 127.0.0.1:7402 --config /etc/sluice/global.toml
#[derive(clap::Args, Debug)]
pub struct GlobalArgs {
    /// The gRPC address for locals and admin commands, e.g. 0.0.0.0:7401.
    #[arg(long, value_name = "ADDR")]
    listen: SocketAddr,
    /// HTTP: the JSON API under /api/v1, /metrics for Prometheus and the live dashboard,
    /// e.g. 127.0.0.1:7402.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Configuration (TOML; default /etc/sluice/global.toml). It must exist: `none`
    /// starts without one. Never written: admin changes are kept in --state-dir, and win
    /// over the file until its text changes. `sluice config check FILE` checks it
    /// offline.
    #[arg(long, value_name = "FILE|none")]
    config: Option<PathBuf>,
    /// Where the configuration in force is kept, so that no restart loses an admin
    /// change.
    #[arg(long, value_name = "DIR", default_value = "/var/lib/sluice/global")]
    state_dir: PathBuf,
    /// The control interval, e.g. 200ms or 1s (default: the configuration's, else 1s).
    #[arg(long, value_name = "DUR")]
    interval: Option<String>,
    #[command(flatten)]
    log: LogArgs,
}

impl GlobalArgs {
    /// Runs until SIGTERM or SIGINT.
    pub fn run(&self) -> Result<i32> {
        let options = GlobalOptions {
            listen: self.listen,
            http: self.http,
            config: config_file(self.config.as_ref(), Role::Global),
            state_dir: self.state_dir.clone(),
            interval: interval(self.interval.as_ref())?,
        };
        run_daemon(&self.log, run_global(options))
    }
}

/// This machine's host name.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is valid for its length; gethostname NUL-terminates within it.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    if r != 0 || end == 0 {
        return "localhost".to_owned();
    }
    String::from_utf8_lossy(&buf[..end]).into_owned()
}
