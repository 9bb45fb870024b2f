//! `/metrics`: what the controllers saw and decided, in OpenMetrics text for Prometheus.
//!
//! Labels are bounded by what a cluster has: jobs, users, pools and nodes; never a
//! process or a path. A job's series are removed when it ends, so a long-running
//! controller does not grow with every job it ever saw. The job's label is `job_id`:
//! Prometheus gives every scraped series a `job` label of its own (the scrape job),
//! and would rename ours to `exported_job`.
//!
//! Counters are the per-second figures of each interval times its length, added up: on
//! the global, from the locals' reports; on a local, from its own observations of the
//! segments. `rate()` over them gives back the job's rates.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use sluice_core::cost::Costs;
use sluice_core::op::Op;

use crate::cluster::{ChannelObs, JobView, NodeJob, PeriodView, PoolView, ShareView};

/// A job in a pool (on a node, for a local's own figures; empty on the global).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct JobLabels {
    /// The resource manager's job id.
    pub job_id: String,
    /// The job's user.
    pub user: String,
    /// The pool.
    pub pool: String,
    /// The node, on a local's figures; empty on the global's.
    pub node: String,
}

/// Processes of a job outside the stage on a node, for one reason.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutsideLabels {
    /// The resource manager's job id.
    pub job_id: String,
    /// The job's user.
    pub user: String,
    /// The node.
    pub node: String,
    /// Why: static, go, setuid, cleared-env, io_uring.
    pub why: String,
    /// Whether a supervisor holds them: `true` or `false`.
    pub held: String,
}

/// A pool.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PoolLabels {
    /// The pool.
    pub pool: String,
}

/// An operation's cost in a pool that weighs its operations.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CostLabels {
    /// The pool.
    pub pool: String,
    /// The operation (getattr, mknod, unlink…).
    pub op: String,
}

type FloatCounter = Family<JobLabels, Counter<f64, AtomicU64>>;
type FloatGauge<L> = Family<L, Gauge<f64, AtomicU64>>;

/// Every metric a controller exports.
pub struct Metrics {
    registry: Registry,
    arrivals: FloatCounter,
    admitted: FloatCounter,
    wait: FloatCounter,
    allocation: FloatGauge<JobLabels>,
    demand: FloatGauge<JobLabels>,
    period: FloatGauge<JobLabels>,
    period_confidence: FloatGauge<JobLabels>,
    capacity: FloatGauge<PoolLabels>,
    allocated: FloatGauge<PoolLabels>,
    used: FloatGauge<PoolLabels>,
    cost_units: Family<CostLabels, Gauge>,
    cycle_seconds: Histogram,
    locals: Gauge,
    dropped: Counter,
    outside: Family<OutsideLabels, Gauge>,
    /// The outside series exported now, to remove those that are gone.
    live_outside: Mutex<HashSet<OutsideLabels>>,
    /// The label sets exported now, to remove those of jobs and pools that are gone.
    live: Mutex<(HashSet<JobLabels>, HashSet<PoolLabels>)>,
    /// The cost series exported now, to remove those no longer charged.
    live_costs: Mutex<HashSet<CostLabels>>,
    /// The last cycle recorded.
    last_cycle: Mutex<Option<u64>>,
}

/// Cycles counted at most for one record: past that the controller was stopped or
/// stalled, and what happened meanwhile is unknown rather than steady.
const MAX_CATCH_UP: u64 = 10;

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("sluice");
        let m = Metrics {
            arrivals: FloatCounter::default(),
            admitted: FloatCounter::default(),
            wait: FloatCounter::default(),
            allocation: FloatGauge::default(),
            demand: FloatGauge::default(),
            period: FloatGauge::default(),
            period_confidence: FloatGauge::default(),
            capacity: FloatGauge::default(),
            allocated: FloatGauge::default(),
            used: FloatGauge::default(),
            cost_units: Family::default(),
            // 100 µs to about 1.6 s.
            cycle_seconds: Histogram::new(exponential_buckets(1e-4, 2.0, 15)),
            locals: Gauge::default(),
            dropped: Counter::default(),
            outside: Family::default(),
            live_outside: Mutex::default(),
            live: Mutex::default(),
            live_costs: Mutex::default(),
            last_cycle: Mutex::default(),
            registry: Registry::default(),
        };
        let r = &mut registry;
        r.register(
            "job_arrivals",
            "Units of the job that reached the gate of the pool: calls, or bytes for a pool of bytes (at the mean size of the calls admitted)",
            m.arrivals.clone(),
        );
        r.register(
            "job_admitted",
            "Units of the job admitted by the pool: calls, or bytes for a pool of bytes",
            m.admitted.clone(),
        );
        r.register(
            "job_wait_seconds",
            "Thread-seconds the job's threads spent waiting at the pool",
            m.wait.clone(),
        );
        r.register(
            "job_allocation",
            "The job's allocation in the pool, units per second, as of the last cycle",
            m.allocation.clone(),
        );
        r.register(
            "job_demand",
            "The job's estimated unthrottled demand in the pool, units per second",
            m.demand.clone(),
        );
        r.register(
            "job_period_seconds",
            "The I/O period the pool's algorithm places the job by (SET-10), seconds; 0 while unknown. Only for pools whose algorithm places jobs by their period",
            m.period.clone(),
        );
        r.register(
            "job_period_confidence",
            "The confidence of the last detection of the job's I/O period, in [0, 1] (SET-10 acts on it from 0.8); 0 before one, and for a period given",
            m.period_confidence.clone(),
        );
        r.register(
            "pool_capacity",
            "The pool's capacity, units per second",
            m.capacity.clone(),
        );
        r.register(
            "pool_allocated",
            "Sum of the jobs' allocations in the pool, units per second",
            m.allocated.clone(),
        );
        r.register(
            "pool_used",
            "Sum of the jobs' admitted rates in the pool, units per second",
            m.used.clone(),
        );
        r.register(
            "pool_cost_units",
            "Units an operation costs the pool, fixed (costs) or learned from its server (costs_from); only for the operations a pool's costs name, the others cost one",
            m.cost_units.clone(),
        );
        r.register(
            "cycle_duration_seconds",
            "From a cycle's boundary to its rates queued to every local",
            m.cycle_seconds.clone(),
        );
        r.register(
            "locals_connected",
            "Local controllers connected",
            m.locals.clone(),
        );
        r.register(
            "messages_dropped",
            "Messages to a local not sent because its queue was full",
            m.dropped.clone(),
        );
        r.register(
            "job_outside_stage_processes",
            "Processes of the job that run without the stage (why: static, go, setuid, cleared-env; held: under a seccomp supervisor or not) or use io_uring (why=io_uring), as of the last scan",
            m.outside.clone(),
        );
        r.register(
            "audit_events",
            "Administrators' changes and refusals, by action and outcome (see the audit log lines)",
            crate::audit::events(),
        );
        Metrics { registry, ..m }
    }
}

impl Metrics {
    /// What a controller's cycle leaves: how long it took, then its jobs, pools and
    /// costs as the coordinator holds them after it.
    pub fn record_coordinator(
        &self,
        cycle: u64,
        took_s: f64,
        c: &crate::coordinator::Coordinator,
        interval: std::time::Duration,
    ) {
        self.cycle_took(took_s);
        self.record_cycle(
            cycle,
            &c.jobs(),
            &c.pools(),
            &c.pool_costs(),
            interval.as_secs_f64(),
        );
    }

    /// Computed cycle `cycle` of intervals of `interval_s` seconds: every job's share in
    /// every pool, the pools, and what each operation costs the pools that weigh them
    /// (`costs`, by pool). A cycle the global skipped (it computes the latest one
    /// reported when it falls behind) is counted at the rates of the next.
    pub fn record_cycle(
        &self,
        cycle: u64,
        jobs: &[JobView],
        pools: &[PoolView],
        costs: &[(String, Costs)],
        interval_s: f64,
    ) {
        let interval_s = interval_s * self.intervals_to(cycle);
        let mut live_jobs = HashSet::new();
        for job in jobs {
            for (pool, share) in &job.pools {
                let labels = JobLabels {
                    job_id: job.job.clone(),
                    user: job.user.clone(),
                    pool: pool.clone(),
                    node: String::new(),
                };
                self.add(&labels, share_obs(share), interval_s);
                self.allocation.get_or_create(&labels).set(share.allocation);
                self.demand.get_or_create(&labels).set(share.demand);
                self.set_period(&labels, job.periods.get(pool));
                live_jobs.insert(labels);
            }
        }
        let mut live_pools = HashSet::new();
        for pool in pools {
            let labels = PoolLabels {
                pool: pool.name.clone(),
            };
            self.capacity.get_or_create(&labels).set(pool.capacity);
            self.allocated.get_or_create(&labels).set(pool.allocated);
            self.used.get_or_create(&labels).set(pool.used);
            live_pools.insert(labels);
        }
        self.keep(live_jobs, Some(live_pools));
        self.set_costs(costs);
        self.set_outside(jobs.iter().flat_map(|j| {
            j.outside
                .iter()
                .map(|o| (j.job.as_str(), j.user.as_str(), o.node.as_str(), o))
        }));
    }

    /// Cycle `cycle` of a local's own observations on `node` (rates over the time since
    /// its previous observation, which a late tick stretches over several intervals).
    pub fn record_node(&self, cycle: u64, node: &str, jobs: &[NodeJob], interval_s: f64) {
        let interval_s = interval_s * self.intervals_to(cycle);
        let mut live = HashSet::new();
        for job in jobs {
            for (pool, obs) in &job.pools {
                let labels = JobLabels {
                    job_id: job.job.clone(),
                    user: job.user.clone(),
                    pool: pool.clone(),
                    node: node.to_owned(),
                };
                self.add(&labels, *obs, interval_s);
                self.demand.get_or_create(&labels).set(obs.demand);
                live.insert(labels);
            }
        }
        self.keep(live, None);
        self.set_outside(jobs.iter().flat_map(|j| {
            j.outside
                .iter()
                .map(move |o| (j.job.as_str(), j.user.as_str(), node, o))
        }));
    }

    /// Sets the counts of processes outside the stage, by job, node, reason and whether
    /// held; removes the series no longer found.
    fn set_outside<'a>(
        &self,
        found: impl Iterator<Item = (&'a str, &'a str, &'a str, &'a crate::proto::OutsideStage)>,
    ) {
        let mut counts = std::collections::HashMap::<OutsideLabels, i64>::new();
        for (job, user, node, o) in found {
            let labels = OutsideLabels {
                job_id: job.to_owned(),
                user: user.to_owned(),
                node: node.to_owned(),
                why: o.why.clone(),
                held: o.held.to_string(),
            };
            *counts.entry(labels).or_default() += i64::from(o.processes);
        }
        let mut live = self.live_outside.lock().expect("metrics");
        for gone in live.iter().filter(|l| !counts.contains_key(l)) {
            self.outside.remove(gone);
        }
        live.clear();
        for (labels, n) in counts {
            self.outside.get_or_create(&labels).set(n);
            live.insert(labels);
        }
    }

    /// Sets the units of every operation the pools' costs name; removes the series of
    /// operations (and pools) no longer weighed, so that a pool that weighs nothing
    /// exports none.
    fn set_costs(&self, costs: &[(String, Costs)]) {
        let mut live = HashSet::new();
        for (pool, c) in costs {
            for &op in Op::ALL.iter().filter(|&&op| c.names(op)) {
                let labels = CostLabels {
                    pool: pool.clone(),
                    op: op.name().to_owned(),
                };
                self.cost_units
                    .get_or_create(&labels)
                    .set(i64::from(c.of(op)));
                live.insert(labels);
            }
        }
        let mut was = self.live_costs.lock().expect("metrics");
        for gone in was.difference(&live) {
            self.cost_units.remove(gone);
        }
        *was = live;
    }

    /// A cycle's duration, seconds.
    pub fn cycle_took(&self, seconds: f64) {
        self.cycle_seconds.observe(seconds);
    }

    /// The control loop as of a scrape: local controllers connected now, and messages
    /// to locals dropped since the start.
    pub fn set_control(&self, locals: usize, dropped: u64) {
        self.locals.set(locals as i64);
        self.dropped
            .inc_by(dropped.saturating_sub(self.dropped.get()));
    }

    /// The OpenMetrics text.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }

    /// Intervals from the last cycle recorded to `cycle`, which becomes the last.
    fn intervals_to(&self, cycle: u64) -> f64 {
        let mut last = self.last_cycle.lock().expect("metrics");
        let n = match *last {
            Some(l) if cycle > l => (cycle - l).min(MAX_CATCH_UP),
            Some(_) => 0,
            None => 1,
        };
        *last = Some(cycle.max(last.unwrap_or(0)));
        n as f64
    }

    fn add(&self, labels: &JobLabels, per_sec: ChannelObs, interval_s: f64) {
        self.arrivals
            .get_or_create(labels)
            .inc_by(per_sec.arrivals * interval_s);
        self.admitted
            .get_or_create(labels)
            .inc_by(per_sec.admitted * interval_s);
        self.wait
            .get_or_create(labels)
            .inc_by(per_sec.wait * interval_s);
    }

    /// A job's period series, or none when its pool's algorithm has no periods.
    fn set_period(&self, labels: &JobLabels, period: Option<&PeriodView>) {
        match period {
            Some(p) => {
                let confidence = p.last.map_or(0.0, |d| d.confidence);
                self.period
                    .get_or_create(labels)
                    .set(p.seconds.unwrap_or(0.0));
                self.period_confidence.get_or_create(labels).set(confidence);
            }
            None => {
                self.period.remove(labels);
                self.period_confidence.remove(labels);
            }
        }
    }

    /// Removes the series of jobs (and, given, pools) not in `jobs` (`pools`).
    fn keep(&self, jobs: HashSet<JobLabels>, pools: Option<HashSet<PoolLabels>>) {
        let mut live = self.live.lock().expect("metrics");
        for gone in live.0.difference(&jobs) {
            self.arrivals.remove(gone);
            self.admitted.remove(gone);
            self.wait.remove(gone);
            self.allocation.remove(gone);
            self.demand.remove(gone);
            self.set_period(gone, None);
        }
        live.0 = jobs;
        if let Some(pools) = pools {
            for gone in live.1.difference(&pools) {
                self.capacity.remove(gone);
                self.allocated.remove(gone);
                self.used.remove(gone);
            }
            live.1 = pools;
        }
    }
}

/// A share's per-second figures as an observation, for the counters.
fn share_obs(s: &ShareView) -> ChannelObs {
    ChannelObs {
        arrivals: s.arrivals,
        admitted: s.rate,
        wait: s.wait,
        demand: s.demand,
        calls: s.calls,
        ..ChannelObs::default()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn job(id: &str, rate: f64) -> JobView {
        JobView {
            job: id.to_owned(),
            user: "alice".to_owned(),
            account: String::new(),
            qos: String::new(),
            partition: String::new(),
            nodes: vec!["n0".to_owned()],
            launchers: 1,
            pools: BTreeMap::from([(
                "md".to_owned(),
                ShareView {
                    allocation: 2.0 * rate,
                    rate,
                    arrivals: rate,
                    ..ShareView::default()
                },
            )]),
            periods: BTreeMap::new(),
            segments: BTreeMap::new(),
            outside: Vec::new(),
        }
    }

    #[test]
    fn a_job_s_period_is_exported_only_where_its_pool_places_jobs_by_period() {
        let m = Metrics::default();
        let mut placed = job("7", 100.0);
        placed.periods.insert(
            "md".to_owned(),
            PeriodView {
                seconds: Some(38.4),
                from: Some("detected"),
                last: None,
            },
        );
        m.record_cycle(1, &[placed, job("8", 10.0)], &[], &[], 0.5);
        let text = m.encode();
        let line = r#"sluice_job_period_seconds{job_id="7",user="alice",pool="md",node=""} 38.4"#;
        assert!(text.contains(line), "{text}");
        assert!(
            !text.contains(r#"sluice_job_period_seconds{job_id="8""#),
            "{text}"
        );
        m.record_cycle(2, &[job("8", 10.0)], &[], &[], 0.5);
        assert!(!m.encode().contains("sluice_job_period_seconds{"));
    }

    #[test]
    fn counters_add_up_each_interval_and_an_ended_job_s_series_go() {
        let m = Metrics::default();
        m.record_cycle(1, &[job("7", 100.0), job("8", 10.0)], &[], &[], 0.5);
        m.record_cycle(2, &[job("7", 300.0), job("8", 10.0)], &[], &[], 0.5);
        let text = m.encode();
        let line = r#"sluice_job_admitted_total{job_id="7",user="alice",pool="md",node=""} 200.0"#;
        assert!(text.contains(line), "{text}");
        assert!(
            text.contains(
                r#"sluice_job_allocation{job_id="7",user="alice",pool="md",node=""} 600.0"#
            )
        );
        // Cycle 4 stands for 3 too.
        m.record_cycle(4, &[job("7", 300.0)], &[], &[], 0.5);
        let text = m.encode();
        assert!(!text.contains(r#"job_id="8""#), "{text}");
        assert!(text.contains(
            r#"sluice_job_admitted_total{job_id="7",user="alice",pool="md",node=""} 500.0"#
        ));
    }

    #[test]
    fn a_weighed_pool_exports_the_costs_of_the_operations_it_names_and_no_other() {
        let m = Metrics::default();
        let costs = |text: &str| vec![("md".to_owned(), text.parse::<Costs>().unwrap())];
        m.record_cycle(1, &[], &[], &costs("directory=3,mknod=4,getattr=1"), 0.5);
        let text = m.encode();
        for line in [
            r#"sluice_pool_cost_units{pool="md",op="mknod"} 4"#,
            r#"sluice_pool_cost_units{pool="md",op="mkdir"} 3"#,
            r#"sluice_pool_cost_units{pool="md",op="getattr"} 1"#,
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(!text.contains(r#"op="unlink""#), "{text}");
        // Costs changed by a reload, then a pool that weighs nothing any more.
        m.record_cycle(2, &[], &[], &costs("unlink=2"), 0.5);
        let text = m.encode();
        assert!(text.contains(r#"sluice_pool_cost_units{pool="md",op="unlink"} 2"#));
        assert!(!text.contains(r#"op="mknod""#), "{text}");
        m.record_cycle(3, &[], &[], &[], 0.5);
        assert!(!m.encode().contains("sluice_pool_cost_units{"));
    }
}
