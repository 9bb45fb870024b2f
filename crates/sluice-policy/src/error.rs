//! Typed errors: every one names the field it is about, so a caller can point an
//! administrator at the exact place in their input.

use thiserror::Error;

use crate::obs::JobField;

/// What is wrong with one value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Problem {
    /// Negative, NaN or infinite where a rate or an amount is expected.
    #[error("must be a finite number ≥ 0")]
    NotNonNegative,
    /// Zero, negative, NaN or infinite where a strictly positive number is expected.
    #[error("must be a finite number > 0")]
    NotPositive,
    /// Not a whole number of at least one (a count of nodes).
    #[error("must be a whole number ≥ 1")]
    NotCount,
    /// Outside [0, 1].
    #[error("must be a number between 0 and 1")]
    NotFraction,
    /// A parameter that takes a number was given something else.
    #[error("must be a number")]
    NotNumber,
    /// A parameter that takes a flag was given something else.
    #[error("must be true or false")]
    NotBool,
    /// Two observations of one interval carry the same job id.
    #[error("duplicate job id {0:?}")]
    DuplicateId(String),
}

/// Why an algorithm could not be built or an interval could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PolicyError {
    /// The pool's capacity (or one of its components, such as `ops`) is not usable.
    #[error("capacity{}: {problem}", dotted(.part))]
    Capacity {
        /// The component (`"ops"`, `"bytes"`), empty for a plain number.
        part: &'static str,
        /// What is wrong with it.
        problem: Problem,
    },
    /// One field of one job's observation is not usable.
    #[error("jobs[{index}].{field}{}: {problem}", dotted(.part))]
    Job {
        /// Position of the job in the interval's list.
        index: usize,
        /// The field.
        field: JobField,
        /// The component (`"ops"`, `"bytes"`), empty for a plain number.
        part: &'static str,
        /// What is wrong with it.
        problem: Problem,
    },
    /// No algorithm has this name.
    #[error("algorithm: unknown algorithm {name:?} (one of: {known})")]
    UnknownAlgorithm {
        /// The name asked for.
        name: String,
        /// The names that exist, comma-separated.
        known: String,
    },
    /// The algorithm takes no parameter of this name.
    #[error("params.{name}: not a parameter of {algorithm} (it takes: {takes})")]
    UnknownParam {
        /// The parameter given.
        name: String,
        /// The algorithm it was given to.
        algorithm: &'static str,
        /// The parameters the algorithm takes, comma-separated.
        takes: String,
    },
    /// The algorithm was asked to divide a metadata rate and a bandwidth together, and
    /// it divides one resource at a time.
    #[error(
        "algorithm: {algorithm} divides one resource at a time, not a metadata rate and a bandwidth together"
    )]
    OneResourceOnly {
        /// The algorithm asked for.
        algorithm: &'static str,
    },
    /// The algorithm needs exactly one of two parameters (a fixed rate given either
    /// way), and got neither or both.
    #[error("params: {algorithm} needs exactly one of {choices}")]
    ParamChoice {
        /// The algorithm.
        algorithm: &'static str,
        /// The parameters to choose from, with what each means.
        choices: &'static str,
    },
    /// An estimator was given to an algorithm that reads no load (a fixed rate, or
    /// limits alone).
    #[error("estimator: {algorithm} reads no load, so no estimator applies")]
    NoLoad {
        /// The algorithm.
        algorithm: &'static str,
    },
    /// A parameter's value is not usable.
    #[error("params.{name}: {problem}")]
    Param {
        /// The parameter.
        name: &'static str,
        /// What is wrong with its value.
        problem: Problem,
    },
}

/// `"ops"` → `".ops"`, `""` → `""`: the path suffix of a component.
fn dotted(part: &str) -> String {
    if part.is_empty() {
        String::new()
    } else {
        format!(".{part}")
    }
}
