//! The Admin service: status, jobs, pools, rules and job settings, read by anyone who
//! reaches the socket or port, changed only by an administrator: root or a member of the
//! admin group on a UNIX socket (SO_PEERCRED), a holder of the bearer token over TCP
//! (without a token file, callers on loopback only).
//!
//! [`AdminService`] answers from a [`Coordinator`] (a global, or a local in single-node
//! mode); [`ForwardAdmin`] is a local's in cluster mode, which checks the caller and then
//! asks its global.

use std::sync::{Arc, Mutex};

use tonic::{Request, Response, Status};

use crate::coordinator::{ChangeError, Coordinator};
use crate::identity::may_administer;
use crate::proto::admin_client::AdminClient;
use crate::proto::admin_server::Admin;
use crate::proto::{
    Empty, JobInfo, JobSetRequest, JobsReply, NameRequest, PoolListReply, PoolSetRequest,
    PoolShare, RuleChangeRequest, RuleListReply, RuleStartRequest, StatusReply,
};
use crate::transport::{ConnectOptions, Endpoint, check_bearer, connect, peer_cred};

/// Who may change things.
#[derive(Clone, Debug, Default)]
pub struct Auth {
    /// The admin group (besides root) on a UNIX socket.
    pub group: Option<String>,
    /// The bearer token required over TCP.
    pub token: Option<String>,
}

impl Auth {
    /// Refuses `request` unless its caller may change the configuration.
    pub fn may_change<T>(&self, request: &Request<T>) -> Result<(), Status> {
        if let Some(peer) = peer_cred(request) {
            if may_administer(peer.uid, peer.gid, self.group.as_deref()) {
                return Ok(());
            }
            let who = match &self.group {
                Some(g) => format!("root or members of group {g}"),
                None => "root".to_owned(),
            };
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
}

impl<H: Hooks> AdminService<H> {
    /// The service over `coordinator`.
    pub fn new(coordinator: Arc<Mutex<Coordinator>>, hooks: H, auth: Auth) -> Self {
        AdminService {
            coordinator,
            hooks,
            auth,
        }
    }

    fn change<T>(
        &self,
        request: &Request<T>,
        edit: impl FnOnce(&mut crate::config::ControlConfig) -> Result<(), crate::config::AdminError>,
    ) -> Result<Response<Empty>, Status> {
        self.auth.may_change(request)?;
        let result = self.coordinator.lock().expect("coordinator").change(edit);
        result.map_err(status_of)?;
        self.hooks.changed();
        Ok(Response::new(Empty {}))
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
        .map(|j| JobInfo {
            job: j.job,
            user: j.user,
            nodes: j.nodes,
            launchers: j.launchers,
            pools: j
                .pools
                .into_iter()
                .map(|(name, s)| {
                    let share = PoolShare {
                        allocation: s.allocation,
                        rate: s.rate,
                        demand: s.demand,
                        limit: s.limit,
                        weight: s.weight,
                    };
                    (name, share)
                })
                .collect(),
        })
        .collect();
    JobsReply { jobs }
}

#[tonic::async_trait]
impl<H: Hooks> Admin for AdminService<H> {
    async fn status(&self, _: Request<Empty>) -> Result<Response<StatusReply>, Status> {
        Ok(Response::new(self.hooks.status()))
    }

    async fn jobs(&self, _: Request<Empty>) -> Result<Response<JobsReply>, Status> {
        let c = self.coordinator.lock().expect("coordinator");
        Ok(Response::new(jobs_reply(&c)))
    }

    async fn job_set(&self, request: Request<JobSetRequest>) -> Result<Response<Empty>, Status> {
        let r = request.get_ref().clone();
        let pool = Some(r.pool.as_str()).filter(|p| !p.is_empty());
        let limit = Some(r.limit.as_str()).filter(|l| !l.is_empty());
        self.change(&request, |c| {
            c.job_set(&r.job, pool, limit, r.weight)?;
            c.job_clear(&r.job, pool, r.clear_limit, r.clear_weight);
            Ok(())
        })
    }

    async fn rule_start(
        &self,
        request: Request<RuleStartRequest>,
    ) -> Result<Response<Empty>, Status> {
        let rule = request.get_ref().rule.clone();
        self.change(&request, |c| c.rule_start(&rule))
    }

    async fn rule_change(
        &self,
        request: Request<RuleChangeRequest>,
    ) -> Result<Response<Empty>, Status> {
        let r = request.get_ref().clone();
        self.change(&request, |c| c.rule_change(&r.name, &r.change))
    }

    async fn rule_stop(&self, request: Request<NameRequest>) -> Result<Response<Empty>, Status> {
        let name = request.get_ref().name.clone();
        self.change(&request, |c| c.rule_stop(&name))
    }

    async fn rule_list(&self, _: Request<Empty>) -> Result<Response<RuleListReply>, Status> {
        let c = self.coordinator.lock().expect("coordinator");
        let rules = c.config().rules.iter().map(|r| r.to_string()).collect();
        Ok(Response::new(RuleListReply { rules }))
    }

    async fn pool_set(&self, request: Request<PoolSetRequest>) -> Result<Response<Empty>, Status> {
        let r = request.get_ref().clone();
        self.change(&request, |c| {
            c.pool_set(&r.name, &r.filter, &r.capacity, &r.algorithm, &r.params)
        })
    }

    async fn pool_list(&self, _: Request<Empty>) -> Result<Response<PoolListReply>, Status> {
        let c = self.coordinator.lock().expect("coordinator");
        Ok(Response::new(PoolListReply {
            pools: c.pool_infos(),
        }))
    }

    async fn pool_rm(&self, request: Request<NameRequest>) -> Result<Response<Empty>, Status> {
        let name = request.get_ref().name.clone();
        self.change(&request, |c| c.pool_rm(&name))
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
}

type Client = AdminClient<
    tonic::service::interceptor::InterceptedService<
        tonic::transport::Channel,
        crate::transport::Bearer,
    >,
>;

impl ForwardAdmin {
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
        self.client().await?.status(r.into_inner()).await
    }
    async fn jobs(&self, r: Request<Empty>) -> Result<Response<JobsReply>, Status> {
        self.client().await?.jobs(r.into_inner()).await
    }
    async fn job_set(&self, r: Request<JobSetRequest>) -> Result<Response<Empty>, Status> {
        self.auth.may_change(&r)?;
        self.client().await?.job_set(r.into_inner()).await
    }
    async fn rule_start(&self, r: Request<RuleStartRequest>) -> Result<Response<Empty>, Status> {
        self.auth.may_change(&r)?;
        self.client().await?.rule_start(r.into_inner()).await
    }
    async fn rule_change(&self, r: Request<RuleChangeRequest>) -> Result<Response<Empty>, Status> {
        self.auth.may_change(&r)?;
        self.client().await?.rule_change(r.into_inner()).await
    }
    async fn rule_stop(&self, r: Request<NameRequest>) -> Result<Response<Empty>, Status> {
        self.auth.may_change(&r)?;
        self.client().await?.rule_stop(r.into_inner()).await
    }
    async fn rule_list(&self, r: Request<Empty>) -> Result<Response<RuleListReply>, Status> {
        self.client().await?.rule_list(r.into_inner()).await
    }
    async fn pool_set(&self, r: Request<PoolSetRequest>) -> Result<Response<Empty>, Status> {
        self.auth.may_change(&r)?;
        self.client().await?.pool_set(r.into_inner()).await
    }
    async fn pool_list(&self, r: Request<Empty>) -> Result<Response<PoolListReply>, Status> {
        self.client().await?.pool_list(r.into_inner()).await
    }
    async fn pool_rm(&self, r: Request<NameRequest>) -> Result<Response<Empty>, Status> {
        self.auth.may_change(&r)?;
        self.client().await?.pool_rm(r.into_inner()).await
    }
}
