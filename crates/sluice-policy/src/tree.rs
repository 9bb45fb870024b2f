//! Hierarchical fair share: a pool's capacity divided down a tree whose levels are
//! job attributes (account, user, QOS, partition, then the jobs themselves), the way a
//! Slurm site already divides CPU time by its association tree.
//!
//! At every node of the tree, the amount the node was given is divided among its
//! children by *weighted max-min fairness capped at demand* (water-filling): each child
//! gets `min(demand, λ·weight)` with λ as large as the amount allows, where a child's
//! demand is the sum of its jobs' demands (their `arrivals`) and its weight is what the
//! level's [`Rule`] says (its share, 1, or its node count). So what a subtree leaves
//! unused goes first to its siblings, in proportion to their weights, and only what the
//! whole parent cannot use goes up to the parent's siblings: ThemisIO's *opportunity
//! fairness*, a share enforced only while demand exceeds what there is. When every job's
//! demand is met, the rest is handed down by weight as well (uncapped), so the whole
//! capacity is always given out and a job can grow into it at the next interval.
//!
//! The division is a pure function of the round, the jobs' attributes and the shares:
//! no clock, no memory, no hash-order iteration (jobs are grouped by sorting).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::obs::{Round, is_positive};
use crate::share::{FillBuffers, add_proportional, water_fill_into};

/// A job attribute a level of the tree groups jobs by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Attr {
    /// The job's account (Slurm's `--account`; `sluice run --account`).
    Account,
    /// The job's user, from the uid it attached with.
    User,
    /// The job's quality of service (Slurm's `--qos`).
    Qos,
    /// The job's partition (Slurm's `--partition`).
    Partition,
    /// The jobs themselves: always the last level, whose nodes are the leaves.
    Job,
}

impl Attr {
    /// Every attribute, in the order the docs present them.
    pub const ALL: [Attr; 5] = [
        Attr::Account,
        Attr::User,
        Attr::Qos,
        Attr::Partition,
        Attr::Job,
    ];

    /// The name an administrator writes.
    pub fn name(self) -> &'static str {
        match self {
            Attr::Account => "account",
            Attr::User => "user",
            Attr::Qos => "qos",
            Attr::Partition => "partition",
            Attr::Job => "job",
        }
    }

    /// The rule a level of this attribute follows when the administrator names none:
    /// jobs by node count (ThemisIO's job-size fairness), every other level by share.
    pub fn default_rule(self) -> Rule {
        match self {
            Attr::Job => Rule::Nodes,
            _ => Rule::Share,
        }
    }
}

impl fmt::Display for Attr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Attr {
    type Err = TreeError;

    fn from_str(s: &str) -> Result<Self, TreeError> {
        Attr::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| TreeError::UnknownLevel(s.to_owned()))
    }
}

/// How one level weighs the children of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rule {
    /// By share: the administrator's (or Slurm's) share of the child, 1 when none is
    /// given; at the job level, the job's weight (its setting, else its node count).
    Share,
    /// Equally.
    Equal,
    /// By node count: a job's nodes, a group's the sum of its jobs' nodes.
    Nodes,
}

impl Rule {
    /// Every rule, in the order the docs present them.
    pub const ALL: [Rule; 3] = [Rule::Share, Rule::Equal, Rule::Nodes];

    /// The name an administrator writes.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Share => "share",
            Rule::Equal => "equal",
            Rule::Nodes => "nodes",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Rule {
    type Err = TreeError;

    fn from_str(s: &str) -> Result<Self, TreeError> {
        Rule::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| TreeError::UnknownRule(s.to_owned()))
    }
}

/// Why a tree or a share was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TreeError {
    /// A level that is not a job attribute.
    #[error("tree: unknown level {0:?} (one of: account, user, qos, partition, job)")]
    UnknownLevel(String),
    /// A rule that does not exist.
    #[error("tree: unknown rule {0:?} (one of: share, equal, nodes)")]
    UnknownRule(String),
    /// A level named twice.
    #[error("tree: level {0} is given twice")]
    Repeated(Attr),
    /// The levels do not end with `job`, or `job` is not last.
    #[error("tree: the last level, and only it, is job (e.g. \"account,user,job\")")]
    JobNotLast,
    /// A share that is not a finite number > 0.
    #[error("shares.{level}.{name}: must be a finite number > 0")]
    Share {
        /// The level.
        level: Attr,
        /// The child it is the share of.
        name: String,
    },
}

/// One level of a tree: the attribute it groups by and how it weighs the groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Level {
    /// The attribute.
    pub attr: Attr,
    /// The rule.
    pub rule: Rule,
}

/// The shape of a tree: its levels, top first, `job` last. Written
/// `account,user,job` (each level's default rule) or `account:share,user:equal,job:nodes`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TreeShape {
    levels: Vec<Level>,
}

impl TreeShape {
    /// The levels, top first.
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }
}

impl FromStr for TreeShape {
    type Err = TreeError;

    fn from_str(text: &str) -> Result<Self, TreeError> {
        let mut levels: Vec<Level> = Vec::new();
        for part in text.split(',').map(str::trim) {
            let (attr, rule) = match part.split_once(':') {
                Some((attr, rule)) => {
                    let attr: Attr = attr.trim().parse()?;
                    (attr, rule.trim().parse()?)
                }
                None => {
                    let attr: Attr = part.parse()?;
                    (attr, attr.default_rule())
                }
            };
            if levels.iter().any(|l| l.attr == attr) {
                return Err(TreeError::Repeated(attr));
            }
            levels.push(Level { attr, rule });
        }
        let job_last = levels.last().is_some_and(|l| l.attr == Attr::Job);
        if !job_last {
            return Err(TreeError::JobNotLast);
        }
        Ok(TreeShape { levels })
    }
}

impl fmt::Display for TreeShape {
    /// The canonical form, every rule written out: parsing it gives the same shape.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, level) in self.levels.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}:{}", level.attr, level.rule)?;
        }
        Ok(())
    }
}

/// The attributes of one job that a tree can group by (the job's id is the
/// observation's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct JobAttrs {
    /// The job's account; empty when unknown (such jobs share one group).
    #[serde(default)]
    pub account: String,
    /// The job's user name (or uid as text when the name is unknown).
    #[serde(default)]
    pub user: String,
    /// The job's QOS; empty when unknown.
    #[serde(default)]
    pub qos: String,
    /// The job's partition; empty when unknown.
    #[serde(default)]
    pub partition: String,
}

impl JobAttrs {
    /// The attribute `attr` (`""` for [`Attr::Job`], which is the id's).
    pub fn get(&self, attr: Attr) -> &str {
        match attr {
            Attr::Account => &self.account,
            Attr::User => &self.user,
            Attr::Qos => &self.qos,
            Attr::Partition => &self.partition,
            Attr::Job => "",
        }
    }
}

/// The shares of the tree's nodes, by level and name; a node with none has share 1.
///
/// A share can also be given for a name under one parent (Slurm's user associations are
/// per account: `alice` may have share 2 in `physics` and 1 in `chemistry`); that one
/// wins over the name's plain share.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shares {
    by_level: BTreeMap<Attr, BTreeMap<String, ShareOf>>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct ShareOf {
    plain: Option<f64>,
    /// By the parent's name.
    under: BTreeMap<String, f64>,
}

impl Shares {
    /// No shares: every node weighs 1.
    pub fn new() -> Self {
        Shares::default()
    }

    /// Sets the share of `name` at `level` (under any parent, or under `parent` only);
    /// `None` removes it.
    pub fn set(
        &mut self,
        level: Attr,
        name: &str,
        parent: Option<&str>,
        share: Option<f64>,
    ) -> Result<(), TreeError> {
        if share.is_some_and(|s| !is_positive(s)) {
            return Err(TreeError::Share {
                level,
                name: name.to_owned(),
            });
        }
        let names = self.by_level.entry(level).or_default();
        let entry = names.entry(name.to_owned()).or_default();
        match (parent, share) {
            (None, s) => entry.plain = s,
            (Some(p), Some(s)) => {
                entry.under.insert(p.to_owned(), s);
            }
            (Some(p), None) => {
                entry.under.remove(p);
            }
        }
        if entry.plain.is_none() && entry.under.is_empty() {
            names.remove(name);
            if names.is_empty() {
                self.by_level.remove(&level);
            }
        }
        Ok(())
    }

    /// The share of `name` at `level` under `parent` (its parent's name, `""` at the
    /// top): the one given under that parent, else its plain one, else 1.
    pub fn get(&self, level: Attr, name: &str, parent: &str) -> f64 {
        self.given(level, name, parent).unwrap_or(1.0)
    }

    fn given(&self, level: Attr, name: &str, parent: &str) -> Option<f64> {
        let entry = self.by_level.get(&level)?.get(name)?;
        entry.under.get(parent).copied().or(entry.plain)
    }

    /// Every share given: (level, name, parent, share), in order.
    pub fn iter(&self) -> impl Iterator<Item = (Attr, &str, Option<&str>, f64)> {
        self.by_level.iter().flat_map(|(&level, names)| {
            names.iter().flat_map(move |(name, of)| {
                let plain = of.plain.map(|s| (level, name.as_str(), None, s));
                let under = of
                    .under
                    .iter()
                    .map(move |(p, &s)| (level, name.as_str(), Some(p.as_str()), s));
                plain.into_iter().chain(under)
            })
        })
    }

    /// Whether no share is given.
    pub fn is_empty(&self) -> bool {
        self.by_level.is_empty()
    }
}

/// One node of a divided tree, for views: what its subtree was given, used and asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeNode {
    /// Its level (index into the shape's levels); the leaves are at the last.
    pub depth: usize,
    /// A job of its subtree (index into the round's jobs), by which a caller names it:
    /// its attribute at this level, or its id at the job level.
    pub job: usize,
    /// Σ allocation of its jobs.
    pub allocation: f64,
    /// Σ usage of its jobs.
    pub usage: f64,
    /// Σ demand (arrivals) of its jobs.
    pub demand: f64,
    /// The weight its level's rule gave it among its siblings.
    pub weight: f64,
}

/// A tree's division of one round.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Division {
    /// One rate per job, in the round's order.
    pub rates: Vec<f64>,
    /// Every node of the tree but the root, in depth-first order (a node, then its
    /// children), children by name.
    pub nodes: Vec<TreeNode>,
}

impl TreeShape {
    /// Divides `round`'s capacity among its jobs, whose attributes are `attrs` (one per
    /// job, in the round's order), with the nodes' `shares`; a job's demand is its
    /// `arrivals`, its nodes its `nodes` (1 when not given).
    ///
    /// # Panics
    ///
    /// If `attrs` and the round's jobs differ in length.
    pub fn divide(&self, shares: &Shares, round: &Round<'_>, attrs: &[&JobAttrs]) -> Division {
        let mut divider = Divider::default();
        self.divide_with(&mut divider, None, shares, round, attrs);
        divider.division
    }

    /// [`TreeShape::divide`] in `divider`'s buffers: a controller that divides a pool
    /// at every interval keeps one, and while the pool's jobs and their attributes stay
    /// the same its next division sorts nothing and allocates nothing.
    ///
    /// `generation` is the caller's name for its jobs and their attributes (a
    /// controller's layout), which it changes whenever they may have changed: given the
    /// same as at `divider`'s last division, the tree is taken as it was, unchecked.
    /// Otherwise (or with `None`) the last grouping is checked, which costs a
    /// comparison of each job with the next, and sorted again only where it fails. The
    /// result is then the same as [`TreeShape::divide`]'s, whatever `divider` held.
    ///
    /// # Panics
    ///
    /// If `attrs` and the round's jobs differ in length.
    pub fn divide_with<'d>(
        &self,
        divider: &'d mut Divider,
        generation: Option<u64>,
        shares: &Shares,
        round: &Round<'_>,
        attrs: &[&JobAttrs],
    ) -> &'d Division {
        let n = round.jobs().len();
        assert_eq!(n, attrs.len(), "one set of attributes per job");
        let same = generation.is_some()
            && divider.generation == generation
            && divider.levels == self.levels
            && divider.order.len() == n;
        // The last grouping holds when each job comes before the next in it: one pass
        // of comparisons of neighbours instead of a sort's n·log n.
        let kept = same || (divider.order.len() == n && divider.build(self, round, attrs, true));
        if divider.levels != self.levels {
            divider.levels.clone_from(&self.levels);
        }
        divider.generation = generation;
        if !kept {
            divider.order.clear();
            divider.order.extend(0..n);
            divider
                .order
                .sort_unstable_by(|&a, &b| self.compare(round, attrs, a, b).0);
            divider.build(self, round, attrs, false);
        }
        divider.divide(self, shares, round, attrs);
        &divider.division
    }

    /// Jobs `a` and `b` (indices) in the tree's order (by the attributes of its levels
    /// in turn, then by id), and the first level at which they differ.
    fn compare(
        &self,
        round: &Round<'_>,
        attrs: &[&JobAttrs],
        a: usize,
        b: usize,
    ) -> (std::cmp::Ordering, usize) {
        let grouping = &self.levels[..self.levels.len() - 1];
        for (depth, level) in grouping.iter().enumerate() {
            let o = attrs[a].get(level.attr).cmp(attrs[b].get(level.attr));
            if o.is_ne() {
                return (o, depth);
            }
        }
        (round.cmp_ids(a, b), grouping.len())
    }
}

/// No node (a leaf's first child, a last child's next sibling).
const NONE: usize = usize::MAX;

/// One node of the tree being divided; the root is the first.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Its level (the root's is unused).
    depth: usize,
    /// Its jobs: `order[start..end]`.
    start: usize,
    end: usize,
    first_child: usize,
    last_child: usize,
    /// Its next sibling.
    next: usize,
}

/// What a tree's divisions keep from one round to the next: the jobs' grouping, the
/// tree's nodes, and the buffers each node's water-filling works in (see
/// [`TreeShape::divide_with`]).
#[derive(Debug, Clone, Default)]
pub struct Divider {
    /// The caller's generation of the jobs at the last division.
    generation: Option<u64>,
    /// The tree's levels at the last division.
    levels: Vec<Level>,
    /// The jobs, grouped by the levels' attributes in order, then by id.
    order: Vec<usize>,
    /// The root, then every node depth first, children by name (as `Division::nodes`).
    slots: Vec<Slot>,
    /// While building: the node open at each depth (the root at 0, then one per level).
    open: Vec<usize>,
    /// By slot: what it was given.
    given: Vec<f64>,
    /// One node's children, their demands, weights and shares.
    children: Vec<usize>,
    demands: Vec<f64>,
    weights: Vec<f64>,
    shares: Vec<f64>,
    fill: FillBuffers,
    division: Division,
}

impl Divider {
    /// The tree's nodes from `order`, whose neighbours are compared for the level at
    /// which a new node starts; with `check`, false (and the nodes unusable) as soon as
    /// a job does not come strictly after the one before it.
    fn build(
        &mut self,
        shape: &TreeShape,
        round: &Round<'_>,
        attrs: &[&JobAttrs],
        check: bool,
    ) -> bool {
        let depths = shape.levels().len();
        let n = self.order.len();
        let root = Slot {
            depth: 0,
            start: 0,
            end: n,
            first_child: NONE,
            last_child: NONE,
            next: NONE,
        };
        self.slots.clear();
        self.slots.push(root);
        self.open.clear();
        self.open.resize(depths + 1, 0);
        for k in 0..n {
            let split = if k == 0 {
                0
            } else {
                let (o, depth) = shape.compare(round, attrs, self.order[k - 1], self.order[k]);
                if check && o.is_ge() {
                    return false;
                }
                depth
            };
            for depth in split..depths {
                if k > 0 {
                    self.slots[self.open[depth + 1]].end = k;
                }
                let at = self.slots.len();
                let parent = self.open[depth];
                self.slots.push(Slot {
                    depth,
                    start: k,
                    end: n,
                    ..root
                });
                match self.slots[parent].last_child {
                    NONE => self.slots[parent].first_child = at,
                    last => self.slots[last].next = at,
                }
                self.slots[parent].last_child = at;
                self.open[depth + 1] = at;
            }
        }
        true
    }

    /// Divides the round's capacity down the nodes built, into `division`: at each node,
    /// in depth-first order so that a node's amount is known before its children's.
    fn divide(
        &mut self,
        shape: &TreeShape,
        shares: &Shares,
        round: &Round<'_>,
        attrs: &[&JobAttrs],
    ) {
        let jobs = round.jobs();
        let levels = shape.levels();
        let order = &self.order;
        let sum = |slot: &Slot, f: &dyn Fn(usize) -> f64| {
            order[slot.start..slot.end]
                .iter()
                .map(|&j| f(j))
                .sum::<f64>()
        };
        self.division.rates.clear();
        self.division.rates.resize(jobs.len(), 0.0);
        let blank = TreeNode {
            depth: 0,
            job: 0,
            allocation: 0.0,
            usage: 0.0,
            demand: 0.0,
            weight: 0.0,
        };
        // By slot but the root's, which is depth-first order.
        self.division.nodes.clear();
        self.division.nodes.resize(self.slots.len() - 1, blank);
        self.given.clear();
        self.given.resize(self.slots.len(), 0.0);
        self.given[0] = round.capacity();
        for at in 0..self.slots.len() {
            let node = self.slots[at];
            if node.first_child == NONE {
                continue;
            }
            let (depth, parent) = if at == 0 {
                (0, "")
            } else {
                let attr = levels[node.depth].attr;
                (node.depth + 1, attrs[order[node.start]].get(attr))
            };
            let level = levels[depth];
            self.children.clear();
            let mut child = node.first_child;
            while child != NONE {
                self.children.push(child);
                child = self.slots[child].next;
            }
            self.demands.clear();
            self.weights.clear();
            for &c in &self.children {
                let slot = &self.slots[c];
                let first = order[slot.start];
                self.demands.push(sum(slot, &|j| jobs[j].arrivals));
                self.weights.push(match (level.rule, level.attr) {
                    (Rule::Equal, _) => 1.0,
                    (Rule::Nodes, _) => {
                        sum(slot, &|j| f64::from(jobs[j].nodes.unwrap_or(1).max(1)))
                    }
                    (Rule::Share, Attr::Job) => jobs[first].weight_or_one(),
                    (Rule::Share, attr) => shares.get(attr, attrs[first].get(attr), parent),
                });
            }
            let amount = self.given[at];
            water_fill_into(
                amount,
                &self.demands,
                &self.weights,
                &mut self.shares,
                &mut self.fill,
            );
            // Every child's demand is met: the rest goes down by weight too, so that the
            // whole capacity is handed out.
            let left = amount - self.shares.iter().sum::<f64>();
            if left > 0.0 {
                add_proportional(&mut self.shares, left, &self.weights);
            }
            for (k, &c) in self.children.iter().enumerate() {
                let slot = &self.slots[c];
                let first = order[slot.start];
                self.given[c] = self.shares[k];
                if level.attr == Attr::Job {
                    self.division.rates[first] = self.shares[k];
                }
                self.division.nodes[c - 1] = TreeNode {
                    depth,
                    job: first,
                    allocation: self.shares[k],
                    usage: sum(slot, &|j| jobs[j].usage),
                    demand: self.demands[k],
                    weight: self.weights[k],
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obs::Observation;
    use crate::share::proportional;
    use proptest::prelude::*;

    /// `share::water_fill` as the reference was first written with: a stable sort by
    /// cap over weight.
    fn water_fill(total: f64, caps: &[f64], weights: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; caps.len()];
        let (weighted, unweighted): (Vec<usize>, Vec<usize>) =
            (0..caps.len()).partition(|&i| weights[i] > 0.0);
        let left = fill(total, &weighted, caps, |i| weights[i], &mut out);
        fill(left, &unweighted, caps, |_| 1.0, &mut out);
        out
    }

    fn fill(
        total: f64,
        items: &[usize],
        caps: &[f64],
        weight: impl Fn(usize) -> f64,
        out: &mut [f64],
    ) -> f64 {
        let mut order = items.to_vec();
        order.sort_by(|&a, &b| (caps[a] / weight(a)).total_cmp(&(caps[b] / weight(b))));
        let mut rest: Vec<f64> = order.iter().map(|&i| weight(i)).collect();
        for k in (0..rest.len().saturating_sub(1)).rev() {
            rest[k] += rest[k + 1];
        }
        let mut left = total;
        for (k, &i) in order.iter().enumerate() {
            let share = (left * weight(i) / rest[k]).min(left);
            out[i] = caps[i].min(share);
            left = (left - out[i]).max(0.0);
        }
        left
    }

    /// The division as it was first written, kept as the reference the divider is
    /// checked against: a recursion over the jobs sorted afresh, allocating at every
    /// node.
    fn reference(
        shape: &TreeShape,
        shares: &Shares,
        round: &Round<'_>,
        attrs: &[&JobAttrs],
    ) -> Division {
        let jobs = round.jobs();
        assert_eq!(jobs.len(), attrs.len(), "one set of attributes per job");
        let levels = shape.levels();
        // Grouping by sorting: the jobs of one node of the tree are then a run.
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_unstable_by(|&a, &b| {
            levels
                .iter()
                .map(|l| attrs[a].get(l.attr).cmp(attrs[b].get(l.attr)))
                .find(|o| o.is_ne())
                .unwrap_or_else(|| round.cmp_ids(a, b))
        });
        let mut division = Division {
            rates: vec![0.0; jobs.len()],
            nodes: Vec::with_capacity(jobs.len() * levels.len()),
        };
        let walk = Walk {
            shape,
            shares,
            round,
            attrs,
            order: &order,
        };
        walk.node(0, 0..order.len(), "", round.capacity(), &mut division);
        division
    }

    /// One division in progress.
    struct Walk<'a, 'r> {
        shape: &'a TreeShape,
        shares: &'a Shares,
        round: &'a Round<'r>,
        attrs: &'a [&'a JobAttrs],
        /// The jobs, grouped by the levels' attributes in order.
        order: &'a [usize],
    }

    impl Walk<'_, '_> {
        /// Divides `amount` among the children at level `depth` of the node whose jobs are
        /// `order[range]` and whose name is `parent`.
        fn node(
            &self,
            depth: usize,
            range: std::ops::Range<usize>,
            parent: &str,
            amount: f64,
            out: &mut Division,
        ) {
            let level = self.shape.levels()[depth];
            let jobs = self.round.jobs();
            // The children: runs of one value of the level's attribute (single jobs at the
            // job level).
            let mut children: Vec<(usize, usize)> = Vec::new();
            for at in range {
                let job = self.order[at];
                match children.last_mut() {
                    Some((start, end))
                        if level.attr != Attr::Job
                            && self.attrs[self.order[*start]].get(level.attr)
                                == self.attrs[job].get(level.attr) =>
                    {
                        *end = at + 1
                    }
                    _ => children.push((at, at + 1)),
                }
            }
            let sum = |(start, end): (usize, usize), f: &dyn Fn(usize) -> f64| {
                self.order[start..end].iter().map(|&j| f(j)).sum::<f64>()
            };
            let demands: Vec<f64> = children
                .iter()
                .map(|&c| sum(c, &|j| jobs[j].arrivals))
                .collect();
            let weights: Vec<f64> = children
                .iter()
                .map(|&(start, end)| {
                    let first = self.order[start];
                    match (level.rule, level.attr) {
                        (Rule::Equal, _) => 1.0,
                        (Rule::Nodes, _) => sum((start, end), &|j| {
                            f64::from(jobs[j].nodes.unwrap_or(1).max(1))
                        }),
                        (Rule::Share, Attr::Job) => jobs[first].weight_or_one(),
                        (Rule::Share, attr) => {
                            self.shares.get(attr, self.attrs[first].get(attr), parent)
                        }
                    }
                })
                .collect();
            let mut given = water_fill(amount, &demands, &weights);
            // Every child's demand is met: the rest goes down by weight too, so that the
            // whole capacity is handed out.
            let left = amount - given.iter().sum::<f64>();
            if left > 0.0 {
                for (g, extra) in given.iter_mut().zip(proportional(left, &weights)) {
                    *g += extra;
                }
            }
            for (k, &(start, end)) in children.iter().enumerate() {
                let first = self.order[start];
                out.nodes.push(TreeNode {
                    depth,
                    job: first,
                    allocation: given[k],
                    usage: sum((start, end), &|j| jobs[j].usage),
                    demand: demands[k],
                    weight: weights[k],
                });
                if level.attr == Attr::Job {
                    out.rates[first] = given[k];
                } else {
                    let name = self.attrs[first].get(level.attr);
                    self.node(depth + 1, start..end, name, given[k], out);
                }
            }
        }
    }

    fn shape(text: &str) -> Result<TreeShape, TreeError> {
        text.parse()
    }

    #[test]
    fn a_shape_is_levels_ending_with_job_each_once() {
        let s = shape("account,user,job").expect("valid");
        assert_eq!(s.to_string(), "account:share,user:share,job:nodes");
        assert_eq!(shape(&s.to_string()), Ok(s));
        assert_eq!(
            shape("account:equal, job:share").map(|s| s.to_string()),
            Ok("account:equal,job:share".to_owned())
        );
        assert_eq!(shape("account,user"), Err(TreeError::JobNotLast));
        assert_eq!(shape("job,account"), Err(TreeError::JobNotLast));
        assert_eq!(shape("user,user,job"), Err(TreeError::Repeated(Attr::User)));
        assert_eq!(
            shape("group,job").map_err(|e| e.to_string()),
            Err(
                "tree: unknown level \"group\" (one of: account, user, qos, partition, job)"
                    .to_owned()
            )
        );
        assert_eq!(
            shape("account:fifo,job"),
            Err(TreeError::UnknownRule("fifo".to_owned()))
        );
    }

    #[test]
    fn a_share_under_a_parent_beats_the_plain_one() {
        let mut shares = Shares::new();
        shares
            .set(Attr::User, "alice", None, Some(2.0))
            .expect("ok");
        shares
            .set(Attr::User, "alice", Some("physics"), Some(5.0))
            .expect("ok");
        assert_eq!(shares.get(Attr::User, "alice", "physics"), 5.0);
        assert_eq!(shares.get(Attr::User, "alice", "chem"), 2.0);
        assert_eq!(shares.get(Attr::User, "bob", "chem"), 1.0);
        assert!(shares.set(Attr::Account, "x", None, Some(0.0)).is_err());
        shares.set(Attr::User, "alice", None, None).expect("ok");
        shares
            .set(Attr::User, "alice", Some("physics"), None)
            .expect("ok");
        assert!(shares.is_empty());
    }

    #[test]
    fn unused_share_goes_to_siblings_first() {
        // Accounts a and b share 1:1; in a, user a1 asks for little, a2 for much.
        let jobs = [
            Observation::new("j1", 0.0, 0.0, 10.0),
            Observation::new("j2", 0.0, 0.0, 1e6),
            Observation::new("j3", 0.0, 0.0, 1e6),
        ];
        let attrs = [("a", "a1"), ("a", "a2"), ("b", "b1")].map(|(account, user)| JobAttrs {
            account: account.into(),
            user: user.into(),
            ..JobAttrs::default()
        });
        let tree = shape("account,user,job").expect("valid");
        let round = Round::new(100.0, 1.0, &jobs).expect("valid");
        let d = tree.divide(&Shares::new(), &round, &attrs.iter().collect::<Vec<_>>());
        assert_eq!(d.rates, vec![10.0, 40.0, 50.0]);
        // account a, its users a1 and a2 and their jobs, then b.
        let depths: Vec<usize> = d.nodes.iter().map(|n| n.depth).collect();
        assert_eq!(depths, vec![0, 1, 2, 1, 2, 0, 1, 2]);
    }

    /// One job of the divider's property test: its id, attributes and figures.
    #[derive(Debug, Clone)]
    struct Job {
        id: u32,
        attrs: JobAttrs,
        arrivals: f64,
        usage: f64,
        nodes: u32,
        weight: Option<f64>,
    }

    /// What changes from one round to the next.
    #[derive(Debug, Clone)]
    enum Step {
        /// Every job's demand (by position, cycled).
        Demands(Vec<f64>),
        /// A job (by position, modulo) moves to another account.
        Move(usize, u8),
        /// A job starts.
        Start(u8, u8, f64),
        /// A job (by position, modulo) ends.
        End(usize),
        /// The jobs come in the reverse order (not by id any more, or by id again).
        Reverse,
    }

    fn demand() -> impl Strategy<Value = f64> {
        prop_oneof![Just(0.0), 0.0..1_000.0, Just(1e9)]
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => proptest::collection::vec(demand(), 1..8).prop_map(Step::Demands),
            1 => (any::<usize>(), 0..3u8).prop_map(|(i, a)| Step::Move(i, a)),
            1 => (0..3u8, 0..3u8, demand()).prop_map(|(a, u, d)| Step::Start(a, u, d)),
            1 => any::<usize>().prop_map(Step::End),
            1 => Just(Step::Reverse),
        ]
    }

    fn job(id: u32, account: u8, user: u8, arrivals: f64) -> Job {
        Job {
            id,
            attrs: JobAttrs {
                account: format!("a{account}"),
                user: format!("u{user}"),
                qos: format!("q{}", id % 2),
                ..JobAttrs::default()
            },
            arrivals,
            usage: arrivals.min(500.0),
            nodes: 1 + id % 4,
            weight: id.is_multiple_of(3).then_some(2.5),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn the_divider_divides_as_the_reference_round_after_round(
            start in proptest::collection::vec((0..3u8, 0..3u8, demand()), 0..25),
            steps in proptest::collection::vec(step(), 1..8),
            shape in prop_oneof![
                Just("account,user,job"),
                Just("account:equal,user:nodes,job:share"),
                Just("user,qos:equal,account,job:equal"),
                Just("job"),
            ],
            capacity in 1.0..100_000.0f64,
            account_shares in proptest::collection::vec(0.1..10.0f64, 3),
        ) {
            let shape: TreeShape = shape.parse().expect("valid");
            let mut shares = Shares::new();
            for (i, &s) in account_shares.iter().enumerate() {
                shares.set(Attr::Account, &format!("a{i}"), None, Some(s)).expect("> 0");
            }
            shares.set(Attr::User, "u1", Some("a0"), Some(3.0)).expect("> 0");
            let mut jobs: Vec<Job> = start
                .iter()
                .enumerate()
                .map(|(i, &(a, u, d))| job(i as u32, a, u, d))
                .collect();
            let mut next = jobs.len() as u32;
            let mut divider = Divider::default();
            // Bumped at every step that changes the jobs or their attributes, as a
            // controller's layout is; `None` on every other round.
            let mut generation = 0;
            for (round_no, step) in steps.into_iter().enumerate() {
                let obs: Vec<Observation> = jobs
                    .iter()
                    .map(|j| Observation {
                        nodes: Some(j.nodes),
                        weight: j.weight,
                        ..Observation::new(format!("j{:03}", j.id), 0.0, j.usage, j.arrivals)
                    })
                    .collect();
                let attrs: Vec<&JobAttrs> = jobs.iter().map(|j| &j.attrs).collect();
                let round = Round::new(capacity, 1.0, &obs).expect("valid");
                let given = (round_no % 3 != 2).then_some(generation);
                let fast = shape.divide_with(&mut divider, given, &shares, &round, &attrs);
                prop_assert_eq!(fast, &reference(&shape, &shares, &round, &attrs));
                let len = jobs.len().max(1);
                if !matches!(step, Step::Demands(_)) {
                    generation += 1;
                }
                match step {
                    Step::Demands(d) => {
                        for (i, j) in jobs.iter_mut().enumerate() {
                            j.arrivals = d[i % d.len()];
                        }
                    }
                    Step::Move(i, a) => {
                        if let Some(j) = jobs.get_mut(i % len) {
                            j.attrs.account = format!("a{a}");
                        }
                    }
                    Step::Start(a, u, d) => {
                        jobs.push(job(next, a, u, d));
                        next += 1;
                    }
                    Step::End(i) => {
                        if !jobs.is_empty() {
                            jobs.remove(i % len);
                        }
                    }
                    Step::Reverse => jobs.reverse(),
                }
            }
        }
    }
}
