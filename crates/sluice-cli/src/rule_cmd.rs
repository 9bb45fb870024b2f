//! `sluice rule check` (placeholder: being written).
