//! `set10`: IO-SETS' SET-10 (Boito, Pallez, Teylo et al.): jobs grouped by the order of
//! magnitude of their I/O period, exclusive access inside a group, weighted sharing
//! across groups.

use std::collections::BTreeMap;

use super::Allocator;
use crate::obs::{Observation, Round};
use crate::period::{CONFIDENT, Detection, History};
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
#[derive(Debug, Clone, Default)]
pub struct Set10 {
    interval: u64,
    jobs: BTreeMap<String, Track>,
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
    /// The last detection, whatever its confidence, and when detection last ran.
    last: Option<Detection>,
    last_detection: Option<u64>,
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

    /// The last period detected for `job` (whatever its confidence), and the period
    /// SET-10 acts on for it; `None`s for a job whose period is given or not yet found.
    pub fn detection(&self, job: &str) -> (Option<Detection>, Option<f64>) {
        self.jobs
            .get(job)
            .map_or((None, None), |t| (t.last, t.detected))
    }

    /// Brings one job's memory up to this interval; returns its known period and the
    /// interval its current I/O phase started in.
    fn observe(&mut self, job: &Observation, dt: f64) -> (Option<f64>, u64) {
        let now = self.interval;
        if !self.jobs.contains_key(&job.id) {
            // Cloning the id only for a job seen for the first time.
            self.jobs.insert(job.id.clone(), Track::default());
        }
        let Some(track) = self.jobs.get_mut(&job.id) else {
            return (job.period_s, now);
        };
        let arrivals = job.arrivals;
        if arrivals > 0.0 {
            if track.last_active.is_none_or(|at| at + 1 != now) {
                track.phase_start = now;
            }
            track.last_active = Some(now);
        }
        if job.period_s.is_some() {
            track.history = History::new();
            track.last_seen = now;
            return (job.period_s, track.phase_start);
        }
        // Intervals the job was absent from were intervals without activity.
        let gap = now.saturating_sub(track.last_seen).saturating_sub(1);
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
            track.last = track.history.detect(dt);
            if let Some(found) = track.last.filter(|d| d.confidence >= CONFIDENT) {
                let (lo, hi) = found.bounds();
                if decade(lo) == decade(hi) {
                    track.detected = Some(found.period_s);
                }
            }
        }
        (track.detected, track.phase_start)
    }
}

/// SET-10's set of a period: round(log₁₀ p).
fn decade(period_s: f64) -> i32 {
    period_s.log10().round().clamp(-300.0, 300.0) as i32
}

impl Allocator for Set10 {
    fn forget(&mut self, job: &str) {
        self.jobs.remove(job);
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
        for (members, share) in sets.values_mut().zip(shares) {
            members.sort_unstable_by(|&a, &b| {
                (phase_start[a].cmp(&phase_start[b])).then_with(|| round.cmp_ids(a, b))
            });
            let mut left = share;
            for &i in members.iter() {
                rates[i] = jobs[i].arrivals.min(left);
                left -= rates[i];
            }
        }
        rates
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            if placed.is_none() && set10.detection("lf").1.is_some() {
                placed = Some(t);
            }
        }
        let (last, period) = set10.detection("lf");
        let period = period.expect("placed");
        assert_eq!(decade(period), 2, "{last:?}");
        // Placed within five of its periods, and never before its set was certain.
        assert!(placed.is_some_and(|t| t <= 5 * 384), "{placed:?}");
        assert_eq!(set10.detection("k"), (None, None));
    }
}
