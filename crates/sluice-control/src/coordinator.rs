//! The state a global controller holds, and a local one in single-node mode: the
//! configuration (pools, admin rules, job settings) with its file, and the [`Cluster`]
//! computation it drives. Every admin change is checked whole, applied to the running
//! computation, and saved atomically in the state directory before it is acknowledged,
//! so a restart loses nothing an administrator set (see [`ConfigStore`] for how the saved
//! configuration and the site's file combine).

use std::collections::BTreeMap;

use sluice_core::rule::Rate;
use sluice_policy::ParamValue;
use sluice_policy::registry::INTERVAL_S;
use sluice_policy::tree::Shares;

use crate::audit::{Event, Who};
use crate::cluster::{
    AutoCapacity, Cluster, ClusterError, JobSetting, JobView, NodeRates, PoolPlan, PoolView,
};
use crate::config::{AdminError, AdminErrorKind, ConfigStore, ControlConfig, Reloaded};
use crate::proto;
use crate::report::Reports;
use crate::source::learn::{self, CostLearner};
use crate::source::{Poller, SourceSpec, Wants};

/// The configuration and the computation it drives.
pub struct Coordinator {
    config: ControlConfig,
    /// Where the configuration comes from and is kept; `None` keeps it in memory only.
    store: Option<ConfigStore>,
    cluster: Cluster,
    /// Bumped on every change of pools or rules, so that sessions know to resend them.
    policy_version: u64,
    /// The settings last given to the cluster, to clear the ones removed.
    settings: Vec<(String, Option<String>)>,
    /// The reports of jobs that ended, and the allocations of those that run.
    reports: Reports,
    /// The shares last read from Slurm (`slurm_shares = true`); the configuration's
    /// win over them node by node.
    slurm_shares: Shares,
    /// By pool steered by its server or learning its costs from it, and by source: the
    /// thread reading it, and the interval it reads at.
    sources: BTreeMap<(String, String), (Poller, std::time::Duration)>,
    /// By pool learning its costs from its server (`costs_from`): what it learned.
    learners: BTreeMap<String, CostLearner>,
}

/// An admin change in force but not yet saved, with the configuration it replaced.
#[derive(Debug)]
pub struct Applied {
    before: ControlConfig,
    after: ControlConfig,
}

/// Why an admin change or a reload was refused; nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// The change itself is wrong (bad input, or names nothing).
    #[error("{0}")]
    Admin(#[from] AdminError),
    /// The configuration could not be read or written.
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    /// The computation refused it (an algorithm's parameters, say).
    #[error("{0}")]
    Cluster(#[from] ClusterError),
}

impl ChangeError {
    /// Whether the change named something that does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, ChangeError::Admin(e) if e.kind == AdminErrorKind::NotFound)
    }

    /// Whether the fault is in the request rather than in the controller.
    pub fn is_bad_input(&self) -> bool {
        !matches!(
            self,
            ChangeError::Config(crate::config::ConfigError::Write { .. })
        )
    }
}

impl Coordinator {
    /// A coordinator running `config`; changes are saved in `store` when given.
    pub fn new(config: ControlConfig, store: Option<ConfigStore>) -> Result<Self, ChangeError> {
        let reports = Reports::open(
            store.as_ref().map(ConfigStore::state_dir),
            config.report_retention,
        );
        let mut c = Coordinator {
            config: ControlConfig::default(),
            reports,
            store,
            cluster: Cluster::new(Default::default())?,
            policy_version: 0,
            settings: Vec::new(),
            slurm_shares: Shares::new(),
            sources: BTreeMap::new(),
            learners: BTreeMap::new(),
        };
        c.install(config)?;
        Ok(c)
    }

    /// The configuration in force.
    pub fn config(&self) -> &ControlConfig {
        &self.config
    }

    /// The computation, for reports and views.
    pub fn cluster(&mut self) -> &mut Cluster {
        &mut self.cluster
    }

    /// Bumped on every change of pools or rules.
    pub fn policy_version(&self) -> u64 {
        self.policy_version
    }

    /// Pools and rules as local controllers receive them.
    pub fn policy(&self) -> proto::Policy {
        proto::Policy {
            pools: self
                .config
                .pools
                .iter()
                .map(|p| p.rule().to_string())
                .collect(),
            rules: self.config.rules.iter().map(|r| r.to_string()).collect(),
            interval_s: self.config.interval.as_secs_f64(),
            watches: self
                .config
                .pools
                .iter()
                .filter_map(|p| {
                    let watch = &p.auto.as_ref()?.watch;
                    (!watch.is_empty()).then(|| (p.name.clone(), watch.clone()))
                })
                .collect(),
            costs: self
                .pool_costs()
                .into_iter()
                .map(|(pool, c)| (pool, c.to_string()))
                .collect(),
        }
    }

    /// What each operation costs the pools that weigh them, by pool.
    pub fn pool_costs(&self) -> Vec<(String, sluice_core::cost::Costs)> {
        self.config
            .pools
            .iter()
            .filter_map(|p| Some((p.name.clone(), self.costs(p)?)))
            .collect()
    }

    /// What each operation costs pool `p`: its fixed costs, and the learned ones for the
    /// operations they do not name; `None`, one unit a call.
    fn costs(&self, p: &crate::config::PoolSpec) -> Option<sluice_core::cost::Costs> {
        let learned = self.learners.get(&p.name).and_then(CostLearner::costs);
        learn::merged(p.costs.as_ref(), learned.as_ref())
    }

    /// Reads the configuration file again (SIGHUP): a file whose text changed since it
    /// was last read replaces the configuration in force; on error the one in force
    /// stays.
    pub fn reload(&mut self) -> Result<Reloaded, ChangeError> {
        let Some(store) = self.store.clone() else {
            return Ok(Reloaded::NoFile);
        };
        let reloaded = store.reload(&self.config)?;
        if let Reloaded::Changed { config, text, .. } = &reloaded {
            let before = self.config.clone();
            self.install(ControlConfig::clone(config))?;
            store.keep_file(&before, config, text)?;
        }
        Ok(reloaded)
    }

    /// Applies an admin change: checked on a copy and put in force in the computation,
    /// not yet saved. [`Coordinator::keep`] saves it; [`Coordinator::undo`] takes back one
    /// that could not be saved. A change the computation refuses (an algorithm's
    /// parameters, say) leaves the configuration before it in force.
    pub fn change(
        &mut self,
        edit: impl FnOnce(&mut ControlConfig) -> Result<(), AdminError>,
    ) -> Result<Applied, ChangeError> {
        let mut next = self.config.clone();
        edit(&mut next)?;
        let before = self.config.clone();
        if let Err(refused) = self.install(next.clone()) {
            // The computation may hold part of what it refused; what it ran before, it
            // accepted then.
            let _ = self.install(before);
            return Err(refused);
        }
        Ok(Applied {
            before,
            after: next,
        })
    }

    /// Saves the configuration in force in the state directory, so that a restart finds
    /// it.
    pub fn keep(&self) -> Result<(), ChangeError> {
        if let Some(store) = &self.store {
            store.save(&self.config)?;
        }
        Ok(())
    }

    /// Takes back `applied`, a change that could not be saved: the configuration before
    /// it is in force again, unless a reload replaced it since (the reload saved its own).
    pub fn undo(&mut self, applied: Applied) -> Result<(), ChangeError> {
        if self.config == applied.after {
            self.install(applied.before)?;
        }
        Ok(())
    }

    /// Puts the shares read from Slurm in force (under the configuration's own).
    pub fn set_slurm_shares(&mut self, shares: Shares) {
        self.slurm_shares = shares;
        self.cluster
            .set_shares(merged(&self.slurm_shares, &self.config.shares));
    }

    /// Makes `config` the one in force: pools and settings into the computation.
    fn install(&mut self, config: ControlConfig) -> Result<(), ChangeError> {
        let interval_s = config.interval.as_secs_f64();
        self.cluster.set_stale_after(
            config
                .stale_after
                .as_millis()
                .div_ceil(config.interval.as_millis()) as u64,
        );
        let plans = config
            .pools
            .iter()
            .map(|p| {
                let mut params = p.policy_params();
                params.set(INTERVAL_S.name, ParamValue::Number(interval_s));
                PoolPlan {
                    name: p.name.clone(),
                    capacity: p.capacity.per_sec as f64,
                    algorithm: p.algorithm.clone(),
                    params,
                    min_share: p.min_share,
                    estimator: p.estimator,
                    auto: p.auto.as_ref().map(|a| AutoCapacity {
                        target_p99_s: a.target_p99.as_secs_f64(),
                        start: p.capacity.per_sec as f64,
                        min: a.min.per_sec as f64,
                        max: a.max.per_sec as f64,
                        step: a.step.per_sec as f64,
                        backoff: a.backoff,
                        from_server: a.source.is_some(),
                    }),
                    tree: p.tree.clone(),
                }
            })
            .collect();
        self.cluster.set_pools(plans)?;
        self.cluster
            .set_shares(merged(&self.slurm_shares, &config.shares));
        self.start_sources(&config);
        self.reports.set_retention(config.report_retention);
        for (job, pool) in std::mem::take(&mut self.settings) {
            self.cluster
                .set_job(&job, pool.as_deref(), JobSetting::default())?;
        }
        for spec in &config.jobs {
            let setting = JobSetting {
                limit: spec.limit.map(|l| l.per_sec as f64),
                weight: spec.weight,
                period_s: spec.period.map(|p| p.as_secs_f64()),
            };
            self.cluster
                .set_job(&spec.job, spec.pool.as_deref(), setting)?;
            self.settings.push((spec.job.clone(), spec.pool.clone()));
        }
        if config.pools != self.config.pools
            || config.rules != self.config.rules
            || config.interval != self.config.interval
        {
            self.policy_version += 1;
        }
        self.config = config;
        Ok(())
    }

    /// Keeps one reading thread per pool and source (a pool steered by its server, a pool
    /// learning its costs from it, or both from one): a new one for a new source, what it
    /// reads or interval, none for a pool that no longer reads one. What a pool learned
    /// stays while it learns from the same source.
    fn start_sources(&mut self, config: &ControlConfig) {
        let interval = config.interval;
        let mut wanted: BTreeMap<(String, String), (&SourceSpec, Wants)> = BTreeMap::new();
        for p in &config.pools {
            let capacity = p.auto.as_ref().and_then(|a| a.source.as_ref());
            let reads = capacity
                .map(|s| (s, true))
                .into_iter()
                .chain(p.costs_from.as_ref().map(|s| (s, false)));
            for (spec, for_capacity) in reads {
                let none = Wants {
                    capacity: false,
                    costs: false,
                };
                let (_, wants) = wanted
                    .entry((p.name.clone(), spec.to_string()))
                    .or_insert((spec, none));
                wants.capacity |= for_capacity;
                wants.costs |= !for_capacity;
            }
        }
        self.sources.retain(|key, (poller, every)| {
            wanted
                .get(key)
                .is_some_and(|(_, wants)| *wants == poller.wants())
                && *every == interval
        });
        let before = &self.config.pools;
        self.learners.retain(|pool, _| {
            let source = |pools: &[crate::config::PoolSpec]| {
                pools
                    .iter()
                    .find(|p| &p.name == pool)
                    .and_then(|p| p.costs_from.clone())
            };
            source(&config.pools).is_some() && source(&config.pools) == source(before)
        });
        for ((pool, key), (spec, wants)) in wanted {
            if self.sources.contains_key(&(pool.clone(), key.clone())) {
                continue;
            }
            if wants.costs {
                self.learners.entry(pool.clone()).or_default();
            }
            let name = pool.as_str();
            match Poller::start(name, spec.clone(), wants, interval) {
                Ok(poller) => {
                    if wants.capacity {
                        tracing::info!(pool = name, source = %spec, "capacity read from the server");
                    }
                    if wants.costs {
                        tracing::info!(pool = name, source = %spec, "costs learned from the server");
                    }
                    self.sources.insert((pool, key), (poller, interval));
                }
                // The pool keeps its capacity and costs, as with a source that does not
                // answer.
                Err(e) => tracing::error!(pool = name, source = %spec, "cannot start reading: {e}"),
            }
        }
    }

    /// One control cycle: the rates to push, per node. Costs learned from a server that
    /// moved are put in force first (the policy's version moves with them).
    pub fn compute(&mut self, cycle: u64) -> Result<Vec<NodeRates>, ClusterError> {
        for ((pool, _), (poller, _)) in &self.sources {
            let wants = poller.wants();
            if wants.capacity
                && let Some(r) = poller.take()
            {
                self.cluster.report_server_latency(pool, r.latency_s);
            }
            if !wants.costs {
                continue;
            }
            let ops = poller.take_ops();
            let Some(learner) = self.learners.get_mut(pool) else {
                continue;
            };
            if ops.is_empty() {
                continue;
            }
            let Some(change) = learner.learn(poller.spec(), &ops) else {
                continue;
            };
            // What the pool charges: a move of a learned cost that a fixed one overrides
            // changes nothing.
            let fixed = self
                .config
                .pools
                .iter()
                .find(|p| &p.name == pool)
                .and_then(|p| p.costs.as_ref());
            let before = learn::merged(fixed, change.before.as_ref());
            let after = learn::merged(fixed, Some(&change.after));
            if before == after {
                continue;
            }
            let who = Who::server(poller.spec());
            let what = format!(
                "pool {pool:?} costs (mean latency at the server: {})",
                change.why
            );
            let text = |c: &Option<sluice_core::cost::Costs>| c.as_ref().map(ToString::to_string);
            Event::new("costs_learned", &who, what)
                .done(text(&before).as_deref(), text(&after).as_deref());
            self.policy_version += 1;
        }
        let interval_s = self.config.interval.as_secs_f64();
        let rates = self.cluster.compute(cycle, interval_s)?;
        self.reports.sample(&self.cluster.jobs());
        Ok(rates)
    }

    /// Rows of jobs that ended on `node` (as its local made them), into their reports.
    pub fn finished(&mut self, node: &str, rows: Vec<proto::JobSummary>) {
        for row in rows {
            self.reports.finished(node, row);
        }
    }

    /// The report of `job`, if one is kept (partial while the job still runs somewhere).
    pub fn summary(&self, job: &str) -> Option<proto::JobSummary> {
        let running = self.cluster.jobs().iter().any(|j| j.job == job);
        self.reports.get(job, running)
    }

    /// Jobs as `sluice jobs` shows them.
    pub fn jobs(&self) -> Vec<JobView> {
        self.cluster.jobs()
    }

    /// Pools as `sluice pool list` shows them.
    pub fn pools(&self) -> Vec<PoolView> {
        self.cluster.pools()
    }

    /// The pools of the configuration by name, with their views.
    pub fn pool_infos(&self) -> Vec<proto::PoolInfo> {
        let views: BTreeMap<String, PoolView> = self
            .pools()
            .into_iter()
            .map(|v| (v.name.clone(), v))
            .collect();
        self.config
            .pools
            .iter()
            .map(|p| {
                let view = views.get(&p.name);
                proto::PoolInfo {
                    name: p.name.clone(),
                    filter: p.filter.clone(),
                    // An automatic pool's capacity is the one it found.
                    capacity: match (&p.auto, view) {
                        (Some(_), Some(v)) => {
                            let found = Rate {
                                per_sec: v.capacity.round() as u64,
                                ..p.capacity
                            };
                            format!("auto {found}")
                        }
                        _ => p.capacity.to_string(),
                    },
                    algorithm: p.algorithm.clone(),
                    params: p
                        .params
                        .iter()
                        .map(|(k, v)| format!("{k}={}", param_text(v)))
                        .collect(),
                    allocated: view.map_or(0.0, |v| v.allocated),
                    used: view.map_or(0.0, |v| v.used),
                    jobs: view.map_or(0, |v| v.jobs as u32),
                    latency_p99_s: view.and_then(|v| v.latency_p99_s).unwrap_or(0.0),
                    target_p99_s: p.auto.as_ref().map_or(0.0, |a| a.target_p99.as_secs_f64()),
                    latency_from_server: p.auto.as_ref().is_some_and(|a| a.source.is_some()),
                    costs: self.costs(p).map_or_else(String::new, |c| c.to_string()),
                    costs_from: p
                        .costs_from
                        .as_ref()
                        .map_or_else(String::new, ToString::to_string),
                    estimator: p
                        .estimator_in_force()
                        .map_or_else(String::new, |e| e.name().to_owned()),
                    tree: p
                        .tree
                        .as_ref()
                        .map_or_else(String::new, ToString::to_string),
                    nodes: view.map_or_else(Vec::new, |v| {
                        v.nodes
                            .iter()
                            .map(|n| proto::TreeNode {
                                depth: n.depth,
                                level: n.level.clone(),
                                name: n.name.clone(),
                                allocation: n.allocation,
                                rate: n.rate,
                                demand: n.demand,
                                weight: n.weight,
                            })
                            .collect()
                    }),
                }
            })
            .collect()
    }
}

fn param_text(v: &ParamValue) -> String {
    match v {
        ParamValue::Number(n) => n.to_string(),
        ParamValue::Bool(b) => b.to_string(),
    }
}

/// `slurm`'s shares with `config`'s over them, node by node.
fn merged(slurm: &Shares, config: &Shares) -> Shares {
    let mut all = slurm.clone();
    for (level, name, parent, share) in config.iter() {
        // Both were checked when set: every share is > 0.
        let _ = all.set(level, name, parent, Some(share));
    }
    all
}
