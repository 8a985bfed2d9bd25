//! One module per command: each turns parsed arguments into library calls and output.

pub mod compat;
pub mod shell;
pub mod version;
