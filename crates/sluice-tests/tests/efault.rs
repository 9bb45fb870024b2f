//! Invalid pointers and faults: a program that passes the kernel an address it refuses sees
//! the kernel's answer under the stage, as without it, and a program's own handling of
//! SIGSEGV and SIGBUS is left as it is. Each C program prints one line per call or check;
//! the lines must be the same natively, under the stage managing the program's directory,
//! and under the stage managing another place.

use crate::common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use common::{Run, Sluice, c_prog, c_prog_with, direct, path_str, shm_dir, split, workspace};

/// The output of `cmd` natively, checked to have ended well.
fn native(cmd: &[String]) -> String {
    let (status, stdout, stderr) = split(direct(cmd, &[]));
    assert!(status.success(), "natively: {status:?}\n{stderr}");
    stdout
}

/// Asserts that a run under the stage exited 0 and printed `want`, line for line.
fn assert_same(what: &str, run: &Run, want: &str) {
    assert!(run.status.success(), "{what}: {run:?}");
    let diff: Vec<String> = want
        .lines()
        .zip(run.stdout.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("  native: {a}\n  staged: {b}"))
        .collect();
    assert!(
        diff.is_empty() && want.lines().count() == run.stdout.lines().count(),
        "{what}: {} lines differ from the native run ({} lines natively, {} staged):\n{}",
        diff.len(),
        want.lines().count(),
        run.stdout.lines().count(),
        diff.join("\n")
    );
}

/// The hooks of `crates/sluice-stage/src/hooks/table.rs` that read a pointer the
/// application passes: a path, an `*at` path, a stream or a directory stream as their
/// target, or an iovec array; less those whose target is no argument (`sync`, `tmpfile`,
/// the calls on stdin or stdout).
fn hooks_reading_a_pointer() -> Vec<String> {
    let table = std::fs::read_to_string(workspace().join("crates/sluice-stage/src/hooks/table.rs"))
        .expect("cannot read the hook table");
    table
        .lines()
        .filter_map(|row| {
            let row = row.trim_start();
            let (name, rest) = row.split_once('(')?;
            let (_, target) = rest.split_once(" = ")?;
            let target = target.split(", ").nth(1)?;
            let reads = ["Path(", "At(", "File(", "Dir("]
                .iter()
                .any(|t| target.starts_with(t))
                || row.contains("iov_len(");
            let no_argument = target.contains("c\"") || target.contains("stream::");
            (reads && !no_argument).then(|| name.to_string())
        })
        .collect()
}

#[test]
fn every_hooked_call_answers_an_invalid_pointer_as_the_kernel_does() {
    let prog = c_prog_with("efault", &["-ldl"]);
    let dir = shm_dir();
    let cmd = argv![prog, path_str(dir.path())];
    let want = native(&cmd);
    assert!(want.ends_with("done\n"), "natively: {want}");
    for hook in hooks_reading_a_pointer() {
        assert!(
            want.lines().any(|l| l.starts_with(&format!("{hook}."))),
            "tests/c/efault.c calls no `{hook}`, a hook that reads a pointer it is passed"
        );
    }

    let managed = Sluice::run()
        .mount(dir.path())
        .rule("rate=1000000M/s")
        .exec(&cmd);
    assert_same("managed", &managed, &want);
    // Every call on a bad path was passed through unjudged, and counted so.
    let unjudged = managed.stats().0["unjudged"].as_u64().expect("unjudged");
    assert!(unjudged >= 500, "unjudged calls: {unjudged}");

    let elsewhere = Sluice::run()
        .mount("/sluice-test-nowhere")
        .rule("rate=1000000M/s")
        .exec(&cmd);
    assert_same("unmanaged", &elsewhere, &want);
}

#[test]
fn a_programs_own_sigsegv_and_sigbus_handling_is_untouched() {
    let prog = c_prog("faults");
    let dir = shm_dir();
    let cmd = argv![prog, path_str(dir.path())];
    let want = native(&cmd);
    assert!(want.ends_with("done\n"), "natively: {want}");
    for (what, sluice) in [
        ("managed", Sluice::run().mount(dir.path())),
        ("unmanaged", Sluice::run().mount("/sluice-test-nowhere")),
        ("everything managed", Sluice::run()),
    ] {
        assert_same(what, &sluice.rule("rate=1000000M/s").exec(&cmd), &want);
    }
}

/// The dispositions a program starts with are those it inherited: SIG_IGN survives exec.
#[test]
fn an_inherited_ignored_sigsegv_is_what_the_program_reads() {
    let prog = c_prog("faults");
    let run = |mut c: Command| {
        // SAFETY: signal() is async-signal-safe; the child only then execs.
        unsafe {
            c.pre_exec(|| {
                libc::signal(libc::SIGSEGV, libc::SIG_IGN);
                Ok(())
            })
        };
        let out = c.stdin(Stdio::null()).output().expect("cannot run");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let mut natively = Command::new(&prog);
    natively.arg("initial");
    let want = run(natively);
    assert!(
        want.contains("initial SIGSEGV: ret=0 handler=SIG_IGN"),
        "{want}"
    );
    let staged = Sluice::run()
        .mount("/sluice-test-nowhere")
        .command(None, &argv![prog, "initial"]);
    assert_eq!(run(staged), want);
}
