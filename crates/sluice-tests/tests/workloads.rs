//! The workload generators, as real processes under the real stage: synthetic traces hold the
//! published statistics and repeat for a seed; the replayer makes exactly the trace's
//! calls at its rates, is held to a limit and ends late by its backlog; bad traces are
//! refused with file:line; `sluice load` makes one counted call per operation, moves IOR
//! volumes and runs periodic applications.
//!
//! The tests that measure time run one at a time (the machine has two cores).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::sync::Mutex;

use common::{Run, Scratch, Stats, path_str, sluice_bin, split, tmp_dir};

/// Held by every test that measures time.
static SERIAL: Mutex<()> = Mutex::new(());

/// `sluice ARGS` without the stage; the arguments are the words of `line` (the tests'
/// paths have no spaces).
fn sluice(line: &str) -> Output {
    std::process::Command::new(sluice_bin())
        .args(line.split_whitespace())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("cannot run sluice")
}

/// `sluice run --mount DIR [--rule RULE] --stats … -- sluice ARGS`, ARGS the words of
/// `line`.
fn under_stage(s: &Scratch, rule: Option<&str>, line: &str) -> Run {
    let mut cmd = vec![path_str(&sluice_bin())];
    cmd.extend(line.split_whitespace().map(str::to_owned));
    let mut run = s.sluice();
    if let Some(r) = rule {
        run = run.rule(r);
    }
    let r = run.exec(&cmd);
    assert!(r.status.success(), "{cmd:?} failed: {r:?}");
    r
}

/// `sluice replay TRACE --dir SCRATCH/r --threads 2 --csv CSV EXTRA` under the stage.
fn replay(s: &Scratch, rule: Option<&str>, trace: &Path, csv: &Path, extra: &str) -> Run {
    std::fs::create_dir(s.path("r")).unwrap();
    let (trace, csv) = (path_str(trace), path_str(csv));
    let line = format!(
        "replay {trace} --dir {} --threads 2 --csv {csv} {extra}",
        s.path("r")
    );
    under_stage(s, rule, &line)
}

/// The number that follows `marker` in `line`, up to the next space.
fn number_after(line: &str, marker: &str) -> f64 {
    let rest = line
        .split(marker)
        .nth(1)
        .unwrap_or_else(|| panic!("no '{marker}' in {line}"));
    let word = rest.split(' ').next().unwrap_or_default();
    word.parse()
        .unwrap_or_else(|_| panic!("'{word}' after '{marker}' in {line}"))
}

/// A trace file's rows: (second, op) → rate.
fn read_trace(path: &Path) -> BTreeMap<(usize, String), f64> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("second,op,rate"),
        "header of {}",
        path.display()
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                (f[0].parse().unwrap(), f[1].to_owned()),
                f[2].parse().unwrap(),
            )
        })
        .collect()
}

/// Per-second totals of a trace.
fn totals(rows: &BTreeMap<(usize, String), f64>) -> Vec<f64> {
    let mut t = Vec::new();
    for ((s, _), r) in rows {
        t.resize(t.len().max(s + 1), 0.0);
        t[*s] += r;
    }
    t
}

/// One row of the replayer's CSV.
#[derive(Debug)]
struct Row {
    second: u64,
    op: String,
    due: u64,
    done: u64,
    backlog: u64,
}

fn read_replay_csv(path: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("second,op,due,done,backlog"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let n = |i: usize| f[i].parse::<u64>().unwrap();
            Row {
                second: n(0),
                op: f[1].to_owned(),
                due: n(2),
                done: n(3),
                backlog: n(4),
            }
        })
        .collect()
}

/// The rows of one operation, by second.
fn of<'a>(rows: &'a [Row], op: &str) -> Vec<&'a Row> {
    rows.iter().filter(|r| r.op == op).collect()
}

/// `sluice trace synth` into `dir/name`.
fn synth(dir: &Path, name: &str, mean: &str, seconds: u32, seed: u64) -> std::path::PathBuf {
    let out = dir.join(name);
    let o = sluice(&format!(
        "trace synth --mean {mean} --seconds {seconds} --seed {seed} --out {}",
        path_str(&out)
    ));
    assert!(o.status.success(), "synth: {o:?}");
    out
}

#[test]
fn synthetic_traces_have_the_published_statistics_and_repeat_for_a_seed() {
    let dir = tmp_dir();
    let a = synth(dir.path(), "a.csv", "20k", 3600, 11);
    let b = synth(dir.path(), "b.csv", "20k", 3600, 11);
    let c = synth(dir.path(), "c.csv", "20k", 3600, 12);
    let bytes = |p: &Path| std::fs::read(p).unwrap();
    assert_eq!(bytes(&a), bytes(&b), "the same seed gives the same file");
    assert_ne!(bytes(&a), bytes(&c), "another seed gives another trace");

    let rows = read_trace(&a);
    let t = totals(&rows);
    let n = t.len() as f64;
    assert_eq!(t.len(), 3600);
    let mean = t.iter().sum::<f64>() / n;
    let peak = t.iter().copied().fold(0.0, f64::max);
    let lulls = t.iter().filter(|&&x| x <= mean / 4.0).count() as f64 / n;
    let high = t.iter().filter(|&&x| x >= 2.0 * mean).count() as f64 / n;
    // A lull followed at once by 450k of a 200k mean: the paper's volatility.
    let spikes = t
        .windows(2)
        .filter(|w| w[0] <= mean / 4.0 && w[1] >= 2.25 * mean)
        .count();
    eprintln!(
        "mean {mean:.1}, peak {:.3}× mean, {:.1}% lull seconds, {:.1}% at 2× mean or more, {spikes} lull-to-spike steps",
        peak / mean,
        lulls * 100.0,
        high * 100.0
    );
    assert!((mean - 20_000.0).abs() < 20.0, "mean {mean}");
    assert!((peak / mean - 5.0).abs() < 0.01, "peak {peak}");
    assert!((0.1..=0.35).contains(&lulls), "lull seconds {lulls}");
    assert!(high >= 0.08, "seconds at twice the mean or more: {high}");
    assert!(spikes >= 5, "lull-to-spike steps: {spikes}");

    let mut by_op: BTreeMap<&str, f64> = BTreeMap::new();
    for ((_, op), r) in &rows {
        *by_op.entry(op).or_default() += r;
    }
    let all: f64 = by_op.values().sum();
    let share = |op: &str| by_op[op] / all;
    let big4 = ["open", "close", "getattr", "rename"]
        .map(share)
        .iter()
        .sum::<f64>();
    eprintln!(
        "getattr {:.2}%, open+close+getattr+rename {:.2}%",
        share("getattr") * 100.0,
        big4 * 100.0
    );
    assert!((share("getattr") - 0.47).abs() < 0.01, "getattr share");
    assert!(
        (big4 - 0.98).abs() < 0.005,
        "the four largest operations' share"
    );
    let names: Vec<&str> = by_op.keys().copied().collect();
    assert_eq!(
        names,
        [
            "close", "getattr", "mkdir", "mknod", "open", "rename", "rmdir", "setattr", "statfs",
            "sync", "unlink"
        ]
    );

    // The shortest trace still has its mean, its peak and a lull.
    let t = totals(&read_trace(&synth(dir.path(), "d.csv", "3000", 10, 1)));
    let mean = t.iter().sum::<f64>() / 10.0;
    assert!((mean - 3000.0).abs() <= 1.1, "mean of 10 s: {mean}");
    assert!(t.iter().any(|&x| x <= 750.0), "a lull in 10 s: {t:?}");
    assert!(
        t.iter().any(|&x| (x - 15_000.0).abs() <= 11.0),
        "a 5× burst in 10 s: {t:?}"
    );
}

#[test]
fn bad_traces_are_refused_with_file_line_and_reason() {
    let dir = tmp_dir();
    let work = tmp_dir();
    let cases = [
        (
            "header",
            "sec,op,rate\n0,open,1\n",
            1,
            "expected the header 'second,op,rate'",
        ),
        (
            "fields",
            "second,op,rate\n0,open,1\n1,open\n",
            3,
            "expected 3 fields",
        ),
        ("second", "second,op,rate\nx,open,1\n", 2, "second 'x'"),
        (
            "op",
            "second,op,rate\n0,open,1\n0,stat,1\n",
            3,
            "op 'stat': no such operation",
        ),
        (
            "op",
            "second,op,rate\n0,mmap,1\n",
            2,
            "op 'mmap' cannot be replayed",
        ),
        ("rate", "second,op,rate\n0,open,fast\n", 2, "rate 'fast'"),
        (
            "again",
            "second,op,rate\n0,open,1\n1,open,1\n0,open,2\n",
            4,
            "again (first on line 2)",
        ),
        ("empty", "second,op,rate\n", 1, "no rows"),
    ];
    for (case, text, line, what) in cases {
        let file = path_str(&dir.path().join(format!("{case}.csv")));
        std::fs::write(&file, text).unwrap();
        for args in [
            format!("replay {file} --dir {}", path_str(work.path())),
            format!("trace stats {file}"),
        ] {
            let (status, stdout, stderr) = split(sluice(&args));
            assert_eq!(status.code(), Some(2), "{case} {args:?}: {stderr}");
            assert!(stdout.is_empty(), "{case}: {stdout}");
            let want = format!("sluice: {file}:{line}: ");
            assert!(
                stderr.starts_with(&want) && stderr.contains(what) && stderr.lines().count() == 1,
                "{case}: want one line '{want}…{what}…', got {stderr:?}"
            );
        }
    }
    assert_eq!(
        std::fs::read_dir(work.path()).unwrap().count(),
        0,
        "a refused replay made files"
    );
    let (status, _, stderr) = split(sluice("replay /nonexistent.csv --dir /tmp"));
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("sluice: /nonexistent.csv: "), "{stderr}");
}

#[test]
fn unthrottled_replay_makes_exactly_the_traces_calls_at_its_rates() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new();
    let out = tmp_dir();
    let trace = synth(out.path(), "t.csv", "4000", 10, 5);
    let csv = out.path().join("r.csv");
    // 10 trace seconds in 5: each second of the replay holds two of the trace's halves.
    let run = replay(&s, None, &trace, &csv, "--speedup 2");
    let rows = read_trace(&trace);
    let mut want: BTreeMap<String, f64> = BTreeMap::new();
    for ((_, op), r) in &rows {
        *want.entry(op.clone()).or_default() += r / 2.0;
    }
    let stats: &Stats = run.stats();
    for (op, calls) in stats.all_calls() {
        let expected = want.get(&op).map_or(0, |w| w.round() as u64);
        assert_eq!(
            calls, expected,
            "{op}: calls counted by the stage vs the trace's"
        );
    }
    let replay = read_replay_csv(&csv);
    let t = totals(&rows);
    for sec in 1..=5u64 {
        let in_sec: Vec<&Row> = replay.iter().filter(|r| r.second == sec).collect();
        let due: u64 = in_sec.iter().map(|r| r.due).sum();
        let done: u64 = in_sec.iter().map(|r| r.done).sum();
        let trace_due = (t[2 * sec as usize - 2] + t[2 * sec as usize - 1]) / 2.0;
        eprintln!("second {sec}: due {due} (trace {trace_due}), done {done}");
        assert!(
            (due as f64 - trace_due).abs() <= 12.0,
            "second {sec}: due {due} vs {trace_due}"
        );
        assert!(
            (done as f64 - due as f64).abs() <= due as f64 * 0.03 + 10.0,
            "second {sec}: {done} calls made of {due} due"
        );
        for r in &in_sec {
            assert!(
                (r.done as f64 - r.due as f64).abs() <= r.due as f64 * 0.05 + 10.0,
                "second {sec}: {r:?}"
            );
        }
    }
    assert!(
        replay.iter().all(|r| r.second <= 6),
        "the replay ran past its trace: {}",
        run.stdout
    );
    assert!(run.elapsed.as_secs_f64() < 6.0, "took {:?}", run.elapsed);
    assert!(
        std::fs::read_dir(s.path("r")).unwrap().next().is_none(),
        "left files behind"
    );
}

#[test]
fn throttled_replay_is_held_to_its_limit_and_finishes_late_by_its_backlog() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new();
    let out = tmp_dir();
    // getattr asks 3000/s for 3 s, then 500/s; opens and closes 2500/s throughout, more
    // than getattr's limit: they must not be held to its pace.
    let mut text = String::from("second,op,rate\n");
    for (sec, getattr) in [3000, 3000, 3000, 500].iter().enumerate() {
        text += &format!("{sec},getattr,{getattr}\n{sec},open,2500\n{sec},close,2500\n");
    }
    let trace = out.path().join("t.csv");
    std::fs::write(&trace, text).unwrap();
    let csv = out.path().join("r.csv");
    let run = replay(&s, Some("op=getattr rate=2000/s"), &trace, &csv, "");
    let stats = run.stats();
    stats.assert_calls_exactly(
        &[("getattr", 9500), ("open", 10_000), ("close", 10_000)],
        "replay",
    );
    assert_eq!(stats.rule(0, "admitted"), 9500);

    let rows = read_replay_csv(&csv);
    let getattr = of(&rows, "getattr");
    for r in &getattr {
        eprintln!("{r:?}");
    }
    // Held to 2000/s (+ the burst of 20 + a call in flight per thread) every second, and at
    // it in second 4 too, where the trace asks 500: the backlog is being made up.
    for r in &getattr[..4] {
        assert!((1_950..=2_022).contains(&r.done), "{r:?}");
    }
    // Fluid backlog: 1000 more due than allowed each of the first 3 s (less the burst).
    assert!(
        (2_950..=3_030).contains(&getattr[2].backlog),
        "{:?}",
        getattr[2]
    );
    for op in ["open", "close"] {
        for r in &of(&rows, op)[..4] {
            assert!(
                (2_450..=2_550).contains(&r.done),
                "{op} is not held back: {r:?}"
            );
        }
    }
    // 9500 getattrs at 2000/s, less the burst: 4.74 s, where the trace lasts 4.
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("replayed "))
        .unwrap();
    let took = number_after(line, " in ");
    eprintln!("{line}");
    assert!((4.65..=4.95).contains(&took), "{line}");
    assert!(line.ends_with(" s late"), "{line}");
}

#[test]
fn closed_loop_load_makes_one_counted_call_per_operation() {
    let s = Scratch::new();
    let ops = "open,close,getattr,access,setattr,rename,link,symlink,readlink,unlink,statfs,sync,mkdir,rmdir,mknod,readdir,getxattr,setxattr,listxattr,removexattr,read,write";
    let n = ops.split(',').count() as u64;
    std::fs::create_dir(s.path("l")).unwrap();
    let run = under_stage(
        &s,
        None,
        &format!(
            "load --dir {} --ops {ops} --threads 2 --count {} --csv",
            s.path("l"),
            10 * n
        ),
    );
    let mut want: Vec<(&str, u64)> = ops.split(',').map(|o| (o, 20)).collect();
    // The one directory stream each thread lists is opened and closed once.
    for (op, calls) in &mut want {
        if *op == "open" || *op == "close" {
            *calls += 2;
        }
    }
    run.stats().assert_calls_exactly(&want, "load");
    assert_eq!(run.stats().bytes("write"), 20 * 4096);
    assert!(
        std::fs::read_dir(s.path("l")).unwrap().next().is_none(),
        "left files behind"
    );
}

/// 3 MiB and a byte: three ranks' blocks, the first a byte longer.
const VOLUME: u64 = 3 * (1 << 20) + 1;

#[test]
fn ior_moves_its_volume_file_per_process_and_in_a_shared_file() {
    let s = Scratch::new();
    let d = s.path("ior");
    std::fs::create_dir(&d).unwrap();
    let run = under_stage(
        &s,
        None,
        &format!(
            "load ior --dir {d} --write --volume 8MiB --transfer 1MiB --threads 2 --file-per-process"
        ),
    );
    let st = run.stats();
    assert_eq!((st.calls("write"), st.bytes("write")), (8, 8 << 20));
    assert_eq!(
        (st.calls("open"), st.calls("close"), st.calls("unlink")),
        (2, 2, 2)
    );
    assert!(
        std::fs::read_dir(&d).unwrap().next().is_none(),
        "files left without --keep"
    );

    // A shared file, kept, then read back in smaller transfers; three ranks split 3 MiB + 1.
    let write = under_stage(
        &s,
        None,
        &format!(
            "load ior --dir {d} --write --volume {VOLUME} --transfer 256KiB --threads 3 --keep"
        ),
    );
    assert_eq!(write.stats().bytes("write"), VOLUME);
    // Each rank's block of 1 MiB (+1 byte for the first) in 256 KiB transfers.
    assert_eq!(write.stats().calls("write"), 4 * 3 + 1);
    let shared = Path::new(&d).join("sluice-ior");
    assert_eq!(std::fs::metadata(&shared).unwrap().len(), VOLUME);
    let read = under_stage(
        &s,
        None,
        &format!("load ior --dir {d} --read --volume {VOLUME} --transfer 1MiB --threads 3"),
    );
    assert_eq!(read.stats().bytes("read"), VOLUME);
    assert_eq!(read.stats().calls("read"), 2 + 1 + 1);
    assert!(!shared.exists(), "the shared file was not removed");
}

#[test]
fn periodic_application_alternates_compute_and_io_phases_held_by_a_limit() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new();
    let d = s.path("p");
    std::fs::create_dir(&d).unwrap();
    // 8 MiB per phase at 16 MiB/s: half a second of I/O after each 0.3 s of compute.
    let run = under_stage(
        &s,
        Some("op=write rate=16MiB/s"),
        &format!(
            "load periodic --dir {d} --write --volume 8MiB --transfer 1MiB --threads 2 --compute 0.3 --phases 3"
        ),
    );
    assert_eq!(run.stats().bytes("write"), 3 * (8 << 20));
    let phases: Vec<(f64, f64)> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("phase "))
        .map(|l| (number_after(l, "I/O from "), number_after(l, " for ")))
        .collect();
    eprintln!("{}", run.stdout);
    assert_eq!(phases.len(), 3, "{}", run.stdout);
    let mut end = 0.0;
    for (start, io) in phases {
        assert!(
            (0.42..=0.6).contains(&io),
            "I/O phase of {io} s, not 0.5: {}",
            run.stdout
        );
        assert!(
            (start - end - 0.3).abs() < 0.08,
            "compute from {end} to {start}, not 0.3 s"
        );
        end = start + io;
    }
}
