//! Memory benchmarks.

pub mod rng;
pub mod stats;
