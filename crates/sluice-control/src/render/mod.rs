//! What the admin commands print in a terminal: the tables and lines of `sluice status`,
//! `jobs`, `pool list`, `report`, `rule check` and `top`, apart from the commands that
//! fetch them, so that every view prints one figure the same way.

pub mod admin;
pub mod report;
pub mod rule_check;
