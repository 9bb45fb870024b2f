//! Which jobs a report leaves out: those whose observations hold.
//!
//! Most jobs of a cluster run steadily from one interval to the next, and their rates
//! wobble by a fraction of a percent. Sending them anyway costs the global a decode and
//! a registry update per job per cycle for nothing it would act on; leaving them out
//! (the global keeps what it had) makes a cycle's cost follow what changed. The
//! comparison is with what was last *sent*, so a slow drift is sent once it adds up to
//! the tolerance, never lost.

use std::collections::HashMap;

use super::Observed;
use crate::cluster::{ChannelObs, NodeJob};

/// Relative change of any observed rate that makes a job worth reporting again.
pub const TOLERANCE: f64 = 0.01;

/// What a local last sent up of each job.
#[derive(Debug, Default)]
pub struct Deltas {
    sent: HashMap<String, NodeJob>,
}

impl Deltas {
    /// Keeps in `observed` only the jobs that changed beyond [`TOLERANCE`] since they
    /// were last sent (every job when `full`), and remembers them as sent.
    pub fn keep_changed(&mut self, observed: &mut Observed, full: bool) {
        if full {
            self.sent.clear();
        }
        for gone in &observed.ended {
            self.sent.remove(gone);
        }
        let sent = &mut self.sent;
        observed.jobs.retain(|j| {
            if sent.get(&j.job).is_some_and(|s| holds(s, j)) {
                return false;
            }
            sent.insert(j.job.clone(), j.clone());
            true
        });
    }
}

/// Whether `now` says nothing the global would act on beyond what `sent` said.
fn holds(sent: &NodeJob, now: &NodeJob) -> bool {
    sent.user == now.user
        && sent.account == now.account
        && sent.qos == now.qos
        && sent.partition == now.partition
        && sent.nodes == now.nodes
        && sent.launchers == now.launchers
        && sent.segment == now.segment
        && sent.outside == now.outside
        && sent.pools.len() == now.pools.len()
        && sent
            .pools
            .iter()
            .zip(&now.pools)
            .all(|((p, a), (q, b))| p == q && close(a, b))
}

/// Rates within [`TOLERANCE`] of each other, and the same word on whether the job
/// asked unseen. Threads waiting and calls inside the file system now are left out:
/// they flip between 0 and a few every interval for a busy job, and the round reads
/// them only to tell a job that asked unseen from an idle one.
fn close(a: &ChannelObs, b: &ChannelObs) -> bool {
    let near = |x: f64, y: f64| (x - y).abs() <= TOLERANCE * x.abs().max(y.abs());
    near(a.arrivals, b.arrivals)
        && near(a.admitted, b.admitted)
        && near(a.wait, b.wait)
        && near(a.demand, b.demand)
        && a.asked_unseen() == b.asked_unseen()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn job(id: &str, admitted: f64, launchers: u32) -> NodeJob {
        let obs = ChannelObs {
            arrivals: admitted,
            admitted,
            demand: admitted,
            ..ChannelObs::default()
        };
        NodeJob {
            job: id.to_owned(),
            user: "u".to_owned(),
            nodes: 1,
            launchers,
            pools: BTreeMap::from([("md".to_owned(), obs)]),
            ..NodeJob::default()
        }
    }

    fn kept(d: &mut Deltas, jobs: Vec<NodeJob>, full: bool) -> Vec<String> {
        let mut o = Observed {
            jobs,
            ..Observed::default()
        };
        d.keep_changed(&mut o, full);
        o.jobs.into_iter().map(|j| j.job).collect()
    }

    #[test]
    fn a_job_is_sent_again_once_its_drift_adds_up_to_the_tolerance() {
        let mut d = Deltas::default();
        assert_eq!(kept(&mut d, vec![job("a", 1000.0, 1)], false), ["a"]);
        assert!(kept(&mut d, vec![job("a", 1006.0, 1)], false).is_empty());
        // 1.2 % from what was sent, though 0.6 % from the last observation.
        assert_eq!(kept(&mut d, vec![job("a", 1012.0, 1)], false), ["a"]);
        assert!(kept(&mut d, vec![job("a", 1012.0, 1)], false).is_empty());
    }

    #[test]
    fn a_new_launcher_a_start_from_zero_or_a_full_report_is_always_sent() {
        let mut d = Deltas::default();
        kept(&mut d, vec![job("a", 0.0, 1)], false);
        assert_eq!(kept(&mut d, vec![job("a", 0.5, 1)], false), ["a"]);
        assert_eq!(kept(&mut d, vec![job("a", 0.5, 2)], false), ["a"]);
        assert_eq!(kept(&mut d, vec![job("a", 0.5, 2)], true), ["a"]);
    }

    /// A refusal counted in a job's segment reaches the global (and `sluice jobs`) at the
    /// next report, though the job's rates hold.
    #[test]
    fn a_job_whose_segment_note_changed_is_sent() {
        let mut d = Deltas::default();
        kept(&mut d, vec![job("a", 10.0, 1)], false);
        let mut refused = job("a", 10.0, 1);
        refused.segment = Some(crate::cluster::SegmentNote {
            layout: 4,
            refused: 1,
            ..Default::default()
        });
        assert_eq!(kept(&mut d, vec![refused.clone()], false), ["a"]);
        assert!(kept(&mut d, vec![refused], false).is_empty());
    }

    /// A job whose one call sat inside the file system for intervals on end, then
    /// returned: the global hears both that it asked unseen and that it stopped, though
    /// every rate read 0 throughout.
    #[test]
    fn a_job_that_asks_unseen_or_stops_asking_is_sent() {
        let mut d = Deltas::default();
        kept(&mut d, vec![job("a", 0.0, 1)], false);
        let mut inside = job("a", 0.0, 1);
        inside.pools.get_mut("md").expect("its pool").in_flight = 1;
        assert_eq!(kept(&mut d, vec![inside.clone()], false), ["a"]);
        // Two calls inside now, still unseen: nothing new for the global.
        inside.pools.get_mut("md").expect("its pool").in_flight = 2;
        assert!(kept(&mut d, vec![inside], false).is_empty());
        assert_eq!(kept(&mut d, vec![job("a", 0.0, 1)], false), ["a"]);
    }

    #[test]
    fn a_job_that_ended_and_came_back_is_sent() {
        let mut d = Deltas::default();
        kept(&mut d, vec![job("a", 10.0, 1)], false);
        let mut o = Observed {
            ended: vec!["a".to_owned()],
            ..Observed::default()
        };
        d.keep_changed(&mut o, false);
        assert_eq!(kept(&mut d, vec![job("a", 10.0, 1)], false), ["a"]);
    }
}
