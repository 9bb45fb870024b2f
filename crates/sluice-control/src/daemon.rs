//! `sluice local` and `sluice global` as running daemons: their sockets and ports, their
//! timers, and their signals (SIGHUP reloads the configuration; SIGTERM and SIGINT stop
//! the daemon at once, whatever is attached or connected: the jobs it controls keep their
//! last rates, and the next start takes them back).

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sluice_core::error::{Blame, Chain, Fault};
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Notify;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::Server;
use tonic::transport::server::Router;

use crate::admin::{AdminService, ForwardAdmin, Hooks};
use crate::audit::{Event, Outcome, Who};
use crate::clock::{SystemWallClock, WallClock};
use crate::config::persist::unwritable;
use crate::config::{ConfigError, ConfigStore, FileReplaced, Reloaded, StartedFrom};
use crate::coordinator::{ChangeError, Coordinator};
use crate::global::{ControlService, Global, run_deadlines, start_cycles};
use crate::held_file::HeldFile;
use crate::http::{api_router, metrics_router};
use crate::link_auth::Admission;
use crate::local::relay;
use crate::local::{Local, LocalError, NodeService, Policy, Shared, report_message, run_uplink};
use crate::metrics::Metrics;
use crate::proto::admin_server::AdminServer;
use crate::proto::control_server::ControlServer;
use crate::proto::node_server::NodeServer;
use crate::proto::{LocalMessage, StatusReply, local_message};
use crate::site::{Role, Site, SiteError};
use crate::state_lock::{StateLock, StateLockError};
use crate::tls::{ServerConfig, incoming};
use crate::transport::{ConnectOptions, Endpoint, KEEPALIVE, TransportError, bind_unix};

/// Largest message either side accepts: reports of a node's jobs are small; anything
/// this large is an error or an attack.
const MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// How a local controller runs.
#[derive(Clone, Debug)]
pub struct LocalOptions {
    /// The UNIX socket launchers and admin commands reach.
    pub socket: PathBuf,
    /// Where job records are kept across restarts, and in single-node mode the
    /// configuration in force.
    pub state_dir: PathBuf,
    /// Where segments are created (a tmpfs).
    pub shm_dir: PathBuf,
    /// This node's name.
    pub node: String,
    /// The global controller; `None` for single-node mode.
    pub global: Option<Endpoint>,
    /// How to reach the global.
    pub connect: ConnectOptions,
    /// Pools, rules and settings (single-node mode), or the admin table (both modes);
    /// `None` to start without a file (`--config none`). A file that does not exist stops
    /// the start.
    pub config: Option<PathBuf>,
    /// Overrides the configuration's interval.
    pub interval: Option<Duration>,
    /// The JSON API's address.
    pub http: Option<SocketAddr>,
}

/// How a global controller runs.
#[derive(Clone, Debug)]
pub struct GlobalOptions {
    /// The gRPC port for locals and admin commands.
    pub listen: SocketAddr,
    /// The JSON API's address.
    pub http: Option<SocketAddr>,
    /// Pools, rules, settings, admin table; `None` to start without a file (`--config
    /// none`). A file that does not exist stops the start.
    pub config: Option<PathBuf>,
    /// Where the configuration in force is kept across restarts.
    pub state_dir: PathBuf,
    /// Overrides the configuration's interval.
    pub interval: Option<Duration>,
}

/// How long a stopping daemon lets the answers already under way go out (an attachment
/// made just before the signal) before it exits.
const STOP_GRACE: Duration = Duration::from_millis(200);

/// Why a daemon could not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// Its state directory is another daemon's, or cannot be written.
    #[error(transparent)]
    Lock(#[from] StateLockError),
    /// Its configuration, or a file it names.
    #[error(transparent)]
    Site(#[from] SiteError),
    /// Its configuration as it starts the coordinator.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Its saved configuration cannot be written in the state directory.
    #[error("{}", unwritable(.dir))]
    StateDir {
        /// The state directory.
        dir: PathBuf,
        /// What saving said.
        source: ConfigError,
    },
    /// The configuration is refused by the coordinator.
    #[error(transparent)]
    Coordinator(#[from] ChangeError),
    /// The local's state.
    #[error(transparent)]
    Local(#[from] LocalError),
    /// Its socket.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// A port it was told to listen on (`--listen`, `--http`).
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The HTTP API's port.
    #[error(transparent)]
    Http(std::io::Error),
    /// The cycle thread.
    #[error("cannot start the cycle thread")]
    Cycles(#[source] std::io::Error),
    /// Serving failed: `role` is "local controller" or "global controller".
    #[error("{role}")]
    Serve {
        /// Which daemon.
        role: &'static str,
        /// What the server said.
        source: tonic::transport::Error,
    },
}

impl Blame for DaemonError {
    fn fault(&self) -> Fault {
        match self {
            DaemonError::Lock(e) => e.fault(),
            DaemonError::Site(e) => e.fault(),
            DaemonError::Config(e) | DaemonError::StateDir { source: e, .. } => e.fault(),
            DaemonError::Coordinator(e) => e.fault(),
            DaemonError::Local(e) => e.fault(),
            DaemonError::Transport(e) => e.fault(),
            DaemonError::Listen { .. }
            | DaemonError::Http(_)
            | DaemonError::Cycles(_)
            | DaemonError::Serve { .. } => Fault::System,
        }
    }
}

/// The coordinator of a global or of a single-node local: the configuration its `file`
/// and its `state_dir` give (see [`ConfigStore`]), with `interval` over theirs; where it
/// came from is logged.
fn coordinator_of(
    file: Option<PathBuf>,
    state_dir: &Path,
    interval: Option<Duration>,
) -> Result<Coordinator, DaemonError> {
    let explained = |e: ConfigError| match e {
        ConfigError::Write { .. } => DaemonError::StateDir {
            dir: state_dir.to_owned(),
            source: e,
        },
        e => e.into(),
    };
    let store = ConfigStore::new(file.clone(), state_dir.to_owned()).map_err(explained)?;
    let started = store.start(interval).map_err(explained)?;
    let file = file.as_ref().map(|f| f.display().to_string());
    let state = state_dir.display();
    match &started.from {
        StartedFrom::FileChanged { dropped } if !dropped.is_empty() => {
            tracing::warn!(?file, %state, "configuration: {started}");
        }
        _ => tracing::info!(?file, %state, "configuration: {started}"),
    }
    Ok(Coordinator::new(started.config, Some(store))?)
}

/// Resolves when the daemon is asked to stop.
async fn stopped() {
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// Runs `serve` until SIGTERM or SIGINT, then `stop`s, tells `serve` to shut down (its
/// shutdown future waits on `shutdown`) and gives it [`STOP_GRACE`] at most: a
/// launcher's attachment and a local's stream are held for as long as they live, and a
/// graceful shutdown would wait for every one of them.
async fn serve_until_stopped(
    serve: impl Future<Output = Result<(), tonic::transport::Error>>,
    shutdown: Arc<Notify>,
    stop: impl FnOnce(),
) -> Result<(), tonic::transport::Error> {
    tokio::pin!(serve);
    tokio::select! {
        served = &mut serve => return served,
        () = stopped() => {}
    }
    let began = Instant::now();
    stop();
    shutdown.notify_one();
    let _ = tokio::time::timeout(STOP_GRACE, serve).await;
    tracing::info!(
        "stopped {} ms after the signal",
        began.elapsed().as_millis()
    );
    Ok(())
}

/// Median and last of recent cycle durations.
fn cycle_figures(times: &[f64]) -> (f64, f64) {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    (median, times.last().copied().unwrap_or(0.0))
}

/// A single-node local's hooks: a change goes straight into its jobs' segments.
struct LocalHooks {
    local: Shared,
    coordinator: Arc<Mutex<Coordinator>>,
    cycle_us: Arc<Mutex<Vec<f64>>>,
}

impl Hooks for LocalHooks {
    fn changed(&self) {
        let policy = self.coordinator.lock().expect("coordinator").policy();
        match Policy::from_proto(&policy) {
            Ok(p) => self.local.lock().expect("local").apply_policy(p),
            Err(e) => tracing::error!("policy not applied: {e:#}"),
        }
    }

    fn status(&self) -> StatusReply {
        let (pools, rules, interval_s) = {
            let c = self.coordinator.lock().expect("coordinator");
            let config = c.config();
            (
                config.pools.len(),
                config.rules.len(),
                config.interval.as_secs_f64(),
            )
        };
        let mut l = self.local.lock().expect("local");
        let node = l.node.clone();
        let warnings = l.places.current(&node);
        let (median, last) = cycle_figures(&self.cycle_us.lock().expect("times"));
        StatusReply {
            warnings,
            role: "local".into(),
            single_node: true,
            locals: 1,
            jobs: l.jobs.len() as u32,
            pools: pools as u32,
            rules: rules as u32,
            interval_s,
            cycle: l.cycle,
            global_connected: false,
            cycle_us_median: median,
            cycle_us_last: last,
        }
    }
}

/// Runs a local controller until SIGTERM or SIGINT.
pub async fn run_local(o: LocalOptions) -> Result<(), DaemonError> {
    let _lock = StateLock::take(&o.state_dir)?;
    // The site's file and its credentials first, as the global does.
    let Site {
        config: mut site,
        auth,
        ..
    } = Site::read(o.config.as_deref(), Role::Local)?;
    if let Some(i) = o.interval {
        site.interval = i;
    }
    let (config, coordinator) = match o.global {
        None => {
            let c = Arc::new(Mutex::new(coordinator_of(
                o.config.clone(),
                &o.state_dir,
                o.interval,
            )?));
            read_slurm_shares(&c).await;
            let config = c.lock().expect("coordinator").config().clone();
            (config, Some(c))
        }
        Some(_) => (site, None),
    };
    let interval = config.interval;
    let local = Local::new(
        o.node.clone(),
        o.state_dir.clone(),
        o.shm_dir.clone(),
        coordinator.clone(),
        interval,
    )?;
    let local: Shared = Arc::new(Mutex::new(local));
    // Every user's launcher attaches through it; what each may do is decided on its
    // credentials.
    let incoming = bind_unix(&o.socket, 0o666).await?;
    let cycle_us = Arc::new(Mutex::new(Vec::new()));
    let metrics = o.http.map(|_| Arc::new(Metrics::default()));
    let scrape = metrics.clone().map(|m| metrics_router(move || m.encode()));
    let node =
        NodeServer::new(NodeService::new(local.clone())).max_decoding_message_size(MAX_MESSAGE);
    let router = Server::builder().add_service(node);
    let router = match (&coordinator, &o.global) {
        (Some(c), _) => {
            let hooks = LocalHooks {
                local: local.clone(),
                coordinator: c.clone(),
                cycle_us: cycle_us.clone(),
            };
            let admin = Arc::new(AdminService::new(c.clone(), hooks, auth));
            if let (Some(addr), Some(scrape)) = (o.http, scrape) {
                spawn_http(addr, api_router(admin.clone()).merge(scrape)).await?;
            }
            router.add_service(AdminServer::from_arc(admin))
        }
        (None, Some(global)) => {
            // The admin API is the global's; a local in a cluster serves its own
            // figures only.
            if let (Some(addr), Some(scrape)) = (o.http, scrape) {
                spawn_http(addr, scrape).await?;
            }
            router.add_service(AdminServer::new(ForwardAdmin {
                global: global.clone(),
                options: o.connect.clone(),
                auth,
                local: local.clone(),
            }))
        }
        (None, None) => unreachable!("a local is single-node or has a global"),
    };
    if let Some(global) = o.global.clone() {
        tokio::spawn(run_uplink(local.clone(), global, o.connect.clone()));
    }
    tokio::spawn(relay_steps(local.clone()));
    tokio::spawn(local_ticks(
        local.clone(),
        Arc::new(SystemWallClock),
        cycle_us,
        metrics,
    ));
    tokio::spawn(reload_on_hup(coordinator.clone(), o.config.clone(), {
        let local = local.clone();
        move |policy, interval| {
            let mut l = local.lock().expect("local");
            l.set_interval(interval);
            l.apply_policy(policy)
        }
    }));
    tracing::info!(socket = %o.socket.display(), node = %o.node, "local controller ready");
    let shutdown = Arc::new(Notify::new());
    let serve = router.serve_with_incoming_shutdown(incoming, {
        let shutdown = shutdown.clone();
        async move { shutdown.notified().await }
    });
    serve_until_stopped(serve, shutdown, || {
        // Launchers find no socket from now on (they start their jobs as on a node
        // without a controller); those attached are not detached by their connections'
        // end.
        let _ = std::fs::remove_file(&o.socket);
        let jobs = {
            let mut l = local.lock().expect("local");
            l.stop();
            l.jobs.len()
        };
        tracing::info!(
            jobs,
            "stopping: the jobs keep their last rates; the next start adopts them"
        );
    })
    .await
    .map_err(|source| DaemonError::Serve {
        role: "local controller",
        source,
    })
}

/// How long `sacctmgr` may take to list the associations.
const SACCTMGR_DEADLINE: Duration = Duration::from_secs(10);

/// With `slurm_shares = true`, reads the shares of Slurm's association tree and puts
/// them in force; on failure the shares in force stay, and the failure is logged.
pub async fn read_slurm_shares(coordinator: &Arc<Mutex<Coordinator>>) {
    let wanted = coordinator
        .lock()
        .expect("coordinator")
        .config()
        .slurm_shares;
    if !wanted {
        return;
    }
    match crate::slurm_shares::read("sacctmgr", SACCTMGR_DEADLINE).await {
        Ok(shares) => {
            let accounts = shares
                .iter()
                .filter(|s| s.0 == sluice_policy::tree::Attr::Account)
                .count();
            tracing::info!(accounts, "shares read from Slurm's associations");
            coordinator
                .lock()
                .expect("coordinator")
                .set_slurm_shares(shares);
        }
        Err(e) => tracing::warn!("shares from Slurm not read, those in force stay: {e}"),
    }
}

/// SIGHUP: the configuration file (`file`) is read again; on error the one in force
/// stays. Each reload is audited.
async fn reload_on_hup(
    coordinator: Option<Arc<Mutex<Coordinator>>>,
    file: Option<PathBuf>,
    apply: impl Fn(Policy, Duration) + Send + 'static,
) {
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        return;
    };
    let who = Who::signal("SIGHUP");
    let what = match &file {
        Some(f) => format!("configuration file {:?}", f.display().to_string()),
        None => "no configuration file".to_owned(),
    };
    while hup.recv().await.is_some() {
        let Some(c) = &coordinator else { continue };
        read_slurm_shares(c).await;
        let event = Event::new("reload", &who, &what);
        // The coordinator is not held while the policy is applied: the local's cycle
        // takes the two locks in the other order.
        let reloaded = {
            let mut c = c.lock().expect("coordinator");
            c.reload().map(|r| (r, c.policy(), c.config().interval))
        };
        match reloaded {
            Ok((Reloaded::NoFile, ..)) => tracing::info!("SIGHUP: no --config file to read"),
            Ok((Reloaded::Unchanged, ..)) => event.done(
                Some("the configuration in force, with the admin changes made since"),
                Some("the same: the file is unchanged since it was last read"),
            ),
            Ok((Reloaded::Changed { dropped, .. }, p, interval)) => match Policy::from_proto(&p) {
                Ok(p) => {
                    let replaced = FileReplaced(&dropped).to_string();
                    event.done(Some("the configuration in force"), Some(&replaced));
                    apply(p, interval);
                }
                Err(e) => event.not_done(Outcome::Failed, &format!("not applied: {e:#}")),
            },
            Err(e) => event.not_done(Outcome::Failed, &format!("not reloaded: {e:#}")),
        }
    }
}

/// The local's hand-overs between two cycles: [`relay::STEPS_PER_INTERVAL`] looks per
/// interval at the jobs of the exclusive groups pushed for it (nothing to do while
/// there are none), each lending a rate left unused to the next job in the group's
/// order.
async fn relay_steps(local: Shared) {
    loop {
        let interval = local.lock().expect("local").interval();
        tokio::time::sleep(interval / relay::STEPS_PER_INTERVAL).await;
        local.lock().expect("local").relay_step();
    }
}

/// The local's cycle: at each boundary of `clock`, observe every job, then compute
/// (single-node) or report up (cluster).
pub(crate) async fn local_ticks(
    local: Shared,
    clock: Arc<dyn WallClock>,
    cycle_us: Arc<Mutex<Vec<f64>>>,
    metrics: Option<Arc<Metrics>>,
) {
    let changed = local.lock().expect("local").interval_changed();
    // The interval the single-node computation's cycles count in.
    let mut unit = local.lock().expect("local").interval();
    let mut scanner = crate::local::unstaged::Scanner::default();
    loop {
        let interval = local.lock().expect("local").interval();
        let (_, until) = clock.cycle_at(interval);
        tokio::select! {
            () = tokio::time::sleep(until) => {}
            () = changed.notified() => continue,
        }
        let start = Instant::now();
        let (cycle, _) = clock.cycle_at(interval);
        // Outside the lock: /proc is read while launchers attach.
        let targets = local.lock().expect("local").scan_targets();
        let scan = Instant::now();
        let outside = scanner.scan(&targets);
        tracing::debug!(
            processes = scanner.processes(),
            took_us = scan.elapsed().as_micros() as u64,
            "scanned /proc for processes outside the stage"
        );
        let mut l = local.lock().expect("local");
        l.set_outside(outside);
        // A hand-over lasts until its interval ends: the round about to decide sees
        // the jobs at their pushed rates.
        l.end_relays();
        let observed = l.observe(cycle);
        if let Some(c) = l.coordinator.clone() {
            let (rates, policy) = {
                let mut c = c.lock().expect("coordinator");
                if interval != unit {
                    c.cluster().renumber_cycles(unit, interval);
                    unit = interval;
                }
                let node = l.node.clone();
                c.cluster().report_latency(&node, observed.latency);
                c.cluster()
                    .report(&node, cycle, true, observed.jobs, observed.ended);
                c.finished(&node, observed.finished);
                let version = c.policy_version();
                let rates = c.compute(cycle);
                // Costs learned from a server moved in the cycle: in force before its
                // rates, which are in the new units.
                let policy = (c.policy_version() != version).then(|| c.policy());
                c.cluster().record_history(interval.as_secs_f64());
                if let Some(m) = &metrics {
                    m.record_coordinator(cycle, start.elapsed().as_secs_f64(), &c, interval);
                }
                (rates, policy)
            };
            if let Some(policy) = policy {
                match Policy::from_proto(&policy) {
                    Ok(p) => l.apply_policy(p),
                    Err(e) => tracing::error!("policy not applied: {e:#}"),
                }
            }
            match rates {
                Ok(rates) => {
                    let node = l.node.clone();
                    for r in rates.into_iter().filter(|r| r.node == node) {
                        l.apply_rates(r.jobs.iter().map(|(j, p)| (j, p)));
                        l.set_relays(r.relays.into_iter().map(relay::Chain::from).collect());
                    }
                }
                Err(e) => tracing::error!("cycle {cycle}: {e}"),
            }
            let mut times = cycle_us.lock().expect("times");
            if times.len() >= 256 {
                times.remove(0);
            }
            times.push(start.elapsed().as_secs_f64() * 1e6);
        } else if let Some(tx) = l.uplink.clone() {
            if let Some(m) = &metrics {
                m.record_node(cycle, &l.node, &observed.jobs, interval.as_secs_f64());
            }
            let full = std::mem::take(&mut l.full_next);
            let mut observed = observed;
            l.delta(&mut observed, full);
            // Kept until a report carrying them is queued: a job's end is told once.
            let finished = observed.finished.clone();
            let report = report_message(cycle, interval.as_secs_f64(), full, observed);
            let message = LocalMessage {
                body: Some(local_message::Body::Report(report)),
            };
            if tx.try_send(message).is_err() {
                l.full_next = true;
                l.finished.extend(finished);
            }
        }
    }
}

/// The global's hooks: a change goes to every local; its status carries the warnings
/// it started with.
struct GlobalHooks(Arc<Global>, Vec<String>);

impl Hooks for GlobalHooks {
    fn changed(&self) {
        self.0.broadcast_policy();
    }

    fn status(&self) -> StatusReply {
        let g = &self.0;
        let (pools, rules, interval_s, jobs) = {
            let c = g.coordinator.lock().expect("coordinator");
            let config = c.config();
            (
                config.pools.len(),
                config.rules.len(),
                config.interval.as_secs_f64(),
                c.jobs().len(),
            )
        };
        let (median, last) = cycle_figures(&g.cycle_us.lock().expect("times"));
        StatusReply {
            warnings: self.1.clone(),
            role: "global".into(),
            single_node: false,
            locals: g.locals() as u32,
            jobs: jobs as u32,
            pools: pools as u32,
            rules: rules as u32,
            interval_s,
            cycle: g.computed(),
            global_connected: false,
            cycle_us_median: median,
            cycle_us_last: last,
        }
    }
}

/// Serves `routes` (the JSON API, `/metrics`); a failure to listen fails the daemon's
/// start (an administrator asked for it, and would otherwise find it silently missing).
async fn spawn_http(addr: SocketAddr, routes: axum::Router) -> Result<(), DaemonError> {
    let listener = crate::http::bind(addr).await.map_err(DaemonError::Http)?;
    tokio::spawn(async move {
        if let Err(e) = crate::http::serve_on(listener, routes).await {
            tracing::error!("HTTP API stopped: {}", Chain(&e));
        }
    });
    Ok(())
}

/// Runs a global controller until SIGTERM or SIGINT.
pub async fn run_global(o: GlobalOptions) -> Result<(), DaemonError> {
    let _lock = StateLock::take(&o.state_dir)?;
    // The site's file and its credentials first (the `[admin]` table is always the
    // file's): one that cannot be used stops the start with one line, before any state
    // is restored or logged.
    let Site { config, auth, tls } = Site::read(o.config.as_deref(), Role::Global)?;
    let admission = Admission::new(auth.token.clone(), config.admin.client_ca.is_some());
    let coordinator = coordinator_of(o.config.clone(), &o.state_dir, o.interval)?;
    let metrics = o.http.map(|_| Arc::new(Metrics::default()));
    let global = Global::new(
        coordinator,
        Arc::new(SystemWallClock),
        metrics,
        Some(HeldFile::new(&o.state_dir)),
    );
    read_slurm_shares(&global.coordinator).await;
    let listen = |source| DaemonError::Listen {
        addr: o.listen.to_string(),
        source,
    };
    let listener = tokio::net::TcpListener::bind(o.listen)
        .await
        .map_err(listen)?;
    let addr = listener.local_addr().map_err(listen)?;
    let mut server = Server::builder()
        .http2_keepalive_interval(Some(KEEPALIVE))
        .http2_keepalive_timeout(Some(KEEPALIVE));
    let warnings = admission.warn_if_open(addr).into_iter().collect();
    let control = ControlServer::new(ControlService(global.clone(), admission))
        .max_decoding_message_size(MAX_MESSAGE);
    let admin = Arc::new(AdminService::new(
        global.coordinator.clone(),
        GlobalHooks(global.clone(), warnings),
        auth,
    ));
    if let Some(addr) = o.http {
        let g = global.clone();
        let scrape = move || g.scrape().unwrap_or_default();
        spawn_http(
            addr,
            api_router(admin.clone()).merge(metrics_router(scrape)),
        )
        .await?;
    }
    let admin = AdminServer::from_arc(admin);
    start_cycles(&global).map_err(DaemonError::Cycles)?;
    tokio::spawn(run_deadlines(global.clone()));
    tokio::spawn(reload_on_hup(
        Some(global.coordinator.clone()),
        o.config.clone(),
        {
            let global = global.clone();
            move |_, _| global.broadcast_policy()
        },
    ));
    tracing::info!(%addr, "global controller ready");
    let shutdown = Arc::new(Notify::new());
    let router = server.add_service(control).add_service(admin);
    let serve = serve_tcp(router, listener, tls, {
        let shutdown = shutdown.clone();
        async move { shutdown.notified().await }
    });
    serve_until_stopped(serve, shutdown, || {
        tracing::info!(
            locals = global.locals(),
            "stopping: the locals keep their last rates until a global answers again"
        );
    })
    .await
    .map_err(|source| DaemonError::Serve {
        role: "global controller",
        source,
    })
}

/// Serves `router` on `listener` until `shutdown` resolves; over TLS when `tls` is given.
async fn serve_tcp(
    router: Router,
    listener: TcpListener,
    tls: Option<Arc<ServerConfig>>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error> {
    match tls {
        Some(tls) => {
            router
                .serve_with_incoming_shutdown(incoming(listener, tls), shutdown)
                .await
        }
        None => {
            router
                .serve_with_incoming_shutdown(TcpListenerStream::new(listener), shutdown)
                .await
        }
    }
}
