//! One module per command: each turns parsed arguments into library calls and output.

pub mod alloc;
pub mod compat;
pub mod compress;
pub mod cpu;
pub mod db;
pub mod load;
pub mod record;
