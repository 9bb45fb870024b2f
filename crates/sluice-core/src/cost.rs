//! What an operation costs a pool: a pool of calls may weigh its operations by what they
//! cost the server (a create journals and allocates an inode at a metadata server, a
//! stat reads one from its cache), so that its capacity is in cost units per second and
//! a create takes, say, four of them where a stat takes one.
//!
//! Written `mknod=4,unlink=4,getattr=1` (an operation or a class of operations, then a
//! whole number of units); an operation a pool's costs do not name costs one unit, and an
//! operation's own entry wins over its class's. In the stage the costs are a table read
//! per call ([`crate::classify::Compiled::cost`]).

use std::fmt;
use std::str::FromStr;

use crate::op::{Class, Op};

/// The most units one operation may cost: a weight beyond a thousand stats would hold a
/// pool's capacity in units no administrator reads at a glance, and fits a `u16`.
pub const MAX_COST: u16 = 1000;

/// The units each operation costs a pool (one unless weighed), with the entries as
/// written, so that the text form reads back as it was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Costs {
    per_op: [u16; Op::COUNT],
    /// The entries in the order written: an operation's or a class's name, its cost.
    written: Vec<(String, u16)>,
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            per_op: [1; Op::COUNT],
            written: Vec::new(),
        }
    }
}

/// A cost list that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CostError {
    /// An entry that is not `NAME=UNITS`.
    #[error("'{0}' is not NAME=UNITS (unlink=4)")]
    Entry(String),
    /// A name that is neither an operation nor a class.
    #[error("'{0}' is neither an operation (getattr, open, unlink…) nor a class (metadata…)")]
    Name(String),
    /// Units that are not a whole number from 1 to [`MAX_COST`].
    #[error("{name}={units}: a cost is a whole number of units from 1 to {MAX_COST}")]
    Units {
        /// The operation or class.
        name: String,
        /// As written.
        units: String,
    },
    /// A name given twice.
    #[error("'{0}' is given twice")]
    Twice(String),
}

impl Costs {
    /// Costs from `(name, units)` entries: operation or class names, whole units.
    pub fn new<'a>(
        entries: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Costs, CostError> {
        let mut costs = Costs::default();
        for (name, units) in entries {
            let name = name.trim();
            let units = units.trim();
            if costs.written.iter().any(|(n, _)| n == name) {
                return Err(CostError::Twice(name.to_owned()));
            }
            let bad_units = || CostError::Units {
                name: name.to_owned(),
                units: units.to_owned(),
            };
            let n = units
                .parse::<u16>()
                .ok()
                .filter(|n| (1..=MAX_COST).contains(n))
                .ok_or_else(bad_units)?;
            if name.parse::<Op>().is_err() && name.parse::<Class>().is_err() {
                return Err(CostError::Name(name.to_owned()));
            }
            costs.written.push((name.to_owned(), n));
        }
        // Classes first, then operations over them: an operation's own entry wins.
        for (name, n) in &costs.written {
            if let Ok(class) = name.parse::<Class>() {
                for &op in Op::ALL.iter().filter(|op| op.class() == class) {
                    costs.per_op[op.index()] = *n;
                }
            }
        }
        for (name, n) in &costs.written {
            if let Ok(op) = name.parse::<Op>() {
                costs.per_op[op.index()] = *n;
            }
        }
        Ok(costs)
    }

    /// The units `op` costs.
    #[inline]
    pub fn of(&self, op: Op) -> u16 {
        self.per_op[op.index()]
    }

    /// Whether every operation costs one unit (the costs say nothing).
    pub fn is_flat(&self) -> bool {
        self.per_op.iter().all(|&c| c == 1)
    }

    /// Whether the costs name `op`, by itself or by its class; an operation they do not
    /// name costs one unit.
    pub fn names(&self, op: Op) -> bool {
        self.written
            .iter()
            .any(|(n, _)| n == op.name() || n == op.class().name())
    }

    /// The entries as written: names and units.
    pub fn entries(&self) -> impl Iterator<Item = (&str, u16)> {
        self.written.iter().map(|(n, c)| (n.as_str(), *c))
    }
}

impl FromStr for Costs {
    type Err = CostError;

    /// Reads `mknod=4,unlink=4,getattr=1` (empty: every operation one unit).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let entries = s
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|e| {
                e.split_once('=')
                    .ok_or_else(|| CostError::Entry(e.to_owned()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Costs::new(entries)
    }
}

impl fmt::Display for Costs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, n)) in self.written.iter().enumerate() {
            write!(f, "{}{name}={n}", if i == 0 { "" } else { "," })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_wins_over_its_class_and_the_rest_cost_one() {
        let c: Costs = "getattr=1, metadata=3,mknod=4".parse().unwrap();
        assert_eq!(c.of(Op::Getattr), 1);
        assert_eq!(c.of(Op::Unlink), 3);
        assert_eq!(c.of(Op::Open), 3);
        assert_eq!(c.of(Op::Read), 1);
        assert!(!c.is_flat());
        assert_eq!(c.to_string(), "getattr=1,metadata=3,mknod=4");
        assert_eq!(c.of(Op::Mknod), 4);
        assert!(c.names(Op::Open) && c.names(Op::Mknod) && !c.names(Op::Read));
        assert_eq!(c.to_string().parse::<Costs>().unwrap(), c);
        assert!("".parse::<Costs>().unwrap().is_flat());
    }

    #[test]
    fn says_what_is_wrong() {
        assert_eq!(
            "stat=2".parse::<Costs>(),
            Err(CostError::Name("stat".into()))
        );
        assert!(matches!(
            "unlink=0".parse::<Costs>(),
            Err(CostError::Units { .. })
        ));
        assert!(matches!(
            "unlink=1.5".parse::<Costs>(),
            Err(CostError::Units { .. })
        ));
        assert!(matches!(
            "unlink=1001".parse::<Costs>(),
            Err(CostError::Units { .. })
        ));
        assert_eq!(
            "unlink".parse::<Costs>(),
            Err(CostError::Entry("unlink".into()))
        );
        assert_eq!(
            "unlink=2,unlink=3".parse::<Costs>(),
            Err(CostError::Twice("unlink".into()))
        );
    }
}
