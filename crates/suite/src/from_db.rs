//! A report rebuilt from stored runs (`platscope report --from-db ID…`): a whole `report` run
//! as it was recorded, or any mix of runs — a report's steps fill the memory page's sections,
//! every other run (`mem …`, `timer`, …) draws its own, in place of the page's empty section of
//! the same id.
//! Stored results keep summaries, not raw samples (the metrics hold those), which is all the page
//! draws.

use experiment::Registry;
use membench::bandwidth::{BandwidthMatrix, Scaling};
use membench::latency::{LatencyMatrix, LatencyPoint};
use membench::loaded::LoadedCurve;
use report::html::{Note, ReportData, Section};
use results::{ResultStore, StoredRun};
use serde::de::DeserializeOwned;
use topo::Topology;

use crate::characterise::REPORT_COMMAND;
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
    let mut data = if first.command == REPORT_COMMAND {
        let mut data = parse::<ReportData>(first)?;
        // The steps that are experiments of their own (contention aside: c2c, cpu scale,
        // compression, allocators, the database, the network) draw their sections again from
        // their stored runs; the memory steps are in the page's data.
        for (_, id) in &data.stored_runs {
            data.parts.extend(step_parts(&store.run(*id)?, registry)?);
        }
        data
    } else {
        let topology: Topology = parse_value(first, first.topology.clone())?;
        let mut data =
            ReportData::new("from stored runs", &first.version, topology, Some(store.location()));
        place(&mut data, first, registry)?;
        data
    };
    for run in &runs[1..] {
        if run.command == REPORT_COMMAND {
            return Err(not_reportable(run, "a whole report can only be rebuilt on its own"));
        }
        place(&mut data, run, registry)?;
    }
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

/// Puts one run into its section: a `report: …` step into the memory page's own sections,
/// any other kind (every `mem …` run among them) as the sections its outcome draws — each run
/// its own, exactly as it drew them when it ran.
fn place(data: &mut ReportData, run: &StoredRun, registry: &Registry) -> Result<(), SuiteError> {
    match run.command.as_str() {
        "report: latency by size" => {
            let points: Vec<LatencyPoint> = parse(run)?;
            data.sweep_cpu = points.first().and_then(|p| p.cpu);
            data.latency_sweep = points;
        }
        "report: latency matrix" => data.latency_matrix = Some(parse::<LatencyMatrix>(run)?),
        "report: bandwidth matrix" => {
            data.bandwidth_matrix = Some(parse::<BandwidthMatrix>(run)?);
        }
        "report: bandwidth scaling" => data.bandwidth_scaling = Some(parse::<Scaling>(run)?),
        "report: copy bandwidth" => data.copy_bandwidth = parse(run)?,
        "report: loaded latency" => data.loaded_latency = Some(parse::<LoadedCurve>(run)?),
        "report: SLB scaling" => data.slb_scaling = parse(run)?,
        // Older reports' own step; a `cpu scale` run draws itself through the registry.
        "report: cpu scale" => data.cpu_scale = Some(parse(run)?),
        "report: SLB placement" => data.slb_policies = parse(run)?,
        _ => {
            let (outcome, topology) = registry.read_back(run)?;
            data.parts.extend(outcome.parts(&topology));
        }
    }
    data.stored_runs.push((run.command.clone(), run.id));
    Ok(())
}

/// The sections a report's step draws when it is an experiment of its own (c2c, cpu scale,
/// compression, allocators, the database, the network); none for the memory steps, whose data
/// is in the page's.
pub(crate) fn step_parts(
    run: &StoredRun,
    registry: &Registry,
) -> Result<Vec<chart::Part>, SuiteError> {
    if run.command.starts_with("report") {
        return Ok(Vec::new());
    }
    let (outcome, topology) = registry.read_back(run)?;
    Ok(outcome.parts(&topology))
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
