//! The global's cycle run in process on tokio's paused time: a real [`Global`] served by
//! tonic over in-memory streams, and real local controllers ([`Local`], their ticks and
//! their uplink) with their jobs' segments in a temporary directory. Each node has its own
//! wall clock, which a test sets ahead or behind; time moves only when the test says.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::io::DuplexStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::transport::{Channel, Server, Uri};

use super::{ControlService, Global, run_deadlines};
use crate::clock::WallClock;
use crate::config::ControlConfig;
use crate::coordinator::Coordinator;
use crate::daemon::local_ticks;
use crate::link_auth::Admission;
use crate::local::{Caller, Local, Shared, uplink};
use crate::proto::AttachRequest;
use crate::proto::control_client::ControlClient;
use crate::proto::control_server::ControlServer;

/// Where the paused clocks start: a whole second, so that cycle boundaries fall on
/// whole numbers of the test's steps.
const EPOCH: Duration = Duration::from_secs(1_800_000_000);

/// A node's wall clock on tokio's (paused) time, `ahead` of the true time, or behind it.
struct PausedClock {
    start: tokio::time::Instant,
    ahead: Duration,
    behind: Duration,
}

impl PausedClock {
    fn skewed(ahead: Duration, behind: Duration) -> Arc<PausedClock> {
        Arc::new(PausedClock {
            start: tokio::time::Instant::now(),
            ahead,
            behind,
        })
    }

    fn right() -> Arc<PausedClock> {
        PausedClock::skewed(Duration::ZERO, Duration::ZERO)
    }
}

impl WallClock for PausedClock {
    fn since_epoch(&self) -> Duration {
        EPOCH + self.start.elapsed() + self.ahead - self.behind
    }
}

/// The pools of the cluster: one on metadata, which every job's segment gets.
const CONFIG: &str = r#"
interval = "1s"

[[pool]]
name = "md"
match = "class=metadata"
capacity = "1000/s"
algorithm = "psfa"
"#;

/// A global served over memory: each connection a client makes is a duplex stream
/// handed to the server's listener.
struct Cluster {
    global: Arc<Global>,
    clock: Arc<PausedClock>,
    channel: Channel,
    _tasks: Vec<JoinHandle<()>>,
}

impl Cluster {
    fn start() -> Cluster {
        let config = ControlConfig::parse(CONFIG).expect("config");
        let coordinator = Coordinator::new(config, None).expect("coordinator");
        let clock = PausedClock::right();
        let global = Global::new(coordinator, clock.clone(), None, None);
        let (listener, incoming) = mpsc::unbounded_channel::<std::io::Result<DuplexStream>>();
        let control =
            ControlServer::new(ControlService(global.clone(), Admission::new(None, false)));
        let server = tokio::spawn(async move {
            let incoming = UnboundedReceiverStream::new(incoming);
            let _ = Server::builder()
                .add_service(control)
                .serve_with_incoming(incoming)
                .await;
        });
        let cycles = tokio::spawn({
            let global = global.clone();
            async move { global.run_cycles_on_task().await }
        });
        let deadlines = tokio::spawn(run_deadlines(global.clone()));
        let channel = tonic::transport::Endpoint::from_static("http://global.memory")
            .connect_with_connector_lazy(tower::service_fn(move |_: Uri| {
                let listener = listener.clone();
                async move {
                    let (ours, theirs) = tokio::io::duplex(1 << 16);
                    listener
                        .send(Ok(theirs))
                        .map_err(|_| std::io::Error::other("the global is gone"))?;
                    Ok::<_, std::io::Error>(TokioIo::new(ours))
                }
            }));
        Cluster {
            global,
            clock,
            channel,
            _tasks: vec![server, cycles, deadlines],
        }
    }

    /// The cycle the global's clock is in.
    fn now(&self) -> u64 {
        let interval = self.global.coordinator.lock().unwrap().config().interval;
        self.clock.cycle_at(interval).0
    }

    /// Starts local controller `node`, its clock `clock`, with one attached job; its
    /// state and segments in `dir`.
    fn local(&self, node: &str, clock: Arc<PausedClock>, dir: &Path) -> Node {
        let state = dir.join(node).join("state");
        let shm = dir.join(node).join("shm");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::create_dir_all(&shm).unwrap();
        let interval = Duration::from_secs(1);
        let mut local = Local::new(node.to_owned(), state, shm, None, interval).unwrap();
        let request = AttachRequest {
            job: format!("job-{node}"),
            user: "alice".into(),
            nodes: 1,
            ..AttachRequest::default()
        };
        // The test process stands for the job's launcher, so that the job stays alive.
        let caller = Caller {
            uid: 0,
            pid: std::process::id(),
        };
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        local.attach(&request, caller, uid, gid).unwrap();
        let local: Shared = Arc::new(Mutex::new(local));
        let mut node = Node {
            local,
            channel: self.channel.clone(),
            tasks: Vec::new(),
        };
        node.tasks.push(tokio::spawn(local_ticks(
            node.local.clone(),
            clock,
            Arc::default(),
            None,
        )));
        node.connect();
        node
    }
}

/// A local controller in process.
struct Node {
    local: Shared,
    channel: Channel,
    tasks: Vec<JoinHandle<()>>,
}

impl Node {
    /// Starts its uplink, over a stream of its own.
    fn connect(&mut self) {
        let channel = self.channel.clone();
        let local = self.local.clone();
        self.tasks.push(tokio::spawn(async move {
            let open = |outbound| {
                let mut client = ControlClient::new(channel.clone());
                async move { Ok(client.session(outbound).await?.into_inner()) }
            };
            uplink(local, &"the global in memory", open).await
        }));
    }

    /// Ends its uplink, as a local that stops: its stream closes.
    fn disconnect(&mut self) {
        if let Some(uplink) = self.tasks.pop() {
            uplink.abort();
        }
        self.local.lock().unwrap().uplink = None;
    }

    /// The cycle of the last rates it received.
    fn rates_cycle(&self) -> u64 {
        self.local.lock().unwrap().last_rates_cycle
    }

    /// Whether it has the global's pool.
    fn has_pool(&self) -> bool {
        self.local
            .lock()
            .unwrap()
            .policy()
            .pools
            .iter()
            .any(|p| p.name.as_deref() == Some("md"))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Moves the paused time on by `d`, letting every task run meanwhile.
async fn advance(d: Duration) {
    let step = Duration::from_millis(10);
    let mut left = d;
    while !left.is_zero() {
        let now = step.min(left);
        tokio::time::advance(now).await;
        left -= now;
        // The streams' tasks hand messages on in a few turns each.
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }
}

/// A local that goes away and comes back: the cycles go on without it (closed at their
/// deadlines), it is sent the policy and every rate again once back, and the global counts
/// it once.
#[tokio::test(start_paused = true)]
async fn a_local_that_reconnects_is_sent_its_policy_and_rates_again() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::start();
    let a = cluster.local("a", PausedClock::right(), dir.path());
    let mut b = cluster.local("b", PausedClock::right(), dir.path());
    advance(Duration::from_secs(3)).await;
    assert_eq!(cluster.global.locals(), 2);
    assert!(a.has_pool() && b.has_pool());
    let first = b.rates_cycle();
    assert!(first > 0, "b was sent rates");

    b.disconnect();
    advance(Duration::from_secs(3)).await;
    assert_eq!(cluster.global.locals(), 1);
    // Closed at its deadline, half an interval after its boundary, without b.
    let now = cluster.now();
    assert!(
        cluster.global.computed() + 1 >= now,
        "cycles go on without b"
    );

    let gone = cluster.global.computed();
    b.connect();
    advance(Duration::from_secs(3)).await;
    assert_eq!(cluster.global.locals(), 2);
    assert!(
        b.rates_cycle() > gone,
        "b is sent its rates again on reconnecting (last at {}, gone at {gone})",
        b.rates_cycle()
    );
    assert!(cluster.global.computed() + 1 >= cluster.now());

    // Back at once, on a new stream, its figures unchanged: sent every rate again all
    // the same, as a restarted local must be.
    let again = cluster.global.computed();
    b.disconnect();
    b.connect();
    advance(Duration::from_secs(3)).await;
    assert_eq!(cluster.global.locals(), 2);
    assert!(
        b.rates_cycle() > again,
        "b is sent its rates on its new stream (last at {}, back at {again})",
        b.rates_cycle()
    );
    assert!(a.rates_cycle() > 0);
}

/// Nodes whose clocks are off: one a minute ahead, then one three intervals behind.
/// Neither holds the cycles: the one ahead counts as of the next cycle (alone, it would
/// otherwise close a cycle of the future and the global compute nothing until then),
/// the one behind is closed without at each deadline; both are sent their rates.
#[tokio::test(start_paused = true)]
async fn a_node_whose_clock_is_off_does_not_hold_the_cycles() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::start();
    // Within a cycle of the global's clock at every second: so the cycles move on.
    let in_step = |cluster: &Cluster| {
        let (computed, now) = (cluster.global.computed(), cluster.now());
        assert!(
            computed + 1 >= now && computed <= now + 1,
            "cycle {computed} computed at cycle {now} of the global's clock"
        );
    };
    let ahead = cluster.local(
        "ahead",
        PausedClock::skewed(Duration::from_secs(60), Duration::ZERO),
        dir.path(),
    );
    advance(Duration::from_secs(2)).await;
    for _ in 0..3 {
        advance(Duration::from_secs(1)).await;
        in_step(&cluster);
    }
    let behind = cluster.local(
        "behind",
        PausedClock::skewed(Duration::ZERO, Duration::from_secs(3)),
        dir.path(),
    );
    for _ in 0..3 {
        advance(Duration::from_secs(1)).await;
        in_step(&cluster);
    }
    let got = (
        ahead.rates_cycle(),
        behind.rates_cycle(),
        cluster.global.computed(),
    );
    assert!(got.0 > 0 && got.1 > 0, "{got:?}");
}

/// The interval changes from 1 s to 250 ms: the locals are sent it, and the global
/// counts and computes cycles of 250 ms from then on.
#[tokio::test(start_paused = true)]
async fn a_new_interval_reaches_the_locals_and_the_cycles_follow_it() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::start();
    let a = cluster.local("a", PausedClock::right(), dir.path());
    let b = cluster.local("b", PausedClock::right(), dir.path());
    advance(Duration::from_secs(3)).await;
    let before = cluster.global.computed();
    assert!(before + 1 >= cluster.now());

    let quick = Duration::from_millis(250);
    cluster
        .global
        .coordinator
        .lock()
        .unwrap()
        .change(|c| {
            c.interval = quick;
            Ok(())
        })
        .unwrap();
    cluster.global.broadcast_policy();
    advance(Duration::from_secs(1)).await;
    assert_eq!(a.local.lock().unwrap().interval(), quick);
    assert_eq!(b.local.lock().unwrap().interval(), quick);
    // Now in cycles of 250 ms: four times the numbers of 1 s.
    let renumbered = cluster.global.computed();
    assert!(
        renumbered >= before * 4,
        "cycle {renumbered} after {before} of 1 s"
    );
    advance(Duration::from_secs(1)).await;
    let (computed, now) = (cluster.global.computed(), cluster.now());
    assert!(
        computed >= renumbered + 3,
        "four cycles a second: {renumbered} → {computed}"
    );
    assert!(computed + 1 >= now && computed <= now);
}
