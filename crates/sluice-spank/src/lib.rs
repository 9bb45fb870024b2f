//! `libsluice_spank.so`: sluice as a Slurm SPANK plugin.
//!
//! One line in plugstack.conf (see docs/deploy.md) adds `--sluice[=off|RULE-FILE]` to srun,
//! sbatch and salloc. In slurmstepd, once the step's options are known and while
//! slurmstepd still runs as root (`slurm_spank_init_post_opt`), the plugin attaches the
//! step to the node's local controller for the job's user (Slurm's job id, the user, its
//! node count), puts the stage and the job's segment into every task's environment, and
//! holds the attachment until the step ends. The controller sees root attach the job, so
//! the job's id is the scheduler's and no user can claim it; the user's own `sluice run`
//! inside the job joins it as one of its processes. The stage itself stays socket-free:
//! the connection is slurmstepd's.
//!
//! A task whose program is statically linked or written in Go (the stage cannot enter
//! it) is held through seccomp by a supervisor of its own, started in the task's process
//! just before Slurm execs the program (`slurm_spank_task_init`, [`task`]); a dynamic
//! task pays one look at its program's ELF headers.
//!
//! When a step's last task on a node exits, the plugin lets the job go there and, when that
//! ended the job everywhere, puts its report's one line (`sluice report`) in the job's
//! AdminComment.
//!
//! Nothing the plugin does can fail a job that did not ask for something wrong: with no
//! local controller on the node, or the stage missing, the step runs untouched and the
//! reason goes to slurmd's log; a controller that does not answer within the site's
//! deadline is passed by (the step runs standalone under its own rules, or, with
//! `unreachable=refuse`, fails). A rules file that does not parse, or a controller that
//! refuses the job, fails the step with one line the user sees.

mod ffi;
pub mod settings;
mod task;

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::path::PathBuf;
use std::sync::Mutex;

use sluice_control::identity::user_name;
use sluice_control::launcher::{Attach, Held, Unreachable, attach};
use sluice_control::proto::AttachRequest;
use sluice_control::segment_file::{SHM_DIR, SegmentFile, file_safe};
use sluice_core::config::StageConfig;
use sluice_core::error::Chain;
use sluice_core::rule::Rule;

use ffi::{Spank, SpankOption};
use settings::{Ask, Site};

/// Slurm's name for the plugin.
#[unsafe(no_mangle)]
pub static plugin_name: [u8; 7] = *b"sluice\0";
/// The kind of plugin, for Slurm's loader.
#[unsafe(no_mangle)]
pub static plugin_type: [u8; 6] = *b"spank\0";
/// The Slurm release the plugin was built for (build.rs): Slurm loads plugins of its own
/// major and minor version only.
#[unsafe(no_mangle)]
pub static plugin_version: c_uint = number(env!("SLUICE_SLURM_VERSION_NUMBER"));
/// The SPANK interface version.
#[unsafe(no_mangle)]
pub static spank_plugin_version: c_uint = 1;

const fn number(s: &str) -> c_uint {
    let b = s.as_bytes();
    let (mut n, mut i) = (0, 0);
    while i < b.len() {
        n = n * 10 + (b[i] - b'0') as c_uint;
        i += 1;
    }
    n
}

/// The option table Slurm reads (`spank_options`), ended by an empty entry.
#[repr(transparent)]
pub struct Options([SpankOption; 2]);

// SAFETY: the table is immutable and its pointers are to static strings.
unsafe impl Sync for Options {}

/// `--sluice[=off|RULE-FILE]`.
#[unsafe(no_mangle)]
pub static spank_options: Options = Options([
    SpankOption {
        name: c"sluice".as_ptr(),
        arginfo: c"off|RULE-FILE".as_ptr(),
        usage: c"I/O quality of service: without an argument, attach the job to sluice (the site may do so for every job); 'off' leaves it alone; a rules file adds the job's own rules (docs/rules.md)".as_ptr(),
        has_arg: 2,
        val: 0,
        cb: Some(on_option),
    },
    SpankOption {
        name: std::ptr::null(),
        arginfo: std::ptr::null(),
        usage: std::ptr::null(),
        has_arg: 0,
        val: 0,
        cb: None,
    },
]);

/// The site's settings, read by `slurm_spank_init` in every context.
static SITE: Mutex<Option<Site>> = Mutex::new(None);
/// What the job asked for, when it used `--sluice`.
static ASK: Mutex<Option<Ask>> = Mutex::new(None);
/// The step's attachment, or its own segment, held in slurmstepd until the step ends.
static HELD: Mutex<Option<Held>> = Mutex::new(None);

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic aborts (panic=abort), so a poisoned lock cannot be seen; never panic here.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn debug(msg: &str) {
    let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    // SAFETY: Slurm's logging function, with a format that takes one string.
    unsafe { ffi::slurm_debug(c"sluice: %s".as_ptr(), msg.as_ptr()) };
}

fn log(error: bool, msg: &str) {
    let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    // SAFETY: Slurm's logging functions, with a format that takes one string.
    unsafe {
        if error {
            ffi::slurm_error(c"sluice: %s".as_ptr(), msg.as_ptr());
        } else {
            ffi::slurm_info(c"sluice: %s".as_ptr(), msg.as_ptr());
        }
    }
}

/// `--sluice`'s callback: records the choice; in srun, sbatch and salloc, a rules file
/// is read now, so that a bad one is refused before the job is queued.
unsafe extern "C" fn on_option(_val: c_int, optarg: *const c_char, remote: c_int) -> c_int {
    // SAFETY: Slurm passes the option's argument as a C string, or null.
    let arg = (!optarg.is_null()).then(|| unsafe { CStr::from_ptr(optarg) }.to_string_lossy());
    let ask = Ask::parse(arg.as_deref());
    if remote == 0
        && let Err(e) = ask.rules()
    {
        log(true, &Chain(&e).to_string());
        return -1;
    }
    *locked(&ASK) = Some(ask);
    0
}

/// The arguments Slurm passes a callback: plugstack.conf's, after the plugin's path.
///
/// # Safety
/// `av` holds `ac` C strings.
unsafe fn args<'a>(ac: c_int, av: *const *const c_char) -> Vec<std::borrow::Cow<'a, str>> {
    (0..ac.max(0) as usize)
        // SAFETY: the caller's contract.
        .map(|i| unsafe { CStr::from_ptr(*av.add(i)) }.to_string_lossy())
        .collect()
}

/// Reads the site's settings, in every context (so srun reports a bad plugstack.conf).
///
/// # Safety
/// Called by Slurm: `av` holds `ac` C strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_spank_init(
    _sp: Spank,
    ac: c_int,
    av: *const *const c_char,
) -> c_int {
    // SAFETY: Slurm's contract.
    let args = unsafe { args(ac, av) };
    match Site::parse(args.iter().map(|a| a.as_ref())) {
        Ok(site) => {
            *locked(&SITE) = Some(site);
            0
        }
        Err(e) => {
            log(true, &Chain(&e).to_string());
            -1
        }
    }
}

/// In slurmstepd, after the step's options were read and before its tasks start, while
/// slurmstepd runs as root (`slurm_spank_user_init` would be too late: Slurm drops
/// privileges for it, and the controller would see the job's user attach the job):
/// attaches the step and sets the tasks' environment.
///
/// # Safety
/// Called by Slurm with its handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_spank_init_post_opt(
    sp: Spank,
    _ac: c_int,
    _av: *const *const c_char,
) -> c_int {
    // SAFETY: no arguments.
    if unsafe { ffi::spank_context() } != ffi::CTX_REMOTE {
        return 0;
    }
    let Some(site) = locked(&SITE).clone() else {
        return 0;
    };
    let ask = locked(&ASK).clone();
    let ask = match ask {
        Some(ask) => ask,
        None if site.on_by_default => Ask::On,
        None => Ask::Off,
    };
    if ask == Ask::Off {
        return 0;
    }
    // SAFETY: `sp` is Slurm's handle, valid for this call.
    match unsafe { attach_step(sp, &site, &ask) } {
        Ok(()) => 0,
        Err(Refusal::Fail(msg)) => {
            log(true, &msg);
            -1
        }
        Err(Refusal::RunUntouched(msg)) => {
            log(false, &msg);
            0
        }
    }
}

/// Why a step was not attached.
enum Refusal {
    /// The job asked for something wrong: the step fails with this line.
    Fail(String),
    /// The node cannot hold it (no controller, no stage): the step runs untouched.
    RunUntouched(String),
}

/// A 32-bit item of the job.
///
/// # Safety
/// `sp` is Slurm's handle and `item` one whose argument is a `uint32_t *` (or `uid_t *`).
unsafe fn item(sp: Spank, item: c_int) -> Option<u32> {
    let mut v: u32 = 0;
    // SAFETY: the caller's contract.
    let rc = unsafe { ffi::spank_get_item(sp, item, &mut v as *mut u32) };
    (rc == ffi::SUCCESS).then_some(v)
}

/// # Safety
/// `sp` is Slurm's handle, in slurmstepd.
unsafe fn attach_step(sp: Spank, site: &Site, ask: &Ask) -> Result<(), Refusal> {
    // SAFETY: the caller's contract; these items take a uint32_t * (uid_t and gid_t are
    // 32 bits).
    let (job, step, uid, gid, nodes) = unsafe {
        (
            item(sp, ffi::JOB_ID),
            item(sp, ffi::JOB_STEPID),
            item(sp, ffi::JOB_UID),
            item(sp, ffi::JOB_GID),
            item(sp, ffi::JOB_NNODES),
        )
    };
    let (Some(job), Some(uid), Some(gid)) = (job, uid, gid) else {
        return Err(Refusal::RunUntouched(
            "Slurm did not give the job id and user".into(),
        ));
    };
    if step == Some(ffi::EXTERN_STEP) {
        return Ok(());
    }
    let stage = site.stage.clone().unwrap_or_else(beside_plugin);
    if !stage.is_file() {
        return Err(Refusal::RunUntouched(format!(
            "job {job}: the stage {} is missing; the job runs without sluice",
            stage.display()
        )));
    }
    let rules = ask
        .rules()
        .map_err(|e| Refusal::Fail(Chain(&e).to_string()))?;
    let user = user_name(uid).unwrap_or_else(|| uid.to_string());
    let request = AttachRequest {
        job: job.to_string(),
        user: user.clone(),
        nodes: nodes.unwrap_or(0),
        task: step.map(|s| format!("step {s}")).unwrap_or_default(),
        rules: rules.iter().map(ToString::to_string).collect(),
        mounts: site.mounts.clone(),
        fs_types: site.fs_types.clone(),
        uid,
        // slurmstepd has the job's environment, where Slurm put these.
        // SAFETY: the caller's contract.
        account: unsafe { getenv(sp, c"SLURM_JOB_ACCOUNT") }.unwrap_or_default(),
        qos: unsafe { getenv(sp, c"SLURM_JOB_QOS") }.unwrap_or_default(),
        partition: unsafe { getenv(sp, c"SLURM_JOB_PARTITION") }.unwrap_or_default(),
    };
    let held = match attach(&site.socket, request, site.deadline) {
        Ok(Attach::Attached(a)) => Held::Attached(a),
        Ok(Attach::Absent) => {
            return Err(Refusal::RunUntouched(format!(
                "job {job}: no local controller on {}; the job runs without sluice",
                site.socket.display()
            )));
        }
        Ok(Attach::Unanswered(why)) => match site.unreachable {
            Unreachable::Refuse => {
                return Err(Refusal::Fail(format!(
                    "job {job}: {why}; the step is not started (unreachable=refuse)"
                )));
            }
            Unreachable::Standalone => {
                log(
                    false,
                    &format!(
                        "job {job}: {why}; the step runs standalone, under its own rules only"
                    ),
                );
                let own = own_segment(job, step, (uid, gid), user, site, rules)?;
                Held::Alone(own)
            }
        },
        Err(status) => return Err(Refusal::Fail(format!("job {job}: {}", status.message()))),
    };
    let mut preload = stage.display().to_string();
    // SAFETY: the caller's contract.
    if let Some(old) = unsafe { getenv(sp, c"LD_PRELOAD") }.filter(|v| !v.is_empty()) {
        preload = format!("{preload}:{old}");
    }
    // SAFETY: as above.
    unsafe {
        setenv(sp, c"LD_PRELOAD", &preload)?;
        setenv(sp, c"SLUICE_SEGMENT", &held.segment().display().to_string())?;
    }
    *locked(&HELD) = Some(held);
    Ok(())
}

/// The step's own segment, for its user, under its own rules only (as `sluice run
/// --standalone` makes one): what the step runs under when the controller is silent.
fn own_segment(
    job: u32,
    step: Option<u32>,
    owner: (u32, u32),
    user: String,
    site: &Site,
    rules: Vec<Rule>,
) -> Result<SegmentFile, Refusal> {
    let config = StageConfig {
        job: job.to_string(),
        user: Some(user),
        mounts: site.mounts.clone(),
        fs_types: site.fs_types.clone(),
        rules: StageConfig::slot_in_order(rules),
        ..StageConfig::default()
    };
    let name = format!(
        "sluice.{}.{}.{}",
        file_safe(&config.job),
        step.unwrap_or(0),
        std::process::id()
    );
    SegmentFile::create(
        std::path::Path::new(SHM_DIR).join(name),
        &config,
        &[],
        Some(owner),
    )
    .map_err(|e| {
        Refusal::RunUntouched(format!(
            "job {job}: {}; the job runs without sluice",
            Chain(&e)
        ))
    })
}

/// # Safety
/// `sp` is Slurm's handle.
unsafe fn getenv(sp: Spank, name: &CStr) -> Option<String> {
    let mut buf = vec![0u8; 64 * 1024];
    // SAFETY: the caller's contract; the buffer is as long as we say.
    let rc = unsafe {
        ffi::spank_getenv(
            sp,
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len() as c_int,
        )
    };
    (rc == ffi::SUCCESS)
        .then(|| {
            CStr::from_bytes_until_nul(&buf)
                .ok()
                .map(|s| s.to_string_lossy().into_owned())
        })
        .flatten()
}

/// # Safety
/// `sp` is Slurm's handle.
unsafe fn setenv(sp: Spank, name: &CStr, value: &str) -> Result<(), Refusal> {
    let value =
        CString::new(value).map_err(|_| Refusal::RunUntouched("a path holds a NUL".into()))?;
    // SAFETY: the caller's contract.
    match unsafe { ffi::spank_setenv(sp, name.as_ptr(), value.as_ptr(), 1) } {
        ffi::SUCCESS => Ok(()),
        rc => Err(Refusal::RunUntouched(format!(
            "cannot set {} in the job's environment (spank error {rc})",
            name.to_string_lossy()
        ))),
    }
}

/// `libsluice_stage.so` in the plugin's own directory.
fn beside_plugin() -> PathBuf {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr fills `info` for an address of this library.
    let found = unsafe { libc::dladdr(on_option as *const c_void, &mut info) } != 0
        && !info.dli_fname.is_null();
    let me = match found {
        // SAFETY: dladdr's file name is a C string.
        true => PathBuf::from(
            unsafe { CStr::from_ptr(info.dli_fname) }
                .to_string_lossy()
                .into_owned(),
        ),
        false => PathBuf::from("/usr/lib/sluice/libsluice_spank.so"),
    };
    me.with_file_name("libsluice_stage.so")
}

/// In each task's process, as its user, just before Slurm execs its program: when the
/// step is held (attached, or standalone) and the program is one the stage cannot enter
/// (static, Go), starts its supervisor and puts the task under the seccomp filter. Never
/// fails the task: one that cannot be supervised runs unheld, and slurmd's log says why.
///
/// # Safety
/// Called by Slurm with its handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_spank_task_init(
    sp: Spank,
    _ac: c_int,
    _av: *const *const c_char,
) -> c_int {
    // This process was forked from slurmstepd: its copies of the locks are free unless
    // another thread held one at the fork, which is not waited for. A step is held only
    // in slurmstepd (`slurm_spank_init_post_opt`): in any other context there is nothing.
    let segment = match HELD.try_lock() {
        Ok(held) => match held.as_ref() {
            Some(h) => h.segment().to_owned(),
            None => return 0,
        },
        Err(_) => return 0,
    };
    let Some(site) = SITE.try_lock().ok().and_then(|s| s.clone()) else {
        return 0;
    };
    if !site.supervise {
        return 0;
    }
    // SAFETY: `sp` is Slurm's handle, in the task.
    let Some(program) = (unsafe { task::program(sp) }) else {
        return 0;
    };
    let Some(why) = task::inspect(&program) else {
        return 0;
    };
    // SAFETY: as above.
    let job = unsafe { item(sp, ffi::JOB_ID) }.unwrap_or(0);
    // SAFETY: as above.
    let env_of = |name: &CStr| unsafe { getenv(sp, name) };
    let stage = site.stage.clone().unwrap_or_else(beside_plugin);
    let sluice = stage.with_file_name("sluice");
    let io_uring = task::io_uring_of(env_of(c"SLUICE_IO_URING").as_deref());
    let pid = std::process::id();
    // SAFETY: this is the task's process, before the exec.
    match unsafe {
        task::supervise(
            &sluice,
            &segment,
            io_uring,
            env_of(c"SLUICE_LOG"),
            site.deadline,
        )
    } {
        Ok(supervisor) => {
            // Its descendants are under the filter already: the stage in them starts no
            // supervisor of its own.
            // SAFETY: as above.
            let _ = unsafe { setenv(sp, c"SLUICE_SUPERVISED", "1") };
            debug(&format!(
                "job {job}: task pid {pid} runs {} ({why}): its file calls are held through seccomp by supervisor pid {supervisor}",
                program.display()
            ));
        }
        Err(e) => log(
            false,
            &format!(
                "job {job}: task pid {pid} runs {} ({why}), which the stage cannot enter, unheld: {e}",
                program.display()
            ),
        ),
    }
    0
}

/// When the step ends, in slurmstepd: detaches it (closing the connection), or removes
/// its own segment.
///
/// # Safety
/// Called by Slurm.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_spank_exit(
    _sp: Spank,
    _ac: c_int,
    _av: *const *const c_char,
) -> c_int {
    drop(locked(&HELD).take());
    0
}

/// Tasks of this step that exited, in slurmstepd.
static TASKS_EXITED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// As each task of the step exits, in slurmstepd (as root, before Slurm hears that the
/// step ended, while the job still runs: slurmctld refuses to change a finished job): at
/// the last task of the node, lets the job go and, when that ended the job on every node,
/// puts its report's one line in the job's AdminComment, where `scontrol show job` shows
/// it (and `sacct -o AdminComment`, with slurmdbd). Never fails the step.
///
/// # Safety
/// Called by Slurm with its handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_spank_task_exit(
    sp: Spank,
    _ac: c_int,
    _av: *const *const c_char,
) -> c_int {
    let exited = TASKS_EXITED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    // SAFETY: `sp` is Slurm's handle; these items take a uint32_t *.
    let (tasks, job) = unsafe { (item(sp, ffi::JOB_LOCAL_TASK_COUNT), item(sp, ffi::JOB_ID)) };
    if exited < tasks.unwrap_or(1) {
        return 0;
    }
    let Some(held) = locked(&HELD).take() else {
        return 0;
    };
    let attached = matches!(held, Held::Attached(_));
    // Closing the connection detaches the step.
    drop(held);
    let site = locked(&SITE).clone();
    let (Some(site), Some(job), true) = (site, job, attached) else {
        return 0;
    };
    let Some(wait) = site.report else {
        return 0;
    };
    match sluice_control::launcher::ended_report(
        &site.socket,
        &job.to_string(),
        site.deadline,
        wait,
    ) {
        Ok(Some(r)) => admin_comment(&site, job, &sluice_control::report::line(&r)),
        Ok(None) => {}
        Err(e) => log(false, &format!("job {job}: no report: {e}")),
    }
    0
}

/// Sets job `job`'s AdminComment to `line` with `scontrol update`, within the site's
/// deadline (a slurmctld that does not answer is left, and said so in slurmd's log).
fn admin_comment(site: &Site, job: u32, line: &str) {
    let child = std::process::Command::new(&site.scontrol)
        .arg("update")
        .arg(format!("JobId={job}"))
        .arg(format!("AdminComment={line}"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            log(
                true,
                &format!("job {job}: cannot run {}: {e}", site.scontrol.display()),
            );
            return;
        }
    };
    let start = std::time::Instant::now();
    // scontrol's own timeout is slurmctld's MessageTimeout (10 s by default): the
    // site's deadline, at least a few seconds, bounds it here.
    let limit = site.deadline.max(std::time::Duration::from_secs(5));
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return,
            Ok(Some(status)) => {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                log(
                    true,
                    &format!(
                        "job {job}: scontrol update AdminComment: {status}: {}",
                        err.trim()
                    ),
                );
                return;
            }
            Ok(None) if start.elapsed() < limit => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                log(
                    true,
                    &format!(
                        "job {job}: scontrol did not answer within {limit:?}; AdminComment not set"
                    ),
                );
                return;
            }
        }
    }
}
