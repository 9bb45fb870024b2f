//! The managed lane: a call on a managed target that a glance can place, that moves no
//! bytes, held by one rule or pool that counts calls, on a warm thread whose token batch
//! covers it, and not one its pool picks to time. It is admitted and counted at once,
//! with no ticket, no path copy and no walk of the mount table, and the thread leaves the
//! stage before the real call: the common managed call (a `stat`, an `open`, a `close` on
//! the one file system a job's rules are about) in the fewest instructions and cache
//! lines. Everything else takes [`judge`](super::judge), which counts it the same way,
//! once it has returned.

use sluice_core::op::Op;
use sluice_core::path::PlaceIdx;

use crate::fdtable::{self, Entry};
use crate::guard::Guard;
use crate::state::{State, SysClock};
use crate::target::Target;

/// Admits and counts `op` on `target` when the lane can take it, and says where the target
/// lies; `None`, having counted nothing, when it cannot. The thread leaves the stage
/// before the real call, as on the unmanaged fast path: nothing is left to count after it.
#[inline(always)]
pub fn admit(st: &'static State, op: Op, target: Target) -> Option<Entry> {
    let place = managed_at_a_glance(st, target)?;
    let mut guard = Guard::enter_warm()?;
    let gate = st.gate();
    let lone = gate.compiled.lone_count_channel(op, place)?;
    gate.pass_from_batch(guard.thread_state(), &SysClock, op, lone)
        .then_some(Entry::File {
            place,
            below: false,
        })
}

/// The managed place a target lies in, when a glance can tell: an absolute path that
/// starts with a managed place no other place lies below ([`State::managed_leaf_of`]) or,
/// when the root is managed, one that no place but the root can hold; or a descriptor
/// whose byte in the table says it is in a managed place.
#[inline(always)]
fn managed_at_a_glance(st: &State, target: Target) -> Option<PlaceIdx> {
    match target {
        // SAFETY: a path the application passed to a libc call: null or a C string.
        Target::Path(p) | Target::At(libc::AT_FDCWD, p) if !p.is_null() => unsafe {
            st.managed_leaf_of(p).or_else(|| st.managed_under_root(p))
        },
        Target::Fd(fd) => match Entry::decode(fdtable::byte(fd))? {
            Entry::File { place, .. } if st.places().is_managed(place) => Some(place),
            _ => None,
        },
        _ => None,
    }
}
