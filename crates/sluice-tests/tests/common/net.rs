//! Nodes of a cluster on one machine: network namespaces (ip netns + veth, the addresses
//! only inside them, created and removed by the test), the global in one, a local in each
//! other.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::daemons::{Daemon, Local, daemon_dir, monotonic_ns, wait_for};
use super::path_str;

/// Three namespaces: `g` holds the global, `n1` and `n2` a local each, each node linked
/// to `g` by a veth pair of its own. Removed when dropped.
pub struct Net {
    names: [String; 3],
}

impl Net {
    pub fn new() -> Option<Net> {
        let id = std::process::id() % 10_000;
        let names = [format!("sl{id}g"), format!("sl{id}a"), format!("sl{id}b")];
        let net = Net { names };
        let [g, a, b] = &net.names;
        for ns in &net.names {
            if !ip(&["netns", "add", ns]) {
                eprintln!("skipped: cannot create network namespaces here");
                return None;
            }
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        for (i, node) in [a, b].into_iter().enumerate() {
            let (gv, nv) = (format!("{g}{i}"), format!("{node}v"));
            assert!(ip(&[
                "link", "add", &gv, "netns", g, "type", "veth", "peer", "name", &nv, "netns", node
            ]));
            assert!(ip(&[
                "-n",
                g,
                "addr",
                "add",
                &format!("10.231.{i}.1/30"),
                "dev",
                &gv
            ]));
            assert!(ip(&[
                "-n",
                node,
                "addr",
                "add",
                &format!("10.231.{i}.2/30"),
                "dev",
                &nv
            ]));
            assert!(ip(&["-n", g, "link", "set", &gv, "up"]));
            assert!(ip(&["-n", node, "link", "set", &nv, "up"]));
        }
        Some(net)
    }

    pub fn global_ns(&self) -> &str {
        &self.names[0]
    }

    pub fn node_ns(&self, i: usize) -> &str {
        &self.names[1 + i]
    }

    /// Takes node `i`'s link down or up.
    pub fn link(&self, i: usize, up: bool) {
        let dev = format!("{}{i}", self.names[0]);
        assert!(ip(&[
            "-n",
            self.global_ns(),
            "link",
            "set",
            &dev,
            if up { "up" } else { "down" }
        ]));
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in &self.names {
            ip(&["netns", "del", ns]);
        }
    }
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Waits until the global answers inside its namespace.
pub fn wait_global(net: &Net, global: &Daemon) {
    let answers = wait_for(Duration::from_secs(10), || {
        Command::new("ip")
            .args(["netns", "exec", net.global_ns()])
            .arg(super::sluice_bin())
            .args(["status", "--server", "http://127.0.0.1:7401"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    assert!(answers, "the global never answered: {}", global.log_text());
}

/// The global in its namespace on port 7401, with `dir/global.toml` and its state in
/// `dir/global-state`.
pub fn start_global(net: &Net, dir: &std::path::Path) -> Daemon {
    start_global_with(net, dir, &["--config", &path_str(&dir.join("global.toml"))])
}

/// The global in its namespace on port 7401, its state in `dir/global-state`, with
/// `extra` arguments.
pub fn start_global_with(net: &Net, dir: &std::path::Path, extra: &[&str]) -> Daemon {
    let state = path_str(&dir.join("global-state"));
    let args: Vec<String> = ["global", "--listen", "0.0.0.0:7401", "--state-dir", &state]
        .iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect();
    Daemon::start(
        Some(net.global_ns()),
        &args,
        dir.join(format!("global.{}.log", monotonic_ns())),
    )
}

/// A global in its namespace and a local on each node.
pub struct Cluster {
    pub net: Net,
    pub global: Daemon,
    pub locals: Vec<Local>,
    pub dir: tempfile::TempDir,
}

impl Cluster {
    /// The global runs `config`; with `token`, it requires a bearer token for admin
    /// changes, and the locals hold it. With `node_names` each local is given its node's
    /// name (--node); without, each takes the default, the host name, which every
    /// namespace shares: as an administrator trying sluice on one machine would start them.
    pub fn with(config: &str, token: bool, node_names: bool) -> Option<Cluster> {
        let net = Net::new()?;
        let dir = daemon_dir();
        let token_file = path_str(&dir.path().join("token"));
        let mut config = config.to_owned();
        if token {
            std::fs::write(&token_file, "cluster-token\n").unwrap();
            std::fs::set_permissions(&token_file, PermissionsExt::from_mode(0o600)).unwrap();
            config += &format!("\n[admin]\ntoken_file = \"{token_file}\"\n");
        }
        std::fs::write(dir.path().join("global.toml"), config).unwrap();
        let global = start_global(&net, dir.path());
        wait_global(&net, &global);
        let mut locals = Vec::new();
        for i in 0..2 {
            let d = dir.path().join(format!("n{i}"));
            std::fs::create_dir_all(&d).unwrap();
            let url = format!("http://10.231.{i}.1:7401");
            let node = format!("node{i}");
            let mut extra = vec!["--global", url.as_str()];
            if node_names {
                extra.extend(["--node", node.as_str()]);
            }
            if token {
                extra.extend(["--token-file", token_file.as_str()]);
            }
            locals.push(Local::start(&d, "", &extra, Some(net.node_ns(i))));
        }
        // Jobs attached before their local has the global's pools would run without
        // them for a moment: start jobs once both locals are connected.
        let connected = wait_for(Duration::from_secs(10), || {
            let said = |l: &Local| {
                l.daemon
                    .log_text()
                    .contains("connected to the global controller")
            };
            locals.iter().all(said) && (!node_names || Cluster::counted(&locals[0]) == 2)
        });
        assert!(
            connected,
            "the locals never connected: {}",
            global.log_text()
        );
        Some(Cluster {
            net,
            global,
            locals,
            dir,
        })
    }

    /// The locals the global counts, asked through `local`.
    pub fn counted(local: &Local) -> u64 {
        let o = local.admin(&["status", "--json"]);
        let status = serde_json::from_slice::<Value>(&o.stdout).unwrap_or_default();
        status["locals"].as_u64().unwrap_or(0)
    }

    /// `sluice jobs --json` asked of the global through node 0's local.
    pub fn jobs(&self) -> Value {
        self.locals[0].jobs()
    }
}
