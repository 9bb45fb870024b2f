//! Rules compiled for one process: which rule, if any, governs a request.
//!
//! The job, user and program of a process never change, so the rules that cannot match it
//! are dropped at start, and those left are listed per operation in order. Classifying a
//! request then walks a short list, testing only the mount mask and, where a rule has
//! one, the size condition: no allocation, no string comparison.

use crate::op::{Class, Op};
use crate::path::{MountTable, PlaceError, PlaceIdx};
use crate::rule::{Cmp, Identity, Rule, Unit};

/// The rule that governs a request, and what the request costs in that rule's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Channel {
    /// Index of the rule (and of its bucket).
    pub rule: u8,
    /// Units to reserve: the byte count for a data call under a bytes rule, else 1.
    pub cost: u64,
    /// Whether `cost` is bytes.
    pub bytes: bool,
}

#[derive(Clone, Debug)]
struct CompiledRule {
    places: u64,
    size: Option<(Cmp, u64)>,
    bytes: bool,
}

/// The rules of a process, indexed by operation.
#[derive(Clone, Debug)]
pub struct Compiled {
    places: MountTable,
    rules: Vec<CompiledRule>,
    by_op: [Vec<u8>; Op::COUNT],
}

impl Compiled {
    /// Compiles `rules` for a process of identity `id`, managing `mounts` (`None`: all but
    /// the pseudo file systems).
    pub fn new(
        rules: &[Rule],
        id: &Identity,
        mounts: Option<&[String]>,
    ) -> Result<Self, PlaceError> {
        let rule_places: Vec<String> = rules
            .iter()
            .filter_map(|r| r.mount_paths())
            .flatten()
            .cloned()
            .collect();
        let places = MountTable::new(mounts, &rule_places)?;
        let compiled: Vec<CompiledRule> = rules
            .iter()
            .map(|r| CompiledRule {
                places: r.mount_paths().map_or(u64::MAX, |ps| {
                    ps.iter().fold(0, |m, p| m | places.mask_under(p))
                }),
                size: r.size_cond(),
                bytes: r.rate.unit == Unit::Bytes,
            })
            .collect();
        let by_op = std::array::from_fn(|i| {
            let op = Op::ALL[i];
            rules
                .iter()
                .enumerate()
                .filter(|(_, r)| r.matches_identity(id) && r.matches_op(op))
                .map(|(n, _)| n as u8)
                .collect()
        });
        Ok(Compiled {
            places,
            rules: compiled,
            by_op,
        })
    }

    /// The managed places.
    #[inline]
    pub fn places(&self) -> &MountTable {
        &self.places
    }

    /// The rule governing `op` on a target in `place` moving `size` bytes, if any.
    #[inline]
    pub fn channel(&self, op: Op, place: PlaceIdx, size: u64) -> Option<Channel> {
        let data = op.class() == Class::Data;
        let counted = if data { size } else { 0 };
        self.by_op[op.index()].iter().find_map(|&i| {
            let r = &self.rules[i as usize];
            let fits =
                r.places & (1u64 << place) != 0 && r.size.is_none_or(|(c, b)| c.holds(counted, b));
            fits.then(|| {
                let bytes = r.bytes && data;
                Channel {
                    rule: i,
                    cost: if bytes { size } else { 1 },
                    bytes,
                }
            })
        })
    }

    /// Whether any rule could hold `op` for this process (else the stage only counts it).
    #[inline]
    pub fn governs(&self, op: Op) -> bool {
        !self.by_op[op.index()].is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::parse_rule;

    fn compile(rules: &[&str], mounts: &[&str]) -> Compiled {
        let rules: Vec<Rule> = rules.iter().map(|r| parse_rule(r).unwrap()).collect();
        let id = Identity {
            job: "7".into(),
            uid: 1000,
            user: Some("alice".into()),
            exe: "app".into(),
        };
        let mounts: Vec<String> = mounts.iter().map(|s| s.to_string()).collect();
        Compiled::new(&rules, &id, (!mounts.is_empty()).then_some(&mounts[..])).unwrap()
    }

    #[test]
    fn first_matching_rule_wins() {
        let c = compile(&["op=getattr rate=5/s", "class=metadata rate=10/s"], &[]);
        let p = c.places().lookup(b"/scratch/x");
        assert_eq!(c.channel(Op::Getattr, p, 0).map(|ch| ch.rule), Some(0));
        assert_eq!(c.channel(Op::Open, p, 0).map(|ch| ch.rule), Some(1));
        assert_eq!(c.channel(Op::Read, p, 10), None);
    }

    #[test]
    fn identity_filters_at_compile_time() {
        let c = compile(&["job=8 rate=5/s", "user=alice op=open rate=1/s"], &[]);
        assert!(!c.governs(Op::Getattr));
        assert!(c.governs(Op::Open));
    }

    #[test]
    fn bytes_rules_charge_data_calls_their_size() {
        let c = compile(&["class=data size>=1MiB rate=50MiB/s", "rate=1k/s"], &[]);
        let p = c.places().lookup(b"/x");
        assert_eq!(
            c.channel(Op::Write, p, 2 << 20),
            Some(Channel {
                rule: 0,
                cost: 2 << 20,
                bytes: true
            })
        );
        assert_eq!(c.channel(Op::Write, p, 10).map(|ch| ch.rule), Some(1));
        assert_eq!(
            c.channel(Op::Getattr, p, 0),
            Some(Channel {
                rule: 1,
                cost: 1,
                bytes: false
            })
        );
    }

    #[test]
    fn mount_conditions_use_place_masks() {
        let c = compile(&["mount=/scratch/proj rate=5/s"], &["/scratch"]);
        let inside = c.places().lookup(b"/scratch/proj/a");
        let outside = c.places().lookup(b"/scratch/other");
        assert!(c.channel(Op::Open, inside, 0).is_some());
        assert!(c.channel(Op::Open, outside, 0).is_none());
    }

    #[test]
    fn mmap_is_held_only_when_named() {
        let c = compile(&["rate=5/s"], &[]);
        assert_eq!(c.channel(Op::Mmap, 0, 4096), None);
        let c = compile(&["op=mmap rate=5/s"], &[]);
        assert!(c.channel(Op::Mmap, 0, 4096).is_some());
    }
}
