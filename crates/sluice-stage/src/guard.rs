//! The re-entrancy guard and this thread's admission state, in one thread-local block.
//!
//! A call the stage makes itself (dlsym may open files) and a call from a signal handler
//! that interrupts a hook while it admits must go straight to the real function; so does
//! everything before the stage is ready. The flag and the thread's counters and token
//! batches share one block, so a call pays for one thread-local lookup.
//!
//! The block is the C shim's, in the initial-exec TLS model: stable Rust gives a
//! preloaded library only general-dynamic thread-locals, each reached through a call of
//! `__tls_get_addr`. An initial-exec block lies at a fixed distance from the thread
//! pointer, the same in every thread; once that distance is known the block is one
//! register read and an add away. It is zero when a thread starts and has no destructor,
//! so reading it never allocates and works during thread start and teardown; the state
//! is laid in on the thread's first entry.

use std::cell::{Cell, UnsafeCell};
use std::mem::offset_of;
use std::sync::atomic::{AtomicU64, Ordering, compiler_fence};

use sluice_core::gate::{Gate, ThreadState};
use sluice_core::segment::{Segment, bump};

use crate::abi::TLS_BYTES;
use crate::hot::HOT;

/// The block's layout. Its first fields are the shim's `struct head`, which the shim's
/// variadic entry points read and write (offsets checked below).
#[repr(C)]
struct Local {
    busy: Cell<bool>,
    /// Whether `state` holds a `ThreadState::new()` yet (the block starts as zeros).
    ready: Cell<bool>,
    /// Whether this thread is the only writer of `*unmanaged`.
    owned: Cell<bool>,
    /// This thread's counter of unmanaged calls in the segment, once it has counted one
    /// (null before, and again after a fork): `state`'s shard, kept where the shim finds
    /// it.
    unmanaged: Cell<*const AtomicU64>,
    state: UnsafeCell<ThreadState>,
}

const _: () = assert!(
    offset_of!(Local, busy) == 0
        && offset_of!(Local, ready) == 1
        && offset_of!(Local, owned) == 2
        && offset_of!(Local, unmanaged) == 8,
    "guard::Local no longer starts with shim.c's struct head"
);

const _: () = assert!(
    size_of::<Local>() <= TLS_BYTES && align_of::<Local>() <= 64,
    "guard::Local outgrew the shim's thread-local block: raise TLS_BYTES in build.rs"
);

unsafe extern "C" {
    /// This thread's block (shim.c).
    fn sluice_tls_block() -> *mut u8;
    /// The block's distance from the thread pointer (shim.c).
    fn sluice_tls_offset() -> isize;
}

/// The thread pointer, read from its register.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
fn thread_pointer() -> *mut u8 {
    let tp: *mut u8;
    // SAFETY: reads the thread pointer; on x86_64 the TCB's first word points to itself.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags, pure));
        #[cfg(target_arch = "aarch64")]
        std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nostack, nomem, preserves_flags, pure));
    }
    tp
}

/// This thread's block, when its distance from the thread pointer is known: a register
/// read and an add.
#[inline(always)]
fn known_block() -> Option<*mut u8> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    return match HOT.tls_offset.load(Ordering::Relaxed) {
        0 => None,
        off => Some(thread_pointer().wrapping_offset(off)),
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    None
}

/// This thread's block, reached field by field, for the unmanaged fast path. On x86_64
/// through loads and stores relative to `fs`: the block's address is the thread pointer
/// plus its distance, and reading the thread pointer reads the TCB's first word, a page
/// that no native file call touches (after a system call each page a call touches costs
/// it a TLB miss).
#[derive(Clone, Copy)]
struct Head(isize);

impl Head {
    /// The block, once its distance from the thread pointer is known.
    #[inline(always)]
    fn known() -> Option<Head> {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        return match HOT.tls_offset.load(Ordering::Relaxed) {
            0 => None,
            off => Some(Head(off)),
        };
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        None
    }

    /// The byte at `at` in the block.
    #[inline(always)]
    fn byte(self, at: usize) -> u8 {
        let off = self.0.wrapping_add_unsigned(at);
        #[cfg(target_arch = "x86_64")]
        {
            let v: u32;
            // SAFETY: a byte of this thread's block, which lives as long as the thread.
            unsafe {
                std::arch::asm!("movzx {v:e}, byte ptr fs:[{off}]", off = in(reg) off,
                    v = out(reg) v, options(nostack, readonly, preserves_flags));
            }
            v as u8
        }
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: as above.
        unsafe {
            *thread_pointer().wrapping_offset(off)
        }
    }

    /// Sets the byte at `at` in the block.
    #[inline(always)]
    fn set_byte(self, at: usize, v: u8) {
        let off = self.0.wrapping_add_unsigned(at);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a byte of this thread's block, written only by this thread.
        unsafe {
            std::arch::asm!("mov byte ptr fs:[{off}], {v}", off = in(reg) off,
                v = in(reg_byte) v, options(nostack, preserves_flags));
        }
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: as above.
        unsafe {
            *thread_pointer().wrapping_offset(off) = v
        }
    }

    /// The word at `at` in the block (8-aligned).
    #[inline(always)]
    fn word(self, at: usize) -> usize {
        let off = self.0.wrapping_add_unsigned(at);
        #[cfg(target_arch = "x86_64")]
        {
            let v: usize;
            // SAFETY: a word of this thread's block, which lives as long as the thread.
            unsafe {
                std::arch::asm!("mov {v}, qword ptr fs:[{off}]", off = in(reg) off,
                    v = out(reg) v, options(nostack, readonly, preserves_flags));
            }
            v
        }
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: as above.
        unsafe {
            *thread_pointer().wrapping_offset(off).cast::<usize>()
        }
    }
}

/// The block at `p` as this thread's `Local`.
#[inline(always)]
fn as_local(p: *mut u8) -> &'static Local {
    // SAFETY: the block is this thread's, aligned and large enough (checked above), lives
    // as long as the thread, and all-zero bytes are a valid `Local`.
    unsafe { &*(p as *const Local) }
}

/// This thread's block.
#[inline(always)]
fn local() -> &'static Local {
    as_local(known_block().unwrap_or_else(first_block))
}

/// The block through the shim, learning its distance from the thread pointer where the
/// thread pointer can be read.
#[cold]
fn first_block() -> *mut u8 {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    // SAFETY: the shim's function has no preconditions.
    HOT.tls_offset
        .store(unsafe { sluice_tls_offset() }, Ordering::Relaxed);
    // SAFETY: as above.
    unsafe { sluice_tls_block() }
}

/// Proof that this thread is inside the stage; dropping it leaves.
pub struct Guard {
    local: &'static Local,
}

impl Guard {
    /// Enters the stage, or `None` when this thread is in it already.
    #[inline(always)]
    pub fn enter() -> Option<Guard> {
        let l = local();
        if l.busy.replace(true) {
            return None;
        }
        if !l.ready.get() {
            lay_in(l);
        }
        Some(Guard { local: l })
    }

    /// Enters the stage on a warm thread (its block known and laid in), or `None`: a thread
    /// in the stage already, or one that takes [`Guard::enter`].
    #[inline(always)]
    pub fn enter_warm() -> Option<Guard> {
        let l = known_block().map(as_local)?;
        if l.busy.get() || !l.ready.get() {
            return None;
        }
        l.busy.set(true);
        Some(Guard { local: l })
    }

    /// This thread's counters and token batches.
    #[inline(always)]
    pub fn thread_state(&mut self) -> &mut ThreadState {
        // SAFETY: the guard is the only way to reach the state, at most one guard exists
        // per thread at a time, and `&mut self` ties the borrow to it.
        unsafe { &mut *self.local.state.get() }
    }

    /// Counts a call on an unmanaged target of `segment` (the process's one segment):
    /// through the counter kept in the block, learnt from the thread's state the first
    /// time. The shim's variadic entry points count through the same counter.
    #[inline(always)]
    pub fn count_unmanaged(&mut self, segment: &'static Segment) {
        let mut n = self.local.unmanaged.get();
        if n.is_null() {
            n = self.learn_unmanaged(segment);
        }
        // SAFETY: a counter in the segment, mapped for the life of the process.
        bump(unsafe { &*n }, 1, self.local.owned.get());
    }

    /// Counts an unmanaged call of a warm thread (its block known, its counter learnt, not
    /// inside the stage) with no call at all, holding the flag only across the count; false,
    /// counting nothing, for any other thread, which then takes the full path. The flag
    /// keeps a signal handler's call from interleaving with the count; the compiler fences
    /// keep the count between the flag's two writes.
    #[inline(always)]
    pub fn count_unmanaged_if_warm() -> bool {
        let Some(head) = Head::known() else {
            return false;
        };
        let n = head.word(offset_of!(Local, unmanaged)) as *const AtomicU64;
        if n.is_null() || head.byte(offset_of!(Local, busy)) != 0 {
            return false;
        }
        head.set_byte(offset_of!(Local, busy), 1);
        compiler_fence(Ordering::SeqCst);
        let owned = head.byte(offset_of!(Local, owned)) != 0;
        // SAFETY: a counter in the segment, mapped for the life of the process.
        bump(unsafe { &*n }, 1, owned);
        compiler_fence(Ordering::SeqCst);
        head.set_byte(offset_of!(Local, busy), 0);
        true
    }

    #[cold]
    #[inline(never)]
    fn learn_unmanaged(&mut self, segment: &'static Segment) -> *const AtomicU64 {
        let (n, owned) = Gate::unmanaged_counter(segment, self.thread_state());
        self.local.owned.set(owned);
        self.local.unmanaged.set(n);
        n
    }
}

/// Lays the thread's state into its block, at its first entry. Out of line: the state is
/// kilobytes, built on the stack, and every hook would otherwise reserve that much stack
/// for it on every call.
#[cold]
#[inline(never)]
fn lay_in(l: &Local) {
    // SAFETY: this thread just took the flag, so nothing else holds the state.
    unsafe { *l.state.get() = ThreadState::new() };
    l.ready.set(true);
}

/// Empties this thread's token batches and counter shard. Runs in a child after `fork`:
/// the child must not spend the batch its parent holds too, nor write its counters.
pub fn forget_batches_after_fork() {
    let l = local();
    // SAFETY: the child has one thread, and fork is not called from inside a hook (the
    // stage never forks), so no guard holds the state.
    unsafe { *l.state.get() = ThreadState::new() };
    l.unmanaged.set(std::ptr::null());
    l.ready.set(true);
}

impl Drop for Guard {
    #[inline(always)]
    fn drop(&mut self) {
        self.local.busy.set(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_entry_passes_through() {
        let g = Guard::enter();
        assert!(g.is_some());
        assert!(Guard::enter().is_none());
        drop(g);
        assert!(Guard::enter().is_some());
    }

    #[test]
    fn every_thread_has_its_own_block() {
        let here = local() as *const Local as usize;
        let g = Guard::enter();
        let there = std::thread::spawn(|| {
            // The other thread's flag is its own: entering there is allowed.
            assert!(Guard::enter().is_some());
            local() as *const Local as usize
        })
        .join()
        .unwrap();
        assert_ne!(here, there);
        // SAFETY: the shim's function has no preconditions.
        assert_eq!(here, unsafe { sluice_tls_block() } as usize);
        drop(g);
    }
}
