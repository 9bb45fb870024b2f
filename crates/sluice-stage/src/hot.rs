//! The statics every intercepted call reads, in one page: after a system call each page a
//! call touches costs a TLB miss (docs/performance.md measures it), and the compiler, left to
//! place them, spread them over two or three. The stage's state
//! ([`State`](crate::state::State)) lives in the same page, so that a call on an
//! unmanaged path reads no other page of the stage's data.
//!
//! The page is the bottom of the stage: it names no type of the rooms above it. The real
//! symbols' slots are expanded here from the table of symbols ([`crate::symbols`]), and
//! the state is kept as bytes that [`crate::state`] alone reads and writes.

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicIsize, AtomicPtr};

use crate::symbols::symbols;

/// The statics every call reads; see the module.
#[repr(C, align(4096))]
pub(crate) struct Hot {
    /// The stage's state once ready, in `home`; null before.
    pub(crate) state: AtomicPtr<u8>,
    /// The thread's block's distance from the thread pointer ([`crate::guard`]), 0 until
    /// first asked (no initial-exec block lies at the thread pointer itself on either TLS
    /// variant).
    pub(crate) tls_offset: AtomicIsize,
    /// The vDSO's `clock_gettime` ([`crate::clock::find_vdso_clock`]); null until found, or
    /// when the kernel maps no vDSO (glibc's is called instead).
    pub(crate) vdso_clock_gettime: AtomicPtr<c_void>,
    /// The real symbols of the hooks.
    pub(crate) slots: Slots,
    /// Room for the state, written once by the library's constructor.
    pub(crate) home: Home,
}

const _: () = assert!(size_of::<Hot>() == 4096);

/// The one [`Hot`].
pub(crate) static HOT: Hot = Hot {
    state: AtomicPtr::new(std::ptr::null_mut()),
    tls_offset: AtomicIsize::new(0),
    vdso_clock_gettime: AtomicPtr::new(std::ptr::null_mut()),
    slots: Slots::new(),
    home: Home(UnsafeCell::new(MaybeUninit::uninit())),
};

/// Bytes of room for the state: what the page has left after the slots, in whole cache
/// lines ([`crate::state`] checks that its state fits).
pub(crate) const HOME_BYTES: usize = 768;

/// Room for the stage's state in [`HOT`]'s page.
#[repr(C, align(64))]
pub(crate) struct Home(pub(crate) UnsafeCell<MaybeUninit<[u8; HOME_BYTES]>>);

// SAFETY: written once, by the library's constructor while no other thread runs a hook,
// before `HOT.state` publishes it (Release); read only through that pointer (Acquire).
unsafe impl Sync for Home {}

/// Expands the table of symbols into [`Slots`]: one slot per real symbol. It reads a
/// row's name only; what the rest of a row means is the hooks' to say.
macro_rules! slots {
    (variadic $variadic:tt $( $name:ident $args:tt -> $ret:ty = $($field:expr),* $(, else $fallback:path)? ; )*) => {
        /// The real symbols, one slot each, resolved at first use; in [`HOT`].
        #[allow(non_snake_case)] // glibc's own names: _IO_getc, __xstat
        pub(crate) struct Slots {
            $(
                #[doc = concat!("The real `", stringify!($name), "`.")]
                pub(crate) $name: $crate::real::Slot,
            )*
        }

        impl Slots {
            /// Every slot, unresolved: [`HOT`]'s, the only one.
            const fn new() -> Self {
                Slots {
                    $(
                        $name: $crate::real::Slot::new(
                            // SAFETY: the literal ends with its only NUL.
                            unsafe { ::std::ffi::CStr::from_bytes_with_nul_unchecked(concat!(stringify!($name), "\0").as_bytes()) },
                        ),
                    )*
                }
            }
        }
    };
}

symbols!(slots);
