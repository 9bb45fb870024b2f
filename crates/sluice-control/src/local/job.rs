//! One job on this node: its segment, the rules and pools written into it (each in a slot
//! that stays its own while it lives, so its counters survive other changes), its
//! launchers, and what it was last observed doing.
//!
//! A job adopted after a restart may have a segment of another layout than this build's
//! (an upgrade, or a downgrade, with jobs running): one of a layout this build reads is
//! controlled as any other; one it cannot read is left untouched at the rates last
//! written, its header only read, for the refusals its processes count there.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sluice_core::bucket::Limit;
use sluice_core::config::{Slotted, SlottedCosts, StageConfig};
use sluice_core::cost::Costs;
use sluice_core::error::Chain;
use sluice_core::observe::{Snapshot, Watched};
use sluice_core::rule::{Rule, Unit, parse_rule};
use sluice_core::segment::{
    ChannelTotal, Header, LAYOUT_VERSION, Latency, MAX_POOLS, MAX_RULES, SegmentError,
};

use super::LocalError;
use super::relay::Activity;
use crate::cluster::{ChannelObs, SegmentNote};
use crate::proto::PoolTotals;
use crate::report::Allocation;
use crate::segment_file::{HeaderFile, SegmentFile, monotonic_ns, rule_limit};

/// What a job's record in the state directory holds: enough to adopt its segment after a
/// restart of the local controller.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The resource manager's job id.
    pub job: String,
    /// Who the job runs as.
    pub uid: u32,
    /// The group the segment belongs to.
    pub gid: u32,
    /// Its user's login name.
    pub user: String,
    /// Its account, QOS and partition as its first launcher gave them (empty when
    /// unknown; absent in a record written before they were kept).
    #[serde(default)]
    pub account: String,
    /// See `account`.
    #[serde(default)]
    pub qos: String,
    /// See `account`.
    #[serde(default)]
    pub partition: String,
    /// Nodes it holds, as its launchers said (0 unknown).
    pub nodes: u32,
    /// The segment's path.
    pub segment: PathBuf,
    /// The launchers' own rules, in the rule language.
    pub own_rules: Vec<String>,
    /// Managed places and file-system types.
    pub mounts: Vec<String>,
    /// File-system types whose mounts are managed.
    pub fs_types: Vec<String>,
    /// Processes of the launchers attached (their connection is the live sign; after a
    /// restart of the controller, these pids are).
    pub launchers: Vec<u32>,
    /// Slots in use: rules by their text, pools by name.
    pub rule_slots: BTreeMap<String, u8>,
    /// Pools by name.
    pub pool_slots: BTreeMap<String, u8>,
    /// When it was attached on this node, seconds since the epoch (0 in a record written
    /// before job reports).
    #[serde(default)]
    pub started: f64,
}

/// The pools and admin rules a job's segment is built from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Policy {
    /// Pools as rules: `NAME: FILTER rate=CAPACITY`.
    pub pools: Vec<Rule>,
    /// The administrator's rules, in order; tried before a launcher's own.
    pub rules: Vec<Rule>,
    /// Pool name → the conditions of its watch (see [`StageConfig::watches`]), checked.
    pub watches: BTreeMap<String, String>,
    /// Pool name → what each operation costs it (see [`StageConfig::costs`]), checked.
    pub costs: BTreeMap<String, Costs>,
}

impl Policy {
    /// Reads the protocol's policy; a rule that does not parse is an error.
    pub fn from_proto(p: &crate::proto::Policy) -> Result<Policy, LocalError> {
        let parse = |texts: &[String]| -> Result<Vec<Rule>, LocalError> {
            texts.iter().map(|t| rule("policy rule", t)).collect()
        };
        for (pool, conditions) in &p.watches {
            Slotted::watch(0, conditions).map_err(|source| LocalError::Watch {
                pool: pool.clone(),
                conditions: conditions.clone(),
                source,
            })?;
        }
        let costs = p
            .costs
            .iter()
            .map(|(pool, text)| {
                let costs = text.parse::<Costs>().map_err(|source| LocalError::Costs {
                    pool: pool.clone(),
                    text: text.clone(),
                    source,
                })?;
                Ok((pool.clone(), costs))
            })
            .collect::<Result<_, LocalError>>()?;
        Ok(Policy {
            pools: parse(&p.pools)?,
            rules: parse(&p.rules)?,
            watches: p.watches.clone(),
            costs,
        })
    }
}

/// A job attached on this node.
pub struct LocalJob {
    /// What is kept in the state directory.
    pub record: JobRecord,
    /// The job's segment.
    segment: JobSegment,
    /// The layout that wrote the segment.
    layout: u64,
    /// The refusals already logged.
    refusals_logged: u32,
    /// Launchers connected now.
    pub connected: u32,
    /// Its processes outside the stage at the last scan, one entry per executable and
    /// reason (see [`super::unstaged`]).
    pub outside: Vec<crate::proto::OutsideStage>,
    /// Every executable and reason seen so over its life, with the most processes seen
    /// at once: for its report.
    pub outside_seen: Vec<crate::proto::OutsideStage>,
    /// The channels observed, what each is, and the last snapshot of them (taken when
    /// they were chosen, so that a job's first interval is observed too).
    watched: Vec<Watched>,
    channels: Vec<Channel>,
    last: Snapshot,
    /// The share of each pool last written, by pool name.
    pub pool_rates: BTreeMap<String, f64>,
    /// This node's share of each pool, sampled every interval, for its report.
    pub allocation: BTreeMap<String, Allocation>,
}

/// A job's segment as this controller holds it.
enum JobSegment {
    /// Of a layout this build reads: observed, and its rates written.
    Controlled(SegmentFile),
    /// Of a layout it cannot read (or otherwise unusable, for the reason held): left as
    /// it is, at the rates last written; only its header is read.
    Untouched(HeaderFile, String),
}

impl JobSegment {
    fn header(&self) -> &Header {
        match self {
            JobSegment::Controlled(s) => s.segment().header(),
            JobSegment::Untouched(h, _) => h.header(),
        }
    }
}

/// What a watched channel is, for reporting.
#[derive(Clone, Debug, PartialEq)]
enum Channel {
    Rule(String),
    Pool(String),
}

/// `text` as a rule; `what` names it in the error ("policy rule", "rule").
fn rule(what: &'static str, text: &str) -> Result<Rule, LocalError> {
    parse_rule(text).map_err(|source| LocalError::Rule {
        what,
        text: text.to_owned(),
        source,
    })
}

/// Rates last written to a pool's bucket when nothing was pushed yet: a small floor
/// (the pool's default `min_share`) that lets the job start until the first cycle.
const START_SHARE: f64 = 0.01;

impl LocalJob {
    /// Builds the configuration `record` and `policy` give, assigning slots to new rules
    /// and pools (fresh slots first, so that a slot's counters are a rule's own).
    pub fn stage_config(
        record: &mut JobRecord,
        policy: &Policy,
    ) -> Result<StageConfig, LocalError> {
        let own: Vec<Rule> = record
            .own_rules
            .iter()
            .map(|t| rule("rule", t))
            .collect::<Result<_, _>>()?;
        let rules: Vec<Rule> = policy.rules.iter().cloned().chain(own).collect();
        if rules.len() > MAX_RULES {
            return Err(LocalError::TooManyRules(rules.len()));
        }
        if policy.pools.len() > MAX_POOLS {
            return Err(LocalError::TooManyPools(policy.pools.len()));
        }
        // A named rule keeps its slot (and its counters) through a change of its rate.
        let rules = assign(&mut record.rule_slots, rules, rule_key, MAX_RULES);
        let pools = assign(
            &mut record.pool_slots,
            policy.pools.clone(),
            |r| r.name.clone().unwrap_or_default(),
            MAX_POOLS,
        );
        let watches = pools
            .iter()
            .filter_map(|p| {
                let conditions = policy.watches.get(p.rule.name.as_deref()?)?;
                Some(Slotted::watch(p.slot, conditions).expect("checked by Policy::from_proto"))
            })
            .collect();
        let costs = pools
            .iter()
            .filter_map(|p| {
                let costs = policy.costs.get(p.rule.name.as_deref()?)?;
                Some(SlottedCosts {
                    slot: p.slot,
                    costs: costs.clone(),
                })
            })
            .collect();
        Ok(StageConfig {
            job: record.job.clone(),
            user: Some(record.user.clone()).filter(|u| !u.is_empty()),
            mounts: record.mounts.clone(),
            fs_types: record.fs_types.clone(),
            rules,
            pools,
            watches,
            costs,
        })
    }

    /// Creates the job's segment and its record.
    pub fn create(mut record: JobRecord, policy: &Policy) -> Result<LocalJob, LocalError> {
        let config = Self::stage_config(&mut record, policy)?;
        let start: Vec<(usize, Limit)> = config
            .pools
            .iter()
            .map(|p| (p.slot as usize, start_limit(&p.rule)))
            .collect();
        let _ = std::fs::remove_file(&record.segment);
        let segment = SegmentFile::create(
            record.segment.clone(),
            &config,
            &start,
            Some((record.uid, record.gid)),
        )?;
        Ok(Self::with(record, segment, &config))
    }

    /// Adopts the segment of a job recorded before a restart: controlled when this build
    /// reads its layout, untouched (at the rates last written) when it does not. The
    /// pools keep the rates last written until the first ones are computed.
    pub fn adopt(record: JobRecord) -> Result<LocalJob, LocalError> {
        let segment = match SegmentFile::open(record.segment.clone()) {
            Ok(segment) => segment,
            // A file this build cannot use is still the job's: its processes run on it.
            Err(e) => {
                let Ok(header) = HeaderFile::open(&record.segment) else {
                    return Err(e.into());
                };
                let layout = match header.header().layout() {
                    Ok(l) | Err(SegmentError::TooNew(l) | SegmentError::TooOld(l)) => l.version,
                    Err(_) => 0,
                };
                return Ok(LocalJob {
                    record,
                    refusals_logged: header.header().refusals().count,
                    segment: JobSegment::Untouched(header, Chain(&e).to_string()),
                    layout,
                    connected: 0,
                    outside: Vec::new(),
                    outside_seen: Vec::new(),
                    watched: Vec::new(),
                    channels: Vec::new(),
                    last: Snapshot::default(),
                    pool_rates: BTreeMap::new(),
                    allocation: BTreeMap::new(),
                });
            }
        };
        let (text, _) = segment.segment().config()?;
        let config = StageConfig::from_text(&text)?;
        let mut job = Self::with(record, segment, &config);
        job.refusals_logged = job.segment.header().refusals().count;
        if let JobSegment::Controlled(segment) = &job.segment {
            for p in &config.pools {
                let limit = segment
                    .segment()
                    .bucket(MAX_RULES + p.slot as usize)
                    .limit();
                let name = p.rule.name.clone().unwrap_or_default();
                job.pool_rates.insert(name, limit.per_sec as f64);
            }
        }
        Ok(job)
    }

    fn with(record: JobRecord, mut segment: SegmentFile, config: &StageConfig) -> LocalJob {
        segment.remove_on_drop(false);
        let (channels, watched) = watched(config);
        let layout = segment.segment().header().layout().map_or(0, |l| l.version);
        LocalJob {
            last: snapshot(&segment, &watched),
            record,
            segment: JobSegment::Controlled(segment),
            layout,
            refusals_logged: 0,
            connected: 0,
            outside: Vec::new(),
            outside_seen: Vec::new(),
            watched,
            channels,
            pool_rates: BTreeMap::new(),
            allocation: BTreeMap::new(),
        }
    }

    /// Why this controller leaves the job's segment untouched, if it does.
    pub fn untouched(&self) -> Option<&str> {
        match &self.segment {
            JobSegment::Controlled(_) => None,
            JobSegment::Untouched(_, why) => Some(why),
        }
    }

    /// The layout that wrote the job's segment.
    pub fn layout(&self) -> u64 {
        self.layout
    }

    /// What `sluice jobs` shows of the job's segment: nothing when it is of this build's
    /// layout and no process refused it.
    pub fn segment_note(&self) -> Option<SegmentNote> {
        let refusals = self.segment.header().refusals();
        let untouched = matches!(self.segment, JobSegment::Untouched(..));
        (untouched || self.layout != LAYOUT_VERSION || refusals.count > 0).then_some(SegmentNote {
            layout: self.layout,
            untouched,
            refused: refusals.count,
            stage_layout: refusals.stage_layout,
        })
    }

    /// Observes the channels `config` names from now on.
    fn watch(&mut self, config: &StageConfig) {
        (self.channels, self.watched) = watched(config);
        if let JobSegment::Controlled(segment) = &self.segment {
            self.last = snapshot(segment, &self.watched);
        }
    }

    /// Puts a new policy in force: rewrites the configuration when it changed, sets the
    /// rules' limits, and starts new pools at their floor. An untouched segment stays as
    /// it is.
    pub fn apply_policy(&mut self, policy: &Policy) -> Result<(), LocalError> {
        let JobSegment::Controlled(segment_file) = &self.segment else {
            return Ok(());
        };
        let config = Self::stage_config(&mut self.record, policy)?;
        let segment = segment_file.segment();
        let text = config.to_text();
        let changed = segment.config().map(|(t, _)| t != text).unwrap_or(true);
        for s in &config.rules {
            segment_file.set_limit(s.slot as usize, rule_limit(&s.rule));
        }
        for s in &config.pools {
            let name = s.rule.name.clone().unwrap_or_default();
            if !self.pool_rates.contains_key(&name) {
                segment_file.set_limit(MAX_RULES + s.slot as usize, start_limit(&s.rule));
            }
        }
        let names: Vec<String> = config
            .pools
            .iter()
            .filter_map(|s| s.rule.name.clone())
            .collect();
        self.pool_rates.retain(|pool, _| names.contains(pool));
        if changed {
            segment.publish(&text)?;
            self.watch(&config);
        }
        Ok(())
    }

    /// Writes this node's share of `pool` into the job's bucket for it (not into an
    /// untouched segment).
    pub fn set_pool_rate(&mut self, pool: &str, rate: f64) {
        if self.write_pool_rate(pool, rate) {
            self.pool_rates.insert(pool.to_owned(), rate);
        }
    }

    /// Writes `rate` into the job's bucket for `pool` without making it the pushed
    /// rate (a hand-over's, see `relay`); whether the job has that bucket.
    pub(super) fn write_pool_rate(&mut self, pool: &str, rate: f64) -> bool {
        let (JobSegment::Controlled(segment), Some(&slot)) =
            (&self.segment, self.record.pool_slots.get(pool))
        else {
            return false;
        };
        // A zero rate would hold every call: the floor of one call (or byte) per second
        // keeps an application moving while the controller thinks again.
        let per_sec = (rate.max(1.0)).round() as u64;
        let limit = Limit::new(per_sec, (per_sec / 100).max(1));
        segment.set_limit(MAX_RULES + slot as usize, limit);
        true
    }

    /// The job's gate for `pool` now: calls arrived, and calls not yet returned; `None`
    /// without that bucket.
    pub(super) fn pool_activity(&self, pool: &str) -> Option<Activity> {
        let (JobSegment::Controlled(segment), Some(&slot)) =
            (&self.segment, self.record.pool_slots.get(pool))
        else {
            return None;
        };
        let channel = MAX_RULES + slot as usize;
        let mut total = ChannelTotal::default();
        for shard in segment.segment().shards_in_use() {
            total.add(&ChannelTotal::of(&shard.channels[channel]));
        }
        Some(Activity {
            arrivals: total.arrivals,
            outstanding: total.arrivals.saturating_sub(total.admitted) + total.waiting.min(1),
        })
    }

    /// What the job did since the last call, per pool and per rule, per second, and the
    /// latencies its pools sampled (the first time, since it was attached); nothing of
    /// an untouched segment. Logs the refusals its processes counted since the last call.
    pub fn observe(&mut self) -> JobObs {
        self.log_refusals();
        let JobSegment::Controlled(segment) = &self.segment else {
            return JobObs::default();
        };
        let now = snapshot(segment, &self.watched);
        let prev = std::mem::replace(&mut self.last, now);
        let rates = self.last.rates_since(&prev, &self.watched);
        let now = &self.last;
        let mut seen = JobObs::default();
        for (c, (channel, obs)) in self.channels.iter().zip(rates).enumerate() {
            match channel {
                Channel::Pool(name) => {
                    seen.pools.insert(name.clone(), obs);
                    seen.latency
                        .insert(name.clone(), now.latency_since(&prev, c));
                }
                Channel::Rule(name) => {
                    seen.rules.insert(name.clone(), obs);
                }
            }
        }
        seen
    }

    /// Keeps what the last scan found of the job's processes outside the stage, and adds
    /// it to what its report will name.
    pub fn set_outside(&mut self, found: Vec<crate::proto::OutsideStage>) {
        for f in &found {
            super::unstaged::merge(&mut self.outside_seen, f.clone());
        }
        self.outside = found;
    }

    /// Samples the shares last written, once per interval.
    pub fn sample_allocation(&mut self) {
        for (pool, &rate) in &self.pool_rates {
            self.allocation.entry(pool.clone()).or_default().add(rate);
        }
    }

    /// What the job's threads did on this node since its segment was made, per pool:
    /// calls admitted, bytes charged, seconds held, and its share over time. Nothing of
    /// an untouched segment, whose counters this build cannot read.
    pub fn totals(&self) -> BTreeMap<String, PoolTotals> {
        let JobSegment::Controlled(segment) = &self.segment else {
            return BTreeMap::new();
        };
        let now = snapshot(segment, &self.watched);
        let mut pools = BTreeMap::new();
        for ((channel, w), t) in self.channels.iter().zip(&self.watched).zip(now.totals()) {
            let Channel::Pool(name) = channel else {
                continue;
            };
            let mut p = PoolTotals {
                calls: t.admitted,
                bytes: t.bytes,
                held_s: t.wait_ns as f64 / 1e9,
                in_bytes: w.bytes,
                ..PoolTotals::default()
            };
            if let Some(a) = self.allocation.get(name) {
                a.write(&mut p);
            }
            pools.insert(name.clone(), p);
        }
        pools
    }

    /// Logs the refusals counted in the segment since they were last logged.
    fn log_refusals(&mut self) {
        let refusals = self.segment.header().refusals();
        let new = refusals.count.wrapping_sub(self.refusals_logged);
        if new == 0 {
            return;
        }
        self.refusals_logged = refusals.count;
        tracing::warn!(
            job = %self.record.job,
            "{new} process(es) of the job could not use its segment (layout {}) or a \
             configuration published into it; the stage of the last one is of layout {}: \
             those that started so pass every call through, unthrottled, those that were \
             running keep the rules they had; install the stage library of this release \
             on the node (their stage log says why)",
            self.layout,
            refusals.stage_layout
        );
    }
}

/// One job over one interval.
#[derive(Default)]
pub struct JobObs {
    /// Per pool, per second.
    pub pools: BTreeMap<String, ChannelObs>,
    /// Per rule, per second.
    pub rules: BTreeMap<String, ChannelObs>,
    /// Per pool: the latencies of the real calls it admitted, sampled by the stage.
    pub latency: BTreeMap<String, Latency>,
}

/// The channels of `config` a local observes, its rules' then its pools': what each is
/// and where it is in the segment.
fn watched(config: &StageConfig) -> (Vec<Channel>, Vec<Watched>) {
    let rules = config.rules.iter().map(|s| {
        let name = s.rule.name.clone().unwrap_or_else(|| s.rule.to_string());
        (Channel::Rule(name), s.slot as usize, &s.rule)
    });
    let pools = config.pools.iter().map(|s| {
        let name = s.rule.name.clone().unwrap_or_default();
        (Channel::Pool(name), MAX_RULES + s.slot as usize, &s.rule)
    });
    let weighed = |index: usize| {
        config
            .costs
            .iter()
            .any(|c| MAX_RULES + c.slot as usize == index && !c.costs.is_flat())
    };
    rules
        .chain(pools)
        .map(|(c, index, rule)| {
            let bytes = rule.rate.unit == Unit::Bytes;
            let weighed = weighed(index);
            (
                c,
                Watched {
                    index,
                    bytes,
                    weighed,
                },
            )
        })
        .collect()
}

/// `watched` in `segment` now.
fn snapshot(segment: &SegmentFile, watched: &[Watched]) -> Snapshot {
    Snapshot::take(segment.segment(), watched, monotonic_ns())
}

/// A rule's slot key: its name, else its text.
fn rule_key(rule: &Rule) -> String {
    rule.name.clone().unwrap_or_else(|| rule.to_string())
}

/// A pool's bucket before the first rate is pushed.
fn start_limit(pool: &Rule) -> Limit {
    let per_sec = ((pool.rate.per_sec as f64 * START_SHARE).round() as u64).max(1);
    Limit::new(per_sec, (per_sec / 100).max(1))
}

/// Gives each item the slot its key had, else a slot never used by this job, else any
/// free one; forgets the slots of keys no longer present.
fn assign(
    slots: &mut BTreeMap<String, u8>,
    items: Vec<Rule>,
    key: impl Fn(&Rule) -> String,
    max: usize,
) -> Vec<Slotted> {
    let keys: Vec<String> = items.iter().map(&key).collect();
    let highest = slots.values().copied().max().map_or(0, |s| s as usize + 1);
    slots.retain(|k, _| keys.contains(k));
    let mut taken = [false; MAX_RULES];
    for &s in slots.values() {
        taken[s as usize] = true;
    }
    let mut fresh = (highest..max).chain(0..highest);
    items
        .into_iter()
        .zip(keys)
        .map(|(rule, k)| {
            let slot = *slots.entry(k).or_insert_with(|| {
                let s = fresh.by_ref().find(|&s| !taken[s]).unwrap_or(0);
                taken[s] = true;
                s as u8
            });
            Slotted { slot, rule }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(texts: &[&str]) -> Vec<Rule> {
        texts.iter().map(|t| parse_rule(t).unwrap()).collect()
    }

    /// A rule keeps its slot when others come and go, and a new rule takes a slot no
    /// rule of the job used before, so its counters start from its own.
    #[test]
    fn slots_survive_changes() {
        let mut slots = BTreeMap::new();
        let key = rule_key;
        let a = assign(
            &mut slots,
            rules(&["a: op=open rate=1/s", "b: op=getattr rate=2/s"]),
            key,
            64,
        );
        assert_eq!((a[0].slot, a[1].slot), (0, 1));
        let b = assign(
            &mut slots,
            rules(&["c: op=mkdir rate=1/s", "b: op=getattr rate=2/s"]),
            key,
            64,
        );
        assert_eq!((b[0].slot, b[1].slot), (2, 1));
    }
}
