//! The report of what a job did: per operation and per rule, summed over every process.
//!
//! This is the JSON `sluice run --stats FILE` writes:
//! `{"job":…, "ops":{"open":{"calls":…,"bytes":…},…}, "rules":[{"rule":…,"admitted":…,
//! "bytes":…,"wait_ns":…}], "pools":[{"rule":…,…,"timed":…}], "unmanaged":…, "unjudged":…}` (pools: the
//! job's shares of the control plane's pools, written as the pool's filter and capacity,
//! with the calls timed for their latency). Operations appear in the order of [`Op::ALL`],
//! every one of them, so that a script can index the report without checks.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::config::Slotted;
use crate::op::Op;
use crate::segment::{ChannelTotal, MAX_RULES, OpTotal, Totals};

/// Counters of one operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpStats {
    /// Calls on managed targets.
    pub calls: u64,
    /// Bytes moved.
    pub bytes: u64,
}

/// Counters of one rule or pool share.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RuleStats {
    /// The rule in normal form.
    pub rule: String,
    /// Calls admitted.
    pub admitted: u64,
    /// Bytes charged (bytes rules).
    pub bytes: u64,
    /// Nanoseconds callers waited.
    pub wait_ns: u64,
    /// Pools only: calls timed for the pool's latency (one in the configuration's
    /// `latency_sample` per thread, and the first after each tick of the coarse clock).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timed: Option<u64>,
}

/// Per-operation counters, serialised as a map in table order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpsStats(pub [OpStats; Op::COUNT]);

impl Serialize for OpsStats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(Op::COUNT))?;
        for (op, st) in Op::ALL.iter().zip(&self.0) {
            m.serialize_entry(op.name(), st)?;
        }
        m.end()
    }
}

/// What a job did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Job identifier.
    pub job: String,
    /// Per operation.
    pub ops: OpsStats,
    /// Per rule, in rule order.
    pub rules: Vec<RuleStats>,
    /// Per pool the job shares.
    pub pools: Vec<RuleStats>,
    /// Calls on targets outside the managed places.
    pub unmanaged: u64,
    /// Calls whose target the stage could not read (a bad address the kernel refuses),
    /// passed through unjudged.
    pub unjudged: u64,
}

impl Stats {
    /// Builds the report from a segment's totals, its rules and its pools.
    pub fn new(job: &str, rules: &[Slotted], pools: &[Slotted], totals: &Totals) -> Self {
        let ops = OpsStats(
            totals
                .ops
                .map(|OpTotal { calls, bytes }| OpStats { calls, bytes }),
        );
        let of = |list: &[Slotted], first: usize| -> Vec<RuleStats> {
            list.iter()
                .map(|s| {
                    let t: &ChannelTotal = &totals.channels[first + s.slot as usize];
                    RuleStats {
                        rule: s.rule.to_string(),
                        admitted: t.admitted,
                        bytes: t.bytes,
                        wait_ns: t.wait_ns,
                        timed: (first == MAX_RULES).then(|| t.latency.iter().sum()),
                    }
                })
                .collect()
        };
        Stats {
            job: job.to_owned(),
            ops,
            rules: of(rules, 0),
            pools: of(pools, MAX_RULES),
            unmanaged: totals.unmanaged,
            unjudged: totals.unjudged,
        }
    }
}
