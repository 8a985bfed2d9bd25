//! A run (moved whole into `worker`; split by concern in the next commit).

mod worker;

pub use worker::*;
