//! A node where sluice is installed, without touching the machine: a mount and network
//! namespace (held by a sleeping process) where an installed tree's /usr, /etc and /var
//! lie over the machine's (overlayfs, with every write kept on a temp tmpfs), /run is a
//! tmpfs of its own with the local's runtime directory, and the units' `sluice-head`
//! names loopback. Commands and daemons run inside as root, as the units run them.
//!
//! Needs root (mounts, and the users a postinst adds exist only inside).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use tempfile::TempDir;

use super::daemons::wait_for;
use super::{path_str, shm_dir};

/// A command's stdout and stderr, for a failure's message.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `cmd`, asserts it succeeded and returns its stdout.
pub fn run(cmd: &mut Command) -> String {
    let o = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(o.status.success(), "{cmd:?} failed: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Whether this process is root; says the test is skipped when not.
pub fn needs_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped: needs root for mount namespaces and users");
    }
    root
}

/// The namespaces, with `root`'s usr/, etc/ and var/ laid over the machine's.
pub struct Installed {
    holder: Child,
    /// The installed tree (an unpacked package, or a layout made like one).
    pub root: TempDir,
    _writes: TempDir,
}

impl Installed {
    /// `root` (which holds usr/, etc/ and var/) laid over the machine in namespaces of
    /// their own; nothing of the package's scripts run yet.
    pub fn new(root: TempDir) -> Installed {
        let writes = shm_dir();
        let holder = Command::new("unshare")
            .args([
                "--mount",
                "--net",
                "--propagation",
                "private",
                "sleep",
                "600",
            ])
            .spawn()
            .expect("cannot run unshare");
        let installed = Installed {
            holder,
            root,
            _writes: writes,
        };
        // Nothing is mounted before the holder is in namespaces of its own: entered
        // earlier, its namespaces would be this machine's.
        let ns = |pid: &str, kind: &str| std::fs::read_link(format!("/proc/{pid}/ns/{kind}")).ok();
        let pid = installed.holder.id().to_string();
        let apart = wait_for(Duration::from_secs(10), || {
            ["mnt", "net"]
                .iter()
                .all(|k| ns(&pid, k).is_some_and(|n| Some(n) != ns("self", k)))
        });
        assert!(apart, "unshare never made its namespaces");
        let (r, w) = (
            path_str(installed.root.path()),
            path_str(installed._writes.path()),
        );
        let overlay = |dir: &str| {
            format!(
                "mkdir -p {w}{dir}.up {w}{dir}.work && mount -t overlay overlay \
                 -o lowerdir={r}{dir}:{dir},upperdir={w}{dir}.up,workdir={w}{dir}.work {dir}"
            )
        };
        // A global reached by its units' name, sluice-head; a /run of its own, with the
        // RuntimeDirectory= of the local's unit.
        let setup = format!(
            "set -e; ip link set lo up; {}; {}; {}; mount -t tmpfs tmpfs /run; \
             mkdir /run/sluice; echo '127.0.0.1 sluice-head' >> /etc/hosts",
            overlay("/usr"),
            overlay("/etc"),
            overlay("/var"),
        );
        installed.sh(&setup);
        installed
    }

    /// The process whose namespaces these are (`nsenter -t PID -m -n`).
    pub fn pid(&self) -> u32 {
        self.holder.id()
    }

    /// `CMD…` inside the namespace, as root.
    pub fn command(&self, cmd: &[&str]) -> Command {
        let mut c = Command::new("nsenter");
        c.arg("-t")
            .arg(self.pid().to_string())
            .args(["-m", "-n", "--"])
            .args(cmd)
            .env_remove("SLUICE_STAGE")
            .env_remove("SLUICE_SOCKET")
            .stdin(Stdio::null());
        c
    }

    /// `sh -c SCRIPT` inside the namespace, as root; its stdout.
    pub fn sh(&self, script: &str) -> String {
        run(&mut self.command(&["sh", "-c", script]))
    }

    /// What a site does before installing (the deployment guide): the cluster's token in
    /// /etc/sluice/token, root's and 0600, and the admin group the shipped configuration
    /// names, hpcadm.
    pub fn prepare_site(&self) {
        self.sh("set -e; umask 077; mkdir -p /etc/sluice; \
             head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > /etc/sluice/token; \
             groupadd hpcadm");
    }

    /// A daemon started by the command line of its unit's `ExecStart=`, as written, and
    /// as `user` (the unit's `User=`), logging to `log`.
    pub fn daemon(&self, unit: &str, user: Option<&str>, log: &Path) -> Running {
        let text =
            std::fs::read_to_string(self.root.path().join("usr/lib/systemd/system").join(unit))
                .expect("unit");
        let exec = text
            .lines()
            .find_map(|l| l.strip_prefix("ExecStart="))
            .expect("ExecStart=");
        let mut cmd = vec![];
        if let Some(u) = user {
            cmd.extend(["setpriv", "--reuid", u, "--regid", u, "--init-groups", "--"]);
        }
        cmd.extend(exec.split_whitespace());
        let child = self
            .command(&cmd)
            .env("SLUICE_LOG_LEVEL", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).expect("log"))
            .spawn()
            .expect("cannot start the daemon");
        Running(child, log.to_owned())
    }

    /// The global (as the `sluice` user its unit names) and the local of the installed
    /// units, logging into `logs`; once the local is the global's, as `sluice status` on
    /// the local's socket says.
    pub fn controllers(&self, logs: &Path) -> [Running; 2] {
        let global = self.daemon(
            "sluice-global.service",
            Some("sluice"),
            &logs.join("global.log"),
        );
        let local = self.daemon("sluice-local.service", None, &logs.join("local.log"));
        let status = || {
            self.command(&["/usr/bin/sluice", "status", "--json"])
                .output()
                .expect("sluice status")
        };
        let connected = wait_for(Duration::from_secs(20), || {
            let o = status();
            o.status.success()
                && serde_json::from_slice::<serde_json::Value>(&o.stdout)
                    .is_ok_and(|v| v["locals"].as_u64().unwrap_or(0) >= 1)
        });
        assert!(
            connected,
            "the local never reached the global: {}\nglobal: {}\nlocal: {}",
            text(&status()),
            global.log(),
            local.log()
        );
        [global, local]
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        // The namespaces, their mounts and the user made inside go with their last process.
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

/// A daemon and its log; killed when dropped.
pub struct Running(Child, PathBuf);

impl Running {
    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.1).unwrap_or_default()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
