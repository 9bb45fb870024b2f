//! The statics every intercepted call reads, in one page: after a system call each page a
//! call touches costs a TLB miss (1.7 ns on this project's VM), and the compiler, left to
//! place them, spread them over two or three.

use std::ffi::c_void;
use std::sync::atomic::{AtomicIsize, AtomicPtr};

use crate::hooks::Slots;
use crate::state::State;

/// The statics every call reads; see the module.
#[repr(C, align(4096))]
pub struct Hot {
    /// The stage's state, once ready ([`State::get`]).
    pub state: AtomicPtr<State>,
    /// The thread's block's distance from the thread pointer ([`crate::guard`]), 0 until
    /// first asked (no initial-exec block lies at the thread pointer itself on either TLS
    /// variant).
    pub tls_offset: AtomicIsize,
    /// The vDSO's `clock_gettime` ([`crate::sys::find_vdso_clock`]); null until found, or
    /// when the kernel maps no vDSO (glibc's is called instead).
    pub vdso_clock_gettime: AtomicPtr<c_void>,
    /// The real symbols of the hooks.
    pub slots: Slots,
}

const _: () = assert!(size_of::<Hot>() == 4096);

/// The one [`Hot`].
pub static HOT: Hot = Hot {
    state: AtomicPtr::new(std::ptr::null_mut()),
    tls_offset: AtomicIsize::new(0),
    vdso_clock_gettime: AtomicPtr::new(std::ptr::null_mut()),
    slots: Slots::new(),
};
