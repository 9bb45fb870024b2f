//! The re-entrancy guard and this thread's admission state, in one const thread-local.
//!
//! A call the stage makes itself (dlsym may open files) and a call from a signal handler
//! that interrupts a hook while it admits must go straight to the real function; so does
//! everything before the stage is ready. The flag and the thread's counters and token
//! batches share one thread-local, so a managed call pays for one TLS lookup. It is
//! const-initialised and has no destructor, so reading it never allocates and works
//! during thread start and teardown.

use std::cell::{Cell, UnsafeCell};

use sluice_core::gate::ThreadState;

struct Local {
    busy: Cell<bool>,
    state: UnsafeCell<ThreadState>,
}

thread_local! {
    static LOCAL: Local = const { Local { busy: Cell::new(false), state: UnsafeCell::new(ThreadState::new()) } };
}

/// Proof that this thread is inside the stage; dropping it leaves.
pub struct Guard {
    local: *const Local,
}

impl Guard {
    /// Enters the stage, or `None` when this thread is in it already.
    #[inline(always)]
    pub fn enter() -> Option<Guard> {
        LOCAL.with(|l| {
            if l.busy.replace(true) {
                None
            } else {
                Some(Guard { local: l })
            }
        })
    }

    /// This thread's counters and token batches.
    #[inline(always)]
    pub fn thread_state(&mut self) -> &mut ThreadState {
        // SAFETY: the guard is the only way to reach the state, at most one guard exists
        // per thread at a time, and `&mut self` ties the borrow to it.
        unsafe { &mut *(*self.local).state.get() }
    }
}

/// Empties this thread's token batches and counter shard. Runs in a child after `fork`:
/// the child must not spend the batch its parent holds too, nor write its counters.
pub fn forget_batches_after_fork() {
    // SAFETY: the child has one thread, and fork is not called from inside a hook (the
    // stage never forks), so no guard holds the state.
    LOCAL.with(|l| unsafe { *l.state.get() = ThreadState::new() });
}

impl Drop for Guard {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: the thread-local outlives every guard of its thread.
        unsafe { (*self.local).busy.set(false) };
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
}
