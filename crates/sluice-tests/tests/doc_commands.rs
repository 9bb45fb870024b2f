//! Every command of README.md and docs/admin-guide.md runs as written.
//!
//! The test reads each document's fenced blocks. A block whose language is `sh`, `bash` or
//! `shell` is run; a block of another language (`text`, `toml`, …) is not, and a block
//! with no language at all is an error, so that no command hides in one. A shell block
//! that cannot run in a test says so in an HTML comment just before it, which readers of
//! the rendered page do not see, with the reason (listed when the test runs):
//!
//! ```text
//! <!-- doc-test: not run: it needs a Slurm cluster -->
//! <!-- doc-test: exits 2 -->      the block ends in a command the doc says fails so
//! ```
//!
//! The blocks under one heading run in order in one bash session (`errexit`, `pipefail`),
//! so that one block may use what an earlier one made; whatever a session left running
//! is killed when it ends. Every block of a document runs on one node, made for it:
//!
//! - a mount and network namespace where sluice is installed as the packages install
//!   it (the release build in /usr/lib/sluice, /usr/bin/sluice, the units, the shipped
//!   /etc/sluice), with what a site adds (the cluster's token in /etc/sluice/token, the
//!   admin group `hpcadm` the shipped configuration names) and what the package's
//!   postinst makes; only loopback, a /dev/shm of its own, and every write to /usr, /etc
//!   and /var kept on a temp tmpfs;
//! - the global and the local controllers started by their units' command lines,
//!   the global as the `sluice` user, killed when the test ends;
//! - as root, with the release build's directory (target/release) first on `PATH`, in a
//!   fresh directory that looks like a checkout (a link to each of the repository's
//!   top-level entries) and holds stand-ins for the programs the documents launch
//!   (`./app`, `./simulation`: a few stats and a read).
//!
//! A document's new blocks are picked up as they are written; a command that fails fails
//! the test with the session's transcript and the controllers' logs.

use crate::common;

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use common::installed::{Installed, Running, needs_root};
use common::{bin_dir, path_str, tmp_dir, workspace};
use sluice_workload::harness::Process;
use tempfile::TempDir;

/// How long the blocks of one heading may take together.
const SESSION_LIMIT: Duration = Duration::from_secs(60);

/// The programs the documents launch as an application, a few stats and a read each.
const STAND_INS: [&str; 2] = ["app", "simulation"];

/// What the comment before a shell block asks.
#[derive(Debug, PartialEq)]
enum Directive {
    /// Every command succeeds.
    Run,
    /// Not run, for this reason.
    NotRun(String),
    /// The block's last command exits with this status; the others succeed.
    Exits(i32),
}

/// One shell block of a document.
#[derive(Debug)]
struct Block {
    /// `README.md:31`: the line of its opening fence.
    place: String,
    /// The heading it is under.
    section: String,
    /// Its text, as written.
    text: String,
    directive: Directive,
}

/// The shell blocks of `doc` (named `name` in messages). Panics, naming the line, on a
/// block with no language and on a `doc-test:` comment that is not just before a shell
/// block or that says something unknown.
fn shell_blocks(name: &str, doc: &str) -> Vec<Block> {
    let mut blocks = vec![];
    let mut section = String::from("(top)");
    let mut pending: Option<(usize, Directive)> = None;
    let mut lines = doc.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let at = |n: usize| format!("{name}:{}", n + 1);
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if let Some(comment) = trimmed.strip_prefix("<!-- doc-test:") {
            let said = comment
                .strip_suffix("-->")
                .unwrap_or_else(|| panic!("{}: a doc-test comment ends on its line", at(i)))
                .trim();
            let directive = if let Some(why) = said.strip_prefix("not run:") {
                assert!(!why.trim().is_empty(), "{}: not run, but why?", at(i));
                Directive::NotRun(why.trim().to_owned())
            } else if let Some(code) = said.strip_prefix("exits ") {
                Directive::Exits(
                    code.trim()
                        .parse()
                        .unwrap_or_else(|_| panic!("{}: `exits N` needs a number: {said}", at(i))),
                )
            } else {
                panic!(
                    "{}: unknown doc-test comment {said:?} (`not run: REASON` or `exits N`)",
                    at(i)
                )
            };
            assert!(
                pending.is_none(),
                "{}: two doc-test comments for one block",
                at(i)
            );
            pending = Some((i, directive));
            continue;
        }
        // A fence: three or more backticks or tildes, indented less than a code block.
        let mark = trimmed.chars().next().filter(|c| matches!(c, '`' | '~'));
        let width = mark.map_or(0, |m| trimmed.len() - trimmed.trim_start_matches(m).len());
        let (Some(mark), 3.., 0..4) = (mark, width, indent) else {
            let hashes = trimmed.len() - trimmed.trim_start_matches('#').len();
            if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') && indent < 4 {
                section = trimmed[hashes..].trim().to_owned();
            }
            if let Some((c, _)) = &pending {
                assert!(
                    trimmed.is_empty(),
                    "{}: a doc-test comment must come just before its block",
                    at(*c)
                );
            }
            continue;
        };
        let info = trimmed[width..].trim();
        let language = info.split_whitespace().next().unwrap_or("");
        let mut text = String::new();
        for (_, l) in lines.by_ref() {
            let t = l.trim_start();
            let close = t.trim_end();
            if close.len() >= width && close.chars().all(|c| c == mark) {
                break;
            }
            // A block in a list item is indented with it.
            text.push_str(
                l.get(indent..)
                    .filter(|_| l.len() - t.len() >= indent)
                    .unwrap_or(t),
            );
            text.push('\n');
        }
        assert!(
            !language.is_empty(),
            "{}: a fenced block without a language: ```sh for commands (run by \
             tests/doc_commands.rs), ```text or another language for the rest",
            at(i)
        );
        assert!(
            language != "console",
            "{}: commands go in ```sh blocks, without prompts (their output in a \
             ```text block), so that the test can run them",
            at(i)
        );
        let directive = pending.take().map(|(_, d)| d);
        if !["sh", "bash", "shell"].contains(&language) {
            assert!(
                directive.is_none(),
                "{}: a doc-test comment before a {language} block, which is not run",
                at(i)
            );
            continue;
        }
        blocks.push(Block {
            place: at(i),
            section: section.clone(),
            text,
            directive: directive.unwrap_or(Directive::Run),
        });
    }
    assert!(pending.is_none(), "{name}: a doc-test comment at the end");
    blocks
}

/// The commands of a block (lines continued by `\` joined), comments and blank lines left
/// out: what the summary counts.
fn commands(text: &str) -> usize {
    let mut n = 0;
    let mut continued = false;
    for l in text.lines().map(str::trim) {
        if !continued && !l.is_empty() && !l.starts_with('#') {
            n += 1;
        }
        continued = l.ends_with('\\');
    }
    n
}

/// One bash session: the blocks of one heading, each preceded by a traced marker naming
/// its place, in directory `cwd`. Under `errexit` the first command that fails ends it
/// with its status; a block the doc says fails runs in a subshell whose status must be the
/// one it says.
fn session_script(cwd: &str, blocks: &[&Block]) -> String {
    let mut s = format!(
        "set -o errexit -o pipefail\n\
         trap 'echo \"doc-test: exit status $? from: $BASH_COMMAND\" >&2' ERR\n\
         cd '{cwd}'\n\
         PS4='+ '\n\
         set -o xtrace\n"
    );
    for b in blocks {
        let _ = writeln!(s, ": 'doc-test: {}'", b.place);
        match b.directive {
            Directive::Exits(code) => {
                let _ = write!(
                    s,
                    "set +o errexit\n(\nset -o errexit\n{}\n)\n__doc_rc=$?\nset -o errexit\n\
                     if [ \"$__doc_rc\" != {code} ]; then echo \"doc-test: {} exited \
                     $__doc_rc, where the doc says {code}\" >&2; exit 99; fi\n",
                    b.text, b.place
                );
            }
            _ => {
                s.push_str(&b.text);
                s.push('\n');
            }
        }
    }
    s.push_str(": 'doc-test: the end'\n");
    s
}

/// What a session did.
struct Session {
    status: ExitStatus,
    transcript: String,
    /// The place of the block it was in when it ended.
    last: String,
}

/// Runs `script` with `bash` from `command` (stdout and stderr to one transcript), in a
/// process group of its own that is killed when it ends or after [`SESSION_LIMIT`].
fn run_session(mut command: Command, script: &str, work: &Path) -> Session {
    let file = work.join("session.sh");
    std::fs::write(&file, script).expect("session script");
    let log = work.join("transcript");
    let out = std::fs::File::create(&log).expect("transcript");
    let mut session = Process::start(
        command
            .arg(&file)
            .stdout(out.try_clone().expect("transcript"))
            .stderr(out),
    )
    .expect("cannot start bash");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = session.child.try_wait().expect("the session") {
            break Some(status);
        }
        if start.elapsed() > SESSION_LIMIT {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Whatever the blocks left running (a daemon put in the background) goes with them.
    session.kill();
    let status = status.unwrap_or_else(|| {
        panic!(
            "the session ran over {SESSION_LIMIT:?}:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    });
    let transcript = std::fs::read_to_string(&log).unwrap_or_default();
    let last = transcript
        .lines()
        .filter_map(|l| l.strip_prefix("+ : 'doc-test: "))
        .next_back()
        .unwrap_or("")
        .trim_end_matches('\'')
        .to_owned();
    Session {
        status,
        transcript,
        last,
    }
}

/// The node a document's blocks run on (see the module's comment).
struct Node {
    // Dropped first: the controllers, then the namespaces they ran in.
    controllers: [Running; 2],
    ns: Installed,
    checkout: TempDir,
    home: TempDir,
    _logs: TempDir,
}

/// The installed layout of the release build, as the packages lay it out.
fn installed_tree() -> TempDir {
    let root = tmp_dir();
    let r = root.path();
    let bins = bin_dir();
    let lib = r.join("usr/lib/sluice");
    for dir in [&lib, &r.join("usr/bin"), &r.join("var/lib/sluice")] {
        std::fs::create_dir_all(dir).expect("tree");
    }
    for (file, mode) in [
        ("sluice", 0o755),
        ("libsluice_stage.so", 0o644),
        ("libsluice_spank.so", 0o644),
    ] {
        // The plugin only if built (`make` builds it; the docs' commands do not load it).
        if bins.join(file).is_file() {
            std::fs::copy(bins.join(file), lib.join(file)).expect("copy");
            std::fs::set_permissions(lib.join(file), std::fs::Permissions::from_mode(mode))
                .expect("chmod");
        }
    }
    std::os::unix::fs::symlink("../lib/sluice/sluice", r.join("usr/bin/sluice")).expect("link");
    for (from, to) in [
        ("packaging/systemd", "usr/lib/systemd/system"),
        ("packaging/etc", "etc/sluice"),
    ] {
        std::fs::create_dir_all(r.join(to)).expect("tree");
        for f in std::fs::read_dir(workspace().join(from)).expect("packaging") {
            let f = f.expect("entry").path();
            std::fs::copy(&f, r.join(to).join(f.file_name().expect("name"))).expect("copy");
        }
    }
    root
}

impl Node {
    fn new() -> Node {
        let ns = Installed::new(installed_tree());
        // The jobs' segments on a /dev/shm of the node's, gone with it: a controller
        // killed at the end leaves them, and two documents may name the same job.
        ns.sh("mount -t tmpfs tmpfs /dev/shm");
        ns.prepare_site();
        ns.sh(&format!(
            "sh {} configure",
            path_str(&workspace().join("packaging/scripts/postinst.sh"))
        ));
        let logs = tmp_dir();
        let controllers = ns.controllers(logs.path());
        let checkout = tmp_dir();
        for entry in std::fs::read_dir(workspace()).expect("workspace") {
            let path = entry.expect("entry").path();
            let name = path.file_name().expect("name").to_owned();
            if !name.to_string_lossy().starts_with('.') {
                std::os::unix::fs::symlink(&path, checkout.path().join(&name)).expect("link");
            }
        }
        for name in STAND_INS {
            let p = checkout.path().join(name);
            std::fs::write(
                &p,
                "#!/bin/sh\n# A stand-in for the application the docs launch.\n\
                 for i in 1 2 3; do stat . >/dev/null; done\nhead -c 64 /etc/hostname >/dev/null\n",
            )
            .expect("stand-in");
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        Node {
            controllers,
            ns,
            checkout,
            home: tmp_dir(),
            _logs: logs,
        }
    }

    /// `bash` inside the node, as root, with the environment of a login there.
    fn bash(&self) -> Command {
        let path = format!(
            "{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            path_str(&bin_dir())
        );
        let mut c = self.ns.command(&["bash"]);
        c.env_clear()
            .env("PATH", path)
            .env("HOME", self.home.path())
            .env("USER", "root")
            .env("LOGNAME", "root")
            .env("LANG", "C.UTF-8");
        c
    }

    fn logs(&self) -> String {
        let [global, local] = &self.controllers;
        format!("global:\n{}\nlocal:\n{}", global.log(), local.log())
    }
}

/// Runs every shell block of document `name` (a path in the repository) on a node of its
/// own, section by section; prints what ran and what did not, and why.
fn run_document(name: &str) {
    let doc = std::fs::read_to_string(workspace().join(name)).expect("the document");
    let blocks = shell_blocks(name, &doc);
    let node = Node::new();
    let checkout = path_str(node.checkout.path());
    let (mut ran, mut cmds, mut not_run) = (0, 0, vec![]);
    let mut i = 0;
    while i < blocks.len() {
        let section = &blocks[i].section;
        let mut group = vec![];
        while i < blocks.len() && &blocks[i].section == section {
            match &blocks[i].directive {
                Directive::NotRun(why) => not_run.push(format!("{}: {why}", blocks[i].place)),
                _ => group.push(&blocks[i]),
            }
            i += 1;
        }
        if group.is_empty() {
            continue;
        }
        let work = tmp_dir();
        let s = run_session(node.bash(), &session_script(&checkout, &group), work.path());
        assert!(
            s.status.success(),
            "{name}, section \"{section}\": a command of {} did not run as written \
             ({}):\n{}\n{}",
            s.last,
            s.status,
            s.transcript,
            node.logs()
        );
        println!("{name}, section \"{section}\":\n{}", s.transcript);
        ran += group.len();
        cmds += group.iter().map(|b| commands(&b.text)).sum::<usize>();
    }
    // Past the test harness's capture, so that `make test` shows what was not run.
    let summary = format!(
        "{name}: {} shell blocks: {ran} run ({cmds} commands), {} not run{}\n",
        blocks.len(),
        not_run.len(),
        not_run.iter().fold(String::new(), |s, n| s + "\n  " + n)
    );
    let _ = std::io::stderr().write_all(summary.as_bytes());
    assert!(ran > 0, "{name}: no shell block ran");
}

#[test]
fn every_command_of_the_readme_runs_as_written() {
    if needs_root() {
        run_document("README.md");
    }
}

#[test]
fn every_command_of_the_admin_guide_runs_as_written() {
    if needs_root() {
        run_document("docs/admin-guide.md");
    }
}

/// The harness itself: which blocks it takes and how, and that a block the doc says
/// fails must fail with the status it says.
#[test]
fn blocks_are_read_with_their_comments_and_a_documented_failure_must_happen() {
    let doc = "# One\n\n```sh\nsluice rule check 'op=getattr rate=1/s'\n```\n\n\
               <!-- doc-test: not run: it needs a cluster -->\n```bash\nsrun x\n```\n\
               ```text\nnot a command\n```\n## Two\n- item:\n\n  <!-- doc-test: exits 2 -->\n\n  \
               ```sh\n  sluice rule check 'op=nosuch rate=1/s'\n  ```\n";
    let blocks = shell_blocks("t.md", doc);
    assert_eq!(blocks.len(), 3, "{blocks:#?}");
    assert_eq!(blocks[0].place, "t.md:3");
    assert_eq!(blocks[0].section, "One");
    assert_eq!(blocks[0].directive, Directive::Run);
    assert_eq!(
        blocks[1].directive,
        Directive::NotRun("it needs a cluster".into())
    );
    assert_eq!(blocks[2].section, "Two");
    assert_eq!(blocks[2].directive, Directive::Exits(2));
    assert_eq!(blocks[2].text, "sluice rule check 'op=nosuch rate=1/s'\n");
    assert_eq!(commands("a \\\n  b\n# c\n\nd\n"), 2);

    let work = tmp_dir();
    let cwd = path_str(work.path());
    let path = format!("{}:/usr/bin:/bin", path_str(&bin_dir()));
    let bash = || {
        let mut c = Command::new("bash");
        c.env_clear().env("PATH", &path);
        c
    };
    // The documented failure happens: the session goes on past it.
    let s = run_session(bash(), &session_script(&cwd, &[&blocks[2]]), work.path());
    assert!(s.status.success(), "{}", s.transcript);
    assert_eq!(s.last, "the end");
    // A failure the doc does not announce ends the session, at its block.
    let mut wrong = Block {
        directive: Directive::Run,
        ..blocks.into_iter().nth(2).unwrap()
    };
    let s = run_session(bash(), &session_script(&cwd, &[&wrong]), work.path());
    assert_eq!(s.status.code(), Some(2), "{}", s.transcript);
    assert_eq!(s.last, "t.md:19");
    // As does one that fails otherwise than the doc says.
    wrong.directive = Directive::Exits(1);
    let s = run_session(bash(), &session_script(&cwd, &[&wrong]), work.path());
    assert_eq!(s.status.code(), Some(99), "{}", s.transcript);
    assert!(s.transcript.contains("exited 2, where the doc says 1"));
}

/// A block that reads no stdin, with a program left in the background: the session ends
/// and takes the program with it.
#[test]
fn what_a_session_leaves_running_is_killed() {
    let work = tmp_dir();
    let cwd = path_str(work.path());
    let pid_file = work.path().join("pid");
    let block = Block {
        place: "t.md:1".into(),
        section: "s".into(),
        text: format!("sleep 300 &\necho $! > '{}'\n", path_str(&pid_file)),
        directive: Directive::Run,
    };
    let mut bash = Command::new("bash");
    bash.env_clear().env("PATH", "/usr/bin:/bin");
    let s = run_session(bash, &session_script(&cwd, &[&block]), work.path());
    assert!(s.status.success(), "{}", s.transcript);
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    let gone = common::daemons::wait_for(Duration::from_secs(5), || {
        // A zombie (not reaped: its parent bash is gone, init reaps it) counts as gone.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |s| s.split_whitespace().nth(2) == Some("Z"))
    });
    assert!(gone, "sleep {pid} still runs after its session");
}
