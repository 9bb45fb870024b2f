//! The stage's own system calls, made raw so that they never enter a hook and never
//! touch a libc buffer the application owns.

use std::ffi::{CStr, c_void};
use std::sync::atomic::Ordering;

use crate::hot::HOT;

/// Result of a raw call: the value, or the errno.
pub type SysResult = Result<usize, i32>;

#[inline]
fn check(r: libc::c_long) -> SysResult {
    if r < 0 {
        // SAFETY: errno is thread-local and set by the failed syscall.
        Err(unsafe { *libc::__errno_location() })
    } else {
        Ok(r as usize)
    }
}

/// Runs `f` and restores errno afterwards, so the stage's own calls never change the
/// errno the application sees.
#[inline]
pub fn keep_errno<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: errno is thread-local.
    let saved = unsafe { *libc::__errno_location() };
    let out = f();
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
    out
}

/// `openat(AT_FDCWD, path, flags | O_CLOEXEC, mode)`.
pub fn open(path: &CStr, flags: i32, mode: u32) -> SysResult {
    // SAFETY: path is NUL-terminated.
    check(unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode,
        )
    })
}

/// `close(fd)`.
pub fn close(fd: i32) {
    // SAFETY: closing a descriptor the stage opened.
    unsafe { libc::syscall(libc::SYS_close, fd) };
}

/// `read(fd, buf)`, whole: loops until EOF or the buffer is full.
pub fn read_all(fd: i32, buf: &mut [u8]) -> SysResult {
    let mut n = 0;
    while n < buf.len() {
        // SAFETY: the range lies inside buf.
        let r = check(unsafe {
            libc::syscall(libc::SYS_read, fd, buf[n..].as_mut_ptr(), buf.len() - n)
        });
        match r {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(libc::EINTR) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// `write(fd, buf)`, whole.
pub fn write_all(fd: i32, mut buf: &[u8]) {
    while !buf.is_empty() {
        // SAFETY: buf is valid for its length.
        match check(unsafe { libc::syscall(libc::SYS_write, fd, buf.as_ptr(), buf.len()) }) {
            Ok(k) => buf = &buf[k..],
            Err(libc::EINTR) => {}
            Err(_) => return,
        }
    }
}

/// `mmap(NULL, len, READ|WRITE, MAP_SHARED, fd, 0)`.
pub fn map_shared(fd: i32, len: usize) -> Result<*mut u8, i32> {
    // SAFETY: a fresh mapping; the kernel checks fd and length.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mmap,
            std::ptr::null_mut::<u8>(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            // A variadic argument: an untyped 0 would be passed as 32 bits, and the kernel
            // reads the offset as 64 (regression: SIGBUS at start when the upper half of
            // the register held garbage).
            0 as libc::off_t,
        )
    };
    check(r).map(|p| p as *mut u8)
}

/// `readlinkat(AT_FDCWD, path, buf)`: the link's length.
pub fn readlink(path: &CStr, buf: &mut [u8]) -> SysResult {
    // SAFETY: path is NUL-terminated, buf valid for its length.
    check(unsafe {
        libc::syscall(
            libc::SYS_readlinkat,
            libc::AT_FDCWD,
            path.as_ptr(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    })
}

/// `getpid()`, raw: in a vfork()ed child glibc's cached answer would be the parent's.
pub fn getpid() -> i32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::syscall(libc::SYS_getpid) as i32 }
}

/// `getcwd(buf)`: the length without the NUL.
pub fn getcwd(buf: &mut [u8]) -> SysResult {
    // SAFETY: buf valid for its length.
    check(unsafe { libc::syscall(libc::SYS_getcwd, buf.as_mut_ptr(), buf.len()) })
        .map(|n| n.saturating_sub(1))
}

/// The name the kernel gives `clock_gettime` in its vDSO.
#[cfg(target_arch = "x86_64")]
const VDSO_CLOCK_GETTIME_NAME: &CStr = c"__vdso_clock_gettime";
#[cfg(not(target_arch = "x86_64"))]
const VDSO_CLOCK_GETTIME_NAME: &CStr = c"__kernel_clock_gettime";

/// Finds the vDSO's `clock_gettime`, so that [`clock_ns`] calls it directly: glibc's
/// wrapper adds a call and a check to every read (a coarse read cost 6.8 ns through it
/// and 4.2 ns without, on this project's VM). Called once at start.
pub fn find_vdso_clock() {
    // SAFETY: NUL-terminated names. RTLD_NOLOAD only looks the vDSO up among the objects
    // the loader already has: nothing is loaded, nothing runs.
    let f = unsafe {
        let h = libc::dlopen(
            c"linux-vdso.so.1".as_ptr(),
            libc::RTLD_NOW | libc::RTLD_NOLOAD,
        );
        if h.is_null() {
            return;
        }
        let f = libc::dlsym(h, VDSO_CLOCK_GETTIME_NAME.as_ptr());
        // The vDSO is never unmapped: its functions outlive the handle.
        libc::dlclose(h);
        f
    };
    HOT.vdso_clock_gettime.store(f, Ordering::Relaxed);
}

/// Nanoseconds on `clock` (read through the vDSO: no system call).
#[inline]
pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    type ClockGettime = unsafe extern "C" fn(libc::clockid_t, *mut libc::timespec) -> i32;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let vdso = HOT.vdso_clock_gettime.load(Ordering::Relaxed);
    let f: ClockGettime = if vdso.is_null() {
        libc::clock_gettime
    } else {
        // SAFETY: the vDSO's clock_gettime, whose C signature is glibc's.
        unsafe { std::mem::transmute::<*mut c_void, ClockGettime>(vdso) }
    };
    // SAFETY: ts is a valid timespec; the monotonic clocks always exist.
    unsafe { f(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The resolution of `clock` in nanoseconds (10 ms if the kernel will not say).
pub fn clock_resolution_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec.
    match unsafe { libc::clock_getres(clock, &mut ts) } {
        0 => ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
        _ => 10_000_000,
    }
}

/// Sleeps until CLOCK_MONOTONIC reads `deadline` or until another process changes `word`
/// from `seen` and wakes it (a shared futex: the word lives in a segment mapped by several
/// processes). Returns early on a wake-up, on a signal (its handler has run) or if `word`
/// had already changed; the caller re-checks. errno is left as it was.
pub fn futex_wait_until(word: &std::sync::atomic::AtomicU32, seen: u32, deadline: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
    };
    keep_errno(|| {
        // SAFETY: `word` is a valid, aligned 32-bit word for the life of the call; with
        // FUTEX_WAIT_BITSET the timeout is an absolute CLOCK_MONOTONIC time.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT_BITSET,
                seen,
                &ts as *const libc::timespec,
                std::ptr::null::<u32>(),
                libc::FUTEX_BITSET_MATCH_ANY,
            )
        };
    });
}
