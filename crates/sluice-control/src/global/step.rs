//! One step of the global's cycle, pure: what the streams received is applied to the
//! computation in order, and the cycle due (if one is) is computed. No clock, no stream,
//! no lock: the cycle thread ([`super::cycle`]) takes the work out of the sessions, hands
//! it here under the coordinator, and pushes what comes back.

use std::time::Duration;

use crate::cluster::{ClusterError, NodeRates, renumber};
use crate::config::format_duration;
use crate::coordinator::Coordinator;

use super::sessions::Event;

/// What the cycle thread took out of the sessions in one go.
#[derive(Default)]
pub(super) struct Work {
    /// What the streams received, in order.
    pub(super) events: Vec<Event>,
    /// The cycle to compute, when one closed.
    pub(super) due: Option<u64>,
    /// The interval the cycles above are numbered in: the sessions' unit when taken.
    pub(super) unit: Duration,
}

/// A cycle computed: its number, and the rates that changed (or why none could be).
pub(super) type Computed = (u64, Result<Vec<NodeRates>, ClusterError>);

/// Applies `work` to the coordinator and computes its cycle when one is due. When the
/// configuration's interval is no longer the one the work was numbered in, the work and
/// the computation's cycles are renumbered first (the sessions are renumbered by the
/// caller, under their own lock).
pub(super) fn step(c: &mut Coordinator, work: &mut Work) -> Option<Computed> {
    let interval = c.config().interval;
    let from = std::mem::replace(&mut work.unit, interval);
    if from != interval {
        for event in &mut work.events {
            event.renumber(from, interval);
        }
        work.due = work.due.map(|d| renumber(d, from, interval));
        c.cluster().renumber_cycles(from, interval);
        tracing::info!(
            "interval {} → {}: cycles renumbered",
            format_duration(from),
            format_duration(interval)
        );
    }
    for event in work.events.drain(..) {
        match event {
            Event::Connected(node) => c.cluster().node_connected(&node),
            Event::Report {
                node,
                cycle,
                full,
                jobs,
                ended,
                latency,
                finished,
            } => {
                let cluster = c.cluster();
                cluster.report_latency(&node, latency);
                cluster.report(&node, cycle, full, jobs, ended);
                // Named by the session, whatever the rows say.
                c.finished(&node, finished);
            }
            Event::Disconnected(node, cycle) => c.cluster().node_disconnected(&node, cycle),
        }
    }
    let cycle = work.due.take()?;
    Some((cycle, c.compute(cycle)))
}
