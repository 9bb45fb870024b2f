//! The stage's own tables, lock-free and allocated once: what each descriptor refers to
//! ([`fdtable`]), the current directory ([`cwd`]), and what a stdio stream holds
//! ([`stream`]).

pub(crate) mod cwd;
pub(crate) mod fdtable;
pub(crate) mod stream;
