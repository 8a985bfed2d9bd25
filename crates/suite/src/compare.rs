//! Two reports side by side (`report --baseline REF`): every headline figure of this report
//! against the same figure of the baseline, with the ratio, its interval and a verdict from
//! [`measure::verdict`], and the machine settings that differ.
//!
//! A figure is found in both reports by the step that measured it (its label in the report's
//! stored runs, or the section its step drew) and the metric's key (name and labels), never by
//! its printed text. Its replicates are its rounds: the report repeats its headline steps in
//! rounds spread through the run, and each round's median is one replicate (a report stored
//! before rounds existed gives its samples, judged as such). Every chart is shown for both
//! machines: the baseline's sections, drawn from its stored steps, sit beside this machine's of
//! the same id.
//!
//! The run-to-run noise below the rounds is measured when the stores hold at least
//! [`measure::verdict::MIN_HISTORY_RUNS`] other reports of a host, and assumed otherwise
//! ([`assumed_noise`]); every figure of the page is judged in one family (Holm). Figures bound
//! by the core clock are judged in cycles too ([`clock_bound`]), so a change of the host's
//! clock is named as such (docs/comparing.md).
//!
//! A figure that depends on where the CPUs sit, taken in different placements by the two
//! reports (its step's probes, in any of the rounds, disagree with the baseline's or among
//! themselves: [`measure::placement::differs_across`]), gets no verdict: `placement differs`,
//! with how the probes differ. Nor does such a pair of other reports count as noise.

use std::collections::HashMap;

use chart::Part;
use experiment::Registry;
use measure::placement::{depends_on_placement, differs_across, RunPlacement};
use measure::stats::finite_median;
use measure::verdict::{
    assess, judge_family, Judgement, Level, RunNoise, Verdict, ASSUMED_RUN_NOISE,
};
pub use report::compare::{CyclesComparison, FigureComparison, ReportComparison, SettingDiff};
use report::html::ReportData;
use results::{ResultStore, StoredMetric, StoredRun};

use crate::SuiteError;

/// A report run and the step runs it names, read back from a store.
#[derive(Debug)]
pub struct StoredReport {
    pub run: StoredRun,
    pub data: ReportData,
    /// (step label, its stored run).
    pub steps: Vec<(String, StoredRun)>,
    /// The later rounds of the repeated steps: (step label, round, its stored run).
    pub rounds: Vec<(String, u32, StoredRun)>,
}

impl StoredReport {
    /// Report run `id` of `store` with its steps.
    pub fn read(store: &dyn ResultStore, id: i64) -> Result<Self, SuiteError> {
        let run = store.run(id)?;
        if run.command != crate::characterise::REPORT_COMMAND {
            return Err(SuiteError::NotReportable {
                id,
                command: run.command.clone(),
                why: "a baseline must be a `report` run (see `platscope results list`)".into(),
            });
        }
        let data: ReportData =
            serde_json::from_value(run.result.clone()).map_err(|e| SuiteError::NotReportable {
                id,
                command: run.command.clone(),
                why: format!("its stored page does not read ({e})"),
            })?;
        let (steps, rounds) = read_steps(store, &data)?;
        Ok(Self { run, data, steps, rounds })
    }
}

/// The step runs and round runs a report's page names, read from `store`.
#[allow(clippy::type_complexity)]
pub(crate) fn read_steps(
    store: &dyn ResultStore,
    data: &ReportData,
) -> Result<(Vec<(String, StoredRun)>, Vec<(String, u32, StoredRun)>), SuiteError> {
    let mut steps = Vec::new();
    for (label, step_id) in &data.stored_runs {
        steps.push((label.clone(), store.run(*step_id)?));
    }
    let mut rounds = Vec::new();
    for r in &data.rounds {
        rounds.push((r.label.clone(), r.round, store.run(r.id)?));
    }
    Ok((steps, rounds))
}

/// A headline figure of a stored report with the stored metric behind it and its replicates.
struct Figure {
    name: String,
    /// Round 1's metric.
    metric: StoredMetric,
    /// The placements its step was measured in, round 1's first, where probed (empty for a
    /// step without probes or a report stored before them).
    placement: Vec<RunPlacement>,
    /// One value a replicate: each round's median (the round's index from 0 beside it), or
    /// the samples of a report stored before rounds.
    values: Vec<(usize, f64)>,
    level: Level,
}

impl Figure {
    /// How this figure's placement and `baseline`'s differ, when the figure depends on
    /// placement and both were probed.
    fn placement_differs(&self, baseline: &Figure) -> Option<String> {
        if !depends_on_placement(&self.metric.labels) {
            return None;
        }
        if self.placement.is_empty() || baseline.placement.is_empty() {
            return None;
        }
        differs_across(&self.placement, &baseline.placement)
    }

    /// Whether `other` measures the same quantity: the same metric in the same unit, whatever
    /// labels each run's own choices gave it.
    fn same_quantity(&self, other: &Figure) -> bool {
        same_quantity(&self.metric, &other.metric)
    }

    /// Whether `other`'s labels are this figure's but for the ones a run picks for itself
    /// ([`METHOD_LABELS`]): a host's reports that differ only there are its noise; another
    /// size is another figure.
    fn same_apart_from_method(&self, other: &Figure) -> bool {
        same_apart_from_method(&self.metric, &other.metric)
    }
}

/// Whether two metrics measure the same quantity: the same name in the same unit.
fn same_quantity(a: &StoredMetric, b: &StoredMetric) -> bool {
    a.name == b.name && a.unit == b.unit
}

/// Whether two metrics' labels are the same but for [`METHOD_LABELS`].
fn same_apart_from_method(a: &StoredMetric, b: &StoredMetric) -> bool {
    let kept = |m: &StoredMetric| -> Vec<(String, String)> {
        m.labels
            .iter()
            .filter(|(name, _)| !METHOD_LABELS.contains(&name.as_str()))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect()
    };
    kept(a) == kept(b)
}

/// The labels a report picks per run by measuring (the faster ISA and walk of a bandwidth
/// trial, the load delay that gave the most load): the figure is the same whichever it picked.
const METHOD_LABELS: [&str; 3] = ["isa", "walk", "delay"];

/// The labels in which `this` and `baseline` differ, in one clause ("isa avx512, baseline
/// avx2"), or `None` when they were measured alike.
fn labels_differ(this: &StoredMetric, baseline: &StoredMetric) -> Option<String> {
    let absent = String::from("-");
    let names: std::collections::BTreeSet<&String> =
        this.labels.keys().chain(baseline.labels.keys()).collect();
    let clauses: Vec<String> = names
        .into_iter()
        .filter_map(|name| {
            let a = this.labels.get(name).unwrap_or(&absent);
            let b = baseline.labels.get(name).unwrap_or(&absent);
            (a != b).then(|| format!("{name} {a}, baseline {b}"))
        })
        .collect();
    (!clauses.is_empty()).then(|| clauses.join("; "))
}

/// Each of `report`'s steps with its label and the sections it draws (none for a step whose
/// stored result no longer reads).
fn drawn<'r>(
    report: &'r StoredReport,
    registry: &Registry,
) -> Vec<(&'r str, &'r StoredRun, Vec<Part>)> {
    report
        .steps
        .iter()
        .filter_map(|(label, run)| {
            Some((label.as_str(), run, crate::from_db::step_parts(run, registry).ok()?))
        })
        .collect()
}

/// The metric of `run` that measures what `metric` does: the same key, or the same name,
/// unit and labels but for the ones a run picks for itself ([`METHOD_LABELS`]).
fn matching<'a>(run: &'a StoredRun, metric: &StoredMetric) -> Option<&'a StoredMetric> {
    let key = metric.key();
    run.metrics.iter().find(|m| m.key() == key).or_else(|| {
        run.metrics.iter().find(|m| same_quantity(m, metric) && same_apart_from_method(m, metric))
    })
}

/// Every figure of `report` that names its stored metric — the headline figures of the
/// sections its steps draw, then the further figures they offer for comparison (each thread
/// count, each kernel) — as the page names them, with its rounds; a name counts once.
fn figures(report: &StoredReport, registry: &Registry) -> Vec<Figure> {
    let drawn = drawn(report, registry);
    let mut out: Vec<Figure> = Vec::new();
    let headlines = drawn.iter().flat_map(|(label, run, parts)| {
        parts.iter().flat_map(move |p| p.headlines.iter().map(move |h| (*label, *run, h)))
    });
    let compared = drawn.iter().flat_map(|(label, run, parts)| {
        parts.iter().flat_map(move |p| p.compared.iter().map(move |h| (*label, *run, h)))
    });
    for (label, run, headline) in headlines.chain(compared) {
        let Some(key) = &headline.metric else { continue };
        if out.iter().any(|f| f.name == headline.name) {
            continue;
        }
        let Some(m) = run.metrics.iter().find(|m| &m.key() == key) else { continue };
        let mut values = vec![(0, m.median)];
        // Every round's probes: the hypervisor may move the vCPUs between two rounds.
        let mut placement: Vec<RunPlacement> = crate::placement::of_run(run).into_iter().collect();
        for (round_label, round, round_run) in &report.rounds {
            if round_label == label {
                if let Some(r) = matching(round_run, m) {
                    values.push((*round as usize - 1, r.median));
                    placement.extend(crate::placement::of_run(round_run));
                }
            }
        }
        let (values, level) = if values.len() >= 2 {
            (values, Level::Rounds)
        } else {
            (m.samples.iter().map(|&v| (0, v)).collect(), Level::Samples)
        };
        out.push(Figure {
            name: headline.name.clone(),
            metric: m.clone(),
            placement,
            values,
            level,
        });
    }
    out
}

/// Adds to each headline figure of `data` (a report whose steps are in `store`) the spread of
/// its rounds, "3 rounds 96.1–98.4 ns", so the page shows how much a figure moved through the
/// run. A report without rounds is left as it is.
pub fn show_round_spread(
    data: &mut ReportData,
    store: &dyn ResultStore,
    registry: &Registry,
) -> Result<(), measure::Classified> {
    if data.rounds.is_empty() {
        return Ok(());
    }
    let report = StoredReport::from_steps(store, data.clone())?;
    let spreads: Vec<(String, String)> = figures(&report, registry)
        .into_iter()
        .filter(|f| f.level == Level::Rounds)
        .map(|f| {
            let spread = FigureComparison::spread_text(&f.replicates(), f.level);
            (f.name, format!("{spread} {}", f.metric.unit))
        })
        .collect();
    for part in &mut data.parts {
        for h in part.headlines.iter_mut().chain(part.compared.iter_mut()) {
            if let Some((_, spread)) = spreads.iter().find(|(name, _)| name == &h.name) {
                h.detail = format!("{} · {spread}", h.detail);
            }
        }
    }
    Ok(())
}

impl Figure {
    fn replicates(&self) -> Vec<f64> {
        self.values.iter().map(|v| v.1).collect()
    }

    /// The figure in cycles, round by round, when it is bound by the core clock and every
    /// round's clock was measured: ns × GHz, or a rate ÷ GHz.
    fn in_cycles(&self, clocks: &[Option<f64>]) -> Option<Vec<f64>> {
        let kind = clock_bound(&self.name, &self.metric.name)?;
        if self.level != Level::Rounds {
            return None;
        }
        self.values
            .iter()
            .map(|&(round, v)| {
                let ghz = clocks.get(round).copied().flatten()?;
                Some(match kind {
                    ClockBound::Time => v * ghz,
                    ClockBound::Rate => v / ghz,
                })
            })
            .collect()
    }
}

/// How a figure bound by the core clock turns into cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockBound {
    /// A time (ns): × GHz gives cycles.
    Time,
    /// A rate (MB/s, ops/s): ÷ GHz gives work per billion cycles.
    Rate,
}

/// Whether the figure named `figure` (metric `metric`) is bound by the core clock: the L1
/// latency, the Silly Little Benchmark's ns per store, the timer's cost, compression and CPU
/// scaling throughput. Memory beyond the caches, the network and the database are not.
pub fn clock_bound(figure: &str, metric: &str) -> Option<ClockBound> {
    match metric {
        _ if figure == "L1 latency" => Some(ClockBound::Time),
        "slb_ns_per_op" | "slb_shared_ns_per_op" | "timer_cost" => Some(ClockBound::Time),
        "compress_throughput" | "cpu_scale_throughput" => Some(ClockBound::Rate),
        _ => None,
    }
}

/// The run-to-run noise assumed for a figure without history: [`ASSUMED_RUN_NOISE`], or 20%
/// for the figures seen to swing most between quiet runs of one VM (the Silly Little
/// Benchmark and locks across workers moved by ×0.68 to ×1.98 between two quiet reports,
/// cache-line hand-offs with the vCPUs' placement).
pub fn assumed_noise(metric: &str) -> f64 {
    if metric.starts_with("slb") || metric.starts_with("c2c") {
        0.20
    } else {
        ASSUMED_RUN_NOISE
    }
}

/// Run-to-run noise of each figure on each host, measured on other reports of that host
/// ([`RunNoise::from_runs`]), with how many reports it rests on.
#[derive(Debug, Default)]
struct Noise {
    /// (host, figure) → the noise measured on that host's other reports.
    measured: HashMap<(String, String), RunNoise>,
    reports: usize,
}

impl Noise {
    fn from_history(history: &[StoredReport], registry: &Registry) -> Self {
        let mut by_host: HashMap<&str, Vec<Vec<Figure>>> = HashMap::new();
        for report in history {
            by_host.entry(report.run.host.as_str()).or_default().push(figures(report, registry));
        }
        Self::from_figures(&by_host)
    }

    /// The noise of each figure from the figures of each host's reports: each report's
    /// replicates are one run; a report whose figure was measured another way (another size)
    /// or in another placement than the host's newest is left out.
    fn from_figures(by_host: &HashMap<&str, Vec<Vec<Figure>>>) -> Self {
        let mut noise = Noise::default();
        for (host, runs) in by_host {
            let Some(newest) = runs.first() else { continue };
            let mut used = false;
            for figure in newest {
                let same: Vec<Vec<f64>> = runs
                    .iter()
                    .filter_map(|run| run.iter().find(|f| f.name == figure.name))
                    .filter(|f| {
                        f.same_quantity(figure)
                            && f.same_apart_from_method(figure)
                            && f.placement_differs(figure).is_none()
                    })
                    .map(Figure::replicates)
                    .collect();
                if let Some(n) = RunNoise::from_runs(&same) {
                    used = true;
                    noise.measured.insert((host.to_string(), figure.name.clone()), n);
                }
            }
            if used {
                noise.reports += runs.len();
            }
        }
        noise
    }

    /// The noise to add for `figure` between `this` host and `baseline` host: each side's
    /// measured noise, or the assumed one where a host has too little history; measured only
    /// when both sides are.
    fn for_figure(&self, figure: &Figure, this: &str, baseline: &str) -> RunNoise {
        let assumed = RunNoise::assumed(assumed_noise(&figure.metric.name));
        let side =
            |host: &str| self.measured.get(&(host.to_string(), figure.name.clone())).copied();
        match (side(this), side(baseline)) {
            (Some(a), Some(b)) => RunNoise {
                sigma: ((a.sigma * a.sigma + b.sigma * b.sigma) / 2.0).sqrt(),
                runs: a.runs.min(b.runs),
            },
            (Some(a), None) | (None, Some(a)) => RunNoise::assumed(
                ((a.sigma * a.sigma + assumed.sigma * assumed.sigma) / 2.0).sqrt(),
            ),
            (None, None) => assumed,
        }
    }
}

/// Compares `this` report with `baseline`, headline figure by headline figure, each on its
/// rounds with the run-to-run noise measured on `history` (the other reports of either host, the
/// two compared left out) or assumed, all figures one family; and puts the baseline's
/// sections beside this machine's.
pub fn compare(
    this: &StoredReport,
    baseline: &StoredReport,
    baseline_name: String,
    history: &[StoredReport],
    registry: &Registry,
) -> ReportComparison {
    let noise = Noise::from_history(history, registry);
    let theirs = figures(baseline, registry);
    let same_host = this.run.host == baseline.run.host;
    let (this_clocks, their_clocks) = (&this.data.clock_ghz, &baseline.data.clock_ghz);
    let (this_ghz, their_ghz) = (median_clock(this_clocks), median_clock(their_clocks));
    // Each figure's judgement in ns (or its unit) and, when clock-bound, in cycles.
    // Each row: the figure, its judgement, and when clock-bound its judgement in cycles with
    // both sides' median in cycles.
    #[allow(clippy::type_complexity)]
    let mut rows: Vec<(FigureComparison, Judgement, Option<(Judgement, f64, f64)>, bool)> =
        Vec::new();
    for mine in figures(this, registry) {
        // The same figure by name and quantity; its labels may differ where the report picks
        // its method per run (the faster ISA, the delay that gave the most load): compared all
        // the same, and the difference said.
        let Some(base) = theirs.iter().find(|f| f.name == mine.name && f.same_quantity(&mine))
        else {
            continue;
        };
        let placement = mine.placement_differs(base);
        let unit = mine.metric.unit.clone();
        let lower = measure::Unit::from_symbol(&unit).is_some_and(measure::Unit::lower_is_better);
        let run_noise = noise.for_figure(&mine, &this.run.host, &baseline.run.host);
        let level = if mine.level == base.level { mine.level } else { Level::Samples };
        let judged = assess(&mine.replicates(), &base.replicates(), level, run_noise);
        let cycles = match (mine.in_cycles(this_clocks), base.in_cycles(their_clocks)) {
            (Some(a), Some(b)) => Some((
                assess(&a, &b, Level::Rounds, run_noise),
                finite_median(&a),
                finite_median(&b),
            )),
            _ => None,
        };
        let row = FigureComparison {
            figure: mine.name.clone(),
            unit,
            this: finite_median(&mine.replicates()),
            baseline: finite_median(&base.replicates()),
            ratio: judged.ratio,
            ratio_low: judged.ratio_low,
            ratio_high: judged.ratio_high,
            verdict: judged.verdict,
            p_value: judged.p_value,
            adjusted_p: judged.adjusted_p,
            this_replicates: judged.this_replicates,
            baseline_replicates: judged.baseline_replicates,
            level,
            this_values: if level == Level::Samples { Vec::new() } else { mine.replicates() },
            baseline_values: if level == Level::Samples { Vec::new() } else { base.replicates() },
            run_noise: judged.run_noise,
            run_noise_runs: judged.run_noise_runs,
            detectable: judged.detectable,
            rests_on: String::new(),
            this_clock_ghz: this_ghz,
            baseline_clock_ghz: their_ghz,
            cycles: None,
            clock_note: None,
            placement,
            measured_as: labels_differ(&mine.metric, &base.metric),
        };
        rows.push((row, judged, cycles, lower));
    }
    // One family: every figure of the page, and the cycles of the clock-bound ones.
    {
        let mut family: Vec<(&mut Judgement, bool)> = Vec::new();
        for (_, judged, cycles, lower) in rows.iter_mut() {
            let lower = *lower;
            family.push((judged, lower));
            if let Some((c, _, _)) = cycles.as_mut() {
                family.push((c, lower));
            }
        }
        judge_family(&mut family);
    }
    let mut comparison = Vec::new();
    for (mut row, judged, cycles, _) in rows {
        row.verdict = judged.verdict;
        row.adjusted_p = judged.adjusted_p;
        row.detectable = judged.detectable;
        row.rests_on = judged.rests_on();
        if let (Some((c, this_cycles, their_cycles)), Some(a), Some(b)) =
            (cycles, this_ghz, their_ghz)
        {
            row.clock_note = clock_note(row.verdict, c.verdict, a, b, same_host);
            if row.clock_note.is_some() && same_host {
                // One host: the clock's change is the host's, not the figure's.
                row.verdict = c.verdict;
            }
            row.cycles = Some(CyclesComparison {
                unit: if row.unit.starts_with("ns") {
                    "cycles".into()
                } else {
                    format!("{} per GHz", row.unit)
                },
                this: this_cycles,
                baseline: their_cycles,
                ratio: c.ratio,
                ratio_low: c.ratio_low,
                ratio_high: c.ratio_high,
                verdict: c.verdict,
            });
        }
        if row.placement.is_some() {
            row.verdict = Verdict::PlacementDiffers;
        }
        comparison.push(row);
    }
    let this_machine = topo::machine_facts(&this.data.topology);
    let baseline_machine = topo::machine_facts(&baseline.data.topology);
    let config_diff = topo::config_diff(&this_machine, &baseline_machine)
        .into_iter()
        .map(|d| SettingDiff { setting: d.setting, this: d.this, baseline: d.baseline })
        .collect();
    // The baseline's page as it drew itself: its memory data and its steps' sections.
    let mut page = baseline.data.clone();
    page.parts.extend(drawn(baseline, registry).into_iter().flat_map(|(_, _, parts)| parts));
    ReportComparison {
        baseline: baseline_name,
        comparison,
        config_diff,
        baseline_machine,
        baseline_sections: report::html::baseline_sections(&page),
        calibrated_from: noise.reports,
        this_clock_ghz: this_clocks.clone(),
        baseline_clock_ghz: their_clocks.clone(),
        same_host,
    }
}

/// When the figure's verdict in its own unit and in cycles disagree, why, in one clause:
/// the clock moved the figure (one host: "core clock −12%: the host's frequency, not this
/// figure"), or hid a change in cycles.
fn clock_note(
    own: Verdict,
    cycles: Verdict,
    this_ghz: f64,
    baseline_ghz: f64,
    same_host: bool,
) -> Option<String> {
    let called = |v: Verdict| matches!(v, Verdict::Faster | Verdict::Slower);
    if own == cycles || !(called(own) || called(cycles)) {
        return None;
    }
    let change = (this_ghz / baseline_ghz - 1.0) * 100.0;
    let clock = format!("core clock {}{:.0}%", if change >= 0.0 { "+" } else { "−" }, change.abs());
    Some(if called(own) && same_host {
        format!("{clock}: the host's frequency, not this figure")
    } else {
        format!("{clock}: in cycles {}", cycles.name())
    })
}

/// The median of the measured clocks.
fn median_clock(clocks: &[Option<f64>]) -> Option<f64> {
    let measured: Vec<f64> = clocks.iter().flatten().copied().filter(|v| v.is_finite()).collect();
    (!measured.is_empty()).then(|| measure::stats::median(&measured))
}

/// Earlier report runs of `hosts` in `store` (newest first, at most `per_host` each), leaving
/// out the runs `skip` names by uuid: the history a comparison calibrates its noise on.
pub fn history(
    store: &dyn ResultStore,
    hosts: &[&str],
    skip: &[&str],
    per_host: usize,
) -> Result<Vec<StoredReport>, SuiteError> {
    let command = crate::characterise::REPORT_COMMAND;
    let mut taken: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for run in store.list(usize::MAX)? {
        if run.command != command
            || run.interrupted
            || (!run.uuid.is_empty() && skip.contains(&run.uuid.as_str()))
            || !hosts.contains(&run.host.as_str())
        {
            continue;
        }
        let count = taken.entry(run.host.clone()).or_default();
        if *count >= per_host {
            continue;
        }
        // A report whose page or steps no longer read is left out of the history.
        if let Ok(report) = StoredReport::read(store, run.id) {
            *count += 1;
            out.push(report);
        }
    }
    Ok(out)
}

/// Where `--baseline REF` points: a run id in `--db`, `FILE.db` (its newest report run),
/// `FILE.db#ID`, or `postgresql://…#HOST` (HOST's newest report run in a shared store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaselineRef {
    Id(i64),
    File { path: std::path::PathBuf, id: Option<i64> },
    Host { url: String, host: String },
}

impl BaselineRef {
    pub fn parse(text: &str) -> Result<Self, measure::Classified> {
        let text = text.trim();
        if let Ok(id) = text.parse::<i64>() {
            return Ok(Self::Id(id));
        }
        let postgres = text.starts_with("postgresql://")
            || text.starts_with("postgres://")
            || text.contains("host=")
            || text.contains("dbname=");
        if postgres {
            let Some((url, host)) = text.rsplit_once('#').filter(|(_, h)| !h.is_empty()) else {
                return Err(measure::Classified::usage(format!(
                    "--baseline {text:?}: name the host whose newest report to compare with, as \
                     postgresql://…#HOST"
                )));
            };
            return Ok(Self::Host { url: url.to_string(), host: host.to_string() });
        }
        match text.rsplit_once('#') {
            Some((path, id)) => {
                let id = id.parse::<i64>().map_err(|_| {
                    measure::Classified::usage(format!(
                        "--baseline {text:?}: after # comes a run id (FILE.db#ID)"
                    ))
                })?;
                Ok(Self::File { path: path.into(), id: Some(id) })
            }
            None => Ok(Self::File { path: text.into(), id: None }),
        }
    }
}

/// The newest `report` run of a store (of `host`, when given).
fn newest_report(store: &dyn ResultStore, host: Option<&str>) -> Result<Option<i64>, SuiteError> {
    let command = crate::characterise::REPORT_COMMAND;
    if let Some(host) = host {
        return Ok(store.latest_of_host(host, command)?);
    }
    Ok(store.list(usize::MAX)?.into_iter().find(|r| r.command == command).map(|r| r.id))
}

/// How many other reports of each host a comparison calibrates its noise on.
const HISTORY_PER_HOST: usize = 8;

/// Reads the baseline `reference` names; `local` is this run's store (for a bare run id). With
/// it comes the history its minimum effects are calibrated on: other reports of this host and
/// of the baseline's, in `local` and in the baseline's own store, `this` and the baseline left
/// out.
pub fn read_baseline(
    reference: &BaselineRef,
    local: &dyn ResultStore,
    this: &StoredReport,
) -> Result<(StoredReport, String, Vec<StoredReport>), measure::Classified> {
    let (base, name, remote) =
        resolve(reference, Some(local)).map_err(|e| e.context("--baseline"))?;
    let skip = [this.run.uuid.as_str(), base.run.uuid.as_str()];
    let hosts = [this.run.host.as_str(), base.run.host.as_str()];
    let mut earlier = history(local, &hosts, &skip, HISTORY_PER_HOST)?;
    if let Some(store) = &remote {
        for report in history(store.as_ref(), &[base.run.host.as_str()], &skip, HISTORY_PER_HOST)? {
            if !earlier.iter().any(|r| !r.run.uuid.is_empty() && r.run.uuid == report.run.uuid) {
                earlier.push(report);
            }
        }
    }
    Ok((base, name, earlier))
}

/// A baseline report, its description, and its own store when that is not this machine's.
type Resolved = (StoredReport, String, Option<Box<dyn ResultStore>>);

/// The baseline `reference` names; `local` is this machine's store, needed only for a bare run
/// id.
fn resolve(
    reference: &BaselineRef,
    local: Option<&dyn ResultStore>,
) -> Result<Resolved, measure::Classified> {
    let describe = |r: &StoredReport, location: &str| {
        format!(
            "run {} of {} ({}, {})",
            r.run.id,
            if r.run.host.is_empty() { "this host" } else { r.run.host.as_str() },
            r.run.recorded_at,
            location
        )
    };
    let none = |location: &str| {
        measure::Classified::usage(format!(
            "no report run in {location} (run `platscope report` there first)"
        ))
    };
    Ok(match reference {
        BaselineRef::Id(id) => {
            let local = local.ok_or_else(|| {
                measure::Classified::usage(format!(
                    "{id} names a run in this machine's results database, and there is none yet \
                     (give --db PATH, or FILE#ID)"
                ))
            })?;
            let r = StoredReport::read(local, *id)?;
            let name = describe(&r, &local.location());
            (r, name, None)
        }
        BaselineRef::File { path, id } => {
            if !path.exists() {
                return Err(measure::Classified::usage(format!(
                    "no results database at {}",
                    path.display()
                )));
            }
            let store = results::SqliteStore::open_read_only(path)?;
            let id = match id {
                Some(id) => *id,
                None => newest_report(&store, None)?.ok_or_else(|| none(&store.location()))?,
            };
            let r = StoredReport::read(&store, id)?;
            let name = describe(&r, &store.location());
            (r, name, Some(Box::new(store)))
        }
        BaselineRef::Host { url, host } => {
            let store = results::PgStore::connect(url)?;
            let id = newest_report(&store, Some(host))?
                .ok_or_else(|| none(&format!("{} for host {host}", store.location())))?;
            let r = StoredReport::read(&store, id)?;
            let name = describe(&r, &store.location());
            (r, name, Some(Box::new(store)))
        }
    })
}

/// Whether the baseline `reference` names can be read, before a report spends minutes measuring
/// what it would be compared with. `local` is this machine's store, if it has one yet.
pub fn check_baseline(
    reference: &BaselineRef,
    local: Option<&dyn ResultStore>,
) -> Result<(), measure::Classified> {
    resolve(reference, local).map(drop).map_err(|e| e.context("--baseline"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(name: &str, size: &str, median: f64) -> Figure {
        let metric = StoredMetric::single("mem_latency", "ns", &[("size", size)], median);
        let values = [0.99, 1.0, 1.01].iter().enumerate().map(|(i, f)| (i, f * median)).collect();
        Figure { name: name.into(), metric, placement: Vec::new(), values, level: Level::Rounds }
    }

    fn placed(round_trip_ns: f64) -> Vec<RunPlacement> {
        use measure::placement::{PairProbe, Probe};
        let probe = Probe { pairs: vec![PairProbe::new(0, 1, "same L3", true, round_trip_ns)] };
        vec![RunPlacement::probed(vec![0, 1], Some(probe.clone()), Some(probe))]
    }

    #[test]
    fn another_placement_is_refused_and_not_calibrated_on() {
        let bandwidth = |median: f64, threads: &str, ns: f64| Figure {
            name: format!("bandwidth, {threads} thread(s)"),
            metric: StoredMetric::single("mem_bandwidth", "GB/s", &[("threads", threads)], median),
            placement: placed(ns),
            values: vec![(0, median), (1, median * 1.01), (2, median * 0.99)],
            level: Level::Rounds,
        };
        // Two threads near (82 ns) and far (380 ns): refused, with the probes.
        let why = bandwidth(114.0, "2", 82.0).placement_differs(&bandwidth(56.0, "2", 380.0));
        assert_eq!(
            why.as_deref(),
            Some("CPUs 0↔1 handed a cache line over in 82 ns here, 380 ns in the baseline")
        );
        // The same placement (within 2×): compared as always.
        assert!(bandwidth(114.0, "2", 82.0)
            .placement_differs(&bandwidth(110.0, "2", 95.0))
            .is_none());
        // One thread does not depend on where the other CPU sits.
        assert!(bandwidth(57.0, "1", 82.0)
            .placement_differs(&bandwidth(56.0, "1", 380.0))
            .is_none());
        // A side without probes (a report stored before them): compared as always.
        let unprobed = Figure { placement: Vec::new(), ..bandwidth(56.0, "2", 0.0) };
        assert!(bandwidth(114.0, "2", 82.0).placement_differs(&unprobed).is_none());
        // Rounds in two placements (the vCPUs moved after round 1): no verdict against a
        // baseline whose rounds were all near, though round 1 alone agrees with it.
        let mut moved = bandwidth(100.0, "2", 82.0);
        moved.placement.extend(placed(395.0));
        let why = moved.placement_differs(&bandwidth(110.0, "2", 85.0));
        assert_eq!(
            why.as_deref(),
            Some("CPUs 0↔1 handed a cache line over in 82–395 ns here, 85 ns in the baseline")
        );
        // History: reports of one host in another placement than its newest are not its noise.
        let far = || bandwidth(56.0, "2", 380.0);
        let by_host: HashMap<&str, Vec<Vec<Figure>>> = HashMap::from([(
            "a",
            vec![vec![bandwidth(114.0, "2", 82.0)], vec![far()], vec![far()], vec![far()]],
        )]);
        assert!(Noise::from_figures(&by_host).measured.is_empty());
    }

    #[test]
    fn noise_is_measured_on_three_earlier_reports_of_one_host() {
        let mut by_host: HashMap<&str, Vec<Vec<Figure>>> = HashMap::new();
        // Host a: four reports, DRAM latency around 100, 110, 95 and 104 ns.
        by_host.insert(
            "a",
            [100.0, 110.0, 95.0, 104.0]
                .iter()
                .map(|&v| vec![figure("DRAM", "256MiB", v)])
                .collect(),
        );
        // Host b: two reports only — too few to measure anything on.
        by_host.insert(
            "b",
            vec![vec![figure("DRAM", "256MiB", 300.0)], vec![figure("DRAM", "256MiB", 310.0)]],
        );
        let noise = Noise::from_figures(&by_host);
        assert_eq!(noise.reports, 4, "only host a's reports measure");
        let measured = noise.measured[&("a".to_string(), "DRAM".to_string())];
        assert_eq!(measured.runs, 4);
        // The sd of ln(100, 110, 95, 104) is about 0.063; the rounds explain little of it.
        assert!(measured.sigma > 0.05 && measured.sigma < 0.07, "{measured:?}");
        // Comparing a with a: measured; a with b: b's side assumed, so the whole is assumed.
        let f = figure("DRAM", "256MiB", 100.0);
        assert_eq!(noise.for_figure(&f, "a", "a"), measured);
        let mixed = noise.for_figure(&f, "a", "b");
        assert_eq!(mixed.runs, 0);
        assert!(mixed.sigma > measured.sigma && mixed.sigma < ASSUMED_RUN_NOISE);
        assert_eq!(noise.for_figure(&f, "b", "b"), RunNoise::assumed(ASSUMED_RUN_NOISE));
    }

    #[test]
    fn noise_compares_a_figure_only_with_the_same_metric() {
        // The same page name over different sizes (another sweep's end) is not noise.
        let mut runs = vec![vec![figure("DRAM", "256MiB", 100.0)]];
        runs.extend((0..3).map(|_| vec![figure("DRAM", "1GiB", 200.0)]));
        let by_host: HashMap<&str, Vec<Vec<Figure>>> = HashMap::from([("a", runs)]);
        assert!(Noise::from_figures(&by_host).measured.is_empty());
    }

    #[test]
    fn clock_bound_figures_and_the_clock_note() {
        assert_eq!(clock_bound("L1 latency", "mem_latency"), Some(ClockBound::Time));
        assert_eq!(clock_bound("Idle DRAM latency", "mem_latency"), None);
        assert_eq!(clock_bound("x", "compress_throughput"), Some(ClockBound::Rate));
        // L1 1.307 → 1.488 ns at 3.06 → 2.69 GHz: 4.0 cycles both times.
        let l1 = |ns: f64| Figure {
            name: "L1 latency".into(),
            metric: StoredMetric::single("mem_latency", "ns", &[], ns),
            placement: Vec::new(),
            values: (0..3).map(|i| (i, ns * (1.0 + 0.002 * i as f64))).collect(),
            level: Level::Rounds,
        };
        let cycles = l1(1.488).in_cycles(&[Some(2.69); 3]).unwrap_or_default();
        assert!(cycles.iter().all(|c| (c - 4.0).abs() < 0.05), "{cycles:?}");
        assert!(l1(1.3).in_cycles(&[Some(3.0), None, Some(3.0)]).is_none());
        let note = clock_note(Verdict::Slower, Verdict::Same, 2.69, 3.06, true);
        assert_eq!(note.as_deref(), Some("core clock −12%: the host's frequency, not this figure"));
        assert_eq!(clock_note(Verdict::Same, Verdict::Same, 2.69, 3.06, true), None);
        let other = clock_note(Verdict::Slower, Verdict::Same, 2.69, 3.06, false);
        assert_eq!(other.as_deref(), Some("core clock −12%: in cycles same"));
    }

    #[test]
    fn a_figure_whose_run_picked_another_isa_is_compared_and_its_noise_counts() {
        let bandwidth = |isa: &str, median: f64| Figure {
            name: "Bandwidth (read), 1 thread(s)".into(),
            metric: StoredMetric::single(
                "mem_bandwidth",
                "GB/s",
                &[("isa", isa), ("kernel", "read"), ("threads", "1")],
                median,
            ),
            placement: Vec::new(),
            values: vec![(0, median), (1, median)],
            level: Level::Rounds,
        };
        let (a, b) = (bandwidth("avx512", 10.0), bandwidth("avx2", 12.0));
        assert!(a.same_quantity(&b) && a.same_apart_from_method(&b));
        assert_eq!(
            labels_differ(&a.metric, &b.metric).as_deref(),
            Some("isa avx512, baseline avx2")
        );
        assert_eq!(labels_differ(&a.metric, &a.metric), None);
        let by_host: HashMap<&str, Vec<Vec<Figure>>> =
            HashMap::from([("a", vec![vec![a], vec![b], vec![bandwidth("avx2", 11.0)]])]);
        let noise = Noise::from_figures(&by_host);
        assert!(noise.measured.contains_key(&("a".into(), "Bandwidth (read), 1 thread(s)".into())));
        // A size is not a method: another size stays out of the noise (above).
        let (small, large) = (figure("DRAM", "256MiB", 1.0), figure("DRAM", "1GiB", 1.0));
        assert!(small.same_quantity(&large) && !small.same_apart_from_method(&large));
    }

    #[test]
    fn baseline_references_parse() {
        assert_eq!(BaselineRef::parse("12").ok(), Some(BaselineRef::Id(12)));
        assert_eq!(
            BaselineRef::parse("/tmp/a.db").ok(),
            Some(BaselineRef::File { path: "/tmp/a.db".into(), id: None })
        );
        assert_eq!(
            BaselineRef::parse("b.db#7").ok(),
            Some(BaselineRef::File { path: "b.db".into(), id: Some(7) })
        );
        assert_eq!(
            BaselineRef::parse("postgresql://u@pg/fleet#db2").ok(),
            Some(BaselineRef::Host { url: "postgresql://u@pg/fleet".into(), host: "db2".into() })
        );
        assert!(BaselineRef::parse("postgresql://u@pg/fleet").is_err_and(|e| e.is_usage()));
        assert!(BaselineRef::parse("b.db#x").is_err_and(|e| e.is_usage()));
    }
}
