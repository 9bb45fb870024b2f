//! # sluice-stage
//!
//! The preload library (`libsluice_stage.so`) that holds a program's file-system calls to
//! its job's rates. Put under any dynamically linked program with `LD_PRELOAD` (which
//! `sluice run` does), it intercepts the libc file API, decides for each call whether its
//! target lies on a managed file system, finds the rule that governs it and waits for that
//! rule's GCRA bucket in the job's shared-memory segment (`sluice_core::gate`), then makes
//! the real call and counts it.
//!
//! ## One `stat`, file by file
//!
//! 1. [`symbols`]: the row `stat(path, buf) -> c_int = Getattr, Path(path), …` of the one
//!    table of intercepted symbols. [`hooks`] expands it into the exported `stat`; [`hot`]
//!    into the slot that holds the real `stat`, resolved once at load ([`real`]).
//! 2. [`hooks::intercept`]: the stage is ready ([`state::State::get`]) and the real symbol
//!    known; [`locate::glance`] reads the path once through the probe
//!    ([`memory::probe`]), which cannot fault on a bad pointer, and answers: unmanaged, in
//!    a managed place, or needs resolving.
//! 3. Unmanaged: the thread's counter in the segment is bumped under the re-entrancy guard
//!    ([`guard`]) and the real `stat` made. Done.
//! 4. In a managed place: [`admit::lane`] takes a token from the thread's batch of the
//!    rule's bucket (the clock read through the vDSO, [`clock`]) and counts the call; the
//!    real `stat` is made outside the guard. Done.
//! 5. Otherwise [`hooks::judge`]: [`locate`] resolves the path in full (joined to the
//!    current directory of [`tables::cwd`], normalised, looked up in the mount table);
//!    [`admit::held`] waits for the bucket, makes the call and charges it; the call's
//!    effect on the descriptor table ([`tables::fdtable`]) is recorded.
//!
//! The rooms, bottom to top, each importing only from those below it: [`abi`], [`sys`],
//! [`real`], [`symbols`], [`hot`], [`clock`], [`guard`], [`log`]; [`memory`]; [`tables`];
//! [`state`]; [`locate`]; [`admit`]; [`hooks`], [`exec`]; [`setup`], which the library's constructor
//! runs (docs/architecture.md draws it).
//!
//! ## Why it is built so
//! - The stage owns no thread, takes no lock and allocates nothing per call: a job's
//!   budget is one atomic word in shared memory, and the descriptor table and current
//!   directory are lock-free ([`tables`]).
//! - It never writes to the application's stdout or stderr; `SLUICE_LOG=FILE` logs to a
//!   file ([`log`]). It never fails a call the real function would not fail, and never
//!   changes errno.
//! - Everything the stage does for itself goes through raw system calls ([`sys`]) or the
//!   re-entrancy guard ([`guard`]), so it never counts or holds its own calls.
//! - It reads what a call names only through the probe, whose faults its own handler of
//!   SIGSEGV and SIGBUS catches ([`memory`], which keeps the program's own dispositions
//!   of both as they would be): a call given an address the kernel refuses gets the
//!   kernel's answer.
//!
//! What it cannot see: statically linked programs, raw `syscall()`, io_uring, and calls
//! glibc makes internally (fopen's own open); see `docs/limitations.md`.

// The library exports only C symbols: its Rust docs are the private items' (`cargo doc
// --document-private-items`), which these pages link to.
#![allow(rustdoc::private_intra_doc_links)]

mod abi;
mod admit;
mod clock;
// In unit tests its hooks are not exported, so nothing calls them.
#[cfg_attr(test, allow(dead_code))]
mod exec;
mod guard;
mod hooks;
mod hot;
mod locate;
mod log;
mod memory;
mod real;
mod setup;
mod state;
mod symbols;
mod sys;
mod tables;

#[cfg(test)]
mod docs;
#[cfg(test)]
mod rooms;

/// Runs when the library is loaded, before `main`: sets the stage up from the
/// environment. Until it has run, every hook passes its call straight through.
extern "C" fn stage_init() {
    let Some(_guard) = guard::Guard::enter() else {
        return;
    };
    setup::init();
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = stage_init;
