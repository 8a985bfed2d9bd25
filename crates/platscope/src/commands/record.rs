//! Opening the results store for a measuring command, with the facts every run carries.

use results::{Recorder, RunContext, StoreOptions};
use serde_json::json;
use topo::Topology;

/// The recorder for this invocation: `--db`, the default store, or none (`--no-store`).
pub fn recorder(options: &StoreOptions, topology: &Topology) -> anyhow::Result<Recorder> {
    let context = RunContext {
        // Arguments need not be UTF-8 (file names); the record keeps them lossily.
        argv: std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect(),
        version: crate::cli::VERSION.to_string(),
        topology: serde_json::to_value(topology).unwrap_or_default(),
        environment: serde_json::to_value(&topology.environment).unwrap_or_default(),
        // The clock every batch in this run was timed with, and why it was trusted (null for
        // runs that timed nothing with it, e.g. `pagecache`).
        late_parameters: Some(|| json!({ "clock": membench::timers::clock_in_use() })),
    };
    Ok(Recorder::open(options, context)?)
}
