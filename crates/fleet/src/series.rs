//! The reports as the analysis sees them: hosts, each with its runs in time order and its
//! hardware class, the figures the reports hold, and one series per host and figure.
//!
//! A figure is its name and unit as the report's summary shows it (`Idle DRAM latency`, `ns`):
//! the same figure on every host of a class. Values that cannot be compared as ratios (not
//! finite, zero or negative) stay out of the series and are counted.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use chart::Area;
use jiff::Timestamp;
use results::fleet::ReportFigures;

use crate::facts::ClassKey;
use crate::window::{parse_recorded, Window};

/// One report of a host, as far as the analysis needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub uuid: String,
    /// As stored.
    pub recorded_at: String,
    pub at: Timestamp,
    pub version: String,
    /// Shared by every run with the same facts.
    pub facts: Arc<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    pub name: String,
    /// Oldest first.
    pub runs: Vec<Run>,
    /// Index into [`Fleet::classes`]: the class of its newest run.
    pub class: usize,
}

/// A figure: what is compared across hosts and followed over time.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub name: String,
    pub unit: String,
    /// The page's area it belongs to (`Memory`).
    pub area: String,
    /// Which way is better, from the unit (`ns`: lower; `GB/s`: higher; an unknown unit:
    /// higher, as `report --baseline` takes it).
    pub lower_is_better: bool,
}

impl Figure {
    /// `Idle DRAM latency (ns)`.
    pub fn label(&self) -> String {
        format!("{} ({})", self.name, self.unit)
    }

    /// Whether going from `before` to `after` is worse.
    pub fn worse(&self, before: f64, after: f64) -> bool {
        if self.lower_is_better {
            after > before
        } else {
            after < before
        }
    }
}

/// One host's values of one figure, in run order.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub host: usize,
    pub figure: usize,
    /// The index in the host's runs of each value.
    pub runs: Vec<usize>,
    pub values: Vec<f64>,
}

/// What was left out on the way in, for the summary's notes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Reports outside `--since`/`--until`/`--hosts`.
    pub outside_window: usize,
    /// A report seen twice (pushed to the store from two files): counted once.
    pub duplicates: usize,
    /// Reports whose time does not read.
    pub unreadable_time: usize,
    /// Figure values that are not finite and positive.
    pub unusable_values: usize,
}

/// The fleet the reports describe.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fleet {
    /// By name.
    pub hosts: Vec<Host>,
    /// The hardware classes, each named by its facts.
    pub classes: Vec<ClassKey>,
    pub figures: Vec<Figure>,
    /// By host, then figure.
    pub series: Vec<Series>,
    pub left_out: LeftOut,
}

/// A figure's value in a run as added: (run, figure, value).
type Point = (usize, usize, f64);

/// Builds a [`Fleet`] from reports given one at a time (as a store reads them), keeping only
/// what the analysis needs: each run's time, version and facts (one copy of each distinct set
/// of facts, however many runs share it) and its figures' medians.
#[derive(Debug, Default)]
pub struct FleetBuilder {
    window: Window,
    left_out: LeftOut,
    seen: HashSet<String>,
    facts: HashMap<BTreeMap<String, String>, Arc<BTreeMap<String, String>>>,
    figures: Vec<Figure>,
    figure_index: HashMap<(String, String), usize>,
    /// By host name: its runs, and (run, figure, value) of every usable figure.
    hosts: BTreeMap<String, (Vec<Run>, Vec<Point>)>,
}

impl FleetBuilder {
    /// A builder keeping the reports inside `window`.
    pub fn new(window: Window) -> Self {
        Self { window, ..Self::default() }
    }

    /// Takes one report (any order; one seen before, by its UUID, is counted once).
    pub fn add(&mut self, report: ReportFigures) {
        let Some(at) = parse_recorded(&report.recorded_at) else {
            self.left_out.unreadable_time += 1;
            return;
        };
        if !self.window.contains_time(at) || !self.window.contains_host(&report.host) {
            self.left_out.outside_window += 1;
            return;
        }
        if !report.uuid.is_empty() && !self.seen.insert(report.uuid.clone()) {
            self.left_out.duplicates += 1;
            return;
        }
        let facts = match self.facts.get(&report.facts) {
            Some(shared) => Arc::clone(shared),
            None => {
                let shared = Arc::new(report.facts.clone());
                self.facts.insert(report.facts, Arc::clone(&shared));
                shared
            }
        };
        let (runs, points) = self.hosts.entry(report.host).or_default();
        let run = runs.len();
        runs.push(Run {
            uuid: report.uuid,
            recorded_at: report.recorded_at,
            at,
            version: report.version,
            facts,
        });
        let mut in_this_run: HashSet<usize> = HashSet::new();
        for f in report.figures {
            let key = (f.name, f.unit);
            let index = match self.figure_index.get(&key) {
                Some(&i) => i,
                None => {
                    self.figures.push(Figure {
                        name: key.0.clone(),
                        unit: key.1.clone(),
                        area: f.area,
                        lower_is_better: measure::Unit::from_symbol(&key.1)
                            .is_some_and(measure::Unit::lower_is_better),
                    });
                    self.figure_index.insert(key, self.figures.len() - 1);
                    self.figures.len() - 1
                }
            };
            if !in_this_run.insert(index) {
                continue;
            }
            if f.median.is_finite() && f.median > 0.0 {
                points.push((run, index, f.median));
            } else {
                self.left_out.unusable_values += 1;
            }
        }
    }

    /// The fleet: runs in time order, figures in page order, series, classes.
    pub fn finish(self) -> Fleet {
        let FleetBuilder { left_out, figures, hosts: by_host, .. } = self;
        // Figures in page order (area, then as first seen); an area this version does not
        // know goes last.
        let rank = |area: &str| Area::from_title(area).map_or(Area::ALL.len(), |a| a as usize);
        let mut order: Vec<usize> = (0..figures.len()).collect();
        order.sort_by_key(|&i| (rank(&figures[i].area), i));
        let mut new_index = vec![0; figures.len()];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new;
        }
        let figures: Vec<Figure> = order.iter().map(|&i| figures[i].clone()).collect();
        let mut hosts = Vec::with_capacity(by_host.len());
        let mut series = Vec::new();
        for (name, (runs, points)) in by_host {
            let host = hosts.len();
            // Time order; the position each run had when added → its position now.
            let mut by_time: Vec<usize> = (0..runs.len()).collect();
            by_time.sort_by(|&a, &b| (runs[a].at, &runs[a].uuid).cmp(&(runs[b].at, &runs[b].uuid)));
            let mut position = vec![0; runs.len()];
            for (now, &added) in by_time.iter().enumerate() {
                position[added] = now;
            }
            let mut per_figure: Vec<Vec<(usize, f64)>> = vec![Vec::new(); figures.len()];
            for (run, figure, value) in points {
                per_figure[new_index[figure]].push((position[run], value));
            }
            for (figure, mut points) in per_figure.into_iter().enumerate() {
                if points.is_empty() {
                    continue;
                }
                points.sort_by_key(|p| p.0);
                series.push(Series {
                    host,
                    figure,
                    runs: points.iter().map(|p| p.0).collect(),
                    values: points.iter().map(|p| p.1).collect(),
                });
            }
            let mut runs: Vec<Option<Run>> = runs.into_iter().map(Some).collect();
            let runs: Vec<Run> = by_time.iter().filter_map(|&i| runs[i].take()).collect();
            hosts.push(Host { name, runs, class: 0 });
        }
        // Classes from each host's newest run.
        let keys: Vec<Option<ClassKey>> =
            hosts.iter().map(|h| h.runs.last().map(|r| ClassKey::of(&r.facts))).collect();
        let mut classes: Vec<ClassKey> = keys.iter().flatten().cloned().collect();
        classes.sort();
        classes.dedup();
        for (host, key) in hosts.iter_mut().zip(&keys) {
            if let Some(key) = key {
                host.class = classes.binary_search(key).unwrap_or(0);
            }
        }
        Fleet { hosts, classes, figures, series, left_out }
    }
}

impl Fleet {
    /// The reports inside `window`, each counted once.
    pub fn from_reports(reports: &[ReportFigures], window: &Window) -> Self {
        let mut builder = FleetBuilder::new(window.clone());
        for report in reports {
            builder.add(report.clone());
        }
        builder.finish()
    }

    /// How many reports the fleet holds.
    pub fn reports(&self) -> usize {
        self.hosts.iter().map(|h| h.runs.len()).sum()
    }

    /// The hosts of class `class`, by name.
    pub fn hosts_of(&self, class: usize) -> impl Iterator<Item = (usize, &Host)> {
        self.hosts.iter().enumerate().filter(move |(_, h)| h.class == class)
    }

    /// The time of the oldest and the newest report.
    pub fn span(&self) -> Option<(Timestamp, Timestamp)> {
        let times = self.hosts.iter().flat_map(|h| h.runs.iter().map(|r| r.at));
        let (mut lo, mut hi): (Option<Timestamp>, Option<Timestamp>) = (None, None);
        for t in times {
            lo = Some(lo.map_or(t, |l| l.min(t)));
            hi = Some(hi.map_or(t, |h| h.max(t)));
        }
        Some((lo?, hi?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::fleet::HeadlineFigure;

    pub(crate) fn figure(name: &str, unit: &str, median: f64) -> HeadlineFigure {
        HeadlineFigure {
            area: if unit == "ns" { "Memory".into() } else { "Compression".into() },
            name: name.into(),
            metric: format!("{name}_metric"),
            unit: unit.into(),
            median,
            p25: median,
            p75: median,
            samples: 5,
        }
    }

    fn report(uuid: &str, host: &str, at: &str, figures: Vec<HeadlineFigure>) -> ReportFigures {
        let facts = [("CPU model".to_string(), format!("cpu of {host}"))].into();
        ReportFigures { figures, ..crate::synthetic::report_record(uuid, host, at, "0.1.0", facts) }
    }

    #[test]
    fn series_follow_time_and_leave_out_what_cannot_be_compared() {
        let reports = vec![
            report("c", "b", "2026-03-03T00:00:00Z", vec![figure("zstd", "GB/s", 2.0)]),
            report(
                "a",
                "b",
                "2026-03-01T00:00:00Z",
                vec![figure("zstd", "GB/s", 1.0), figure("DRAM", "ns", 90.0)],
            ),
            report(
                "b",
                "b",
                "2026-03-02T00:00:00Z",
                vec![figure("zstd", "GB/s", f64::NAN), figure("DRAM", "ns", 0.0)],
            ),
            report("a", "b", "2026-03-01T00:00:00Z", vec![]),
            report("d", "a", "yesterday", vec![]),
            report("e", "a", "2026-03-01 10:00:00", vec![figure("DRAM", "ns", 95.0)]),
        ];
        let fleet = Fleet::from_reports(&reports, &Window::default());
        assert_eq!(fleet.hosts.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(
            fleet.hosts[1].runs.iter().map(|r| r.uuid.as_str()).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        // Memory before Compression, whatever came first.
        assert_eq!(fleet.figures[0].name, "DRAM");
        assert!(fleet.figures[0].lower_is_better && !fleet.figures[1].lower_is_better);
        let zstd = fleet.series.iter().find(|s| s.host == 1 && s.figure == 1).expect("zstd of b");
        assert_eq!(zstd.values, [1.0, 2.0]);
        assert_eq!(zstd.runs, [0, 2]);
        assert_eq!(
            fleet.left_out,
            LeftOut { outside_window: 0, duplicates: 1, unreadable_time: 1, unusable_values: 2 }
        );
        assert_eq!(fleet.classes.len(), 2);
        assert_ne!(fleet.hosts[0].class, fleet.hosts[1].class);
    }

    #[test]
    fn the_window_bounds_time_and_hosts() {
        let reports = vec![
            report("a", "db1", "2026-03-01T00:00:00Z", vec![]),
            report("b", "db1", "2026-03-05T00:00:00Z", vec![]),
            report("c", "web1", "2026-03-05T00:00:00Z", vec![]),
        ];
        let now = "2026-04-01T00:00:00Z".parse().expect("time");
        let window = Window::parse(Some("2026-03-02"), None, Some("db*"), now).expect("window");
        let fleet = Fleet::from_reports(&reports, &window);
        assert_eq!(fleet.reports(), 1);
        assert_eq!(fleet.left_out.outside_window, 2);
    }
}
