//! A report rebuilt from stored runs (`platscope report --from-db ID…`): a whole `report` run
//! as it was recorded (its page, with every step it names drawing its sections again), or any
//! mix of runs, each drawing its own sections through the registry. Reports stored by earlier
//! versions read too: their steps' kinds are read-only kinds of the experiments that replaced
//! them. The placement each run was measured in is read from its parameters and classified
//! over the page again ([`crate::placement`]); runs stored before probes existed have none.

use experiment::Registry;
use report::html::{Note, ReportData, Section};
use results::{ResultStore, StoredRun};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use topo::Topology;

use crate::characterise::REPORT_COMMAND;
use crate::placement::{self, ProbedStep};
use crate::SuiteError;

/// The page's data from the runs `ids` of `store`, in the order given (a later run of the same
/// kind replaces an earlier one's section).
pub fn rebuild(
    store: &dyn ResultStore,
    ids: &[i64],
    registry: &Registry,
) -> Result<ReportData, SuiteError> {
    let runs: Vec<StoredRun> = ids.iter().map(|&id| store.run(id)).collect::<Result<_, _>>()?;
    let Some(first) = runs.first() else {
        return Err(SuiteError::NotReportable {
            id: 0,
            command: String::new(),
            why: "no run given".into(),
        });
    };
    let mut probed = Vec::new();
    let mut data = if first.command == REPORT_COMMAND {
        let mut data = parse::<ReportData>(first)?;
        // Every step draws its sections again from its stored run.
        for (label, id) in data.stored_runs.clone() {
            let step = legacy_step(store.run(id)?, &first.result);
            draw(&mut data, &step, label, registry, &mut probed)?;
        }
        data
    } else {
        let topology: Topology = parse_value(first, first.topology.clone())?;
        let mut data =
            ReportData::new("from stored runs", &first.version, topology, Some(store.location()));
        place(&mut data, first, registry, &mut probed)?;
        data
    };
    for run in &runs[1..] {
        if run.command == REPORT_COMMAND {
            return Err(not_reportable(run, "a whole report can only be rebuilt on its own"));
        }
        place(&mut data, run, registry, &mut probed)?;
    }
    placement::finish(&mut data, &probed);
    for run in &runs {
        if run.interrupted {
            data.notes.push(Note::new(
                Section::Run,
                format!(
                    "run {} ({}) was interrupted: it holds what was measured before Ctrl-C or \
                     SIGTERM",
                    run.id, run.command
                ),
            ));
        }
    }
    Ok(data)
}

/// Puts one run on the page: the sections its outcome draws, exactly as it drew them when it
/// ran.
fn place(
    data: &mut ReportData,
    run: &StoredRun,
    registry: &Registry,
    probed: &mut Vec<ProbedStep>,
) -> Result<(), SuiteError> {
    draw(data, run, run.command.clone(), registry, probed)?;
    data.stored_runs.push((run.command.clone(), run.id));
    Ok(())
}

/// Draws a stored step's sections on the page, and notes its placement under `label`.
fn draw(
    data: &mut ReportData,
    run: &StoredRun,
    label: String,
    registry: &Registry,
    probed: &mut Vec<ProbedStep>,
) -> Result<(), SuiteError> {
    let start = data.parts.len();
    data.parts.extend(step_parts(run, registry)?);
    if let Some(placement) = placement::of_run(run) {
        probed.push(ProbedStep { label, placement, parts: start..data.parts.len() });
    }
    Ok(())
}

/// The sections a stored run draws, read back through the registry, saying the placement it
/// was measured in when it was probed.
pub(crate) fn step_parts(
    run: &StoredRun,
    registry: &Registry,
) -> Result<Vec<chart::Part>, SuiteError> {
    let (outcome, topology) = registry.read_back(run)?;
    let mut parts = outcome.parts(&topology);
    placement::label_sections(&mut parts, placement::of_run(run).as_ref());
    Ok(parts)
}

/// A report's step as it reads now: reports of earlier versions kept the prefetch self-check
/// in the page, beside their latency sweep step; it goes back with the sweep.
pub(crate) fn legacy_step(mut step: StoredRun, page: &Value) -> StoredRun {
    let check = page.get("prefetch_check").filter(|c| !c.is_null());
    if let (Some(check), "report: latency by size") = (check, step.command.as_str()) {
        step.result = json!({ "points": step.result, "prefetch_check": check });
    }
    step
}

fn not_reportable(run: &StoredRun, why: &str) -> SuiteError {
    SuiteError::NotReportable { id: run.id, command: run.command.clone(), why: why.into() }
}

fn parse<T: DeserializeOwned>(run: &StoredRun) -> Result<T, SuiteError> {
    parse_value(run, run.result.clone())
}

fn parse_value<T: DeserializeOwned>(
    run: &StoredRun,
    value: serde_json::Value,
) -> Result<T, SuiteError> {
    serde_json::from_value(value).map_err(|e| {
        not_reportable(run, &format!("its stored result does not read as that kind of run ({e})"))
    })
}
