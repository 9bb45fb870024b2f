//! stdio streams as the stage sees them: the descriptor under a `FILE*`, what its buffer
//! holds, and the program's standard streams.
//!
//! glibc's `FILE` layout is part of its ABI (`bits/types/struct_FILE.h`); the stage reads
//! it (the descriptor through [`probe::stream_fd`], the buffer through the C shim), so
//! that a stream call learns its descriptor without calling `fileno` (and guarding errno
//! around it).

use std::ffi::{c_int, c_void};

use crate::memory::probe;
use crate::real::Slot;
use crate::sys;

unsafe extern "C" {
    fn sluice_file_pending(f: *const c_void) -> usize;
    fn sluice_file_unread(f: *const c_void) -> usize;
    fn sluice_file_position(f: *const c_void) -> i64;
    fn sluice_file_seek_is_invisible(f: *const c_void) -> c_int;
    static mut stdin: *mut c_void;
    static mut stdout: *mut c_void;
}

/// The descriptor under `f`, or `None` for a stream with no descriptor (`fmemopen`,
/// `open_memstream`, `fopencookie`) or one the stage cannot read (null, or an address the
/// application should not have passed: [`probe::stream_fd`]).
#[inline(always)]
pub fn fd(f: *mut c_void) -> Option<c_int> {
    probe::stream_fd(f).ok().flatten()
}

/// Bytes written into `f`'s buffer and not yet passed to the kernel.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn pending(f: *mut c_void) -> u64 {
    // SAFETY: as in `fd`; only called on streams `fd` found a descriptor under.
    unsafe { sluice_file_pending(f) as u64 }
}

/// Bytes read into `f`'s buffer and not yet consumed.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn unread(f: *mut c_void) -> u64 {
    // SAFETY: as in `pending`.
    unsafe { sluice_file_unread(f) as u64 }
}

/// The real `ftello64` and `fseeko64`, for [`position`].
pub static FTELLO: Slot = Slot::new(c"ftello64");
/// See [`FTELLO`].
pub static FSEEKO: Slot = Slot::new(c"fseeko64");

/// `f`'s position, `None` when it has none (a failing stream; a managed one is a file).
///
/// `ftello` costs a system call while glibc does not know the stream's file offset,
/// which is the case from `fopen` until the first seek: two per `fscanf`, which would
/// double its cost. So the first time, when a seek to where the stream stands changes
/// nothing the program can see, the stage makes that seek (`fseeko(f, 0, SEEK_CUR)`):
/// glibc then knows the offset and keeps it through every read, and the position is a
/// subtraction. A stream the seek would disturb (end of file seen, characters pushed
/// back, writes pending, appending, wide) is asked through `ftello` instead.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn position(f: *mut c_void) -> Option<u64> {
    // SAFETY: as in `pending`.
    let known = |f| u64::try_from(unsafe { sluice_file_position(f) }).ok();
    if let Some(p) = known(f) {
        return Some(p);
    }
    // SAFETY: as in `pending`.
    if unsafe { sluice_file_seek_is_invisible(f) } != 0
        && let Some(fseeko) = FSEEKO.get()
    {
        // SAFETY: the slot holds fseeko64, whose signature this is; the stream is the
        // application's. errno is kept: a seek to where the stream stands cannot fail on
        // a file, and the application must not see it if it did.
        sys::keep_errno(|| unsafe {
            std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void, i64, c_int) -> c_int>(
                fseeko,
            )(f, 0, libc::SEEK_CUR)
        });
        if let Some(p) = known(f) {
            return Some(p);
        }
    }
    let ftello = FTELLO.get()?;
    // SAFETY: the slot holds ftello64, whose signature this is. ftello sets errno on
    // failure: the application must not see that.
    let pos = sys::keep_errno(|| unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void) -> i64>(ftello)(f)
    });
    u64::try_from(pos).ok()
}

/// The program's `stdout` as it is now (a program may assign another stream to it).
#[inline(always)]
pub fn out() -> *mut c_void {
    // SAFETY: glibc's variable, read as the real printf would read it.
    unsafe { std::ptr::read_volatile(&raw const stdout) }
}

/// The program's `stdin` as it is now.
#[inline(always)]
pub fn input() -> *mut c_void {
    // SAFETY: as in `out`.
    unsafe { std::ptr::read_volatile(&raw const stdin) }
}
