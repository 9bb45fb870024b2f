//! Setting the stage up: at load, from the environment (the job's segment, the log file),
//! and again in a forked child. Until [`init`] has published the state, every hook passes
//! its call straight through.

use std::ffi::{CStr, CString};

use sluice_core::classify::Compiled;
use sluice_core::config::{StageConfig, latency_sample_of};
use sluice_core::path::{PATH_MAX, mounts_of_types};
use sluice_core::rule::Identity;
use sluice_core::segment::{Header, LAYOUT_VERSION, Segment};

use crate::log::log;
#[cfg(target_arch = "x86_64")]
use crate::memory::signals;
use crate::state::{self, State};
use crate::tables::{cwd, fdtable};
use crate::{clock, exec, guard, hooks, locate, sys};

/// The environment variable that names the job's segment file.
const SEGMENT_ENV: &CStr = c"SLUICE_SEGMENT";
/// The environment variable that names the libraries the loader preloads.
const PRELOAD_ENV: &CStr = c"LD_PRELOAD";
/// The environment variable that names the stage's log file.
const LOG_ENV: &CStr = c"SLUICE_LOG";

fn getenv(name: &CStr) -> Option<&'static CStr> {
    // SAFETY: getenv takes a NUL-terminated name; the constructor runs before the program
    // can change its environment from another thread.
    let p = unsafe { libc::getenv(name.as_ptr()) };
    // SAFETY: a non-null result is a NUL-terminated string that lives in the environment.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
}

/// Sets the stage up from the environment. Called once, from the library's constructor.
pub(crate) fn init() {
    crate::log::open(getenv(LOG_ENV));
    clock::find_vdso_clock();
    clock::learn_coarse_resolution();
    hooks::resolve_all();
    let Some(path) = getenv(SEGMENT_ENV) else {
        log!(
            "{} is not set: passing every call through",
            "SLUICE_SEGMENT"
        );
        return;
    };
    match load(path) {
        Ok((state, what)) => {
            // The hooks read the application's memory only once the state is published,
            // and only through the probes, whose faults need the stage's handler.
            #[cfg(target_arch = "x86_64")]
            if !signals::arm() {
                log!(
                    "cannot install the handler of SIGSEGV and SIGBUS: passing every call through"
                );
                return;
            }
            log!("managing {what}");
            state::own_tables();
            // SAFETY: registers a handler that touches only the child's own state.
            unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
            // SAFETY: the constructor's one call.
            let state = unsafe { state.publish() };
            locate::learn_cwd(state);
            exec::remember(
                getenv(PRELOAD_ENV),
                path,
                getenv(c"SLUICE_SUPERVISED").is_some(),
            );
            // The shim's fast path for streams on unmanaged targets, last: until the
            // table of unmanaged bytes is published, every call takes the hooks.
            if hooks::publish_shim_reals() {
                fdtable::publish_unmanaged(state.places());
            } else {
                log!("a real v-variant of printf or scanf is missing: no fast path for them");
            }
        }
        Err(Refused { why, header }) => {
            let counted = header.is_some_and(|h| h.refuse(LAYOUT_VERSION));
            log!(
                "cannot use segment {}: {why}; passing every call through{}",
                path.to_string_lossy(),
                if counted {
                    " (counted in the segment's refusals, which its controller reports)"
                } else {
                    ""
                }
            );
        }
    }
}

/// Why the stage cannot use its segment, and the segment's header when it is mapped, for
/// the refusal to be counted there.
struct Refused {
    why: String,
    header: Option<&'static Header>,
}

impl From<String> for Refused {
    fn from(why: String) -> Self {
        Refused { why, header: None }
    }
}

fn load(path: &CStr) -> Result<(State, String), Refused> {
    let fd = sys::open(path, libc::O_RDWR, 0).map_err(errno_text)? as i32;
    let len = file_len(fd);
    let mapped = sys::map_shared(fd, Segment::SIZE);
    sys::close(fd);
    let ptr = mapped.map_err(errno_text)?;
    if len < Header::SIZE {
        return Err(format!("the file is {len} bytes, too short for a segment").into());
    }
    // SAFETY: the kernel mapped SIZE bytes, page-aligned, for the life of the process,
    // and the file holds at least the header's; only the header is read until the
    // layout and the length are known.
    let header = unsafe { Header::from_ptr(ptr) };
    let refused = |why: String| Refused {
        why,
        header: Some(header),
    };
    let layout = header.layout().map_err(|e| refused(e.to_string()))?;
    if len < Segment::SIZE {
        return Err(refused(format!(
            "the file is {len} bytes, a segment of layout {} needs {}",
            layout.version,
            Segment::SIZE
        )));
    }
    // SAFETY: as above, and the file is as long as a segment of a layout this reads.
    let segment = unsafe { Segment::from_ptr(ptr) };
    load_config(segment).map_err(refused)
}

/// The state for `segment`, a segment of a layout this build reads.
fn load_config(segment: &'static Segment) -> Result<(State, String), String> {
    let (text, generation) = segment.config().map_err(|e| e.to_string())?;
    let config = StageConfig::from_text(&text).map_err(|e| e.to_string())?;
    let identity = Identity {
        job: config.job.clone(),
        uid: real_uid(),
        user: config.user.clone(),
        exe: exe_name(),
    };
    let mounts = managed_mounts(&config);
    let mut compiled = Compiled::new(
        &config.rules,
        &config.pools,
        &config.watches,
        &identity,
        mounts.as_deref(),
    )
    .map_err(|e| e.to_string())?;
    compiled.set_latency_sample(latency_sample_of(&text));
    compiled.set_costs(&config.costs);
    let state = State::new(segment, compiled, generation, identity);
    Ok((
        state,
        format!(
            "job '{}' with {} rule(s) and {} pool(s), segment of layout {}",
            config.job,
            config.rules.len(),
            config.pools.len(),
            segment.header().layout().map_or(0, |l| l.version)
        ),
    ))
}

/// The length of the file open on `fd` (0 when it cannot be told).
fn file_len(fd: i32) -> usize {
    // SAFETY: lseek on a descriptor the stage opened; the offset is not used afterwards.
    let r = unsafe { libc::syscall(libc::SYS_lseek, fd, 0 as libc::off_t, libc::SEEK_END) };
    usize::try_from(r).unwrap_or(0)
}

/// The managed mounts: those named, plus those of the named types found in mountinfo;
/// `None` (everything) only when neither was given.
fn managed_mounts(config: &StageConfig) -> Option<Vec<String>> {
    if config.mounts.is_empty() && config.fs_types.is_empty() {
        return None;
    }
    let mut mounts = config.mounts.clone();
    if !config.fs_types.is_empty() {
        let text = read_file(c"/proc/self/mountinfo");
        let found = mounts_of_types(&text, &config.fs_types);
        log!(
            "file-system types {:?} are mounted at {:?}",
            config.fs_types,
            found
        );
        mounts.extend(found);
    }
    Some(mounts)
}

/// In a forked child: its own pid, no token batch of its parent's, and a current
/// directory whose lock another thread of the parent may have held during the fork.
extern "C" fn after_fork_in_child() {
    state::own_tables();
    #[cfg(target_arch = "x86_64")]
    signals::after_fork_in_child();
    guard::forget_batches_after_fork();
    cwd::unlock_after_fork();
    if let Some(st) = State::get() {
        locate::learn_cwd(st);
    }
}

fn real_uid() -> u32 {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() }
}

fn exe_name() -> String {
    let mut buf = [0u8; PATH_MAX];
    let n = sys::readlink(c"/proc/self/exe", &mut buf).unwrap_or(0);
    let path = &buf[..n];
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    String::from_utf8_lossy(name).into_owned()
}

fn read_file(path: &CStr) -> String {
    let Ok(fd) = sys::open(path, libc::O_RDONLY, 0) else {
        return String::new();
    };
    let mut buf = vec![0u8; 1 << 20];
    let n = sys::read_all(fd as i32, &mut buf).unwrap_or(0);
    sys::close(fd as i32);
    buf.truncate(n);
    String::from_utf8_lossy(&buf).into_owned()
}

fn errno_text(e: i32) -> String {
    // SAFETY: strerror returns a static or thread-local NUL-terminated string.
    let s = unsafe { CStr::from_ptr(libc::strerror(e)) };
    CString::from(s).to_string_lossy().into_owned()
}
