//! Whose fault an error is: what the administrator typed (a bad rule, an unknown job, a
//! refused change), or the system's (a file that cannot be written, a controller that does
//! not answer).
//!
//! Every library error of sluice says which, through [`Blame`]; the binary reads it off
//! the error's chain once to choose its exit code (2 for the administrator's input, 1 for
//! the system's), so that no room has to know about exit codes and the binary has to know
//! about no room's error types. Each crate lists its own error types in one function
//! (this module's [`fault`] for the shared ones), and each such function asks the crates
//! below it, so the binary asks the topmost crate only.
//!
//! ```
//! use sluice_core::error::{Blame, Fault, Usage, fault};
//! let e = Usage("--seconds must be at least 10".into());
//! assert_eq!(e.fault(), Fault::Input);
//! assert_eq!(fault(&e), Some(Fault::Input));
//! ```

use std::error::Error;

/// Whose fault an error is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// What the administrator gave: nothing was changed or run, and the same input will
    /// fail again (exit code 2).
    Input,
    /// A failure while working: a file, a process, a controller, the network (exit
    /// code 1).
    System,
}

/// An error that knows whose fault it is.
pub trait Blame: Error {
    /// Whose fault this error is; an error that wraps another's usually asks its source.
    fn fault(&self) -> Fault;
}

/// Bad input found by a command itself (a flag out of range, two flags that exclude each
/// other): the administrator's fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// Whose fault `cause` is, when it is one of `$types` (a list kept beside the types, one
/// per crate; the binary walks an error's chain with the topmost crate's).
#[macro_export]
macro_rules! blame_of {
    ($cause:expr; $($t:ty),+ $(,)?) => {{
        let cause: &(dyn ::std::error::Error + 'static) = $cause;
        None$(.or_else(|| cause.downcast_ref::<$t>().map($crate::error::Blame::fault)))+
    }};
}

/// Implements [`Blame`] for error types that are wholly one fault:
/// `blame_all!(Input: ParseError, PlaceError)`.
#[macro_export]
macro_rules! blame_all {
    ($fault:ident: $($t:ty),+ $(,)?) => {
        $(impl $crate::error::Blame for $t {
            fn fault(&self) -> $crate::error::Fault {
                $crate::error::Fault::$fault
            }
        })+
    };
}

/// A crate's error types listed once, by whose fault they are: writes the [`Blame`]
/// impls of the types that are wholly one fault and the crate's lookup function, which
/// asks this crate's types and then the lookup functions of the crates below. One list,
/// so a type cannot be blamed and yet be missing from the lookup.
///
/// ```
/// # #[derive(Debug, thiserror::Error)]
/// # #[error("bad")]
/// # struct Bad;
/// # #[derive(Debug, thiserror::Error)]
/// # #[error("broken")]
/// # struct Broken;
/// use sluice_core::error::Fault;
/// sluice_core::faults! {
///     /// Whose fault `cause` is.
///     pub fn fault;
///     Input: Bad;
///     System: Broken;
///     // Types that implement `Blame` by hand (own:), and the crates asked next (below:).
///     below: sluice_core::error::fault;
/// }
/// assert_eq!(fault(&Bad), Some(Fault::Input));
/// assert_eq!(fault(&Broken), Some(Fault::System));
/// assert_eq!(fault(&sluice_core::error::Usage("x".into())), Some(Fault::Input));
/// ```
#[macro_export]
macro_rules! faults {
    (
        $(#[$attr:meta])*
        $vis:vis fn $name:ident;
        $(Input: $($input:ty),+ $(,)?;)?
        $(System: $($system:ty),+ $(,)?;)?
        $(own: $($own:ty),+ $(,)?;)?
        $(below: $($below:path),+ $(,)?;)?
    ) => {
        $($crate::blame_all!(Input: $($input),+);)?
        $($crate::blame_all!(System: $($system),+);)?
        $(#[$attr])*
        $vis fn $name(
            cause: &(dyn ::std::error::Error + 'static),
        ) -> ::std::option::Option<$crate::error::Fault> {
            $crate::blame_of!(cause; $($($input,)+)? $($($system,)+)? $($($own,)+)?)
                $($(.or_else(|| $below(cause)))+)?
        }
    };
}

faults! {
    /// Whose fault `cause` is, for the error types of this crate; `None` for any other
    /// type.
    pub fn fault;
    // What an administrator writes: rules, places, stage configuration, node lists,
    // operation names. A rules file that cannot be read is the one the administrator
    // named.
    Input:
        Usage,
        crate::rule::ParseError,
        crate::rule::RulesFileError,
        crate::path::PlaceError,
        crate::config::ConfigError,
        crate::hostlist::HostlistError,
        crate::op::UnknownName,
        crate::cost::CostError,
        crate::toml_text::TomlError;
    // A segment that does not hold what the stage wrote: the system's.
    System: crate::segment::SegmentError;
}

/// An error and its causes on one line, outermost first, as an administrator reads it in
/// a log or on a terminal: `cannot connect to unix:/run/sluice/local.sock: No such file or
/// directory`. A cause whose text the line already holds is not repeated, and a cause
/// that spreads over several lines (TOML's) is put on one.
///
/// ```
/// use sluice_core::error::Chain;
/// let e = std::io::Error::other("disk full");
/// assert_eq!(Chain(&e).to_string(), "disk full");
/// ```
#[derive(Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut line = String::new();
        for cause in causes(self.0) {
            let text = cause.to_string();
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if !line.contains(&text) {
                if !line.is_empty() {
                    line.push_str(": ");
                }
                line.push_str(&text);
            }
        }
        f.write_str(&line)
    }
}

/// `e`, then its source, then that one's, and so on.
pub fn causes<'a>(e: &'a (dyn Error + 'static)) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    std::iter::successors(Some(e), |c: &&'a (dyn Error + 'static)| (*c).source())
}
