//! Shared helpers of the integration tests: find the release binaries, compile the C
//! programs of `tests/c`, run a command under `sluice run`, and read its `--stats`.
//!
//! Every module of the test binary (tests/integration.rs) uses a part of it.
#![allow(dead_code)]

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::Mutex;

pub mod daemons;
pub mod installed;
pub mod net;

use serde_json::Value;
use tempfile::TempDir;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// Where `sluice` and `libsluice_stage.so` are: `SLUICE_BIN_DIR`, else target/release.
pub fn bin_dir() -> PathBuf {
    let dir = std::env::var_os("SLUICE_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/release"));
    for f in ["sluice", "libsluice_stage.so"] {
        assert!(
            dir.join(f).is_file(),
            "{} not found: run `make` (cargo build --release) first",
            dir.join(f).display()
        );
    }
    dir
}

/// The `sluice` binary.
pub fn sluice_bin() -> PathBuf {
    bin_dir().join("sluice")
}

/// The stage library.
pub fn stage_lib() -> PathBuf {
    bin_dir().join("libsluice_stage.so")
}

/// A fresh directory on tmpfs (/dev/shm), removed when dropped.
pub fn shm_dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("sluice-test.")
        .tempdir_in("/dev/shm")
        .expect("tempdir in /dev/shm")
}

/// Lets every user into `dir` with `mode` (temp directories are 0700): for tests whose
/// launchers run as other users.
pub fn open_to_all(dir: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("cannot chmod {}: {e}", dir.display()));
}

/// A fresh directory under /tmp (not tmpfs on every machine), removed when dropped.
pub fn tmp_dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("sluice-test.")
        .tempdir()
        .expect("tempdir")
}

/// A managed directory on tmpfs holding a one-byte file `f`.
pub struct Scratch {
    /// The directory, removed when dropped.
    pub dir: TempDir,
    /// `dir/f`.
    pub file: String,
}

impl Scratch {
    /// A new directory and its file.
    pub fn new() -> Self {
        let dir = shm_dir();
        let file = file_in(dir.path(), "f", "x");
        Scratch { dir, file }
    }

    /// `dir/name`, which need not exist.
    pub fn path(&self, name: &str) -> String {
        path_str(&self.dir.path().join(name))
    }

    /// `sluice run --mount DIR`.
    pub fn sluice(&self) -> Sluice {
        Sluice::run().mount(self.dir.path())
    }
}

/// A path for the stage's log (`SLUICE_LOG`) in a directory removed when dropped.
pub fn log_file() -> (TempDir, String) {
    let dir = tmp_dir();
    let log = path_str(&dir.path().join("stage.log"));
    (dir, log)
}

/// Creates `dir/name` with `text` (outside any stage) and returns its path as a string.
pub fn file_in(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", p.display()));
    path_str(&p)
}

/// A path as a `String` (the tests' paths are UTF-8).
pub fn path_str(p: &Path) -> String {
    p.to_str().expect("UTF-8 path").to_owned()
}

/// munged in the foreground on a socket of its own, `munge.sock` in `dir` (beside its
/// pid, log and seed files), for a private Slurm: its argument vector.
pub fn munged_argv(dir: &Path) -> Vec<String> {
    let d = path_str(dir);
    vec![
        "munged".to_owned(),
        "-F".to_owned(),
        "--force".to_owned(),
        format!("--socket={d}/munge.sock"),
        format!("--pid-file={d}/munged.pid"),
        format!("--log-file={d}/munged.log"),
        format!("--seed-file={d}/munged.seed"),
    ]
}

/// Compiles `tests/c/NAME.c` with `cc -O2 -pthread` (plus `extra` flags); returns the
/// program's path. Programs live in cargo's temp dir for integration tests, named by a
/// hash of their source and flags: each is compiled once, and again only when it changes.
pub fn c_prog_with(name: &str, extra: &[&str]) -> String {
    static LOCK: Mutex<()> = Mutex::new(());
    let src = workspace().join("tests/c").join(format!("{name}.c"));
    let text = std::fs::read(&src).unwrap_or_else(|e| panic!("cannot read {}: {e}", src.display()));
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&text, extra).hash(&mut h);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sluice-cprog");
    let exe = path_str(&dir.join(format!("{name}-{:016x}", h.finish())));
    let _one_at_a_time = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if Path::new(&exe).is_file() {
        return exe;
    }
    std::fs::create_dir_all(&dir).expect("cannot create the C programs' dir");
    // Compile to a name of this process's, then rename: another test binary may be at it too.
    let tmp = format!("{exe}.{}", std::process::id());
    let o = Command::new("cc")
        .args(["-O2", "-pthread", "-Wall", "-Werror"])
        .args(extra)
        .args(["-o", &tmp])
        .arg(&src)
        .output()
        .expect("cannot run cc");
    assert!(
        o.status.success(),
        "cc {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::rename(&tmp, &exe).expect("cannot move the compiled program in place");
    exe
}

/// [`c_prog_with`] without extra flags.
pub fn c_prog(name: &str) -> String {
    c_prog_with(name, &[])
}

/// The `--stats` report of a run.
#[derive(Debug)]
pub struct Stats(pub Value);

impl Stats {
    fn num(v: &Value, what: &str) -> u64 {
        v.as_u64()
            .unwrap_or_else(|| panic!("stats: {what} is not a count: {v}"))
    }

    /// Calls counted for operation `op`.
    pub fn calls(&self, op: &str) -> u64 {
        Self::num(&self.0["ops"][op]["calls"], &format!("ops.{op}.calls"))
    }

    /// Bytes counted for operation `op`.
    pub fn bytes(&self, op: &str) -> u64 {
        Self::num(&self.0["ops"][op]["bytes"], &format!("ops.{op}.bytes"))
    }

    /// Calls on unmanaged targets.
    pub fn unmanaged(&self) -> u64 {
        Self::num(&self.0["unmanaged"], "unmanaged")
    }

    /// Every operation with its call count, in report order.
    pub fn all_calls(&self) -> Vec<(String, u64)> {
        let ops = self.0["ops"].as_object().expect("stats: ops is an object");
        ops.iter()
            .map(|(k, v)| (k.clone(), Self::num(&v["calls"], k)))
            .collect()
    }

    /// Field `field` (admitted, bytes, wait_ns) of rule `i`.
    pub fn rule(&self, i: usize, field: &str) -> u64 {
        Self::num(&self.0["rules"][i][field], &format!("rules[{i}].{field}"))
    }

    /// Rule `i` in normal form, as reported.
    pub fn rule_text(&self, i: usize) -> &str {
        self.0["rules"][i]["rule"]
            .as_str()
            .unwrap_or_else(|| panic!("stats: rules[{i}].rule missing: {}", self.0))
    }

    /// Asserts that every operation's call count is the one in `want`, and 0 for the others.
    pub fn assert_calls_exactly(&self, want: &[(&str, u64)], context: &str) {
        for (op, calls) in self.all_calls() {
            let expected = want.iter().find(|(o, _)| *o == op).map_or(0, |(_, n)| *n);
            assert_eq!(
                calls, expected,
                "{context}: ops.{op}.calls (stats: {})",
                self.0
            );
        }
    }
}

/// What a command under `sluice run` did.
#[derive(Debug)]
pub struct Run {
    /// `sluice run`'s exit status.
    pub status: ExitStatus,
    /// Its stdout (the command's).
    pub stdout: String,
    /// Its stderr (the command's, and sluice's own errors).
    pub stderr: String,
    /// The `--stats` report, when `sluice run` wrote one.
    pub stats: Option<Stats>,
    /// Wall time of the whole run.
    pub elapsed: std::time::Duration,
}

impl Run {
    /// The report; panics with the run's output when there is none.
    pub fn stats(&self) -> &Stats {
        self.stats
            .as_ref()
            .unwrap_or_else(|| panic!("no stats written; {self:?}"))
    }

    /// Asserts the run exited 0 and returns the report.
    pub fn ok(&self) -> &Stats {
        assert!(self.status.success(), "sluice run failed: {self:?}");
        self.stats()
    }

    /// [`Run::ok`], by value.
    pub fn into_stats(self) -> Stats {
        self.ok();
        self.stats.unwrap()
    }
}

/// A `sluice run` command line being built.
#[derive(Default)]
pub struct Sluice {
    args: Vec<String>,
    env: HashMap<String, String>,
}

impl Sluice {
    /// `sluice run` with no options yet.
    pub fn run() -> Self {
        Self::default()
    }

    /// Adds `--mount PATH`.
    pub fn mount(mut self, p: impl AsRef<Path>) -> Self {
        self.args.extend(["--mount".into(), path_str(p.as_ref())]);
        self
    }

    /// Adds `--rule RULE`.
    pub fn rule(mut self, r: &str) -> Self {
        self.args.extend(["--rule".into(), r.into()]);
        self
    }

    /// Adds any other options.
    pub fn args<S: AsRef<str>>(mut self, a: &[S]) -> Self {
        self.args.extend(a.iter().map(|s| s.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable for `sluice run` (and so for the command).
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.insert(k.into(), v.into());
        self
    }

    /// The full command line, `--stats FILE` included when `stats` is given.
    pub fn command<S: AsRef<str>>(&self, stats: Option<&Path>, cmd: &[S]) -> Command {
        let mut c = Command::new(sluice_bin());
        // The stage next to the binary under test, whatever the caller's environment says.
        c.env("SLUICE_STAGE", stage_lib())
            .arg("run")
            .args(&self.args);
        if let Some(s) = stats {
            c.arg("--stats").arg(s);
        }
        c.arg("--")
            .args(cmd.iter().map(|s| s.as_ref()))
            .envs(&self.env)
            .stdin(Stdio::null());
        c
    }

    /// Runs `cmd` under `sluice run … --stats FILE` and waits for it.
    pub fn exec<S: AsRef<str>>(&self, cmd: &[S]) -> Run {
        let dir = tmp_dir();
        let stats_path = dir.path().join("stats.json");
        let start = std::time::Instant::now();
        let out = self
            .command(Some(&stats_path), cmd)
            .output()
            .expect("cannot run sluice");
        let elapsed = start.elapsed();
        let stats = std::fs::read_to_string(&stats_path).ok().map(|t| {
            Stats(
                serde_json::from_str(&t)
                    .unwrap_or_else(|e| panic!("stats are not JSON ({e}): {t}")),
            )
        });
        let (status, stdout, stderr) = split(out);
        Run {
            status,
            stdout,
            stderr,
            stats,
            elapsed,
        }
    }
}

/// A command's standard output, after checking that it succeeded (its standard error
/// in the failure otherwise).
pub fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// An `Output` as status and text.
pub fn split(o: Output) -> (ExitStatus, String, String) {
    (
        o.status,
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs `cmd` directly (no `sluice run`), with extra environment; returns its output.
pub fn direct<S: AsRef<str>>(cmd: &[S], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(cmd[0].as_ref());
    c.args(cmd[1..].iter().map(|s| s.as_ref()))
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", cmd[0].as_ref()))
}

/// An array of `String`s from displayable items: a command line.
#[macro_export]
macro_rules! argv {
    ($($a:expr),* $(,)?) => { [$(::std::string::ToString::to_string(&$a)),*] };
}
