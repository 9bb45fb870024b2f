//! Hierarchical fair share with real daemons: a global and two locals in network
//! namespaces, a pool divided down `account,user,job`, six saturated jobs of three users
//! in two accounts (shares 70/30) and 1 to 8 nodes, placed on both nodes; and a global
//! reading Slurm's association shares at start and on SIGHUP, from a stand-in `sacctmgr`
//! and from a real slurmdbd on a private MariaDB.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::daemons::{
    Daemon, Local, call_times, free_port, monotonic_ns, rate_between, wait_answers, wait_for,
};
use common::net::Cluster;
use common::{Scratch, c_prog, munged_argv, path_str, sluice_bin, tmp_dir};
use serde_json::Value;
use sluice_workload::harness::Process;

const SEC: u64 = 1_000_000_000;

/// Half a second: the intervals the promises are counted in.
const INTERVAL: u64 = SEC / 2;

const CAPACITY: f64 = 6000.0;

const GLOBAL_CONFIG: &str = "interval = \"500ms\"\n\n[[pool]]\nname = \"md\"\n\
    match = \"op=getattr\"\ncapacity = \"6k/s\"\ntree = \"account,user,job\"\n\n\
    [shares.account]\nphys = 7\nchem = 3\n";

/// A job: id, account, uid (its user), nodes it says it holds, node it runs on.
struct Spec {
    id: &'static str,
    account: &'static str,
    uid: u32,
    nodes: u32,
    node: usize,
}

const JOBS: [Spec; 6] = [
    Spec {
        id: "P1",
        account: "phys",
        uid: 61001,
        nodes: 1,
        node: 0,
    },
    Spec {
        id: "P2",
        account: "phys",
        uid: 61001,
        nodes: 3,
        node: 1,
    },
    Spec {
        id: "P3",
        account: "phys",
        uid: 61002,
        nodes: 2,
        node: 0,
    },
    Spec {
        id: "C1",
        account: "chem",
        uid: 61003,
        nodes: 1,
        node: 1,
    },
    Spec {
        id: "C2",
        account: "chem",
        uid: 61003,
        nodes: 8,
        node: 0,
    },
    Spec {
        id: "C3",
        account: "chem",
        uid: 61003,
        nodes: 1,
        node: 1,
    },
];

/// What the tree gives each job of [`JOBS`] under saturation: phys 70% split equally
/// between its two users, 61001's part by node count (1:3); chem 30% to its one user,
/// by node count (1:8:1). The pool's floor (1%, 10/s a job) is added equally.
fn due(spec: &Spec) -> f64 {
    let floor = CAPACITY * 0.01 / 6.0;
    let rest = CAPACITY * 0.99;
    let tree = match spec.id {
        "P1" => rest * 0.7 / 2.0 / 4.0,
        "P2" => rest * 0.7 / 2.0 * 3.0 / 4.0,
        "P3" => rest * 0.7 / 2.0,
        "C1" | "C3" => rest * 0.3 / 10.0,
        _ => rest * 0.3 * 8.0 / 10.0,
    };
    tree + floor
}

/// Each account within 2% of its share, users of an account equal within 2%, jobs by
/// node count within 2%, measured on the calls the jobs made; then chem goes idle for
/// two seconds: phys has the whole pool within two intervals; chem comes back: it has
/// its 30% within two intervals.
#[test]
fn accounts_users_and_jobs_get_their_shares_and_lend_what_they_leave() {
    let Some(c) = Cluster::with(GLOBAL_CONFIG, false, true) else {
        return;
    };
    let s = Scratch::new();
    let rate = c_prog("rate");
    let outs: Vec<tempfile::TempDir> = JOBS.iter().map(|_| tmp_dir()).collect();
    let go = tmp_dir();
    let go_file = go.path().join("go");
    let start_job = |spec: &Spec, out: &Path| -> Child {
        let out = path_str(out);
        // phys saturates 10 s; chem 5 s, sleeps 2 s, then 2.5 s more (phys still there).
        let script = match spec.account {
            "phys" => format!("exec {rate} one {} {out} 10000", s.file),
            _ => {
                std::fs::create_dir_all(format!("{out}/a")).unwrap();
                std::fs::create_dir_all(format!("{out}/b")).unwrap();
                format!(
                    "{rate} one {f} {out}/a 5000 && sleep 2 && exec {rate} one {f} {out}/b 2500",
                    f = s.file
                )
            }
        };
        let uid = spec.uid.to_string();
        c.locals[spec.node]
            .job_command(
                spec.id,
                &["--mount", &s.file, "--uid", &uid, "--account", spec.account],
                &["sh", "-c", &script],
            )
            .env("SLURM_JOB_NUM_NODES", spec.nodes.to_string())
            .env("RATE_START", &go_file)
            .spawn()
            .expect("sluice run")
    };
    let mut children: Vec<Child> = JOBS
        .iter()
        .zip(&outs)
        .map(|(spec, out)| start_job(spec, out.path()))
        .collect();
    // Released together once every job is attached and in the tree.
    let in_tree = wait_for(Duration::from_secs(10), || {
        let pools = c.locals[0].pools();
        pools["pools"][0]["nodes"]
            .as_array()
            .map_or(0, |n| n.iter().filter(|n| n["level"] == "job").count())
            == JOBS.len()
    });
    assert!(
        in_tree,
        "the six jobs never all showed in the tree: {}",
        c.locals[0].pools()
    );
    std::fs::write(&go_file, "").unwrap();
    let start = monotonic_ns();
    // The tree as an administrator sees it, once it has settled.
    std::thread::sleep(Duration::from_millis(2500));
    let shown = c.locals[0].admin(&["jobs", "--tree"]);
    let tree_text = String::from_utf8_lossy(&shown.stdout).into_owned();
    eprintln!("{tree_text}");
    let view: Value = c.jobs();
    for child in &mut children {
        assert!(child.wait().unwrap().success());
    }
    assert!(tree_text.contains("account=phys") && tree_text.contains("user=61001"));
    for j in view["jobs"].as_array().unwrap() {
        let spec = JOBS.iter().find(|s| j["job"] == s.id).unwrap();
        assert_eq!(j["account"], spec.account, "{j}");
    }
    let times = |i: usize, sub: &str| call_times(&outs[i].path().join(sub));
    let phase_a: Vec<Vec<u64>> = (0..6)
        .map(|i| times(i, if i < 3 { "" } else { "a" }))
        .collect();
    // Steady: from 2 s after the release (four intervals) to 4.5 s.
    let (from, to) = (start + 2 * SEC, start + 4 * SEC + SEC / 2);
    let rates: Vec<f64> = phase_a.iter().map(|t| rate_between(t, from, to)).collect();
    for (spec, got) in JOBS.iter().zip(&rates) {
        eprintln!(
            "job {} ({}, uid {}, {} nodes): {got:.0}/s, due {:.0}/s",
            spec.id,
            spec.account,
            spec.uid,
            spec.nodes,
            due(spec)
        );
    }
    let sum = |pick: &dyn Fn(&Spec) -> bool| -> (f64, f64) {
        JOBS.iter()
            .zip(&rates)
            .filter(|(s, _)| pick(s))
            .fold((0.0, 0.0), |(g, d), (s, r)| (g + r, d + due(s)))
    };
    for account in ["phys", "chem"] {
        let (got, due) = sum(&|s| s.account == account);
        eprintln!("account {account}: {got:.0}/s of {CAPACITY}, due {due:.0}/s");
        assert!(
            (got - due).abs() <= 0.02 * due,
            "account {account}: {got:.0}/s, due {due:.0}/s"
        );
    }
    let (u1, _) = sum(&|s| s.uid == 61001);
    let (u2, _) = sum(&|s| s.uid == 61002);
    eprintln!("phys users: 61001 {u1:.0}/s, 61002 {u2:.0}/s");
    assert!(
        (u1 - u2).abs() <= 0.02 * u2,
        "phys's users: {u1:.0} vs {u2:.0}"
    );
    for (spec, got) in JOBS.iter().zip(&rates) {
        let due = due(spec);
        assert!(
            (got - due).abs() <= 0.02 * due,
            "job {}: {got:.0}/s, due {due:.0}/s",
            spec.id
        );
    }
    // chem idle: from the last call of its first phase to the first of its second.
    let idle_from = phase_a[3..]
        .iter()
        .filter_map(|t| t.last())
        .copied()
        .max()
        .unwrap();
    let phase_b: Vec<Vec<u64>> = (3..6).map(|i| times(i, "b")).collect();
    let back_at = phase_b
        .iter()
        .filter_map(|t| t.first())
        .copied()
        .min()
        .unwrap();
    let phys_during = |from: u64, to: u64| -> f64 {
        phase_a[..3].iter().map(|t| rate_between(t, from, to)).sum()
    };
    let lent = phys_during(idle_from + 2 * INTERVAL, back_at);
    eprintln!(
        "chem idle {:.2} s: phys {lent:.0}/s from two intervals after",
        (back_at - idle_from) as f64 / 1e9
    );
    assert!(
        lent >= 0.98 * CAPACITY,
        "phys with chem idle: {lent:.0}/s of {CAPACITY}"
    );
    let chem_end = phase_b
        .iter()
        .filter_map(|t| t.last())
        .copied()
        .min()
        .unwrap();
    let chem_back: f64 = phase_b
        .iter()
        .map(|t| rate_between(t, back_at + 2 * INTERVAL, chem_end))
        .sum();
    let chem_due = sum(&|s| s.account == "chem").1;
    eprintln!("chem back: {chem_back:.0}/s from two intervals after, due {chem_due:.0}/s");
    assert!(
        (chem_back - chem_due).abs() <= 0.02 * chem_due,
        "chem back: {chem_back:.0}/s, due {chem_due:.0}/s"
    );
}

/// A global with `slurm_shares = true`, a pool `md` divided down `account,user,job`
/// and the configuration's share of phys 2, its log in `dir/NAME.log`, the environment
/// given `env` (`sacctmgr` is looked up on its PATH).
fn global_with_env(dir: &Path, name: &str, env: &[(&str, String)]) -> Daemon {
    let config = format!("{SLURM_SHARES_CONFIG}\n[shares.account]\nphys = 2\n");
    global_with_config(dir, name, &config, env).0
}

/// The global's configuration read from Slurm's shares: one pool divided down the tree.
const SLURM_SHARES_CONFIG: &str = "slurm_shares = true\ninterval = \"500ms\"\n\n\
    [[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\ncapacity = \"6k/s\"\n\
    tree = \"account,user,job\"\n";

/// A global with the configuration text `config`, its log in `dir/NAME.log`, the
/// environment given `env`; returns it and its URL once it answers.
fn global_with_config(
    dir: &Path,
    name: &str,
    config: &str,
    env: &[(&str, String)],
) -> (Daemon, String) {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, config).unwrap();
    let config = file;
    let listen = format!("127.0.0.1:{}", free_port());
    let state = dir.join(format!("{name}-state"));
    let log = dir.join(format!("{name}.log"));
    let mut cmd = Command::new(sluice_bin());
    cmd.args(["global", "--listen", &listen, "--state-dir"])
        .arg(&state)
        .arg("--config")
        .arg(&config)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("SLUICE_LOG_LEVEL", "info");
    let global = Daemon(Process::logged(&mut cmd, &log).expect("start the global"));
    let url = format!("http://{listen}");
    wait_answers(&global, &url);
    (global, url)
}

/// Waits up to 10 s for a line of `daemon`'s log holding every one of `words`.
fn logged(daemon: &Daemon, words: &[&str]) -> bool {
    wait_for(Duration::from_secs(10), || {
        daemon
            .log_text()
            .lines()
            .any(|l| words.iter().all(|w| l.contains(w)))
    })
}

/// Slurm's shares at start and on SIGHUP, where Slurm keeps no accounts
/// (`AccountingStorageType=accounting_storage/none`, as slurm.rs runs it): the real
/// `sacctmgr` refuses to list associations, and the global logs its refusal and keeps
/// the shares in force. Then a stand-in on the PATH prints associations the way the
/// real one's `-nP` does (`--noheader`, `--parsable2`: fields between `|`, none at the
/// end; a share of `parent`), checks it was asked exactly that, and the global reads
/// them at start and again on SIGHUP, once they changed, and logs a line it cannot
/// read. The real association tree in slurmdbd is read in
/// [`a_real_slurms_association_shares_are_in_force_at_start_and_after_sighup`].
#[test]
fn slurm_shares_are_read_at_start_and_again_on_sighup() {
    let dir = tmp_dir();
    let d = dir.path();
    let path = std::env::var("PATH").unwrap_or_default();
    // A Slurm configuration like the tests' (no accounting storage).
    let conf = d.join("slurm.conf");
    std::fs::write(
        &conf,
        "ClusterName=sluice\nSlurmctldHost=localhost(127.0.0.1)\n\
         AccountingStorageType=accounting_storage/none\n\
         NodeName=localhost CPUs=1\nPartitionName=debug Nodes=ALL\n",
    )
    .unwrap();
    let real = Command::new("sacctmgr")
        .arg("--version")
        .env("SLURM_CONF", &conf)
        .output()
        .is_ok();
    if real {
        let mut global = global_with_env(d, "real", &[("SLURM_CONF", path_str(&conf))]);
        assert!(
            logged(
                &global,
                &[
                    "shares from Slurm not read, those in force stay",
                    "not running a supported accounting_storage plugin",
                ]
            ),
            "{}",
            global.log_text()
        );
        global.terminate(Duration::from_secs(10));
    } else {
        eprintln!("no sacctmgr here: only the stand-in is read");
    }
    let bin = d.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let assoc = d.join("assoc");
    let stand_in = bin.join("sacctmgr");
    std::fs::write(
        &stand_in,
        format!(
            "#!/bin/sh\n[ \"$*\" = \"-nP show assoc format=account,user,share,parentname\" ] \
             || {{ echo \"sacctmgr: asked $*\" >&2; exit 3; }}\nexec cat {}\n",
            path_str(&assoc)
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &stand_in,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let two = "root|||\nroot|root|1|\nphys||7|root\nchem||3|root\n\
               phys|alice|1|\nphys|bob|parent|\nchem|carol|1|\n";
    std::fs::write(&assoc, two).unwrap();
    let env = [("PATH", format!("{}:{path}", path_str(&bin)))];
    let mut global = global_with_env(d, "stand-in", &env);
    // root's own user holds a share beside phys and chem: root is an account too.
    let read = |accounts: &str| {
        logged(
            &global,
            &["shares read from Slurm's associations", accounts],
        )
    };
    assert!(read("accounts=3"), "{}", global.log_text());
    std::fs::write(&assoc, format!("{two}bio||5|root\nbio|dave|1|\n")).unwrap();
    global.signal(libc::SIGHUP);
    assert!(read("accounts=4"), "{}", global.log_text());
    // A failing sacctmgr on SIGHUP: the log says why, and the global goes on.
    std::fs::write(&assoc, "root|||\nphys|x|lots|\n").unwrap();
    global.signal(libc::SIGHUP);
    assert!(
        logged(
            &global,
            &["shares from Slurm not read", "the share is not a number"]
        ),
        "{}",
        global.log_text()
    );
    global.terminate(Duration::from_secs(10));
}

/// Slurm's accounting alone, as `sacctmgr` needs it: munged, a MariaDB and slurmdbd
/// (tests/deps.sh installs them), each private to `dir` (own socket, data directory and
/// loopback ports), killed when dropped. No slurmctld: `sacctmgr` asks slurmdbd.
struct SlurmDb {
    daemons: Vec<Child>,
    conf: String,
    dir: std::path::PathBuf,
}

impl SlurmDb {
    /// Starts them in `dir` (root only: slurmdbd runs as its SlurmUser, root here).
    fn start(dir: &Path) -> SlurmDb {
        assert!(
            // SAFETY: getuid has no preconditions.
            unsafe { libc::getuid() } == 0,
            "the slurmdbd test runs slurmdbd as its SlurmUser, root"
        );
        for p in ["/usr/sbin/slurmdbd", "/usr/sbin/mariadbd"] {
            assert!(Path::new(p).exists(), "no {p}: run tests/deps.sh as root");
        }
        let d = path_str(dir);
        let (db_port, dbd_port) = (free_port(), free_port());
        let mut db = SlurmDb {
            daemons: Vec::new(),
            conf: format!("{d}/slurm.conf"),
            dir: dir.to_owned(),
        };
        let started = std::time::Instant::now();
        // MariaDB's system tables: without them (an empty data directory) it starts, but
        // slurmdbd's stored functions are not made and it loses associations silently.
        // Without grant tables (--skip-grant-tables) root needs no password; MariaDB
        // listens on loopback only, for slurmdbd.
        let install = Command::new("mariadb-install-db")
            .args(["--no-defaults", "--user=root", "--skip-test-db"])
            .arg(format!("--datadir={d}/db"))
            .stdin(Stdio::null())
            .output()
            .expect("mariadb-install-db");
        assert!(
            install.status.success(),
            "mariadb-install-db: {}",
            String::from_utf8_lossy(&install.stderr)
        );
        db.spawn(&[
            "/usr/sbin/mariadbd",
            "--no-defaults",
            "--user=root",
            &format!("--datadir={d}/db"),
            &format!("--socket={d}/mysql.sock"),
            &format!("--pid-file={d}/mysqld.pid"),
            &format!("--log-error={d}/mysqld.log"),
            "--bind-address=127.0.0.1",
            &format!("--port={db_port}"),
            "--skip-grant-tables",
        ]);
        db.spawn(
            &munged_argv(dir)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        let up = wait_for(Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", db_port)).is_ok()
                && dir.join("munge.sock").exists()
        });
        assert!(
            up,
            "MariaDB or munged did not start: {}",
            db.log("mysqld.log")
        );
        eprintln!("MariaDB made and up in {:?}", started.elapsed());
        // slurmdbd reads slurmdbd.conf beside SLURM_CONF's slurm.conf, and only if it
        // is its SlurmUser's alone (mode 600): it holds the database's password.
        let dbd_conf = dir.join("slurmdbd.conf");
        std::fs::write(
            &dbd_conf,
            format!(
                "AuthType=auth/munge\nAuthInfo=socket={d}/munge.sock\nDbdHost=localhost\n\
                 DbdAddr=127.0.0.1\nDbdPort={dbd_port}\nSlurmUser=root\n\
                 StorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\n\
                 StoragePort={db_port}\nStorageUser=root\nStorageLoc=slurm_acct_db\n\
                 PidFile={d}/slurmdbd.pid\nLogFile={d}/slurmdbd.log\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(
            &dbd_conf,
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
        // AccountingStoragePass names the munge socket the clients talk to slurmdbd
        // with; AuthInfo alone does not reach sacctmgr's connection to it.
        std::fs::write(
            &db.conf,
            format!(
                "ClusterName=sluice\nSlurmctldHost=localhost(127.0.0.1)\n\
                 AuthType=auth/munge\nAuthInfo=socket={d}/munge.sock\n\
                 AccountingStorageType=accounting_storage/slurmdbd\n\
                 AccountingStorageHost=127.0.0.1\nAccountingStoragePort={dbd_port}\n\
                 AccountingStoragePass={d}/munge.sock\n\
                 NodeName=localhost CPUs=1\nPartitionName=debug Nodes=ALL\n"
            ),
        )
        .unwrap();
        db.spawn(&["/usr/sbin/slurmdbd", "-D"]);
        let answers = wait_for(Duration::from_secs(30), || {
            db.sacctmgr(&["-nP", "show", "cluster"]).status.success()
        });
        assert!(
            answers,
            "slurmdbd never answered: {}\n{}",
            db.log("slurmdbd.log"),
            db.log("mysqld.log")
        );
        eprintln!("MariaDB and slurmdbd up in {:?}", started.elapsed());
        db
    }

    fn spawn(&mut self, argv: &[&str]) {
        let name = Path::new(argv[0]).file_name().unwrap().to_string_lossy();
        let err = std::fs::File::create(self.dir.join(format!("{name}.err"))).unwrap();
        let child = Command::new(argv[0])
            .args(&argv[1..])
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", argv[0]));
        self.daemons.push(child);
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }

    /// `sacctmgr ARGS…` of this Slurm, killed after 20 s (coreutils' timeout).
    fn sacctmgr(&self, args: &[&str]) -> std::process::Output {
        Command::new("timeout")
            .args(["20", "sacctmgr"])
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .output()
            .expect("timeout sacctmgr")
    }

    /// `sacctmgr -i ARGS…`, which must succeed.
    fn admin(&self, args: &[&str]) {
        let o = self.sacctmgr(&[&["-i"], args].concat());
        assert!(
            o.status.success(),
            "sacctmgr -i {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

impl Drop for SlurmDb {
    fn drop(&mut self) {
        for d in self.daemons.iter_mut().rev() {
            let _ = d.kill();
            let _ = d.wait();
        }
    }
}

/// Processes killed when dropped.
struct Killed(Vec<Child>);

impl Drop for Killed {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The weight and allocation of `account` in pool md's tree as `sluice pool list
/// --json` shows it.
fn account_node(pools: &Value, account: &str) -> Option<(f64, f64)> {
    let node = pools["pools"][0]["nodes"]
        .as_array()?
        .iter()
        .find(|n| n["level"] == "account" && n["name"] == account)?;
    Some((node["weight"].as_f64()?, node["allocation"].as_f64()?))
}

/// Shares from a real Slurm's association tree: accounts phys (fairshare 7) and chem
/// (3) with a user each, made with the real `sacctmgr` in a private slurmdbd on a
/// private MariaDB; a global with `slurm_shares = true` reads them at start: with a
/// job of each account attached through a local, the pool's tree weighs phys and chem
/// 7 to 3 (root's own user is their sibling, so each is its share over 11) and divides
/// the pool's capacity so. Then `sacctmgr modify` gives chem 1 and a SIGHUP puts 7 to
/// 1 in force. No slurmctld: `sacctmgr` asks slurmdbd.
#[test]
fn a_real_slurms_association_shares_are_in_force_at_start_and_after_sighup() {
    let dir = tmp_dir();
    let d = dir.path();
    let started = std::time::Instant::now();
    let db = SlurmDb::start(&d.join("slurm"));
    db.admin(&["add", "cluster", "sluice"]);
    db.admin(&["add", "account", "phys", "fairshare=7"]);
    db.admin(&["add", "account", "chem", "fairshare=3"]);
    db.admin(&["add", "user", "alice", "account=phys"]);
    db.admin(&["add", "user", "carol", "account=chem"]);
    let assoc = db.sacctmgr(&[
        "-nP",
        "show",
        "assoc",
        "format=account,user,share,parentname",
    ]);
    // What the global will read, for the record of a failure.
    eprintln!("{}", String::from_utf8_lossy(&assoc.stdout));
    let env = [("SLURM_CONF", db.conf.clone())];
    let (mut global, url) = global_with_config(d, "global", SLURM_SHARES_CONFIG, &env);
    assert!(
        logged(&global, &["shares read from Slurm's associations"]),
        "{}",
        global.log_text()
    );
    let n = d.join("n");
    std::fs::create_dir_all(&n).unwrap();
    let local = Local::start(&n, "", &["--global", &url], None);
    let connected = wait_for(Duration::from_secs(10), || {
        local
            .daemon
            .log_text()
            .contains("connected to the global controller")
    });
    assert!(connected, "{}", local.daemon.log_text());
    let _jobs = Killed(
        ["phys", "chem"]
            .iter()
            .map(|a| local.job(&format!("J-{a}"), &["--account", a], &["sleep", "30"]))
            .collect(),
    );
    let ratio_is = |want: f64| {
        let mut last = Value::Null;
        let seen = wait_for(Duration::from_secs(10), || {
            last = local.pools();
            // The pool's whole capacity, idle as it is, divided by the shares.
            match (account_node(&last, "phys"), account_node(&last, "chem")) {
                (Some((pw, pa)), Some((cw, ca))) if cw > 0.0 && ca > 0.0 => {
                    (pw / cw - want).abs() < 1e-6 && (pa / ca - want).abs() < 0.01 * want
                }
                _ => false,
            }
        });
        (seen, last)
    };
    let (seen, pools) = ratio_is(7.0 / 3.0);
    assert!(seen, "phys and chem never weighed 7 to 3: {pools}");
    assert!(
        (account_node(&pools, "phys").unwrap().0 - 7.0 / 11.0).abs() < 1e-6,
        "{pools}"
    );
    let tree = local.admin(&["jobs", "--tree"]);
    let tree = String::from_utf8_lossy(&tree.stdout).into_owned();
    eprintln!("{tree}");
    assert!(
        tree.contains("account=phys") && tree.contains("0.636"),
        "{tree}"
    );
    db.admin(&["modify", "account", "chem", "set", "fairshare=1"]);
    global.signal(libc::SIGHUP);
    let (seen, pools) = ratio_is(7.0);
    assert!(
        seen,
        "after SIGHUP, phys and chem never weighed 7 to 1: {pools}"
    );
    global.terminate(Duration::from_secs(10));
    eprintln!("the whole test took {:?}", started.elapsed());
}
