//! The statics every intercepted call reads, in one page: after a system call each page a
//! call touches costs a TLB miss (1.7 ns on this project's VM), and the compiler, left to
//! place them, spread them over two or three. The stage's [`State`] lives in the same
//! page, so that a call on an unmanaged path reads no other page of the stage's data.

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicIsize, AtomicPtr, Ordering};

use crate::hooks::Slots;
use crate::state::State;

/// The statics every call reads; see the module.
#[repr(C, align(4096))]
pub struct Hot {
    /// The stage's state, once ready ([`State::get`]): `home`, or null before.
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
    /// Where the state lives once ready.
    home: Home,
}

const _: () = assert!(size_of::<Hot>() == 4096);

/// The one [`Hot`].
pub static HOT: Hot = Hot {
    state: AtomicPtr::new(std::ptr::null_mut()),
    tls_offset: AtomicIsize::new(0),
    vdso_clock_gettime: AtomicPtr::new(std::ptr::null_mut()),
    slots: Slots::new(),
    home: Home(UnsafeCell::new(MaybeUninit::uninit())),
};

/// Room for the stage's [`State`] in [`HOT`]'s page.
struct Home(UnsafeCell<MaybeUninit<State>>);

// SAFETY: written once, by the library's constructor while no other thread runs a hook,
// before `HOT.state` publishes it (Release); read only through that pointer (Acquire).
unsafe impl Sync for Home {}

impl Hot {
    /// Moves `state` into this page and publishes it to the hooks.
    ///
    /// # Safety
    /// Called at most once, by the library's constructor.
    pub unsafe fn publish(&'static self, state: State) -> &'static State {
        // SAFETY: the only writer, before any reader can see the pointer (as the caller
        // promises); never dropped, like the process's other statics.
        let state: &'static State = unsafe { (*self.home.0.get()).write(state) };
        self.state
            .store(std::ptr::from_ref(state).cast_mut(), Ordering::Release);
        state
    }
}
