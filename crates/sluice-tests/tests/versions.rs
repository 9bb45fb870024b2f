//! Segments of another layout than this build's, with jobs running: a stage that cannot
//! use its segment passes through and says so, a local leaves a segment it cannot read
//! untouched and says so, and a local of this release replaces the previous release's
//! under a running job without letting it go (docs/deploy.md, "Upgrading").

use crate::common;

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use common::daemons::{
    Local, assert_pool_held, call_times, daemon_dir, monotonic_ns, rate_between, wait_for,
};
use common::{Scratch, bin_dir, c_prog, log_file, path_str, shm_dir, stage_lib, tmp_dir};
use serde_json::Value;
use sluice_control::segment_file::{HeaderFile, SegmentFile};
use sluice_core::config::StageConfig;
use sluice_core::rule::parse_rule;
use sluice_core::segment::{LAYOUT_VERSION, Refusals};

/// The tests measure rates; the upgrade test builds the previous release first.
static SERIAL: Mutex<()> = Mutex::new(());

const SEC: u64 = 1_000_000_000;

/// Makes the segment at `path` one that only readers of a later layout can read, as a
/// later release would write it: its stable prefix says layout `LAYOUT_VERSION + 1`,
/// readable from that layout on (word 1 at byte 8, word 6 at byte 48).
fn make_later_layout(path: &Path) {
    let later = LAYOUT_VERSION + 1;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open the segment");
    f.write_all_at(&later.to_le_bytes(), 8).expect("word 1");
    f.write_all_at(&later.to_le_bytes(), 48).expect("word 6");
}

/// The refusals counted in the segment at `path`.
fn refusals(path: &Path) -> Refusals {
    HeaderFile::open(path)
        .expect("the segment's header")
        .header()
        .refusals()
}

/// `rate one FILE OUT MS` with the stage preloaded on segment `segment`, logging to `log`;
/// returns the calls per second it made.
fn stat_loop_on(segment: &Path, file: &str, log: &str, ms: u64) -> f64 {
    let out = tmp_dir();
    let start = monotonic_ns();
    let o = Command::new(c_prog("rate"))
        .args(["one", file, &path_str(out.path()), &ms.to_string()])
        .env("LD_PRELOAD", stage_lib())
        .env("SLUICE_SEGMENT", segment)
        .env("SLUICE_LOG", log)
        .stdin(Stdio::null())
        .output()
        .expect("run rate");
    assert!(o.status.success(), "rate failed: {o:?}");
    let times = call_times(out.path());
    rate_between(&times, start, start + ms * 1_000_000)
}

/// A stage whose segment says it needs a reader of a later layout uses nothing of it:
/// every call passes through, the process counts its refusal in the segment's stable
/// prefix with its own layout, and the stage's log says why.
#[test]
fn a_stage_meeting_a_later_layout_passes_calls_through_and_counts_its_refusal() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new();
    let shm = shm_dir();
    let path = shm.path().join("sluice.later");
    let config = StageConfig {
        job: "later".to_owned(),
        mounts: vec![path_str(s.dir.path())],
        rules: vec![sluice_core::config::Slotted {
            slot: 0,
            rule: parse_rule("op=getattr rate=100/s").unwrap(),
        }],
        ..StageConfig::default()
    };
    let _segment = SegmentFile::create(path.clone(), &config, &[], None).expect("segment");
    let (_dir, log) = log_file();
    let held = stat_loop_on(&path, &s.file, &log, 500);
    assert!(
        held <= 110.0,
        "the rule of 100/s does not hold: {held:.0}/s"
    );
    assert_eq!(refusals(&path), Refusals::default());

    make_later_layout(&path);
    for run in 1..=2 {
        let rate = stat_loop_on(&path, &s.file, &log, 300);
        assert!(
            rate > 1000.0,
            "run {run}: {rate:.0}/s: calls were held by a segment the stage cannot read"
        );
        let r = refusals(&path);
        assert_eq!(
            (r.count, r.stage_layout as u64),
            (run, LAYOUT_VERSION),
            "each process counts its refusal with its layout"
        );
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let why = format!(
        "segment of layout {0}, which needs a reader of layout {0} or later; this is layout {LAYOUT_VERSION}",
        LAYOUT_VERSION + 1
    );
    assert!(
        text.contains(&why) && text.contains("counted in the segment's refusals"),
        "the stage's log does not say why: {text}"
    );
}

/// A segment file shorter than its layout needs (a truncated file) is refused like an
/// unknown layout, without a fault: the program runs and its calls pass through.
#[test]
fn a_short_segment_file_is_refused_without_a_fault() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new();
    let shm = shm_dir();
    let path = shm.path().join("sluice.short");
    let config = StageConfig {
        job: "short".to_owned(),
        ..StageConfig::default()
    };
    let mut segment = SegmentFile::create(path.clone(), &config, &[], None).expect("segment");
    segment.remove_on_drop(false);
    drop(segment);
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(4096).expect("truncate");
    let (_dir, log) = log_file();
    let rate = stat_loop_on(&path, &s.file, &log, 200);
    assert!(rate > 1000.0, "{rate:.0}/s");
    assert_eq!(refusals(&path).count, 1);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("the file is 4096 bytes"),
        "the stage's log does not say why: {text}"
    );
}

/// `sluice attach` for job `job` on `local`, held while process `holder` lives; returns
/// the segment's path.
fn attach(local: &Local, job: &str, mount: &str, holder: &Child) -> PathBuf {
    let o = Command::new(common::sluice_bin())
        .env("SLUICE_STAGE", stage_lib())
        .args(["attach", "--socket"])
        .arg(&local.socket)
        .args(["--job", job, "--mount", mount, "--while-pid"])
        .arg(holder.id().to_string())
        .stdin(Stdio::null())
        .output()
        .expect("sluice attach");
    assert!(o.status.success(), "sluice attach: {o:?}");
    let text = String::from_utf8_lossy(&o.stdout);
    let segment = text
        .lines()
        .find_map(|l| l.strip_prefix("export SLUICE_SEGMENT="))
        .unwrap_or_else(|| panic!("no segment in {text}"));
    PathBuf::from(segment)
}

/// The `segments` entries `sluice jobs --json` shows for `job`.
fn segment_notes(local: &Local, job: &str) -> Vec<Value> {
    let jobs = local.jobs();
    jobs["jobs"]
        .as_array()
        .and_then(|a| a.iter().find(|j| j["job"] == job))
        .map(|j| j["segments"].as_array().cloned().unwrap_or_default())
        .unwrap_or_default()
}

/// A local restarted on a segment only a later layout reads (a downgrade with a job
/// running) adopts the job but leaves its segment untouched, and says so in its log and
/// in `sluice jobs`; a process of the job whose stage cannot use the segment is counted,
/// and the local logs and reports the refusal; the job ends as any other.
#[test]
fn a_local_leaves_a_segment_it_cannot_read_untouched_and_reports_refusals() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = daemon_dir();
    let config = "interval = \"200ms\"\n\n[[rule]]\nrule = \"cap: op=getattr rate=500/s\"\n";
    let mut local = Local::start(dir.path(), config, &["--node", "n1"], None);
    let s = Scratch::new();
    let mut holder = Command::new("sleep").arg("60").spawn().expect("sleep");
    let segment = attach(&local, "D", &s.file, &holder);
    let (_logdir, log) = log_file();
    let held = stat_loop_on(&segment, &s.file, &log, 500);
    assert!(
        held <= 550.0,
        "the rule of 500/s does not hold: {held:.0}/s"
    );
    assert!(segment_notes(&local, "D").is_empty(), "{}", local.jobs());

    local.daemon.kill9();
    make_later_layout(&segment);
    let before = std::fs::read(&segment).unwrap();
    local.restart();
    let log2 = || std::fs::read_to_string(dir.path().join("local.log2")).unwrap_or_default();
    assert!(
        log2().contains("its segment left untouched at the rates last written"),
        "the local does not say what it did with the segment: {}",
        log2()
    );
    assert!(
        wait_for(Duration::from_secs(3), || !segment_notes(&local, "D")
            .is_empty()),
        "the untouched segment is not reported: {}",
        local.jobs()
    );
    let note = segment_notes(&local, "D");
    assert_eq!(note[0]["untouched"], true, "{note:?}");
    assert_eq!(note[0]["layout"], LAYOUT_VERSION + 1, "{note:?}");
    assert_eq!(note[0]["node"], "n1", "{note:?}");

    let rate = stat_loop_on(&segment, &s.file, &log, 300);
    assert!(rate > 1000.0, "{rate:.0}/s");
    assert!(
        wait_for(Duration::from_secs(3), || {
            segment_notes(&local, "D")
                .first()
                .is_some_and(|n| n["refused"] == 1 && n["stage_layout"] == LAYOUT_VERSION)
        }),
        "the refusal is not reported: {}",
        local.jobs()
    );
    assert!(
        log2().contains("1 process(es) of the job could not use its segment"),
        "the refusal is not logged: {}",
        log2()
    );
    let after = std::fs::read(&segment).unwrap();
    let changed: Vec<usize> = (0..before.len())
        .filter(|&i| before[i] != after[i])
        .collect();
    assert!(
        changed.iter().all(|&i| (56..64).contains(&i)),
        "bytes other than the refusals' changed: {:?}",
        &changed[..changed.len().min(10)]
    );

    let _ = holder.kill();
    let _ = holder.wait();
    assert!(
        wait_for(Duration::from_secs(5), || !segment.exists()),
        "the untouched job's segment outlived the job"
    );
}

/// The `sluice` binary and stage library of the release before versioned segments
/// (`b068009`), built once by tests/old-release.sh and kept under
/// target/old-release/COMMIT (tests/integration.sh starts that build in the background
/// once the modules that measure rates have run; this waits for it, or builds).
fn previous_release() -> PathBuf {
    let script = common::workspace().join("tests/old-release.sh");
    let o = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .expect("run tests/old-release.sh");
    eprint!("{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "cannot build the previous release");
    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())
}

/// The upgrade of a node with a job running: the previous release's local runs a job
/// (the previous release's `sluice run` and stage) under a pool; the local is killed
/// and this release's started in its place, on the same socket and state directory. It
/// adopts the job's segment of layout 3, says so, and keeps the job at its rate; the
/// pool's one-second bound holds throughout. A launcher and stage of the previous release
/// attached to the new local are held by the new segment, which they read.
#[test]
fn a_local_replaced_by_this_release_keeps_the_previous_releases_job_at_its_rate() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let old = previous_release();
    let dir = daemon_dir();
    let config = "interval = \"500ms\"\n\n[[pool]]\nname = \"md\"\nmatch = \"op=getattr\"\n\
                  capacity = \"2k/s\"\nalgorithm = \"psfa\"\n";
    let mut local = Local::start_from(&old, dir.path(), config, &["--node", "n1"], None);
    let s = Scratch::new();
    let rate = c_prog("rate");
    let out = tmp_dir();
    let start = monotonic_ns();
    let mut job = local.job_from(
        &old,
        "A",
        &["--mount", &s.file],
        &[&rate, "one", &s.file, &path_str(out.path()), "7000"],
    );
    std::thread::sleep(Duration::from_millis(3000));
    let swapped = monotonic_ns();
    local.restart_from(&bin_dir());
    let ready = monotonic_ns();
    let log = std::fs::read_to_string(dir.path().join("local.log2")).unwrap();
    assert!(
        log.contains("its segment of layout 3 (an earlier release's) read and controlled"),
        "the new local does not say what it did with the old segment: {log}"
    );
    assert!(
        wait_for(Duration::from_secs(3), || {
            let note = segment_notes(&local, "A");
            note.len() == 1 && note[0]["layout"] == 3 && note[0]["untouched"] == false
        }),
        "the adopted segment of layout 3 is not reported: {}",
        local.jobs()
    );
    let status = job.wait().unwrap();
    assert!(status.success(), "the job failed: {status}");
    let times = call_times(out.path());
    let before = rate_between(&times, start + 1500 * SEC / 1000, swapped);
    // From the swap on: the adopted pool keeps the rate last written until the new local
    // computes its own.
    let after = rate_between(&times, swapped, start + 6900 * SEC / 1000);
    eprintln!(
        "previous release's local {before:.0}/s, this release's from the swap on {after:.0}/s \
         (ready {:.0} ms after the swap)",
        (ready - swapped) as f64 / 1e6
    );
    for (what, got) in [("before", before), ("after", after)] {
        assert!(
            (got - 2000.0).abs() <= 100.0,
            "{what} the upgrade: {got:.0}/s, expected the pool's 2000/s"
        );
    }
    let settled = start + 1500 * SEC / 1000;
    assert_pool_held(&times, settled, 2000, 1);

    let out = tmp_dir();
    let stats = tmp_dir();
    let stats_file = stats.path().join("stats.json");
    let start = monotonic_ns();
    let mut old_launcher = Command::new(old.join("sluice"))
        .env("SLUICE_STAGE", old.join("libsluice_stage.so"))
        .args(["run", "--socket"])
        .arg(&local.socket)
        .args(["--job", "B", "--mount", &s.file, "--stats"])
        .arg(&stats_file)
        .args(["--", &rate, "one", &s.file, &path_str(out.path()), "2500"])
        .stdin(Stdio::null())
        .spawn()
        .expect("the previous release's sluice run");
    let status = old_launcher.wait().unwrap();
    assert!(
        status.success(),
        "the previous release's job failed: {status}"
    );
    let times = call_times(out.path());
    let calls: Value =
        serde_json::from_str(&std::fs::read_to_string(&stats_file).unwrap()).expect("stats JSON");
    assert_eq!(
        calls["ops"]["getattr"]["calls"].as_u64(),
        Some(times.len() as u64),
        "the previous release's stage does not count on this release's segment: {calls}"
    );
    let held = rate_between(&times, start + 1500 * SEC / 1000, start + 2400 * SEC / 1000);
    assert!(
        held <= 2100.0,
        "the previous release's stage is not held by this release's segment: {held:.0}/s"
    );
}
