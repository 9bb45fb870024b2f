//! The system calls a supervised program's file calls are made of, and how each names its
//! target: the one table both the seccomp filter (which calls to send) and the supervisor
//! (how to judge one) read.

use sluice_core::op::Op;

/// How a system call names its target, by argument position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    /// A path in argument `n`, relative to the current directory.
    Path(usize),
    /// A directory descriptor in argument `d` and a path in argument `p` (`*at` calls);
    /// an empty path with `AT_EMPTY_PATH`, or a null one (`utimensat`), names the
    /// descriptor itself.
    At(usize, usize),
    /// An open descriptor in argument `n` (`read`, `write`, `fstat`, `getdents64`): judged
    /// by the path its file was opened at, as the process's descriptor table names it
    /// when the call stops.
    Fd(usize),
}

/// How many bytes a call moves, by argument position, as far as is known before it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moves {
    /// None: a metadata call.
    Nothing,
    /// The count in argument `n` (`read`, `write`, `pread64`, `pwrite64`).
    Count(usize),
    /// The sum of the lengths of the `iovec` array in argument `iov` of `cnt` entries in
    /// argument `cnt` (`readv`, `writev` and their positioned forms).
    Iov(usize, usize),
}

/// One system call the supervisor judges.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    /// Its number on x86_64.
    pub nr: i64,
    /// The operation it is counted and held as.
    pub op: Op,
    /// Its target.
    pub named: Named,
    /// The bytes it moves.
    pub moves: Moves,
}

macro_rules! calls {
    ($($sys:ident => $op:ident, $named:expr $(, $moves:expr)?;)*) => {
        /// Every system call sent to the supervisor. Two-path calls are judged by their
        /// first path and `symlink` by the link it creates, as the stage judges them; a
        /// data call is charged the bytes it asks to move, as the stage charges a `write`.
        pub const CALLS: &[Call] = &[$(Call {
            nr: libc::$sys,
            op: Op::$op,
            named: $named,
            moves: calls!(@moves $($moves)?),
        }),*];
    };
    (@moves) => { Moves::Nothing };
    (@moves $moves:expr) => { $moves };
}

use Moves::{Count, Iov};
use Named::{At, Fd, Path};

calls! {
    SYS_open => Open, Path(0);
    SYS_creat => Open, Path(0);
    SYS_openat => Open, At(0, 1);
    SYS_openat2 => Open, At(0, 1);
    SYS_stat => Getattr, Path(0);
    SYS_lstat => Getattr, Path(0);
    SYS_newfstatat => Getattr, At(0, 1);
    SYS_statx => Getattr, At(0, 1);
    SYS_access => Access, Path(0);
    SYS_faccessat => Access, At(0, 1);
    SYS_faccessat2 => Access, At(0, 1);
    SYS_chmod => Setattr, Path(0);
    SYS_fchmodat => Setattr, At(0, 1);
    SYS_chown => Setattr, Path(0);
    SYS_lchown => Setattr, Path(0);
    SYS_fchownat => Setattr, At(0, 1);
    SYS_truncate => Setattr, Path(0);
    SYS_utime => Setattr, Path(0);
    SYS_utimes => Setattr, Path(0);
    SYS_utimensat => Setattr, At(0, 1);
    SYS_rename => Rename, Path(0);
    SYS_renameat => Rename, At(0, 1);
    SYS_renameat2 => Rename, At(0, 1);
    SYS_link => Link, Path(0);
    SYS_linkat => Link, At(0, 1);
    SYS_symlink => Symlink, Path(1);
    SYS_symlinkat => Symlink, At(1, 2);
    SYS_readlink => Readlink, Path(0);
    SYS_readlinkat => Readlink, At(0, 1);
    SYS_unlink => Unlink, Path(0);
    SYS_unlinkat => Unlink, At(0, 1);
    SYS_rmdir => Rmdir, Path(0);
    SYS_mkdir => Mkdir, Path(0);
    SYS_mkdirat => Mkdir, At(0, 1);
    SYS_mknod => Mknod, Path(0);
    SYS_mknodat => Mknod, At(0, 1);
    SYS_statfs => Statfs, Path(0);
    SYS_getxattr => Getxattr, Path(0);
    SYS_lgetxattr => Getxattr, Path(0);
    SYS_setxattr => Setxattr, Path(0);
    SYS_lsetxattr => Setxattr, Path(0);
    SYS_listxattr => Listxattr, Path(0);
    SYS_llistxattr => Listxattr, Path(0);
    SYS_removexattr => Removexattr, Path(0);
    SYS_lremovexattr => Removexattr, Path(0);
    SYS_fstat => Getattr, Fd(0);
    SYS_getdents64 => Readdir, Fd(0);
    SYS_read => Read, Fd(0), Count(2);
    SYS_pread64 => Read, Fd(0), Count(2);
    SYS_readv => Read, Fd(0), Iov(1, 2);
    SYS_preadv => Read, Fd(0), Iov(1, 2);
    SYS_preadv2 => Read, Fd(0), Iov(1, 2);
    SYS_write => Write, Fd(0), Count(2);
    SYS_pwrite64 => Write, Fd(0), Count(2);
    SYS_writev => Write, Fd(0), Iov(1, 2);
    SYS_pwritev => Write, Fd(0), Iov(1, 2);
    SYS_pwritev2 => Write, Fd(0), Iov(1, 2);
}

/// The row of system call `nr`, and the operation it is for these arguments
/// (`unlinkat` with `AT_REMOVEDIR` removes a directory).
pub fn call_of(nr: i64, args: &[u64; 6]) -> Option<(Op, Named, Moves)> {
    let call = CALLS.iter().find(|c| c.nr == nr)?;
    let op = match call.op {
        Op::Unlink if nr == libc::SYS_unlinkat && args[2] as i32 & libc::AT_REMOVEDIR != 0 => {
            Op::Rmdir
        }
        op => op,
    };
    Some((op, call.named, call.moves))
}
