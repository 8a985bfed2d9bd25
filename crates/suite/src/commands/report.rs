//! `platscope report`: the main job. The steps are [`crate::characterise`]; here the page is
//! written and the summary printed, ending with the report's path. `--from-db` rebuilds the
//! page from stored runs instead of measuring.

use std::path::PathBuf;

use experiment::{Globals, Tool};
use measure::{stop, Classified};
use results::ResultStore;
use topo::Topology;

use crate::characterise::{self, Mode};

/// Characterise this machine: topology, latency by size and node, bandwidth, loaded latency,
/// SLB scaling and placement; writes report.html and records every run.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Finish within about two minutes on a small machine (the default).
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,
    /// Longer and more precise: sweep to 1 GiB, more samples per figure.
    #[arg(long)]
    pub full: bool,
    /// Directory for report.html (created if missing).
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub out: PathBuf,
    /// Measure nothing: rebuild the page from stored runs (a `report` run, or runs of any
    /// kind, each drawing its own sections), by id as `platscope results list` shows them.
    #[arg(long, value_name = "RUN", num_args = 1.., conflicts_with_all = ["quick", "full"])]
    pub from_db: Vec<i64>,
}

/// `platscope report`.
#[derive(Debug)]
pub struct Report;

impl Tool for Report {
    const PATH: &'static [&'static str] = &["report"];
    const ABOUT: &'static str = "Characterise this machine: topology, latency by size and node, \
                                 bandwidth, loaded latency, SLB scaling and placement; writes \
                                 report.html and records every run.";
    type Args = ReportArgs;

    fn run(args: &ReportArgs, globals: &Globals) -> Result<(), Classified> {
        let out_dir = report::file::prepare_out(&args.out)?;
        let data = if args.from_db.is_empty() {
            let topology = Topology::detect()
                .map_err(|e| Classified::runtime(format!("reading the topology: {e}")))?;
            stop::install();
            let mut rec = globals.recorder(&topology)?;
            let mode = if args.full { Mode::Full } else { Mode::Quick };
            characterise::run(mode, &topology, &mut rec, globals.version)?
        } else {
            let db = super::results::open_read_only(&globals.store)?;
            crate::from_db::rebuild(&db as &dyn ResultStore, &args.from_db, &globals.registry)?
        };
        let path = report::file::write_report(&out_dir, &data)?;
        let mut summary = crate::summary::summary_text(&data);
        summary.push_str(&format!("report: {}\n", path.display()));
        experiment::output::emit(&summary)?;
        Ok(())
    }
}
