//! A cycle's rates out to the locals' streams: queued without waiting, a local whose
//! queue is full (or without the policy they were computed under) sent every rate again
//! once it drains.

use std::sync::atomic::Ordering;

use crate::cluster::NodeRates;
use crate::proto::{self, GlobalMessage, global_message};

use super::Global;

impl Global {
    /// Queues cycle `cycle`'s changed rates to their locals, computed under the policy of
    /// `version`; `policy` is that policy when some local was not sent it yet, offered
    /// first. A local still without it is sent no rate: every rate goes to it again once
    /// it has the policy, rather than a new pool's rate lost on a segment without it.
    pub(super) fn push(
        &self,
        cycle: u64,
        rates: Vec<NodeRates>,
        version: u64,
        policy: Option<GlobalMessage>,
    ) {
        // The senders are taken under the lock and used outside it: queueing wakes each
        // stream's task, and the streams' reports must not wait for that.
        let targets: Vec<_> = {
            let mut sessions = self.sessions();
            if let Some(policy) = &policy {
                let full = sessions.offer_policy(version, policy);
                self.dropped.fetch_add(full, Ordering::Relaxed);
            }
            rates
                .into_iter()
                .filter_map(|r| {
                    let s = sessions.live.get(&r.node)?;
                    Some((s.tx.clone(), s.has_policy(version), r))
                })
                .collect()
        };
        let mut slow = Vec::new();
        for (tx, current, NodeRates { node, jobs, relays }) in targets {
            if !current {
                slow.push(node);
                continue;
            }
            let message = GlobalMessage {
                body: Some(global_message::Body::Rates(proto::Rates {
                    cycle,
                    jobs: jobs
                        .into_iter()
                        .map(|(job, pools)| proto::JobRates { job, pools })
                        .collect(),
                    relays: relays.into_iter().map(proto::Relay::from).collect(),
                })),
            };
            if tx.try_send(Ok(message)).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                slow.push(node);
            }
        }
        if !slow.is_empty() {
            let mut c = self.coordinator.lock().expect("coordinator");
            for node in slow {
                c.cluster().node_connected(&node);
            }
        }
    }
}
