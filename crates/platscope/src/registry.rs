//! Every command, one line each: the command line is built from this list, a parsed command
//! line is dispatched through it, and stored runs are read back through it
//! (`report --from-db`, `results`). Adding a capability = its crate + one line here
//! (docs/architecture.md).

use experiment::{experiment, tool, Registry};

/// The registry of this binary.
#[rustfmt::skip]
pub static REGISTRY: Registry = Registry {
    entries: &[
        tool::<place::tools::Topo>(),
        tool::<place::tools::Place>(),
        tool::<suite::commands::report::Report>(),
        experiment::<membench::experiments::timer::Timer>(),
        tool::<suite::commands::results::List>(),
        tool::<suite::commands::results::Show>(),
        tool::<suite::commands::results::Compare>(),
        tool::<suite::commands::results::Export>(),
        tool::<suite::commands::results::Push>(),
        tool::<exporter::commands::Textfile>(),
        tool::<exporter::commands::Serve>(),
        experiment::<nicstat::links::Links>(),
    ],
    groups: &[
        ("results", "Stored runs: list, show, compare, export, push, textfile"),
    ],
};
