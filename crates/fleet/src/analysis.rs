//! The whole analysis of a fleet's reports, and its JSON (the contract scripts and tests read;
//! docs/fleet.md).

use std::collections::BTreeMap;

use results::fleet::ReportFigures;
use serde::{Deserialize, Serialize};

use crate::changes::{self, ConfigTransition, FoundChange};
use crate::edivisive::{EDivisive, Split};
use crate::facts::FactChange;
use crate::noise::NoiseTable;
use crate::outliers::{self, FoundOutlier, Untested, MIN_HOSTS};
use crate::series::Fleet;
use crate::window::Window;

/// What `platscope fleet --json` prints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetReport {
    /// How many hosts have reports in the window.
    pub hosts: usize,
    pub classes: Vec<ClassEntry>,
    /// Worst first (the largest departure from the class).
    pub outliers: Vec<Outlier>,
    /// Newest first.
    pub changes: Vec<Change>,
    /// Newest first.
    pub config_changes_without_shift: Vec<ConfigChange>,
}

impl FleetReport {
    /// The outliers and changes as `--publish` stores them for dashboards.
    pub fn findings(&self, analysed_at: String, window: String) -> results::Findings {
        results::Findings {
            analysed_at,
            window,
            outliers: self
                .outliers
                .iter()
                .map(|o| results::PublishedOutlier {
                    host: o.host.clone(),
                    class: o.class.clone(),
                    figure: o.figure.clone(),
                    unit: o.unit.clone(),
                    value: o.value,
                    class_median: o.class_median,
                    ratio: o.ratio,
                    min_effect: o.min_effect,
                    verdict: o.verdict.word().to_string(),
                })
                .collect(),
            changes: self
                .changes
                .iter()
                .map(|c| results::PublishedChange {
                    host: c.host.clone(),
                    figure: c.figure.clone(),
                    unit: c.unit.clone(),
                    at: c.at.clone(),
                    before: c.before,
                    after: c.after,
                    ratio: c.ratio,
                    p_value: c.p_value,
                    config: crate::facts::describe(&c.config),
                    verdict: c.verdict.word().to_string(),
                })
                .collect(),
        }
    }
}

/// A hardware class and its hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassEntry {
    /// Its name: the class facts in words.
    pub class: String,
    /// The facts that define it (memory as installed).
    pub facts: BTreeMap<String, String>,
    pub hosts: Vec<String>,
}

/// Which way a host or a change went, by the figure's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Slower,
    Faster,
}

impl Direction {
    pub fn word(self) -> &'static str {
        match self {
            Direction::Slower => "slower",
            Direction::Faster => "faster",
        }
    }
}

/// A host off its class on one figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    pub host: String,
    pub class: String,
    pub figure: String,
    pub unit: String,
    /// The median of the host's latest runs (at most five, none before its last change).
    pub value: f64,
    pub class_median: f64,
    /// `value / class_median`.
    pub ratio: f64,
    /// The figure's run-to-run noise in the class: the smallest relative difference tested.
    pub min_effect: f64,
    /// The rank test's p-value: the host's recent runs against the other hosts' of its class.
    #[serde(default)]
    pub p_value: f64,
    /// The interval (95%) of the host's recent runs over the other hosts' (geometric means,
    /// [`measure::verdict`]); absent when the runs give none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_low: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_high: Option<f64>,
    /// What the test and the interval rest on: "5 vs 35 runs".
    #[serde(default)]
    pub rests_on: String,
    /// Slower or faster than the class.
    pub verdict: Direction,
}

/// A change point of one host's figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub host: String,
    pub figure: String,
    pub unit: String,
    /// `recorded_at` of the first run after the change.
    pub at: String,
    /// Medians of the runs before and after (to the neighbouring changes).
    pub before: f64,
    pub after: f64,
    /// `after / before`.
    pub ratio: f64,
    /// The permutation test's p-value.
    pub p_value: f64,
    /// The facts that differ between the runs on either side (and platscope's version).
    pub config: Vec<FactChange>,
    pub verdict: Direction,
}

/// A host's facts changing with no change of any figure around it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigChange {
    pub host: String,
    /// `recorded_at` of the first run with the new facts.
    pub at: String,
    pub config: Vec<FactChange>,
}

/// How the analysis runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub window: Window,
    pub method: EDivisive,
    /// Threads for the change points (each series is independent).
    pub threads: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            window: Window::default(),
            method: EDivisive::default(),
            threads: std::thread::available_parallelism().map_or(1, usize::from),
        }
    }
}

/// The analysis with what the page and the summary draw beyond the JSON.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub report: FleetReport,
    pub fleet: Fleet,
    /// The splits of each series of `fleet`.
    pub splits: Vec<Vec<Split>>,
    pub found_changes: Vec<FoundChange>,
    pub found_outliers: Vec<FoundOutlier>,
    pub transitions: Vec<ConfigTransition>,
    /// Each series' current value (what outliers are judged on).
    pub current: Vec<f64>,
    /// Sentences for the reader: what was left out or could not be tested, and why.
    pub notes: Vec<String>,
}

fn round4(v: f64) -> f64 {
    (v * 1e4).round() / 1e4
}

/// Analyses `reports` (any order; those outside `options.window` are left out).
pub fn analyse(reports: &[ReportFigures], options: &Options) -> Analysis {
    analyse_built(Fleet::from_reports(reports, &options.window), options)
}

/// Analyses a fleet already built (from a store read report by report, [`crate::series::FleetBuilder`]).
pub fn analyse_built(fleet: Fleet, options: &Options) -> Analysis {
    let splits = changes::all_splits(&fleet, &options.method, options.threads);
    let noise = NoiseTable::calibrate(&fleet, &splits);
    let found_changes = changes::changes(&fleet, &splits, &noise);
    let transitions = changes::transitions(&fleet);
    let current = outliers::current_values(&fleet, &splits);
    let (found_outliers, untested) = outliers::outliers(&fleet, &splits, &current, &noise);

    let class_names: Vec<String> = fleet.classes.iter().map(|c| c.name()).collect();
    let classes = fleet
        .classes
        .iter()
        .enumerate()
        .map(|(i, key)| ClassEntry {
            class: class_names[i].clone(),
            facts: key.facts.clone(),
            hosts: fleet.hosts_of(i).map(|(_, h)| h.name.clone()).collect(),
        })
        .collect();
    let direction = |figure: usize, from: f64, to: f64| {
        if fleet.figures[figure].worse(from, to) {
            Direction::Slower
        } else {
            Direction::Faster
        }
    };
    let mut outliers: Vec<Outlier> = found_outliers
        .iter()
        .map(|o| {
            let figure = &fleet.figures[o.figure];
            let host = &fleet.hosts[o.host];
            Outlier {
                host: host.name.clone(),
                class: class_names[host.class].clone(),
                figure: figure.name.clone(),
                unit: figure.unit.clone(),
                value: o.value,
                class_median: o.class_median,
                ratio: round4(o.value / o.class_median),
                min_effect: round4(o.min_effect),
                p_value: o.p_value,
                ratio_low: Some(round4(o.ratio_low)).filter(|r| r.is_finite()),
                ratio_high: Some(round4(o.ratio_high)).filter(|r| r.is_finite()),
                rests_on: o.rests_on.clone(),
                verdict: direction(o.figure, o.class_median, o.value),
            }
        })
        .collect();
    outliers.sort_by(|a, b| {
        let off = |o: &Outlier| o.ratio.ln().abs();
        off(b).total_cmp(&off(a)).then_with(|| a.host.cmp(&b.host))
    });
    let mut changes: Vec<(jiff::Timestamp, Change)> = found_changes
        .iter()
        .map(|c| {
            let s = &fleet.series[c.series];
            let host = &fleet.hosts[s.host];
            let figure = &fleet.figures[s.figure];
            let run = &host.runs[c.run];
            (
                run.at,
                Change {
                    host: host.name.clone(),
                    figure: figure.name.clone(),
                    unit: figure.unit.clone(),
                    at: run.recorded_at.clone(),
                    before: c.before,
                    after: c.after,
                    ratio: round4(c.after / c.before),
                    p_value: c.p_value,
                    config: c.config.clone(),
                    verdict: direction(s.figure, c.before, c.after),
                },
            )
        })
        .collect();
    changes.sort_by(|a, b| {
        b.0.cmp(&a.0).then_with(|| (&a.1.host, &a.1.figure).cmp(&(&b.1.host, &b.1.figure)))
    });
    let mut quiet: Vec<(jiff::Timestamp, ConfigChange)> =
        changes::without_shift(&fleet, &transitions, &found_changes)
            .into_iter()
            .map(|t| {
                let host = &fleet.hosts[t.host];
                let run = &host.runs[t.run];
                (
                    run.at,
                    ConfigChange {
                        host: host.name.clone(),
                        at: run.recorded_at.clone(),
                        config: t.config.clone(),
                    },
                )
            })
            .collect();
    quiet.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.host.cmp(&b.1.host)));

    let notes = notes(&fleet, &untested, &class_names, &options.method);
    let report = FleetReport {
        hosts: fleet.hosts.len(),
        classes,
        outliers,
        changes: changes.into_iter().map(|(_, c)| c).collect(),
        config_changes_without_shift: quiet.into_iter().map(|(_, c)| c).collect(),
    };
    Analysis { report, fleet, splits, found_changes, found_outliers, transitions, current, notes }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// What the reader should know about what was not analysed.
fn notes(
    fleet: &Fleet,
    untested: &Untested,
    class_names: &[String],
    method: &EDivisive,
) -> Vec<String> {
    let mut notes = Vec::new();
    let left = &fleet.left_out;
    if left.duplicates > 0 {
        notes.push(format!(
            "{} seen twice (the same run in two pushes) counted once",
            plural(left.duplicates, "report", "reports")
        ));
    }
    if left.unreadable_time > 0 {
        notes.push(format!(
            "{} left out: their recorded time does not read as a date",
            plural(left.unreadable_time, "report", "reports")
        ));
    }
    if left.unusable_values > 0 {
        notes.push(format!(
            "{} left out: not a finite positive number",
            plural(left.unusable_values, "figure value", "figure values")
        ));
    }
    let short: Vec<&str> = fleet
        .hosts
        .iter()
        .filter(|h| h.runs.len() < 2 * method.min_segment)
        .map(|h| h.name.as_str())
        .collect();
    if !short.is_empty() {
        notes.push(format!(
            "{} fewer than {} reports, too few for a change to be called: {}",
            plural(short.len(), "host has", "hosts have"),
            2 * method.min_segment,
            abbreviate(&short)
        ));
    }
    let no_figures: Vec<&str> = fleet
        .hosts
        .iter()
        .enumerate()
        .filter(|(i, _)| !fleet.series.iter().any(|s| s.host == *i))
        .map(|(_, h)| h.name.as_str())
        .collect();
    if !no_figures.is_empty() {
        notes.push(format!(
            "{} no headline figures (reports from an older platscope, or reports that measured \
             nothing): {}",
            plural(no_figures.len(), "host has", "hosts have"),
            abbreviate(&no_figures)
        ));
    }
    let mut small: Vec<usize> = untested.small_classes.iter().map(|(c, _)| *c).collect();
    small.dedup();
    for class in small {
        notes.push(format!(
            "no outliers tested in class {}: fewer than {MIN_HOSTS} hosts with the figure",
            class_names[class]
        ));
    }
    let mut uncalibrated: Vec<usize> = untested.uncalibrated.iter().map(|(_, f)| *f).collect();
    uncalibrated.sort_unstable();
    uncalibrated.dedup();
    if !uncalibrated.is_empty() {
        let names: Vec<String> =
            uncalibrated.iter().map(|&f| fleet.figures[f].name.clone()).collect();
        notes.push(format!(
            "no outliers tested for {}: too few consecutive runs of one host to calibrate the \
             run-to-run noise",
            names.join(", ")
        ));
    }
    notes
}

/// At most eight names, then how many more.
fn abbreviate(names: &[&str]) -> String {
    if names.len() <= 8 {
        return names.join(", ");
    }
    format!("{}, and {} more", names[..8].join(", "), names.len() - 8)
}
