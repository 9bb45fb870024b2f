//! Whose fault each error of the control plane is ([`sluice_core::error`] says why this
//! matters), and [`fault`], the one list of this crate's error types that the binary
//! consults through the crates above.
//!
//! The impls live here rather than beside each type so that the rule of the crate reads in
//! one page: what an administrator wrote (a configuration, an admin change, a source's
//! text) is theirs; files, processes, sockets and peers are the system's.

use std::error::Error;

use sluice_core::error::{Blame, Fault};

use crate::cluster::ClusterError;
use crate::config::{AdminError, ConfigError, DurationError};
use crate::coordinator::ChangeError;
use crate::global::Refused;
use crate::launch::LaunchError;
use crate::program::ProgramError;
use crate::slurm_shares::SlurmSharesError;
use crate::source::SourceError;
use crate::supervise::SuperviseError;

sluice_core::faults! {
    /// Whose fault `cause` is, for the error types of this crate and those below it
    /// (sluice-core's, sluice-policy's); `None` for any other type.
    pub fn fault;
    // What an administrator writes: a configuration file (one that cannot be read is the
    // one they named), an interval, an admin change, a pool's settings, a source's text,
    // the rules and places of `sluice run`.
    Input: ConfigError, DurationError, AdminError, ClusterError, LaunchError;
    // Processes, Slurm's database, a job's segment, a peer that broke the protocol.
    System: ProgramError, SlurmSharesError, SuperviseError, Refused;
    // Whose fault these are depends on the error: each says it (below, or beside the
    // type).
    own:
        ChangeError,
        SourceError,
        crate::transport::EndpointError,
        crate::transport::TransportError,
        crate::transport::SecretError,
        crate::transport::CallError,
        crate::transport::NoAnswer,
        crate::tls::TlsError,
        crate::site::SiteError,
        crate::state_lock::StateLockError,
        crate::segment_file::SegmentFileError,
        crate::local::LocalError,
        crate::daemon::DaemonError,
        crate::admin_client::AskError;
    below: sluice_core::error::fault, policy_fault;
}

/// sluice-policy's errors: an algorithm's parameters or a share tree as written.
fn policy_fault(cause: &(dyn Error + 'static)) -> Option<Fault> {
    let input = cause.is::<sluice_policy::PolicyError>()
        || cause.is::<sluice_policy::UnknownEstimator>()
        || cause.is::<sluice_policy::tree::TreeError>();
    input.then_some(Fault::Input)
}

impl Blame for ChangeError {
    fn fault(&self) -> Fault {
        match self.is_bad_input() {
            true => Fault::Input,
            false => Fault::System,
        }
    }
}

impl Blame for SourceError {
    /// A source written wrongly is the administrator's; one that cannot be read now is
    /// the file system's.
    fn fault(&self) -> Fault {
        match self {
            SourceError::Spec(_) => Fault::Input,
            _ => Fault::System,
        }
    }
}
