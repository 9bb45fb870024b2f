//! The clock the stage admits by: CLOCK_MONOTONIC read through the vDSO (no system
//! call), and the shared futex a held call sleeps on until its turn or a wake-up
//! (sluice-core's [`clock`](sluice_core::clock), with the application's errno kept).

use std::ffi::{CStr, c_void};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use sluice_core::clock::{futex_wait_until, resolution_ns, timespec_ns};
use sluice_core::gate::Clock;

use crate::hot::HOT;

/// The clock the stage admits by: CLOCK_MONOTONIC, shared by all processes of a node.
pub(crate) struct SysClock;

/// The resolution of CLOCK_MONOTONIC_COARSE, read once at start.
static COARSE_RES: AtomicU64 = AtomicU64::new(10_000_000);

impl Clock for SysClock {
    #[inline(always)]
    fn now_ns(&self) -> u64 {
        clock_ns(libc::CLOCK_MONOTONIC)
    }
    #[inline(always)]
    fn coarse_ns(&self) -> u64 {
        clock_ns(libc::CLOCK_MONOTONIC_COARSE)
    }
    #[inline(always)]
    fn coarse_resolution_ns(&self) -> u64 {
        COARSE_RES.load(Ordering::Relaxed)
    }
    fn wait_until(&self, deadline: u64, word: &AtomicU32, seen: u32) {
        crate::sys::keep_errno(|| futex_wait_until(word, seen, deadline))
    }
}

/// Reads the resolution of CLOCK_MONOTONIC_COARSE, once at start.
pub(crate) fn learn_coarse_resolution() {
    COARSE_RES.store(
        resolution_ns(libc::CLOCK_MONOTONIC_COARSE),
        Ordering::Relaxed,
    );
}

/// The name the kernel gives `clock_gettime` in its vDSO.
#[cfg(target_arch = "x86_64")]
const VDSO_CLOCK_GETTIME_NAME: &CStr = c"__vdso_clock_gettime";
#[cfg(not(target_arch = "x86_64"))]
const VDSO_CLOCK_GETTIME_NAME: &CStr = c"__kernel_clock_gettime";

/// Finds the vDSO's `clock_gettime`, so that [`clock_ns`] calls it directly: glibc's
/// wrapper adds a call and a check to every read, on a path where the clock is most of
/// the stage's cost. Called once at start.
pub(crate) fn find_vdso_clock() {
    // SAFETY: NUL-terminated names. RTLD_NOLOAD only looks the vDSO up among the objects
    // the loader already has: nothing is loaded, nothing runs.
    let f = unsafe {
        let h = libc::dlopen(
            c"linux-vdso.so.1".as_ptr(),
            libc::RTLD_NOW | libc::RTLD_NOLOAD,
        );
        if h.is_null() {
            return;
        }
        let f = libc::dlsym(h, VDSO_CLOCK_GETTIME_NAME.as_ptr());
        // The vDSO is never unmapped: its functions outlive the handle.
        libc::dlclose(h);
        f
    };
    HOT.vdso_clock_gettime.store(f, Ordering::Relaxed);
}

/// Nanoseconds on `clock` (read through the vDSO: no system call).
#[inline]
fn clock_ns(clock: libc::clockid_t) -> u64 {
    type ClockGettime = unsafe extern "C" fn(libc::clockid_t, *mut libc::timespec) -> i32;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let vdso = HOT.vdso_clock_gettime.load(Ordering::Relaxed);
    let f: ClockGettime = if vdso.is_null() {
        libc::clock_gettime
    } else {
        // SAFETY: the vDSO's clock_gettime, whose C signature is glibc's.
        unsafe { std::mem::transmute::<*mut c_void, ClockGettime>(vdso) }
    };
    // SAFETY: ts is a valid timespec; the monotonic clocks always exist.
    unsafe { f(clock, &mut ts) };
    timespec_ns(&ts)
}
