//! The Admin service: status, jobs, pools, rules and job settings, read by anyone who
//! reaches the socket or port, changed only by an administrator: root or a member of the
//! admin group on a UNIX socket (SO_PEERCRED), a holder of the bearer token over TCP
//! (without a token file, callers on loopback only).
//!
//! [`AdminService`] answers from a [`Coordinator`] (a global, or a local in single-node
//! mode); [`ForwardAdmin`] is a local's in cluster mode, which checks the caller and then
//! asks its global.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sluice_policy::ParamValue;
use tonic::{Request, Response, Status};

use crate::audit::{Event, Outcome, Who};
use crate::cluster::with_job_names;
use crate::config::ControlConfig;
use crate::coordinator::{ChangeError, Coordinator};
use crate::identity::may_administer;
use crate::proto::admin_client::AdminClient;
use crate::proto::admin_server::Admin;
use crate::proto::{
    Empty, JobInfo, JobSetRequest, JobSummary, JobsReply, NameRequest, PoolListReply,
    PoolSetRequest, PoolShare, RuleChangeRequest, RuleListReply, RuleStartRequest, SegmentNote,
    ShareSetRequest, StatusReply,
};
use crate::transport::{ConnectOptions, Endpoint, NoAnswer, check_bearer, connect, peer_cred};

/// Who may change things.
#[derive(Clone, Debug, Default)]
pub struct Auth {
    /// The admin group (besides root) on a UNIX socket.
    pub group: Option<String>,
    /// The admin users (besides root and the group's members) on a UNIX socket.
    pub users: Vec<String>,
    /// The bearer token required over TCP.
    pub token: Option<String>,
}

impl Auth {
    /// Refuses `request` unless its caller may change the configuration.
    pub fn may_change<T>(&self, request: &Request<T>) -> Result<(), Status> {
        if let Some(peer) = peer_cred(request) {
            if may_administer(peer.uid, peer.gid, self.group.as_deref(), &self.users) {
                return Ok(());
            }
            let mut allowed = vec!["root".to_owned()];
            allowed.extend(self.users.iter().cloned());
            if let Some(g) = &self.group {
                allowed.push(format!("members of group {g}"));
            }
            let who = allowed.join(", ");
            return Err(Status::permission_denied(format!(
                "uid {} may not change sluice's configuration (only {who})",
                peer.uid
            )));
        }
        if let Some(token) = &self.token {
            return check_bearer(request, token);
        }
        match request.remote_addr() {
            Some(addr) if addr.ip().is_loopback() => Ok(()),
            _ => Err(Status::permission_denied(
                "changes over the network need a bearer token (admin.token_file)",
            )),
        }
    }
}

/// What a coordinator-backed service calls after a change, and asks for its status.
pub trait Hooks: Send + Sync + 'static {
    /// Pools, rules or settings changed: put them in force wherever they go.
    fn changed(&self);
    /// The status to report.
    fn status(&self) -> StatusReply;
}

/// The Admin service over a coordinator.
pub struct AdminService<H> {
    coordinator: Arc<Mutex<Coordinator>>,
    hooks: H,
    auth: Auth,
    /// Held through a change, from its check to its save.
    changing: Mutex<()>,
}

impl<H: Hooks> AdminService<H> {
    /// The service over `coordinator`.
    pub fn new(coordinator: Arc<Mutex<Coordinator>>, hooks: H, auth: Auth) -> Self {
        AdminService {
            coordinator,
            hooks,
            auth,
            changing: Mutex::new(()),
        }
    }

    /// Applies `change` for `who` when `allowed` (the caller's check came out so):
    /// validated whole, put in force wherever it goes, then saved and answered; one that
    /// cannot be saved is taken back. Audited either way.
    pub fn submit(
        &self,
        change: Change,
        who: &Who,
        allowed: Result<(), Status>,
    ) -> Result<(), Status> {
        let event = change.event(who);
        if let Err(refused) = allowed {
            event.not_done(Outcome::Refused, refused.message());
            return Err(refused);
        }
        // One change at a time, so that each save keeps its own change and an undone
        // change takes back no other.
        let _one_at_a_time = self.changing.lock().unwrap_or_else(PoisonError::into_inner);
        let (old, applied) = {
            let mut c = self.coordinator.lock().expect("coordinator");
            (change.state(c.config()), c.change(|c| change.edit(c)))
        };
        let applied = match applied {
            Ok(applied) => applied,
            Err(e) => {
                event.not_done(Outcome::Failed, &e.to_string());
                return Err(status_of(e));
            }
        };
        // In force on the jobs before the save: a disk busy with other writes delays the
        // answer, not the enforcement.
        self.hooks.changed();
        let (new, kept) = {
            let mut c = self.coordinator.lock().expect("coordinator");
            let kept = c.keep().map_err(|e| (c.undo(applied), e));
            (change.state(c.config()), kept)
        };
        if let Err((undone, e)) = kept {
            self.hooks.changed();
            let why = match undone {
                Ok(()) => format!("{e}; the change was taken back"),
                Err(undo) => format!("{e}; taking the change back failed too: {undo}"),
            };
            event.not_done(Outcome::Failed, &why);
            return Err(status_of(e));
        }
        event.done(old.as_deref(), new.as_deref());
        Ok(())
    }

    /// The controller's status.
    pub fn status(&self) -> StatusReply {
        self.hooks.status()
    }

    /// Every job, with its shares.
    pub fn jobs(&self) -> JobsReply {
        jobs_reply(&self.coordinator.lock().expect("coordinator"))
    }

    /// The administrator's rules, in order.
    pub fn rules(&self) -> RuleListReply {
        let c = self.coordinator.lock().expect("coordinator");
        let rules = c.config().rules.iter().map(|r| r.to_string()).collect();
        RuleListReply { rules }
    }

    /// The pools with their allocated and used rates.
    pub fn pools(&self) -> PoolListReply {
        let c = self.coordinator.lock().expect("coordinator");
        PoolListReply {
            pools: c.pool_infos(),
        }
    }

    /// Reads the last hour of figures (see [`crate::cluster::History`]).
    pub fn history<T>(&self, read: impl FnOnce(&crate::cluster::History) -> T) -> T {
        read(
            self.coordinator
                .lock()
                .expect("coordinator")
                .cluster()
                .history(),
        )
    }

    /// Who may change things.
    pub fn auth(&self) -> &Auth {
        &self.auth
    }

    fn checked<T>(
        &self,
        request: Request<T>,
        change: impl FnOnce(T) -> Change,
    ) -> Result<Response<Empty>, Status> {
        let who = Who::of(&request);
        let allowed = self.auth.may_change(&request);
        self.submit(change(request.into_inner()), &who, allowed)?;
        Ok(Response::new(Empty {}))
    }
}

/// One change an administrator makes, through gRPC or HTTP.
#[derive(Clone, Debug)]
pub enum Change {
    /// A job's reservation and weight.
    JobSet(JobSetRequest),
    /// A new rule.
    RuleStart(String),
    /// A rule's new rate.
    RuleChange(RuleChangeRequest),
    /// A rule removed.
    RuleStop(String),
    /// A pool created or replaced.
    PoolSet(PoolSetRequest),
    /// A pool removed.
    PoolRm(String),
    /// The share of a node of pools' trees.
    ShareSet(ShareSetRequest),
}

impl Change {
    /// The audit event of this change by `who`.
    pub fn event<'a>(&self, who: &'a Who) -> Event<'a> {
        let (action, item) = match self {
            Change::JobSet(r) => ("job_set", job_item(&r.job, &r.pool)),
            Change::RuleStart(text) => ("rule_start", format!("rule {:?}", rule_name(text))),
            Change::RuleChange(r) => ("rule_change", format!("rule {:?}", r.name)),
            Change::RuleStop(name) => ("rule_stop", format!("rule {name:?}")),
            Change::PoolSet(r) => ("pool_set", format!("pool {:?}", r.name)),
            Change::PoolRm(name) => ("pool_rm", format!("pool {name:?}")),
            Change::ShareSet(r) => ("share_set", format!("share {:?}", r.node)),
        };
        Event::new(action, who, item)
    }

    /// What `c` holds of the item this change is about, on one line; `None` when it
    /// holds nothing of it.
    fn state(&self, c: &ControlConfig) -> Option<String> {
        let rule = |name: &str| {
            c.rules
                .iter()
                .find(|r| r.name.as_deref() == Some(name))
                .map(|r| r.to_string())
        };
        let pool = |name: &str| {
            c.pool(name).map(|p| {
                let params: Vec<String> = p
                    .params
                    .iter()
                    .map(|(k, v)| match v {
                        ParamValue::Number(x) => format!("{k}={x}"),
                        ParamValue::Bool(b) => format!("{k}={b}"),
                    })
                    .collect();
                // The estimator in force, marked when it is the algorithm's default.
                let estimator = match (p.estimator, p.estimator_in_force()) {
                    (Some(set), _) => format!(" estimator={set}"),
                    (None, Some(default)) => format!(" estimator={default} (default)"),
                    (None, None) => String::new(),
                };
                let tree = p
                    .tree
                    .as_ref()
                    .map_or_else(String::new, |t| format!(" tree={t}"));
                format!(
                    "match={:?} capacity={} algorithm={} params=[{}]{estimator}{tree}",
                    p.filter,
                    p.capacity,
                    p.algorithm,
                    params.join(",")
                )
            })
        };
        match self {
            Change::JobSet(r) => {
                let pool = Some(r.pool.as_str()).filter(|p| !p.is_empty());
                let spec = c
                    .jobs
                    .iter()
                    .find(|j| j.job == r.job && j.pool.as_deref() == pool)?;
                let limit = spec.limit.map_or("-".to_owned(), |l| l.to_string());
                let weight = spec.weight.map_or("-".to_owned(), |w| w.to_string());
                Some(format!("limit={limit} weight={weight}"))
            }
            Change::RuleStart(text) => rule(&rule_name(text)),
            Change::RuleChange(r) => rule(&r.name),
            Change::RuleStop(name) => rule(name),
            Change::PoolSet(r) => pool(&r.name),
            Change::PoolRm(name) => pool(name),
            Change::ShareSet(r) => {
                let (level, name, parent) = crate::config::parse_share_node(&r.node).ok()?;
                c.shares
                    .iter()
                    .find(|&(l, n, p, _)| l == level && n == name && p == parent)
                    .map(|(.., share)| share.to_string())
            }
        }
    }

    fn edit(&self, c: &mut crate::config::ControlConfig) -> Result<(), crate::config::AdminError> {
        match self {
            Change::JobSet(r) => {
                let pool = Some(r.pool.as_str()).filter(|p| !p.is_empty());
                let limit = Some(r.limit.as_str()).filter(|l| !l.is_empty());
                c.job_set(&r.job, pool, limit, r.weight)?;
                c.job_clear(&r.job, pool, r.clear_limit, r.clear_weight);
                Ok(())
            }
            Change::RuleStart(rule) => c.rule_start(rule),
            Change::RuleChange(r) => c.rule_change(&r.name, &r.change),
            Change::RuleStop(name) => c.rule_stop(name),
            Change::PoolSet(r) => {
                let estimator = Some(r.estimator.as_str()).filter(|e| !e.is_empty());
                let tree = Some(r.tree.as_str()).filter(|t| !t.is_empty());
                c.pool_set(
                    &r.name,
                    &r.filter,
                    &r.capacity,
                    &r.algorithm,
                    &r.params,
                    estimator,
                    tree,
                )
            }
            Change::PoolRm(name) => c.pool_rm(name),
            Change::ShareSet(r) => c.share_set(&r.node, (!r.clear).then_some(r.share)),
        }
    }
}

/// The name a new rule's text gives it (its whole text when it gives none).
fn rule_name(text: &str) -> String {
    sluice_core::rule::parse_rule(text)
        .ok()
        .and_then(|r| r.name)
        .unwrap_or_else(|| text.to_owned())
}

/// `job "4242"`, or `job "4242" in pool "md"`.
fn job_item(job: &str, pool: &str) -> String {
    match pool {
        "" => format!("job {job:?}"),
        pool => format!("job {job:?} in pool {pool:?}"),
    }
}

/// The gRPC status of a refused change: NotFound, InvalidArgument, or Internal when the
/// controller could not save it.
pub fn status_of(e: ChangeError) -> Status {
    let message = e.to_string();
    if e.is_not_found() {
        Status::not_found(message)
    } else if e.is_bad_input() {
        Status::invalid_argument(message)
    } else {
        Status::internal(message)
    }
}

/// Every job as the coordinator sees it.
pub fn jobs_reply(coordinator: &Coordinator) -> JobsReply {
    let jobs = coordinator
        .jobs()
        .into_iter()
        .map(|j| {
            let mut periods = j.periods;
            let pools = j.pools.into_iter().map(|(name, s)| {
                let period = periods.remove(&name).map(Into::into);
                (name, PoolShare { period, ..s.into() })
            });
            let segments = j
                .segments
                .into_iter()
                .map(|(node, n)| SegmentNote { node, ..n.into() });
            with_job_names!(JobInfo {
                pools: pools.collect(),
                segments: segments.collect(),
                outside: j.outside,
            } from j)
        })
        .collect();
    JobsReply { jobs }
}

#[tonic::async_trait]
impl<H: Hooks> Admin for AdminService<H> {
    async fn status(&self, _: Request<Empty>) -> Result<Response<StatusReply>, Status> {
        Ok(Response::new(AdminService::status(self)))
    }
    async fn jobs(&self, _: Request<Empty>) -> Result<Response<JobsReply>, Status> {
        Ok(Response::new(AdminService::jobs(self)))
    }
    async fn job_set(&self, r: Request<JobSetRequest>) -> Result<Response<Empty>, Status> {
        self.checked(r, Change::JobSet)
    }
    async fn rule_start(&self, r: Request<RuleStartRequest>) -> Result<Response<Empty>, Status> {
        self.checked(r, |r| Change::RuleStart(r.rule))
    }
    async fn rule_change(&self, r: Request<RuleChangeRequest>) -> Result<Response<Empty>, Status> {
        self.checked(r, Change::RuleChange)
    }
    async fn rule_stop(&self, r: Request<NameRequest>) -> Result<Response<Empty>, Status> {
        self.checked(r, |r| Change::RuleStop(r.name))
    }
    async fn rule_list(&self, _: Request<Empty>) -> Result<Response<RuleListReply>, Status> {
        Ok(Response::new(self.rules()))
    }
    async fn pool_set(&self, r: Request<PoolSetRequest>) -> Result<Response<Empty>, Status> {
        self.checked(r, Change::PoolSet)
    }
    async fn pool_list(&self, _: Request<Empty>) -> Result<Response<PoolListReply>, Status> {
        Ok(Response::new(self.pools()))
    }
    async fn pool_rm(&self, r: Request<NameRequest>) -> Result<Response<Empty>, Status> {
        self.checked(r, |r| Change::PoolRm(r.name))
    }
    async fn share_set(&self, r: Request<ShareSetRequest>) -> Result<Response<Empty>, Status> {
        self.checked(r, Change::ShareSet)
    }
    async fn summary(&self, r: Request<NameRequest>) -> Result<Response<JobSummary>, Status> {
        let reader = Reader::of(&r, &self.auth);
        let job = r.into_inner().name;
        let c = self.coordinator.lock().expect("coordinator");
        let plain = c.summary(&job);
        let own = reader
            .own_space(&job, plain.as_ref())
            .and_then(|id| c.summary(&id));
        Ok(Response::new(reader.read(&job, plain, own)?))
    }
}

/// Who reads a job's report: its own user, or an administrator (root, the admin group
/// and users on a UNIX socket; a token holder, or a caller on loopback without a token
/// file, over TCP).
pub struct Reader {
    who: Who,
    /// Whether the caller may read any job's report.
    admin: bool,
}

impl Reader {
    /// The caller of `request`, as `auth` sees it.
    pub fn of<T>(request: &Request<T>, auth: &Auth) -> Reader {
        Reader {
            who: Who::of(request),
            admin: auth.may_change(request).is_ok(),
        }
    }

    /// The id under which to look for `job` besides its own, given what was found under
    /// it (`plain`): a user who names a job of their own space by its short name
    /// (`sluice run --job 7777`, kept as `uid1000:7777`) is given that one.
    pub fn own_space(&self, job: &str, plain: Option<&JobSummary>) -> Option<String> {
        let uid = self.who.uid.filter(|_| !self.admin)?;
        plain
            .is_none_or(|r| r.uid != uid)
            .then(|| crate::local::own_job_id(uid, job))
    }

    /// The report of `job` if the caller may read it: `own` (found under
    /// [`Reader::own_space`]'s id), else `plain`. An unknown job is NotFound; another
    /// user's job is refused, and the refusal audited.
    pub fn read(
        &self,
        job: &str,
        plain: Option<JobSummary>,
        own: Option<JobSummary>,
    ) -> Result<JobSummary, Status> {
        let found = own.or(plain);
        let Some(report) = found else {
            return Err(Status::not_found(format!(
                "no report of job {job}: unknown, still running with nothing ended yet, \
                 or older than report_retention"
            )));
        };
        if self.admin || self.who.uid == Some(report.uid) {
            return Ok(report);
        }
        let why = format!(
            "job {job} is uid {}'s: only its user or an administrator may read its report",
            report.uid
        );
        Event::new("report", &self.who, format_args!("job {job:?}"))
            .job(job)
            .not_done(Outcome::Refused, &why);
        Err(Status::permission_denied(why))
    }
}

/// A local's Admin service in cluster mode: reads and changes go to its global, changes
/// only for callers the local itself would let change things.
pub struct ForwardAdmin {
    /// The global.
    pub global: Endpoint,
    /// How to reach it (its token, its CA).
    pub options: ConnectOptions,
    /// Who may change things here.
    pub auth: Auth,
    /// This node's own warnings, added to the global's status.
    pub local: crate::local::Shared,
}

type Client = AdminClient<
    tonic::service::interceptor::InterceptedService<
        tonic::transport::Channel,
        crate::transport::Bearer,
    >,
>;

/// How long a local waits for its global on an admin call it forwards: less than a
/// command's own default deadline, so that the command hears which controller is silent.
pub const FORWARD_DEADLINE: Duration = Duration::from_millis(1500);

impl ForwardAdmin {
    /// Connects to the global and makes `call`, within [`FORWARD_DEADLINE`].
    async fn forward<T>(
        &self,
        call: impl AsyncFnOnce(&mut Client) -> Result<Response<T>, Status>,
    ) -> Result<Response<T>, Status> {
        let answer = tokio::time::timeout(FORWARD_DEADLINE, async {
            call(&mut self.client().await?).await
        })
        .await;
        answer.unwrap_or_else(|_| {
            let late = NoAnswer {
                endpoint: self.global.to_string(),
                deadline: FORWARD_DEADLINE,
            };
            Err(Status::unavailable(format!("global controller {late}")))
        })
    }

    /// Forwards a change for a caller this local lets change things; audited here, with
    /// the caller's credentials (the global sees this node's address only).
    async fn change<T>(
        &self,
        request: Request<T>,
        change: impl FnOnce(&T) -> Change,
        call: impl AsyncFnOnce(&mut Client, T) -> Result<Response<Empty>, Status>,
    ) -> Result<Response<Empty>, Status> {
        let who = Who::of(&request);
        let allowed = self.auth.may_change(&request);
        let request = request.into_inner();
        let change = change(&request);
        let event = change.event(&who);
        if let Err(refused) = allowed {
            event.not_done(Outcome::Refused, refused.message());
            return Err(refused);
        }
        let answer = self.forward(async |c| call(c, request).await).await;
        match &answer {
            Ok(_) => event.done(None, Some(&format!("forwarded to {}", self.global))),
            Err(e) => event.not_done(Outcome::Failed, e.message()),
        }
        answer
    }

    /// The global's report of `job`; `None` when it has none.
    async fn summary_of(&self, job: String) -> Result<Option<JobSummary>, Status> {
        let name = NameRequest { name: job };
        match self.forward(async |c| c.summary(name).await).await {
            Ok(report) => Ok(Some(report.into_inner())),
            Err(e) if e.code() == tonic::Code::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn client(&self) -> Result<Client, Status> {
        let channel = connect(&self.global, &self.options).await.map_err(|e| {
            Status::unavailable(format!("global controller {}: {e:#}", self.global))
        })?;
        let bearer = self
            .options
            .bearer()
            .map_err(|e| Status::internal(format!("{e:#}")))?;
        Ok(AdminClient::with_interceptor(channel, bearer))
    }
}

#[tonic::async_trait]
impl Admin for ForwardAdmin {
    async fn status(&self, r: Request<Empty>) -> Result<Response<StatusReply>, Status> {
        let mut status = self
            .forward(async |c| c.status(r.into_inner()).await)
            .await?;
        let mut l = self.local.lock().expect("local");
        let node = l.node.clone();
        status.get_mut().warnings.extend(l.places.current(&node));
        Ok(status)
    }
    async fn jobs(&self, r: Request<Empty>) -> Result<Response<JobsReply>, Status> {
        self.forward(async |c| c.jobs(r.into_inner()).await).await
    }
    async fn job_set(&self, r: Request<JobSetRequest>) -> Result<Response<Empty>, Status> {
        self.change(
            r,
            |r| Change::JobSet(r.clone()),
            async |c, r| c.job_set(r).await,
        )
        .await
    }
    async fn rule_start(&self, r: Request<RuleStartRequest>) -> Result<Response<Empty>, Status> {
        self.change(
            r,
            |r| Change::RuleStart(r.rule.clone()),
            async |c, r| c.rule_start(r).await,
        )
        .await
    }
    async fn rule_change(&self, r: Request<RuleChangeRequest>) -> Result<Response<Empty>, Status> {
        self.change(
            r,
            |r| Change::RuleChange(r.clone()),
            async |c, r| c.rule_change(r).await,
        )
        .await
    }
    async fn rule_stop(&self, r: Request<NameRequest>) -> Result<Response<Empty>, Status> {
        self.change(
            r,
            |r| Change::RuleStop(r.name.clone()),
            async |c, r| c.rule_stop(r).await,
        )
        .await
    }
    async fn rule_list(&self, r: Request<Empty>) -> Result<Response<RuleListReply>, Status> {
        self.forward(async |c| c.rule_list(r.into_inner()).await)
            .await
    }
    async fn pool_set(&self, r: Request<PoolSetRequest>) -> Result<Response<Empty>, Status> {
        self.change(
            r,
            |r| Change::PoolSet(r.clone()),
            async |c, r| c.pool_set(r).await,
        )
        .await
    }
    async fn pool_list(&self, r: Request<Empty>) -> Result<Response<PoolListReply>, Status> {
        self.forward(async |c| c.pool_list(r.into_inner()).await)
            .await
    }
    async fn pool_rm(&self, r: Request<NameRequest>) -> Result<Response<Empty>, Status> {
        self.change(
            r,
            |r| Change::PoolRm(r.name.clone()),
            async |c, r| c.pool_rm(r).await,
        )
        .await
    }
    async fn share_set(&self, r: Request<ShareSetRequest>) -> Result<Response<Empty>, Status> {
        self.change(
            r,
            |r| Change::ShareSet(r.clone()),
            async |c, r| c.share_set(r).await,
        )
        .await
    }
    async fn summary(&self, r: Request<NameRequest>) -> Result<Response<JobSummary>, Status> {
        // The global answers this local (an administrator to it); who may read which
        // report is decided here, where the caller's uid is known.
        let reader = Reader::of(&r, &self.auth);
        let job = r.into_inner().name;
        let plain = self.summary_of(job.clone()).await?;
        let own = match reader.own_space(&job, plain.as_ref()) {
            Some(id) => self.summary_of(id).await?,
            None => None,
        };
        Ok(Response::new(reader.read(&job, plain, own)?))
    }
}

/// `{"jobs":[{"job","user","account","qos","partition","nodes","launchers","pools":{NAME:{allocation,rate,demand,arrivals,limit,weight,wait,calls}},
/// "segments":[{node,layout,untouched,refused,stage_layout}]}]}`: what `sluice jobs --json`
/// and `GET /api/v1/jobs` print.
pub fn jobs_json(reply: &JobsReply) -> serde_json::Value {
    let jobs: Vec<serde_json::Value> = reply
        .jobs
        .iter()
        .map(|j| {
            let pools: serde_json::Map<String, serde_json::Value> = j
                .pools
                .iter()
                .map(|(name, s)| {
                    let mut share = serde_json::json!({"allocation": s.allocation, "rate": s.rate,
                        "demand": s.demand, "arrivals": s.arrivals, "limit": s.limit, "weight": s.weight,
                        "wait": s.wait, "calls": s.calls});
                    if let Some(p) = &s.period {
                        share["period"] = serde_json::json!({"seconds": p.seconds, "from": p.from,
                            "detected": p.detected, "confidence": p.confidence,
                            "p_value": p.p_value, "cycles": p.cycles});
                    }
                    (name.clone(), share)
                })
                .collect();
            let segments: Vec<serde_json::Value> = j
                .segments
                .iter()
                .map(|n| {
                    serde_json::json!({"node": n.node, "layout": n.layout,
                        "untouched": n.untouched, "refused": n.refused,
                        "stage_layout": n.stage_layout})
                })
                .collect();
            let outside: Vec<serde_json::Value> = j
                .outside
                .iter()
                .map(|o| {
                    serde_json::json!({"node": o.node, "pid": o.pid, "exe": o.exe,
                        "why": o.why, "held": o.held, "processes": o.processes})
                })
                .collect();
            serde_json::json!({"job": j.job, "user": j.user, "account": j.account,
                "qos": j.qos, "partition": j.partition, "nodes": j.nodes,
                "launchers": j.launchers, "pools": pools, "segments": segments,
                "outside": outside})
        })
        .collect();
    serde_json::json!({ "jobs": jobs })
}

/// `{"pools":[{"name","match","capacity","algorithm","params","estimator","allocated","used",
/// "jobs","latency_p99_s","target_p99_s","latency_from_server","costs","costs_from","tree",
/// "nodes"}]}` (`estimator` empty when the algorithm reads no load; the latencies for
/// `capacity = "auto"` pools, else 0; `costs` empty when every call costs one unit,
/// `costs_from` when none are learned).
pub fn pools_json(reply: &PoolListReply) -> serde_json::Value {
    let pools: Vec<serde_json::Value> = reply
        .pools
        .iter()
        .map(|p| {
            let nodes: Vec<serde_json::Value> = p
                .nodes
                .iter()
                .map(|n| {
                    serde_json::json!({"depth": n.depth, "level": n.level, "name": n.name,
                        "allocation": n.allocation, "rate": n.rate, "demand": n.demand,
                        "weight": n.weight})
                })
                .collect();
            serde_json::json!({"name": p.name, "match": p.filter, "capacity": p.capacity,
                "algorithm": p.algorithm, "params": p.params, "estimator": p.estimator,
                "allocated": p.allocated, "used": p.used, "jobs": p.jobs,
                "latency_p99_s": p.latency_p99_s, "target_p99_s": p.target_p99_s,
                "latency_from_server": p.latency_from_server,
                "costs": p.costs, "costs_from": p.costs_from,
                "tree": p.tree, "nodes": nodes})
        })
        .collect();
    serde_json::json!({ "pools": pools })
}

/// The status as JSON, field for field.
pub fn status_json(s: &StatusReply) -> serde_json::Value {
    serde_json::json!({
        "role": s.role, "single_node": s.single_node, "locals": s.locals, "jobs": s.jobs,
        "pools": s.pools, "rules": s.rules, "interval_s": s.interval_s, "cycle": s.cycle,
        "global_connected": s.global_connected, "cycle_us_median": s.cycle_us_median,
        "cycle_us_last": s.cycle_us_last, "warnings": s.warnings,
    })
}
