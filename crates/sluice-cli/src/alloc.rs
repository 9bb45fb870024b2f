//! `sluice alloc` and `sluice bench alloc` (placeholder: being written).
