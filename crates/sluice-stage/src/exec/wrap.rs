//! Programs the stage cannot enter, started by a managed one: a statically linked tool a
//! job script runs, a Go program. Such a program is started through `sluice supervise`
//! instead (the `sluice` beside the stage), which runs it under the seccomp filter that
//! sends its file calls to a supervisor admitting them through the job's segment, the
//! budget the stage holds its parent to (docs/limitations.md).
//!
//! What is read here (the program's path, its ELF headers) is read with raw system
//! calls into buffers on the stack: an exec may come from a `vfork`ed child.

use std::ffi::{CStr, c_char};

use sluice_core::elf::{Why, inspect};
use sluice_core::path::PATH_MAX;

use super::Argv;
use crate::sys;

/// How an exec names its program.
#[derive(Clone, Copy, Debug)]
pub(super) enum Named {
    /// A path, as `execve` takes it.
    Path(*const c_char),
    /// A file name searched in `PATH` when it has no slash, as `execvp` takes it.
    Searched(*const c_char),
}

/// Why the stage cannot enter the program `named` (its path then in `exe`,
/// NUL-terminated); `None` when it can, or when it cannot be found or read (the exec then
/// fails, or starts what it starts, as it would have).
pub(super) fn unenterable(named: Named, exe: &mut [u8; PATH_MAX]) -> Option<Why> {
    let path = locate(named, exe)?;
    let fd = sys::open(path, libc::O_RDONLY, 0).ok()? as i32;
    let why = inspect(|at, buf| sys::pread_exact(fd, buf, at));
    sys::close(fd);
    why.filter(|w| matches!(w, Why::Static | Why::Go))
}

/// The path of the program `named`, in `buf`.
fn locate(named: Named, buf: &mut [u8; PATH_MAX]) -> Option<&CStr> {
    let (Named::Path(p) | Named::Searched(p)) = named;
    if p.is_null() {
        return None;
    }
    // SAFETY: the program's NUL-terminated name, as exec requires.
    let name = unsafe { CStr::from_ptr(p) }.to_bytes();
    if name.is_empty() {
        return None;
    }
    if matches!(named, Named::Path(_)) || name.contains(&b'/') {
        return copy_into(buf, &[name]);
    }
    // As glibc's execvp searches: PATH, or its default when unset.
    // SAFETY: getenv reads the environment without allocating; the result lives in it.
    let path = unsafe { libc::getenv(c"PATH".as_ptr()) };
    let dirs = match path.is_null() {
        true => &b"/bin:/usr/bin"[..],
        // SAFETY: a NUL-terminated string of the environment.
        false => unsafe { CStr::from_ptr(path) }.to_bytes(),
    };
    for dir in dirs.split(|&b| b == b':') {
        let dir = if dir.is_empty() { &b"."[..] } else { dir };
        if copy_into(buf, &[dir, b"/", name]).is_some_and(sys::is_executable_file) {
            return CStr::from_bytes_until_nul(buf).ok();
        }
    }
    None
}

/// Joins `parts` into `buf`, NUL-terminated; `None` when they do not fit.
fn copy_into<'a>(buf: &'a mut [u8; PATH_MAX], parts: &[&[u8]]) -> Option<&'a CStr> {
    let mut at = 0;
    for p in parts {
        buf.get_mut(at..at + p.len())?.copy_from_slice(p);
        at += p.len();
    }
    *buf.get_mut(at)? = 0;
    CStr::from_bytes_until_nul(&buf[..=at]).ok()
}

/// The arguments of `sluice supervise` starting `exe` with the program's `argv`: `[sluice,
/// "supervise", "--exe", exe, "--signals", signals, "--", argv…, NULL]` in `out` (argv[0]
/// is `exe` when the program gave none). `None` when they do not fit.
pub(super) fn wrapper_argv(
    sluice: &CStr,
    exe: &CStr,
    signals: &CStr,
    argv: Argv,
    out: &mut [*const c_char],
) -> Option<()> {
    let head = [
        sluice.as_ptr(),
        c"supervise".as_ptr(),
        c"--exe".as_ptr(),
        exe.as_ptr(),
        c"--signals".as_ptr(),
        signals.as_ptr(),
        c"--".as_ptr(),
    ];
    out.get_mut(..head.len())?.copy_from_slice(&head);
    let given = count(argv);
    let mut n = head.len();
    if given == 0 {
        *out.get_mut(n)? = exe.as_ptr();
        n += 1;
    }
    for i in 0..given {
        // SAFETY: `count` found `given` arguments.
        *out.get_mut(n)? = unsafe { *argv.add(i) };
        n += 1;
    }
    *out.get_mut(n)? = std::ptr::null();
    Some(())
}

/// How many arguments `argv` holds.
pub(super) fn count(argv: Argv) -> usize {
    let mut n = 0;
    // SAFETY: as in `wrapper_argv`.
    while !argv.is_null() && !unsafe { *argv.add(n) }.is_null() {
        n += 1;
    }
    n
}

/// What an exec keeps of this thread's signals, as `BLOCKED:IGNORED` (two masks in hex, bit
/// `n - 1` for signal `n`) in `buf`: the blocked mask and the ignored dispositions, which
/// `sluice supervise` gives the program as the exec would have (handlers become the
/// default either way).
pub(super) fn signal_state(buf: &mut [u8; 36]) -> &CStr {
    let mut blocked = 0u64;
    // SAFETY: a null new set only reads the mask into `blocked`, 8 bytes.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_BLOCK,
            std::ptr::null::<u64>(),
            &mut blocked,
            8,
        )
    };
    let mut ignored = 0u64;
    for sig in 1..=64 {
        // The kernel's sigaction: handler, flags, restorer, mask.
        let mut old = [0u64; 4];
        // SAFETY: a null new action only reads the disposition into `old`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                sig,
                std::ptr::null::<u64>(),
                old.as_mut_ptr(),
                8,
            )
        };
        if r == 0 && old[0] == libc::SIG_IGN as u64 {
            ignored |= 1 << (sig - 1);
        }
    }
    let hex = |v: u64, out: &mut [u8]| {
        for (i, o) in out.iter_mut().enumerate() {
            let d = (v >> (60 - 4 * i)) & 0xf;
            *o = b"0123456789abcdef"[d as usize];
        }
    };
    hex(blocked, &mut buf[..16]);
    buf[16] = b':';
    hex(ignored, &mut buf[17..33]);
    buf[33] = 0;
    CStr::from_bytes_until_nul(&buf[..]).unwrap_or_default()
}
