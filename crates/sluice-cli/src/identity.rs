//! Who a job is: its identifier and its user, as `sluice run` decides them.

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

/// The login name of `uid`, if the user database has one.
pub use sluice_control::identity::user_name;
