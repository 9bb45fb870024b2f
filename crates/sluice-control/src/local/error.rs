//! Why the local controller could not start, take a policy, or keep its stream.

use std::path::PathBuf;

use sluice_core::error::{Blame, Fault};
use sluice_core::rule::ParseError;
use sluice_core::segment::{MAX_POOLS, MAX_RULES};

use crate::config::persist::unwritable;
use crate::segment_file::SegmentFileError;
use crate::transport::CallError;

/// Why the local controller could not start, take a policy, or keep its stream.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// The state directory cannot be written.
    #[error("{}", unwritable(.dir))]
    StateDir {
        /// The state directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The segments' directory cannot be made or written in.
    #[error(
        "the segments' directory {} must be a directory this daemon can write (--shm-dir; a tmpfs, as /dev/shm is)",
        .dir.display()
    )]
    ShmDir {
        /// The segments' directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A directory of the state cannot be made or read.
    #[error("{doing}")]
    Io {
        /// "cannot read /var/lib/sluice/jobs" …
        doing: String,
        /// Why.
        source: std::io::Error,
    },
    /// A rule of the policy or of a job does not parse.
    #[error("{what} '{text}': {source}")]
    Rule {
        /// "policy rule" or "rule".
        what: &'static str,
        /// The rule as received.
        text: String,
        /// Where and why.
        source: ParseError,
    },
    /// A pool's watch does not parse.
    #[error("watch of pool {pool} '{conditions}': {source}")]
    Watch {
        /// The pool.
        pool: String,
        /// Its conditions as received.
        conditions: String,
        /// Where and why.
        source: ParseError,
    },
    /// A pool's operation costs do not parse.
    #[error("costs of pool {pool} '{text}': {source}")]
    Costs {
        /// The pool.
        pool: String,
        /// Its costs as received.
        text: String,
        /// Why.
        source: sluice_core::cost::CostError,
    },
    /// More rules for a job than its segment holds.
    #[error("{0} rules for one job; a segment holds {MAX_RULES}")]
    TooManyRules(usize),
    /// More pools than a segment holds.
    #[error("{0} pools; a segment holds {MAX_POOLS}")]
    TooManyPools(usize),
    /// A job's segment.
    #[error(transparent)]
    Segment(#[from] SegmentFileError),
    /// What a job's segment holds cannot be read.
    #[error(transparent)]
    SegmentContent(#[from] sluice_core::segment::SegmentError),
    /// The stage configuration a job's segment holds does not parse.
    #[error(transparent)]
    StageConfig(#[from] sluice_core::config::ConfigError),
    /// A saved policy that is not JSON of the right shape.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The global controller could not be reached, or refused.
    #[error(transparent)]
    Call(#[from] CallError),
    /// A message of the global's stream: the stream broke.
    #[error("the stream from the global controller broke: {}", .0.message())]
    Stream(tonic::Status),
    /// The session's stream closed on this side.
    #[error("channel closed")]
    Closed,
    /// A message from the global that holds nothing.
    #[error("an empty message from the global controller")]
    EmptyMessage,
    /// A thread panicked holding the local's state.
    #[error("state poisoned")]
    Poisoned,
}

impl LocalError {
    /// The global's own answer, when the session ended on one (a refusal, say).
    pub fn status(&self) -> Option<&tonic::Status> {
        match self {
            LocalError::Call(e) => e.status(),
            LocalError::Stream(s) => Some(s),
            _ => None,
        }
    }
}

impl Blame for LocalError {
    fn fault(&self) -> Fault {
        match self {
            // What a launcher asked for (its rules, too many of them).
            LocalError::Rule { .. }
            | LocalError::Watch { .. }
            | LocalError::Costs { .. }
            | LocalError::TooManyRules(_)
            | LocalError::TooManyPools(_) => Fault::Input,
            LocalError::Call(e) => e.fault(),
            _ => Fault::System,
        }
    }
}
