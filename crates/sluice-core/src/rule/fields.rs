//! The field table: every condition key of the rule language, in one place.
//!
//! Each row of `fields!` below names a [`Cond`] variant, its key, the reader of one value,
//! and when the condition can be decided (with the test that decides it). The macro
//! expands the rows into the `Cond` enum itself, [`FIELDS`] (which the parser looks keys
//! up in and error messages and `docs/rules.md` list), the printer and the matchers.
//! Adding a key is adding a row (plus, for a new process-level key, a field of
//! [`Identity`]); nothing else keeps a list of keys, so nothing can drift out of step.

use std::fmt;

use super::quantity;
use super::value::{self, ValueError};
use super::{Cmp, Identity, UserSpec};
use crate::op::{Class, Op};

/// When a condition can be decided, which is where the stage checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Once per process: a process's job, user and program do not change while it runs.
    Process,
    /// Once per operation, when the stage compiles its table indexed by operation.
    Operation,
    /// Per request: the target's mount and the request's size are known only then.
    Request,
}

impl Scope {
    /// How the documentation words it.
    pub const fn describe(self) -> &'static str {
        match self {
            Scope::Process => "once per process",
            Scope::Operation => "once per operation",
            Scope::Request => "per request",
        }
    }
}

/// One row of the field table.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// The key as written in rules (`op`).
    pub key: &'static str,
    /// The syntax and meaning of the key (the doc comment of its [`Cond`] variant).
    pub doc: &'static str,
    /// When a condition on this key is decided.
    pub scope: Scope,
    /// Whether the key takes a comparison (`size>=1MiB`) rather than `=` and a list.
    pub compares: bool,
    /// Reads the text after the operator into a condition.
    pub(crate) read: fn(Cmp, &str) -> Result<Cond, ValueError>,
}

impl Field {
    /// The row for `key`, if there is one.
    pub fn find(key: &str) -> Option<&'static Field> {
        FIELDS.iter().find(|field| field.key == key)
    }
}

/// Expands the rows; see the module documentation.
///
/// A list row is `Variant(Vec<T>) = "key", reader, scope(test)` where `reader` is
/// `fn(&str) -> Result<T, String>` and `test(&T, subject) -> bool` decides whether one
/// value matches (the condition holds when any value does); `request` rows have no test
/// here because the stage decides them with data only it has (the resolved path).
/// A comparison row is `Variant(Cmp, T) = "key", reader, printer`.
macro_rules! fields {
    (
        lists {
            $( $(#[doc = $ldoc:literal])+
               $LVariant:ident(Vec<$LT:ty>) = $lkey:literal, $lread:path,
               $scope:ident $(($test:expr))?; )*
        }
        comparisons {
            $( $(#[doc = $cdoc:literal])+
               $CVariant:ident(Cmp, $CT:ty) = $ckey:literal, $cread:path, $cprint:path; )*
        }
    ) => {
        /// One condition of a rule: a key and the values a request must match.
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub enum Cond {
            $( $(#[doc = $ldoc])+ $LVariant(Vec<$LT>), )*
            $( $(#[doc = $cdoc])+ $CVariant(Cmp, $CT), )*
        }

        /// Every condition key, in the order error messages and the documentation list them.
        pub const FIELDS: &[Field] = &[
            $( Field {
                key: $lkey,
                doc: concat!($($ldoc),+),
                scope: fields!(@scope $scope),
                compares: false,
                read: |_, text| value::list(text, $lread).map(Cond::$LVariant),
            }, )*
            $( Field {
                key: $ckey,
                doc: concat!($($cdoc),+),
                scope: Scope::Request,
                compares: true,
                read: |cmp, text| {
                    value::single(text, $cread).map(|bound| Cond::$CVariant(cmp, bound))
                },
            }, )*
        ];

        impl Cond {
            /// The key this condition is written with.
            pub fn key(&self) -> &'static str {
                match self {
                    $( Cond::$LVariant(_) => $lkey, )*
                    $( Cond::$CVariant(..) => $ckey, )*
                }
            }

            /// Whether the process described by `id` passes this condition; conditions
            /// that are not about the process always pass.
            pub(crate) fn holds_for_process(&self, id: &Identity) -> bool {
                match self {
                    $( Cond::$LVariant(values) => {
                        fields!(@test process, $scope $(($test))?, values, id)
                    } )*
                    $( Cond::$CVariant(..) => true, )*
                }
            }

            /// Whether requests of operation `op` pass this condition; conditions that are
            /// not about the operation always pass.
            pub(crate) fn holds_for_op(&self, op: Op) -> bool {
                match self {
                    $( Cond::$LVariant(values) => {
                        fields!(@test operation, $scope $(($test))?, values, op)
                    } )*
                    $( Cond::$CVariant(..) => true, )*
                }
            }

            /// Writes what follows the key: the operator and the value(s).
            pub(crate) fn fmt_value(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $( Cond::$LVariant(values) => {
                        f.write_str("=")?;
                        value::write_list(f, values)
                    } )*
                    $( Cond::$CVariant(cmp, bound) => {
                        write!(f, "{}{}", cmp.symbol(), $cprint(*bound))
                    } )*
                }
            }
        }
    };
    (@scope process) => { Scope::Process };
    (@scope operation) => { Scope::Operation };
    (@scope request) => { Scope::Request };
    // A row's test runs only in the matcher of its own scope; the others pass.
    (@test process, process($test:expr), $values:ident, $subject:ident) => {
        $values.iter().any(|value| ($test)(value, $subject))
    };
    (@test operation, operation($test:expr), $values:ident, $subject:ident) => {
        $values.iter().any(|value| ($test)(value, $subject))
    };
    (@test process, operation($test:expr), $values:ident, $subject:ident) => {{
        let _ = $values;
        true
    }};
    (@test operation, process($test:expr), $values:ident, $subject:ident) => {{
        let _ = $values;
        true
    }};
    (@test $matcher:ident, request, $values:ident, $subject:ident) => {{
        let _ = $values;
        true
    }};
}

fields! {
    lists {
        /// `op=NAME[,NAME…]`: the request's operation is one of these (see
        /// `docs/operations.md`).
        Op(Vec<Op>) = "op", value::op, operation(|want: &Op, op: Op| *want == op);
        /// `class=NAME[,NAME…]`: the request's class (`data`, `metadata`, `xattr`,
        /// `directory`) is one of these.
        Class(Vec<Class>) = "class", value::class,
            operation(|want: &Class, op: Op| *want == op.class());
        /// `job=ID[,ID…]`: the job identifier is one of these.
        Job(Vec<String>) = "job", value::job,
            process(|want: &String, id: &Identity| *want == id.job);
        /// `user=USER[,USER…]`: the process's real user is one of these, each USER a login
        /// name or a numeric uid.
        User(Vec<UserSpec>) = "user", value::user, process(UserSpec::matches);
        /// `exe=NAME[,NAME…]`: the program's name (last component of its path) is one of
        /// these.
        Exe(Vec<String>) = "exe", value::exe,
            process(|want: &String, id: &Identity| *want == id.exe);
        /// `mount=/PATH[,/PATH…]`: the target lies at or under one of these absolute paths
        /// (normalised: `/scratch/` is `/scratch`).
        Mount(Vec<String>) = "mount", value::mount, request;
    }
    comparisons {
        /// `size<N`, `size<=N`, `size>N`, `size>=N`, `size=N`: the request's byte count
        /// compares so with N (metadata calls count 0).
        Size(Cmp, u64) = "size", value::size, quantity::format_bytes;
    }
}

/// The keys, for error messages: `op, class, job, user, exe, mount, size`.
pub(crate) fn key_list() -> String {
    let keys: Vec<&str> = FIELDS.iter().map(|field| field.key).collect();
    keys.join(", ")
}

/// The keys that compare, for error messages: `size`.
pub(crate) fn comparing_keys() -> String {
    let keys: Vec<&str> = FIELDS
        .iter()
        .filter(|field| field.compares)
        .map(|field| field.key)
        .collect();
    keys.join(", ")
}

/// The table of keys in Markdown, as `docs/rules.md` shows it between its `keys` markers.
pub fn keys_markdown() -> String {
    let mut table = String::from("| key | syntax and meaning | decided |\n| --- | --- | --- |\n");
    for field in FIELDS {
        table.push_str(&format!(
            "| `{}` | {} | {} |\n",
            field.key,
            field.doc.trim(),
            field.scope.describe()
        ));
    }
    table
}
