//! The hot loops. Each does only its memory work: no timing, no atomics, no branches beyond
//! the loop's own. Callers time batches from outside.

pub mod bandwidth;
pub mod chase;
pub mod slb;
