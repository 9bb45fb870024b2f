//! Which measured figure an algorithm reads as a job's load. A controller measures three
//! figures per job and interval; papers differ on which one their algorithm divides by
//! (PADLL's PSFA reads the rate each job was admitted at, AdapTBF the requests that
//! reached the server), so the choice is a pool's setting, with the paper's figure as
//! the default for the paper's algorithm ([`crate::registry::Spec::estimator`]).

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// A figure of a job's activity over the last interval, per second, summed over the
/// nodes it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Estimator {
    /// What the job was admitted: PADLL's usageᵢ, the rate its stages report.
    Usage,
    /// What reached the gate, admitted or still waiting there: AdapTBF's dₓ, the RPCs a
    /// job issued to the storage target. A closed-loop thread that waits issues no more
    /// calls meanwhile, so this is close to `usage` for a throttled closed-loop job.
    Arrivals,
    /// sluice's estimate of what the job would issue without the limit: each thread's
    /// admitted units scaled by the share of the interval it was not waiting (at most
    /// 100 times), never less than `arrivals`.
    WaitInflated,
}

impl Estimator {
    /// Every estimator, in the order the docs present them.
    pub const ALL: [Estimator; 3] = [
        Estimator::Usage,
        Estimator::Arrivals,
        Estimator::WaitInflated,
    ];

    /// The name an administrator writes.
    pub fn name(self) -> &'static str {
        match self {
            Estimator::Usage => "usage",
            Estimator::Arrivals => "arrivals",
            Estimator::WaitInflated => "wait-inflated",
        }
    }

    /// The names, comma-separated, for errors and help.
    pub fn names() -> String {
        Estimator::ALL.map(Estimator::name).join(", ")
    }
}

impl fmt::Display for Estimator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no estimator.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown estimator {0:?} (one of: {names})", names = Estimator::names())]
pub struct UnknownEstimator(pub String);

impl FromStr for Estimator {
    type Err = UnknownEstimator;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Estimator::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| UnknownEstimator(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_a_wrong_one_lists_them() {
        for e in Estimator::ALL {
            assert_eq!(e.name().parse::<Estimator>(), Ok(e));
        }
        assert_eq!(
            "demand".parse::<Estimator>().map_err(|e| e.to_string()),
            Err("unknown estimator \"demand\" (one of: usage, arrivals, wait-inflated)".into())
        );
    }
}
