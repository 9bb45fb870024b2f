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
//! anonymous mapping, which a successful exec takes away with the old image.
//!
//! Hooked: `execve`, `execv`, `execvp`, `execvpe`, `fexecve`, `execveat`, `posix_spawn`,
//! `posix_spawnp`; the C-variadic `execl`, `execlp` and `execle` are the shim's, each
//! calling the hook of its v-variant. `system` and `popen` pass the process's own
//! environment, which carries the stage unless the program cleared it with `clearenv`.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::guard::Guard;
use crate::log::log;
use crate::real::{Slot, missing};
use crate::state::State;

/// An environment: a null-terminated array of `NAME=value` strings.
type Envp = *const *const c_char;

const PRELOAD: &[u8] = b"LD_PRELOAD=";
const SEGMENT: &[u8] = b"SLUICE_SEGMENT=";

/// What the process started with, kept for its children: the stage's own entry in
/// `LD_PRELOAD` (`OURS`, a path), and the whole `SLUICE_SEGMENT=…` entry. Null until
/// [`remember`] found them; never freed.
static OURS: AtomicPtr<c_char> = AtomicPtr::new(std::ptr::null_mut());
static SEGMENT_ENTRY: AtomicPtr<c_char> = AtomicPtr::new(std::ptr::null_mut());

unsafe extern "C" {
    static environ: Envp;
}

/// Remembers the stage's entry in `preload` (the value of `LD_PRELOAD` at start) and the
/// segment's path, and resolves the real exec functions now: a vfork()ed child must not
/// call `dlsym`. Called once, from the library's constructor, once the stage manages the
/// process.
pub(crate) fn remember(preload: Option<&CStr>, segment: &CStr) {
    for slot in REALS {
        slot.get();
    }
    let ours = preload.and_then(|p| {
        p.to_bytes()
            .split(|&b| b == b':' || b == b' ')
            .find(|name| name.rsplit(|&b| b == b'/').next().is_some_and(is_stage))
    });
    match ours {
        Some(ours) => publish(&OURS, ours),
        None => log!(
            "the stage is not named in LD_PRELOAD: the programs this one starts inherit whatever loads it"
        ),
    }
    publish(&SEGMENT_ENTRY, &[SEGMENT, segment.to_bytes()].concat());
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

fn remembered(from: &AtomicPtr<c_char>) -> Option<&'static [u8]> {
    let p = from.load(Ordering::Acquire);
    // SAFETY: a leaked CString, never freed.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes())
}

/// What an environment lacks to carry the stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Lacks {
    /// The index of an `LD_PRELOAD` entry that does not name the stage, when the stage
    /// is to be added to it; `Some(None)` when there is no `LD_PRELOAD` at all.
    preload: Option<Option<usize>>,
    /// Whether `SLUICE_SEGMENT` is missing.
    segment: bool,
    /// The entries of the environment.
    len: usize,
}

/// What `envp` lacks, or `None` when it carries the stage (or the stage has nothing to
/// carry). A null `envp` is an empty environment.
fn lacks(envp: Envp) -> Option<Lacks> {
    let ours = remembered(&OURS);
    remembered(&SEGMENT_ENTRY)?;
    let mut preload = ours.map(|_| None);
    let mut seen_preload = false;
    let mut segment = true;
    let mut len = 0;
    while !envp.is_null() {
        // SAFETY: the caller's environment, null-terminated, as exec requires.
        let e = unsafe { *envp.add(len) };
        if e.is_null() {
            break;
        }
        // SAFETY: each entry is a NUL-terminated string.
        let entry = unsafe { CStr::from_ptr(e) }.to_bytes();
        if let Some(value) = entry.strip_prefix(PRELOAD) {
            // The loader reads the first one only.
            if let Some(ours) = ours
                && !seen_preload
            {
                preload = (!names(value, ours)).then_some(Some(len));
            }
            seen_preload = true;
        } else if entry.starts_with(SEGMENT) {
            segment = false;
        }
        len += 1;
    }
    (preload.is_some() || segment).then_some(Lacks {
        preload,
        segment,
        len,
    })
}

/// Whether the preload list `value` names the library `ours`.
fn names(value: &[u8], ours: &[u8]) -> bool {
    value.split(|&b| b == b':' || b == b' ').any(|n| n == ours)
}

/// Writes into `ptrs` (and, for a rewritten `LD_PRELOAD`, into `text`) an environment
/// that carries the stage: `envp`'s entries in order, `LD_PRELOAD` with the stage in
/// front, then the entries it lacked. `None` when it does not fit.
fn build(envp: Envp, lacks: Lacks, ptrs: &mut [*const c_char], text: &mut [u8]) -> Option<()> {
    let ours = remembered(&OURS).unwrap_or_default();
    let preload_entry = |text: &mut [u8], theirs: &[u8]| -> Option<*const c_char> {
        let parts: [&[u8]; 4] = [
            PRELOAD,
            ours,
            if theirs.is_empty() { b"" } else { b" " },
            theirs,
        ];
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let out = text.get_mut(..len + 1)?;
        let mut at = 0;
        for p in parts {
            out[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        out[len] = 0;
        Some(out.as_ptr().cast())
    };
    let extra = usize::from(lacks.preload == Some(None)) + usize::from(lacks.segment);
    let ptrs = ptrs.get_mut(..lacks.len + extra + 1)?;
    for (i, p) in ptrs.iter_mut().take(lacks.len).enumerate() {
        // SAFETY: `lacks` counted `len` entries in `envp`.
        *p = unsafe { *envp.add(i) };
    }
    let mut next = lacks.len;
    match lacks.preload {
        Some(Some(i)) => {
            // SAFETY: entry `i` is an `LD_PRELOAD=…` string of `envp`.
            let theirs = unsafe { CStr::from_ptr(ptrs[i]) }.to_bytes();
            ptrs[i] = preload_entry(text, &theirs[PRELOAD.len()..])?;
        }
        Some(None) => {
            ptrs[next] = preload_entry(text, b"")?;
            next += 1;
        }
        None => {}
    }
    if lacks.segment {
        ptrs[next] = SEGMENT_ENTRY.load(Ordering::Acquire);
        next += 1;
    }
    ptrs[next] = std::ptr::null();
    Some(())
}

/// Entries of an environment built on the stack; a larger one gets a mapping.
const STACK_ENTRIES: usize = 256;
/// Bytes for a rewritten `LD_PRELOAD` on the stack.
const STACK_TEXT: usize = 1024;

/// Runs `start` with an environment that carries the stage, built from `envp` when it
/// lacks it; else (or when the stage manages nothing, or this thread is inside the stage)
/// runs `as_given`, the call as the program made it.
fn carried<R>(envp: Envp, start: impl FnOnce(Envp) -> R, as_given: impl FnOnce() -> R) -> R {
    let lacks = match State::get().and_then(|_| Guard::enter()) {
        Some(_guard) => lacks(envp),
        None => None,
    };
    let Some(lacks) = lacks else {
        return as_given();
    };
    let mut ptrs = [std::ptr::null::<c_char>(); STACK_ENTRIES];
    let mut text = [0u8; STACK_TEXT];
    if build(envp, lacks, &mut ptrs, &mut text).is_some() {
        return start(ptrs.as_ptr());
    }
    let mut mapped = Mapped::new(lacks.len + 3, remembered(&OURS).map_or(0, <[u8]>::len));
    if let Some((ptrs, text)) = mapped.as_mut().map(Mapped::parts)
        && build(envp, lacks, ptrs, text).is_some()
    {
        return start(ptrs.as_ptr());
    }
    log!(
        "cannot build an environment of {} entries that carries the stage: the program starts without it",
        lacks.len
    );
    as_given()
}

/// An anonymous mapping for an environment too large for the stack, unmapped on drop
/// (when the exec failed or a spawn returned).
struct Mapped {
    at: *mut u8,
    len: usize,
    entries: usize,
}

impl Mapped {
    /// Room for `entries` pointers and a preload entry naming `ours` bytes, plus the
    /// longest `LD_PRELOAD` value an environment holds (bounded by the kernel's limit on
    /// one string, 32 pages).
    fn new(entries: usize, ours: usize) -> Option<Mapped> {
        let len = entries * size_of::<*const c_char>() + ours + PRELOAD.len() + 32 * 4096 + 2;
        // SAFETY: a fresh private anonymous mapping.
        let at = unsafe {
            libc::syscall(
                libc::SYS_mmap,
                std::ptr::null_mut::<c_void>(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1 as c_int,
                0 as libc::off_t,
            )
        };
        (at > 0).then_some(Mapped {
            at: at as *mut u8,
            len,
            entries,
        })
    }

    /// The room for the pointers, and the room for the text after it.
    fn parts(&mut self) -> (&mut [*const c_char], &mut [u8]) {
        let off = self.entries * size_of::<*const c_char>();
        // SAFETY: two disjoint parts of the mapping, which lives as long as `self`; the
        // first is aligned (a mapping is page-aligned).
        unsafe {
            (
                std::slice::from_raw_parts_mut(self.at.cast(), self.entries),
                std::slice::from_raw_parts_mut(self.at.add(off), self.len - off),
            )
        }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        crate::sys::keep_errno(|| {
            // SAFETY: the mapping made in `new`, no longer used.
            unsafe { libc::syscall(libc::SYS_munmap, self.at, self.len) };
        });
    }
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

type Argv = *const *const c_char;
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

/// A spawn function's failure when this libc lacks it: an error number, not -1.
fn no_spawn() -> c_int {
    libc::ENOSYS
}

/// The hooks of the functions given an environment (`$env`, one of the arguments): the
/// real function with the environment carried, or as given.
macro_rules! given_env {
    ($( $name:ident($($a:ident: $t:ty),*) env $env:ident, via $slot:ident: $f:ty, else $missing:expr; )*) => {$(
        #[doc = concat!("Interposes `", stringify!($name), "`.")]
        ///
        /// # Safety
        /// The C function's contract.
        #[cfg_attr(not(test), unsafe(no_mangle))]
        pub unsafe extern "C" fn $name($($a: $t),*) -> c_int {
            carried(
                $env,
                |$env| call_real!($slot, $f, $missing, $($a),*),
                || call_real!($slot, $f, $missing, $($a),*),
            )
        }
    )*};
}

given_env! {
    execve(path: *const c_char, argv: Argv, envp: Envp) env envp, via REAL_EXECVE: Execve, else missing();
    execvpe(file: *const c_char, argv: Argv, envp: Envp) env envp, via REAL_EXECVPE: Execve, else missing();
    fexecve(fd: c_int, argv: Argv, envp: Envp) env envp, via REAL_FEXECVE: Fexecve, else missing();
    execveat(dirfd: c_int, path: *const c_char, argv: Argv, envp: Envp, flags: c_int) env envp, via REAL_EXECVEAT: Execveat, else missing();
    posix_spawn(pid: *mut libc::pid_t, path: *const c_char, actions: *const c_void, attr: *const c_void, argv: Argv, envp: Envp) env envp, via REAL_POSIX_SPAWN: Spawn, else no_spawn();
    posix_spawnp(pid: *mut libc::pid_t, file: *const c_char, actions: *const c_void, attr: *const c_void, argv: Argv, envp: Envp) env envp, via REAL_POSIX_SPAWNP: Spawn, else no_spawn();
}

/// The hooks of the functions that pass the process's own environment: when it lacks the
/// stage, the real function of the same search given an environment that carries it.
macro_rules! own_env {
    ($( $name:ident($($a:ident: $t:ty),*) via $slot:ident: $f:ty, else $with:ident: $g:ty; )*) => {$(
        #[doc = concat!("Interposes `", stringify!($name), "` (the process's environment).")]
        ///
        /// # Safety
        /// The C function's contract.
        #[cfg_attr(not(test), unsafe(no_mangle))]
        pub unsafe extern "C" fn $name($($a: $t),*) -> c_int {
            carried(
                current(),
                |env| call_real!($with, $g, missing(), $($a,)* env),
                || call_real!($slot, $f, missing(), $($a),*),
            )
        }
    )*};
}

own_env! {
    execv(path: *const c_char, argv: Argv) via REAL_EXECV: Execv, else REAL_EXECVE: Execve;
    execvp(file: *const c_char, argv: Argv) via REAL_EXECVP: Execv, else REAL_EXECVPE: Execve;
}

/// The process's environment now (a program may have replaced it).
fn current() -> Envp {
    // SAFETY: glibc's variable, read as the real execv reads it.
    unsafe { std::ptr::read_volatile(&raw const environ) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(entries: &[&CStr]) -> Vec<*const c_char> {
        entries
            .iter()
            .map(|e| e.as_ptr())
            .chain([std::ptr::null()])
            .collect()
    }

    fn strings(envp: &[*const c_char]) -> Vec<String> {
        envp.iter()
            .take_while(|p| !p.is_null())
            // SAFETY: the test's own NUL-terminated strings.
            .map(|&p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            .collect()
    }

    /// One test, so that the statics it sets are set once.
    #[test]
    fn an_environment_without_the_stage_gets_it_and_keeps_its_own_entries() {
        remember(
            Some(c"/opt/sluice/lib/libsluice_stage.so"),
            c"/dev/shm/sluice/job.seg",
        );
        let stage = "LD_PRELOAD=/opt/sluice/lib/libsluice_stage.so";
        let segment = "SLUICE_SEGMENT=/dev/shm/sluice/job.seg";
        let cases: [(&[&CStr], Vec<String>); 5] = [
            (&[], vec![stage.into(), segment.into()]),
            (
                &[c"PATH=/bin", c"LD_PRELOAD=/usr/lib/libdarshan.so"],
                vec![
                    "PATH=/bin".into(),
                    format!("{stage} /usr/lib/libdarshan.so"),
                    segment.into(),
                ],
            ),
            (
                &[c"SLUICE_SEGMENT=/other.seg", c"HOME=/root"],
                vec![
                    "SLUICE_SEGMENT=/other.seg".into(),
                    "HOME=/root".into(),
                    stage.into(),
                ],
            ),
            (
                &[c"LD_PRELOAD=", c"X=1"],
                vec![stage.into(), "X=1".into(), segment.into()],
            ),
            (
                &[c"LD_PRELOAD=/a.so:/opt/sluice/lib/libsluice_stage.so"],
                vec![
                    "LD_PRELOAD=/a.so:/opt/sluice/lib/libsluice_stage.so".into(),
                    segment.into(),
                ],
            ),
        ];
        for (given, want) in cases {
            let envp = env(given);
            let lacks = lacks(envp.as_ptr()).expect("lacks the stage");
            let mut ptrs = [std::ptr::null(); 8];
            let mut text = [0u8; 256];
            build(envp.as_ptr(), lacks, &mut ptrs, &mut text).expect("fits");
            assert_eq!(strings(&ptrs), want, "from {given:?}");
        }
        let carrying = env(&[
            c"LD_PRELOAD=/opt/sluice/lib/libsluice_stage.so",
            c"SLUICE_SEGMENT=/x",
        ]);
        assert_eq!(lacks(carrying.as_ptr()), None, "already carries the stage");
        let tiny = env(&[c"A=1", c"B=2"]);
        let mut ptrs = [std::ptr::null(); 3];
        let mut text = [0u8; 256];
        let lacks = lacks(tiny.as_ptr()).unwrap();
        assert!(build(tiny.as_ptr(), lacks, &mut ptrs, &mut text).is_none());
        let mut m = Mapped::new(lacks.len + 3, 40).expect("a mapping");
        let (ptrs, text) = m.parts();
        assert!(build(tiny.as_ptr(), lacks, ptrs, text).is_some());
        assert_eq!(strings(ptrs), ["A=1", "B=2", stage, segment]);
    }
}
