//! The stage's own system calls, made raw so that they never enter a hook and never
//! touch a libc buffer the application owns.

use std::ffi::CStr;

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
    map(len, libc::MAP_SHARED, fd)
}

/// `mmap(NULL, len, READ|WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0)`: memory of the
/// stage's own, off the application's heap.
pub fn map_anonymous(len: usize) -> Result<*mut u8, i32> {
    map(len, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)
}

/// `mmap(NULL, len, READ|WRITE, flags, fd, 0)`.
fn map(len: usize, flags: i32, fd: i32) -> Result<*mut u8, i32> {
    // SAFETY: a fresh mapping; the kernel checks fd and length.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mmap,
            std::ptr::null_mut::<u8>(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
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

/// `pread(fd, buf, at)`, whole: false unless `buf` was filled.
pub fn pread_exact(fd: i32, buf: &mut [u8], at: u64) -> bool {
    // SAFETY: buf is valid for its length.
    check(unsafe { libc::syscall(libc::SYS_pread64, fd, buf.as_mut_ptr(), buf.len(), at) })
        == Ok(buf.len())
}

/// Whether `path` names a regular file this process may execute.
pub fn is_executable_file(path: &CStr) -> bool {
    // SAFETY: path is NUL-terminated; the stat buffer is plain data written by the kernel.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let file = check(unsafe {
        libc::syscall(
            libc::SYS_newfstatat,
            libc::AT_FDCWD,
            path.as_ptr(),
            &mut st,
            0,
        )
    })
    .is_ok()
        && st.st_mode & libc::S_IFMT == libc::S_IFREG;
    // SAFETY: as above.
    file && check(unsafe {
        libc::syscall(
            libc::SYS_faccessat,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::X_OK,
        )
    })
    .is_ok()
}
