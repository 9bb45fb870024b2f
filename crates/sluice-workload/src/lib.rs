//! # sluice-workload
//!
//! Load generators and measurement (placeholder: being written).
