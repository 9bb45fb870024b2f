//! The hooks: one table (in [`table`]) of every intercepted symbol, expanded by
//! [`hooks!`](crate::hooks) into the exported functions, their real-symbol slots and the
//! list `docs/operations.md` is generated from.
//!
//! A hook body is the same five steps for every symbol (guard, classify, admit, call,
//! count), written once in [`judge`], behind a fast path for unmanaged targets in
//! [`intercept`] and one for the common managed call in [`lane_or_judge`] (the managed
//! lane, [`lane`]); what differs between symbols (operation, how the target is named, the
//! size, what the call does to the descriptor table) is data in the table row.

mod effect;
mod lane;
// In unit tests the hooks are not exported, so nothing calls them or their helpers.
#[cfg_attr(test, allow(dead_code))]
mod fallback;
mod ret;
#[cfg_attr(test, allow(dead_code))]
mod table;

use std::ffi::{c_int, c_void};

use sluice_core::gate::{Gate, Size};
use sluice_core::op::Op;
use sluice_core::path::PlaceIdx;

pub use effect::Effect;
pub use ret::{Moved, Ret};
pub use table::{SYMBOLS, Slots, VARIADIC, resolve_all, slot_named};

use crate::fdtable;
use crate::fdtable::Entry;
use crate::guard::Guard;
use crate::real::Slot;
use crate::state::{State, SysClock};
use crate::target::{self, Seen, Target, fd_entry};

/// One intercepted symbol, for the operations table in the docs.
#[derive(Clone, Copy, Debug)]
pub struct Symbol {
    /// The libc symbol.
    pub name: &'static str,
    /// The operation it is counted and held as; `None` for bookkeeping symbols.
    pub op: Option<Op>,
    /// How its target is named (Path, At, Fd, File, Dir, Copy, Nothing).
    pub target: &'static str,
    /// Its size expression as written in the table (`Known(…)`, `UpTo(…)`, `AfterCall`,
    /// or `MD` for metadata): when a bytes rule charges it.
    pub size: &'static str,
}

/// The entry of every hook: the common case of a program reading its libraries, inputs
/// and /proc while only a scratch file system is managed (a path-named call that changes
/// no table or only opens, on a path unmanaged at a glance; a call on a descriptor of a
/// pipe, a socket or an unmanaged file) is counted and passed on in a few dozen
/// instructions. A call of those kinds that the glance places in a managed place goes to
/// `managed`, the hook's out-of-line call of [`lane_or_judge`] with that place;
/// everything else to `judged`, its out-of-line call of [`judge`], both on the same
/// arguments. Kept apart so that the fast path reserves no frame for the others: an
/// unmanaged `stat` saves only the registers that live across the probe's call.
#[inline(always)]
pub fn intercept<R: Ret>(
    op: Option<Op>,
    target: Target,
    effect: Effect,
    slot: &Slot,
    call: impl FnOnce(*mut c_void) -> R,
    managed: impl FnOnce(PlaceIdx) -> R,
    judged: impl FnOnce() -> R,
) -> R {
    if op.is_some()
        && glance_applies(target, effect)
        && let Some(st) = State::get()
        && let Some(real_at) = slot.resolved()
    {
        match at_a_glance(st, target) {
            Seen::Unmanaged(entry) if Guard::count_unmanaged_if_warm() => {
                // Nothing is left to hold on an unmanaged target: the real function is
                // made outside the guard. Not as a tail call, which `black_box` keeps the
                // compiler from making: the tail call measured about twice the plain
                // call's cost over native, and holding the guard across the call more
                // still (tests/bench/stages.sh compares such builds).
                effect.before();
                let ret = call(real_at);
                effect.after(st, ret, Some(entry));
                return std::hint::black_box(ret);
            }
            Seen::Managed(place) => return managed(place),
            _ => {}
        }
    }
    judged()
}

/// A call [`intercept`] placed in managed place `place`: admitted and counted by the
/// managed lane ([`lane::admit`]) when it moves no bytes (`moves_nothing`: a `stat`, an
/// `open`, a `close`) and the lane takes it, then made with nothing left to do but record
/// its effect; else `judged`. Out of line in each hook (`managed`), so that the registers
/// the lane needs are saved on its way only, not at every hook's entry: inlined into
/// `intercept`, it made every unmanaged call save them too, and no managed one cheaper.
#[inline(always)]
pub fn lane_or_judge<R: Ret>(
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
        && let Some(entry) = lane::admit(st, op, place)
    {
        effect.before();
        let ret = call(real_at);
        effect.after(st, ret, Some(entry));
        return ret;
    }
    judged()
}

/// Whether the fast path may take a call: one whose target a glance can judge (a path, or
/// a descriptor already in the table), and whose effect it can record without knowing
/// more (a path opened, a descriptor closed, or none).
#[inline(always)]
fn glance_applies(target: Target, effect: Effect) -> bool {
    match target {
        Target::Path(_) | Target::At(libc::AT_FDCWD, _) => matches!(
            effect,
            Effect::None | Effect::OpenFd | Effect::OpenFile | Effect::OpenDir
        ),
        Target::Fd(_) => matches!(effect, Effect::None | Effect::Close(_)),
        _ => false,
    }
}

/// Where the target of a call [`glance_applies`] to lies, at a glance: a path by
/// [`target::path_at_a_glance`], a descriptor by its byte in the table (one the shim's
/// streams already trust).
#[inline(always)]
fn at_a_glance(st: &State, target: Target) -> Seen {
    match target {
        Target::Path(p) | Target::At(libc::AT_FDCWD, p) => target::path_at_a_glance(st, p),
        Target::Fd(fd) => {
            let b = fdtable::byte(fd);
            if fdtable::byte_is_unmanaged(b)
                && let Some(entry) = Entry::decode(b)
            {
                return Seen::Unmanaged(entry);
            }
            match Entry::decode(b) {
                Some(Entry::File { place, .. }) if st.places().is_managed(place) => {
                    Seen::Managed(place)
                }
                _ => Seen::Unknown,
            }
        }
        _ => Seen::Unknown,
    }
}

/// The path of every intercepted call past [`intercept`]'s fast path. Before the stage is
/// ready it is a plain call of the real function. Otherwise the target is classified
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
pub fn judge<R: Ret>(
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
        return copy(st, from, target, size, real);
    }
    let Ok(entry) = target.resolve(st, effect.remembers()) else {
        return unjudged(st, effect, real);
    };
    effect.before();
    let ret = match (op, entry) {
        (Some(op), Some(entry)) => match Guard::enter() {
            Some(mut guard) => {
                let ts = guard.thread_state();
                match entry {
                    Entry::File { place, .. } if st.places().is_managed(place) => {
                        let gate = st.gate();
                        let ticket = gate.admit(ts, &SysClock, op, place, size());
                        let moved = moved();
                        let before = moved.before();
                        let ret = real();
                        gate.finish(ts, &SysClock, ticket, moved.of(ret, before));
                        ret
                    }
                    _ => {
                        guard.count_unmanaged(st.segment);
                        real()
                    }
                }
            }
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
pub fn publish_shim_reals() -> bool {
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

/// `sendfile` and `copy_file_range`: a read of `from` and a write of the destination. Each
/// managed end is admitted and counted (the source as `read`, the destination as
/// `write`), both for the bytes the call moved; a copy between two unmanaged ends is
/// counted once as unmanaged.
#[inline(always)]
fn copy<R: Ret>(
    st: &State,
    from: c_int,
    to: Target,
    size: impl FnOnce() -> Size,
    real: impl FnOnce() -> R,
) -> R {
    let managed = |e: Option<Entry>| match e {
        Some(Entry::File { place, .. }) if st.places().is_managed(place) => Some(place),
        _ => None,
    };
    let ends = [
        (Op::Read, managed(fd_entry(st, from))),
        (Op::Write, managed(to.resolve(st, false).ok().flatten())),
    ];
    let Some(mut guard) = Guard::enter() else {
        return real();
    };
    let gate = st.gate();
    let ts = guard.thread_state();
    if ends.iter().all(|(_, p)| p.is_none()) {
        guard.count_unmanaged(st.segment);
        return real();
    }
    let size = size();
    let tickets = ends.map(|(op, place)| place.map(|p| gate.admit(ts, &SysClock, op, p, size)));
    let ret = real();
    let moved = Moved::Ret.of(ret, 0);
    for ticket in tickets.into_iter().flatten() {
        gate.finish(ts, &SysClock, ticket, moved);
    }
    ret
}

/// Expands the table of hooks into exported functions, real-symbol slots and [`SYMBOLS`].
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
        /// The real symbols, one slot each, resolved at first use; in
        /// [`HOT`]($crate::hot::HOT).
        #[allow(non_snake_case)] // glibc's own names: _IO_getc, __xstat
        pub struct Slots {
            $(
                #[doc = concat!("The real `", stringify!($name), "`.")]
                pub $name: $crate::real::Slot,
            )*
        }

        impl Slots {
            /// Every slot, unresolved: [`HOT`]($crate::hot::HOT)'s, the only one.
            #[allow(clippy::new_without_default)] // a static's initialiser, nothing else
            pub const fn new() -> Self {
                Slots {
                    $(
                        $name: $crate::real::Slot::new(
                            // SAFETY: the literal ends with its only NUL.
                            unsafe { ::std::ffi::CStr::from_bytes_with_nul_unchecked(concat!(stringify!($name), "\0").as_bytes()) },
                        ),
                    )*
                }
            }
        }

        /// Resolves every real symbol now, so that no hook calls `dlsym` later (it may
        /// allocate and open files while the application is in a hook).
        pub fn resolve_all() {
            $( $crate::hot::HOT.slots.$name.get(); )*
            $crate::stream::FTELLO.get();
            $crate::stream::FSEEKO.get();
        }

        /// The slot of the real symbol `name`, if the table hooks it.
        pub fn slot_named(name: &[u8]) -> Option<&'static $crate::real::Slot> {
            $( if name == stringify!($name).as_bytes() { return Some(&$crate::hot::HOT.slots.$name); } )*
            None
        }

        /// The C-variadic symbols `shim.c` defines, each with the hook it calls.
        pub const VARIADIC: &[(&str, &str)] = &[ $( (stringify!($vname), stringify!($via)) ),* ];

        /// Every intercepted symbol, in table order.
        pub const SYMBOLS: &[$crate::hooks::Symbol] = &[
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
                    $crate::hooks::judge(op_of!($op), $crate::target::Target::$tkind $( ( $($targ),* ) )?, move || $size, move || $moved, $effect, move || real($($arg),*))
                }
                /// A call `intercept` placed in a managed place, out of line (see
                /// `lane_or_judge`).
                #[inline(never)]
                fn managed(place: ::sluice_core::path::PlaceIdx, $($arg: $ty),*) -> $ret {
                    $crate::hooks::lane_or_judge(op_of!($op), place, $effect, matches!($moved, $crate::hooks::Moved::Nothing), &$crate::hot::HOT.slots.$name, move |real_at| call(real_at, $($arg),*), move || judged($($arg),*))
                }
                $crate::hooks::intercept(op_of!($op), $crate::target::Target::$tkind $( ( $($targ),* ) )?, $effect, &$crate::hot::HOT.slots.$name, move |real_at| call(real_at, $($arg),*), move |place| managed(place, $($arg),*), move || judged($($arg),*))
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
