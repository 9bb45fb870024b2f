//! The last hour of each pool's and job's figures, one point per cycle, so that a
//! dashboard opened now draws what happened before it was opened.
//!
//! Each series is a ring of `⌈3600 s / interval⌉` points (at most [`MAX_POINTS`]), with no
//! time stored: a point's time is its cycle's boundary (cycle `k` closes at `k` intervals
//! of the wall clock), and a cycle a series missed is a gap (`NaN`). A pool's point is
//! 12 bytes (capacity, allocated, used), a job's 8 (its rate and allocation in one pool,
//! as `f32`: the views print three figures). Job series are kept within
//! [`JOB_BUDGET_BYTES`]: at a 1 s interval a job in a pool costs 28 KiB and 2,330 of them
//! fit; beyond that, a new job's series takes the place of the one that ended longest
//! ago, or is not kept while every kept one still runs (it is still shown live). A series
//! whose last point is an hour old is dropped. A change of interval starts afresh, since
//! the cycle numbers change their meaning.

use std::collections::{BTreeMap, HashMap, VecDeque};

use super::Cluster;
use super::view::sum;

/// The window kept, seconds.
pub const WINDOW_S: f64 = 3600.0;

/// Points per series at most: a whole hour down to a 500 ms interval, and the last 7,200
/// cycles at shorter ones.
pub const MAX_POINTS: usize = 7200;

/// What job series may take, bytes: 64 MiB.
pub const JOB_BUDGET_BYTES: usize = 64 << 20;

/// Consecutive cycles' figures, the last at cycle `end`.
#[derive(Debug, Clone, Default)]
pub struct Series<const N: usize> {
    end: u64,
    points: VecDeque<[f32; N]>,
}

impl<const N: usize> Series<N> {
    /// Adds cycle `cycle`'s figures (`cycle` after `end`), gaps as `NaN`, keeping the last
    /// `len` cycles.
    fn push(&mut self, cycle: u64, figures: [f64; N], len: usize) {
        let mut gap = cycle.saturating_sub(self.end).saturating_sub(1);
        if self.points.is_empty() || gap >= len as u64 {
            // Its whole room at once, so that it never grows past it.
            self.points = VecDeque::with_capacity(len);
            gap = 0;
        }
        let missed = std::iter::repeat_n([f32::NAN; N], gap as usize);
        for point in missed.chain([figures.map(|f| f as f32)]) {
            if self.points.len() == len {
                self.points.pop_front();
            }
            self.points.push_back(point);
        }
        self.end = cycle;
    }

    /// The cycle of the last point.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// The points, oldest first: one per cycle up to [`Series::end`].
    pub fn points(&self) -> impl ExactSizeIterator<Item = &[f32; N]> {
        self.points.iter()
    }

    /// The last point.
    pub fn last(&self) -> Option<&[f32; N]> {
        self.points.back()
    }
}

/// The figures of the last hour.
#[derive(Debug, Default)]
pub struct History {
    /// The interval the cycles count in, seconds (0 before the first record).
    interval_s: f64,
    /// Points per series.
    len: usize,
    last: Option<u64>,
    /// By pool: capacity, allocated, used.
    pools: BTreeMap<String, Series<3>>,
    /// By pool, by job: rate, allocation.
    jobs: HashMap<String, HashMap<String, Series<2>>>,
    job_series: usize,
}

impl History {
    /// The interval the cycles count in, seconds.
    pub fn interval_s(&self) -> f64 {
        self.interval_s
    }

    /// Each pool's series: capacity, allocated, used.
    pub fn pools(&self) -> &BTreeMap<String, Series<3>> {
        &self.pools
    }

    /// Each job's series in `pool`: rate, allocation.
    pub fn jobs(&self, pool: &str) -> Option<&HashMap<String, Series<2>>> {
        self.jobs.get(pool)
    }

    /// Job series kept now.
    pub fn job_series(&self) -> usize {
        self.job_series
    }

    /// How many job series fit in [`JOB_BUDGET_BYTES`].
    pub fn max_job_series(&self) -> usize {
        JOB_BUDGET_BYTES / (self.len.max(1) * size_of::<[f32; 2]>())
    }

    /// Starts cycle `cycle` of an interval of `interval_s`: afresh when the interval
    /// changed; false when the cycle is not after the last recorded.
    fn begin(&mut self, cycle: u64, interval_s: f64) -> bool {
        if interval_s != self.interval_s {
            *self = History {
                interval_s,
                len: ((WINDOW_S / interval_s).ceil() as usize).clamp(1, MAX_POINTS),
                ..History::default()
            };
        }
        if self.last.is_some_and(|last| cycle <= last) {
            return false;
        }
        self.last = Some(cycle);
        // An hour-old series is dropped whole.
        let len = self.len as u64;
        let fresh = |end: u64| end + len > cycle;
        self.pools.retain(|_, s| fresh(s.end));
        for jobs in self.jobs.values_mut() {
            jobs.retain(|_, s| fresh(s.end));
        }
        self.jobs.retain(|_, jobs| !jobs.is_empty());
        self.job_series = self.jobs.values().map(HashMap::len).sum();
        true
    }

    fn pool(&mut self, cycle: u64, pool: &str, figures: [f64; 3]) {
        let len = self.len;
        match self.pools.get_mut(pool) {
            Some(s) => s.push(cycle, figures, len),
            None => {
                let mut s = Series::default();
                s.push(cycle, figures, len);
                self.pools.insert(pool.to_owned(), s);
            }
        }
    }

    fn job(&mut self, cycle: u64, pool: &str, job: &str, figures: [f64; 2]) {
        let len = self.len;
        if let Some(s) = self.jobs.get_mut(pool).and_then(|jobs| jobs.get_mut(job)) {
            s.push(cycle, figures, len);
            return;
        }
        if self.job_series >= self.max_job_series() && !self.evict_ended(cycle) {
            return;
        }
        let mut s = Series::default();
        s.push(cycle, figures, len);
        let jobs = self.jobs.entry(pool.to_owned()).or_default();
        jobs.insert(job.to_owned(), s);
        self.job_series += 1;
    }

    /// Drops the job series that ended longest ago, if one ended before `cycle`.
    fn evict_ended(&mut self, cycle: u64) -> bool {
        let oldest = self
            .jobs
            .iter()
            .flat_map(|(pool, jobs)| jobs.iter().map(move |(job, s)| (s.end, pool, job)))
            .filter(|(end, _, _)| *end < cycle)
            .min();
        let Some((_, pool, job)) = oldest else {
            return false;
        };
        let (pool, job) = (pool.clone(), job.clone());
        if let Some(jobs) = self.jobs.get_mut(&pool) {
            jobs.remove(&job);
        }
        self.job_series -= 1;
        true
    }
}

impl Cluster {
    /// Adds the last compute's figures to the history, in an interval of `interval_s`.
    /// Called once the cycle's rates are out, so that it never delays them.
    pub fn record_history(&mut self, interval_s: f64) {
        let Some(cycle) = self.last_cycle else {
            return;
        };
        if !self.history.begin(cycle, interval_s) {
            return;
        }
        for (name, pool) in &self.pools {
            let allocated = sum(pool.shares.iter().map(|(_, s)| s.allocation));
            let used = sum(pool.shares.iter().map(|(_, s)| s.rate));
            self.history
                .pool(cycle, name, [pool.capacity(), allocated, used]);
            for (job, share) in &pool.shares {
                self.history
                    .job(cycle, name, job, [share.rate, share.allocation]);
            }
        }
    }

    /// The figures of the last hour.
    pub fn history(&self) -> &History {
        &self.history
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(interval_s: f64) -> History {
        let mut h = History::default();
        h.begin(1, interval_s);
        h.last = None;
        h
    }

    #[test]
    fn a_ring_keeps_the_last_hour_and_marks_missed_cycles() {
        let mut h = history(60.0);
        assert_eq!(h.len, 60);
        for cycle in 1..=100 {
            assert!(h.begin(cycle, 60.0));
            if cycle != 95 {
                h.job(cycle, "md", "A", [cycle as f64, 1.0]);
            }
        }
        let s = &h.jobs("md").unwrap()["A"];
        assert_eq!((s.end(), s.points().len()), (100, 60));
        let rates: Vec<f32> = s.points().map(|p| p[0]).collect();
        assert_eq!(rates[0], 41.0);
        assert!(rates[54].is_nan(), "cycle 95 was missed: {rates:?}");
        assert_eq!(rates[59], 100.0);
        // Silent for an hour: dropped.
        assert!(h.begin(160, 60.0));
        assert!(h.jobs("md").is_none());
        assert_eq!(h.job_series(), 0);
    }

    #[test]
    fn job_series_stay_within_the_budget_and_ended_ones_go_first() {
        let mut h = history(WINDOW_S / MAX_POINTS as f64);
        let most = h.max_job_series();
        assert_eq!(most, JOB_BUDGET_BYTES / (MAX_POINTS * 8));
        h.begin(1, h.interval_s);
        for j in 0..most + 5 {
            h.job(1, "md", &j.to_string(), [1.0, 1.0]);
        }
        assert_eq!(
            h.job_series(),
            most,
            "nothing ended: the newest are not kept"
        );
        assert!(h.begin(2, h.interval_s));
        h.job(2, "md", "new", [1.0, 1.0]);
        assert_eq!(h.job_series(), most);
        assert!(h.jobs("md").unwrap().contains_key("new"));
    }

    #[test]
    fn a_new_interval_starts_afresh_and_old_cycles_are_ignored() {
        let mut h = history(1.0);
        assert!(h.begin(10, 1.0));
        h.pool(10, "md", [1.0, 2.0, 3.0]);
        assert!(!h.begin(10, 1.0));
        assert!(h.begin(5, 2.0));
        assert!(h.pools().is_empty());
        assert_eq!(h.len, 1800);
    }
}
