//! The hooks, expanded from the table of symbols ([`crate::symbols`]), with the names
//! its rows use.

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void};

use sluice_core::gate::Size::{AfterCall, Known, UpTo};

use super::effect::{Effect, close_range_effect, fcntl_effect, open_mode};
use super::fallback;
use super::{hooks, op_of, pick_call, pick_fallback};
use crate::admit::{Moved, c_len};
use crate::memory::probe::iov_len;
use crate::tables::stream;

type File = *mut c_void;
type Dir = *mut c_void;
type Path = *const c_char;
type Buf = *mut c_void;
type CBuf = *const c_void;
type Iov = *const libc::iovec;
type Off = i64;
type Fmt = *const c_char;
/// A `va_list` argument. On x86_64 it is an array and decays to a pointer; on aarch64 it
/// is a 32-byte struct, which the procedure call standard passes by reference. Either way
/// one pointer-sized argument, passed on unchanged.
type VaList = *mut c_void;

const MD: sluice_core::gate::Size = Known(0);
const NO: Moved = Moved::Nothing;
const NONE: Effect = Effect::None;

crate::symbols::symbols!(hooks);
