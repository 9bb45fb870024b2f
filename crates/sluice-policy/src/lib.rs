//! # sluice-policy
//!
//! Control algorithms (placeholder: being written).
