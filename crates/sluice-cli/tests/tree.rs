//! Hierarchical fair share with real daemons: a global and two locals in network
//! namespaces, a pool divided down `account,user,job`, six saturated jobs of three users
//! in two accounts (shares 70/30) and 1 to 8 nodes, placed on both nodes; and a global
//! reading Slurm's association shares at start and on SIGHUP.

mod common;

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use common::daemons::{
    Daemon, call_times, free_port, monotonic_ns, rate_between, wait_answers, wait_for,
};
use common::net::Cluster;
use common::{Scratch, c_prog, path_str, sluice_bin, tmp_dir};
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

/// A global with `slurm_shares = true` and the configuration `config`, its log in
/// `dir/NAME.log`, the environment given `env` (`sacctmgr` is looked up on its PATH).
fn global_with_env(dir: &Path, name: &str, env: &[(&str, String)]) -> Daemon {
    let config = dir.join("global.toml");
    std::fs::write(
        &config,
        "slurm_shares = true\n\n[[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\n\
         capacity = \"6k/s\"\ntree = \"account,user,job\"\n\n[shares.account]\nphys = 2\n",
    )
    .unwrap();
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
    wait_answers(&global, &format!("http://{listen}"));
    global
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

/// Slurm's shares at start and on SIGHUP. The Slurm the tests run keeps no accounts:
/// there is no slurmdbd here (Debian's `slurmdbd` and a MariaDB for it are not
/// installed; slurm.rs runs `AccountingStorageType=accounting_storage/none`), and the
/// real `sacctmgr` refuses to list associations without it: with such a configuration
/// the global logs its refusal and keeps the shares in force. Then a stand-in on the
/// PATH prints associations the way the real one's `-nP` does (`--noheader`,
/// `--parsable2`: fields between `|`, none at the end; a share of `parent` and the root
/// account with none, as sacctmgr shows them), checks it was asked exactly that, and
/// the global reads them at start and again on SIGHUP, once they changed.
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
