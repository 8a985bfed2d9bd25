//! `platscope report`: the main job. The steps are `suite::characterise`; here the page is
//! written and the summary printed, ending with the report's path. `--from-db` rebuilds the page
//! from stored runs instead of measuring.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use measure::stop;
use results::{ResultStore, StoreOptions};
use suite::characterise::{self, Mode};
use topo::Topology;

#[derive(Debug, Args)]
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
    /// Measure nothing: rebuild the page from stored runs (a `report` run, or `mem …` runs
    /// whose sections it fills), by id as `platscope results list` shows them.
    #[arg(long, value_name = "RUN", num_args = 1.., conflicts_with_all = ["quick", "full"])]
    pub from_db: Vec<i64>,
}

pub fn run(args: &ReportArgs, store: &StoreOptions) -> anyhow::Result<()> {
    let out_dir = report::file::prepare_out(&args.out)?;
    let data = if args.from_db.is_empty() {
        let topology = Topology::detect().context("reading the topology")?;
        stop::install();
        let mut rec = super::record::recorder(store, &topology)?;
        let mode = if args.full { Mode::Full } else { Mode::Quick };
        characterise::run(mode, &topology, &mut rec, crate::cli::VERSION)?
    } else {
        let db = super::results::open_read_only(store)?;
        suite::from_db::rebuild(
            &db as &dyn ResultStore,
            &args.from_db,
            &platscope::registry::REGISTRY,
        )?
    };
    let path = report::file::write_report(&out_dir, &data)?;
    let mut summary = suite::summary::summary_text(&data);
    summary.push_str(&format!("report: {}\n", path.display()));
    Ok(crate::output::emit(&summary)?)
}
