//! The hooks: every symbol of the table ([`crate::symbols`]) expanded by
//! [`hooks!`](crate::hooks) into an exported function, plus the list `docs/operations.md`
//! is generated from.
//!
//! Every hook is the same pipeline, written once here; what differs between symbols
//! (operation, how the target is named, the size, what the call does to the descriptor
//! table) is data in the table row:
//!
//! 1. [`intercept`]: where does the target lie, at a glance ([`locate::glance`])?
//!    Unmanaged: counted under the guard, the real call made, its effect recorded.
//! 2. In a managed place: [`lane_or_judge`], the managed lane ([`admit::lane`]).
//! 3. Everything else: [`judge`], the full lookup ([`Target::resolve`]), then under the
//!    guard admission ([`admit::held`]) or the unmanaged count, the real call, the effect.
//!
//! Steps 2 and 3 are out of line in each hook (its `managed` and `judged`), so that the
//! unmanaged fast path reserves no frame for them: an unmanaged `stat` saves only the
//! registers that live across the probe's call.

mod effect;
// In unit tests the hooks are not exported, so nothing calls them or their helpers.
#[cfg_attr(test, allow(dead_code))]
mod fallback;
#[cfg_attr(test, allow(dead_code))]
mod table;

use std::ffi::{c_int, c_void};

use sluice_core::gate::{Gate, Size};
use sluice_core::op::Op;
use sluice_core::path::PlaceIdx;

pub(crate) use effect::Effect;
#[cfg(test)]
pub(crate) use table::{SYMBOLS, VARIADIC};
pub(crate) use table::{resolve_all, slot_named};

use crate::admit::{self, Moved, Ret};
use crate::guard::Guard;
use crate::locate::{self, Located, Target};
use crate::real::Slot;
use crate::state::State;
use crate::tables::fdtable::Entry;

/// One intercepted symbol, for the operations table in the docs.
#[cfg(test)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Symbol {
    /// The libc symbol.
    pub(crate) name: &'static str,
    /// The operation it is counted and held as; `None` for bookkeeping symbols.
    pub(crate) op: Option<Op>,
    /// How its target is named (Path, At, Fd, File, Dir, Copy, Nothing).
    pub(crate) target: &'static str,
    /// Its size expression as written in the table (`Known(…)`, `UpTo(…)`, `AfterCall`,
    /// or `MD` for metadata): when a bytes rule charges it.
    pub(crate) size: &'static str,
}

/// The entry of every hook. The common case of a program reading its libraries, inputs
/// and /proc while only a scratch file system is managed (a call on a target a glance
/// finds unmanaged, whose effect needs nothing more than the glance's answer) is counted
/// and passed on in a few dozen instructions; a call a glance places in a managed place
/// goes to `managed` ([`lane_or_judge`]); everything else to `judged` ([`judge`]), both
/// on the same arguments.
#[inline(always)]
pub(crate) fn intercept<R: Ret>(
    op: Option<Op>,
    target: Target,
    effect: Effect,
    slot: &Slot,
    call: impl FnOnce(*mut c_void) -> R,
    managed: impl FnOnce(PlaceIdx) -> R,
    judged: impl FnOnce() -> R,
) -> R {
    if op.is_some()
        && effect.recorded_at_a_glance(target)
        && let Some(st) = State::get()
        && let Some(real_at) = slot.resolved()
    {
        match locate::glance(st, target) {
            Located::Unmanaged(entry) if Guard::count_unmanaged_if_warm() => {
                // Nothing is left to hold on an unmanaged target: the real function is
                // made outside the guard. Not as a tail call, which `black_box` keeps the
                // compiler from making: the tail call cost about twice the plain call's
                // overhead, and holding the guard across the call more still
                // (tests/bench/stages.sh compares such builds).
                effect.before();
                let ret = call(real_at);
                effect.after(st, ret, Some(entry));
                return std::hint::black_box(ret);
            }
            Located::Managed(place) => return managed(place),
            _ => {}
        }
    }
    judged()
}

/// A call [`intercept`] placed in managed place `place`: admitted and counted by the
/// managed lane ([`admit::lane`]) when it moves no bytes (`moves_nothing`) and the lane
/// takes it, then made with nothing left to do but record its effect; else `judged`. Out
/// of line in each hook (`managed`), so that the registers the lane needs are saved on
/// its way only, not at every hook's entry.
#[inline(always)]
pub(crate) fn lane_or_judge<R: Ret>(
    op: Option<Op>,
    place: PlaceIdx,
    effect: Effect,
    moves_nothing: bool,
    slot: &Slot,
    call: impl FnOnce(*mut c_void) -> R,
    judged: impl FnOnce() -> R,
) -> R {
    if moves_nothing
        && let Some(op) = op
        && let Some(st) = State::get()
        && let Some(real_at) = slot.resolved()
        && let Some(entry) = admit::lane(st, op, place)
    {
        effect.before();
        let ret = call(real_at);
        effect.after(st, ret, Some(entry));
        return ret;
    }
    judged()
}

/// The path of every intercepted call past [`intercept`]'s fast path. Before the stage is
/// ready it is a plain call of the real function. Otherwise the target is located in full
/// (pure reads; the lazy /proc lookup uses raw system calls), and under the guard the call
/// is admitted if managed, made, and counted in this thread's own counters. A call the
/// stage makes itself, or one from a signal handler that interrupted a hook, passes
/// straight through uncounted. The call's effect on descriptors is recorded in every case.
/// Nothing here sets errno except inside `keep_errno`, so the application sees exactly the
/// errno of its real call.
///
/// What a call costs and what it moved are worked out only for managed calls (`size` and
/// `moved` are closures): an unmanaged `fputs` or `writev` measures nothing.
#[inline(always)]
pub(crate) fn judge<R: Ret>(
    op: Option<Op>,
    target: Target,
    size: impl FnOnce() -> Size,
    moved: impl FnOnce() -> Moved,
    effect: Effect,
    real: impl FnOnce() -> R,
) -> R {
    let Some(st) = State::get() else {
        let _guard = Guard::enter();
        return real();
    };
    if let Target::Copy(from, _) = target {
        return admit::copy(st, from, target, size, real);
    }
    let Ok(entry) = target.resolve(st, effect.remembers()) else {
        return unjudged(st, effect, real);
    };
    effect.before();
    let ret = match (op, entry) {
        (Some(op), Some(entry)) => match Guard::enter() {
            Some(mut guard) => match entry {
                Entry::File { place, .. } if st.places().is_managed(place) => {
                    admit::held(st, guard.thread_state(), op, place, size, moved, real)
                }
                _ => {
                    guard.count_unmanaged(st.segment);
                    real()
                }
            },
            None => real(),
        },
        _ => real(),
    };
    effect.after(st, ret, entry);
    ret
}

/// A call whose target the stage cannot read (a path or a stream at an address the
/// kernel or libc refuses): made as it is, its effect recorded as of nothing, counted
/// apart from the judged ones. Out of line: a call that fails with EFAULT, or faults in
/// libc as it would without the stage.
#[cold]
#[inline(never)]
fn unjudged<R: Ret>(st: &State, effect: Effect, real: impl FnOnce() -> R) -> R {
    if let Some(mut guard) = Guard::enter() {
        Gate::count_unjudged(st.segment, guard.thread_state());
    }
    effect.before();
    let ret = real();
    effect.after(st, ret, None);
    ret
}

unsafe extern "C" {
    /// The name of the shim's `i`-th real v-variant, null past the last (shim.c).
    fn sluice_shim_real_name(i: usize) -> *const std::ffi::c_char;
    /// Gives the shim the address of its `i`-th real v-variant (shim.c).
    fn sluice_shim_set_real(i: usize, p: *mut std::ffi::c_void);
    /// Whether every real v-variant of the shim is set (shim.c).
    fn sluice_shim_reals_set() -> c_int;
}

/// Gives the shim's variadic entry points the real v-variants they call on unmanaged
/// targets, from the slots `resolve_all` filled (one symbol, one resolution). Whether the
/// shim has them all: when one is missing, the fast path must stay closed.
pub(crate) fn publish_shim_reals() -> bool {
    for i in 0.. {
        // SAFETY: the shim's function has no preconditions.
        let name = unsafe { sluice_shim_real_name(i) };
        if name.is_null() {
            break;
        }
        // SAFETY: a non-null name is one of the shim's string literals.
        let name = unsafe { std::ffi::CStr::from_ptr(name) };
        if let Some(p) = slot_named(name.to_bytes()).and_then(|s| s.get()) {
            // SAFETY: the real symbol of that name, whose signature the shim declares.
            unsafe { sluice_shim_set_real(i, p) };
        }
    }
    // SAFETY: the shim's function has no preconditions.
    unsafe { sluice_shim_reals_set() != 0 }
}

/// Expands the table of symbols into the exported hooks and (in tests) `SYMBOLS`.
///
/// A row: `name(args) -> ret = Op, Target(args), size, moved, effect[, call(args)][, else
/// fallback];` where `Op` is `Bookkeeping` for symbols that are tracked but never counted,
/// `call(…)` overrides the arguments passed to the real function and `else` names what to
/// call when this libc does not export the symbol. The rows follow a `variadic { name =>
/// via, … }` list: C-variadic symbols the shim defines, each calling the hook of `via`.
macro_rules! hooks {
    (variadic { $( $vname:ident => $via:ident ),* $(,)? } $(
        $name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty
            = $op:ident, $tkind:ident $( ( $($targ:expr),* ) )?, $size:expr, $moved:expr, $effect:expr
            $(, call ( $($carg:expr),* ) )?
            $(, else $fb:path )? ;
    )*) => {
        /// Resolves every real symbol now, so that no hook calls `dlsym` later (it may
        /// allocate and open files while the application is in a hook).
        pub(crate) fn resolve_all() {
            $( $crate::hot::HOT.slots.$name.get(); )*
            $crate::tables::stream::FTELLO.get();
            $crate::tables::stream::FSEEKO.get();
        }

        /// The slot of the real symbol `name`, if the table hooks it.
        pub(crate) fn slot_named(name: &[u8]) -> Option<&'static $crate::real::Slot> {
            $( if name == stringify!($name).as_bytes() { return Some(&$crate::hot::HOT.slots.$name); } )*
            None
        }

        /// The C-variadic symbols `shim.c` defines, each with the hook it calls.
        #[cfg(test)]
        pub(crate) const VARIADIC: &[(&str, &str)] = &[ $( (stringify!($vname), stringify!($via)) ),* ];

        /// Every intercepted symbol, in table order.
        #[cfg(test)]
        pub(crate) const SYMBOLS: &[$crate::hooks::Symbol] = &[
            $( $crate::hooks::Symbol { name: stringify!($name), op: op_of!($op), target: stringify!($tkind), size: stringify!($size) }, )*
        ];

        $(
            #[doc = concat!("Interposes `", stringify!($name), "`.")]
            ///
            /// # Safety
            /// The C function's contract.
            #[cfg_attr(not(test), unsafe(no_mangle))]
            #[allow(non_snake_case)] // glibc's own names: _IO_getc, _IO_putc
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                /// The real function at `real_at`, on the application's arguments.
                #[inline(always)]
                fn call(real_at: *mut ::std::ffi::c_void, $($arg: $ty),*) -> $ret {
                    // SAFETY: the address of this very symbol, whose C signature this is
                    // (variadic tails passed as one fixed argument).
                    let f = unsafe { ::std::mem::transmute::<*mut ::std::ffi::c_void, unsafe extern "C" fn($($ty),*) -> $ret>(real_at) };
                    // SAFETY: the application's own arguments, passed on.
                    unsafe { pick_call!(f, [$($($carg),*)?], [$($arg),*]) }
                }
                /// The real function, or its fallback when this libc lacks it.
                #[inline(always)]
                fn real($($arg: $ty),*) -> $ret {
                    match $crate::hot::HOT.slots.$name.get() {
                        Some(real_at) => call(real_at, $($arg),*),
                        None => pick_fallback!([$($fb)?], [$($arg),*]),
                    }
                }
                /// The call judged in full, out of line (see `intercept`).
                #[inline(never)]
                fn judged($($arg: $ty),*) -> $ret {
                    $crate::hooks::judge(op_of!($op), $crate::locate::Target::$tkind $( ( $($targ),* ) )?, move || $size, move || $moved, $effect, move || real($($arg),*))
                }
                /// A call `intercept` placed in a managed place, out of line (see
                /// `lane_or_judge`).
                #[inline(never)]
                fn managed(place: ::sluice_core::path::PlaceIdx, $($arg: $ty),*) -> $ret {
                    $crate::hooks::lane_or_judge(op_of!($op), place, $effect, matches!($moved, $crate::admit::Moved::Nothing), &$crate::hot::HOT.slots.$name, move |real_at| call(real_at, $($arg),*), move || judged($($arg),*))
                }
                $crate::hooks::intercept(op_of!($op), $crate::locate::Target::$tkind $( ( $($targ),* ) )?, $effect, &$crate::hot::HOT.slots.$name, move |real_at| call(real_at, $($arg),*), move |place| managed(place, $($arg),*), move || judged($($arg),*))
            }
        )*
    };
}

macro_rules! op_of {
    (Bookkeeping) => {
        None
    };
    ($op:ident) => {
        Some(::sluice_core::op::Op::$op)
    };
}

macro_rules! pick_call {
    ($f:ident, [], [$($arg:expr),*]) => { $f($($arg),*) };
    ($f:ident, [$($carg:expr),+], [$($arg:expr),*]) => { $f($($carg),+) };
}

macro_rules! pick_fallback {
    ([], [$($arg:expr),*]) => { $crate::real::missing() };
    // SAFETY: a fallback has the hook's own signature and contract.
    ([$fb:path], [$($arg:expr),*]) => { unsafe { $fb($($arg),*) } };
}

pub(crate) use {hooks, op_of, pick_call, pick_fallback};
