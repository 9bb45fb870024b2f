//! The stage's process-wide state: the job's segment and this process's compiled rules,
//! set up once by the library's constructor and never freed.
//!
//! Until the constructor has finished, and whenever it could not set up (no segment named,
//! a segment that does not map or does not parse), every hook passes straight through:
//! the program runs unmanaged, and the log file says why. A segment it cannot use (of a
//! layout it does not read, too short, a configuration it does not know) is also told:
//! the process counts itself in the segment's refusals, which its controller reports.
//!
//! A controller may replace the job's rules and pools while it runs: each call compares
//! the segment's configuration generation with the one compiled (one relaxed load), and
//! the first thread to see a change compiles the new configuration and publishes it. The
//! compiled rules a thread may still be using are never freed: a few kilobytes per change.
//! The managed places stay those of the start, because descriptors opened since carry
//! their place; a rule that names a new `mount=` applies to the places known at start.

use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use sluice_core::classify::Compiled;
use sluice_core::config::{StageConfig, latency_sample_of};
use sluice_core::gate::{Clock, Gate};
use sluice_core::path::{MountTable, PATH_MAX, PlaceIdx, Prefixes, mounts_of_types};
use sluice_core::rule::Identity;
use sluice_core::segment::{Header, LAYOUT_VERSION, Segment};

use crate::hot::HOT;
use crate::log::log;
use crate::{cwd, sys, target};

/// The environment variable that names the job's segment file.
pub const SEGMENT_ENV: &CStr = c"SLUICE_SEGMENT";
/// The environment variable that names the stage's log file.
pub const LOG_ENV: &CStr = c"SLUICE_LOG";

/// What every hook needs. The fields the managed lane reads come first, in one cache line
/// with the first place it compares a path with in the next.
#[repr(C)]
pub struct State {
    /// The job's segment.
    pub segment: &'static Segment,
    /// This process's rules, pools and managed places, as last compiled (never freed).
    compiled: AtomicPtr<Compiled>,
    /// The configuration generation `compiled` was made from.
    generation: AtomicU64,
    /// The managed places a path is compared with at a glance, with the letters after a
    /// leading slash that may lead into one (fixed at start).
    prefixes: Prefixes,
    /// Held by the thread compiling a new configuration.
    reloading: AtomicBool,
    identity: Identity,
    /// Bit `i` set when another place lies below place `i` (the places are fixed at
    /// start): a path in any other place has no place below it.
    nested: u64,
}

impl State {
    /// The state, once the stage is ready.
    #[inline(always)]
    pub fn get() -> Option<&'static State> {
        // SAFETY: set once to the state in HOT's page, never changed or dropped after.
        unsafe { HOT.state.load(Ordering::Acquire).as_ref() }
    }

    /// The admission path, with the rules in force.
    #[inline(always)]
    pub fn gate(&self) -> Gate<'_> {
        if self.segment.config_generation() != self.generation.load(Ordering::Relaxed) {
            self.reload();
        }
        Gate {
            segment: self.segment,
            compiled: self.compiled(),
        }
    }

    /// The compiled rules last published.
    #[inline(always)]
    fn compiled(&self) -> &Compiled {
        // SAFETY: always a leaked Box, never freed.
        unsafe { &*self.compiled.load(Ordering::Acquire) }
    }

    /// The managed places (fixed at start).
    #[inline(always)]
    pub fn places(&self) -> &MountTable {
        self.compiled().places()
    }

    /// Whether other places may lie below a directory in place `place`: when not,
    /// [`MountTable::has_places_below`] is false for every path in it.
    #[inline(always)]
    pub fn may_have_places_below(&self, place: u8) -> bool {
        self.nested >> (place & 63) & 1 != 0
    }

    /// The managed places a path is compared with at a glance ([`Prefixes::glance`]).
    #[inline(always)]
    pub fn prefixes(&self) -> &Prefixes {
        &self.prefixes
    }

    /// Place 0, when the root is managed and an absolute path whose byte after its slash
    /// is `second` lies under no other place, nor has one below it: that byte starts no
    /// place (and is not the path's end: the other places lie below `/` itself). The
    /// caller has checked that no component starts with a dot.
    #[inline(always)]
    pub fn managed_under_root(&self, second: u8) -> Option<PlaceIdx> {
        let places = self.places();
        (places.is_managed(0) && second != 0 && places.no_place_starts_with(second)).then_some(0)
    }

    /// Compiles the configuration in force, unless another thread is at it (this call
    /// then goes on under the rules it had).
    #[cold]
    fn reload(&self) {
        if self.reloading.swap(true, Ordering::Acquire) {
            return;
        }
        match self.segment.config() {
            Ok((text, generation)) => {
                let compiled = StageConfig::from_text(&text).map(|c| {
                    let mut compiled =
                        self.compiled()
                            .recompiled(&c.rules, &c.pools, &c.watches, &self.identity);
                    compiled.set_latency_sample(latency_sample_of(&text));
                    compiled
                });
                match compiled {
                    Ok(c) => {
                        self.compiled
                            .store(Box::into_raw(Box::new(c)), Ordering::Release);
                        log!("configuration {generation} in force");
                    }
                    Err(why) => {
                        self.segment.header().refuse(LAYOUT_VERSION);
                        log!("configuration {generation} ignored, the rules in force kept: {why}");
                    }
                }
                self.generation.store(generation, Ordering::Relaxed);
            }
            Err(why) => {
                self.segment.header().refuse(LAYOUT_VERSION);
                log!("cannot read the new configuration, the rules in force kept: {why}");
            }
        }
        self.reloading.store(false, Ordering::Release);
    }
}

/// The clock the stage admits by: CLOCK_MONOTONIC, shared by all processes of a node.
pub struct SysClock;

/// The resolution of CLOCK_MONOTONIC_COARSE, read once at start.
static COARSE_RES: AtomicU64 = AtomicU64::new(10_000_000);

impl Clock for SysClock {
    #[inline(always)]
    fn now_ns(&self) -> u64 {
        sys::clock_ns(libc::CLOCK_MONOTONIC)
    }
    #[inline(always)]
    fn coarse_ns(&self) -> u64 {
        sys::clock_ns(libc::CLOCK_MONOTONIC_COARSE)
    }
    #[inline(always)]
    fn coarse_resolution_ns(&self) -> u64 {
        COARSE_RES.load(Ordering::Relaxed)
    }
    fn wait_until(&self, deadline: u64, word: &AtomicU32, seen: u32) {
        sys::futex_wait_until(word, seen, deadline)
    }
}

fn getenv(name: &CStr) -> Option<&'static CStr> {
    // SAFETY: getenv takes a NUL-terminated name; the constructor runs before the program
    // can change its environment from another thread.
    let p = unsafe { libc::getenv(name.as_ptr()) };
    // SAFETY: a non-null result is a NUL-terminated string that lives in the environment.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
}

/// Sets the stage up from the environment. Called once, from the library's constructor.
pub fn init() {
    crate::log::open(getenv(LOG_ENV));
    sys::find_vdso_clock();
    COARSE_RES.store(
        sys::clock_resolution_ns(libc::CLOCK_MONOTONIC_COARSE),
        Ordering::Relaxed,
    );
    crate::hooks::resolve_all();
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
            if !crate::signals::arm() {
                log!(
                    "cannot install the handler of SIGSEGV and SIGBUS: passing every call through"
                );
                return;
            }
            log!("managing {what}");
            PID.store(sys::getpid(), Ordering::Relaxed);
            // SAFETY: registers a handler that touches only the child's own state.
            unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
            // SAFETY: the constructor's one call.
            let state = unsafe { HOT.publish(state) };
            // The shim's fast path for streams on unmanaged targets, last: until the
            // table of unmanaged bytes is published, every call takes the hooks.
            if crate::hooks::publish_shim_reals() {
                crate::fdtable::publish_unmanaged(state.places());
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
    let nested = nested_places(compiled.places());
    let prefixes = compiled.places().prefixes();
    let state = State {
        segment,
        compiled: AtomicPtr::new(Box::into_raw(Box::new(compiled))),
        generation: AtomicU64::new(generation),
        reloading: AtomicBool::new(false),
        identity,
        nested,
        prefixes,
    };
    learn_cwd(&state);
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

/// The places that have other places below them, as a mask.
fn nested_places(places: &MountTable) -> u64 {
    places
        .places()
        .iter()
        .enumerate()
        .filter(|&(i, p)| places.mask_under(&p.path) & !(1u64 << i) != 0)
        .fold(0, |m, (i, _)| m | 1 << i)
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

/// Reads the current directory from the kernel (after a chdir, a fork, or at start): the
/// kernel's answer follows symbolic links, as the calls that use it will.
pub fn learn_cwd(state: &State) {
    let mut buf = [0u8; PATH_MAX];
    if let Ok(n) = sys::getcwd(&mut buf) {
        cwd::set(&buf[..n], target::entry_of_normal(state, &buf[..n], true));
    }
}

/// The pid the tables belong to (changes in a forked child, not in a vfork()ed one).
static PID: AtomicI32 = AtomicI32::new(0);

/// Whether this is the process the stage's tables belong to, and not a vfork()ed child
/// borrowing its parent's memory until it execs. A system call: only for rare calls.
pub fn own_process() -> bool {
    sys::getpid() == PID.load(Ordering::Relaxed)
}

/// In a forked child: its own pid, no token batch of its parent's, and a current
/// directory whose lock another thread of the parent may have held during the fork.
extern "C" fn after_fork_in_child() {
    PID.store(sys::getpid(), Ordering::Relaxed);
    #[cfg(target_arch = "x86_64")]
    crate::signals::after_fork_in_child();
    crate::guard::forget_batches_after_fork();
    cwd::unlock_after_fork();
    if let Some(st) = State::get() {
        learn_cwd(st);
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
