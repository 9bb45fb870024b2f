//! Controller configurations checked before use: `sluice config check` passes a good
//! global or local file and says which it checked; a bad file fails it with the very
//! line (and exit code) the daemon gives when started with it, an unknown admin group or
//! user among them; a daemon refuses a missing file unless told `--config none`; and
//! `sluice rule check --file` sends a controller configuration to `config check`.

use crate::common;

use common::daemons::{Local, daemon_dir, start_global};
use common::{path_str, sluice_bin, tmp_dir};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `sluice ARGS…`, no input.
fn sluice(args: &[&str]) -> Output {
    Command::new(sluice_bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A token file the daemons accept (mode 0600), in `dir`.
fn token(dir: &Path) -> String {
    let path = dir.join("token");
    std::fs::write(&path, "s3cret-token\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path_str(&path)
}

const POOL: &str =
    "[[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\ncapacity = \"5k/s\"\nalgorithm = \"psfa\"\n";

#[test]
fn config_check_passes_a_good_global_and_local_file_and_says_which_it_checked() {
    let dir = tmp_dir();
    let token = token(dir.path());
    let global = dir.path().join("global.toml");
    std::fs::write(
        &global,
        format!(
            "interval = \"500ms\"\n\n[admin]\ngroup = \"root\"\nusers = [\"nobody\"]\n\
             token_file = \"{token}\"\n\n{POOL}\n[[rule]]\nrule = \"st: op=getattr rate=1k/s\"\n"
        ),
    )
    .unwrap();
    let local = dir.path().join("local.toml");
    std::fs::write(&local, "[admin]\ngroup = \"root\"\n").unwrap();

    let o = sluice(&["config", "check", &path_str(&global)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(
        out.contains("a valid global configuration (inferred from its contents")
            && out.contains("1 pool(s), 1 rule(s)")
            && out.contains("changes by root, nobody, group root"),
        "{out}"
    );
    let o = sluice(&["config", "check", &path_str(&local)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(
        out.contains("a valid local configuration (inferred"),
        "{out}"
    );
    // A global's file checked as a local's: valid, with what a local ignores of it.
    let o = sluice(&["config", "check", "--role", "local", &path_str(&global)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(
        out.contains("a valid local configuration:") && out.contains("note: pools, rules"),
        "{out}"
    );
}

/// The last line a daemon wrote on stderr before it exited, and its exit code.
fn daemon_refusal(args: &[String]) -> (Option<i32>, String) {
    let o = Command::new(sluice_bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = text(&o.stderr);
    let last = err.trim().lines().last().unwrap_or_default().to_owned();
    (o.status.code(), last)
}

#[test]
fn config_check_fails_a_bad_file_with_the_daemon_s_own_line_and_code() {
    let dir = tmp_dir();
    let open_token = dir.path().join("open-token");
    std::fs::write(&open_token, "s3cret-token\n").unwrap();
    std::fs::set_permissions(&open_token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let cases = [
        ("global", "intervall = \"1s\"\n", "unknown field", 2),
        (
            "global",
            "[[pool]]\nname = \"md\"\ncapacity = \"5 per s\"\nalgorithm = \"psfa\"\n",
            "capacity",
            2,
        ),
        (
            "global",
            "[admin]\ngroup = \"nosuchgroup-sluice\"\n",
            ":2: admin: group: no group \"nosuchgroup-sluice\" on this host",
            2,
        ),
        (
            "local",
            "\n[admin]\nusers = [\"root\", \"nosuchuser-sluice\"]\n",
            ":3: admin: users: no user \"nosuchuser-sluice\" on this host",
            2,
        ),
        (
            "local",
            &format!("[admin]\ntoken_file = \"{}\"\n", path_str(&open_token)),
            "open-token",
            1,
        ),
    ];
    for (i, (role, file_text, expected, code)) in cases.iter().enumerate() {
        let file = dir.path().join(format!("{i}.toml"));
        std::fs::write(&file, file_text).unwrap();
        let o = sluice(&["config", "check", &path_str(&file)]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(*code), "case {i}: {err}");
        assert_eq!(err.lines().count(), 1, "case {i}: {err}");
        assert!(err.contains(expected), "case {i}: {err}");
        let state = path_str(&dir.path().join(format!("state{i}")));
        let mut args: Vec<String> = match *role {
            "global" => vec!["global".into(), "--listen".into(), "127.0.0.1:0".into()],
            _ => vec![
                "local".into(),
                "--socket".into(),
                path_str(&dir.path().join(format!("{i}.sock"))),
            ],
        };
        args.extend([
            "--state-dir".into(),
            state,
            "--config".into(),
            path_str(&file),
        ]);
        let (daemon_code, line) = daemon_refusal(&args);
        assert_eq!(daemon_code, Some(*code), "case {i} ({role}): {line}");
        assert_eq!(line, err.trim(), "case {i} ({role})");
        eprintln!("{role}: {line}");
    }
}

#[test]
fn a_daemon_refuses_a_missing_config_file_unless_told_none() {
    let dir = daemon_dir();
    let missing = path_str(&dir.path().join("missing.toml"));
    let state = path_str(&dir.path().join("state"));
    let socket = path_str(&dir.path().join("x.sock"));
    for args in [
        vec!["global", "--listen", "127.0.0.1:0"],
        vec!["local", "--socket", &socket],
    ] {
        let mut args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        args.extend(["--state-dir".into(), state.clone()]);
        let mut given = args.clone();
        given.extend(["--config".into(), missing.clone()]);
        let (code, line) = daemon_refusal(&given);
        assert_eq!(code, Some(2), "{given:?}: {line}");
        assert_eq!(
            line,
            format!(
                "sluice: {missing}: no such configuration file (`--config none` starts \
                 without one)"
            )
        );
        // No --config: the default file in /etc/sluice, where this machine has none.
        let default = format!("/etc/sluice/{}.toml", args[0]);
        if !Path::new(&default).exists() {
            let (code, line) = daemon_refusal(&args);
            assert_eq!(code, Some(2), "{args:?}: {line}");
            assert!(line.contains(&default), "{line}");
        }
    }
    // `--config none`: both start (the helpers give it to every daemon without a file).
    let local = Local::without_config(dir.path(), &["--node", "n1"], None);
    assert!(local.admin(&["status"]).status.success());
    let (_global, url) = start_global(dir.path(), &["--config", "none"]);
    assert!(sluice(&["status", "--server", &url]).status.success());
}

#[test]
fn rule_check_sends_a_controller_configuration_to_config_check() {
    let dir = tmp_dir();
    let file = dir.path().join("global.toml");
    std::fs::write(&file, format!("interval = \"1s\"\n\n{POOL}")).unwrap();
    let o = sluice(&["rule", "check", "--file", &path_str(&file)]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("is a controller configuration")
            && err.contains(&format!("sluice config check {}", path_str(&file))),
        "{err}"
    );
}
