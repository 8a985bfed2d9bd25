//! Every command, one line each: the command line is built from this list, a parsed command
//! line is dispatched through it, and stored runs are read back through it
//! (`report --from-db`, `results`). Adding a capability = its crate + one line here
//! (docs/architecture.md).

use experiment::{experiment, tool, Registry};

/// The registry of this binary.
pub static REGISTRY: Registry = Registry {
    entries: &[
        experiment::<membench::experiments::timer::Timer>(),
        tool::<place::tools::Topo>(),
        tool::<place::tools::Place>(),
    ],
    groups: &[],
};
