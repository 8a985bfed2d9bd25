//! The hot loops. Each does only its memory work: no timing, no atomics beyond the ones that
//! are the measurement ([`c2c`]'s hand-off, [`lock`]'s lock words), no branches beyond the
//! loop's own. Callers time batches from outside.

pub mod bandwidth;
pub mod c2c;
pub mod chase;
pub mod lock;
pub mod slb;
