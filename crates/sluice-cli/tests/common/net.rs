//! Nodes of a cluster on one machine: network namespaces (ip netns + veth, the addresses
//! only inside them, created and removed by the test), the global in one, a local in each
//! other.

use std::process::Command;
use std::time::Duration;

use super::daemons::{Daemon, monotonic_ns, wait_for};
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
