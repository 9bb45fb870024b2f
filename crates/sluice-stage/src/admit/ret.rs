//! What the stage reads from a real call's result: a new descriptor, a stream, success,
//! and how many bytes moved.

use std::ffi::{CStr, c_char, c_int, c_void};

use crate::memory::probe;
use crate::real::Failure;
use crate::tables::stream;

/// A C return type the stage understands.
pub(crate) trait Ret: Copy + Failure {
    /// The descriptor it stands for, when it is one (`open`, `dup`).
    fn as_fd(self) -> Option<c_int> {
        None
    }
    /// The pointer it is (`fopen`, `opendir`), or null.
    fn as_ptr(self) -> *mut c_void {
        std::ptr::null_mut()
    }
    /// Whether the call succeeded.
    fn ok(self) -> bool;
    /// The non-negative count it carries (bytes for `read`, items for `fread`).
    fn count(self) -> u64 {
        0
    }
}

impl Ret for c_int {
    fn as_fd(self) -> Option<c_int> {
        (self >= 0).then_some(self)
    }
    fn ok(self) -> bool {
        self >= 0
    }
    fn count(self) -> u64 {
        self.max(0) as u64
    }
}

impl Ret for isize {
    fn ok(self) -> bool {
        self >= 0
    }
    fn count(self) -> u64 {
        self.max(0) as u64
    }
}

impl Ret for usize {
    fn ok(self) -> bool {
        self > 0
    }
    fn count(self) -> u64 {
        self as u64
    }
}

impl Ret for () {
    fn ok(self) -> bool {
        true
    }
}

impl<T> Ret for *mut T {
    fn as_ptr(self) -> *mut c_void {
        self.cast()
    }
    fn ok(self) -> bool {
        !self.is_null()
    }
}

/// How many bytes a call moved, read from its result.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Moved {
    /// None: metadata calls.
    Nothing,
    /// The result is the byte count (`read`, `write`).
    Ret,
    /// The result counts items of this many bytes (`fread`, `fwrite`).
    Items(usize),
    /// This many bytes when the call succeeded (`fputs`, `fputc`).
    IfOk(u64),
    /// This many bytes when the call returned 0 (`posix_fallocate`, which returns an
    /// error number rather than -1).
    IfZero(u64),
    /// The length of the string the call returned (`fgets`).
    Line,
    /// How far the call moved this stream's position (`fscanf`, whose result counts the
    /// items it converted, not the bytes it consumed).
    Position(*mut c_void),
    /// What the call passed from this stream's buffer to the kernel (`__overflow`, which
    /// a put inlined in the program calls when the buffer is full); `true` when it was
    /// also given a character to put (not EOF, a flush only).
    Flushed(*mut c_void, bool),
    /// What the call read from the kernel into this stream's buffer (`__uflow`, which a
    /// get inlined in the program calls when the buffer is empty).
    Refilled(*mut c_void),
}

impl Moved {
    /// What must be known before the call to work out what it moved: the stream's
    /// position, or what its buffer holds; 0 for the others.
    #[inline]
    pub(crate) fn before(self) -> u64 {
        match self {
            Moved::Position(f) => stream::position(f).unwrap_or(u64::MAX),
            Moved::Flushed(f, _) => stream::pending(f),
            Moved::Refilled(f) => stream::unread(f),
            _ => 0,
        }
    }

    /// The bytes `ret` says were moved; `before` is what [`Moved::before`] returned.
    #[inline]
    pub(crate) fn of<R: Ret>(self, ret: R, before: u64) -> u64 {
        match self {
            Moved::Nothing => 0,
            Moved::Ret => ret.count(),
            Moved::Items(size) => ret.count() * size as u64,
            Moved::IfOk(n) if ret.ok() => n,
            Moved::IfOk(_) => 0,
            Moved::IfZero(n) if ret.count() == 0 && ret.ok() => n,
            Moved::IfZero(_) => 0,
            Moved::Line => match ret.as_ptr() {
                p if p.is_null() => 0,
                // SAFETY: fgets returns the caller's buffer, NUL-terminated, on success.
                p => unsafe { CStr::from_ptr(p as *const c_char) }
                    .to_bytes()
                    .len() as u64,
            },
            Moved::Position(_) if before == u64::MAX => 0,
            Moved::Position(f) => {
                stream::position(f).map_or(0, |after| after.saturating_sub(before))
            }
            // The buffer held `before`, took the character if the call succeeded, and
            // holds what was not written.
            Moved::Flushed(f, put) => {
                (before + (put && ret.ok()) as u64).saturating_sub(stream::pending(f))
            }
            // The call returned one character and left the rest of what it read.
            Moved::Refilled(f) if ret.ok() => (stream::unread(f) + 1).saturating_sub(before),
            Moved::Refilled(_) => 0,
        }
    }
}

/// The length of a C string (`fputs`), 0 for one the stage cannot read: libc then faults
/// on it as it would without the stage.
pub(crate) fn c_len(s: *const c_char) -> u64 {
    probe::scan(s).map_or(0, |scan| scan.len as u64)
}
