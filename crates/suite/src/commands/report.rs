//! `platscope report`: the main job. The steps are [`crate::characterise`]; here the page is
//! compared with a baseline when asked, recorded, written (redacted when asked) and summarised,
//! ending with the report's path. `--from-db` rebuilds the page from stored runs instead of
//! measuring.

use std::path::PathBuf;

use experiment::{Format, Globals, Tool};
use measure::{stop, Classified, Metric};
use report::html::ReportData;
use report::redact::Redactor;
use results::ResultStore;
use serde_json::json;
use topo::Topology;

use crate::characterise::{self, REPORT_COMMAND};
use crate::compare::{self, BaselineRef, StoredReport};
use crate::plan::Mode;
use chart::Area;

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
    /// Put another machine's (or run's) report beside this one: a run id in --db, FILE.db (its
    /// newest report), FILE.db#ID, or postgresql://…#HOST (HOST's newest report in a shared
    /// store). Every headline figure gets the ratio and a verdict: faster, slower or same
    /// (untested when too few samples to test).
    #[arg(long, value_name = "REF")]
    pub baseline: Option<String>,
    /// The sections to run, comma-separated (default: all). The machine facts are always
    /// shown.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        value_parser = crate::plan::sections_parser(),
        conflicts_with = "from_db"
    )]
    pub sections: Vec<Area>,
    /// Replace host names, IP and MAC addresses and serial numbers with stable pseudonyms on the
    /// page, in JSON and in the summary (the key stays beside the local results database).
    #[arg(long)]
    pub redact: bool,
}

/// `platscope report`.
#[derive(Debug)]
pub struct Report;

impl Tool for Report {
    const PATH: &'static [&'static str] = &["report"];
    const ABOUT: &'static str = "Characterise this machine: its facts, memory (latency by size \
                                 and node, bandwidth, loaded latency, SLB), contention, CPU \
                                 scaling, compression, allocators, a throwaway PostgreSQL and \
                                 the network; writes report.html and records every run. \
                                 --baseline REF puts another report beside it with tested \
                                 verdicts.";
    type Args = ReportArgs;

    fn run(args: &ReportArgs, globals: &Globals) -> Result<(), Classified> {
        let baseline_ref = args.baseline.as_deref().map(BaselineRef::parse).transpose()?;
        // A report to measure: its baseline is found now, not after minutes of measuring.
        if let Some(reference) = baseline_ref.as_ref().filter(|_| args.from_db.is_empty()) {
            if globals.store.no_store {
                return Err(Classified::usage(
                    "--baseline compares stored samples: drop --no-store",
                ));
            }
            let local = crate::commands::results::open_read_only(&globals.store).ok();
            compare::check_baseline(reference, local.as_ref().map(|db| db as &dyn ResultStore))?;
        }
        let out_dir = report::file::prepare_out(&args.out)?;
        let redactor = args.redact.then(|| redactor(globals)).transpose()?;
        let mut baseline_host = None;
        // The report run's id, named if printing its summary fails after it was stored.
        let mut stored_as = None;
        // The report's own failure to compare, found after measuring: the page and the stored
        // run are kept without the comparison, and the command still fails.
        let mut comparison_failed = None;
        let data = if args.from_db.is_empty() {
            let topology = Topology::detect()
                .map_err(|e| Classified::runtime(format!("reading the topology: {e}")))?;
            stop::install();
            let mut rec = globals.recorder(&topology)?;
            let mode = if args.full { Mode::Full } else { Mode::Quick };
            let sections = if args.sections.is_empty() {
                Area::sections().collect()
            } else {
                args.sections.clone()
            };
            let mut data = characterise::run(mode, &sections, &topology, &mut rec, globals)?;
            // Each headline's spread over the rounds, read back from the stored rounds.
            if let Ok(db) = crate::commands::results::open_read_only(&globals.store) {
                compare::show_round_spread(&mut data, &db, &globals.registry)?;
            }
            if let Some(reference) = &baseline_ref {
                // The steps are stored: compare through the store, as --from-db would.
                let compared =
                    crate::commands::results::open_read_only(&globals.store).and_then(|db| {
                        let this = StoredReport::from_steps(&db, data.clone())?;
                        let (base, name, history) = compare::read_baseline(reference, &db, &this)?;
                        let host = base.run.host.clone();
                        Ok((
                            compare::compare(&this, &base, name, &history, &globals.registry),
                            host,
                        ))
                    });
                match compared {
                    Ok((comparison, host)) => {
                        baseline_host = Some(host);
                        data.comparison = Some(comparison);
                    }
                    Err(e) => comparison_failed = Some(e),
                }
            }
            // The page's own data, so `report --from-db` can rebuild it, comparison included;
            // its figures are the steps'.
            stored_as =
                rec.record(REPORT_COMMAND, &data, &Vec::<Metric>::new(), stop::requested())?;
            if let Some(id) = stored_as {
                // The fleet reader's compact rows: the page's headline figures and facts.
                crate::figures::record_after_report(&mut rec, id, &globals.registry);
            }
            data
        } else {
            let db = super::results::open_read_only(&globals.store)?;
            let mut data =
                crate::from_db::rebuild(&db as &dyn ResultStore, &args.from_db, &globals.registry)?;
            compare::show_round_spread(&mut data, &db, &globals.registry)?;
            if let Some(reference) = &baseline_ref {
                let this = StoredReport::read(&db, args.from_db[0])?;
                let (base, name, history) = compare::read_baseline(reference, &db, &this)?;
                baseline_host = Some(base.run.host.clone());
                data.comparison =
                    Some(compare::compare(&this, &base, name, &history, &globals.registry));
            }
            data
        };
        let mut redactor = redactor;
        if let (Some(r), Some(host)) = (redactor.as_mut(), &baseline_host) {
            r.add(report::redact::Kind::Host, host);
        }
        let clean = |text: String| match &redactor {
            Some(r) => r.apply(&text),
            None => text,
        };
        let path = report::file::write_html(&out_dir, &clean(report::html::render_html(&data)))?;
        match globals.format {
            Format::Json => {
                let c = data.comparison.as_ref();
                let value = json!({
                    "page": path,
                    "comparison": c.map(|c| c.comparison.clone()).unwrap_or_default(),
                    "config_diff": c.map(|c| c.config_diff.clone()).unwrap_or_default(),
                    "baseline": c.map(|c| c.baseline.clone()),
                    "calibrated_from": c.map(|c| c.calibrated_from),
                    // Where the CPUs sat in each step whose figures depend on it.
                    "placement": data.placement,
                });
                let text = serde_json::to_string_pretty(&value)?;
                experiment::output::emit(&clean(format!("{text}\n")))
                    .map_err(|e| experiment::output_failed(&e, stored_as))?;
            }
            _ => {
                let mut summary = crate::summary::summary_text(&data);
                if let Some(c) = &data.comparison {
                    summary.push_str(&report::compare::comparison_text(c));
                }
                summary.push_str(&format!("report: {}\n", path.display()));
                experiment::output::emit(&clean(summary))
                    .map_err(|e| experiment::output_failed(&e, stored_as))?;
            }
        }
        match comparison_failed {
            Some(e) => Err(e.context(format!(
                "the report was kept without the comparison ({}{})",
                path.display(),
                stored_as.map(|id| format!(", run {id}")).unwrap_or_default()
            ))),
            None => Ok(()),
        }
    }
}

/// The redactor of this machine, its key beside the results database.
fn redactor(globals: &Globals) -> Result<Redactor, Classified> {
    let db = match &globals.store.db {
        Some(p) if !p.to_string_lossy().contains("://") => Some(p.clone()),
        _ => results::default_path(),
    };
    let dir =
        db.as_deref().and_then(std::path::Path::parent).map(PathBuf::from).ok_or_else(|| {
            Classified::usage("--redact keeps its key beside the results database: give --db PATH")
        })?;
    Ok(Redactor::for_this_machine(&dir)?)
}

impl StoredReport {
    /// This report's page with its steps as stored (the report run itself is not stored yet).
    pub fn from_steps(store: &dyn ResultStore, data: ReportData) -> Result<Self, Classified> {
        let (steps, rounds) = crate::compare::read_steps(store, &data)?;
        let run = results::StoredRun {
            id: 0,
            uuid: String::new(),
            host: results::host_name(),
            recorded_at: data.generated_at.clone(),
            command: REPORT_COMMAND.into(),
            parameters: serde_json::Value::Null,
            version: data.version.clone(),
            environment: serde_json::Value::Null,
            topology: serde_json::Value::Null,
            metrics: Vec::new(),
            placements: Vec::new(),
            result: serde_json::Value::Null,
            interrupted: false,
        };
        Ok(Self { run, data, steps, rounds })
    }
}
