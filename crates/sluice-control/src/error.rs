//! Whose fault each error of the control plane is ([`sluice_core::error`] says why this
//! matters), and [`fault`], the one list of this crate's error types that the binary
//! consults through the crates above.
//!
//! The impls live here rather than beside each type so that the rule of the crate reads in
//! one page: what an administrator wrote (a configuration, an admin change, a source's
//! text) is theirs; files, processes, sockets and peers are the system's.

use std::error::Error;

use sluice_core::error::{Blame, Fault};
use sluice_core::{blame_all, blame_of};

use crate::cluster::ClusterError;
use crate::config::{AdminError, ConfigError, DurationError};
use crate::coordinator::ChangeError;
use crate::global::Refused;
use crate::launch::LaunchError;
use crate::program::ProgramError;
use crate::slurm_shares::SlurmSharesError;
use crate::source::SourceError;
use crate::supervise::SuperviseError;

/// Whose fault `cause` is, for the error types of this crate and those below it
/// (sluice-core's, sluice-policy's); `None` for any other type.
pub fn fault(cause: &(dyn Error + 'static)) -> Option<Fault> {
    blame_of!(cause;
        ConfigError,
        DurationError,
        AdminError,
        ChangeError,
        ClusterError,
        LaunchError,
        ProgramError,
        SlurmSharesError,
        SourceError,
        SuperviseError,
        Refused,
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
        crate::admin_client::AskError,
    )
    .or_else(|| sluice_core::error::fault(cause))
    .or_else(|| policy_fault(cause))
}

/// sluice-policy's errors: an algorithm's parameters or a share tree as written.
fn policy_fault(cause: &(dyn Error + 'static)) -> Option<Fault> {
    let input = cause.is::<sluice_policy::PolicyError>()
        || cause.is::<sluice_policy::UnknownEstimator>()
        || cause.is::<sluice_policy::tree::TreeError>();
    input.then_some(Fault::Input)
}

// What an administrator writes: a configuration file (one that cannot be read is the one
// they named), an interval, an admin change, a pool's settings, a source's text, the
// rules and places of `sluice run`.
blame_all!(Input: ConfigError, DurationError, AdminError, ClusterError, LaunchError);
// Processes, Slurm's database, a job's segment, a peer that broke the protocol.
blame_all!(System: ProgramError, SlurmSharesError, SuperviseError, Refused);

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
