//! The part of Slurm's `spank.h` the plugin uses. The functions are slurmstepd's, srun's
//! and sbatch's own, resolved when Slurm loads the plugin.

use std::ffi::{c_char, c_int, c_void};

/// A SPANK handle (`spank_t`).
pub type Spank = *mut c_void;

/// `S_CTX_REMOTE`: slurmstepd.
pub const CTX_REMOTE: c_int = 2;

/// `S_JOB_UID` (`uid_t *`).
pub const JOB_UID: c_int = 0;
/// `S_JOB_GID` (`gid_t *`).
pub const JOB_GID: c_int = 1;
/// `S_JOB_ID` (`uint32_t *`).
pub const JOB_ID: c_int = 2;
/// `S_JOB_STEPID` (`uint32_t *`).
pub const JOB_STEPID: c_int = 3;
/// `S_JOB_NNODES` (`uint32_t *`).
pub const JOB_NNODES: c_int = 4;
/// `S_JOB_LOCAL_TASK_COUNT` (`uint32_t *`): the step's tasks on this node.
pub const JOB_LOCAL_TASK_COUNT: c_int = 6;

/// `S_JOB_ARGV` (`int *`, `char ***`): in a task, the task's own arguments.
pub const JOB_ARGV: c_int = 9;

/// `ESPANK_SUCCESS`.
pub const SUCCESS: c_int = 0;

/// The step id of a job's extern step (`SLURM_EXTERN_CONT`): no task of the job's own runs
/// in it.
pub const EXTERN_STEP: u32 = 0xffff_fffc;

/// A command-line option a plugin adds to srun, sbatch and salloc (`struct spank_option`).
#[repr(C)]
pub struct SpankOption {
    /// The long option's name.
    pub name: *const c_char,
    /// One word for its argument.
    pub arginfo: *const c_char,
    /// The help text.
    pub usage: *const c_char,
    /// 0: no argument, 1: required, 2: optional.
    pub has_arg: c_int,
    /// Passed to the callback.
    pub val: c_int,
    /// Called with the option's argument, in every context the option reaches.
    pub cb: Option<unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int>,
}

unsafe extern "C" {
    /// The context the plugin was loaded in.
    pub fn spank_context() -> c_int;
    /// An item of the job; the variadic argument is a pointer to the item's type.
    pub fn spank_get_item(sp: Spank, item: c_int, ...) -> c_int;
    /// A variable of the job's environment, copied into `buf`.
    pub fn spank_getenv(sp: Spank, var: *const c_char, buf: *mut c_char, len: c_int) -> c_int;
    /// Sets a variable of the job's environment (every task's).
    pub fn spank_setenv(
        sp: Spank,
        var: *const c_char,
        val: *const c_char,
        overwrite: c_int,
    ) -> c_int;
    /// Logs an error through Slurm (shown to the user in srun's context).
    pub fn slurm_error(fmt: *const c_char, ...);
    /// Logs a line at info level.
    pub fn slurm_info(fmt: *const c_char, ...);
    /// Logs a line at debug level.
    pub fn slurm_debug(fmt: *const c_char, ...);
}
