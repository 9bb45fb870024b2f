//! What the nodes enforce, as a value a global keeps across its own restart.
//!
//! While no global answers, every local keeps the rates last pushed to it (fail-static).
//! A global that starts knowing none of them would hand the first local to reconnect the
//! whole of each pool while the others still enforce their old shares: the pool is
//! exceeded until the last of them has reported. So the global keeps these rates, and a
//! restarted one counts each node found in them as disconnected since its start: the
//! node's rates stay held (`H`) until it reconnects, or for `stale_after`, exactly as if
//! the global had only lost its link to it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::registry::intern;
use super::{Cluster, Node, Placement};

/// By node, by job, by pool: the rate last pushed there, which the node enforces.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Held {
    /// The nodes, by the name they are counted under.
    pub nodes: BTreeMap<String, BTreeMap<String, BTreeMap<String, f64>>>,
}

impl Held {
    /// Whether it holds no rate at all.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

impl Cluster {
    /// The rates every known node enforces now, connected or not.
    pub fn held(&self) -> Held {
        let nodes = self
            .nodes
            .iter()
            .map(|(name, node)| {
                let jobs = node
                    .jobs
                    .iter()
                    .map(|(job, p)| {
                        let pools = p.pushed.iter().map(|(k, v)| (k.to_string(), *v));
                        (job.clone(), pools.collect::<BTreeMap<_, _>>())
                    })
                    .filter(|(_, pools)| !pools.is_empty())
                    .collect::<BTreeMap<_, _>>();
                (name.clone(), jobs)
            })
            .filter(|(_, jobs)| !jobs.is_empty())
            .collect();
        Held { nodes }
    }

    /// Counts the nodes of `held` that this controller does not know yet as disconnected
    /// at `cycle`, enforcing those rates; rates of pools it does not have are left out.
    /// Returns how many nodes it added.
    pub fn restore(&mut self, held: Held, cycle: u64) -> usize {
        let mut added = 0;
        for (name, jobs) in held.nodes {
            if self.nodes.contains_key(&name) {
                continue;
            }
            let mut node = Node {
                down_since: Some(cycle),
                ..Node::default()
            };
            for (job, pools) in jobs {
                let mut placement = Placement::default();
                for (pool, rate) in pools {
                    if self.pools.contains_key(&pool) && rate.is_finite() && rate >= 0.0 {
                        placement.pushed.insert(intern(&self.pools, pool), rate);
                    }
                }
                node.jobs.insert(job, placement);
            }
            self.nodes.insert(name, node);
            added += 1;
        }
        if added > 0 {
            self.layout += 1;
        }
        added
    }
}
