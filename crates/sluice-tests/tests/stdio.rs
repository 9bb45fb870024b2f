//! Every byte a job moves through stdio is held, and copies are judged by both
//! ends.
//!
//! tests/c/stdio.c calls every stdio data symbol the stage hooks and logs, per call, the
//! operation and bytes the stage must count; the tests compare the log with `--stats`.
//! The timed tests write and read 40 MiB through fprintf, getline and fscanf under
//! `class=data rate=20MiB/s` (2 s each; `make bench` runs the 200 MiB, 10 s version) and
//! run one at a time: the machine has two cores.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Mutex;

use common::{Scratch, Stats, c_prog, c_prog_with, direct, path_str, shm_dir, tmp_dir};

/// Held by every timed test of this file.
static SERIAL: Mutex<()> = Mutex::new(());

const MIB: u64 = 1 << 20;

/// Calls and bytes per operation, summed from a log of "SYMBOL OP BYTES" lines (calls the
/// stage must not count have OP "-").
fn expected(log: &str) -> BTreeMap<String, (u64, u64)> {
    let mut want: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for line in log.lines() {
        let f: Vec<_> = line.split_whitespace().collect();
        assert_eq!(f.len(), 3, "bad log line {line:?}");
        if f[1] != "-" {
            let e = want.entry(f[1].to_owned()).or_default();
            e.0 += 1;
            e.1 += f[2].parse::<u64>().expect("a byte count");
        }
    }
    want
}

/// Asserts that every operation's calls and bytes are those the log says.
fn assert_matches_log(stats: &Stats, log: &str, context: &str) {
    let want = expected(log);
    let mut wrong = Vec::new();
    for (op, calls) in stats.all_calls() {
        let (wc, wb) = want.get(&op).copied().unwrap_or_default();
        let bytes = stats.bytes(&op);
        if (calls, bytes) != (wc, wb) {
            wrong.push(format!(
                "{op}: counted {calls} calls, {bytes} B; want {wc}, {wb} B"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{context}: miscounted:\n  {}\nlog:\n{log}",
        wrong.join("\n  ")
    );
}

/// Runs `stdio MODE DIR [OUT] LOG` natively (its own checks of results and errno must
/// pass without the stage) and under a catch-all rule managing DIR; compares the counts.
fn check_symbols(mode: &str, flags: &[&str]) {
    let prog = c_prog_with("stdio", flags);
    let out = tmp_dir();
    for staged in [false, true] {
        let s = Scratch::new();
        let log = path_str(&out.path().join(format!("{mode}-{staged}.log")));
        let mut cmd = vec![prog.clone(), mode.to_owned(), path_str(s.dir.path())];
        if mode == "symbols" {
            cmd.push(path_str(out.path()));
        }
        cmd.push(log.clone());
        if !staged {
            let o = direct(&cmd, &[]);
            assert!(o.status.success(), "{mode} without the stage: {o:?}");
            continue;
        }
        let run = s.sluice().rule("rate=1M/s").exec(&cmd);
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert_matches_log(run.ok(), &text, &format!("stdio {mode} (cc {flags:?})"));
    }
}

#[test]
fn every_stdio_symbol_is_counted_exactly_with_its_result_and_errno() {
    check_symbols("symbols", &["-U_FORTIFY_SOURCE"]);
}

#[test]
fn fortified_stdio_is_counted_exactly() {
    check_symbols("symbols", &["-D_FORTIFY_SOURCE=2"]);
}

#[test]
fn inlined_gets_and_puts_are_counted_a_buffer_at_a_time() {
    check_symbols("inline", &[]);
}

/// `stdio copy SRC DST 256KiB 8` under `rule`, SRC holding 4 MiB (2 MiB for each loop);
/// returns the report and the seconds the copy_file_range loop took.
fn copy(rule: &str, src_managed: bool, dst_managed: bool) -> (Stats, f64) {
    let s = Scratch::new();
    // On the same file system (tmpfs): copy_file_range does not cross file systems.
    let other = shm_dir();
    let place = |managed: bool, name: &str| {
        path_str(&if managed { s.dir.path() } else { other.path() }.join(name))
    };
    let (src, dst) = (place(src_managed, "src"), place(dst_managed, "dst"));
    std::fs::write(&src, vec![7u8; 4 << 20]).unwrap();
    let run = s
        .sluice()
        .rule(rule)
        .exec(&argv![c_prog("stdio"), "copy", src, dst, 256 << 10, 8]);
    let secs = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("copy_file_range "))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|t| t.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no timing: {run:?}"));
    assert_eq!(std::fs::metadata(&dst).unwrap().len(), 4 << 20);
    (run.into_stats(), secs)
}

#[test]
fn copies_are_judged_by_both_ends() {
    // copy_file_range and sendfile, 8 calls of 256 KiB each, then one call at the end of
    // the source (0 bytes); a call from a bad descriptor judges the destination alone.
    let all = "rate=1M/s";
    let (stats, _) = copy(all, true, false);
    stats.assert_calls_exactly(
        &[("open", 1), ("close", 1), ("read", 17)],
        "managed → other",
    );
    assert_eq!(stats.bytes("read"), 4 * MIB);
    let (stats, _) = copy(all, false, true);
    stats.assert_calls_exactly(
        &[("open", 1), ("close", 1), ("write", 18)],
        "other → managed",
    );
    assert_eq!(stats.bytes("write"), 4 * MIB);
    let (stats, _) = copy(all, true, true);
    stats.assert_calls_exactly(
        &[("open", 2), ("close", 2), ("read", 17), ("write", 18)],
        "managed → managed",
    );
    assert_eq!(
        (stats.bytes("read"), stats.bytes("write")),
        (4 * MIB, 4 * MIB)
    );
    let (stats, _) = copy(all, false, false);
    stats.assert_calls_exactly(&[], "other → other");
    assert!(stats.unmanaged() >= 17, "unmanaged copies: {}", stats.0);
}

#[test]
fn a_read_rule_holds_a_copy_out_of_a_managed_file() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // 2 MiB in 8 calls of 256 KiB at 4 MiB/s: each call is charged up to the burst before
    // and the rest after, which the next call waits for, so the eighth starts once seven
    // calls' bytes have passed; its own rest is owed when the loop ends.
    let (stats, secs) = copy("op=read rate=4MiB/s", true, false);
    let want = (7 * 256 * 1024) as f64 / (4 * MIB) as f64;
    assert!(
        (secs - want).abs() <= 0.05 * want,
        "copy out of a managed file took {secs:.3} s, want {want:.3} s ± 5%"
    );
    assert_eq!(stats.rule(0, "bytes"), 4 * MIB, "rule bytes");
}

/// Runs `stdio MODE FILE [BYTES]` under `class=data rate=20MiB/s`; returns the bytes and
/// seconds the program reports, and the run's report.
fn timed(s: &Scratch, mode: &str, bytes: Option<u64>) -> (u64, f64, Stats) {
    let mut cmd = argv![c_prog("stdio"), mode, s.path("out")].to_vec();
    cmd.extend(bytes.map(|b| b.to_string()));
    let run = s.sluice().rule("class=data rate=20MiB/s").exec(&cmd);
    let f: Vec<_> = run.stdout.split_whitespace().collect();
    let (moved, secs) = match f[..] {
        [b, t] => (b.parse().unwrap(), t.parse().unwrap()),
        _ => panic!("stdio {mode}: no figures: {run:?}"),
    };
    (moved, secs, run.into_stats())
}

/// The seconds `bytes` take at 20 MiB/s after the default burst (10 ms of the rate).
fn at_rate(bytes: u64) -> f64 {
    let rate = 20.0 * MIB as f64;
    (bytes as f64 - rate / 100.0) / rate
}

fn assert_within_2_percent(what: &str, secs: f64, bytes: u64) {
    let want = at_rate(bytes);
    eprintln!("{what}: {bytes} B in {secs:.3} s (want {want:.3} s ± 2%)");
    assert!(
        (secs - want).abs() <= 0.02 * want,
        "{what}: {bytes} B in {secs:.3} s, want {want:.3} s ± 2%"
    );
}

#[test]
fn fprintf_then_getline_and_fscanf_are_held_to_a_bytes_rule() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new();
    let (written, secs, stats) = timed(&s, "write", Some(40 * MIB));
    assert_eq!(std::fs::metadata(s.path("out")).unwrap().len(), written);
    assert_eq!(stats.bytes("write"), written, "write bytes counted");
    assert_eq!(stats.rule(0, "bytes"), written, "rule bytes");
    assert_within_2_percent("fprintf", secs, written);
    for mode in ["getline", "fscanf"] {
        let (read, secs, stats) = timed(&s, mode, None);
        assert_eq!(read, written, "{mode} read back");
        assert_eq!(stats.bytes("read"), written, "{mode}: read bytes counted");
        assert_within_2_percent(mode, secs, read);
    }
}

#[test]
fn stdio_on_unmanaged_targets_is_not_counted() {
    // fprintf to a file outside the mount and to /dev/null, and the program's printf of
    // its figures to a pipe (the test's capture of stdout): counted as unmanaged only.
    let s = Scratch::new();
    let other = tmp_dir();
    for file in [path_str(&other.path().join("o")), "/dev/null".to_owned()] {
        let run = s
            .sluice()
            .rule("rate=1M/s")
            .exec(&argv![c_prog("stdio"), "write", file, 4096]);
        let stats = run.ok();
        stats.assert_calls_exactly(&[], &format!("fprintf to {file}"));
        // 106 lines, the fopen and fclose, and the printf.
        assert!(stats.unmanaged() >= 109, "unmanaged calls: {}", stats.0);
    }
}
