//! A fleet made from a few real reports of one host, with what was done to it written down:
//! for tests of the fleet reader and for benches that fill a store with thousands of hosts.
//!
//! Each figure of the real reports gives a level (the median of its medians) and the real
//! reports' deviations from it (how much this host's figure really moves from one report to
//! the next, odd reports included). The fleet has `hosts` hosts reporting once a day for `days`
//! days, in `classes` hardware classes (the real machine's facts, then more cores, more memory
//! and a figure level 30 % apart per class), each host a little off its class (half a spread),
//! every run's value its level times one real report's deviation drawn at random, blurred by
//! half the spread (the spread: 1.4826 × the median |deviation|). A [`Plan`] that perturbs
//! adds:
//!
//! - shifts on one host in eight (at least two): one figure of the quieter half (by its
//!   largest real deviation) moves by
//!   e^(6 spreads) (at least 10 %), from a known day on, for the worse except every fourth; a
//!   kernel change the same day for the first of every three, a THP change for the second,
//!   nothing for the third;
//! - one configuration change that moves nothing (a microcode update);
//! - one host of the first class steadily worse than its class, by as much, on the quietest
//!   figure.
//!
//! The [`Truth`] lists each with the host, the figure, the day and the time of its first run.
//! Everything is drawn from one seeded generator: the same plan gives the same fleet.

use std::collections::BTreeMap;

use jiff::{civil, ToSpan};
use measure::rng::SplitMix64;
use measure::stats::{mad, median, normal, MAD_TO_SIGMA};
use results::fleet::{HeadlineFigure, ReportFigures};
use serde::{Deserialize, Serialize};
use topo::{FactValue, MemorySource, MemoryTotal};

use crate::facts::FactChange;

/// What to build.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub hosts: usize,
    pub days: usize,
    pub classes: usize,
    pub seed: u64,
    /// Inject shifts, the configuration-only change and the steady host.
    pub perturb: bool,
    /// The first day (UTC).
    pub start: civil::Date,
}

impl Plan {
    /// A perturbed fleet starting on 2026-01-01.
    pub fn new(hosts: usize, days: usize, classes: usize, seed: u64) -> Self {
        Self { hosts, days, classes, seed, perturb: true, start: civil::date(2026, 1, 1) }
    }

    /// The same fleet with nothing injected.
    pub fn quiet(mut self) -> Self {
        self.perturb = false;
        self
    }
}

/// A shift injected on one host's figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InjectedShift {
    pub host: String,
    pub figure: String,
    pub unit: String,
    /// The first day (0-based) with the shifted level.
    pub day: usize,
    /// `recorded_at` of that day's run.
    pub at: String,
    /// Every value from that day on is multiplied by it.
    pub factor: f64,
    /// The facts changed the same day (none for a shift without a configuration change).
    pub config: Vec<FactChange>,
}

/// A configuration change that moves no figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InjectedConfig {
    pub host: String,
    pub day: usize,
    pub at: String,
    pub config: Vec<FactChange>,
}

/// A host worse than its class on one figure on every day.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyHost {
    pub host: String,
    pub figure: String,
    pub unit: String,
    pub factor: f64,
}

/// What was injected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Truth {
    pub shifts: Vec<InjectedShift>,
    pub config_only: Option<InjectedConfig>,
    pub steady: Option<SteadyHost>,
}

impl Truth {
    /// What an analysis of the fleet got wrong, one sentence each (none: everything found):
    /// each injected shift must be a change of its host and figure within one run of its day,
    /// going its way by about as much, with its configuration change; the steady host must be
    /// an outlier of its figure; the configuration-only change must be listed apart and on no
    /// change of its host.
    pub fn misses(&self, plan: &Plan, report: &crate::analysis::FleetReport) -> Vec<String> {
        let start = plan
            .start
            .to_zoned(jiff::tz::TimeZone::UTC)
            .map(|z| z.timestamp().as_second())
            .unwrap_or_default();
        let day_of = |at: &str| {
            crate::window::parse_recorded(at).map(|t| (t.as_second() - start).div_euclid(86_400))
        };
        let mut misses = Vec::new();
        for shift in &self.shifts {
            let found = report.changes.iter().find(|c| {
                c.host == shift.host
                    && c.figure == shift.figure
                    && c.unit == shift.unit
                    && day_of(&c.at).is_some_and(|d| (d - shift.day as i64).abs() <= 1)
            });
            let Some(change) = found else {
                misses.push(format!(
                    "the shift of {} {} on day {} (×{:.3}) was not found",
                    shift.host, shift.figure, shift.day, shift.factor
                ));
                continue;
            };
            if (change.ratio.ln() - shift.factor.ln()).abs() >= 0.5 * shift.factor.ln().abs() {
                misses.push(format!(
                    "the shift of {} {} was ×{:.3}, found ×{:.3}",
                    shift.host, shift.figure, shift.factor, change.ratio
                ));
            }
            for injected in shift.config.iter().filter(|c| !change.config.contains(c)) {
                misses.push(format!(
                    "the shift of {} {} lacks its configuration change {} {} → {}",
                    shift.host, shift.figure, injected.fact, injected.before, injected.after
                ));
            }
        }
        if let Some(steady) = &self.steady {
            let found = report.outliers.iter().any(|o| {
                o.host == steady.host && o.figure == steady.figure && o.unit == steady.unit
            });
            if !found {
                misses.push(format!(
                    "{} is not an outlier of {} (×{:.3} its class)",
                    steady.host, steady.figure, steady.factor
                ));
            }
        }
        if let Some(quiet) = &self.config_only {
            let listed = report
                .config_changes_without_shift
                .iter()
                .any(|q| q.host == quiet.host && q.at == quiet.at && q.config == quiet.config);
            if !listed {
                misses.push(format!(
                    "the configuration change of {} on day {} is not listed as moving nothing",
                    quiet.host, quiet.day
                ));
            }
            let called = report
                .changes
                .iter()
                .any(|c| c.host == quiet.host && c.config.iter().any(|f| quiet.config.contains(f)));
            if called {
                misses.push(format!(
                    "the configuration change of {} on day {} is on a change",
                    quiet.host, quiet.day
                ));
            }
        }
        misses
    }
}

/// Why a fleet cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SynthError {
    #[error("a synthetic fleet needs at least two real reports to take the noise from, got {0}")]
    TooFewReports(usize),
    #[error("the real reports share no headline figure with a finite positive value")]
    NoFigures,
    #[error("a synthetic fleet needs at least one host, one class and one day")]
    Empty,
}

/// One figure of the real host: its level and noise.
#[derive(Debug, Clone)]
struct Source {
    template: HeadlineFigure,
    level: f64,
    /// ln(value / level) of each real report: the host's real run-to-run spread, drawn from.
    deviations: Vec<f64>,
    /// The spread's scale: 1.4826 × the median |deviation| (a standard deviation for normal
    /// noise, not swayed by one odd report).
    sigma: f64,
    /// Half the within-run interquartile range, as a ratio (ln p75 − ln median).
    half_iqr: f64,
    lower_is_better: bool,
}

/// The figures every real report has with a usable value, with level and noise.
fn sources(real: &[ReportFigures]) -> Vec<Source> {
    let first = &real[0];
    let mut out = Vec::new();
    for template in &first.figures {
        let values: Vec<&HeadlineFigure> = real
            .iter()
            .filter_map(|r| {
                r.figures.iter().find(|f| f.name == template.name && f.unit == template.unit)
            })
            .filter(|f| f.median.is_finite() && f.median > 0.0)
            .collect();
        if values.len() < real.len()
            || out.iter().any(|s: &Source| {
                s.template.name == template.name && s.template.unit == template.unit
            })
        {
            continue;
        }
        let level = median(&values.iter().map(|f| f.median).collect::<Vec<f64>>());
        let deviations: Vec<f64> = values.iter().map(|f| (f.median / level).ln()).collect();
        let spread = MAD_TO_SIGMA * mad(&deviations, 0.0);
        let half_iqr = median(
            &values
                .iter()
                .filter(|f| f.p75 > 0.0 && f.median > 0.0 && f.p75.is_finite())
                .map(|f| (f.p75 / f.median).ln().abs())
                .collect::<Vec<f64>>(),
        );
        // A figure that never moved across the real reports still moves a little: the spread
        // inside one run (its samples' interquartile range as a standard deviation), at least
        // 0.1 %.
        let within = if half_iqr.is_finite() { half_iqr / 0.6745 } else { 0.0 };
        let sigma = if spread > 0.0 { spread } else { within }.max(0.001);
        out.push(Source {
            template: template.clone(),
            level,
            deviations,
            sigma,
            half_iqr: if half_iqr.is_finite() { half_iqr } else { 0.0 },
            lower_is_better: measure::Unit::from_symbol(&template.unit)
                .is_some_and(measure::Unit::lower_is_better),
        });
    }
    out
}

/// A made-up memory headline figure of nine samples whose quartiles are a percent either side
/// of `median`: what tests and examples build their few reports of one machine from.
pub fn made_up_figure(name: &str, unit: &str, median: f64) -> HeadlineFigure {
    HeadlineFigure {
        area: "Memory".into(),
        name: name.into(),
        metric: name.into(),
        unit: unit.into(),
        median,
        p25: median * 0.99,
        p75: median * 1.01,
        samples: 9,
    }
}

/// Three made-up reports of one machine, a day apart: each figure `(name, unit, first median,
/// change from one report to the next)` as [`made_up_figure`] makes it, under `facts`. What
/// tests and examples stand in for a machine's real reports with.
pub fn made_up_machine(
    figures: &[(&str, &str, f64, f64)],
    facts: &[(&str, &str)],
) -> Vec<ReportFigures> {
    (0..3)
        .map(|i| ReportFigures {
            figures: figures
                .iter()
                .map(|&(name, unit, first, change)| {
                    made_up_figure(name, unit, first + change * f64::from(i))
                })
                .collect(),
            ..report_record(
                &format!("r{i}"),
                "here",
                &format!("2026-01-0{}T00:00:00Z", i + 1),
                "0.1.0",
                facts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            )
        })
        .collect()
}

/// A report record without figures (fields the fleet reader does not use at their defaults).
pub fn report_record(
    uuid: &str,
    host: &str,
    recorded_at: &str,
    version: &str,
    facts: BTreeMap<String, String>,
) -> ReportFigures {
    ReportFigures {
        uuid: uuid.into(),
        host: host.into(),
        recorded_at: recorded_at.into(),
        version: version.into(),
        facts,
        ..ReportFigures::default()
    }
}

/// Four real `report --quick` records of the Intel Xeon KVM guest (the crate's
/// `tests/fixtures`, whose README says how they were made): what the tests build fleets from.
/// Read from the source tree, so for tests and benches run from a checkout.
pub fn fixture_reports() -> Result<Vec<ReportFigures>, String> {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/reports_xeon_kvm_2cpu_40aede5.json");
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{path}: not report records: {e}"))
}

/// A host name: `db-0007`.
pub fn host_name(i: usize) -> String {
    format!("db-{i:04}")
}

fn recorded_at(plan: &Plan, host: usize, day: usize) -> String {
    // Daily at 02:00 UTC, hosts a few seconds apart (as a cron job with a splay would).
    let at = plan
        .start
        .to_datetime(civil::time(2, 0, 0, 0))
        .checked_add((day as i64).days())
        .and_then(|t| t.checked_add(((host as i64 * 7) % 3600).seconds()))
        .unwrap_or_default();
    format!("{}Z", at.strftime("%Y-%m-%dT%H:%M:%S%.3f"))
}

/// The facts of a host of `class`: the real machine's, with more cores and memory per class.
fn class_facts(base: &BTreeMap<String, String>, class: usize) -> BTreeMap<String, String> {
    let mut facts = base.clone();
    if class == 0 {
        return facts;
    }
    let scale = 1u64 << class;
    let model = facts.get("CPU model").cloned().unwrap_or_else(|| "CPU".into());
    facts.insert("CPU model".into(), format!("{model} (synthetic class {class})"));
    let cores = facts.get("Cores per socket").and_then(|c| c.parse::<u64>().ok()).unwrap_or(1);
    facts.insert("Cores per socket".into(), (cores * scale).to_string());
    let memory = match facts.get("Memory").map(|m| FactValue::read(m)) {
        Some(FactValue::Memory(m)) => m,
        _ => MemoryTotal { bytes: 16 << 30, source: MemorySource::MemTotal },
    };
    let more = MemoryTotal { bytes: memory.bytes.saturating_mul(scale), ..memory };
    facts.insert("Memory".into(), FactValue::Memory(more).to_string());
    facts
}

/// What a configuration change on a shift day is.
fn changed_fact(base: &BTreeMap<String, String>, which: usize) -> Option<FactChange> {
    let (fact, after) = match which {
        0 => ("Kernel", "6.19.0-synthetic"),
        1 => ("THP", "always (defrag madvise)"),
        _ => return None,
    };
    let before = base.get(fact).cloned().unwrap_or_else(|| "not reported".into());
    let after = if before == after { format!("{after} (new)") } else { after.to_string() };
    Some(FactChange { fact: fact.into(), before, after })
}

/// The fleet `plan` describes from `real` (reports of one machine) and what was injected.
pub fn generate(
    real: &[ReportFigures],
    plan: &Plan,
) -> Result<(Vec<ReportFigures>, Truth), SynthError> {
    if real.len() < 2 {
        return Err(SynthError::TooFewReports(real.len()));
    }
    if plan.hosts == 0 || plan.classes == 0 || plan.days == 0 {
        return Err(SynthError::Empty);
    }
    let sources = sources(real);
    if sources.is_empty() {
        return Err(SynthError::NoFigures);
    }
    let newest = real.iter().max_by(|a, b| a.recorded_at.cmp(&b.recorded_at)).unwrap_or(&real[0]);
    let mut base_facts = newest.facts.clone();
    let version = newest.version.clone();
    let mut rng = SplitMix64::new(plan.seed);
    let class_of = |host: usize| host % plan.classes;

    // What to inject, decided before any value is drawn.
    let mut truth = Truth::default();
    // (host, figure, first day, factor, fact change)
    let mut shifts: Vec<(usize, usize, usize, f64, Option<FactChange>)> = Vec::new();
    let mut steady: Option<(usize, usize, f64)> = None;
    let mut config_only: Option<(usize, usize, FactChange)> = None;
    // Six of the figure's spreads (at least 10 %), on the quieter half of the figures: what a
    // team would call a regression on a figure that holds still.
    let magnitude = |s: &Source| (6.0 * s.sigma).exp().max(1.10);
    // Quiet: the largest real deviation small (a figure with one odd report among the real
    // ones is not quiet, whatever its spread).
    let widest = |s: &Source| s.deviations.iter().fold(0.0f64, |w, d| w.max(d.abs()));
    let mut quiet: Vec<usize> = (0..sources.len()).collect();
    quiet.sort_by(|&a, &b| widest(&sources[a]).total_cmp(&widest(&sources[b])).then(a.cmp(&b)));
    let half = sources.len().div_ceil(2);
    if plan.perturb {
        let n = (plan.hosts / 8).max(2).min(plan.hosts);
        let margin = 4.min(plan.days / 2);
        let span = plan.days.saturating_sub(2 * margin).max(1);
        for j in 0..n {
            let host = (j * plan.hosts / n + 1) % plan.hosts;
            let figure = quiet[j % half];
            let day = margin + (j * 7 + 3) % span;
            let s = &sources[figure];
            let worse = j % 4 != 3;
            let up = worse == s.lower_is_better;
            let factor = if up { magnitude(s) } else { 1.0 / magnitude(s) };
            shifts.push((host, figure, day, factor, changed_fact(&base_facts, j % 3)));
        }
        let taken = |h: usize| shifts.iter().any(|s| s.0 == h);
        if let Some(h) = (0..plan.hosts).find(|&h| !taken(h) && class_of(h) == 0) {
            let figure = quiet[0];
            let s = &sources[figure];
            let factor = if s.lower_is_better { magnitude(s) } else { 1.0 / magnitude(s) };
            steady = Some((h, figure, factor));
        }
        let steady_host = steady.map(|s| s.0);
        if let Some(h) = (0..plan.hosts).rev().find(|&h| !taken(h) && Some(h) != steady_host) {
            let before =
                base_facts.get("Microcode").cloned().unwrap_or_else(|| "not reported".into());
            let change =
                FactChange { fact: "Microcode".into(), after: format!("{before}-update"), before };
            config_only = Some((h, plan.days / 2, change));
        }
    }
    // A changed fact the real machine did not report is there, with its old value, before.
    let changes =
        shifts.iter().filter_map(|s| s.4.as_ref()).chain(config_only.iter().map(|c| &c.2));
    for change in changes {
        base_facts.entry(change.fact.clone()).or_insert_with(|| change.before.clone());
    }
    for &(host, figure, day, factor, ref change) in &shifts {
        truth.shifts.push(InjectedShift {
            host: host_name(host),
            figure: sources[figure].template.name.clone(),
            unit: sources[figure].template.unit.clone(),
            day,
            at: recorded_at(plan, host, day),
            factor,
            config: change.iter().cloned().collect(),
        });
    }
    if let Some((host, figure, factor)) = steady {
        truth.steady = Some(SteadyHost {
            host: host_name(host),
            figure: sources[figure].template.name.clone(),
            unit: sources[figure].template.unit.clone(),
            factor,
        });
    }
    if let Some((host, day, change)) = &config_only {
        truth.config_only = Some(InjectedConfig {
            host: host_name(*host),
            day: *day,
            at: recorded_at(plan, *host, *day),
            config: vec![change.clone()],
        });
    }

    let mut reports = Vec::with_capacity(plan.hosts * plan.days);
    for host in 0..plan.hosts {
        let class = class_of(host);
        let facts = class_facts(&base_facts, class);
        let class_level = 1.0 + 0.3 * class as f64;
        let offsets: Vec<f64> =
            sources.iter().map(|s| (0.5 * s.sigma * normal(&mut rng)).exp()).collect();
        for day in 0..plan.days {
            let mut facts = facts.clone();
            let mut apply = |change: &FactChange| {
                facts.insert(change.fact.clone(), change.after.clone());
            };
            for (h, _, first, _, change) in &shifts {
                if *h == host && day >= *first {
                    change.iter().for_each(&mut apply);
                }
            }
            if let Some((h, first, change)) = &config_only {
                if *h == host && day >= *first {
                    apply(change);
                }
            }
            let figures = sources
                .iter()
                .enumerate()
                .map(|(f, s)| {
                    let mut level = s.level * class_level * offsets[f];
                    for (h, figure, first, factor, _) in &shifts {
                        if *h == host && *figure == f && day >= *first {
                            level *= factor;
                        }
                    }
                    if let Some((h, figure, factor)) = steady {
                        if h == host && figure == f {
                            level *= factor;
                        }
                    }
                    // One real report's deviation, blurred by half the spread so no two runs
                    // repeat a value.
                    let real = s.deviations[rng.below(s.deviations.len() as u64) as usize];
                    let median = level * (real + 0.5 * s.sigma * normal(&mut rng)).exp();
                    HeadlineFigure {
                        median,
                        p25: median * (-s.half_iqr).exp(),
                        p75: median * s.half_iqr.exp(),
                        ..s.template.clone()
                    }
                })
                .collect();
            reports.push(ReportFigures {
                figures,
                ..report_record(
                    &format!("synthetic-{}-{host}-{day}", plan.seed),
                    &host_name(host),
                    &recorded_at(plan, host, day),
                    &version,
                    facts,
                )
            });
        }
    }
    Ok((reports, truth))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real() -> Vec<ReportFigures> {
        made_up_machine(
            &[("DRAM", "ns", 100.0, 1.0), ("Copy", "GB/s", 10.0, -0.1), ("Flat", "ns", 5.0, 0.0)],
            &[("Kernel", "6.1"), ("Cores per socket", "2")],
        )
    }

    #[test]
    fn levels_and_noise_come_from_the_real_reports() {
        let s = sources(&real());
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].level, 101.0);
        assert_eq!(s[0].deviations.len(), 3);
        assert!(
            (s[0].sigma - MAD_TO_SIGMA * (102.0f64 / 101.0).ln()).abs() < 1e-9,
            "{}",
            s[0].sigma
        );
        // No spread between the runs: the spread inside one run.
        assert!((s[2].sigma - 0.01 / 0.6745).abs() < 0.001, "{}", s[2].sigma);
    }

    #[test]
    fn the_plan_is_followed_and_written_down() {
        let plan = Plan::new(16, 20, 2, 5);
        let (reports, truth) = generate(&real(), &plan).expect("fleet");
        assert_eq!(reports.len(), 16 * 20);
        assert_eq!(truth.shifts.len(), 2);
        assert!(truth.steady.is_some() && truth.config_only.is_some());
        for shift in &truth.shifts {
            assert!(shift.day >= 4 && shift.day + 4 <= 20, "{shift:?}");
            let index: usize = shift.host.trim_start_matches("db-").parse().expect("host number");
            let at = |day: usize| {
                reports.iter().find(|r| {
                    r.host == shift.host && r.recorded_at == recorded_at(&plan, index, day)
                })
            };
            assert_eq!(at(shift.day).map(|r| r.recorded_at.clone()), Some(shift.at.clone()));
            for change in &shift.config {
                let on = at(shift.day).expect("day");
                let before = at(shift.day - 1).expect("day before");
                assert_eq!(on.facts.get(&change.fact), Some(&change.after));
                assert_eq!(before.facts.get(&change.fact), Some(&change.before));
            }
        }
        let again = generate(&real(), &plan).expect("fleet");
        assert_eq!(again.0, reports, "one seed, one fleet");
        let (quiet, nothing) = generate(&real(), &plan.clone().quiet()).expect("quiet");
        assert_eq!(nothing, Truth::default());
        assert_eq!(quiet.len(), reports.len());
        assert!(quiet
            .iter()
            .flat_map(|r| &r.figures)
            .all(|f| f.median.is_finite() && f.median > 0.0));
    }

    #[test]
    fn too_little_to_build_from_is_said() {
        assert_eq!(
            generate(&real()[..1], &Plan::new(4, 4, 1, 1)),
            Err(SynthError::TooFewReports(1))
        );
        assert_eq!(generate(&real(), &Plan::new(0, 4, 1, 1)), Err(SynthError::Empty));
    }
}
