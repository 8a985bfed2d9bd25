//! Every command, one line each: the command line is built from this list, a parsed command
//! line is dispatched through it, and stored runs are read back through it
//! (`report --from-db`, `results`). Adding a capability = its crate + one line here
//! (docs/architecture.md).

use experiment::{experiment, tool, Registry};

/// The registry of this binary.
pub static REGISTRY: Registry = Registry {
    entries: &[
        experiment::<membench::experiments::timer::Timer>(),
        experiment::<querystat::experiments::Querystat>(),
        experiment::<loadgen::experiments::Load>(),
        tool::<loadgen::experiments::Prepare>(),
        experiment::<tamp::experiments::Compress>(),
        experiment::<allocbench::experiments::Alloc>(),
        tool::<allocbench::experiments::AllocWorker>(),
        experiment::<tamp::experiments::CpuScale>(),
    ],
    groups: &[(
        "db",
        "Databases: query latency, cache hits and pre-emption of PostgreSQL and MariaDB servers",
    )],
};
