//! # sluice-control
//!
//! The control plane: a local controller on every compute node attaches jobs for their
//! launchers and owns their segments; a global controller per cluster divides each
//! pool's capacity among all running jobs every interval (collect → compute → enforce)
//! and pushes each node its share.
//!
//! - [`proto`]: the gRPC protocol (`proto/sluice/v1/control.proto`), compiled without a
//!   system protoc.
//! - [`transport`]: servers and clients on UNIX sockets (with the peer's credentials)
//!   and on TCP; [`tls`]: certificates and handshakes on TCP; [`link_auth`]: what a
//!   global requires of its locals.
//! - [`cluster`]: the global's computation, pure: registry of jobs and nodes, one round
//!   per pool, each job's allocation split among its nodes, only changes pushed.
//! - [`config`]: pools, admin rules and job settings; validation and persistence.
//! - [`coordinator`]: the configuration and the computation it drives, changed by admins.
//! - [`global`]: the global controller's streams and cycle; [`held_file`]: the rates its
//!   nodes enforce, kept for its next start.
//! - [`local`]: the local controller: attached jobs, their segments, observation.
//! - [`admin`]: the Admin service, and who may change things; [`http`]: the same as a
//!   JSON API under `/api/v1`.
//! - [`metrics`]: `/metrics` for Prometheus.
//! - [`daemon`]: both daemons as processes: sockets, ports, timers, signals.
//! - [`segment_file`]: a job's segment as a file, changed live; [`state_lock`]: one
//!   daemon per state directory.
//! - [`identity`]: users and groups from the system's database; [`launch`]: who a job
//!   is and what its launcher asks for.
//! - [`site`]: the site's configuration file as a daemon starts with it (and `sluice
//!   config check` checks it); [`audit`]: one log line and one count for every change
//!   and every refusal.
//! - [`supervise`]: programs the stage cannot enter (static, Go), held through a
//!   seccomp filter whose file calls a supervisor admits through the job's segment.
//!   [`program`]: a job's program started, its signals forwarded, its counters written.
//! - [`render`]: admin replies as tables and lines for a terminal.
//! - [`report`]: job reports, made when a job ends and kept for `report_retention`.
//! - [`source`]: an automatic pool's capacity read from the file system's server (a Ceph
//!   MDS's admin socket, a Lustre MDT's statistics).

pub mod admin;
pub mod admin_client;
pub mod audit;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod coordinator;
pub mod daemon;
pub mod error;
pub mod global;
pub mod held_file;
pub mod http;
pub mod identity;
pub mod launch;
pub mod launcher;
pub mod link_auth;
pub mod local;
pub mod metrics;
pub mod program;
pub mod render;
pub mod report;
pub mod segment_file;
pub mod site;
pub mod slurm_shares;
pub mod source;
pub mod state_lock;
pub mod supervise;
pub mod tls;
pub mod transport;

/// The generated protocol types and services (package `sluice.v1`).
#[allow(missing_docs, clippy::all)]
pub mod proto {
    tonic::include_proto!("sluice.v1");
}
