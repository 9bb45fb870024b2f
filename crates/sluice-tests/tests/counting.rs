//! What the stage counts, preloaded into real programs: exact counts, every operation,
//! descriptor tracking, path resolution, and a rules file end to end.

use crate::common;

use std::collections::BTreeMap;

use common::{Scratch, Sluice, Stats, c_prog, c_prog_with, file_in, path_str, shm_dir, tmp_dir};

#[test]
fn thousand_stats_opens_and_renames_are_counted_exactly() {
    let s = Scratch::new();
    let (f, g) = (&s.file, s.path("g"));
    let stats = s
        .sluice()
        .exec(&argv![
            c_prog("fsdo"),
            "stat@1000",
            f,
            "open@1000",
            f,
            "rename@1000",
            f,
            g
        ])
        .into_stats();
    let want = [
        ("getattr", 1000),
        ("open", 1000),
        ("close", 1000),
        ("rename", 1000),
    ];
    stats.assert_calls_exactly(&want, "1000 x (stat, open+close, rename)");
}

/// Under a rule whose rate is never reached, stats, opens and closes take the hooks'
/// managed lane (a token batch per thread); they are counted, and admitted by the rule,
/// exactly as the full path counts them. With a mount named (a place nothing lies below)
/// and with the root managed (no mount named).
#[test]
fn the_managed_lane_counts_every_call_and_the_rule_admits_each() {
    let s = Scratch::new();
    // Under the root, not under /dev (never managed when the root is).
    let home = tmp_dir();
    let in_home = file_in(home.path(), "f", "x");
    for (sluice, f, case) in [
        (s.sluice(), &s.file, "a mount named"),
        (Sluice::run(), &in_home, "the root managed"),
    ] {
        let prog = argv![c_prog("fsdo"), "stat@3000", f, "open@2000", f];
        let stats = sluice.rule("rate=1M/s").exec(&prog).into_stats();
        let want = [("getattr", 3000), ("open", 2000), ("close", 2000)];
        stats.assert_calls_exactly(&want, case);
        assert_eq!(
            stats.rule(0, "admitted"),
            7000,
            "{case}: admitted by the rule"
        );
    }
}

/// Runs tests/c/coverage.c (built with `flags`) in a managed dir under a catch-all rule;
/// checks that every operation is counted at least once and exactly as often as the
/// program says it called a symbol of it.
fn check_coverage(flags: &[&str]) {
    let s = Scratch::new();
    let prog = c_prog_with("coverage", flags);
    let run = s
        .sluice()
        .rule("rate=1M/s")
        .exec(&argv![prog, path_str(s.dir.path()), 5]);
    let stats = run.ok();
    let mut made: BTreeMap<&str, (u64, Vec<&str>)> = BTreeMap::new();
    for line in run.stdout.lines() {
        let (sym, op) = line
            .split_once(' ')
            .unwrap_or_else(|| panic!("bad step line {line:?}"));
        let e = made.entry(op).or_default();
        e.0 += 1;
        if !e.1.contains(&sym) {
            e.1.push(sym);
        }
    }
    let mut wrong = Vec::new();
    for (op, calls) in stats.all_calls() {
        let (want, syms) = made.get(op.as_str()).cloned().unwrap_or_default();
        if calls != want || calls == 0 {
            wrong.push(format!(
                "{op}: counted {calls}, the program called {want} ({})",
                syms.join(", ")
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "operations miscounted (cc {flags:?}):\n  {}\nsymbols the program imports and the stage does not hook: {}",
        wrong.join("\n  "),
        imports(&prog)
    );
    // mmap is held only by a rule naming it: every other managed call went through the rule.
    let total: u64 = stats.all_calls().iter().map(|(_, n)| n).sum();
    assert_eq!(
        stats.rule(0, "admitted"),
        total - stats.calls("mmap"),
        "catch-all rule admitted"
    );
}

/// The dynamic symbols `nm -D ARGS FILE` lists (none without `nm`).
fn dyn_syms(args: &[&str], file: &str) -> Vec<String> {
    let out = std::process::Command::new("nm")
        .arg("-D")
        .args(args)
        .arg(file)
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&out);
    text.lines()
        .filter_map(|l| {
            l.split_whitespace()
                .last()?
                .split('@')
                .next()
                .map(str::to_owned)
        })
        .collect()
}

/// The program's imported symbols that the stage does not export (so cannot see), for
/// failure messages.
fn imports(prog: &str) -> String {
    let hooked = dyn_syms(&["--defined-only"], &path_str(&common::stage_lib()));
    let missing: Vec<_> = dyn_syms(&["--undefined-only"], prog)
        .into_iter()
        .filter(|s| !hooked.contains(s))
        .collect();
    missing.join(" ")
}

#[test]
fn every_operation_is_counted_exactly_as_called() {
    check_coverage(&["-U_FORTIFY_SOURCE"]);
}

#[test]
fn fortified_build_chk_symbols_are_counted() {
    let prog = c_prog_with("coverage", &["-D_FORTIFY_SOURCE=2"]);
    let imported = dyn_syms(&["--undefined-only"], &prog);
    assert!(
        imported.is_empty() || imported.iter().any(|s| s == "__read_chk"),
        "cc did not fortify read(): {imported:?}"
    );
    check_coverage(&["-D_FORTIFY_SOURCE=2"]);
}

// ---- descriptors ------------------------------------------------------------------------

/// Runs `fdtrack MODE FILE` on a managed file; asserts the exact counts and returns them.
fn fdtrack(mode: &str, want: &[(&str, u64)]) -> Stats {
    let s = Scratch::new();
    let stats = s
        .sluice()
        .exec(&argv![c_prog("fdtrack"), mode, s.file])
        .into_stats();
    stats.assert_calls_exactly(want, &format!("fdtrack {mode}"));
    stats
}

#[test]
fn duplicated_descriptors_stay_managed_after_the_original_is_closed() {
    // dup, dup2, dup3, F_DUPFD, F_DUPFD_CLOEXEC; the original closed; fstat through each.
    fdtrack("dups", &[("open", 1), ("close", 1), ("getattr", 5)]);
}

#[test]
fn pipe_or_socket_reusing_a_closed_managed_fd_is_not_managed() {
    // Only the fstat of the file itself counts; the pipe, the socket and the pipe dup2'ed
    // over the second open are no files: their fstats and closes are unmanaged.
    let stats = fdtrack("reuse", &[("open", 2), ("close", 1), ("getattr", 1)]);
    assert!(
        stats.unmanaged() >= 4,
        "pipe/socket calls not seen as unmanaged: {}",
        stats.0
    );
}

#[test]
fn close_range_and_closefrom_forget_managed_fds() {
    fdtrack("range", &[("open", 2), ("close", 2)]);
}

#[test]
fn fd_inherited_across_exec_is_classified_lazily_and_counted() {
    let s = Scratch::new();
    let fsdo = c_prog("fsdo");
    let run = s
        .sluice()
        .exec(&argv![fsdo, "keep", s.file, 9, "exec", fsdo, "fstat@2", 9]);
    // keep: open + close of the original number; after exec, two fstats of fd 9.
    run.ok().assert_calls_exactly(
        &[("open", 1), ("close", 1), ("getattr", 2)],
        "fd 9 across exec",
    );
}

#[test]
fn fd_from_a_shell_redirect_is_classified_lazily_and_counted() {
    let s = Scratch::new();
    let outside = tmp_dir();
    let other = file_in(outside.path(), "g", "x");
    let fsdo = c_prog("fsdo");
    for (file, getattr) in [(&s.file, 3), (&other, 0)] {
        let script = format!("exec '{fsdo}' fstat@3 3 3<'{file}'");
        let stats = getattr_of(
            s.sluice(),
            &argv!["sh", "-c", script],
            getattr,
            &format!("fd 3 from {file}"),
        );
        if getattr == 0 {
            assert!(
                stats.unmanaged() >= 3,
                "fstats of an unmanaged fd 3 not seen: {}",
                stats.0
            );
        }
    }
}

// ---- paths ------------------------------------------------------------------------------

/// Runs `cmd` under `sluice`; asserts how many getattr calls were managed.
fn getattr_of(sluice: Sluice, cmd: &[String], want: u64, case: &str) -> Stats {
    let stats = sluice.exec(cmd).into_stats();
    assert_eq!(
        stats.calls("getattr"),
        want,
        "{case}: managed getattr calls (stats: {})",
        stats.0
    );
    stats
}

/// [`getattr_of`] for `fsdo SCRIPT`.
fn getattr_count(sluice: Sluice, script: &[String], want: u64, case: &str) -> Stats {
    getattr_of(
        sluice,
        &[vec![c_prog("fsdo")], script.to_vec()].concat(),
        want,
        case,
    )
}

/// A managed dir `m` with file `f` and subdir `sub` (with a file `f`), a sibling `m2` (a
/// name that only starts like the mount) and a sibling `o`, both outside it, each with a
/// file `f`.
struct Tree {
    _root: tempfile::TempDir,
    root: String,
}

impl Tree {
    fn new() -> Self {
        let root = shm_dir();
        for d in ["m/sub", "m2", "o"] {
            std::fs::create_dir_all(root.path().join(d)).unwrap();
        }
        for f in ["m/f", "m/sub/f", "m2/f", "o/f"] {
            file_in(root.path(), f, "x");
        }
        Tree {
            root: path_str(root.path()),
            _root: root,
        }
    }

    /// `text` with `{r}`, `{m}` and `{o}` replaced by the paths of the root, `m` and `o`.
    fn expand(&self, text: &str) -> String {
        let r = &self.root;
        text.replace("{m}", &format!("{r}/m"))
            .replace("{o}", &format!("{r}/o"))
            .replace("{r}", r)
    }

    /// Runs each fsdo script (words, expanded) under `sluice run --mount ARGS`, and
    /// asserts how many of its getattr calls were managed.
    fn expect(&self, mounts: &[&str], cases: &[(&str, u64)]) {
        for (script, want) in cases {
            let sluice = mounts
                .iter()
                .fold(Sluice::run(), |s, m| s.mount(self.expand(m)));
            let words: Vec<String> = self.expand(script).split(' ').map(str::to_owned).collect();
            getattr_count(
                sluice,
                &words,
                *want,
                &format!("--mount {mounts:?}: fsdo {script}"),
            );
        }
    }
}

#[test]
fn relative_paths_follow_chdir_and_fchdir() {
    Tree::new().expect(
        &["{m}"],
        &[
            ("chdir {m} stat@2 f stat sub/f", 3),
            ("chdir {o} stat@2 f", 0),
            ("chdir {m} chdir sub stat f chdir .. stat f", 2),
            ("chdir {m} chdir ../o stat@2 f", 0),
            ("chdir {o} chdir ../m stat@2 f", 2),
            ("fchdir {m} stat@2 f", 2),
            ("chdir {m} fchdir {o} stat@2 f", 0),
            ("chdir {r} stat m/f stat o/f stat m2/f", 1),
        ],
    );
}

#[test]
fn at_calls_resolve_against_their_dirfd() {
    Tree::new().expect(
        &["{m}"],
        &[
            ("statat@2 {m} f", 2),
            ("statat@2 {o} f", 0),
            ("statat {r} m/f statat {r} o/f", 1),
            ("statat {m} ../o/f statat {m} sub/../f", 1),
            ("chdir {o} statat {m} f", 1),
            ("statat {o} {m}/f", 1),
        ],
    );
}

/// With the root managed, `/` opened as a directory has places below it (/proc, /sys, /dev,
/// /run, never managed): a path relative to it is judged where it leads.
#[test]
fn a_path_relative_to_the_opened_root_is_judged_where_it_leads() {
    // Five stats first: a thread's first call fills its token batch.
    for (rel, want) in [("proc/self/status", 5), ("tmp", 6)] {
        let script = argv!["stat@5", "/tmp", "statat", "/", rel]
            .map(|w| w.to_string())
            .to_vec();
        // A rule, so that the open of `/` may take the managed lane.
        getattr_count(
            Sluice::run().rule("rate=1M/s"),
            &script,
            want,
            &format!("statat / {rel}"),
        );
    }
}

#[test]
fn dotdot_escaping_the_mount_is_unmanaged_and_dot_slashes_are_normalised() {
    let t = Tree::new();
    t.expect(
        &["{m}"],
        &[
            ("stat@2 {m}/../o/f", 0),
            ("stat@2 {m}/sub/../../o/f", 0),
            ("stat@2 {m}/sub/../f", 2),
            ("stat@2 {r}/o/../m/f", 2),
            ("stat@2 /{r}//m/./f stat {r}/./m//sub/./f", 3),
            ("stat@2 {r}/m2/f", 0),
            // Paths whose letters name no managed place, led into one by `..` (the
            // stage's glance at unmanaged paths must not pass them).
            ("stat@2 /proc/..{m}/f stat /usr/../{m}/sub/f", 3),
            ("chdir {o} stat@2 ../m/f stat ./../m/f stat f", 3),
        ],
    );
    t.expect(&["{r}//m/./"], &[("stat@2 {m}/f", 2)]);
}

#[test]
fn two_mounts_are_both_managed() {
    Tree::new().expect(
        &["{m}", "{o}"],
        &[("stat {m}/f stat@2 {o}/f stat@4 {r}/m2/f", 3)],
    );
}

#[test]
fn fs_type_tmpfs_manages_only_tmpfs_mounts() {
    let on_tmpfs = Scratch::new();
    let off = tmp_dir();
    assert!(
        is_tmpfs(on_tmpfs.dir.path()) && !is_tmpfs(off.path()),
        "this test needs /dev/shm on tmpfs and /tmp not"
    );
    let tmp_file = file_in(off.path(), "f", "x");
    let sluice = Sluice::run().args(&["--fs-type", "tmpfs"]);
    getattr_count(
        sluice,
        &argv!["stat@2", on_tmpfs.file, "stat@5", tmp_file],
        2,
        "--fs-type tmpfs",
    );
}

fn is_tmpfs(p: &std::path::Path) -> bool {
    let c = std::ffi::CString::new(path_str(p)).unwrap();
    // SAFETY: a NUL-terminated path and a zeroed statfs buffer.
    let mut sfs: libc::statfs = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::statfs(c.as_ptr(), &mut sfs) },
        0,
        "statfs {}",
        p.display()
    );
    sfs.f_type == libc::TMPFS_MAGIC
}

// ---- rules file ---------------------------------------------------------------------------

#[test]
fn rules_file_applies_in_order_after_rule_options() {
    let s = Scratch::new();
    let conf = tmp_dir();
    let toml = r#"
# metadata rules
[[rule]]
name = "stats"
match = "op=getattr"
rate = "200/s"

[[rule]]
name = "md"
match = "class=metadata"
rate = "1k/s"
burst = 5
"#;
    let rules = file_in(conf.path(), "rules.toml", toml);
    let run = s
        .sluice()
        .rule("first: op=open rate=100k/s")
        .args(&["--rules", &rules])
        .exec(&argv![c_prog("fsdo"), "open@30", s.file, "stat@40", s.file]);
    let stats = run.ok();
    let rules: Vec<_> = (0..3)
        .map(|i| (stats.rule_text(i), stats.rule(i, "admitted")))
        .collect();
    assert_eq!(
        rules,
        [
            ("first: op=open rate=100k/s", 30),
            ("stats: op=getattr rate=200/s", 40),
            ("md: class=metadata rate=1k/s burst=5", 30)
        ],
        "rules in order --rule then --rules, first match wins (open->first, stat->stats, close->md)"
    );
    // 40 stats at 200/s with a burst of 2 take at least 38/200 s.
    assert!(
        stats.rule(1, "wait_ns") > 150_000_000,
        "the file's getattr rule did not hold: {}",
        stats.0
    );
    assert!(
        run.elapsed.as_millis() >= 190,
        "40 stats at 200/s took {:?}",
        run.elapsed
    );
}
