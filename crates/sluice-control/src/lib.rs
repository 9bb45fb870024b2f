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
//!   and on TCP.
//! - [`cluster`]: the global's computation, pure: registry of jobs and nodes, one round
//!   per pool, each job's allocation split among its nodes, only changes pushed.
//! - [`config`]: pools, admin rules and job settings; validation and persistence.

pub mod cluster;
pub mod config;
pub mod transport;

/// The generated protocol types and services (package `sluice.v1`).
#[allow(missing_docs, clippy::all)]
pub mod proto {
    tonic::include_proto!("sluice.v1");
}
