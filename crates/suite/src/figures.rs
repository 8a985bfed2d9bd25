//! Each stored report's headline figures, kept compact for the fleet reader (`platscope
//! fleet`): the figures the page shows (every area's headlines, in page order) with the spread
//! of the stored metric behind each, and the machine facts the report ran under.
//!
//! - [`of_report`]: a stored `report` run's [`ReportFigures`], drawn through the registry as
//!   `report --from-db` draws the page (reports of earlier versions included).
//! - [`record_after_report`]: what `platscope report` does once its run is stored.
//! - [`backfill`]: every report of a store that has no figures yet (stores written before
//!   platscope kept them); a report that cannot be read is skipped with the reason.
//!
//! ```no_run
//! # fn demo(registry: &experiment::Registry) -> Result<(), Box<dyn std::error::Error>> {
//! use results::{FleetFilter, FleetStore, SqliteStore};
//! let mut store = SqliteStore::open(std::path::Path::new("results.db"))?;
//! let filled = suite::figures::backfill(&mut store, registry)?;
//! println!("{} reports filled in, {} unreadable", filled.stored, filled.skipped.len());
//! for report in store.all_report_figures(&FleetFilter::default())? {
//!     println!("{} {}: {} figures", report.host, report.recorded_at, report.figures.len());
//! }
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;

use chart::{Area, Headline};
use experiment::Registry;
use report::html::ReportData;
use results::{
    FleetStore, HeadlineFigure, Recorder, ReportFigures, ResultStore, StoreError, StoredRun,
};

pub use results::fleet::{Backfill, Unreadable};

use crate::characterise::REPORT_COMMAND;
use crate::from_db::{legacy_step, step_parts};
use crate::SuiteError;

/// The headline figures and facts of report run `id` of `store`: each headline figure the
/// page shows that names its stored metric (`Headline::metric`), in page order, with that
/// metric's median, quartiles and sample count from the step run that drew it. Headlines
/// without a metric, or whose metric has no finite median, are left out.
pub fn of_report(
    store: &dyn ResultStore,
    id: i64,
    registry: &Registry,
) -> Result<ReportFigures, SuiteError> {
    let run = store.run(id)?;
    if run.command != REPORT_COMMAND {
        return Err(SuiteError::NotReportable {
            id,
            command: run.command,
            why: "only a `report` run has headline figures (see `platscope results list`)".into(),
        });
    }
    let data: ReportData =
        serde_json::from_value(run.result.clone()).map_err(|e| SuiteError::NotReportable {
            id,
            command: run.command.clone(),
            why: format!("its stored page does not read ({e})"),
        })?;
    // Each step draws its sections again, as `from_db::rebuild` draws the page; each headline
    // keeps the run that drew it, whose metric backs it.
    let mut steps: Vec<StoredRun> = Vec::new();
    let mut drawn: Vec<(Area, Headline, usize)> = Vec::new();
    for (_, step_id) in &data.stored_runs {
        let step = legacy_step(store.run(*step_id)?, &run.result);
        for part in step_parts(&step, registry)? {
            drawn.extend(part.headlines.into_iter().map(|h| (part.area, h, steps.len())));
        }
        steps.push(step);
    }
    // Page order: by area, each area's sections as measured (`ReportData::sections`).
    drawn.sort_by_key(|(area, _, _)| *area);
    let figures = drawn
        .into_iter()
        .filter_map(|(area, headline, step)| {
            let key = headline.metric?;
            let metric = steps[step].metrics.iter().find(|m| m.key() == key)?;
            let finite = [metric.median, metric.p25, metric.p75].iter().all(|v| v.is_finite());
            finite.then(|| HeadlineFigure {
                area: area.title().to_string(),
                name: headline.name,
                metric: key,
                unit: metric.unit.clone(),
                median: metric.median,
                p25: metric.p25,
                p75: metric.p75,
                samples: u32::try_from(metric.samples.iter().filter(|v| v.is_finite()).count())
                    .unwrap_or(u32::MAX),
            })
        })
        .collect();
    let facts: BTreeMap<String, String> =
        topo::machine_facts(&data.topology).into_iter().map(|f| (f.setting, f.value)).collect();
    Ok(ReportFigures {
        facts_digest: results::facts_digest(&facts),
        uuid: run.uuid,
        host: run.host,
        recorded_at: run.recorded_at,
        version: run.version,
        facts,
        figures,
    })
}

/// Stores report run `id`'s figures beside it (and in the shared database the recorder
/// pushes to). A failure is a warning: the report is stored, and `results push` or a
/// [`backfill`] computes its figures later.
pub fn record_after_report(rec: &mut Recorder, id: i64, registry: &Registry) {
    let Some(store) = rec.store() else { return };
    let stored = of_report(store, id, registry)
        .map_err(|e| e.to_string())
        .and_then(|figures| rec.record_figures(&figures).map_err(|e| e.to_string()));
    if let Err(e) = stored {
        measure::say!(
            "platscope: warning: the report's headline figures were not stored ({e}); \
             `platscope results push` computes them again"
        );
    }
}

/// Computes and stores the figures of every `report` run of `store` that has none (a store
/// written by an older platscope, or pushed from one). A report that cannot be read is
/// skipped with the reason; the store failing (gone, full, read-only) fails the backfill.
pub fn backfill(store: &mut dyn FleetStore, registry: &Registry) -> Result<Backfill, StoreError> {
    backfill_some(store, registry, None, &mut |_, _| {})
}

/// [`backfill`] of the report runs among `only` (all when `None`), calling `progress(done,
/// total)` after each.
pub fn backfill_some(
    store: &mut dyn FleetStore,
    registry: &Registry,
    only: Option<&[i64]>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Backfill, StoreError> {
    let ids: Vec<i64> = store
        .reports_without_figures()?
        .into_iter()
        .filter(|id| only.is_none_or(|only| only.contains(id)))
        .collect();
    let mut done = Backfill::default();
    for (i, &id) in ids.iter().enumerate() {
        match of_report(&*store, id, registry) {
            Ok(figures) => {
                if store.record_report_figures(&figures)? {
                    done.stored += 1;
                }
            }
            // The database itself failing is no reason to skip one report and try the next.
            Err(SuiteError::Store(e @ StoreError::Remote { .. })) => return Err(e),
            Err(e) => done.skipped.push(Unreadable { id, why: e.to_string() }),
        }
        progress(i + 1, ids.len());
    }
    Ok(done)
}
