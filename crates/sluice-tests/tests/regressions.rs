//! Regressions from the review of the stage: each test is named after the defect it pins.

use crate::common;

use std::time::Duration;

use common::{Scratch, file_in, path_str};

/// Debian's interpreter, by its real path (the tests use it as a ready-made C caller).
const PYTHON: &str = "/usr/bin/python3";

fn python(s: &Scratch, rule: &str, script: &str) -> common::Run {
    s.sluice().rule(rule).exec(&argv![PYTHON, "-c", script])
}

/// coreutils' `cp` asks `copy_file_range` for 2^63 bytes; charging that before the call
/// jammed the rule's bucket for centuries.
#[test]
fn copy_file_range_asking_for_everything_is_charged_what_it_moved() {
    let s = Scratch::new();
    let src = file_in(s.dir.path(), "src", &"x".repeat(100_000));
    let run = s
        .sluice()
        .rule("class=data rate=100MiB/s")
        .exec(&argv!["cp", src, s.path("dst")]);
    assert!(run.status.success(), "{run:?}");
    assert!(
        run.elapsed < Duration::from_secs(5),
        "cp took {:?}",
        run.elapsed
    );
    assert_eq!(std::fs::metadata(s.path("dst")).unwrap().len(), 100_000);
}

/// Reads into a 64 MiB buffer of a 100 KB file were charged 64 MiB each: 50 of them took
/// 32 s under 100 MiB/s instead of milliseconds.
#[test]
fn short_reads_give_back_what_they_did_not_move() {
    let s = Scratch::new();
    let src = file_in(s.dir.path(), "src", &"x".repeat(100_000));
    let script = format!(
        "import os\nfd = os.open({src:?}, os.O_RDONLY)\nfor _ in range(50):\n    assert len(os.pread(fd, 64 << 20, 0)) == 100000\n"
    );
    let run = python(&s, "class=data rate=100MiB/s", &script);
    assert!(run.status.success(), "{run:?}");
    assert!(
        run.elapsed < Duration::from_secs(3),
        "50 short reads took {:?}",
        run.elapsed
    );
    assert_eq!(
        run.stats().rule(0, "bytes"),
        50 * 100_000,
        "bytes charged are bytes moved"
    );
}

/// A vfork()ed child (CPython's subprocess) changing directory rewrote its parent's idea
/// of the current directory: the parent's relative paths were judged by the child's.
#[test]
fn vforked_child_does_not_move_the_parents_directory() {
    let s = Scratch::new();
    let elsewhere = common::tmp_dir();
    file_in(elsewhere.path(), "local", "x");
    let script = format!(
        "import os, subprocess\nos.chdir({e:?})\nsubprocess.run(['true'], cwd={m:?}, check=True)\nfor _ in range(10):\n    os.stat('local')\n",
        e = path_str(elsewhere.path()),
        m = path_str(s.dir.path()),
    );
    let run = python(&s, "op=getattr rate=1k/s", &script);
    assert!(run.status.success(), "{run:?}");
    assert_eq!(
        run.stats().rule(0, "admitted"),
        0,
        "the parent's stats are outside the mount"
    );
}

/// memfd descriptors show in /proc as "/memfd:…": under a catch-all configuration they
/// were taken for managed files and held by data rules.
#[test]
fn memory_files_are_not_managed() {
    let script = "import os\nfd = os.memfd_create('x')\nfor _ in range(16):\n    os.write(fd, b'x' * 65536)\n";
    let run = common::Sluice::run()
        .rule("class=data rate=100KiB/s")
        .exec(&argv![PYTHON, "-c", script]);
    assert!(run.status.success(), "{run:?}");
    assert!(
        run.elapsed < Duration::from_secs(3),
        "1 MiB to a memfd took {:?}",
        run.elapsed
    );
}
