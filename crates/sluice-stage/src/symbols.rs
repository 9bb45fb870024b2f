//! The table of intercepted symbols: the single source of truth for what the stage sees.
//!
//! Each row names the symbol and its C signature, the operation it is counted as, how
//! its target is named, what it costs (bytes for data calls), what it moved, and its
//! effect on the descriptor table. `docs/operations.md` is generated from this table, and
//! a test fails when the checked-in copy is stale.
//!
//! Two-path calls (rename, link) are judged by their first path; `symlink` by the link it
//! creates; `close_range` and `closefrom` by their first descriptor; `sync` by the current
//! directory. `copy_file_range` and `sendfile` are judged by both ends (target `Copy`):
//! a managed source is admitted and counted as a `read`, a managed destination as a
//! `write` (the row's op).
//!
//! stdio moves a stream's bytes with glibc's internal `read` and `write`, which no
//! preload sees, so every stdio call that moves data is a row of its own, counted for the
//! bytes it hands over or takes (not for when glibc flushes its buffer). Formatted calls
//! say what they moved only once they return (`AfterCall`); the C-variadic ones (`printf`
//! & co, listed first) are defined in `shim.c` and call the hook of their v-variant. The
//! single-character gets and puts that glibc's headers inline into an optimised program
//! call the library only when the buffer runs empty or full: `__uflow` and `__overflow`
//! are counted for the whole buffer they read or write.

//!
//! The table is a macro that hands its rows to another: [`crate::hot`] expands them into
//! the real symbols' slots, [`crate::hooks`] into the exported hooks and the list the
//! docs are generated from. Names in a row (types, effects, fallbacks) are resolved where
//! the hooks are expanded.

/// Hands the table's rows to the macro `$then`.
macro_rules! symbols {
    ($then:ident) => {
        $then! {
            variadic {
                printf => vprintf,
                fprintf => vfprintf,
                dprintf => vdprintf,
                __printf_chk => __vprintf_chk,
                __fprintf_chk => __vfprintf_chk,
                __dprintf_chk => __vdprintf_chk,
                scanf => vscanf,
                fscanf => vfscanf,
                __isoc99_scanf => __isoc99_vscanf,
                __isoc99_fscanf => __isoc99_vfscanf,
            }
            // ---- open -------------------------------------------------------------------------
            open(path: Path, flags: c_int, mode: c_uint) -> c_int = Open, Path(path), MD, NO, Effect::OpenFd, call(path, flags, open_mode(flags, mode));
            open64(path: Path, flags: c_int, mode: c_uint) -> c_int = Open, Path(path), MD, NO, Effect::OpenFd, call(path, flags, open_mode(flags, mode));
            openat(dirfd: c_int, path: Path, flags: c_int, mode: c_uint) -> c_int = Open, At(dirfd, path), MD, NO, Effect::OpenFd, call(dirfd, path, flags, open_mode(flags, mode));
            openat64(dirfd: c_int, path: Path, flags: c_int, mode: c_uint) -> c_int = Open, At(dirfd, path), MD, NO, Effect::OpenFd, call(dirfd, path, flags, open_mode(flags, mode));
            creat(path: Path, mode: c_uint) -> c_int = Open, Path(path), MD, NO, Effect::OpenFd;
            creat64(path: Path, mode: c_uint) -> c_int = Open, Path(path), MD, NO, Effect::OpenFd;
            __open_2(path: Path, flags: c_int) -> c_int = Open, Path(path), MD, NO, Effect::OpenFd;
            __open64_2(path: Path, flags: c_int) -> c_int = Open, Path(path), MD, NO, Effect::OpenFd;
            __openat_2(dirfd: c_int, path: Path, flags: c_int) -> c_int = Open, At(dirfd, path), MD, NO, Effect::OpenFd;
            __openat64_2(dirfd: c_int, path: Path, flags: c_int) -> c_int = Open, At(dirfd, path), MD, NO, Effect::OpenFd;
            fopen(path: Path, mode: *const c_char) -> File = Open, Path(path), MD, NO, Effect::OpenFile;
            fopen64(path: Path, mode: *const c_char) -> File = Open, Path(path), MD, NO, Effect::OpenFile;
            freopen(path: Path, mode: *const c_char, stream: File) -> File = Open, Path(path), MD, NO, Effect::Reopen(stream);
            freopen64(path: Path, mode: *const c_char, stream: File) -> File = Open, Path(path), MD, NO, Effect::Reopen(stream);
            fdopen(fd: c_int, mode: *const c_char) -> File = Open, Fd(fd), MD, NO, NONE;
            mkstemp(template: *mut c_char) -> c_int = Open, Path(template), MD, NO, Effect::OpenFd;
            mkstemp64(template: *mut c_char) -> c_int = Open, Path(template), MD, NO, Effect::OpenFd;
            mkostemp(template: *mut c_char, flags: c_int) -> c_int = Open, Path(template), MD, NO, Effect::OpenFd;
            mkostemp64(template: *mut c_char, flags: c_int) -> c_int = Open, Path(template), MD, NO, Effect::OpenFd;
            mkstemps(template: *mut c_char, suffix: c_int) -> c_int = Open, Path(template), MD, NO, Effect::OpenFd;
            mkstemps64(template: *mut c_char, suffix: c_int) -> c_int = Open, Path(template), MD, NO, Effect::OpenFd;
            mkostemps(template: *mut c_char, suffix: c_int, flags: c_int) -> c_int = Open, Path(template), MD, NO, Effect::OpenFd;
            mkostemps64(template: *mut c_char, suffix: c_int, flags: c_int) -> c_int = Open, Path(template), MD, NO, Effect::OpenFd;
            opendir(path: Path) -> Dir = Open, Path(path), MD, NO, Effect::OpenDir;
            fdopendir(fd: c_int) -> Dir = Open, Fd(fd), MD, NO, NONE;
            tmpfile() -> File = Open, Path(c"/tmp".as_ptr()), MD, NO, Effect::OpenFile;
            tmpfile64() -> File = Open, Path(c"/tmp".as_ptr()), MD, NO, Effect::OpenFile;
            // ---- close ------------------------------------------------------------------------
            close(fd: c_int) -> c_int = Close, Fd(fd), MD, NO, Effect::Close(fd);
            close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int = Close, Fd(first as c_int), MD, NO, close_range_effect(first, last, flags);
            closefrom(first: c_int) -> () = Close, Fd(first), MD, NO, Effect::CloseRange(first.max(0) as c_uint, c_uint::MAX);
            fclose(stream: File) -> c_int = Close, File(stream), MD, NO, Effect::CloseFile(stream);
            closedir(dir: Dir) -> c_int = Close, Dir(dir), MD, NO, Effect::CloseDir(dir);
            // ---- getattr ----------------------------------------------------------------------
            stat(path: Path, buf: Buf) -> c_int = Getattr, Path(path), MD, NO, NONE, else fallback::stat;
            stat64(path: Path, buf: Buf) -> c_int = Getattr, Path(path), MD, NO, NONE, else fallback::stat64;
            lstat(path: Path, buf: Buf) -> c_int = Getattr, Path(path), MD, NO, NONE, else fallback::lstat;
            lstat64(path: Path, buf: Buf) -> c_int = Getattr, Path(path), MD, NO, NONE, else fallback::lstat64;
            fstat(fd: c_int, buf: Buf) -> c_int = Getattr, Fd(fd), MD, NO, NONE, else fallback::fstat;
            fstat64(fd: c_int, buf: Buf) -> c_int = Getattr, Fd(fd), MD, NO, NONE, else fallback::fstat64;
            fstatat(dirfd: c_int, path: Path, buf: Buf, flags: c_int) -> c_int = Getattr, At(dirfd, path), MD, NO, NONE, else fallback::fstatat;
            fstatat64(dirfd: c_int, path: Path, buf: Buf, flags: c_int) -> c_int = Getattr, At(dirfd, path), MD, NO, NONE, else fallback::fstatat64;
            statx(dirfd: c_int, path: Path, flags: c_int, mask: c_uint, buf: Buf) -> c_int = Getattr, At(dirfd, path), MD, NO, NONE;
            __xstat(ver: c_int, path: Path, buf: Buf) -> c_int = Getattr, Path(path), MD, NO, NONE, else fallback::xstat;
            __xstat64(ver: c_int, path: Path, buf: Buf) -> c_int = Getattr, Path(path), MD, NO, NONE, else fallback::xstat64;
            __lxstat(ver: c_int, path: Path, buf: Buf) -> c_int = Getattr, Path(path), MD, NO, NONE, else fallback::lxstat;
            __lxstat64(ver: c_int, path: Path, buf: Buf) -> c_int = Getattr, Path(path), MD, NO, NONE, else fallback::lxstat64;
            __fxstat(ver: c_int, fd: c_int, buf: Buf) -> c_int = Getattr, Fd(fd), MD, NO, NONE, else fallback::fxstat;
            __fxstat64(ver: c_int, fd: c_int, buf: Buf) -> c_int = Getattr, Fd(fd), MD, NO, NONE, else fallback::fxstat64;
            __fxstatat(ver: c_int, dirfd: c_int, path: Path, buf: Buf, flags: c_int) -> c_int = Getattr, At(dirfd, path), MD, NO, NONE, else fallback::fxstatat;
            __fxstatat64(ver: c_int, dirfd: c_int, path: Path, buf: Buf, flags: c_int) -> c_int = Getattr, At(dirfd, path), MD, NO, NONE, else fallback::fxstatat64;
            // ---- access -----------------------------------------------------------------------
            access(path: Path, mode: c_int) -> c_int = Access, Path(path), MD, NO, NONE;
            faccessat(dirfd: c_int, path: Path, mode: c_int, flags: c_int) -> c_int = Access, At(dirfd, path), MD, NO, NONE;
            euidaccess(path: Path, mode: c_int) -> c_int = Access, Path(path), MD, NO, NONE;
            eaccess(path: Path, mode: c_int) -> c_int = Access, Path(path), MD, NO, NONE;
            // ---- setattr ----------------------------------------------------------------------
            chmod(path: Path, mode: c_uint) -> c_int = Setattr, Path(path), MD, NO, NONE;
            fchmod(fd: c_int, mode: c_uint) -> c_int = Setattr, Fd(fd), MD, NO, NONE;
            fchmodat(dirfd: c_int, path: Path, mode: c_uint, flags: c_int) -> c_int = Setattr, At(dirfd, path), MD, NO, NONE;
            chown(path: Path, uid: c_uint, gid: c_uint) -> c_int = Setattr, Path(path), MD, NO, NONE;
            fchown(fd: c_int, uid: c_uint, gid: c_uint) -> c_int = Setattr, Fd(fd), MD, NO, NONE;
            lchown(path: Path, uid: c_uint, gid: c_uint) -> c_int = Setattr, Path(path), MD, NO, NONE;
            fchownat(dirfd: c_int, path: Path, uid: c_uint, gid: c_uint, flags: c_int) -> c_int = Setattr, At(dirfd, path), MD, NO, NONE;
            utime(path: Path, times: CBuf) -> c_int = Setattr, Path(path), MD, NO, NONE;
            utimes(path: Path, times: CBuf) -> c_int = Setattr, Path(path), MD, NO, NONE;
            lutimes(path: Path, times: CBuf) -> c_int = Setattr, Path(path), MD, NO, NONE;
            futimes(fd: c_int, times: CBuf) -> c_int = Setattr, Fd(fd), MD, NO, NONE;
            futimesat(dirfd: c_int, path: Path, times: CBuf) -> c_int = Setattr, At(dirfd, path), MD, NO, NONE;
            utimensat(dirfd: c_int, path: Path, times: CBuf, flags: c_int) -> c_int = Setattr, At(dirfd, path), MD, NO, NONE;
            futimens(fd: c_int, times: CBuf) -> c_int = Setattr, Fd(fd), MD, NO, NONE;
            truncate(path: Path, len: Off) -> c_int = Setattr, Path(path), MD, NO, NONE;
            truncate64(path: Path, len: Off) -> c_int = Setattr, Path(path), MD, NO, NONE;
            ftruncate(fd: c_int, len: Off) -> c_int = Setattr, Fd(fd), MD, NO, NONE;
            ftruncate64(fd: c_int, len: Off) -> c_int = Setattr, Fd(fd), MD, NO, NONE;
            // ---- names ------------------------------------------------------------------------
            rename(old: Path, new: Path) -> c_int = Rename, Path(old), MD, NO, NONE;
            renameat(olddir: c_int, old: Path, newdir: c_int, new: Path) -> c_int = Rename, At(olddir, old), MD, NO, NONE;
            renameat2(olddir: c_int, old: Path, newdir: c_int, new: Path, flags: c_uint) -> c_int = Rename, At(olddir, old), MD, NO, NONE;
            link(old: Path, new: Path) -> c_int = Link, Path(old), MD, NO, NONE;
            linkat(olddir: c_int, old: Path, newdir: c_int, new: Path, flags: c_int) -> c_int = Link, At(olddir, old), MD, NO, NONE;
            symlink(target: Path, linkpath: Path) -> c_int = Symlink, Path(linkpath), MD, NO, NONE;
            symlinkat(target: Path, newdir: c_int, linkpath: Path) -> c_int = Symlink, At(newdir, linkpath), MD, NO, NONE;
            readlink(path: Path, buf: *mut c_char, len: usize) -> isize = Readlink, Path(path), MD, NO, NONE;
            readlinkat(dirfd: c_int, path: Path, buf: *mut c_char, len: usize) -> isize = Readlink, At(dirfd, path), MD, NO, NONE;
            __readlink_chk(path: Path, buf: *mut c_char, len: usize, buflen: usize) -> isize = Readlink, Path(path), MD, NO, NONE;
            __readlinkat_chk(dirfd: c_int, path: Path, buf: *mut c_char, len: usize, buflen: usize) -> isize = Readlink, At(dirfd, path), MD, NO, NONE;
            unlink(path: Path) -> c_int = Unlink, Path(path), MD, NO, NONE;
            unlinkat(dirfd: c_int, path: Path, flags: c_int) -> c_int = Unlink, At(dirfd, path), MD, NO, NONE;
            // ---- directory --------------------------------------------------------------------
            mkdir(path: Path, mode: c_uint) -> c_int = Mkdir, Path(path), MD, NO, NONE;
            mkdirat(dirfd: c_int, path: Path, mode: c_uint) -> c_int = Mkdir, At(dirfd, path), MD, NO, NONE;
            rmdir(path: Path) -> c_int = Rmdir, Path(path), MD, NO, NONE;
            mknod(path: Path, mode: c_uint, dev: u64) -> c_int = Mknod, Path(path), MD, NO, NONE;
            mknodat(dirfd: c_int, path: Path, mode: c_uint, dev: u64) -> c_int = Mknod, At(dirfd, path), MD, NO, NONE;
            __xmknod(ver: c_int, path: Path, mode: c_uint, dev: *mut u64) -> c_int = Mknod, Path(path), MD, NO, NONE;
            __xmknodat(ver: c_int, dirfd: c_int, path: Path, mode: c_uint, dev: *mut u64) -> c_int = Mknod, At(dirfd, path), MD, NO, NONE;
            mkfifo(path: Path, mode: c_uint) -> c_int = Mknod, Path(path), MD, NO, NONE;
            mkfifoat(dirfd: c_int, path: Path, mode: c_uint) -> c_int = Mknod, At(dirfd, path), MD, NO, NONE;
            readdir(dir: Dir) -> *mut c_void = Readdir, Dir(dir), MD, NO, NONE;
            readdir64(dir: Dir) -> *mut c_void = Readdir, Dir(dir), MD, NO, NONE;
            getdents64(fd: c_int, buf: Buf, len: usize) -> isize = Readdir, Fd(fd), MD, NO, NONE;
            // ---- statfs -----------------------------------------------------------------------
            statfs(path: Path, buf: Buf) -> c_int = Statfs, Path(path), MD, NO, NONE;
            statfs64(path: Path, buf: Buf) -> c_int = Statfs, Path(path), MD, NO, NONE;
            fstatfs(fd: c_int, buf: Buf) -> c_int = Statfs, Fd(fd), MD, NO, NONE;
            fstatfs64(fd: c_int, buf: Buf) -> c_int = Statfs, Fd(fd), MD, NO, NONE;
            statvfs(path: Path, buf: Buf) -> c_int = Statfs, Path(path), MD, NO, NONE;
            statvfs64(path: Path, buf: Buf) -> c_int = Statfs, Path(path), MD, NO, NONE;
            fstatvfs(fd: c_int, buf: Buf) -> c_int = Statfs, Fd(fd), MD, NO, NONE;
            fstatvfs64(fd: c_int, buf: Buf) -> c_int = Statfs, Fd(fd), MD, NO, NONE;
            // ---- sync -------------------------------------------------------------------------
            fsync(fd: c_int) -> c_int = Sync, Fd(fd), MD, NO, NONE;
            fdatasync(fd: c_int) -> c_int = Sync, Fd(fd), MD, NO, NONE;
            sync() -> () = Sync, Path(c".".as_ptr()), MD, NO, NONE;
            syncfs(fd: c_int) -> c_int = Sync, Fd(fd), MD, NO, NONE;
            sync_file_range(fd: c_int, off: Off, len: Off, flags: c_uint) -> c_int = Sync, Fd(fd), MD, NO, NONE;
            // ---- xattr ------------------------------------------------------------------------
            getxattr(path: Path, name: Path, value: Buf, len: usize) -> isize = Getxattr, Path(path), MD, NO, NONE;
            lgetxattr(path: Path, name: Path, value: Buf, len: usize) -> isize = Getxattr, Path(path), MD, NO, NONE;
            fgetxattr(fd: c_int, name: Path, value: Buf, len: usize) -> isize = Getxattr, Fd(fd), MD, NO, NONE;
            setxattr(path: Path, name: Path, value: CBuf, len: usize, flags: c_int) -> c_int = Setxattr, Path(path), MD, NO, NONE;
            lsetxattr(path: Path, name: Path, value: CBuf, len: usize, flags: c_int) -> c_int = Setxattr, Path(path), MD, NO, NONE;
            fsetxattr(fd: c_int, name: Path, value: CBuf, len: usize, flags: c_int) -> c_int = Setxattr, Fd(fd), MD, NO, NONE;
            listxattr(path: Path, list: *mut c_char, len: usize) -> isize = Listxattr, Path(path), MD, NO, NONE;
            llistxattr(path: Path, list: *mut c_char, len: usize) -> isize = Listxattr, Path(path), MD, NO, NONE;
            flistxattr(fd: c_int, list: *mut c_char, len: usize) -> isize = Listxattr, Fd(fd), MD, NO, NONE;
            removexattr(path: Path, name: Path) -> c_int = Removexattr, Path(path), MD, NO, NONE;
            lremovexattr(path: Path, name: Path) -> c_int = Removexattr, Path(path), MD, NO, NONE;
            fremovexattr(fd: c_int, name: Path) -> c_int = Removexattr, Fd(fd), MD, NO, NONE;
            // ---- read -------------------------------------------------------------------------
            read(fd: c_int, buf: Buf, n: usize) -> isize = Read, Fd(fd), UpTo(n as u64), Moved::Ret, NONE;
            pread(fd: c_int, buf: Buf, n: usize, off: Off) -> isize = Read, Fd(fd), UpTo(n as u64), Moved::Ret, NONE;
            pread64(fd: c_int, buf: Buf, n: usize, off: Off) -> isize = Read, Fd(fd), UpTo(n as u64), Moved::Ret, NONE;
            readv(fd: c_int, iov: Iov, cnt: c_int) -> isize = Read, Fd(fd), UpTo(iov_len(iov, cnt)), Moved::Ret, NONE;
            preadv(fd: c_int, iov: Iov, cnt: c_int, off: Off) -> isize = Read, Fd(fd), UpTo(iov_len(iov, cnt)), Moved::Ret, NONE;
            preadv64(fd: c_int, iov: Iov, cnt: c_int, off: Off) -> isize = Read, Fd(fd), UpTo(iov_len(iov, cnt)), Moved::Ret, NONE;
            preadv2(fd: c_int, iov: Iov, cnt: c_int, off: Off, flags: c_int) -> isize = Read, Fd(fd), UpTo(iov_len(iov, cnt)), Moved::Ret, NONE;
            preadv64v2(fd: c_int, iov: Iov, cnt: c_int, off: Off, flags: c_int) -> isize = Read, Fd(fd), UpTo(iov_len(iov, cnt)), Moved::Ret, NONE;
            __read_chk(fd: c_int, buf: Buf, n: usize, buflen: usize) -> isize = Read, Fd(fd), UpTo(n as u64), Moved::Ret, NONE;
            __pread_chk(fd: c_int, buf: Buf, n: usize, off: Off, buflen: usize) -> isize = Read, Fd(fd), UpTo(n as u64), Moved::Ret, NONE;
            __pread64_chk(fd: c_int, buf: Buf, n: usize, off: Off, buflen: usize) -> isize = Read, Fd(fd), UpTo(n as u64), Moved::Ret, NONE;
            fread(ptr: Buf, size: usize, n: usize, stream: File) -> usize = Read, File(stream), UpTo(size.saturating_mul(n) as u64), Moved::Items(size), NONE;
            fread_unlocked(ptr: Buf, size: usize, n: usize, stream: File) -> usize = Read, File(stream), UpTo(size.saturating_mul(n) as u64), Moved::Items(size), NONE;
            __fread_chk(ptr: Buf, ptrlen: usize, size: usize, n: usize, stream: File) -> usize = Read, File(stream), UpTo(size.saturating_mul(n) as u64), Moved::Items(size), NONE;
            __fread_unlocked_chk(ptr: Buf, ptrlen: usize, size: usize, n: usize, stream: File) -> usize = Read, File(stream), UpTo(size.saturating_mul(n) as u64), Moved::Items(size), NONE;
            fgets(s: *mut c_char, n: c_int, stream: File) -> *mut c_char = Read, File(stream), AfterCall, Moved::Line, NONE;
            fgets_unlocked(s: *mut c_char, n: c_int, stream: File) -> *mut c_char = Read, File(stream), AfterCall, Moved::Line, NONE;
            __fgets_chk(s: *mut c_char, size: usize, n: c_int, stream: File) -> *mut c_char = Read, File(stream), AfterCall, Moved::Line, NONE;
            __fgets_unlocked_chk(s: *mut c_char, size: usize, n: c_int, stream: File) -> *mut c_char = Read, File(stream), AfterCall, Moved::Line, NONE;
            fgetc(stream: File) -> c_int = Read, File(stream), Known(1), Moved::IfOk(1), NONE;
            getline(line: *mut *mut c_char, n: *mut usize, stream: File) -> isize = Read, File(stream), AfterCall, Moved::Ret, NONE;
            getdelim(line: *mut *mut c_char, n: *mut usize, delim: c_int, stream: File) -> isize = Read, File(stream), AfterCall, Moved::Ret, NONE;
            __getdelim(line: *mut *mut c_char, n: *mut usize, delim: c_int, stream: File) -> isize = Read, File(stream), AfterCall, Moved::Ret, NONE;
            fgetc_unlocked(stream: File) -> c_int = Read, File(stream), Known(1), Moved::IfOk(1), NONE;
            getc(stream: File) -> c_int = Read, File(stream), Known(1), Moved::IfOk(1), NONE;
            getc_unlocked(stream: File) -> c_int = Read, File(stream), Known(1), Moved::IfOk(1), NONE;
            _IO_getc(stream: File) -> c_int = Read, File(stream), Known(1), Moved::IfOk(1), NONE;
            getchar() -> c_int = Read, File(stream::input()), Known(1), Moved::IfOk(1), NONE;
            getchar_unlocked() -> c_int = Read, File(stream::input()), Known(1), Moved::IfOk(1), NONE;
            __uflow(stream: File) -> c_int = Read, File(stream), AfterCall, Moved::Refilled(stream), NONE;
            vscanf(fmt: Fmt, ap: VaList) -> c_int = Read, File(stream::input()), AfterCall, Moved::Position(stream::input()), NONE;
            vfscanf(stream: File, fmt: Fmt, ap: VaList) -> c_int = Read, File(stream), AfterCall, Moved::Position(stream), NONE;
            __isoc99_vscanf(fmt: Fmt, ap: VaList) -> c_int = Read, File(stream::input()), AfterCall, Moved::Position(stream::input()), NONE;
            __isoc99_vfscanf(stream: File, fmt: Fmt, ap: VaList) -> c_int = Read, File(stream), AfterCall, Moved::Position(stream), NONE;
            // ---- write ------------------------------------------------------------------------
            write(fd: c_int, buf: CBuf, n: usize) -> isize = Write, Fd(fd), Known(n as u64), Moved::Ret, NONE;
            pwrite(fd: c_int, buf: CBuf, n: usize, off: Off) -> isize = Write, Fd(fd), Known(n as u64), Moved::Ret, NONE;
            pwrite64(fd: c_int, buf: CBuf, n: usize, off: Off) -> isize = Write, Fd(fd), Known(n as u64), Moved::Ret, NONE;
            writev(fd: c_int, iov: Iov, cnt: c_int) -> isize = Write, Fd(fd), Known(iov_len(iov, cnt)), Moved::Ret, NONE;
            pwritev(fd: c_int, iov: Iov, cnt: c_int, off: Off) -> isize = Write, Fd(fd), Known(iov_len(iov, cnt)), Moved::Ret, NONE;
            pwritev64(fd: c_int, iov: Iov, cnt: c_int, off: Off) -> isize = Write, Fd(fd), Known(iov_len(iov, cnt)), Moved::Ret, NONE;
            pwritev2(fd: c_int, iov: Iov, cnt: c_int, off: Off, flags: c_int) -> isize = Write, Fd(fd), Known(iov_len(iov, cnt)), Moved::Ret, NONE;
            pwritev64v2(fd: c_int, iov: Iov, cnt: c_int, off: Off, flags: c_int) -> isize = Write, Fd(fd), Known(iov_len(iov, cnt)), Moved::Ret, NONE;
            fwrite(ptr: CBuf, size: usize, n: usize, stream: File) -> usize = Write, File(stream), Known(size.saturating_mul(n) as u64), Moved::Items(size), NONE;
            fwrite_unlocked(ptr: CBuf, size: usize, n: usize, stream: File) -> usize = Write, File(stream), Known(size.saturating_mul(n) as u64), Moved::Items(size), NONE;
            fputs(s: *const c_char, stream: File) -> c_int = Write, File(stream), Known(c_len(s)), Moved::IfOk(c_len(s)), NONE;
            fputs_unlocked(s: *const c_char, stream: File) -> c_int = Write, File(stream), Known(c_len(s)), Moved::IfOk(c_len(s)), NONE;
            fputc(c: c_int, stream: File) -> c_int = Write, File(stream), Known(1), Moved::IfOk(1), NONE;
            fputc_unlocked(c: c_int, stream: File) -> c_int = Write, File(stream), Known(1), Moved::IfOk(1), NONE;
            putc(c: c_int, stream: File) -> c_int = Write, File(stream), Known(1), Moved::IfOk(1), NONE;
            putc_unlocked(c: c_int, stream: File) -> c_int = Write, File(stream), Known(1), Moved::IfOk(1), NONE;
            _IO_putc(c: c_int, stream: File) -> c_int = Write, File(stream), Known(1), Moved::IfOk(1), NONE;
            putchar(c: c_int) -> c_int = Write, File(stream::out()), Known(1), Moved::IfOk(1), NONE;
            putchar_unlocked(c: c_int) -> c_int = Write, File(stream::out()), Known(1), Moved::IfOk(1), NONE;
            puts(s: *const c_char) -> c_int = Write, File(stream::out()), Known(c_len(s) + 1), Moved::IfOk(c_len(s) + 1), NONE;
            __overflow(stream: File, c: c_int) -> c_int = Write, File(stream), AfterCall, Moved::Flushed(stream, c != libc::EOF), NONE;
            vprintf(fmt: Fmt, ap: VaList) -> c_int = Write, File(stream::out()), AfterCall, Moved::Ret, NONE;
            vfprintf(stream: File, fmt: Fmt, ap: VaList) -> c_int = Write, File(stream), AfterCall, Moved::Ret, NONE;
            vdprintf(fd: c_int, fmt: Fmt, ap: VaList) -> c_int = Write, Fd(fd), AfterCall, Moved::Ret, NONE;
            __vprintf_chk(flag: c_int, fmt: Fmt, ap: VaList) -> c_int = Write, File(stream::out()), AfterCall, Moved::Ret, NONE;
            __vfprintf_chk(stream: File, flag: c_int, fmt: Fmt, ap: VaList) -> c_int = Write, File(stream), AfterCall, Moved::Ret, NONE;
            __vdprintf_chk(fd: c_int, flag: c_int, fmt: Fmt, ap: VaList) -> c_int = Write, Fd(fd), AfterCall, Moved::Ret, NONE;
            sendfile(out: c_int, input: c_int, off: *mut Off, n: usize) -> isize = Write, Copy(input, out), UpTo(n as u64), Moved::Ret, NONE;
            sendfile64(out: c_int, input: c_int, off: *mut Off, n: usize) -> isize = Write, Copy(input, out), UpTo(n as u64), Moved::Ret, NONE;
            copy_file_range(input: c_int, off_in: *mut Off, out: c_int, off_out: *mut Off, n: usize, flags: c_uint) -> isize = Write, Copy(input, out), UpTo(n as u64), Moved::Ret, NONE;
            // ---- allocate, mmap ---------------------------------------------------------------
            fallocate(fd: c_int, mode: c_int, off: Off, len: Off) -> c_int = Allocate, Fd(fd), Known(len.max(0) as u64), Moved::IfOk(len.max(0) as u64), NONE;
            fallocate64(fd: c_int, mode: c_int, off: Off, len: Off) -> c_int = Allocate, Fd(fd), Known(len.max(0) as u64), Moved::IfOk(len.max(0) as u64), NONE;
            posix_fallocate(fd: c_int, off: Off, len: Off) -> c_int = Allocate, Fd(fd), Known(len.max(0) as u64), Moved::IfZero(len.max(0) as u64), NONE;
            posix_fallocate64(fd: c_int, off: Off, len: Off) -> c_int = Allocate, Fd(fd), Known(len.max(0) as u64), Moved::IfZero(len.max(0) as u64), NONE;
            mmap(addr: Buf, len: usize, prot: c_int, flags: c_int, fd: c_int, off: Off) -> *mut c_void = Mmap, Fd(if flags & libc::MAP_ANONYMOUS != 0 { -1 } else { fd }), Known(len as u64), Moved::IfOk(len as u64), NONE;
            mmap64(addr: Buf, len: usize, prot: c_int, flags: c_int, fd: c_int, off: Off) -> *mut c_void = Mmap, Fd(if flags & libc::MAP_ANONYMOUS != 0 { -1 } else { fd }), Known(len as u64), Moved::IfOk(len as u64), NONE;
            // ---- bookkeeping: tracked, never held ---------------------------------------------
            dup(fd: c_int) -> c_int = Bookkeeping, Nothing, MD, NO, Effect::Dup(fd);
            dup2(fd: c_int, to: c_int) -> c_int = Bookkeeping, Nothing, MD, NO, Effect::Dup(fd);
            dup3(fd: c_int, to: c_int, flags: c_int) -> c_int = Bookkeeping, Nothing, MD, NO, Effect::Dup(fd);
            fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int = Bookkeeping, Nothing, MD, NO, fcntl_effect(fd, cmd);
            fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int = Bookkeeping, Nothing, MD, NO, fcntl_effect(fd, cmd);
            chdir(path: Path) -> c_int = Bookkeeping, Nothing, MD, NO, Effect::Chdir;
            fchdir(fd: c_int) -> c_int = Bookkeeping, Nothing, MD, NO, Effect::Fchdir;
            fileno(stream: File) -> c_int = Bookkeeping, Nothing, MD, NO, NONE;
            dirfd(dir: Dir) -> c_int = Bookkeeping, Nothing, MD, NO, NONE;
        }
    };
}

pub(crate) use symbols;
