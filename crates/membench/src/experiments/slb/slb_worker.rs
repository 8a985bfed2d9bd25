//! `mem slb-worker` (hidden): one worker process of `mem slb --processes`.

use experiment::{Globals, Tool};
use measure::{Classified, UsageError};
use topo::Topology;

use crate::slb::{self, SlbChildRequest};

// The request a `mem slb --processes` parent gives each worker process.
#[derive(Debug, clap::Args)]
pub struct SlbWorkerArgs {
    /// The worker's request, as JSON (`membench::slb::SlbChildRequest`).
    pub request: String,
}

/// `platscope mem slb-worker REQUEST` (hidden): one worker process of `mem slb --processes`;
/// prints its result as one JSON line for the parent, which stores the run.
#[derive(Debug)]
pub struct SlbWorker;

impl Tool for SlbWorker {
    const PATH: &'static [&'static str] = &["mem", "slb-worker"];
    const ABOUT: &'static str = "Internal: one worker process of `mem slb --processes`, started \
                                 by the parent";
    const HIDDEN: bool = true;
    type Args = SlbWorkerArgs;

    fn run(args: &SlbWorkerArgs, _globals: &Globals) -> Result<(), Classified> {
        let request: SlbChildRequest = serde_json::from_str(&args.request)
            .map_err(|e| UsageError::Message(format!("slb-worker: unreadable request ({e})")))?;
        let topology = Topology::detect()
            .map_err(|e| Classified::runtime(format!("reading the topology: {e}")))?;
        measure::stop::install();
        let result = slb::run_child(&request, &topology)?;
        experiment::output::emit(&format!("{}\n", serde_json::to_string(&result)?))?;
        Ok(())
    }
}
