//! The managed lane: a call on a managed target that a glance can place (a path in a
//! managed place no other place lies below, or a descriptor of a file in a managed
//! place), that moves no bytes, held by one rule or pool that counts calls, on a warm
//! thread whose token batch covers it, and not one its pool picks to time. It is admitted
//! and counted at once, with no ticket, no path copy and no walk of the mount table, and
//! the thread leaves the stage before the real call: the common managed call (a `stat`,
//! an `open`, a `close` on the one file system a job's rules are about) in the fewest
//! instructions and cache lines. Everything else takes [`judge`](super::judge), which
//! counts it the same way, once it has returned.

use sluice_core::op::Op;
use sluice_core::path::PlaceIdx;

use crate::fdtable::Entry;
use crate::guard::Guard;
use crate::state::{State, SysClock};

/// Admits and counts `op` on a target in managed place `place` (where the glance placed
/// it, [`super::intercept`]) when the lane can take it, and says where the target lies;
/// `None`, having counted nothing, when it cannot. The thread leaves the stage before the
/// real call, as on the unmanaged fast path: nothing is left to count after it.
#[inline(always)]
pub fn admit(st: &'static State, op: Op, place: PlaceIdx) -> Option<Entry> {
    let mut guard = Guard::enter_warm()?;
    let gate = st.gate();
    let lone = gate.compiled.lone_count_channel(op, place)?;
    gate.pass_from_batch(guard.thread_state(), &SysClock, op, lone)
        .then_some(Entry::File {
            place,
            below: false,
        })
}
