//! Who a job is and what its launcher tells the local controller, as `sluice run` and
//! `sluice attach` decide it: its id, user and batch-system attributes, and its stage
//! configuration, checked before anything runs.

use sluice_core::classify::Compiled;
use sluice_core::config::StageConfig;
use sluice_core::path::PlaceError;
use sluice_core::rule::{Identity, Rule};
use sluice_core::segment::MAX_RULES;

use crate::identity::user_name;
use crate::proto::AttachRequest;

/// Why a job's stage configuration cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// More rules than a segment holds.
    #[error("{0} rules given; a job holds at most {MAX_RULES}")]
    TooManyRules(usize),
    /// A managed place (or a rule's) that cannot be placed.
    #[error("--mount")]
    Mount(#[source] PlaceError),
}

/// The environment variables batch systems put the job id in, in the order consulted.
pub const JOB_ENV: [&str; 5] = [
    "SLURM_JOB_ID",
    "PBS_JOBID",
    "LSB_JOBID",
    "FLUX_JOB_ID",
    "SLUICE_JOB_ID",
];

/// The job id: the one given, else the batch system's, else `EXE.UID` (Lustre's default
/// `jobid_name`).
pub fn job_id(given: Option<&str>, exe: &str) -> String {
    if let Some(j) = given {
        return j.to_owned();
    }
    JOB_ENV
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| format!("{}.{}", exe_name(exe), real_uid()))
}

/// The last component of a command's path.
pub fn exe_name(cmd: &str) -> &str {
    cmd.rsplit('/').next().unwrap_or(cmd)
}

/// The real uid of this process.
pub fn real_uid() -> u32 {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() }
}

/// Everything the stage needs for `command` (which names the job when nothing else does)
/// run by `uid` under `rules`, managing `mounts` and `fs_types`: checked (compiled once)
/// so that a bad mount or rule is reported before the command runs.
pub fn stage_config(
    command: &str,
    job: Option<&str>,
    uid: u32,
    rules: Vec<Rule>,
    mounts: Vec<String>,
    fs_types: Vec<String>,
) -> Result<StageConfig, LaunchError> {
    if rules.len() > MAX_RULES {
        return Err(LaunchError::TooManyRules(rules.len()));
    }
    let exe = exe_name(command).to_owned();
    let job = job_id(job, &exe);
    let config = StageConfig {
        job: job.clone(),
        user: user_name(uid),
        mounts,
        fs_types,
        rules: StageConfig::slot_in_order(rules),
        ..StageConfig::default()
    };
    let id = Identity {
        job,
        uid,
        user: config.user.clone(),
        exe,
    };
    let mounts = (!config.mounts.is_empty()).then_some(&config.mounts[..]);
    Compiled::new(&config.rules, &config.pools, &[], &id, mounts).map_err(LaunchError::Mount)?;
    Ok(config)
}

/// What the local controller is told of a launcher of the job `config` describes, run as
/// `uid`: its node count, task and Slurm's account, QOS and partition from the batch
/// system's environment (a launcher's own options replace the last three).
pub fn attach_request(config: &StageConfig, uid: u32) -> AttachRequest {
    let env = |names: &[&str]| names.iter().find_map(|n| std::env::var(n).ok());
    AttachRequest {
        job: config.job.clone(),
        user: config.user.clone().unwrap_or_default(),
        nodes: env(&["SLURM_JOB_NUM_NODES", "SLURM_NNODES"])
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
        task: env(&["SLURM_PROCID", "PMI_RANK", "OMPI_COMM_WORLD_RANK"]).unwrap_or_default(),
        rules: config.rules.iter().map(|s| s.rule.to_string()).collect(),
        mounts: config.mounts.clone(),
        fs_types: config.fs_types.clone(),
        uid,
        account: env(&["SLURM_JOB_ACCOUNT"]).unwrap_or_default(),
        qos: env(&["SLURM_JOB_QOS"]).unwrap_or_default(),
        partition: env(&["SLURM_JOB_PARTITION"]).unwrap_or_default(),
    }
}
