//! Printing rules in their normalised form.
//!
//! The normalised form is the rule as the parser reads it back: single spaces, the name
//! first, the conditions in the order written, `rate=` then `burst=`, quantities in the
//! largest unit that is exact, paths normalised. It is what `sluice rule check` prints,
//! what the daemons log and store, and `parse_rule(&rule.to_string()) == Ok(rule)`.

use std::fmt;

use super::{Cond, Rule, quantity};

impl fmt::Display for Cond {
    /// `op=getattr,open`, `size>=1MiB`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())?;
        self.fmt_value(f)
    }
}

/// Conditions separated by single spaces, as in a rule line or a rules file's `match`.
pub(crate) struct Conditions<'a>(pub &'a [Cond]);

impl fmt::Display for Conditions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, cond) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{cond}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Rule {
    /// `md: op=getattr,open user=alice rate=5k/s burst=100`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = &self.name {
            write!(f, "{name}: ")?;
        }
        if !self.conds.is_empty() {
            write!(f, "{} ", Conditions(&self.conds))?;
        }
        write!(f, "rate={}", self.rate)?;
        if let Some(burst) = self.burst {
            write!(f, " burst={}", quantity::format(burst, self.rate.unit))?;
        }
        Ok(())
    }
}
