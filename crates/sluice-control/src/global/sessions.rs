//! What the global knows of its streams, under one lock: the live session of each node,
//! which cycle is open and who still owes it, and what the streams received for the
//! cycle thread to apply. Pure bookkeeping: no clock, no I/O beyond queueing a message.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::time::Duration;

use sluice_core::segment::Latency;
use tokio::sync::mpsc;
use tonic::Status;

use crate::cluster::{NodeJob, renumber};
use crate::config::{MAX_INTERVAL, MIN_INTERVAL};
use crate::proto::{self, GlobalMessage};

/// The queue of one stream's messages to its local, as the gRPC stream takes them.
pub(super) type Outbox = mpsc::Sender<Result<GlobalMessage, Status>>;

#[derive(Default)]
pub(super) struct Sessions {
    /// By node.
    pub(super) live: HashMap<String, Session>,
    /// The last cycle computed, or handed to the cycle thread to compute.
    pub(super) computed: u64,
    /// The latest cycle a local reported: the one being gathered.
    pub(super) open: u64,
    /// Live sessions that have not reported `open` yet: counted, so that a report need
    /// not look at every session to know whether it was the last.
    pub(super) missing: usize,
    /// What the streams received, in order, for the cycle thread to apply.
    pub(super) events: Vec<Event>,
    /// The cycle the cycle thread is to compute next.
    pub(super) due: Option<u64>,
    /// Whether the cycle thread waits for work (and must be woken).
    pub(super) idle: bool,
    /// The interval every cycle number here counts in: the global's, as the cycle thread
    /// last read it from the configuration.
    pub(super) unit: Duration,
}

pub(super) struct Session {
    pub(super) id: u64,
    pub(super) tx: Outbox,
    /// The address its stream comes from, when known.
    pub(super) peer: Option<IpAddr>,
    /// The last cycle it reported.
    pub(super) reported: u64,
    /// Whether the log said yet that its reports come from ahead of this global's clock.
    pub(super) told_ahead: bool,
    /// The version of the policy last queued to it; `None` before the first.
    pub(super) policy: Option<u64>,
}

impl Session {
    /// Whether it was sent the policy of `version`, or a later one.
    pub(super) fn has_policy(&self, version: u64) -> bool {
        self.policy.is_some_and(|v| v >= version)
    }
}

/// What a stream tells the computation; applied in order by the cycle thread.
pub(super) enum Event {
    Connected(String),
    Report {
        node: String,
        cycle: u64,
        full: bool,
        jobs: Vec<NodeJob>,
        ended: Vec<String>,
        latency: BTreeMap<String, Latency>,
        finished: Vec<proto::JobSummary>,
    },
    Disconnected(String, u64),
}

impl Event {
    /// Numbers the event's cycle in an interval of `to` instead of `from`.
    pub(super) fn renumber(&mut self, from: Duration, to: Duration) {
        match self {
            Event::Connected(_) => {}
            Event::Report { cycle, .. } | Event::Disconnected(_, cycle) => {
                *cycle = renumber(*cycle, from, to);
            }
        }
    }
}

impl Sessions {
    /// Sessions counting cycles of `unit`.
    pub(super) fn new(unit: Duration) -> Self {
        Sessions {
            unit,
            ..Sessions::default()
        }
    }

    /// Counts cycles of `to` from now on: every cycle kept or queued is renumbered.
    pub(super) fn renumber(&mut self, to: Duration) {
        let from = std::mem::replace(&mut self.unit, to);
        let r = |c| renumber(c, from, to);
        self.computed = r(self.computed);
        self.open = r(self.open);
        self.due = self.due.map(r);
        for s in self.live.values_mut() {
            s.reported = r(s.reported);
        }
        for e in &mut self.events {
            e.renumber(from, to);
        }
        let open = self.open;
        self.missing = self.live.values().filter(|s| s.reported < open).count();
    }

    /// A local's cycle `cycle` of its interval `interval_s` (0: not said), numbered in
    /// this unit: a local reports in the interval it runs at, which lags the global's by
    /// the policy's trip when an administrator changes it.
    pub(super) fn local_cycle(&self, cycle: u64, interval_s: f64) -> u64 {
        if interval_s <= 0.0 {
            return cycle;
        }
        // Intervals are whole milliseconds in a known range; the float carries them only
        // approximately.
        let theirs = Duration::from_millis((interval_s * 1e3).round() as u64)
            .clamp(MIN_INTERVAL, MAX_INTERVAL);
        renumber(cycle, theirs, self.unit)
    }

    /// The cycle a report of cycle `said` counts as while this global's clock is in cycle
    /// `now`. A node whose clock runs ahead (a bad RTC, NTP gone) must not move the cycles
    /// past this global's clock: computed up to a cycle of the future, the global would
    /// wait for it and compute nothing until then. Nor may this global's own clock,
    /// stepped back, hold the cycles: the one after the last computed is always allowed.
    pub(super) fn counted(&self, said: u64, now: u64) -> u64 {
        said.min(now.max(self.computed) + 1)
    }

    /// Hands `cycle` to the cycle thread unless it was already.
    pub(super) fn close(&mut self, cycle: u64) -> bool {
        if cycle <= self.computed {
            return false;
        }
        self.computed = cycle;
        self.due = Some(cycle);
        true
    }

    /// Closes the open cycle when no live session still owes its report.
    pub(super) fn close_if_complete(&mut self) -> bool {
        self.missing == 0 && self.close(self.open)
    }

    /// `node`'s session `id` reported `cycle`.
    pub(super) fn reported(&mut self, node: &str, id: u64, cycle: u64) {
        if !self.is_live(node, id) {
            return;
        }
        if cycle > self.open {
            // A new cycle: once per cycle, every session owes it.
            self.open = cycle;
            self.missing = self.live.values().filter(|s| s.reported < cycle).count();
        }
        let open = self.open;
        let session = self.live.get_mut(node).expect("checked above");
        let owed = session.reported < open;
        session.reported = session.reported.max(cycle);
        if owed && session.reported >= open {
            self.missing -= 1;
        }
    }

    /// The name a new stream of a local calling itself `node`, from `peer`, is counted
    /// under: `node`, unless a live stream from another address holds that name (two
    /// local controllers with one name: the host name, their default, is the same on
    /// machines cloned alike and in every network namespace of one host). It is then
    /// `node@ADDRESS`: replacing the other's stream would leave that local connected
    /// but never sent a policy or a rate again, its new jobs without the pools.
    pub(super) fn name_for(&self, node: &str, peer: Option<IpAddr>) -> String {
        match (self.live.get(node).and_then(|s| s.peer), peer) {
            (Some(theirs), Some(ours)) if theirs != ours => format!("{node}@{ours}"),
            _ => node.to_owned(),
        }
    }

    /// Adds a session, replacing `node`'s older one, which is returned.
    pub(super) fn insert(&mut self, node: String, session: Session) -> Option<Session> {
        if session.reported < self.open {
            self.missing += 1;
        }
        let old = self.live.insert(node, session);
        if old.as_ref().is_some_and(|o| o.reported < self.open) {
            self.missing -= 1;
        }
        old
    }

    /// Queues `policy`, of version `version`, to every live session not sent it or a later
    /// one; returns how many it could not be queued to (their queue is full).
    pub(super) fn offer_policy(&mut self, version: u64, policy: &GlobalMessage) -> u64 {
        let mut full = 0;
        for s in self.live.values_mut().filter(|s| !s.has_policy(version)) {
            match s.tx.try_send(Ok(policy.clone())) {
                Ok(()) => s.policy = Some(version),
                Err(_) => full += 1,
            }
        }
        full
    }

    /// Whether a live session was not sent the policy of `version` yet.
    pub(super) fn owe_policy(&self, version: u64) -> bool {
        self.live.values().any(|s| !s.has_policy(version))
    }

    /// Whether `node`'s live stream is session `id`.
    pub(super) fn is_live(&self, node: &str, id: u64) -> bool {
        self.live.get(node).is_some_and(|s| s.id == id)
    }

    /// Removes `node`'s session if it is still `id`; whether it was.
    pub(super) fn remove(&mut self, node: &str, id: u64) -> bool {
        if !self.is_live(node, id) {
            return false;
        }
        if let Some(old) = self.live.remove(node)
            && old.reported < self.open
        {
            self.missing -= 1;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::global_message;

    fn session(id: u64, reported: u64) -> Session {
        Session {
            id,
            tx: mpsc::channel(1).0,
            peer: None,
            reported,
            told_ahead: false,
            policy: None,
        }
    }

    #[test]
    fn a_cycle_closes_when_the_last_live_session_reports_it() {
        let mut s = Sessions::default();
        s.insert("a".into(), session(1, 0));
        s.insert("b".into(), session(2, 0));
        s.reported("a", 1, 5);
        assert!(!s.close_if_complete(), "b still owes cycle 5");
        // A report of an older stream of b's does not count.
        s.reported("b", 9, 5);
        assert!(!s.close_if_complete());
        s.reported("b", 2, 5);
        assert!(s.close_if_complete());
        assert_eq!((s.due, s.computed), (Some(5), 5));
        // Once closed, not again.
        assert!(!s.close_if_complete());
    }

    /// The interval grows from 250 ms to 1 s: what was computed and reported is
    /// renumbered, the next cycle of 1 s opens and closes as usual, and a local still on
    /// 250 ms is heard in the new unit.
    #[test]
    fn a_new_interval_renumbers_the_cycles_kept_and_reported() {
        let ms = Duration::from_millis;
        let mut s = Sessions::new(ms(250));
        s.insert("a".into(), session(1, 0));
        s.insert("b".into(), session(2, 0));
        s.reported("a", 1, 401);
        s.reported("b", 2, 401);
        assert!(s.close_if_complete());
        s.due = None;
        s.reported("a", 1, 402);
        s.renumber(ms(1000));
        assert_eq!((s.computed, s.open, s.missing), (100, 100, 0));
        // a runs at 1 s already; b, on 250 ms still, reports cycle 404 (101 s).
        s.reported("a", 1, s.local_cycle(101, 1.0));
        assert!(!s.close_if_complete(), "b owes cycle 101");
        s.reported("b", 2, s.local_cycle(404, 0.25));
        assert!(s.close_if_complete());
        assert_eq!(s.due, Some(101));
    }

    #[test]
    fn a_report_from_ahead_of_the_clock_counts_as_of_the_next_cycle() {
        let mut s = Sessions::new(Duration::from_secs(1));
        // A node a year ahead of this global's clock (cycle 100).
        assert_eq!(s.counted(100 + 31_536_000, 100), 101);
        assert_eq!(s.counted(100, 100), 100);
        // This global's clock stepped back an hour after cycle 5000: reports still move
        // the cycles on, one at a time.
        s.computed = 5000;
        assert_eq!(s.counted(5001, 1400), 5001);
        assert_eq!(s.counted(5002, 1400), 5001);
    }

    /// Two locals that call themselves alike from two addresses are two nodes; one that
    /// connects again from its address replaces its older stream.
    #[test]
    fn a_second_local_of_one_name_from_another_address_is_counted_apart() {
        let ip = |a: &str| a.parse::<IpAddr>().ok();
        let mut s = Sessions::default();
        assert_eq!(s.name_for("n", ip("10.0.0.1")), "n");
        let first = Session {
            peer: ip("10.0.0.1"),
            ..session(1, 0)
        };
        assert!(s.insert("n".into(), first).is_none());
        assert_eq!(s.name_for("n", ip("10.0.0.1")), "n");
        assert_eq!(s.name_for("n", ip("10.0.0.2")), "n@10.0.0.2");
        assert_eq!(s.name_for("m", ip("10.0.0.2")), "m");
        let again = Session {
            peer: ip("10.0.0.1"),
            ..session(2, 0)
        };
        assert_eq!(s.insert("n".into(), again).map(|o| o.id), Some(1));
        assert!(s.is_live("n", 2) && !s.is_live("n", 1));
    }

    /// The pools of the policies `rx` holds, in order.
    fn policies(rx: &mut mpsc::Receiver<Result<GlobalMessage, Status>>) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|m| match m.ok().and_then(|m| m.body) {
                Some(global_message::Body::Policy(p)) => p.pools.join(","),
                _ => "not a policy".to_owned(),
            })
            .collect()
    }

    /// The sessions of one local, `a`, whose queue holds `queue` messages; and that queue.
    fn one_local(queue: usize) -> (Sessions, mpsc::Receiver<Result<GlobalMessage, Status>>) {
        let (tx, rx) = mpsc::channel(queue);
        let mut s = Sessions::default();
        s.insert(
            "a".into(),
            Session {
                tx,
                ..session(1, 0)
            },
        );
        (s, rx)
    }

    fn policy(pool: &str) -> GlobalMessage {
        GlobalMessage {
            body: Some(global_message::Body::Policy(proto::Policy {
                pools: vec![pool.to_owned()],
                ..proto::Policy::default()
            })),
        }
    }

    /// Two admin changes in quick succession may offer their policies in either order:
    /// a local keeps the later one.
    #[test]
    fn a_local_is_never_sent_a_policy_older_than_it_has() {
        let (mut s, mut rx) = one_local(8);
        assert_eq!(s.offer_policy(2, &policy("v2")), 0);
        assert_eq!(s.offer_policy(1, &policy("v1")), 0);
        assert_eq!(s.offer_policy(2, &policy("v2")), 0);
        assert_eq!(policies(&mut rx), ["v2"]);
        assert!(!s.owe_policy(2) && s.owe_policy(3));
    }

    /// A local whose queue was full when the policy changed is owed it until it drains.
    #[test]
    fn a_policy_that_found_a_full_queue_is_offered_again() {
        let (mut s, mut rx) = one_local(1);
        s.live["a"].tx.try_send(Ok(policy("v0"))).unwrap();
        assert_eq!(s.offer_policy(1, &policy("v1")), 1);
        assert!(s.owe_policy(1));
        assert_eq!(policies(&mut rx), ["v0"]);
        assert_eq!(s.offer_policy(1, &policy("v1")), 0);
        assert_eq!(policies(&mut rx), ["v1"]);
        assert!(!s.owe_policy(1));
    }

    #[test]
    fn a_session_that_goes_or_is_replaced_is_no_longer_waited_for() {
        let mut s = Sessions::default();
        s.insert("a".into(), session(1, 0));
        s.insert("b".into(), session(2, 0));
        s.reported("a", 1, 7);
        // b reconnects: its new stream owes cycle 7 as the old one did.
        s.insert("b".into(), session(3, 0));
        assert_eq!(s.missing, 1);
        assert!(!s.remove("b", 2), "the old stream is gone already");
        assert!(s.remove("b", 3));
        assert!(s.close_if_complete());
        // A stream that joins once cycle 7 is computed owes only the next one.
        s.insert("c".into(), session(4, s.computed));
        assert_eq!(s.missing, 0);
        s.reported("a", 1, 8);
        assert_eq!(s.missing, 1);
    }
}
