//! One module per command: each turns parsed arguments into library calls and output.

pub mod compat;
pub mod mem;
pub mod place;
pub mod topo;
