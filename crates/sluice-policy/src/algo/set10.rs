//! `set10`: IO-SETS' SET-10 (Boito, Pallez, Teylo et al.): jobs grouped by the order of
//! magnitude of their I/O period, exclusive access inside a group, weighted sharing
//! across groups.

use std::collections::BTreeMap;

use super::Allocator;
use crate::obs::{Observation, Round};
use crate::period::{CONFIDENT, Detection, History, PeriodFrom, PeriodSeen};
use crate::share::water_fill;

/// Detection is repeated at most this often (in intervals) per job: periods change
/// slowly and a transform per job per interval would dominate the cost. Sixteen is
/// also the coarse level's step (period::COARSE): each detection sees a new coarse
/// sample.
const REDETECT_EVERY: u64 = 16;
/// Priority of the set formed by one job whose period is not known yet, as in the
/// BeeGFS implementation of IO-SETS.
const UNKNOWN_PRIORITY: f64 = 1.0 / 50.0;

/// SET-10: a job with I/O period p (seconds) belongs to set i = round(log₁₀ p), whose
/// priority is 10⁻ⁱ — jobs that do I/O often and briefly come before jobs that do it
/// rarely and at length. Sets with demand share the capacity in proportion to their
/// priorities; a set that cannot use its share hands the rest to the others, again by
/// priority. Inside a set access is exclusive, first come first served by the start of
/// each job's current I/O phase: the first job gets min(arrivals, the set's share), the
/// next what remains, and so on.
///
/// A job with no arrivals is inactive. A job whose `period_s` is not given has its
/// period detected from its arrivals per interval (a [`History`], see
/// [`crate::period`]); until a detection is confident and its period's bounds
/// ([`Detection::bounds`]) fall in one decade, the job forms a set of its own with
/// priority 1/50. The set is all SET-10 needs of a period, so a detection acts as soon
/// as its set is certain, even while its period is not yet precise.
///
/// [`Set10::with_silence_bound`] builds sluice's variant, `set10-silence`, and
/// [`Set10::with_ftio`] the paper's experiment's `set10-ftio`: see there.
#[derive(Debug, Clone, Default)]
pub struct Set10 {
    interval: u64,
    jobs: BTreeMap<String, Track>,
    /// Whether a job not yet detected is placed by the bound its silences set on its
    /// period (`set10-silence`).
    silence_bound: bool,
    /// Whether periods are found by FTIO's own rule and acted on as the paper's script
    /// did (`set10-ftio`).
    ftio: bool,
    /// The last round's sets of two or more jobs, each in its order of service.
    succession: Vec<Vec<usize>>,
}

/// What SET-10 remembers of one job.
#[derive(Debug, Clone, Default)]
struct Track {
    /// The interval its current I/O phase started in.
    phase_start: u64,
    /// The last interval it had arrivals in.
    last_active: Option<u64>,
    /// The last interval it was observed in.
    last_seen: u64,
    /// Its arrivals per interval, kept only while its period is not given.
    history: History,
    /// The period acted on: that of the last detection whose set was certain.
    detected: Option<f64>,
    /// The period it was last placed by, and where that came from.
    placed_by: Option<(f64, PeriodFrom)>,
    /// The last detection, whatever its confidence, and when detection last ran.
    last: Option<Detection>,
    last_detection: Option<u64>,
    /// Intervals without arrivals since its last one (or since it was first seen).
    idle_run: u64,
    /// The longest such run that has ended: a lower bound on its period.
    longest_idle: u64,
}

/// A group of jobs: a decade of periods, or one job of unknown period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum SetKey {
    Decade(i32),
    Alone(usize),
}

impl SetKey {
    fn priority(self) -> f64 {
        match self {
            SetKey::Decade(i) => 10f64.powi(-i),
            SetKey::Alone(_) => UNKNOWN_PRIORITY,
        }
    }
}

impl Set10 {
    /// A fresh instance with no history.
    pub fn new() -> Self {
        Set10::default()
    }

    /// sluice's `set10-silence`: as SET-10, but a job whose period is neither given nor
    /// yet detected with confidence is placed by a lower bound on its period, the
    /// longest run of intervals it has gone without I/O (since it was first seen, or
    /// between two of its I/O phases), whenever the set that bound proves it to be in
    /// or beyond has a priority below the 1/50 of a job of unknown period. A periodic
    /// job computes at least that long between phases, so its period is at least the
    /// bound and its set at least round(log₁₀ bound); the bound only ever lowers a job
    /// below the published default, never raises it above (a busy job with short gaps
    /// keeps 1/50). The published SET-10 (with FTIO) waits for the first prediction;
    /// a job of period 38.4 s at 100 ms is detected with confidence only after two
    /// to five of its periods, whereas its first silence of 36 s already fixes its set.
    pub fn with_silence_bound(mut self) -> Self {
        self.silence_bound = true;
        self
    }

    /// `set10-ftio`: SET-10 fed as the IO-SETS paper's experiment fed it. A job's period
    /// is FTIO's prediction on its activity since it was first seen
    /// ([`History::detect_ftio`]), acted on from FTIO's confidence [`CONFIDENT`] (the
    /// paper's script acts on FTIO's predictions and gives no threshold; 0.8 is
    /// `set10`'s) and placed by the period itself, without `set10`'s test against
    /// noise or its wait for the period's bounds to fall in one decade. Before a
    /// low-frequency job's activity has repeated, FTIO names the length of its first
    /// iteration so far, already in the right decade (see [`crate::period::detect_ftio`]),
    /// so such a job is placed during its first I/O phase; on noise FTIO is sometimes
    /// confident too, and a job may be placed by a chance period.
    pub fn with_ftio(mut self) -> Self {
        self.ftio = true;
        self
    }

    /// The period `set10-silence` places a job by while none is given or detected:
    /// its longest silence in seconds, when that puts it below the unknown priority.
    fn silence_period(&self, longest_idle: u64, dt: f64) -> Option<f64> {
        if !self.silence_bound || longest_idle == 0 {
            return None;
        }
        let bound = longest_idle as f64 * dt;
        (SetKey::Decade(decade(bound)).priority() < UNKNOWN_PRIORITY).then_some(bound)
    }

    /// The longest run of intervals `job` has gone without I/O between its first
    /// observation and its last I/O phase (what `set10-silence` bounds its period by);
    /// `None` for a job not seen.
    pub fn longest_silence(&self, job: &str) -> Option<u64> {
        self.jobs.get(job).map(|t| t.longest_idle)
    }

    /// Brings one job's memory up to this interval; returns its known period and the
    /// interval its current I/O phase started in.
    fn observe(&mut self, job: &Observation, dt: f64) -> (Option<f64>, u64) {
        let now = self.interval;
        if !self.jobs.contains_key(&job.id) {
            // Cloning the id only for a job seen for the first time; the intervals
            // before it was were not idle intervals of its own.
            let track = Track {
                last_seen: now.saturating_sub(1),
                ..Track::default()
            };
            self.jobs.insert(job.id.clone(), track);
        }
        let Some(track) = self.jobs.get_mut(&job.id) else {
            return (job.period_s, now);
        };
        let arrivals = job.arrivals;
        // Intervals the job was absent from were intervals without activity.
        let gap = now.saturating_sub(track.last_seen).saturating_sub(1);
        if arrivals > 0.0 {
            if track.last_active.is_none_or(|at| at + 1 != now) {
                track.phase_start = now;
            }
            track.last_active = Some(now);
            track.longest_idle = track.longest_idle.max(track.idle_run + gap);
            track.idle_run = 0;
        } else {
            track.idle_run += gap + 1;
        }
        if let Some(given) = job.period_s {
            track.history = History::new();
            track.last = None;
            track.last_seen = now;
            track.placed_by = Some((given, PeriodFrom::Given));
            return (job.period_s, track.phase_start);
        }
        track
            .history
            .push_idle(usize::try_from(gap).unwrap_or(usize::MAX));
        track.history.push(arrivals);
        track.last_seen = now;
        let due = track
            .last_detection
            .is_none_or(|at| now >= at + REDETECT_EVERY);
        if due {
            track.last_detection = Some(now);
            track.last = match self.ftio {
                true => track.history.detect_ftio(dt),
                false => track.history.detect(dt),
            };
            if let Some(found) = track.last.filter(|d| d.confidence >= CONFIDENT) {
                let (lo, hi) = found.bounds();
                if self.ftio || decade(lo) == decade(hi) {
                    track.detected = Some(found.period_s);
                }
            }
        }
        let (detected, longest_idle, phase_start) =
            (track.detected, track.longest_idle, track.phase_start);
        let placed_by = match detected {
            Some(p) => Some((p, PeriodFrom::Detected)),
            None => self
                .silence_period(longest_idle, dt)
                .map(|p| (p, PeriodFrom::Silence)),
        };
        if let Some(track) = self.jobs.get_mut(&job.id) {
            track.placed_by = placed_by;
        }
        (placed_by.map(|(p, _)| p), phase_start)
    }
}

/// SET-10's set of a period: round(log₁₀ p).
fn decade(period_s: f64) -> i32 {
    period_s.log10().round().clamp(-300.0, 300.0) as i32
}

impl Allocator for Set10 {
    fn forget(&mut self, job: &str) {
        self.jobs.remove(job);
        // Indices of a round the job was in: stale once it is gone.
        self.succession.clear();
    }

    fn allocate(&mut self, round: &Round<'_>) -> Vec<f64> {
        let jobs = round.jobs();
        let mut sets: BTreeMap<SetKey, Vec<usize>> = BTreeMap::new();
        let mut phase_start = vec![0; jobs.len()];
        for (i, job) in jobs.iter().enumerate() {
            let period;
            (period, phase_start[i]) = self.observe(job, round.interval_s());
            if job.arrivals > 0.0 {
                let key = period.map_or(SetKey::Alone(i), |p| SetKey::Decade(decade(p)));
                sets.entry(key).or_default().push(i);
            }
        }
        self.interval += 1;

        let demand: Vec<f64> = sets
            .values()
            .map(|members| members.iter().map(|&i| jobs[i].arrivals).sum())
            .collect();
        let priority: Vec<f64> = sets.keys().map(|k| k.priority()).collect();
        let shares = water_fill(round.capacity(), &demand, &priority);

        let mut rates = vec![0.0; jobs.len()];
        self.succession.clear();
        for (members, share) in sets.into_values().zip(shares) {
            let mut members = members;
            members.sort_unstable_by(|&a, &b| {
                (phase_start[a].cmp(&phase_start[b])).then_with(|| round.cmp_ids(a, b))
            });
            let mut left = share;
            for &i in members.iter() {
                rates[i] = jobs[i].arrivals.min(left);
                left -= rates[i];
            }
            // Only sets of more than one job hand the pool over: a set of one (a job of
            // unknown period) has no one to hand it to.
            if members.len() > 1 {
                self.succession.push(members);
            }
        }
        rates
    }

    fn succession(&self) -> &[Vec<usize>] {
        &self.succession
    }

    fn period(&self, job: &str) -> Option<PeriodSeen> {
        self.jobs.get(job).map(|t| PeriodSeen {
            placed_by: t.placed_by,
            last: t.last,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::period::MIN_CYCLES;

    fn job(id: &str, arrivals: f64, period_s: Option<f64>) -> Observation {
        Observation {
            period_s,
            ..Observation::new(id, 0.0, 0.0, arrivals)
        }
    }

    #[test]
    fn short_periods_outrank_long_ones_and_sets_hand_on_what_they_cannot_use() {
        // Set 0 (period 1 s, priority 1) and set 1 (period 10 s, priority 0.1).
        let jobs = [
            job("long", 100.0, Some(10.0)),
            job("short", 50.0, Some(1.2)),
        ];
        let round = Round::new(100.0, 1.0, &jobs).expect("valid round");
        let rates = Set10::new().allocate(&round);
        // short's set would get 100/1.1 ≈ 90.9 but asks for 50; long takes the rest.
        assert_eq!(rates, vec![50.0, 50.0]);
    }

    #[test]
    fn access_inside_a_set_is_first_come_first_served() {
        let mut set10 = Set10::new();
        let first = [job("b", 80.0, Some(3.0))];
        set10.allocate(&Round::new(100.0, 1.0, &first).expect("valid round"));
        let both = [job("a", 80.0, Some(2.0)), job("b", 80.0, Some(3.0))];
        let rates = set10.allocate(&Round::new(100.0, 1.0, &both).expect("valid round"));
        // b's phase started first: it is served in full, a gets the rest.
        assert_eq!(rates, vec![20.0, 80.0]);
    }

    #[test]
    fn the_succession_is_each_set_of_two_or_more_in_its_order_of_service() {
        let mut set10 = Set10::new();
        let first = [job("c", 80.0, Some(60.0)), job("k", 10.0, Some(1.0))];
        set10.allocate(&Round::new(100.0, 1.0, &first).expect("valid round"));
        // a and b (all three in set 2) start their phases later than c; a set of one
        // (k) hands nothing over, and an idle job (d) is in no set.
        let all = [
            job("a", 80.0, Some(40.0)),
            job("b", 80.0, Some(80.0)),
            job("c", 80.0, Some(60.0)),
            job("d", 0.0, Some(70.0)),
            job("k", 10.0, Some(1.0)),
        ];
        set10.allocate(&Round::new(100.0, 1.0, &all).expect("valid round"));
        assert_eq!(set10.succession(), &[vec![2, 0, 1]]);
        set10.forget("a");
        assert!(set10.succession().is_empty());
    }

    #[test]
    fn a_job_of_unknown_period_forms_a_set_of_its_own_until_detected() {
        let mut set10 = Set10::new();
        // 128 intervals: a detection needs 64 samples before it can be confident
        // (period::detect_period), and detection runs every 16 intervals.
        for t in 0..128 {
            // 'p' does I/O two intervals out of eight; 'k' (period 1 s) always.
            let burst = if t % 8 < 2 { 100.0 } else { 0.0 };
            let jobs = [job("k", 100.0, Some(1.0)), job("p", burst, None)];
            let rates = set10.allocate(&Round::new(100.0, 1.0, &jobs).expect("valid round"));
            if t == 0 {
                // Unknown: priority 1/50 against 1, so p gets 100/51.
                assert!((rates[1] - 100.0 / 51.0).abs() < 1e-9);
            }
        }
        // Detected as 8 s → set 1, priority 0.1: p now gets 100 · 0.1/1.1 (it is
        // bursting at t = 120, 121 and idle at t = 127; check a burst interval).
        let jobs = [job("k", 100.0, Some(1.0)), job("p", 100.0, None)];
        let rates = set10.allocate(&Round::new(100.0, 1.0, &jobs).expect("valid round"));
        assert!((rates[1] - 100.0 * 0.1 / 1.1).abs() < 1e-9, "{rates:?}");
    }

    #[test]
    fn a_long_period_is_placed_once_its_set_is_certain() {
        // IO-SETS' low-frequency application ÷ 10 at 100-ms intervals: 36 s of compute,
        // then 2.4 s of I/O, a period of 38.4 s (set 2), beside a job of known period.
        let mut set10 = Set10::new();
        let mut placed = None;
        for t in 0..4000u64 {
            let busy = (t % 384) >= 360;
            let jobs = [
                job("k", 100.0, Some(1.0)),
                job("lf", if busy { 100.0 } else { 0.0 }, None),
            ];
            set10.allocate(&Round::new(100.0, 0.1, &jobs).expect("valid round"));
            if placed.is_none() && detected(&set10, "lf").is_some() {
                placed = Some(t);
            }
        }
        let seen = set10.period("lf").expect("seen");
        let period = detected(&set10, "lf").expect("placed");
        assert_eq!(decade(period), 2, "{seen:?}");
        let last = seen.last.expect("a detection ran");
        assert!(last.confidence >= CONFIDENT, "{last:?}");
        // Placed within five of its periods, and never before its set was certain.
        assert!(placed.is_some_and(|t| t <= 5 * 384), "{placed:?}");
        // A period given is reported as given, with no detection.
        let k = set10.period("k").expect("seen");
        assert_eq!(k.placed_by, Some((1.0, PeriodFrom::Given)));
        assert_eq!(k.last, None);
        assert_eq!(set10.period("never"), None);
    }

    /// The period `job` is placed by when it was detected.
    fn detected(set10: &Set10, job: &str) -> Option<f64> {
        match set10.period(job)?.placed_by? {
            (p, PeriodFrom::Detected) => Some(p),
            _ => None,
        }
    }

    /// IO-SETS' scaled low-frequency job at 100-ms intervals: 360 intervals of compute,
    /// then 24 of I/O.
    fn lf_busy(t: u64) -> bool {
        t % 384 >= 360
    }

    #[test]
    fn set10_silence_places_a_long_period_at_its_first_phase() {
        let mut published = Set10::new();
        let mut silence = Set10::new().with_silence_bound();
        for t in 0..=360u64 {
            let lf = if lf_busy(t) { 100.0 } else { 0.0 };
            let jobs = [
                job("k", 100.0, Some(1.0)),
                job("lf1", lf, None),
                job("lf2", lf, None),
            ];
            let round = Round::new(100.0, 0.1, &jobs).expect("valid round");
            let p = published.allocate(&round);
            let s = silence.allocate(&round);
            if t == 360 {
                // Published: each job of unknown period a set of its own at 1/50, the
                // two sharing what k leaves.
                let alone = 100.0 * 0.02 / 1.04;
                assert!(
                    (p[1] - alone).abs() < 1e-9 && (p[2] - alone).abs() < 1e-9,
                    "{p:?}"
                );
                // 36 s of silence: period ≥ 36 s, set 2 (priority 1/100): one set,
                // exclusive inside, k's set 0 first.
                let set2 = 100.0 * 0.01 / 1.01;
                assert!((s[1] - set2).abs() < 1e-9 && s[2] == 0.0, "{s:?}");
            }
        }
        assert_eq!(silence.longest_silence("lf1"), Some(360));
        let placed_by = silence.period("lf1").and_then(|p| p.placed_by);
        assert!(
            placed_by
                .is_some_and(|(p, from)| from == PeriodFrom::Silence && (p - 36.0).abs() < 1e-9),
            "placed by its silence, not detected: {placed_by:?}"
        );
    }

    #[test]
    fn set10_ftio_places_a_long_period_during_its_first_phase_stretched_by_sharing() {
        // IO-SETS' low-frequency job as the scenario's first round makes it: 36 s of
        // compute, then a phase stretched to 40 s while fifteen share the device.
        let mut published = Set10::new();
        let mut ftio = Set10::new().with_ftio();
        let mut placed_at = None;
        for t in 0..760u64 {
            let lf = if t >= 360 { 10.0 + (t % 7) as f64 } else { 0.0 };
            let jobs = [job("k", 100.0, Some(1.0)), job("lf", lf, None)];
            let round = Round::new(100.0, 0.1, &jobs).expect("valid round");
            published.allocate(&round);
            ftio.allocate(&round);
            if placed_at.is_none() && detected(&ftio, "lf").is_some() {
                placed_at = Some(t);
            }
        }
        // FTIO names the window's length, the first iteration so far: set 2.
        let period = detected(&ftio, "lf").expect("placed by FTIO's prediction");
        assert_eq!(decade(period), 2, "{period}");
        assert!(placed_at.is_some_and(|t| t < 700), "{placed_at:?}");
        let last = ftio
            .period("lf")
            .and_then(|p| p.last)
            .expect("a prediction");
        assert!(last.cycles < MIN_CYCLES, "{last:?}");
        // The checked detection has seen nothing repeat yet.
        assert_eq!(detected(&published, "lf"), None);
    }

    #[test]
    fn set10_silence_never_raises_a_job_above_the_unknown_priority() {
        // Busy with one idle interval in four (bound 0.1 s: set −1), and a job of
        // period 2 s (set 0): both keep the published 1/50 until detected.
        let mut silence = Set10::new().with_silence_bound();
        for t in 0..20u64 {
            let busy = if t % 4 == 3 { 0.0 } else { 100.0 };
            let periodic = if t % 20 == 19 { 100.0 } else { 0.0 };
            let jobs = [
                job("k", 100.0, Some(1.0)),
                job("busy", busy, None),
                job("p", periodic, None),
            ];
            let rates = silence.allocate(&Round::new(100.0, 0.1, &jobs).expect("valid round"));
            if t == 19 {
                let alone = 100.0 * 0.02 / 1.02;
                assert!((rates[2] - alone).abs() < 1e-9, "{rates:?}");
            }
            if t == 4 {
                let alone = 100.0 * 0.02 / 1.02;
                assert!((rates[1] - alone).abs() < 1e-9, "{rates:?}");
            }
        }
    }

    #[test]
    fn a_job_first_seen_late_has_no_silence_before_it() {
        let mut silence = Set10::new().with_silence_bound();
        for _ in 0..500 {
            let jobs = [job("k", 100.0, Some(1.0))];
            silence.allocate(&Round::new(100.0, 0.1, &jobs).expect("valid round"));
        }
        let jobs = [job("k", 100.0, Some(1.0)), job("late", 100.0, None)];
        let rates = silence.allocate(&Round::new(100.0, 0.1, &jobs).expect("valid round"));
        assert_eq!(silence.longest_silence("late"), Some(0));
        assert!((rates[1] - 100.0 * 0.02 / 1.02).abs() < 1e-9, "{rates:?}");
    }
}
