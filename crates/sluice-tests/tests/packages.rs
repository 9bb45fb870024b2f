//! The packages as an administrator gets them: `packaging/package.sh --native` builds the
//! .deb and the .rpm of this release build (the same description `make deb` and `make
//! rpm` package the glibc 2.17 release with), and the tests check what they install, that
//! lintian and `systemd-analyze verify` find no error, and that the unpacked tree runs as
//! the units run it: the package's own postinst makes the `sluice` user, the global runs
//! as that user with the shipped configuration and a token, a pool set with `sluice pool
//! set` holds a job, the change lands in the state directory and the site's file stays
//! byte for byte what was shipped.
//!
//! The daemons run in a mount and network namespace of their own, where the unpacked
//! /usr, /etc and /var lie over the machine's (overlayfs, with every write kept on a
//! temp tmpfs), so the units' command lines run as written and nothing of the machine
//! changes: the user the postinst adds exists only in that namespace.

use crate::common;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use common::daemons::{busiest_second, call_times, monotonic_ns, wait_for};
use common::installed::{Installed, needs_root, run, text};
use common::{Scratch, c_prog, path_str, shm_dir, tmp_dir, workspace};
use tempfile::TempDir;

/// The packages of this build, made once for every test of this file.
struct Packages {
    deb: PathBuf,
    rpm: PathBuf,
}

fn packages() -> &'static Packages {
    static PACKAGES: OnceLock<Packages> = OnceLock::new();
    PACKAGES.get_or_init(|| {
        let out = workspace().join("target/package-test");
        let _ = std::fs::remove_dir_all(&out);
        let o = Command::new("bash")
            .arg(workspace().join("packaging/package.sh"))
            .args(["--native", "--out"])
            .arg(&out)
            .args(["deb", "rpm"])
            .output()
            .expect("cannot run packaging/package.sh");
        assert!(o.status.success(), "package.sh failed: {}", text(&o));
        let find = |ext: &str| {
            std::fs::read_dir(&out)
                .expect("package dir")
                .map(|e| e.expect("entry").path())
                .find(|p| p.extension().is_some_and(|e| e == ext))
                .unwrap_or_else(|| panic!("no .{ext} made: {}", text(&o)))
        };
        Packages {
            deb: find("deb"),
            rpm: find("rpm"),
        }
    })
}

/// The .deb unpacked (`dpkg-deb -x`) into a fresh directory, with its control files
/// (`dpkg-deb -e`) in `DEBIAN/` beside.
fn unpacked_deb() -> TempDir {
    let root = tmp_dir();
    let deb = &packages().deb;
    run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(root.path()));
    run(Command::new("dpkg-deb")
        .arg("-e")
        .arg(deb)
        .arg(root.path().join("DEBIAN")));
    root
}

/// The files and links a package installs (not its directories), man pages aside.
fn files_of(listing: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let (man, files) = listing
        .lines()
        .map(str::to_owned)
        .partition(|p: &String| p.starts_with("/usr/share/man/man1/"));
    (files, man)
}

/// What the .deb holds, as `dpkg-deb -c` lists it: (files and links, man pages).
fn deb_files() -> (BTreeSet<String>, BTreeSet<String>) {
    let listing = run(Command::new("dpkg-deb").arg("-c").arg(&packages().deb));
    let paths: Vec<String> = listing
        .lines()
        .filter(|l| !l.starts_with('d'))
        .filter_map(|l| l.split_whitespace().nth(5))
        .map(|p| p.trim_start_matches('.').to_owned())
        .collect();
    files_of(&paths.join("\n"))
}

#[test]
fn the_deb_installs_the_binary_stage_plugin_units_configs_man_pages_and_completions() {
    let (files, man) = deb_files();
    for want in [
        "/usr/bin/sluice",
        "/usr/lib/sluice/sluice",
        "/usr/lib/sluice/libsluice_stage.so",
        "/usr/lib/sluice/libsluice_spank.so",
        "/usr/lib/systemd/system/sluice-global.service",
        "/usr/lib/systemd/system/sluice-local.service",
        "/etc/sluice/global.toml",
        "/etc/sluice/local.toml",
        "/etc/sluice/plugstack.conf",
        "/etc/sluice/task-prolog.sh",
        "/usr/share/bash-completion/completions/sluice",
        "/usr/share/zsh/vendor-completions/_sluice",
        "/usr/share/fish/vendor_completions.d/sluice.fish",
        "/usr/share/doc/sluice/copyright",
        "/usr/share/doc/sluice/README.md",
        "/usr/share/doc/sluice/docs/deploy.md",
    ] {
        assert!(files.contains(want), "{want} not in the .deb: {files:#?}");
    }
    for page in ["sluice.1.gz", "sluice-global.1.gz", "sluice-pool-set.1.gz"] {
        assert!(
            man.contains(&format!("/usr/share/man/man1/{page}")),
            "{page} not in the .deb: {man:#?}"
        );
    }
    // Nothing outside the one set of install paths, and no page of the hidden command.
    let paths = [
        "/usr/bin/sluice",
        "/usr/lib/sluice/",
        "/usr/lib/systemd/system/sluice-",
        "/etc/sluice/",
        "/usr/share/doc/sluice/",
        "/usr/share/bash-completion/completions/sluice",
        "/usr/share/zsh/vendor-completions/_sluice",
        "/usr/share/fish/vendor_completions.d/sluice.fish",
    ];
    for f in &files {
        assert!(
            paths.iter().any(|p| f.starts_with(p)),
            "{f} is outside the install paths"
        );
    }
    assert!(
        man.iter().all(|m| !m.contains("generate")),
        "a man page of `sluice generate`: {man:#?}"
    );

    let root = unpacked_deb();
    let r = root.path();
    let mode = |p: &str| {
        std::fs::symlink_metadata(r.join(p.trim_start_matches('/')))
            .unwrap_or_else(|e| panic!("{p}: {e}"))
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("/usr/lib/sluice/sluice"), 0o755);
    assert_eq!(mode("/usr/lib/sluice/libsluice_stage.so"), 0o644);
    assert_eq!(mode("/usr/lib/sluice/libsluice_spank.so"), 0o644);
    assert_eq!(mode("/etc/sluice/task-prolog.sh"), 0o755);
    assert_eq!(mode("/var/lib/sluice"), 0o755);
    assert_eq!(
        std::fs::read_link(r.join("usr/bin/sluice")).expect("/usr/bin/sluice is a link"),
        Path::new("../lib/sluice/sluice")
    );
    // The examples are the site's once installed: conffiles, which an upgrade keeps.
    let conffiles = std::fs::read_to_string(r.join("DEBIAN/conffiles")).expect("conffiles");
    for f in [
        "global.toml",
        "local.toml",
        "plugstack.conf",
        "task-prolog.sh",
    ] {
        assert!(
            conffiles.lines().any(|l| l == format!("/etc/sluice/{f}")),
            "/etc/sluice/{f} is not a conffile: {conffiles}"
        );
    }
    // The shipped files are the repository's.
    for (shipped, source) in [
        ("etc/sluice/global.toml", "packaging/etc/global.toml"),
        ("etc/sluice/plugstack.conf", "packaging/etc/plugstack.conf"),
        (
            "usr/lib/systemd/system/sluice-global.service",
            "packaging/systemd/sluice-global.service",
        ),
    ] {
        assert_eq!(
            std::fs::read(r.join(shipped)).expect("shipped file"),
            std::fs::read(workspace().join(source)).expect("source file"),
            "{shipped} differs from {source}"
        );
    }
}

#[test]
fn the_rpm_lists_the_same_files_as_the_deb() {
    let listing = run(Command::new("rpm")
        .args(["-qlp", "--nosignature"])
        .arg(&packages().rpm));
    let rpm = files_of(&listing);
    let (deb_files, deb_man) = deb_files();
    // zsh reads completions from each distribution's own directory.
    let deb_files: BTreeSet<String> = deb_files
        .into_iter()
        .map(|f| f.replace("/zsh/vendor-completions/", "/zsh/site-functions/"))
        .collect();
    // rpm lists the directories it owns beside the files; the .deb's we left out.
    let rpm_files: BTreeSet<String> = rpm
        .0
        .into_iter()
        .filter(|f| f != "/var/lib/sluice")
        .collect();
    assert_eq!(
        rpm_files, deb_files,
        "the .rpm's files differ from the .deb's"
    );
    assert_eq!(
        rpm.1, deb_man,
        "the .rpm's man pages differ from the .deb's"
    );
}

#[test]
fn lintian_finds_no_error_in_the_deb() {
    let o = Command::new("lintian")
        .args(["--tag-display-limit", "0"])
        .arg(&packages().deb)
        .output()
        .expect("cannot run lintian (tests/deps.sh installs it)");
    let out = text(&o);
    let errors: Vec<&str> = out.lines().filter(|l| l.starts_with("E:")).collect();
    assert!(errors.is_empty(), "lintian errors:\n{out}");
    // Warnings are allowed; they show with --nocapture.
    println!("lintian:\n{out}");
}

#[test]
fn the_installed_units_verify() {
    if !needs_root() {
        return;
    }
    // Installed, the units find what they name: /usr/bin/sluice, their man pages.
    let ns = Installed::new(unpacked_deb());
    let o = ns
        .command(&[
            "systemd-analyze",
            "verify",
            "/usr/lib/systemd/system/sluice-global.service",
            "/usr/lib/systemd/system/sluice-local.service",
        ])
        .output()
        .expect("cannot run systemd-analyze");
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "systemd-analyze verify: {}",
        text(&o)
    );
}

#[test]
fn the_installed_package_runs_a_pool_as_the_sluice_user_and_leaves_the_site_file_alone() {
    if !needs_root() {
        return;
    }
    let ns = Installed::new(unpacked_deb());
    let logs = tmp_dir();
    // The site put its token in place before installing, root's and 0600, as the
    // deployment guide once said; the site's admin group exists.
    ns.prepare_site();
    ns.sh(&format!(
        "sh {}/DEBIAN/postinst configure",
        path_str(ns.root.path())
    ));
    let owner = ns.sh("stat -c '%U:%G %a' /var/lib/sluice/global /etc/sluice/token");
    assert_eq!(
        owner, "sluice:sluice 750\nsluice:sluice 600\n",
        "what the postinst made"
    );

    let [global, local] = ns.controllers(logs.path());
    let admin = |args: &[&str]| {
        let mut cmd = vec!["/usr/bin/sluice"];
        cmd.extend(args);
        ns.command(&cmd).output().expect("sluice admin command")
    };
    // Admin commands on the local's socket go to the global.
    let o = admin(&[
        "pool",
        "set",
        "pkg-md",
        "--match",
        "op=getattr",
        "--capacity",
        "400/s",
        "--algorithm",
        "psfa",
    ]);
    assert!(
        o.status.success(),
        "sluice pool set: {}\nglobal: {}",
        text(&o),
        global.log()
    );

    // A stat loop of 4 s, launched as a user's job would be, through /usr/bin/sluice.
    let s = Scratch::new();
    let calls = shm_dir();
    let rate = c_prog("rate");
    let start = monotonic_ns();
    let job = ns
        .command(&[
            "/usr/bin/sluice",
            "run",
            "--job",
            "77",
            "--mount",
            &s.file,
            "--",
            &rate,
            "one",
            &s.file,
            &path_str(calls.path()),
            "4000",
        ])
        .output()
        .expect("the job");
    assert!(job.status.success(), "the job failed: {}", text(&job));
    let times = call_times(calls.path());
    // Past its first cycle, the pool's 400/s with its 1% of burst and a call in flight;
    // at least half of it used.
    let settled = &times[times.partition_point(|&t| t < start + 1_500_000_000)..];
    let most = busiest_second(settled);
    assert!(
        (200..=410).contains(&most),
        "{most} calls in the busiest second past the first 1.5 s ({} in all) under a \
         pool of 400/s\nlocal: {}",
        times.len(),
        local.log()
    );

    // The change is the state directory's; the site's file is as shipped.
    let saved = ns.sh("grep -rl pkg-md /var/lib/sluice/global || true");
    assert!(
        !saved.trim().is_empty(),
        "the pool is not in the state directory: {}",
        ns.sh("ls -lR /var/lib/sluice/global")
    );
    assert_eq!(
        ns.sh("cat /etc/sluice/global.toml").into_bytes(),
        std::fs::read(workspace().join("packaging/etc/global.toml")).expect("global.toml"),
        "the site's /etc/sluice/global.toml changed"
    );

    // The job has ended: the local reaps it within an interval and removes its segment
    // from the packaged --shm-dir (the machine's /dev/shm), which nothing else cleans.
    let segment = || ns.sh("ls /dev/shm | grep '^sluice\\..*\\.77$' || true");
    assert!(
        wait_for(Duration::from_secs(10), || segment().trim().is_empty()),
        "the ended job's segment is still in /dev/shm ({})\nlocal: {}",
        segment().trim(),
        local.log()
    );
}
