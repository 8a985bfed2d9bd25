//! membench's commands as experiments (`experiment::Experiment`): their arguments, how each
//! runs, and what each outcome prints, stores and draws. One registry line in the binary each.

pub mod bandwidth;
pub mod c2c;
pub mod latency;
pub mod slb;
pub mod timer;
