//! A real metadata server: a single-node CephFS (Debian's ceph packages, brought up by
//! experiments/cephfs/up.sh, which installs them when missing) mounted with ceph-fuse.
//! One create/unlink aggressor runs bare, then under one `class=metadata` rule, and the
//! MDS's own request counter (its admin socket's `perf dump`) shows what reached it. Then
//! the aggressor beside a stat victim, and a pool learns its costs from the MDS's
//! per-operation latencies (lookups as getattr, creates as mknod, unlinks).
//! Torn down when the test ends, passed or failed.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use common::daemons::{Local, daemon_dir, free_port, wait_for};
use common::installed::text;
use common::{c_prog, path_str, sluice_bin, tmp_dir, workspace};
use tempfile::TempDir;

/// The cluster, its mounts under `root`, taken down by experiments/cephfs/down.sh when
/// dropped (also after a failed bring-up: down.sh undoes a partial up.sh).
struct CephFs {
    work: PathBuf,
    root: PathBuf,
    _dir: TempDir,
}

impl CephFs {
    fn script(name: &str) -> Command {
        let mut c = Command::new("bash");
        c.arg(workspace().join("experiments/cephfs").join(name))
            .stdin(Stdio::null());
        c
    }

    /// Brings it up with one ceph-fuse mount per client name in `clients`.
    fn up(clients: &str) -> CephFs {
        let dir = tmp_dir();
        let fs = CephFs {
            work: dir.path().join("cluster"),
            root: dir.path().join("mnt"),
            _dir: dir,
        };
        let o = Self::script("up.sh")
            .arg("--work-dir")
            .arg(&fs.work)
            .arg("--mount-root")
            .arg(&fs.root)
            .args(["--port", &free_port().to_string(), "--clients", clients])
            .args(["--small-cache", "victim"])
            .output()
            .expect("cannot run experiments/cephfs/up.sh");
        assert!(o.status.success(), "up.sh failed: {}", text(&o));
        fs
    }

    /// The MDS's admin socket.
    fn asok(&self) -> PathBuf {
        self.work.join("run/ceph-mds.a.asok")
    }

    /// Where client `name` is mounted.
    fn mount(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// The requests the MDS has taken from clients since it started
    /// (`mds_server.handle_client_request`), read with the ceph CLI from its admin socket.
    fn mds_requests(&self) -> u64 {
        let o = Command::new("timeout")
            .args(["10", "ceph", "--admin-daemon"])
            .arg(self.asok())
            .args(["perf", "dump", "mds_server"])
            .stdin(Stdio::null())
            .output()
            .expect("cannot run ceph");
        assert!(o.status.success(), "perf dump failed: {}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("perf dump JSON");
        v["mds_server"]["handle_client_request"]
            .as_u64()
            .unwrap_or_else(|| panic!("no handle_client_request in {v}"))
    }

    /// The MDS's requests per second while `cmd` runs (from its start to its end).
    fn request_rate(&self, cmd: &mut Command) -> f64 {
        let before = self.mds_requests();
        let t = Instant::now();
        let o = cmd
            .stdin(Stdio::null())
            .output()
            .expect("cannot run the aggressor");
        let took = t.elapsed().as_secs_f64();
        let after = self.mds_requests();
        assert!(o.status.success(), "{cmd:?} failed: {}", text(&o));
        (after - before) as f64 / took
    }
}

impl Drop for CephFs {
    fn drop(&mut self) {
        let o = Self::script("down.sh")
            .arg("--work-dir")
            .arg(&self.work)
            .arg("--mount-root")
            .arg(&self.root)
            .output();
        match o {
            Ok(o) if o.status.success() => {}
            Ok(o) => eprintln!("down.sh failed: {}", text(&o)),
            Err(e) => eprintln!("cannot run down.sh: {e}"),
        }
    }
}

/// The rule's rate of calls: 200 a second, of which two in three (create, unlink; the
/// close sends nothing) are MDS requests.
const RULE: &str = "class=metadata rate=200/s";
const HELD_REQUESTS: f64 = 200.0 * 2.0 / 3.0;

/// A pool of this MDS whose costs it learns (`costs_from`), holding nothing: its
/// capacity is far above what the clients send.
fn learning_pool(fs: &CephFs) -> String {
    format!(
        "interval = \"500ms\"\n\n[[pool]]\nname = \"md\"\nmatch = \"class=metadata,directory\"\n\
         capacity = \"1M/s\"\nalgorithm = \"psfa\"\ncosts_from = \"ceph-mds:{}\"\n",
        path_str(&fs.asok())
    )
}

/// `getattr=1,unlink=3,mknod=4` by operation.
fn costs_of(text: &str) -> std::collections::BTreeMap<String, u32> {
    text.split(',')
        .filter_map(|e| {
            let (op, units) = e.split_once('=')?;
            Some((op.to_owned(), units.parse().ok()?))
        })
        .collect()
}

#[test]
fn a_rule_holds_a_create_aggressor_at_the_cephfs_mds() {
    assert!(
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() } == 0,
        "the CephFS test starts ceph daemons and FUSE mounts, which need root"
    );
    let started = Instant::now();
    let aggressor = c_prog("mdcreate");
    let victim = c_prog("mdstat");
    let fs = CephFs::up("aggr victim");
    let dir = fs.mount("aggr");
    // Reads the MDS from here on; holds nothing.
    let state = daemon_dir();
    let local = Local::start(state.path(), &learning_pool(&fs), &["--node", "n1"], None);
    let seconds = "4";
    let bare = fs.request_rate(Command::new(&aggressor).arg(&dir).arg(seconds));
    let held = fs.request_rate(
        Command::new(sluice_bin())
            .args(["run", "--standalone", "--mount"])
            .arg(&dir)
            .args(["--rule", RULE, "--"])
            .arg(&aggressor)
            .arg(&dir)
            .arg(seconds),
    );
    eprintln!(
        "MDS requests/s: bare {bare:.0}, under '{RULE}' {held:.0} (expected about \
         {HELD_REQUESTS:.0}); {:.1} s so far",
        started.elapsed().as_secs_f64()
    );
    // What reached the server is the rule's rate (the first second's burst, the
    // aggressor's own start and the counter read around it aside), and far below what
    // the same program sends unheld.
    assert!(
        held > 0.6 * HELD_REQUESTS && held < 1.15 * HELD_REQUESTS,
        "held: {held:.0} MDS requests/s, not about {HELD_REQUESTS:.0}"
    );
    assert!(
        bare > 3.0 * held,
        "bare {bare:.0} requests/s is not well above held {held:.0}"
    );
    // The victim's stats, on a mount whose cache holds 100 inodes, are lookups at the
    // MDS; the aggressor's creates and unlinks are creates and unlinks.
    let files = fs.mount("victim").join("files");
    std::fs::create_dir(&files).expect("the victim's directory");
    for i in 0..300 {
        std::fs::write(files.join(format!("f{i}")), b"").expect("the victim's files");
    }
    let mut stats = Command::new(&victim)
        .args(["-n", "300"])
        .arg(&files)
        .arg("3")
        .stdout(Stdio::null())
        .spawn()
        .expect("cannot run the victim");
    let o = Command::new(&aggressor)
        .arg(&dir)
        .arg("3")
        .stdin(Stdio::null())
        .output()
        .expect("cannot run the aggressor");
    assert!(o.status.success(), "mdcreate failed: {}", text(&o));
    assert!(stats.wait().expect("the victim").success());
    let costs = || costs_of(local.pools()["pools"][0]["costs"].as_str().unwrap_or(""));
    // Each request type the clients sent, learned from the MDS and put in force: the
    // victim's lookups as getattr, the aggressor's creates as mknod, its unlinks. Their
    // ratios are the MDS's own: on a host whose CPUs are taken every request waits for
    // one far longer than the MDS works on it, and all cost one unit
    // (experiments/cephfs/README.md), so this checks what was learned, not how much.
    let learned = |c: &std::collections::BTreeMap<String, u32>| {
        ["getattr", "mknod", "unlink"]
            .iter()
            .all(|op| c.contains_key(*op))
            && c.values().min() == Some(&1)
    };
    // The last interval's figures reach the pool within a cycle or two.
    let all = wait_for(std::time::Duration::from_secs(2), || learned(&costs()));
    let log = local.daemon.log_text();
    let changes: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("costs_learned"))
        .collect();
    eprintln!(
        "costs learned from the MDS: {:?}\n{}",
        costs(),
        changes.join("\n")
    );
    assert!(
        all,
        "costs not learned for getattr, mknod and unlink: {:?}",
        costs()
    );
    assert!(
        changes.iter().all(|l| l.contains("done by ceph-mds:")),
        "each change audited as the source's: {changes:?}"
    );
    drop(local);
    drop(fs);
    let mounts = std::fs::read_to_string("/proc/mounts").expect("/proc/mounts");
    assert!(
        !mounts.contains(&path_str(&dir)),
        "a ceph-fuse mount was left behind: {mounts}"
    );
    eprintln!("whole test {:.1} s", started.elapsed().as_secs_f64());
}
