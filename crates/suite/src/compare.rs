//! Two reports side by side (`report --baseline REF`): every headline figure of this report
//! against the same figure of the baseline, with the ratio and a verdict tested on the stored
//! samples ([`measure::verdict`]), and the machine settings that differ.
//!
//! A figure is found in both reports by the step that measured it (its label in the report's
//! stored runs, or the section its step drew) and the metric's key (name and labels), never by
//! its printed text. Every chart is shown for both machines: the baseline's sections, drawn
//! from its stored steps, sit beside this machine's of the same id.
//!
//! The minimum effect of each figure is calibrated when the stores hold earlier reports of the
//! same host: the largest difference of that figure between two of them (never less than
//! [`MIN_EFFECT`]); without such history it is [`MIN_EFFECT`] (docs/comparing.md).
//!
//! A figure that depends on where the CPUs sit, taken in different placements by the two
//! reports (their steps' probes disagree: [`measure::placement::differs`]), gets no verdict:
//! `placement differs`, with how the probes differ. Nor does such a pair of earlier reports
//! count as noise when the minimum effect is calibrated.

use std::collections::HashMap;

use chart::Part;
use experiment::Registry;
use measure::placement::{depends_on_placement, differs, RunPlacement};
use measure::verdict::{judge, ratio_of_medians, Verdict, MIN_EFFECT};
pub use report::compare::{FigureComparison, ReportComparison, SettingDiff};
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
        let mut steps = Vec::new();
        for (label, step_id) in &data.stored_runs {
            steps.push((label.clone(), store.run(*step_id)?));
        }
        Ok(Self { run, data, steps })
    }
}

/// A headline figure of a stored report with the stored metric (samples) behind it.
struct Figure {
    name: String,
    metric: StoredMetric,
    /// The placement its step was measured in, when it was probed.
    placement: Option<RunPlacement>,
}

impl Figure {
    /// How this figure's placement and `baseline`'s differ, when the figure depends on
    /// placement and both were probed.
    fn placement_differs(&self, baseline: &Figure) -> Option<String> {
        if !depends_on_placement(&self.metric.labels) {
            return None;
        }
        differs(self.placement.as_ref()?, baseline.placement.as_ref()?)
    }

    /// Whether `other` measures the same quantity: the same metric in the same unit, whatever
    /// labels each run's own choices gave it.
    fn same_quantity(&self, other: &Figure) -> bool {
        self.metric.name == other.metric.name && self.metric.unit == other.metric.unit
    }

    /// Whether `other`'s labels are this figure's but for the ones a run picks for itself
    /// ([`METHOD_LABELS`]): a host's reports that differ only there are its noise; another
    /// size is another figure.
    fn same_apart_from_method(&self, other: &Figure) -> bool {
        let kept = |f: &Figure| -> Vec<(String, String)> {
            f.metric
                .labels
                .iter()
                .filter(|(name, _)| !METHOD_LABELS.contains(&name.as_str()))
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect()
        };
        kept(self) == kept(other)
    }
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

/// Each of `report`'s steps with the sections it draws (none for a step whose stored result no
/// longer reads).
fn drawn<'r>(report: &'r StoredReport, registry: &Registry) -> Vec<(&'r StoredRun, Vec<Part>)> {
    report
        .steps
        .iter()
        .filter_map(|(_, run)| Some((run, crate::from_db::step_parts(run, registry).ok()?)))
        .collect()
}

/// Every figure of `report` that names its stored metric — the headline figures of the
/// sections its steps draw (`drawn`), then the further figures they offer for comparison
/// (each thread count, each kernel) — as the page names them; a name counts once.
fn figures(drawn: &[(&StoredRun, Vec<Part>)]) -> Vec<Figure> {
    let mut out: Vec<Figure> = Vec::new();
    let headlines = drawn.iter().flat_map(|(run, parts)| {
        parts.iter().flat_map(move |p| p.headlines.iter().map(move |h| (*run, h)))
    });
    let compared = drawn.iter().flat_map(|(run, parts)| {
        parts.iter().flat_map(move |p| p.compared.iter().map(move |h| (*run, h)))
    });
    for (run, headline) in headlines.chain(compared) {
        let Some(key) = &headline.metric else { continue };
        if out.iter().any(|f| f.name == headline.name) {
            continue;
        }
        if let Some(m) = run.metrics.iter().find(|m| &m.key() == key) {
            let placement = crate::placement::of_run(run);
            out.push(Figure { name: headline.name.clone(), metric: m.clone(), placement });
        }
    }
    out
}

/// Run-to-run noise of each figure: the largest relative difference of its median between two
/// earlier reports of the same host (`history`), with how many reports it rests on.
#[derive(Debug, Default)]
struct Noise {
    largest: HashMap<String, f64>,
    reports: usize,
}

impl Noise {
    fn from_history(history: &[StoredReport], registry: &Registry) -> Self {
        let mut by_host: HashMap<&str, Vec<Vec<Figure>>> = HashMap::new();
        for report in history {
            let figures = figures(&drawn(report, registry));
            by_host.entry(report.run.host.as_str()).or_default().push(figures);
        }
        Self::from_figures(&by_host)
    }

    /// The noise of each figure from the figures of each host's reports.
    fn from_figures(by_host: &HashMap<&str, Vec<Vec<Figure>>>) -> Self {
        let mut noise = Noise::default();
        for runs in by_host.values().filter(|runs| runs.len() >= 2) {
            noise.reports += runs.len();
            for (i, a) in runs.iter().enumerate() {
                for b in &runs[i + 1..] {
                    for fa in a {
                        let Some(fb) = b.iter().find(|f| f.name == fa.name) else { continue };
                        // Another placement is not noise: it is refused, not calibrated on.
                        if !fa.same_quantity(fb)
                            || !fa.same_apart_from_method(fb)
                            || fa.placement_differs(fb).is_some()
                        {
                            continue;
                        }
                        let ratio = ratio_of_medians(&fa.metric.samples, &fb.metric.samples);
                        if !ratio.is_finite() || ratio <= 0.0 {
                            continue;
                        }
                        let difference = ratio.max(1.0 / ratio) - 1.0;
                        let largest = noise.largest.entry(fa.name.clone()).or_insert(0.0);
                        *largest = largest.max(difference);
                    }
                }
            }
        }
        noise
    }

    /// The minimum effect for `figure`: its calibrated noise, never below [`MIN_EFFECT`].
    fn min_effect(&self, figure: &str) -> f64 {
        self.largest.get(figure).map_or(MIN_EFFECT, |&n| n.max(MIN_EFFECT))
    }
}

/// Compares `this` report with `baseline`, headline figure by headline figure, each against a
/// minimum effect calibrated on `history` (earlier reports of either host, the two compared
/// left out), and puts the baseline's sections beside this machine's.
pub fn compare(
    this: &StoredReport,
    baseline: &StoredReport,
    baseline_name: String,
    history: &[StoredReport],
    registry: &Registry,
) -> ReportComparison {
    let noise = Noise::from_history(history, registry);
    let their_steps = drawn(baseline, registry);
    let theirs = figures(&their_steps);
    let mut comparison = Vec::new();
    for mine in figures(&drawn(this, registry)) {
        // The same figure by name and quantity; its labels may differ where the report picks
        // its method per run (the faster ISA, the delay that gave the most load): compared all
        // the same, and the difference said.
        let Some(base) = theirs.iter().find(|f| f.name == mine.name && f.same_quantity(&mine))
        else {
            continue;
        };
        let placement = mine.placement_differs(base);
        let (a, b) = (&mine.metric, &base.metric);
        let lower = measure::Unit::from_symbol(&a.unit).is_some_and(measure::Unit::lower_is_better);
        let min_effect = noise.min_effect(&mine.name);
        let mut judged = judge(&a.samples, &b.samples, lower, min_effect);
        if placement.is_some() {
            judged.verdict = Verdict::PlacementDiffers;
        }
        comparison.push(FigureComparison {
            figure: mine.name,
            unit: a.unit.clone(),
            this: a.median,
            baseline: b.median,
            ratio: judged.ratio,
            verdict: judged.verdict,
            p_value: judged.p_value,
            this_samples: judged.this_samples,
            baseline_samples: judged.baseline_samples,
            min_effect,
            placement,
            measured_as: labels_differ(&mine.metric, &base.metric),
        });
    }
    let this_machine = topo::machine_facts(&this.data.topology);
    let baseline_machine = topo::machine_facts(&baseline.data.topology);
    let config_diff = topo::config_diff(&this_machine, &baseline_machine)
        .into_iter()
        .map(|d| SettingDiff { setting: d.setting, this: d.this, baseline: d.baseline })
        .collect();
    // The baseline's page as it drew itself: its memory data and its steps' sections.
    let mut page = baseline.data.clone();
    page.parts.extend(their_steps.into_iter().flat_map(|(_, parts)| parts));
    ReportComparison {
        baseline: baseline_name,
        comparison,
        config_diff,
        baseline_machine,
        baseline_sections: report::html::baseline_sections(&page),
        calibrated_from: noise.reports,
    }
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

/// How many earlier reports of each host a comparison calibrates its noise on.
const HISTORY_PER_HOST: usize = 8;

/// Reads the baseline `reference` names; `local` is this run's store (for a bare run id). With
/// it comes the history its minimum effects are calibrated on: earlier reports of this host and
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
        Figure { name: name.into(), metric, placement: None }
    }

    fn placed(round_trip_ns: f64) -> Option<RunPlacement> {
        use measure::placement::{PairProbe, Probe};
        let probe = Probe { pairs: vec![PairProbe::new(0, 1, "same L3", true, round_trip_ns)] };
        Some(RunPlacement::probed(vec![0, 1], Some(probe.clone()), Some(probe)))
    }

    #[test]
    fn another_placement_is_refused_and_not_calibrated_on() {
        let bandwidth = |median: f64, threads: &str, ns: f64| Figure {
            name: format!("bandwidth, {threads} thread(s)"),
            metric: StoredMetric::single("mem_bandwidth", "GB/s", &[("threads", threads)], median),
            placement: placed(ns),
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
        let unprobed = Figure { placement: None, ..bandwidth(56.0, "2", 0.0) };
        assert!(bandwidth(114.0, "2", 82.0).placement_differs(&unprobed).is_none());
        // History: two reports of one host in two placements are not its noise.
        let by_host: HashMap<&str, Vec<Vec<Figure>>> = HashMap::from([(
            "a",
            vec![vec![bandwidth(114.0, "2", 82.0)], vec![bandwidth(56.0, "2", 380.0)]],
        )]);
        assert_eq!(Noise::from_figures(&by_host).min_effect("bandwidth, 2 thread(s)"), MIN_EFFECT);
    }

    #[test]
    fn noise_is_the_largest_difference_between_reports_of_one_host() {
        let mut by_host: HashMap<&str, Vec<Vec<Figure>>> = HashMap::new();
        // Host a: three reports, DRAM latency 100, 110 and 95 ns: largest pair 110/95.
        by_host.insert(
            "a",
            [100.0, 110.0, 95.0].iter().map(|&v| vec![figure("DRAM", "256MiB", v)]).collect(),
        );
        // Host b: one report only — no pair, no calibration from it.
        by_host.insert("b", vec![vec![figure("DRAM", "256MiB", 300.0)]]);
        let noise = Noise::from_figures(&by_host);
        assert_eq!(noise.reports, 3, "only host a's reports calibrate");
        let expected = 110.0 / 95.0 - 1.0;
        assert!((noise.min_effect("DRAM") - expected).abs() < 1e-12);
        // A figure never seen in history keeps the default; a quieter one is floored at it.
        assert_eq!(noise.min_effect("L1"), MIN_EFFECT);
        let quiet: HashMap<&str, Vec<Vec<Figure>>> = HashMap::from([(
            "a",
            vec![vec![figure("L1", "16KiB", 1.30)], vec![figure("L1", "16KiB", 1.31)]],
        )]);
        assert_eq!(Noise::from_figures(&quiet).min_effect("L1"), MIN_EFFECT);
    }

    #[test]
    fn noise_compares_a_figure_only_with_the_same_metric() {
        // The same page name over different sizes (another sweep's end) is not noise.
        let by_host: HashMap<&str, Vec<Vec<Figure>>> = HashMap::from([(
            "a",
            vec![vec![figure("DRAM", "256MiB", 100.0)], vec![figure("DRAM", "1GiB", 200.0)]],
        )]);
        assert_eq!(Noise::from_figures(&by_host).min_effect("DRAM"), MIN_EFFECT);
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
            placement: None,
        };
        let (a, b) = (bandwidth("avx512", 10.0), bandwidth("avx2", 12.0));
        assert!(a.same_quantity(&b) && a.same_apart_from_method(&b));
        assert_eq!(
            labels_differ(&a.metric, &b.metric).as_deref(),
            Some("isa avx512, baseline avx2")
        );
        assert_eq!(labels_differ(&a.metric, &a.metric), None);
        let by_host: HashMap<&str, Vec<Vec<Figure>>> =
            HashMap::from([("a", vec![vec![a], vec![b]])]);
        let noise = Noise::from_figures(&by_host);
        assert!((noise.min_effect("Bandwidth (read), 1 thread(s)") - 0.2).abs() < 1e-12);
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
