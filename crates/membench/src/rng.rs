//! The generator for shuffles and the SLB's random pages: the workspace's one SplitMix64
//! (`measure::rng`), reproducible from the seed, so a run can be repeated exactly.

pub use measure::rng::SplitMix64;
