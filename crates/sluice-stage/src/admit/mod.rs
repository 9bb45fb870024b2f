//! Admission: a call whose target lies in a managed place waits for its rule's bucket in
//! the job's segment (`sluice_core::gate`), is made, and is counted with what it moved.
//!
//! Two ways in. The managed lane ([`lane`]) takes the common managed call that moves no
//! bytes (a `stat`, an `open`, a `close` on the one file system a job's rules are about),
//! held by one rule or pool that counts calls, on a warm thread whose token batch covers
//! it: admitted and counted at once, with no ticket, no path copy and no walk of the mount
//! table, the thread out of the stage before the real call. Every other managed call is
//! [`held`]: admitted for its size, made, then charged for what it moved.

mod ret;

use std::ffi::c_int;

use sluice_core::gate::{Size, ThreadState};
use sluice_core::op::Op;
use sluice_core::path::PlaceIdx;

pub(crate) use ret::{Moved, Ret, c_len};

use crate::clock::SysClock;
use crate::guard::Guard;
use crate::locate::{Target, fd_entry};
use crate::state::State;
use crate::tables::fdtable::Entry;

/// Admits and counts `op` on a target in managed place `place` (where a glance placed
/// it) when the lane can take it, and says where the target lies; `None`, having counted
/// nothing, when it cannot. The thread leaves the stage before the real call: nothing is
/// left to count after it.
#[inline(always)]
pub(crate) fn lane(st: &'static State, op: Op, place: PlaceIdx) -> Option<Entry> {
    let mut guard = Guard::enter_warm()?;
    let gate = st.gate();
    let lone = gate.compiled.lone_count_channel(op, place)?;
    gate.pass_from_batch(guard.thread_state(), &SysClock, op, lone)
        .then_some(Entry::File {
            place,
            below: false,
        })
}

/// A call on a target in managed place `place`, made by `real` once admitted for `size`,
/// then charged for what it `moved`. The caller holds the guard whose thread state `ts`
/// is.
#[inline(always)]
pub(crate) fn held<R: Ret>(
    st: &State,
    ts: &mut ThreadState,
    op: Op,
    place: PlaceIdx,
    size: impl FnOnce() -> Size,
    moved: impl FnOnce() -> Moved,
    real: impl FnOnce() -> R,
) -> R {
    let gate = st.gate();
    let ticket = gate.admit(ts, &SysClock, op, place, size());
    let moved = moved();
    let before = moved.before();
    let ret = real();
    gate.finish(ts, &SysClock, ticket, moved.of(ret, before));
    ret
}

/// `sendfile` and `copy_file_range`: a read of `from` and a write of the destination. Each
/// managed end is admitted and counted (the source as `read`, the destination as
/// `write`), both for the bytes the call moved; a copy between two unmanaged ends is
/// counted once as unmanaged.
#[inline(always)]
pub(crate) fn copy<R: Ret>(
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
