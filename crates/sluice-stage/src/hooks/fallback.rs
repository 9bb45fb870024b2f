//! What a stat-family hook calls when this libc does not export its real symbol.
//!
//! glibc before 2.33 exports no `stat`, `lstat`, `fstat` or `fstatat`: programs call
//! `__xstat` and friends with a version number. glibc 2.33 and later keep `__xstat` only
//! as compat symbols. Each family falls back on the other, so a program built against
//! either glibc works under the stage on either.

use std::ffi::{c_char, c_int, c_void};

use crate::real::{Slot, missing};

/// `_STAT_VER` of the x86_64 and aarch64 kernel stat layouts.
#[cfg(target_arch = "x86_64")]
const STAT_VER: c_int = 1;
#[cfg(not(target_arch = "x86_64"))]
const STAT_VER: c_int = 0;

type PathStat = unsafe extern "C" fn(*const c_char, *mut c_void) -> c_int;
type VerPathStat = unsafe extern "C" fn(c_int, *const c_char, *mut c_void) -> c_int;
type FdStat = unsafe extern "C" fn(c_int, *mut c_void) -> c_int;
type VerFdStat = unsafe extern "C" fn(c_int, c_int, *mut c_void) -> c_int;
type AtStat = unsafe extern "C" fn(c_int, *const c_char, *mut c_void, c_int) -> c_int;
type VerAtStat = unsafe extern "C" fn(c_int, c_int, *const c_char, *mut c_void, c_int) -> c_int;

/// The real function in `slot`, as type `F`.
///
/// # Safety
/// `F` must be the symbol's C signature.
unsafe fn real<F: Copy>(slot: &Slot) -> Option<F> {
    // SAFETY: the caller names the signature; fn pointers and data pointers have one size.
    slot.get()
        .map(|p| unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

macro_rules! via {
    ($( $hook:ident($($a:ident: $t:ty),*) => $slot:ident: $f:ty, |$r:ident| $call:expr; )*) => {$(
        /// Fallback for the hook of the same name.
        ///
        /// # Safety
        /// The C function's contract.
        pub unsafe fn $hook($($a: $t),*) -> c_int {
            // SAFETY: the slot's symbol has signature `$f`; arguments are passed on.
            match unsafe { real::<$f>(&crate::hot::HOT.slots.$slot) } {
                Some($r) => unsafe { $call },
                None => missing(),
            }
        }
    )*};
}

via! {
    stat(p: *const c_char, b: *mut c_void) => __xstat: VerPathStat, |f| f(STAT_VER, p, b);
    stat64(p: *const c_char, b: *mut c_void) => __xstat64: VerPathStat, |f| f(STAT_VER, p, b);
    lstat(p: *const c_char, b: *mut c_void) => __lxstat: VerPathStat, |f| f(STAT_VER, p, b);
    lstat64(p: *const c_char, b: *mut c_void) => __lxstat64: VerPathStat, |f| f(STAT_VER, p, b);
    fstat(fd: c_int, b: *mut c_void) => __fxstat: VerFdStat, |f| f(STAT_VER, fd, b);
    fstat64(fd: c_int, b: *mut c_void) => __fxstat64: VerFdStat, |f| f(STAT_VER, fd, b);
    fstatat(d: c_int, p: *const c_char, b: *mut c_void, fl: c_int) => __fxstatat: VerAtStat, |f| f(STAT_VER, d, p, b, fl);
    fstatat64(d: c_int, p: *const c_char, b: *mut c_void, fl: c_int) => __fxstatat64: VerAtStat, |f| f(STAT_VER, d, p, b, fl);
    xstat(_v: c_int, p: *const c_char, b: *mut c_void) => stat: PathStat, |f| f(p, b);
    xstat64(_v: c_int, p: *const c_char, b: *mut c_void) => stat64: PathStat, |f| f(p, b);
    lxstat(_v: c_int, p: *const c_char, b: *mut c_void) => lstat: PathStat, |f| f(p, b);
    lxstat64(_v: c_int, p: *const c_char, b: *mut c_void) => lstat64: PathStat, |f| f(p, b);
    fxstat(_v: c_int, fd: c_int, b: *mut c_void) => fstat: FdStat, |f| f(fd, b);
    fxstat64(_v: c_int, fd: c_int, b: *mut c_void) => fstat64: FdStat, |f| f(fd, b);
    fxstatat(_v: c_int, d: c_int, p: *const c_char, b: *mut c_void, fl: c_int) => fstatat: AtStat, |f| f(d, p, b, fl);
    fxstatat64(_v: c_int, d: c_int, p: *const c_char, b: *mut c_void, fl: c_int) => fstatat64: AtStat, |f| f(d, p, b, fl);
}
