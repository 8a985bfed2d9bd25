//! `platscope report`: the machine's characterisation, step by step ([`crate::plan`]). Each
//! step is stored under its own kind as it finishes, so an interruption or a later failure loses
//! nothing already measured, and `report --from-db` draws every step again through the
//! registry. A step that cannot run here says why in one line, on the page and in the
//! terminal, and the others still run.

use chart::Area;
use experiment::{Globals, Shown};
use measure::progress::Steps;
use measure::stop;
use measure::summary::differs_beyond_noise;
use membench::experiments::latency;
use membench::latency::LatencyPoint;
use place::{MemPolicy, PlacementRequest};
use report::html::{Note, ReportData, Section as PageSection};
use results::Recorder;
use topo::Topology;

use crate::plan::{plan, Action, Mode, Rounds, Step};
use crate::runner::Run;
use crate::SuiteError;

/// The command name the whole report's page is recorded under (see [`crate::from_db`]).
pub const REPORT_COMMAND: &str = results::fleet::REPORT_COMMAND;

pub fn run(
    mode: Mode,
    sections: &[Area],
    topology: &Topology,
    rec: &mut Recorder,
    globals: &Globals,
) -> Result<ReportData, SuiteError> {
    let cpus =
        PlacementRequest { cpus: None, policy: MemPolicy::Inherit }.allowed_cpus(topology)?;
    let steps = plan(mode, sections, topology, &cpus);
    let rounds = Rounds::new(mode).report_rounds;
    // Round 1 of every step, then round 2 of the repeated ones, …: each figure's rounds are
    // spread through the whole run, so they carry the clock, placement and neighbour changes
    // that happen between runs.
    let schedule: Vec<(u32, &Step)> = (1..=rounds)
        .flat_map(|round| {
            steps.iter().filter(move |s| round == 1 || s.repeat).map(move |s| (round, s))
        })
        .collect();
    let labels: Vec<String> = schedule
        .iter()
        .map(|(round, s)| {
            if rounds > 1 {
                format!("{} (round {round} of {rounds})", s.label)
            } else {
                s.label.to_string()
            }
        })
        .collect();
    let weights: Vec<(&str, f64)> =
        schedule.iter().zip(&labels).map(|((_, s), label)| (label.as_str(), s.seconds)).collect();
    let progress = Steps::new(&weights);
    let mut data = ReportData::new(mode.name(), globals.version, topology.clone(), rec.database());
    if sections.contains(&Area::Memory) {
        // Measure the core clock first: it also wakes the core from any idle state before the
        // smallest (cache-resident) sizes, which would otherwise absorb the ramp-up.
        measure::core_clock::core_ghz();
    }
    let mut outcomes: Vec<Box<dyn Shown>> = Vec::new();
    {
        let mut run = Run {
            mode,
            topology,
            globals,
            rec,
            data: &mut data,
            cpus: cpus.len(),
            probed: Vec::new(),
            round: 1,
        };
        for (i, &(round, step)) in schedule.iter().enumerate() {
            if stop::requested() {
                break;
            }
            if round != run.round {
                // The core clock at the end of each round: a comparison reads clock-bound
                // figures in cycles with it.
                run.data.clock_ghz.push(measure::core_clock::measure_now().ghz);
                run.round = round;
            }
            progress.begin(i);
            match &step.action {
                Action::Experiment { experiment, argv } => {
                    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
                    match run.experiment(step.label, experiment, &argv) {
                        Ok(outcome) => outcomes.push(outcome),
                        Err(e) => run.skipped(step, e),
                    }
                }
                Action::Skip(why) if round == 1 => run.skipped(step, why),
                Action::Skip(_) => {}
                Action::Compression => run.compression(step),
                Action::Database => run.database(step),
            }
        }
        if !stop::requested() {
            run.data.clock_ghz.push(measure::core_clock::measure_now().ghz);
        }
        let probed = std::mem::take(&mut run.probed);
        crate::placement::finish(run.data, &probed);
    }
    progress.finish();
    if let Some(why) = idle_disagreement(&outcomes) {
        data.notes.push(Note::new(PageSection::of(membench::chart::LOADED_LATENCY), why));
    }
    if stop::requested() {
        data.notes.push(Note::new(
            PageSection::Run,
            format!(
                "interrupted with {}: the sections after the interruption were not measured",
                stop::cause()
            ),
        ));
    }
    // The page's own data is recorded by the caller (`commands::report`), after anything it
    // adds (a comparison with a baseline), so `report --from-db` rebuilds all of it.
    Ok(data)
}

/// The loaded-latency run's own idle point against the idle DRAM latency of the node×node
/// matrix: `Some(text)` when they differ beyond their noise (the same quantity measured twice
/// in one report: the machine's state changed between the two steps).
pub fn idle_disagreement(outcomes: &[Box<dyn Shown>]) -> Option<String> {
    let local: Option<&LatencyPoint> = outcomes.iter().find_map(|o| match o
        .as_any()
        .downcast_ref::<latency::LatencyOutcome>(
    )? {
        latency::LatencyOutcome::Matrix(run) => run.matrix.first_local().map(|(_, cell)| cell),
        _ => None,
    });
    let curve =
        outcomes.iter().find_map(|o| o.as_any().downcast_ref::<membench::loaded::LoadedCurve>())?;
    let idle = curve.points.iter().find(|p| p.delay_cycles.is_none())?;
    let local = local?;
    differs_beyond_noise(&local.ns, &idle.latency_ns).then(|| {
        format!(
            "the loaded-latency run's idle point ({:.1} ns) and the idle DRAM latency ({:.1} ns) \
             differ beyond their noise: the machine's state changed between the two steps",
            idle.latency_ns.median, local.ns.median
        )
    })
}
