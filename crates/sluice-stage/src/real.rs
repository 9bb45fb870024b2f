//! Real symbols: resolved once with `dlsym(RTLD_NEXT)` and cached in an `AtomicPtr`.
//!
//! A symbol this libc does not export is looked up once more at the base symbol version
//! (old entry points such as `__xstat` survive only as compat symbols on new glibc); if
//! that fails too the hook uses its documented fallback, or returns the failure value
//! with `errno = ENOSYS`. Never a panic, never an exit.

use std::ffi::{CStr, c_void};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

/// The sentinel stored when a symbol was looked for and is missing.
const MISSING: *mut c_void = usize::MAX as *mut c_void;

/// One real symbol's cached address. Two words: the slots of every hook fit in the page
/// of statics every call reads ([`crate::hot`]).
pub struct Slot {
    /// The first byte of the NUL-terminated name (a thin pointer: a `&CStr` is two words).
    name: &'static u8,
    addr: AtomicPtr<c_void>,
}

/// The base version of the x86_64 and aarch64 glibc ABIs, where compat symbols live.
#[cfg(target_arch = "x86_64")]
const BASE_VERSION: &CStr = c"GLIBC_2.2.5";
#[cfg(not(target_arch = "x86_64"))]
const BASE_VERSION: &CStr = c"GLIBC_2.17";

impl Slot {
    /// A slot for `name`, resolved at first use.
    pub const fn new(name: &'static CStr) -> Self {
        Slot {
            name: &name.to_bytes_with_nul()[0],
            addr: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The symbol's address, or `None` when no later object exports it.
    #[inline(always)]
    pub fn get(&self) -> Option<*mut c_void> {
        let mut p = self.addr.load(Ordering::Relaxed);
        if p.is_null() {
            p = self.resolve();
        }
        (p != MISSING).then_some(p)
    }

    /// The symbol's address when it was resolved and found; `None` before resolution,
    /// with no call to resolve it (for paths that must make no call but the real one).
    #[inline(always)]
    pub fn resolved(&self) -> Option<*mut c_void> {
        let p = self.addr.load(Ordering::Relaxed);
        (!p.is_null() && p != MISSING).then_some(p)
    }

    #[cold]
    fn resolve(&self) -> *mut c_void {
        // SAFETY: dlsym and dlvsym take NUL-terminated names; RTLD_NEXT is valid from a
        // shared object.
        let name = self.name().as_ptr();
        let mut p = unsafe { libc::dlsym(libc::RTLD_NEXT, name) };
        if p.is_null() {
            // SAFETY: as above.
            p = unsafe { libc::dlvsym(libc::RTLD_NEXT, name, BASE_VERSION.as_ptr()) };
        }
        let p = if p.is_null() { MISSING } else { p };
        // Several threads may resolve at once; they all find the same address.
        self.addr.store(p, Ordering::Relaxed);
        p
    }

    /// The symbol's name.
    pub fn name(&self) -> &'static CStr {
        // SAFETY: the first byte of a `&'static CStr`, made in `new`.
        unsafe { CStr::from_ptr(ptr::from_ref(self.name).cast()) }
    }
}

/// What a hook returns when its real symbol is missing: the C convention for failure.
pub trait Failure {
    /// The failure value (`-1`, `NULL`, `0` items); errno is set to ENOSYS beside it.
    fn failure() -> Self;
}

macro_rules! minus_one {
    ($($t:ty),*) => { $(impl Failure for $t { fn failure() -> Self { -1 } })* };
}
minus_one!(i32, isize);

impl Failure for usize {
    fn failure() -> Self {
        0
    }
}

impl Failure for () {
    fn failure() -> Self {}
}

impl<T> Failure for *mut T {
    fn failure() -> Self {
        ptr::null_mut()
    }
}

/// Sets errno to ENOSYS and returns the failure value.
#[cold]
pub fn missing<R: Failure>() -> R {
    // SAFETY: __errno_location returns this thread's errno.
    unsafe { *libc::__errno_location() = libc::ENOSYS };
    R::failure()
}
