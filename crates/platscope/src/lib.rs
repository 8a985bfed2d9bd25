//! The registry of the `platscope` binary, as a library so tests can walk it (every experiment
//! with its tiny arguments; see tests/it/registry.rs). Everything else of the binary is in
//! `main.rs` and its modules.

pub mod registry;
