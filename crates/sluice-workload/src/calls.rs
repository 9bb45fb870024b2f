//! One counted call of any operation, made by a thread in a directory of its own.
//!
//! What the stage counts must be exactly what a load or a replay asked for, so each
//! operation is made with one libc call (`stat` for `getattr`, `open` for `open`, …), and
//! everything around it — the thread's directory and files, a directory for an `rmdir` to
//! remove, a name for an `unlink`, the release of descriptors nobody closes — is done with
//! raw system calls, which the stage does not see (docs/limitations.md). A trace may ask
//! for more closes than opens, or mkdirs and no rmdirs, as production traces do: a close
//! with no descriptor left closes a `dup` of the thread's file (`dup` is bookkeeping, not
//! counted), an `rmdir` with no directory left removes one made uncounted, and what piles
//! up beyond a few hundred entries is removed uncounted.

use std::collections::VecDeque;
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};

use sluice_core::op::Op;

use crate::load::LoadError;

/// The operations a thread can make, one counted call each.
pub const CALLABLE: [Op; 22] = [
    Op::Open,
    Op::Close,
    Op::Getattr,
    Op::Access,
    Op::Setattr,
    Op::Rename,
    Op::Link,
    Op::Symlink,
    Op::Readlink,
    Op::Unlink,
    Op::Statfs,
    Op::Sync,
    Op::Mkdir,
    Op::Rmdir,
    Op::Mknod,
    Op::Readdir,
    Op::Getxattr,
    Op::Setxattr,
    Op::Listxattr,
    Op::Removexattr,
    Op::Read,
    Op::Write,
];

/// The names of [`CALLABLE`], comma-separated, for messages.
pub fn callable_names() -> String {
    CALLABLE.map(Op::name).join(", ")
}

/// Parses an operation a thread can make.
pub fn callable(name: &str) -> Result<Op, LoadError> {
    name.parse::<Op>()
        .ok()
        .filter(|o| CALLABLE.contains(o))
        .ok_or_else(|| LoadError::Unsupported(name.to_owned()))
}

/// Descriptors a thread keeps open from `open` calls before it releases the oldest
/// uncounted: enough for any close to find one, few enough for the default limit of 1024
/// descriptors with dozens of threads.
const HELD_FDS: usize = 16;
/// Directories and files a thread keeps before it removes the oldest uncounted.
const HELD_NAMES: usize = 256;

/// Names made by counted calls and removed by counted calls, in a thread's directory:
/// the files of `mknod`, `link` and `symlink` for `unlink`, or the directories of `mkdir`
/// for `rmdir`.
struct Pile {
    /// The thread's directory, where the names are made.
    dir: CString,
    /// What the names start with.
    prefix: &'static str,
    /// Next suffix for a new name.
    serial: u64,
    /// The names made and not yet removed, oldest first.
    kept: VecDeque<CString>,
    /// Makes a name uncounted, for a removal with nothing kept to remove.
    make: fn(&CStr) -> i64,
    /// Removes a name uncounted.
    remove: fn(&CStr) -> i64,
}

impl Pile {
    fn new(
        dir: &CStr,
        prefix: &'static str,
        make: fn(&CStr) -> i64,
        remove: fn(&CStr) -> i64,
    ) -> Self {
        Pile {
            dir: dir.to_owned(),
            prefix,
            serial: 0,
            kept: VecDeque::new(),
            make,
            remove,
        }
    }

    /// A name not in use, for a counted call to make.
    fn fresh(&mut self) -> CString {
        self.serial += 1;
        let mut bytes = self.dir.as_bytes().to_vec();
        bytes.extend_from_slice(format!("/{}.{}", self.prefix, self.serial).as_bytes());
        CString::new(bytes).unwrap_or_default()
    }

    /// Keeps a name a counted call made, removing the oldest uncounted beyond
    /// [`HELD_NAMES`].
    fn keep(&mut self, name: CString) {
        self.kept.push_back(name);
        if self.kept.len() > HELD_NAMES
            && let Some(old) = self.kept.pop_front()
        {
            (self.remove)(&old);
        }
    }

    /// A name for a counted call to remove: the last kept, or one made uncounted.
    fn take(&mut self) -> CString {
        self.kept.pop_back().unwrap_or_else(|| {
            let name = self.fresh();
            (self.make)(&name);
            name
        })
    }

    /// Removes every kept name, uncounted.
    fn clear(&mut self) {
        for name in self.kept.drain(..) {
            (self.remove)(&name);
        }
    }
}

/// A thread's directory and what it made there.
pub(crate) struct Caller {
    /// The thread's own directory.
    dir: CString,
    /// Its file (renamed back and forth with `other`).
    file: CString,
    other: CString,
    /// A symbolic link to `file`, for `readlink`.
    link: CString,
    /// A descriptor of `file`, opened uncounted: data calls, `sync`, and the source of the
    /// `dup`s that unmatched closes close.
    fd: i32,
    /// Descriptors left open by `open` calls.
    fds: Vec<i32>,
    /// Directories of `mkdir`, for `rmdir`.
    dirs: Pile,
    /// Files of `mknod`, `link` and `symlink`, for `unlink`.
    files: Pile,
    /// The directory stream `readdir` lists, opened at the first `readdir` and closed at
    /// the end: the one `open` and `close` a thread makes beyond what it is asked for
    /// (no libc call lists a directory without a stream, and every way to get one is an
    /// open). Null when it could not be opened.
    stream: Option<*mut libc::DIR>,
    buf: Vec<u8>,
}

// SAFETY: the directory stream is used by the owning thread only; a Caller moves to the
// thread that uses it before its first call.
unsafe impl Send for Caller {}

fn c_path(p: &Path) -> CString {
    // Paths built from a directory the user named and our own ASCII names: no NUL inside.
    CString::new(p.as_os_str().as_encoded_bytes()).unwrap_or_default()
}

/// The error of the last failed call, for a path.
fn dir_error(path: &Path) -> LoadError {
    LoadError::Dir {
        path: path.to_owned(),
        source: std::io::Error::last_os_error(),
    }
}

impl Caller {
    /// Makes `parent/sluice.PID.THREAD` with a file of `block` bytes and a link to it.
    pub(crate) fn new(parent: &Path, thread: usize, block: usize) -> Result<Self, LoadError> {
        let dir: PathBuf = parent.join(format!("sluice.{}.{thread}", std::process::id()));
        let name = |s: &str| c_path(&dir.join(s));
        let (cdir, file, link) = (c_path(&dir), name("f"), name("l"));
        if raw::mkdir(&cdir) < 0 {
            return Err(dir_error(&dir));
        }
        let fd = raw::create(&file);
        if fd < 0 || raw::symlink(c"f", &link) < 0 || raw::ftruncate(fd, block.max(1)) < 0 {
            let e = dir_error(&dir);
            raw::close(fd);
            for p in [&link, &file] {
                raw::unlink(p);
            }
            raw::rmdir(&cdir);
            return Err(e);
        }
        Ok(Caller {
            other: name("g"),
            dirs: Pile::new(&cdir, "d", raw::mkdir, raw::rmdir),
            files: Pile::new(&cdir, "n", raw::mknod, raw::unlink),
            dir: cdir,
            file,
            link,
            fd,
            fds: Vec::new(),
            stream: None,
            buf: vec![0u8; block.max(1)],
        })
    }

    /// Makes one call of `op` (one of [`CALLABLE`]), whatever it returns: a failed call
    /// is counted by the stage all the same, and the errno is the file system's business.
    pub(crate) fn make(&mut self, op: Op) {
        // SAFETY: every pointer is a valid C string or a buffer of the size passed.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            match op {
                Op::Open => {
                    let fd = libc::open(self.file.as_ptr(), libc::O_RDONLY);
                    if fd >= 0 {
                        self.fds.push(fd);
                        if self.fds.len() > HELD_FDS {
                            raw::close(self.fds.remove(0));
                        }
                    }
                }
                Op::Close => {
                    let fd = self.fds.pop().unwrap_or_else(|| libc::dup(self.fd));
                    libc::close(fd);
                }
                Op::Getattr => {
                    libc::stat(self.file.as_ptr(), &mut st);
                }
                Op::Access => {
                    libc::access(self.file.as_ptr(), libc::R_OK);
                }
                Op::Setattr => {
                    libc::chmod(self.file.as_ptr(), 0o644);
                }
                Op::Rename => {
                    libc::rename(self.file.as_ptr(), self.other.as_ptr());
                    std::mem::swap(&mut self.file, &mut self.other);
                }
                Op::Link => {
                    let name = self.files.fresh();
                    libc::link(self.file.as_ptr(), name.as_ptr());
                    self.files.keep(name);
                }
                Op::Symlink => {
                    let name = self.files.fresh();
                    libc::symlink(c"f".as_ptr(), name.as_ptr());
                    self.files.keep(name);
                }
                Op::Readlink => {
                    libc::readlink(
                        self.link.as_ptr(),
                        self.buf.as_mut_ptr().cast(),
                        self.buf.len(),
                    );
                }
                Op::Mknod => {
                    let name = self.files.fresh();
                    libc::mknod(name.as_ptr(), libc::S_IFREG | 0o644, 0);
                    self.files.keep(name);
                }
                Op::Unlink => {
                    libc::unlink(self.files.take().as_ptr());
                }
                Op::Statfs => {
                    let mut s: libc::statfs = std::mem::zeroed();
                    libc::statfs(self.dir.as_ptr(), &mut s);
                }
                Op::Sync => {
                    libc::fsync(self.fd);
                }
                Op::Mkdir => {
                    let name = self.dirs.fresh();
                    libc::mkdir(name.as_ptr(), 0o755);
                    self.dirs.keep(name);
                }
                Op::Rmdir => {
                    libc::rmdir(self.dirs.take().as_ptr());
                }
                Op::Readdir => {
                    let dir = &self.dir;
                    let stream = *self
                        .stream
                        .get_or_insert_with(|| libc::opendir(dir.as_ptr()));
                    if !stream.is_null() && libc::readdir(stream).is_null() {
                        // At the end of the listing: start it again (not counted).
                        libc::rewinddir(stream);
                    }
                }
                Op::Getxattr => {
                    libc::getxattr(
                        self.file.as_ptr(),
                        XATTR.as_ptr(),
                        self.buf.as_mut_ptr().cast(),
                        self.buf.len(),
                    );
                }
                Op::Setxattr => {
                    libc::setxattr(
                        self.file.as_ptr(),
                        XATTR.as_ptr(),
                        c"1".as_ptr().cast(),
                        1,
                        0,
                    );
                }
                Op::Listxattr => {
                    libc::listxattr(
                        self.file.as_ptr(),
                        self.buf.as_mut_ptr().cast(),
                        self.buf.len(),
                    );
                }
                Op::Removexattr => {
                    libc::removexattr(self.file.as_ptr(), XATTR.as_ptr());
                }
                Op::Read => {
                    libc::pread(self.fd, self.buf.as_mut_ptr().cast(), self.buf.len(), 0);
                }
                Op::Write => {
                    libc::pwrite(self.fd, self.buf.as_ptr().cast(), self.buf.len(), 0);
                }
                _ => {}
            }
        }
    }
}

/// The extended attribute the xattr operations read, set and remove.
const XATTR: &CStr = c"user.sluice";

impl Drop for Caller {
    /// Removes everything the thread made, uncounted (but for the directory stream's
    /// close).
    fn drop(&mut self) {
        if let Some(stream) = self.stream.take()
            && !stream.is_null()
        {
            // SAFETY: our own stream, closed once.
            unsafe { libc::closedir(stream) };
        }
        for fd in self.fds.drain(..).chain([self.fd]) {
            raw::close(fd);
        }
        self.dirs.clear();
        self.files.clear();
        for n in [&self.file, &self.other, &self.link] {
            raw::unlink(n);
        }
        raw::rmdir(&self.dir);
    }
}

/// System calls made directly, unseen by the stage: the scaffolding around counted calls.
/// Each returns the kernel's result (negative on failure).
pub(crate) mod raw {
    use std::ffi::CStr;

    use libc::{AT_FDCWD, c_long};

    /// `openat(path, O_RDWR|O_CREAT|O_CLOEXEC, 0644)`: a descriptor or -1.
    pub fn create(path: &CStr) -> i32 {
        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC;
        // SAFETY: a valid C string.
        let fd = unsafe { libc::syscall(libc::SYS_openat, AT_FDCWD, path.as_ptr(), flags, 0o644) };
        i32::try_from(fd).unwrap_or(-1)
    }

    /// `close(fd)`.
    pub fn close(fd: i32) -> i64 {
        // SAFETY: closing a descriptor this module's caller owns.
        unsafe { libc::syscall(libc::SYS_close, fd) }
    }

    /// `ftruncate(fd, len)`.
    pub fn ftruncate(fd: i32, len: usize) -> i64 {
        // SAFETY: no pointers.
        unsafe { libc::syscall(libc::SYS_ftruncate, fd, len as c_long) }
    }

    /// `mkdirat(path, 0755)`.
    pub fn mkdir(path: &CStr) -> i64 {
        // SAFETY: a valid C string.
        unsafe { libc::syscall(libc::SYS_mkdirat, AT_FDCWD, path.as_ptr(), 0o755) }
    }

    /// `mknodat(path, S_IFREG|0644)`: an empty file.
    pub fn mknod(path: &CStr) -> i64 {
        let mode = libc::S_IFREG | 0o644;
        // SAFETY: a valid C string.
        unsafe { libc::syscall(libc::SYS_mknodat, AT_FDCWD, path.as_ptr(), mode, 0) }
    }

    /// `symlinkat(target, path)`.
    pub fn symlink(target: &CStr, path: &CStr) -> i64 {
        // SAFETY: valid C strings.
        unsafe {
            libc::syscall(
                libc::SYS_symlinkat,
                target.as_ptr(),
                AT_FDCWD,
                path.as_ptr(),
            )
        }
    }

    /// `unlinkat(path, 0)`.
    pub fn unlink(path: &CStr) -> i64 {
        // SAFETY: a valid C string.
        unsafe { libc::syscall(libc::SYS_unlinkat, AT_FDCWD, path.as_ptr(), 0) }
    }

    /// `unlinkat(path, AT_REMOVEDIR)`.
    pub fn rmdir(path: &CStr) -> i64 {
        // SAFETY: a valid C string.
        unsafe {
            libc::syscall(
                libc::SYS_unlinkat,
                AT_FDCWD,
                path.as_ptr(),
                libc::AT_REMOVEDIR,
            )
        }
    }
}
