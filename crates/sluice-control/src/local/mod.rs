//! The local controller, one per compute node: it attaches jobs for their launchers and
//! owns their segments, every interval observes each job's counters and reports them, and
//! writes the rates it is given into the segments.
//!
//! With a global controller it reports up one gRPC stream and applies what comes down;
//! without one (single-node mode) it runs the same computation itself, in process.
//! Jobs and their segments are recorded in the state directory, so a restarted local
//! adopts them and resumes control; meanwhile the applications run on at the rates last
//! written, since the stage needs nothing but its segment.

mod delta;
mod error;
mod job;
pub mod membership;
mod node;
mod places;
pub mod relay;
mod state_dir;
pub mod unstaged;
mod uplink;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_core::error::Chain;
use tonic::Code;

pub use delta::{Deltas, TOLERANCE};
pub use error::LocalError;
pub use job::{JobRecord, LocalJob, Policy};
pub use node::NodeService;
pub use places::PlaceWarnings;
pub use uplink::run_uplink;
#[cfg(test)]
pub(crate) use uplink::uplink;

use sluice_core::segment::{LAYOUT_VERSION, Latency};

use crate::audit::{Event, Outcome, Who};
use crate::cluster::{ChannelObs, NodeJob, with_job_names};
use crate::coordinator::Coordinator;
use crate::proto;
use crate::segment_file::file_safe;

/// A local controller's state, shared by its socket's handlers and its loops.
pub struct Local {
    /// This node's name, as the global knows it.
    pub node: String,
    state_dir: PathBuf,
    shm_dir: PathBuf,
    /// Jobs by id.
    pub jobs: BTreeMap<String, LocalJob>,
    /// Jobs that ended since the last report.
    ended: Vec<String>,
    /// Their rows for the job reports, until they are handed on.
    pub finished: Vec<proto::JobSummary>,
    policy: Policy,
    /// The single-node computation; `None` when a global controller decides.
    pub coordinator: Option<Arc<Mutex<Coordinator>>>,
    /// The stream up to the global, while connected.
    pub uplink: Option<tokio::sync::mpsc::Sender<proto::LocalMessage>>,
    /// Whether the next report must hold every job (after a (re)connect).
    pub full_next: bool,
    /// The control interval.
    interval: Duration,
    /// Told when the interval changes, so that the cycle timer re-plans at once.
    interval_changed: Arc<tokio::sync::Notify>,
    /// Cycle of the last report.
    pub cycle: u64,
    /// Cycle of the last rates received.
    pub last_rates_cycle: u64,
    /// What was last sent up of each job: a job whose observations hold is left out
    /// of the next report (the global keeps what it had).
    sent: Deltas,
    /// Whether this controller stops: a launcher's connection that closes from now on
    /// closes because of it, not because the launcher went.
    stopping: bool,
    /// Places jobs named that this node does not have, for `sluice status`.
    pub places: PlaceWarnings,
    /// The hand-overs in force until the next interval begins.
    relays: Vec<relay::Active>,
}

/// A handle on the local controller's state.
pub type Shared = Arc<Mutex<Local>>;

/// One interval's report of the node: per job, per pool and per rule.
#[derive(Debug, Default)]
pub struct Observed {
    /// Per job, for the computation.
    pub jobs: Vec<NodeJob>,
    /// Per job, by rule name.
    pub rules: BTreeMap<String, BTreeMap<String, ChannelObs>>,
    /// Jobs gone since the last report.
    pub ended: Vec<String>,
    /// Their rows for the job reports (one node each).
    pub finished: Vec<proto::JobSummary>,
    /// Per pool, over every job of the node: the latencies the stage sampled (for pools
    /// whose capacity is found from their latency).
    pub latency: BTreeMap<String, Latency>,
}

impl Local {
    /// A local controller for `node`, adopting the jobs recorded in `state_dir`.
    pub fn new(
        node: String,
        state_dir: PathBuf,
        shm_dir: PathBuf,
        coordinator: Option<Arc<Mutex<Coordinator>>>,
        interval: Duration,
    ) -> Result<Local, LocalError> {
        let mut local = Local {
            node,
            state_dir,
            shm_dir,
            jobs: BTreeMap::new(),
            ended: Vec::new(),
            finished: Vec::new(),
            policy: Policy::default(),
            coordinator,
            uplink: None,
            full_next: true,
            interval,
            interval_changed: Arc::default(),
            cycle: 0,
            last_rates_cycle: 0,
            sent: Deltas::default(),
            stopping: false,
            places: PlaceWarnings::default(),
            relays: Vec::new(),
        };
        state_dir::check_writable(&local.state_dir)?;
        // Every job's segment is made there: a directory it cannot write in fails each
        // launch, better known at start.
        crate::segment_file::check_dir(&local.shm_dir).map_err(|source| LocalError::ShmDir {
            dir: local.shm_dir.clone(),
            source,
        })?;
        // The policy is in force before the first job is adopted: the coordinator's, or
        // in a cluster the one the global sent last, until it answers. Without one, the
        // adopted jobs keep what their segments hold.
        let restored = match &local.coordinator {
            Some(c) => {
                let policy = c.lock().expect("coordinator").policy();
                Some(Policy::from_proto(&policy)?)
            }
            None => state_dir::load_policy(&local.state_dir),
        };
        if let Some(p) = &restored {
            local.policy = p.clone();
        }
        for record in state_dir::load(&local.state_dir)? {
            let id = record.job.clone();
            match LocalJob::adopt(record) {
                Ok(mut job) => {
                    if restored.is_some()
                        && let Err(e) = job.apply_policy(&local.policy)
                    {
                        tracing::warn!(job = %id, "adopted job keeps its rules: {}", Chain(&e));
                    }
                    log_adopted(&id, &job);
                    local.jobs.insert(id, job);
                }
                Err(e) => {
                    tracing::warn!(job = %id, "cannot adopt: {}", Chain(&e));
                    state_dir::forget(&local.state_dir, &id);
                }
            }
        }
        Ok(local)
    }

    /// Attaches a launcher of the job `request` describes, running as `uid`/`gid`;
    /// returns the job's id on this node and its segment's path.
    ///
    /// Root (the Slurm plugin in slurmstepd, a prolog) attaches jobs under the batch
    /// system's own ids. Any other caller's job id is its own: the launcher joins the
    /// job root attached under that id only when it is one of that job's processes (see
    /// [`membership`]) and runs as its user; otherwise its job lives in its user's own
    /// space ([`own_job_id`]), where no other user's launcher can reach it. So no user
    /// can claim, join or block another's job by naming its id.
    pub fn attach(
        &mut self,
        request: &proto::AttachRequest,
        caller: Caller,
        uid: u32,
        gid: u32,
    ) -> std::result::Result<(String, PathBuf), tonic::Status> {
        let id = match caller.uid {
            0 => request.job.clone(),
            _ => self.callers_job(&request.job, caller),
        };
        let pid = caller.pid;
        let invalid = |e: LocalError| {
            refusal(
                &id,
                Some(caller),
                Code::InvalidArgument,
                Chain(&e).to_string(),
            )
        };
        if let Some(job) = self.jobs.get_mut(&id) {
            if job.record.uid != uid {
                let why = format!(
                    "job {id} runs as uid {} on this node, not uid {uid}",
                    job.record.uid
                );
                return Err(refusal(&id, Some(caller), Code::PermissionDenied, why));
            }
            let before = job.record.clone();
            for rule in &request.rules {
                if !job.record.own_rules.contains(rule) {
                    job.record.own_rules.push(rule.clone());
                }
            }
            job.record.launchers.push(pid);
            job.record.nodes = job.record.nodes.max(request.nodes);
            if let Err(e) = job.apply_policy(&self.policy) {
                // Refused: the job stays as it was, and this launcher is not counted.
                job.record = before;
                return Err(invalid(e));
            }
            job.connected += 1;
            state_dir::save(&self.state_dir, &job.record);
            tracing::info!(job = %id, uid = caller.uid, pid, "joined");
            return Ok((id, job.record.segment.clone()));
        }
        let name = format!("sluice.{}.{}", file_safe(&self.node), file_safe(&id));
        let record = JobRecord {
            job: id.clone(),
            uid,
            gid,
            user: request.user.clone(),
            account: request.account.clone(),
            qos: request.qos.clone(),
            partition: request.partition.clone(),
            nodes: request.nodes,
            segment: self.shm_dir.join(name),
            own_rules: request.rules.clone(),
            mounts: request.mounts.clone(),
            fs_types: request.fs_types.clone(),
            launchers: vec![pid],
            started: crate::report::now_s(),
            ..JobRecord::default()
        };
        let mut job = LocalJob::create(record, &self.policy).map_err(invalid)?;
        self.places
            .check(&self.node, &id, &request.mounts, &request.fs_types);
        job.connected = 1;
        state_dir::save(&self.state_dir, &job.record);
        let path = job.record.segment.clone();
        tracing::info!(job = %id, uid, by = caller.uid, pid, "attached");
        self.jobs.insert(id.clone(), job);
        self.full_next = true;
        Ok((id, path))
    }

    /// The job a launcher other than root names by `named`, as this node keys it: the
    /// job root attached under that id when the launcher is one of its processes and runs
    /// as its user, else the launcher user's own job of that name. A launcher that names
    /// a job root attached without belonging to it is logged.
    fn callers_job(&self, named: &str, caller: Caller) -> String {
        let own = own_job_id(caller.uid, named);
        // Only root makes ids outside the users' spaces, so a job found here under the
        // plain id is root's (or, for an id shaped like a user's space, that user's own).
        let Some(job) = self.jobs.get(named) else {
            return own;
        };
        let member = membership::descends_from(caller.pid, &job.record.launchers)
            || membership::slurm_job_of(caller.pid, caller.uid).as_deref() == Some(named);
        if job.record.uid == caller.uid && member {
            return named.to_owned();
        }
        let why = match job.record.uid == caller.uid {
            true => "its process is not one of that job's".to_owned(),
            false => format!("that job runs as uid {}", job.record.uid),
        };
        let who = Who::unix(caller.uid, Some(caller.pid));
        Event::new("join", &who, format_args!("job {named:?}"))
            .job(named)
            .not_done(
                Outcome::Refused,
                &format!(
                    "not joined to job {named}: {why}; attached in uid {}'s own space as {own}",
                    caller.uid
                ),
            );
        own
    }

    /// A launcher's connection closed.
    pub fn detach(&mut self, job: &str, pid: u32) {
        if self.stopping {
            return;
        }
        if let Some(j) = self.jobs.get_mut(job) {
            j.connected = j.connected.saturating_sub(1);
            if let Some(at) = j.record.launchers.iter().position(|&p| p == pid) {
                j.record.launchers.remove(at);
            }
            state_dir::save(&self.state_dir, &j.record);
        }
    }

    /// Stops for a restart: the job records keep every launcher's pid (the connections
    /// about to close are this controller's going, not the launchers'), so that the next
    /// start adopts each job and ends it only once its launchers are gone. Nothing else
    /// is left to save: records and policy are written as they change.
    pub fn stop(&mut self) {
        self.stopping = true;
    }

    /// Ends the jobs whose launchers are all gone: their segments are removed (the
    /// processes still mapping one keep it) and the next report says so.
    fn reap(&mut self) {
        let gone: Vec<String> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.connected == 0 && !j.record.launchers.iter().any(|&p| alive(p)))
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            if let Some(job) = self.jobs.remove(&id) {
                // Read before the file goes: the totals are the segment's counters.
                let row = self.row(&job);
                let _ = std::fs::remove_file(&job.record.segment);
                state_dir::forget(&self.state_dir, &id);
                tracing::info!(job = %id, "ended: {}", crate::report::line(&row));
                self.finished.push(row);
                self.ended.push(id);
            }
        }
    }

    /// The row of `job`'s report this node makes as it ends.
    fn row(&self, job: &LocalJob) -> proto::JobSummary {
        let r = &job.record;
        let ended = crate::report::now_s();
        let started = if r.started > 0.0 { r.started } else { ended };
        proto::JobSummary {
            job: r.job.clone(),
            user: r.user.clone(),
            uid: r.uid,
            nodes: vec![proto::NodeTotals {
                node: self.node.clone(),
                started,
                ended,
                attachments: 1,
                pools: job.totals(),
                outside: job.outside_seen.clone(),
            }],
            started,
            ended,
            ..proto::JobSummary::default()
        }
    }

    /// Ends gone jobs and observes the others over the interval since the last call.
    pub fn observe(&mut self, cycle: u64) -> Observed {
        self.reap();
        self.cycle = cycle;
        let mut jobs = Vec::new();
        let mut rules = BTreeMap::new();
        let mut latency = BTreeMap::<String, Latency>::new();
        for (id, job) in &mut self.jobs {
            job.sample_allocation();
            let seen = job.observe();
            for (pool, l) in &seen.latency {
                latency.entry(pool.clone()).or_default().add(l);
            }
            jobs.push(NodeJob {
                job: id.clone(),
                user: job.record.user.clone(),
                account: job.record.account.clone(),
                qos: job.record.qos.clone(),
                partition: job.record.partition.clone(),
                nodes: job.record.nodes,
                launchers: job.connected.max(job.record.launchers.len() as u32),
                pools: seen.pools,
                segment: job.segment_note(),
                outside: job.outside.clone(),
            });
            rules.insert(id.clone(), seen.rules);
        }
        Observed {
            jobs,
            rules,
            ended: std::mem::take(&mut self.ended),
            finished: std::mem::take(&mut self.finished),
            latency,
        }
    }

    /// The jobs as the scan for processes outside the stage needs them.
    pub fn scan_targets(&self) -> Vec<unstaged::Target> {
        self.jobs
            .iter()
            .map(|(id, j)| unstaged::Target {
                job: id.clone(),
                uid: j.record.uid,
                launchers: j.record.launchers.clone(),
                segment: j.record.segment.clone(),
            })
            .collect()
    }

    /// What the last scan found of each job's processes outside the stage.
    pub fn set_outside(&mut self, mut found: BTreeMap<String, Vec<proto::OutsideStage>>) {
        for (id, job) in &mut self.jobs {
            job.set_outside(found.remove(id).unwrap_or_default());
        }
    }

    /// The control interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Sets the control interval (the global's, or a reloaded configuration's).
    pub fn set_interval(&mut self, interval: Duration) {
        if interval != self.interval {
            self.interval = interval;
            self.interval_changed.notify_one();
        }
    }

    /// What the cycle timer waits on besides its deadline: a change of the interval.
    /// Its next boundary moves with it (a local that slept towards its default 1-s
    /// boundary while it learnt the global's 500 ms reported once under the wrong
    /// cycle number, and the global waited half an interval for it).
    pub fn interval_changed(&self) -> Arc<tokio::sync::Notify> {
        self.interval_changed.clone()
    }

    /// Puts pools and admin rules in force on every job.
    pub fn apply_policy(&mut self, policy: Policy) {
        let from_global = self.coordinator.is_none() && policy != self.policy;
        self.policy = policy;
        for (id, job) in &mut self.jobs {
            if let Err(e) = job.apply_policy(&self.policy) {
                tracing::warn!(job = %id, "policy not applied: {}", Chain(&e));
            }
        }
        // Saved once every job enforces it: each save waits for the disk.
        if from_global {
            state_dir::save_policy(&self.state_dir, &self.policy);
        }
        for job in self.jobs.values() {
            state_dir::save(&self.state_dir, &job.record);
        }
    }

    /// Writes the rates pushed for this node.
    pub fn apply_rates<'a>(
        &mut self,
        rates: impl IntoIterator<Item = (&'a String, &'a BTreeMap<String, f64>)>,
    ) {
        for (id, pools) in rates {
            if let Some(job) = self.jobs.get_mut(id) {
                for (pool, rate) in pools {
                    job.set_pool_rate(pool, *rate);
                }
            }
        }
    }

    /// Puts the hand-overs pushed for this interval in force, in place of any before.
    pub fn set_relays(&mut self, chains: Vec<relay::Chain>) {
        self.end_relays();
        for chain in chains {
            let active = relay::Active::new(chain, &self.jobs);
            self.relays.push(active);
        }
    }

    /// Ends the hand-overs in force: each job they changed is back at its pushed rate.
    /// Called as an interval ends, before the next round decides.
    pub fn end_relays(&mut self) {
        for active in std::mem::take(&mut self.relays) {
            active.end(&mut self.jobs);
        }
    }

    /// One look at the jobs of the hand-overs in force (see [`relay`]).
    pub fn relay_step(&mut self) {
        for active in &mut self.relays {
            active.step(&mut self.jobs);
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Keeps in `observed` only the jobs that changed since they were last sent up,
    /// unless `full`.
    pub fn delta(&mut self, observed: &mut Observed, full: bool) {
        self.sent.keep_changed(observed, full);
    }
}

/// Says what was done with an adopted job's segment.
fn log_adopted(id: &str, job: &LocalJob) {
    let layout = job.layout();
    if let Some(why) = job.untouched() {
        tracing::warn!(
            job = %id,
            "adopted, its segment left untouched at the rates last written ({why}): the job \
             runs on uncontrolled until it ends; a controller of the release that wrote the \
             segment would control it"
        );
    } else if layout != LAYOUT_VERSION {
        tracing::info!(
            job = %id,
            "adopted, its segment of layout {layout} (an earlier release's) read and \
             controlled as written; this release writes layout {LAYOUT_VERSION}"
        );
    } else {
        tracing::info!(job = %id, "adopted");
    }
}

/// A refused attachment as the launcher hears it, audited with who asked (`caller`,
/// unknown off the UNIX socket), for which job and why: refused when the caller may not,
/// failed when what it asked is wrong.
pub(crate) fn refusal(job: &str, caller: Option<Caller>, code: Code, why: String) -> tonic::Status {
    let who = caller.map_or_else(Who::default, |c| Who::unix(c.uid, Some(c.pid)));
    let outcome = match code {
        Code::PermissionDenied => Outcome::Refused,
        _ => Outcome::Failed,
    };
    Event::new("attach", &who, format_args!("job {job:?}"))
        .job(job)
        .not_done(outcome, &why);
    tonic::Status::new(code, why)
}

/// Who asks to attach a job: the launcher's process and its user, as the kernel tells
/// them (SO_PEERCRED).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The launcher's effective uid.
    pub uid: u32,
    /// The launcher's process.
    pub pid: u32,
}

/// The id under which a job `named` by a launcher of `uid` (not root, not one of a job
/// root attached) lives on the node and in the cluster: `uid1000:7777`. Users' ids never
/// meet each other's nor the batch system's, and an administrator tells them apart in
/// `sluice jobs`, the metrics and the global's view.
pub fn own_job_id(uid: u32, named: &str) -> String {
    format!("uid{uid}:{named}")
}

/// Whether process `pid` still exists (whoever owns it).
pub fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The report of one interval as the protocol carries it.
pub fn report_message(cycle: u64, interval_s: f64, full: bool, o: Observed) -> proto::Report {
    let obs = |m: BTreeMap<String, ChannelObs>| m.into_iter().map(|(k, c)| (k, c.into())).collect();
    let mut rules = o.rules;
    proto::Report {
        cycle,
        interval_s,
        full,
        jobs: o
            .jobs
            .into_iter()
            .map(|j| {
                let rules = obs(rules.remove(&j.job).unwrap_or_default());
                with_job_names!(proto::JobReport {
                    rules,
                    pools: obs(j.pools),
                    segment: j.segment.map(Into::into),
                    outside: j.outside,
                } from j)
            })
            .collect(),
        ended: o.ended,
        finished: o.finished,
        latency: o
            .latency
            .into_iter()
            .filter(|(_, l)| l.count() > 0)
            .map(|(pool, l)| (pool, l.into()))
            .collect(),
    }
}
