//! Carrying the stage into the programs a managed process starts.
//!
//! The stage and the job's segment reach a process through its environment
//! (`LD_PRELOAD`, `SLUICE_SEGMENT`). A program that starts another with a cleared or
//! rewritten environment (`env -i`, Python's `subprocess.run(…, env={})`, a script that
//! unsets `LD_PRELOAD`) would start it unmanaged. So every way to exec a program goes
//! through a hook here which, when the new environment lacks either, starts the program
//! with an environment that has both: the entries the program gave, the stage added in
//! front of whatever `LD_PRELOAD` it set, and the segment the process itself runs under.
//! The program's own entries are never dropped or reordered, and an environment that
//! already carries the stage is passed on untouched (the same pointer).
//!
//! The new environment is built on the stack (no allocation: a vfork()ed child shares its
//! parent's heap and must not take its locks), or, when it does not fit there, in a fresh
//! anonymous mapping, which a successful exec takes away with the old image ([`env`]).
//!
//! A program the stage cannot enter (statically linked, Go) is started through
//! `sluice supervise`, which holds its calls through seccomp ([`wrap`]).
//!
//! Hooked: `execve`, `execv`, `execvp`, `execvpe`, `fexecve`, `execveat`, `posix_spawn`,
//! `posix_spawnp`; the C-variadic `execl`, `execlp` and `execle` are the shim's, each
//! calling the hook of its v-variant. `system` and `popen` pass the process's own
//! environment, which carries the stage unless the program cleared it with `clearenv`.

mod env;
mod wrap;

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use sluice_core::path::PATH_MAX;

use crate::guard::Guard;
use crate::log::log;
use crate::real::{Slot, missing};
use crate::state::State;
use env::{Carry, Mapped};
use wrap::Named;

/// An environment: a null-terminated array of `NAME=value` strings.
type Envp = *const *const c_char;
/// A program's arguments: a null-terminated array of strings.
type Argv = *const *const c_char;

/// What the process started with, kept for the programs it starts: the stage's own entry
/// in `LD_PRELOAD` (a path), the whole `SLUICE_SEGMENT=…` entry, and the `sluice` beside
/// the stage that supervises what the stage cannot enter. Null until [`remember`] found
/// them; never freed.
static OURS: AtomicPtr<c_char> = AtomicPtr::new(std::ptr::null_mut());
static SEGMENT_ENTRY: AtomicPtr<c_char> = AtomicPtr::new(std::ptr::null_mut());
static SLUICE: AtomicPtr<c_char> = AtomicPtr::new(std::ptr::null_mut());
/// Whether this process runs under a supervisor's filter already (its environment had the
/// mark at start): what it starts is held by that supervisor.
static UNDER_FILTER: AtomicBool = AtomicBool::new(false);

unsafe extern "C" {
    static environ: Envp;
}

/// Remembers the stage's entry in `preload` (the value of `LD_PRELOAD` at start), the
/// segment's path and whether the process is supervised already, and resolves the real
/// exec functions now: a vfork()ed child must not call `dlsym`. Called once, from the
/// library's constructor, once the stage manages the process.
pub(crate) fn remember(preload: Option<&CStr>, segment: &CStr, supervised: bool) {
    for slot in REALS {
        slot.get();
    }
    let ours = preload.and_then(|p| {
        p.to_bytes()
            .split(|&b| b == b':' || b == b' ')
            .find(|name| name.rsplit(|&b| b == b'/').next().is_some_and(is_stage))
    });
    match ours {
        Some(ours) => {
            publish(&OURS, ours);
            let sluice = [dir_of(ours), b"sluice"].concat();
            if CString::new(sluice.clone()).is_ok_and(|s| crate::sys::is_executable_file(&s)) {
                publish(&SLUICE, &sluice);
            } else {
                log!(
                    "no sluice beside the stage: static and Go programs this one starts run unsupervised"
                );
            }
        }
        None => log!(
            "the stage is not named in LD_PRELOAD: the programs this one starts inherit whatever loads it"
        ),
    }
    publish(
        &SEGMENT_ENTRY,
        &[b"SLUICE_SEGMENT=", segment.to_bytes()].concat(),
    );
    UNDER_FILTER.store(supervised, Ordering::Relaxed);
}

/// The directory part of a path, with its slash (empty for a bare name).
fn dir_of(path: &[u8]) -> &[u8] {
    path.iter()
        .rposition(|&b| b == b'/')
        .map_or(&[][..], |i| &path[..=i])
}

/// Whether a file name is the stage's (`libsluice_stage.so`, or a versioned copy).
fn is_stage(file: &[u8]) -> bool {
    file.starts_with(b"libsluice_stage")
}

fn publish(to: &AtomicPtr<c_char>, bytes: &[u8]) {
    if let Ok(s) = CString::new(bytes) {
        to.store(s.into_raw(), Ordering::Release);
    }
}

fn remembered(from: &AtomicPtr<c_char>) -> Option<&'static CStr> {
    let p = from.load(Ordering::Acquire);
    // SAFETY: a leaked CString, never freed.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
}

/// What the stage carries, once the process is managed.
fn carry() -> Option<Carry> {
    Some(Carry {
        ours: remembered(&OURS).map(CStr::to_bytes),
        segment: remembered(&SEGMENT_ENTRY)?,
    })
}

/// Entries of an array (an environment, the wrapper's arguments) built on the stack; a
/// larger one gets a mapping.
const STACK_ENTRIES: usize = 256;
/// Bytes for a rewritten `LD_PRELOAD` on the stack.
const STACK_TEXT: usize = 1024;

/// How a hook starts its program.
#[derive(Clone, Copy)]
enum Start {
    /// As the program named it.
    AsNamed,
    /// Through `sluice supervise` (this path, these arguments).
    Supervised(*const c_char, Argv),
}

/// Runs `start` with an environment that carries the stage (built from `envp` when it
/// lacks it), through `sluice supervise` when the program `named` is one the stage cannot
/// enter; runs `as_given`, the call as the program made it, when neither is needed (or
/// when the stage manages nothing, or this thread is inside the stage).
fn started<R>(
    named: Option<Named>,
    argv: Argv,
    envp: Envp,
    start: impl FnOnce(Start, Envp) -> R,
    as_given: impl FnOnce() -> R,
) -> R {
    let Some(carry) = State::get().and_then(|_| carry()) else {
        return as_given();
    };
    let guard = Guard::enter();
    if guard.is_none() {
        return as_given();
    }
    let read = env::read(envp, &carry);
    let mut exe = [0u8; PATH_MAX];
    let why = match (named, remembered(&SLUICE)) {
        (Some(named), Some(_)) if !read.marked && !UNDER_FILTER.load(Ordering::Relaxed) => {
            wrap::unenterable(named, &mut exe)
        }
        _ => None,
    };
    if !read.lacks() && why.is_none() {
        drop(guard);
        return as_given();
    }
    let mut args = [std::ptr::null::<c_char>(); STACK_ENTRIES];
    let mut args_mapped = None;
    let mut signals = [0u8; 36];
    let how = match (why, remembered(&SLUICE)) {
        (Some(why), Some(sluice)) => {
            let exe = CStr::from_bytes_until_nul(&exe).unwrap_or_default();
            log!(
                "starts {} ({why}) through sluice supervise",
                exe.to_string_lossy()
            );
            let signals = wrap::signal_state(&mut signals);
            let room = wrap::count(argv) + 9;
            let out = match room <= STACK_ENTRIES {
                true => &mut args[..],
                false => match args_mapped.insert(Mapped::new(room, 0)) {
                    Some(m) => m.parts().0,
                    None => &mut [][..],
                },
            };
            match wrap::wrapper_argv(sluice, exe, signals, argv, out) {
                Some(()) => Start::Supervised(sluice.as_ptr(), out.as_ptr()),
                None => Start::AsNamed,
            }
        }
        _ => Start::AsNamed,
    };
    drop(guard);
    if !read.lacks() {
        return start(how, envp);
    }
    let mut ptrs = [std::ptr::null::<c_char>(); STACK_ENTRIES];
    let mut text = [0u8; STACK_TEXT];
    if env::build(envp, read, &carry, &mut ptrs, &mut text).is_some() {
        return start(how, ptrs.as_ptr());
    }
    let mut mapped = Mapped::new(read.len + 3, env::text_room(&carry));
    if let Some((ptrs, text)) = mapped.as_mut().map(Mapped::parts)
        && env::build(envp, read, &carry, ptrs, text).is_some()
    {
        return start(how, ptrs.as_ptr());
    }
    log!(
        "cannot build an environment of {} entries that carries the stage: the program starts without it",
        read.len
    );
    as_given()
}

static REAL_EXECVE: Slot = Slot::new(c"execve");
static REAL_EXECV: Slot = Slot::new(c"execv");
static REAL_EXECVP: Slot = Slot::new(c"execvp");
static REAL_EXECVPE: Slot = Slot::new(c"execvpe");
static REAL_FEXECVE: Slot = Slot::new(c"fexecve");
static REAL_EXECVEAT: Slot = Slot::new(c"execveat");
static REAL_POSIX_SPAWN: Slot = Slot::new(c"posix_spawn");
static REAL_POSIX_SPAWNP: Slot = Slot::new(c"posix_spawnp");

const REALS: [&Slot; 8] = [
    &REAL_EXECVE,
    &REAL_EXECV,
    &REAL_EXECVP,
    &REAL_EXECVPE,
    &REAL_FEXECVE,
    &REAL_EXECVEAT,
    &REAL_POSIX_SPAWN,
    &REAL_POSIX_SPAWNP,
];

/// The real function in `slot` as type `F`, or `None` when this libc lacks it.
///
/// # Safety
/// `F` is the symbol's C signature.
unsafe fn real<F: Copy>(slot: &Slot) -> Option<F> {
    // SAFETY: fn pointers and data pointers have one size; the caller names the type.
    slot.get()
        .map(|p| unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

type Execve = unsafe extern "C" fn(*const c_char, Argv, Envp) -> c_int;
type Execv = unsafe extern "C" fn(*const c_char, Argv) -> c_int;
type Fexecve = unsafe extern "C" fn(c_int, Argv, Envp) -> c_int;
type Execveat = unsafe extern "C" fn(c_int, *const c_char, Argv, Envp, c_int) -> c_int;
type Spawn = unsafe extern "C" fn(
    *mut libc::pid_t,
    *const c_char,
    *const c_void,
    *const c_void,
    Argv,
    Envp,
) -> c_int;

/// Calls the real function in `slot` as `F`, or answers `$missing` when this libc lacks
/// it.
macro_rules! call_real {
    ($slot:expr, $f:ty, $missing:expr, $($arg:expr),*) => {
        // SAFETY: the slot's symbol has signature `$f`.
        match unsafe { real::<$f>(&$slot) } {
            // SAFETY: the program's own arguments, passed on.
            Some(f) => unsafe { f($($arg),*) },
            None => $missing,
        }
    };
}

fn real_execve(path: *const c_char, argv: Argv, envp: Envp) -> c_int {
    call_real!(REAL_EXECVE, Execve, missing(), path, argv, envp)
}

fn real_execvpe(file: *const c_char, argv: Argv, envp: Envp) -> c_int {
    call_real!(REAL_EXECVPE, Execve, missing(), file, argv, envp)
}

/// A spawn function's failure when this libc lacks it: an error number, not -1.
fn no_spawn() -> c_int {
    libc::ENOSYS
}

#[allow(clippy::too_many_arguments)]
fn real_spawn(
    slot: &Slot,
    pid: *mut libc::pid_t,
    path: *const c_char,
    actions: *const c_void,
    attr: *const c_void,
    argv: Argv,
    envp: Envp,
) -> c_int {
    call_real!(
        *slot,
        Spawn,
        no_spawn(),
        pid,
        path,
        actions,
        attr,
        argv,
        envp
    )
}

/// The process's environment now (a program may have replaced it).
fn current() -> Envp {
    // SAFETY: glibc's variable, read as the real execv reads it.
    unsafe { std::ptr::read_volatile(&raw const environ) }
}

/// Expands each hook: the program it names (`None`: a descriptor, never supervised), its
/// arguments and environment, and how to start it as named with another environment,
/// through `sluice supervise` (a path, arguments, an environment), or as given.
macro_rules! exec_hooks {
    ($( $name:ident($($a:ident: $t:ty),*) {
        named: $named:expr, argv: $argv:expr, env: $env:expr,
        as_named: |$e1:ident| $as_named:expr,
        supervised: |$p:ident, $v:ident, $e2:ident| $supervised:expr,
        as_given: $as_given:expr $(,)?
    } )*) => {$(
        #[doc = concat!("Interposes `", stringify!($name), "`.")]
        ///
        /// # Safety
        /// The C function's contract.
        #[cfg_attr(not(test), unsafe(no_mangle))]
        pub unsafe extern "C" fn $name($($a: $t),*) -> c_int {
            started(
                $named,
                $argv,
                $env,
                |start, env| match start {
                    Start::AsNamed => {
                        let $e1 = env;
                        $as_named
                    }
                    Start::Supervised($p, $v) => {
                        let $e2 = env;
                        $supervised
                    }
                },
                || $as_given,
            )
        }
    )*};
}

exec_hooks! {
    execve(path: *const c_char, argv: Argv, envp: Envp) {
        named: Some(Named::Path(path)), argv: argv, env: envp,
        as_named: |e| real_execve(path, argv, e),
        supervised: |p, v, e| real_execve(p, v, e),
        as_given: real_execve(path, argv, envp),
    }
    execvpe(file: *const c_char, argv: Argv, envp: Envp) {
        named: Some(Named::Searched(file)), argv: argv, env: envp,
        as_named: |e| real_execvpe(file, argv, e),
        supervised: |p, v, e| real_execve(p, v, e),
        as_given: real_execvpe(file, argv, envp),
    }
    execv(path: *const c_char, argv: Argv) {
        named: Some(Named::Path(path)), argv: argv, env: current(),
        as_named: |e| real_execve(path, argv, e),
        supervised: |p, v, e| real_execve(p, v, e),
        as_given: call_real!(REAL_EXECV, Execv, missing(), path, argv),
    }
    execvp(file: *const c_char, argv: Argv) {
        named: Some(Named::Searched(file)), argv: argv, env: current(),
        as_named: |e| real_execvpe(file, argv, e),
        supervised: |p, v, e| real_execve(p, v, e),
        as_given: call_real!(REAL_EXECVP, Execv, missing(), file, argv),
    }
    fexecve(fd: c_int, argv: Argv, envp: Envp) {
        named: None, argv: argv, env: envp,
        as_named: |e| call_real!(REAL_FEXECVE, Fexecve, missing(), fd, argv, e),
        supervised: |_p, _v, e| call_real!(REAL_FEXECVE, Fexecve, missing(), fd, argv, e),
        as_given: call_real!(REAL_FEXECVE, Fexecve, missing(), fd, argv, envp),
    }
    execveat(dirfd: c_int, path: *const c_char, argv: Argv, envp: Envp, flags: c_int) {
        // A path of the current directory only: one relative to a directory descriptor,
        // or the descriptor itself (AT_EMPTY_PATH), is started as named.
        named: (dirfd == libc::AT_FDCWD && flags == 0).then_some(Named::Path(path)),
        argv: argv, env: envp,
        as_named: |e| call_real!(REAL_EXECVEAT, Execveat, missing(), dirfd, path, argv, e, flags),
        supervised: |p, v, e| real_execve(p, v, e),
        as_given: call_real!(REAL_EXECVEAT, Execveat, missing(), dirfd, path, argv, envp, flags),
    }
    posix_spawn(pid: *mut libc::pid_t, path: *const c_char, actions: *const c_void, attr: *const c_void, argv: Argv, envp: Envp) {
        named: Some(Named::Path(path)), argv: argv, env: envp,
        as_named: |e| real_spawn(&REAL_POSIX_SPAWN, pid, path, actions, attr, argv, e),
        supervised: |p, v, e| real_spawn(&REAL_POSIX_SPAWN, pid, p, actions, attr, v, e),
        as_given: real_spawn(&REAL_POSIX_SPAWN, pid, path, actions, attr, argv, envp),
    }
    posix_spawnp(pid: *mut libc::pid_t, file: *const c_char, actions: *const c_void, attr: *const c_void, argv: Argv, envp: Envp) {
        named: Some(Named::Searched(file)), argv: argv, env: envp,
        as_named: |e| real_spawn(&REAL_POSIX_SPAWNP, pid, file, actions, attr, argv, e),
        supervised: |p, v, e| real_spawn(&REAL_POSIX_SPAWN, pid, p, actions, attr, v, e),
        as_given: real_spawn(&REAL_POSIX_SPAWNP, pid, file, actions, attr, argv, envp),
    }
}
