//! # sluice-stage
//!
//! The preload library (`libsluice_stage.so`) that holds a program's file-system calls to
//! its job's rates. Put under any dynamically linked program with `LD_PRELOAD` (which
//! `sluice run` does), it intercepts the libc file API (the table in [`hooks`]), decides
//! for each call whether its target lies on a managed file system ([`target`]), finds the
//! rule that governs it and waits for that rule's GCRA bucket in the job's shared-memory
//! segment (`sluice_core::gate`), then makes the real call and counts it.
//!
//! Why it is built so:
//! - The stage owns no thread, takes no lock and allocates nothing per call: a job's
//!   budget is one atomic word in shared memory, and the descriptor table and current
//!   directory are lock-free ([`fdtable`], [`cwd`]).
//! - It never writes to the application's stdout or stderr; `SLUICE_LOG=FILE` logs to a
//!   file ([`log`]). It never fails a call the real function would not fail, and never
//!   changes errno.
//! - Everything the stage does for itself goes through raw system calls ([`sys`]) or the
//!   re-entrancy guard ([`guard`]), so it never counts or holds its own calls.
//! - It reads what a call names only through [`probe`], whose faults its own handler of
//!   SIGSEGV and SIGBUS catches ([`signals`], which keeps the program's own dispositions of
//!   both as they would be): a call given an address the kernel refuses gets the kernel's
//!   answer.
//!
//! What it cannot see: statically linked programs, raw `syscall()`, io_uring, and calls
//! glibc makes internally (fopen's own open); see `docs/limitations.md`.

pub mod cwd;
pub mod fdtable;
pub mod guard;
pub mod hooks;
pub mod hot;
pub mod log;
pub mod probe;
pub mod real;
#[cfg(target_arch = "x86_64")]
pub mod signals;
pub mod state;
pub mod stream;
pub mod sys;
pub mod target;

#[cfg(test)]
mod docs;

/// Runs when the library is loaded, before `main`: sets the stage up from the
/// environment. Until it has run, every hook passes its call straight through.
extern "C" fn stage_init() {
    let Some(_guard) = guard::Guard::enter() else {
        return;
    };
    state::init();
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = stage_init;
