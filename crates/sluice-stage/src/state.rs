//! The stage's process-wide state: the job's segment and this process's compiled rules,
//! set up once by the library's constructor ([`crate::setup`]) and never freed.
//!
//! Until the constructor has finished, and whenever it could not set up (no segment named,
//! a segment that does not map or does not parse), every hook passes straight through:
//! the program runs unmanaged, and the log file says why. A segment it cannot use (of a
//! layout it does not read, too short, a configuration it does not know) is also told:
//! the process counts itself in the segment's refusals, which its controller reports.
//!
//! A controller may replace the job's rules and pools while it runs: each call compares
//! the segment's configuration generation with the one compiled (one relaxed load), and
//! the first thread to see a change compiles the new configuration and publishes it. The
//! compiled rules a thread may still be using are never freed: a few kilobytes per change.
//! The managed places stay those of the start, because descriptors opened since carry
//! their place; a rule that names a new `mount=` applies to the places known at start.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, Ordering};

use sluice_core::classify::Compiled;
use sluice_core::config::{StageConfig, latency_sample_of};
use sluice_core::gate::Gate;
use sluice_core::path::{MountTable, Prefixes};
use sluice_core::rule::Identity;
use sluice_core::segment::{LAYOUT_VERSION, Segment};

use crate::hot::{HOME_BYTES, HOT};
use crate::log::log;
use crate::sys;

/// What every hook needs. The fields the managed lane reads come first, in one cache line
/// with the first place it compares a path with in the next.
#[repr(C)]
pub(crate) struct State {
    /// The job's segment.
    pub(crate) segment: &'static Segment,
    /// This process's rules, pools and managed places, as last compiled (never freed).
    compiled: AtomicPtr<Compiled>,
    /// The configuration generation `compiled` was made from.
    generation: AtomicU64,
    /// The managed places a path is compared with at a glance, with the letters after a
    /// leading slash that may lead into one (fixed at start).
    prefixes: Prefixes,
    /// Held by the thread compiling a new configuration.
    reloading: AtomicBool,
    identity: Identity,
    /// Bit `i` set when another place lies below place `i` (the places are fixed at
    /// start): a path in any other place has no place below it.
    nested: u64,
}

const _: () = assert!(
    size_of::<State>() <= HOME_BYTES && align_of::<State>() <= align_of::<crate::hot::Home>(),
    "state::State outgrew its room in the hot page: raise hot::HOME_BYTES"
);

impl State {
    /// The state of a process under `segment`, with the rules `compiled` from
    /// configuration `generation`, for `identity`.
    pub(crate) fn new(
        segment: &'static Segment,
        compiled: Compiled,
        generation: u64,
        identity: Identity,
    ) -> State {
        let nested = nested_places(compiled.places());
        let prefixes = compiled.places().prefixes();
        State {
            segment,
            compiled: AtomicPtr::new(Box::into_raw(Box::new(compiled))),
            generation: AtomicU64::new(generation),
            reloading: AtomicBool::new(false),
            identity,
            nested,
            prefixes,
        }
    }

    /// Moves the state into the hot page and publishes it to the hooks.
    ///
    /// # Safety
    /// Called at most once, by the library's constructor.
    pub(crate) unsafe fn publish(self) -> &'static State {
        let home = HOT.home.0.get().cast::<State>();
        // SAFETY: the room fits a State (checked above); this is its only writer, before
        // any reader can see the pointer (as the caller promises); never dropped, like the
        // process's other statics.
        let state: &'static State = unsafe {
            home.write(self);
            &*home
        };
        HOT.state.store(
            std::ptr::from_ref(state).cast_mut().cast(),
            Ordering::Release,
        );
        state
    }

    /// The state, once the stage is ready.
    #[inline(always)]
    pub(crate) fn get() -> Option<&'static State> {
        // SAFETY: set once (`publish`) to the state in HOT's page, never changed or dropped
        // after.
        unsafe { HOT.state.load(Ordering::Acquire).cast::<State>().as_ref() }
    }

    /// The admission path, with the rules in force.
    #[inline(always)]
    pub(crate) fn gate(&self) -> Gate<'_> {
        if self.segment.config_generation() != self.generation.load(Ordering::Relaxed) {
            self.reload();
        }
        Gate {
            segment: self.segment,
            compiled: self.compiled(),
        }
    }

    /// The compiled rules last published.
    #[inline(always)]
    fn compiled(&self) -> &Compiled {
        // SAFETY: always a leaked Box, never freed.
        unsafe { &*self.compiled.load(Ordering::Acquire) }
    }

    /// The managed places (fixed at start).
    #[inline(always)]
    pub(crate) fn places(&self) -> &MountTable {
        self.compiled().places()
    }

    /// Whether other places may lie below a directory in place `place`: when not,
    /// [`MountTable::has_places_below`] is false for every path in it.
    #[inline(always)]
    pub(crate) fn may_have_places_below(&self, place: u8) -> bool {
        self.nested >> (place & 63) & 1 != 0
    }

    /// The managed places a path is compared with at a glance ([`Prefixes::glance`]).
    #[inline(always)]
    pub(crate) fn prefixes(&self) -> &Prefixes {
        &self.prefixes
    }

    /// Compiles the configuration in force, unless another thread is at it (this call
    /// then goes on under the rules it had).
    #[cold]
    fn reload(&self) {
        if self.reloading.swap(true, Ordering::Acquire) {
            return;
        }
        match self.segment.config() {
            Ok((text, generation)) => {
                let compiled = StageConfig::from_text(&text).map(|c| {
                    let mut compiled =
                        self.compiled()
                            .recompiled(&c.rules, &c.pools, &c.watches, &self.identity);
                    compiled.set_latency_sample(latency_sample_of(&text));
                    compiled.set_costs(&c.costs);
                    compiled
                });
                match compiled {
                    Ok(c) => {
                        self.compiled
                            .store(Box::into_raw(Box::new(c)), Ordering::Release);
                        log!("configuration {generation} in force");
                    }
                    Err(why) => {
                        self.segment.header().refuse(LAYOUT_VERSION);
                        log!("configuration {generation} ignored, the rules in force kept: {why}");
                    }
                }
                self.generation.store(generation, Ordering::Relaxed);
            }
            Err(why) => {
                self.segment.header().refuse(LAYOUT_VERSION);
                log!("cannot read the new configuration, the rules in force kept: {why}");
            }
        }
        self.reloading.store(false, Ordering::Release);
    }
}

/// The places that have other places below them, as a mask.
fn nested_places(places: &MountTable) -> u64 {
    places
        .places()
        .iter()
        .enumerate()
        .filter(|&(i, p)| places.mask_under(&p.path) & !(1u64 << i) != 0)
        .fold(0, |m, (i, _)| m | 1 << i)
}

/// The pid the tables belong to (changes in a forked child, not in a vfork()ed one).
static PID: AtomicI32 = AtomicI32::new(0);

/// Records this process as the one the stage's tables belong to: at start, and in a
/// forked child.
pub(crate) fn own_tables() {
    PID.store(sys::getpid(), Ordering::Relaxed);
}

/// Whether this is the process the stage's tables belong to, and not a vfork()ed child
/// borrowing its parent's memory until it execs. A system call: only for rare calls.
pub(crate) fn own_process() -> bool {
    sys::getpid() == PID.load(Ordering::Relaxed)
}
