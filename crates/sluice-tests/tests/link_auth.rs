//! The link between locals and their global, authenticated: a global that requires the
//! cluster's token or a client certificate refuses a local without it (logged by both,
//! the local's reports counted nowhere), and admits one with it. Real daemons on
//! loopback; certificates made with the openssl commands of docs/deploy.md.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::Duration;

use common::daemons::{Daemon, Local, daemon_dir, free_port, share, wait_for};
use common::{Scratch, c_prog, path_str, sluice_bin, tmp_dir};
use serde_json::Value;

static SERIAL: Mutex<()> = Mutex::new(());

/// The pool every test's global divides: a job alone in it is allocated all of it.
const POOL: &str = "interval = \"500ms\"\n\n[[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\n\
                    capacity = \"4k/s\"\nalgorithm = \"psfa\"\nmin_share = 0.0\n";

/// What the global's log says of one refused local (peer, claimed node, why).
const REFUSED: &str = "link refused";
/// What a refused local's log says, once.
const LOCAL_REFUSED: &str = "no session with the global controller";

/// `sluice global` on a free loopback port with `config` (its [admin] table and POOL),
/// once it answers at `url` (http://127.0.0.1:PORT or https://localhost:PORT); `admin`
/// holds the options an admin command needs to reach it.
struct Global {
    daemon: Daemon,
    url: String,
    admin: Vec<String>,
}

impl Global {
    fn start(dir: &Path, admin_table: &str, tls: Option<&Path>) -> Global {
        let config = dir.join("global.toml");
        std::fs::write(&config, format!("{POOL}\n[admin]\n{admin_table}\n")).unwrap();
        let port = free_port();
        let url = match tls {
            Some(_) => format!("https://localhost:{port}"),
            None => format!("http://127.0.0.1:{port}"),
        };
        let mut admin = vec!["--server".to_owned(), url.clone()];
        if let Some(ca) = tls {
            admin.extend(["--ca".to_owned(), path_str(ca)]);
        }
        let args = [
            "global",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--config",
            &path_str(&config),
            "--state-dir",
            &path_str(&dir.join("global-state")),
        ]
        .map(str::to_owned);
        let daemon = Daemon::start(None, &args, dir.join("global.log"));
        let global = Global { daemon, url, admin };
        let answers = wait_for(Duration::from_secs(10), || global.status().is_some());
        assert!(answers, "the global never answered: {}", global.log());
        global
    }

    /// `sluice ARGS… --server URL [--ca CA]`.
    fn sluice(&self, args: &[&str]) -> Output {
        Command::new(sluice_bin())
            .args(args)
            .args(&self.admin)
            .output()
            .expect("sluice")
    }

    /// `sluice status --json`, from the global itself.
    fn status(&self) -> Option<Value> {
        let o = self.sluice(&["status", "--json"]);
        serde_json::from_slice(&o.stdout).ok()
    }

    /// The local controllers connected to it.
    fn locals(&self) -> u64 {
        self.status()
            .and_then(|s| s["locals"].as_u64())
            .unwrap_or(0)
    }

    /// `sluice jobs --json`, from the global itself.
    fn jobs(&self) -> Value {
        let o = self.sluice(&["jobs", "--json"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    }

    fn log(&self) -> String {
        self.daemon.log_text()
    }

    /// Its log lines that refuse the local claiming to be `node`.
    fn refusals_of(&self, node: &str) -> Vec<String> {
        let claimed = format!("node=\"{node}\"");
        self.log()
            .lines()
            .filter(|l| l.contains(REFUSED) && l.contains(&claimed))
            .map(str::to_owned)
            .collect()
    }
}

/// A local named `node` in its own directory under `dir`, for the global at `url`, with
/// `extra` arguments (its credentials).
fn local(dir: &Path, node: &str, url: &str, extra: &[&str]) -> Local {
    let d = dir.join(node);
    std::fs::create_dir_all(&d).unwrap();
    let args: Vec<&str> = ["--global", url, "--node", node]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    Local::start(&d, "", &args, None)
}

/// A local like [`local`]'s, not waited for: its admin commands, which go through the
/// global, may be refused too.
fn local_unchecked(dir: &Path, node: &str, url: &str, extra: &[&str]) -> Daemon {
    let d = dir.join(node);
    std::fs::create_dir_all(&d).unwrap();
    let at = |name: &str| path_str(&d.join(name));
    let args: Vec<String> = [
        "local",
        "--shm-dir",
        &at("shm"),
        "--socket",
        &at("local.sock"),
        "--state-dir",
        &at("state"),
        "--global",
        url,
        "--node",
        node,
    ]
    .into_iter()
    .chain(extra.iter().copied())
    .map(str::to_owned)
    .collect();
    Daemon::start(None, &args, d.join("local.log"))
}

/// The lines of a local's log that say the global refuses it.
fn told(local: &Daemon) -> Vec<String> {
    local
        .log_text()
        .lines()
        .filter(|l| l.contains(LOCAL_REFUSED))
        .map(str::to_owned)
        .collect()
}

/// Checks that `local` said exactly once that it has no session, with `what`, however
/// many times it tried.
fn assert_told_once(local: &Daemon, what: &str) {
    let said = told(local);
    assert_eq!(said.len(), 1, "said once: {}", local.log_text());
    assert!(said[0].contains(what), "{}", said[0]);
}

/// Waits until the global's log has three lines with `what` and a peer's address.
fn wait_logged_thrice(global: &Global, what: &str) {
    let logged = wait_for(Duration::from_secs(10), || {
        let lines = global.log();
        let found = lines
            .lines()
            .filter(|l| l.contains(what) && l.contains("from=\"127.0.0.1:"));
        found.count() >= 3
    });
    assert!(logged, "not thrice {what:?}: {}", global.log());
}

/// Waits until the global has refused `node` at least three times (three attempts of
/// its backoff), then checks that the global logged each with the peer's address and
/// `why`, and that the local said so exactly once, with `advice`.
fn assert_refused(global: &Global, node: &Daemon, name: &str, why: &str, advice: &str) {
    let retried = wait_for(Duration::from_secs(10), || {
        global.refusals_of(name).len() >= 3
    });
    assert!(
        retried,
        "{name} was not refused three times: {}",
        global.log()
    );
    for line in global.refusals_of(name) {
        // An audit line: the address the stream came from.
        assert!(line.contains("from=\"127.0.0.1:"), "{line}");
        assert!(line.contains(why), "{line}");
    }
    assert_told_once(node, advice);
}

/// A file holding `text`, mode 0600 as read_token_file requires.
fn secret(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path_str(&path)
}

/// A global requiring the token; one local with it, one without, one with another token,
/// each running a job that wants more than the pool. The two without the token are
/// refused at every attempt, logged by the global with their address and the node they
/// claim, and say so once; their jobs run on (unthrottled, as they were) and count for
/// nothing: the admitted local's job is allocated the whole pool, and the global knows one
/// local and one job.
#[test]
fn a_local_without_the_token_is_refused_and_one_with_it_admitted() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let token = secret(dir.path(), "token", "c1uster-t0ken\n");
    let wrong = secret(dir.path(), "wrong", "c1uster-t0kem\n");
    let global = Global::start(dir.path(), &format!("token_file = \"{token}\""), None);
    let good = local(dir.path(), "good", &global.url, &["--token-file", &token]);
    let rogue = local(dir.path(), "rogue", &global.url, &[]);
    let guesser = local(
        dir.path(),
        "guesser",
        &global.url,
        &["--token-file", &wrong],
    );

    let s = Scratch::new();
    let rate = c_prog("rate");
    let outs = [tmp_dir(), tmp_dir(), tmp_dir()];
    let mut jobs: Vec<_> = [(&good, "G"), (&rogue, "R"), (&guesser, "W")]
        .into_iter()
        .zip(&outs)
        .map(|((l, job), out)| {
            l.job(
                job,
                &["--mount", &s.file],
                &[&rate, "one", &s.file, &path_str(out.path()), "6000"],
            )
        })
        .collect();

    assert_refused(
        &global,
        &rogue.daemon,
        "rogue",
        "missing bearer token",
        "start the local with --token-file",
    );
    assert_refused(
        &global,
        &guesser.daemon,
        "guesser",
        "invalid bearer token",
        "start the local with --token-file",
    );
    let whole_pool = wait_for(Duration::from_secs(5), || {
        share(&global.jobs(), "G", "md").is_some_and(|s| s.0 >= 3990.0)
    });
    let view = global.jobs();
    assert!(whole_pool, "G is not allocated the whole pool: {view}");
    let names: Vec<&Value> = view["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| &j["job"])
        .collect();
    assert_eq!(names, ["G"], "only the admitted local's job: {view}");
    assert_eq!(global.locals(), 1, "{}", global.log());
    assert!(told(&good.daemon).is_empty(), "{}", good.daemon.log_text());
    for job in &mut jobs {
        assert!(job.wait().unwrap().success());
    }
}

/// A global with no credentials configured admits a local without any, and says at
/// start, once, that it admits everyone.
#[test]
fn a_global_without_credentials_admits_everyone_and_says_so() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let global = Global::start(dir.path(), "", None);
    let _open = local(dir.path(), "open", &global.url, &[]);
    assert!(wait_for(Duration::from_secs(5), || global.locals() == 1));
    let warned = global
        .log()
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("locals are not authenticated"))
        .count();
    assert_eq!(warned, 1, "{}", global.log());
}

/// The site's certificates, made by the commands of docs/deploy.md: a CA, the global's
/// certificate (for localhost), a node's, and one made by another CA.
struct Pki {
    dir: tempfile::TempDir,
}

/// docs/deploy.md's commands as functions: `ca NAME` makes a CA, `cert NAME CN EXT CA` a
/// key and a certificate that CA signs, with the extensions in EXT.
const OPENSSL: &str = r#"
set -e
ca() {
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$1" -out "$1.csr"
  printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\n' > "$1.ext"
  openssl x509 -req -in "$1.csr" -signkey "$1.key" -days 3650 -sha256 -extfile "$1.ext" -out "$1.pem"
}
cert() {
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
  printf "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$4.pem" -CAkey "$4.key" -CAcreateserial -days 825 -sha256 -extfile "$1.ext" -out "$1.pem"
}
ca site-ca
ca other-ca
cert global localhost 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' site-ca
cert node node01 'subjectAltName=DNS:node01\nextendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n' site-ca
cert foreign node01 'subjectAltName=DNS:node01\nextendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n' other-ca
"#;

impl Pki {
    fn new() -> Option<Pki> {
        if Command::new("openssl").arg("version").output().is_err() {
            eprintln!("skipped: no openssl (tests/deps.sh installs it)");
            return None;
        }
        let dir = tmp_dir();
        let o = Command::new("sh")
            .args(["-c", OPENSSL])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        Some(Pki { dir })
    }

    fn file(&self, name: &str) -> String {
        path_str(&self.dir.path().join(name))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// Mutual TLS: a global whose locals must present a certificate signed by the site CA
/// admits the local with one; a local without a certificate is refused by the Control
/// service (logged with the node it claims), one with a certificate of another CA by the
/// handshake (logged with its address); each says so once.
#[test]
fn mutual_tls_admits_only_locals_with_a_certificate_of_the_site_ca() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(pki) = Pki::new() else { return };
    let dir = daemon_dir();
    let admin = format!(
        "tls_cert = \"{}\"\ntls_key = \"{}\"\nclient_ca = \"{}\"",
        pki.file("global.pem"),
        pki.file("global.key"),
        pki.file("site-ca.pem")
    );
    let ca = pki.path("site-ca.pem");
    let global = Global::start(dir.path(), &admin, Some(&ca));
    let ca = path_str(&ca);
    let with = |cert: &str| {
        [
            "--ca".to_owned(),
            ca.clone(),
            "--cert".to_owned(),
            pki.file(&format!("{cert}.pem")),
            "--key".to_owned(),
            pki.file(&format!("{cert}.key")),
        ]
    };
    let signed = with("node");
    let signed: Vec<&str> = signed.iter().map(String::as_str).collect();
    let foreign = with("foreign");
    let foreign: Vec<&str> = foreign.iter().map(String::as_str).collect();
    let node = local(dir.path(), "node01", &global.url, &signed);
    let bare = local(dir.path(), "bare", &global.url, &["--ca", &ca]);
    let stranger = local_unchecked(dir.path(), "stranger", &global.url, &foreign);
    let other_ca = pki.file("other-ca.pem");
    let doubter = local_unchecked(dir.path(), "doubter", &global.url, &["--ca", &other_ca]);

    assert_refused(
        &global,
        &bare.daemon,
        "bare",
        "no client certificate",
        "start the local with --cert and --key",
    );
    wait_logged_thrice(
        &global,
        "its client certificate is not signed by admin.client_ca",
    );
    assert_told_once(
        &stranger,
        "--cert must be signed by the CA in the global's admin.client_ca",
    );
    // A local that does not trust the global's certificate says so too.
    wait_logged_thrice(
        &global,
        "the client does not accept this global's certificate",
    );
    assert_told_once(&doubter, "the global's certificate is not accepted");
    assert!(wait_for(Duration::from_secs(5), || global.locals() == 1));
    assert!(told(&node.daemon).is_empty(), "{}", node.daemon.log_text());
    assert!(
        node.daemon
            .log_text()
            .contains("connected to the global controller"),
        "{}",
        node.daemon.log_text()
    );
}

/// Credentials that cannot be used stop a daemon at start, with one line naming the file
/// and what is wrong, before it listens or connects.
#[test]
fn unusable_credentials_stop_a_daemon_at_start_with_one_line() {
    let Some(pki) = Pki::new() else { return };
    let dir = daemon_dir();
    let open_key = dir.path().join("open.key");
    std::fs::copy(pki.path("node.key"), &open_key).unwrap();
    std::fs::set_permissions(&open_key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let open_key = path_str(&open_key);
    let missing = path_str(&dir.path().join("missing.pem"));
    let run = |args: &[&str]| {
        let o = Command::new(sluice_bin()).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!o.status.success(), "{args:?} started");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        err
    };
    let global = |n: usize, admin: &str| {
        let config = dir.path().join(format!("global{n}.toml"));
        std::fs::write(&config, format!("[admin]\n{admin}\n")).unwrap();
        let (listen, config) = (format!("127.0.0.1:{}", free_port()), path_str(&config));
        let state = path_str(&dir.path().join(format!("global{n}-state")));
        run(&[
            "global",
            "--listen",
            &listen,
            "--config",
            &config,
            "--state-dir",
            &state,
        ])
    };
    let cert_key = |key: &str| {
        format!(
            "tls_cert = \"{}\"\ntls_key = \"{key}\"",
            pki.file("global.pem")
        )
    };
    let cases = [
        (
            global(1, &format!("token_file = \"{missing}\"")),
            "cannot open token file",
        ),
        (
            global(
                2,
                &format!(
                    "{}\nclient_ca = \"{missing}\"",
                    cert_key(&pki.file("global.key"))
                ),
            ),
            "missing.pem",
        ),
        (global(3, &cert_key(&open_key)), "chmod 600"),
    ];
    let local = |extra: &[&str]| {
        let mut args = vec![
            "local",
            "--config",
            "none",
            "--socket",
            "/nonexistent/local.sock",
        ];
        args.extend(extra);
        run(&args)
    };
    let (ca, node) = (pki.file("site-ca.pem"), pki.file("node.pem"));
    let https = "https://localhost:1";
    let more = [
        (
            local(&[
                "--global", https, "--ca", &ca, "--cert", &missing, "--key", &open_key,
            ]),
            "missing.pem",
        ),
        (
            local(&[
                "--global", https, "--ca", &ca, "--cert", &node, "--key", &open_key,
            ]),
            "chmod 600",
        ),
        (
            local(&[
                "--global",
                "http://localhost:1",
                "--cert",
                &node,
                "--key",
                &open_key,
            ]),
            "only for https://",
        ),
        (local(&["--global", https, "--ca", &missing]), "missing.pem"),
    ];
    for (err, want) in cases.into_iter().chain(more) {
        assert!(err.contains(want), "expected {want:?} in: {err}");
    }
}
