//! What an A/B found, as stored, printed and drawn: the settings of each side, every run's
//! figures with the time, clock and placement it was taken at, the A/A phase, the verdicts and
//! what was restored. `--json` prints it as stored (docs/ab.md has the contract).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chart::{Area, Headline, Part};
use measure::placement::{Regime, RunPlacement};
use measure::verdict::Verdict;
use measure::{Metric, ToMetrics, Unit};
use serde::{Deserialize, Serialize};

use crate::journal::{Journal, Restored};
use crate::judge::{CalibratedFigure, FigureVerdict};
use crate::plan::Side;
use crate::workload::Workload;

/// Each side's settings, by what they set (`thp`, `numa`, `sysctl:vm.swappiness`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sides {
    pub a: BTreeMap<String, String>,
    pub b: BTreeMap<String, String>,
}

/// One figure of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundValue {
    /// The round, from 1 (the A/A phase counts its own).
    pub round: usize,
    /// `A` or `B` (`A1`, `A2` in the A/A phase).
    pub arm: Side,
    pub figure: String,
    pub value: f64,
    /// When the run started, seconds after the A/B did.
    pub at: f64,
}

/// One run of the workload, with where and at what clock it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub round: usize,
    pub arm: Side,
    /// In the A/A phase.
    pub calibration: bool,
    /// When it started, seconds after the A/B did; how long it took.
    pub at: f64,
    pub seconds: f64,
    /// The core clock just before it ([`measure::core_clock::measure_now`]).
    pub clock_ghz: Option<f64>,
    /// How far that clock is from the A/B's median clock, when beyond [`CLOCK_STEP`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_off: Option<f64>,
    /// The placement probe just before it, on the workload's CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<RunPlacement>,
    /// Its placement against the A/B's other runs ([`measure::placement::classify`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regime: Option<Regime>,
    /// The preloaded allocator as found in the measured process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preload: Option<String>,
}

impl RunRecord {
    /// Taken in another placement or clock regime than the A/B's usual (`usual`: the
    /// placement most runs were taken in, when it changed): `placement near`, `placement
    /// moved`, `clock −8%`; `None` for an ordinary run.
    pub fn other_regime(&self, usual: Option<Regime>) -> Option<String> {
        let mut words = Vec::new();
        if let (Some(usual), Some(r)) = (usual, self.regime) {
            if r != usual && r != Regime::Unprobed {
                words.push(format!("placement {}", r.name()));
            }
        }
        if let Some(off) = self.clock_off {
            words.push(format!("clock {}", signed_pct(off)));
        }
        (!words.is_empty()).then(|| words.join(", "))
    }
}

/// A departure of the core clock from the A/B's median beyond which a run is shown as taken
/// in another clock regime: the clock's two methods agree within 3%
/// ([`measure::core_clock::AGREEMENT`]), so 5% is beyond its own noise.
pub const CLOCK_STEP: f64 = 0.05;

/// `+7%`, `−8%`.
fn signed_pct(v: f64) -> String {
    let sign = if v >= 0.0 { "+" } else { "−" };
    format!("{sign}{:.0}%", v.abs() * 100.0)
}

/// The A/A phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Rounds run (0 with `--no-calibrate`).
    pub rounds: usize,
    /// The largest run-to-run spread over the figures (standard deviation of the logs: 0.02
    /// is about 2%); `null` without an A/A phase.
    pub spread: Option<f64>,
    pub figures: Vec<CalibratedFigure>,
    pub values: Vec<RoundValue>,
}

/// Why the A/B rounds ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// All `--rounds` were run.
    Rounds,
    /// Every interval was narrower than `--precision` at a look.
    Precision,
    /// `--max-time` was reached between rounds.
    MaxTime,
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

/// How the A/B was run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Method {
    /// The seed of the rounds' order (`--seed` repeats it).
    pub seed: u64,
    pub rounds_planned: usize,
    pub rounds_run: usize,
    /// The rounds after which the interval was to be looked at, and those it was.
    pub looks: Vec<usize>,
    pub looked_at: Vec<usize>,
    pub precision: Option<f64>,
    pub max_time_s: Option<f64>,
    pub stopped: Stop,
}

/// A whole A/B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbRun {
    pub settings: Sides,
    /// Each setting's value as found before the first change.
    pub found: BTreeMap<String, String>,
    pub workload: Workload,
    pub started: String,
    pub rounds: Vec<RoundValue>,
    pub runs: Vec<RunRecord>,
    pub calibration: Calibration,
    pub verdicts: Vec<FigureVerdict>,
    pub method: Method,
    /// Whether every original value is back.
    pub restored: bool,
    pub restored_settings: Vec<Restored>,
    /// Why a value could not be put back (then `platscope ab --restore`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_failed: Option<String>,
    /// The placement changed between runs: what the probes saw.
    pub notes: Vec<String>,
    /// When the placement changed: the one most runs were taken in (the others are marked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usual_placement: Option<Regime>,
    pub interrupted: bool,
    /// The page area of what was measured.
    pub area: Area,
}

/// `platscope ab --restore`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestoreRun {
    /// The journal that was pending, if one was.
    pub journal: Option<Journal>,
    pub restored: Vec<Restored>,
}

/// What `platscope ab` gives: an A/B, or a restore.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AbOutcome {
    Run(Box<AbRun>),
    Restore(RestoreRun),
}

/// A figure's value with its unit, four figures or so: `282.0 ns`, `1.234 s`.
pub fn value_text(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    // Four significant figures: 282.0, 1234, 0.1160.
    let decimals =
        if v == 0.0 { 0 } else { (3 - v.abs().log10().floor() as i32).clamp(0, 9) as usize };
    let number = format!("{v:.decimals$}");
    match unit {
        "" | "count" => number,
        "%" => format!("{number}%"),
        _ => format!("{number} {unit}"),
    }
}

/// A relative change in words: `21.1%`, or `×4.2` from 100% up.
pub fn change_text(d: f64) -> String {
    if d >= 1.0 {
        format!("×{:.1}", 1.0 + d)
    } else {
        format!("{:.1}%", d * 100.0)
    }
}

/// `0.621`, `–` when not a number.
pub fn ratio_text(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "–".into()
    }
}

/// `0.604–0.638`, or `–` without an interval.
pub fn interval_text(low: f64, high: f64) -> String {
    if low.is_finite() && high.is_finite() {
        format!("{}–{}", ratio_text(low), ratio_text(high))
    } else {
        "–".into()
    }
}

/// A figure's verdict in words: `faster`, `untested (1 vs 1 runs)`.
pub fn verdict_words(v: &FigureVerdict) -> String {
    match v.verdict {
        Verdict::Untested => format!("untested ({} vs {} runs)", v.b_runs, v.a_runs),
        other => other.name().to_string(),
    }
}

impl AbRun {
    /// The settings of a side in words: `thp=never numa=interleave:all`.
    pub fn side_text(&self, b: bool) -> String {
        let map = if b { &self.settings.b } else { &self.settings.a };
        if map.is_empty() {
            return "the machine as found".into();
        }
        map.iter()
            .map(|(k, v)| if k == "numa-cpus" { format!("numa={v}") } else { format!("{k}={v}") })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Whether the placement changed between runs (so runs in another one are named).
    pub fn placement_changed(&self) -> bool {
        self.usual_placement.is_some()
    }

    /// The figures in their order.
    pub fn figure_names(&self) -> Vec<&str> {
        self.verdicts.iter().map(|v| v.figure.as_str()).collect()
    }

    /// The values of `figure` on `side` in run order.
    pub fn values(&self, figure: &str, side: Side) -> Vec<f64> {
        self.rounds
            .iter()
            .filter(|r| r.figure == figure && r.arm == side)
            .map(|r| r.value)
            .collect()
    }

    /// Why it stopped, in words.
    pub fn stopped_text(&self) -> String {
        let m = &self.method;
        let looks = match m.looks.len() {
            1 => "one look at the end".to_string(),
            n => format!(
                "{n} looks planned at rounds {}, each at α/{n}",
                m.looks.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ),
        };
        match m.stopped {
            Stop::Rounds => format!("stopped after the planned {} rounds ({looks})", m.rounds_run),
            Stop::Precision => format!(
                "stopped at round {}: every interval within ±{:.1}% ({looks})",
                m.rounds_run,
                m.precision.unwrap_or(f64::NAN) * 100.0
            ),
            Stop::MaxTime => format!(
                "stopped at --max-time after {} of {} rounds ({looks})",
                m.rounds_run, m.rounds_planned
            ),
            Stop::Interrupted => format!(
                "interrupted after {} of {} rounds ({looks})",
                m.rounds_run, m.rounds_planned
            ),
        }
    }

    fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "A/B of `{}`", self.workload.describe());
        let _ = writeln!(out, "  A: {}", self.side_text(false));
        let _ = writeln!(out, "  B: {}", self.side_text(true));
        if !self.found.is_empty() {
            let found: Vec<String> = self.found.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(out, "  as found: {}", found.join(" "));
        }
        let _ = writeln!(
            out,
            "order: {}{} rounds of A and B in random order (seed {}); each run a fresh process",
            if self.calibration.rounds > 0 {
                format!("A/A {} rounds, then ", self.calibration.rounds)
            } else {
                String::new()
            },
            self.method.rounds_run,
            self.method.seed
        );
        out.push_str(&self.calibration_text());
        out.push('\n');
        out.push_str(&self.rounds_text());
        out.push('\n');
        out.push_str(&self.verdicts_text());
        let _ = writeln!(out, "{}", self.stopped_text());
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        out.push_str(&self.restored_text());
        out
    }

    fn calibration_text(&self) -> String {
        let c = &self.calibration;
        let Some(spread) = c.spread else {
            return "calibration: none (--no-calibrate)\n".into();
        };
        let called: Vec<&CalibratedFigure> = c
            .figures
            .iter()
            .filter(|f| matches!(f.verdict, Verdict::Faster | Verdict::Slower))
            .collect();
        let mut out = format!(
            "calibration (A/A, {} rounds): run-to-run spread up to {:.1}%; ",
            c.rounds,
            spread * 100.0
        );
        if called.is_empty() {
            out.push_str("A against itself: nothing called\n");
        } else {
            let names: Vec<String> = called
                .iter()
                .map(|f| format!("{} {} ({})", f.figure, f.verdict.name(), ratio_text(f.ratio)))
                .collect();
            let _ = writeln!(
                out,
                "A differed from itself on {}: the machine is not steady, read the verdicts \
                 below with care",
                names.join(", ")
            );
        }
        let widest = c.figures.iter().map(|f| f.expected_detectable).fold(f64::NAN, f64::max);
        if widest.is_finite() {
            let _ = writeln!(
                out,
                "  at that spread, {} rounds can tell a change of {} on every figure",
                self.method.rounds_planned,
                change_text(widest)
            );
        }
        out
    }

    fn rounds_text(&self) -> String {
        const SHOWN: usize = 3;
        let names = self.figure_names();
        let shown = &names[..names.len().min(SHOWN)];
        let mut rows: Vec<Vec<String>> = Vec::new();
        let mut head = vec!["round".to_string(), "side".to_string()];
        head.extend(shown.iter().map(|n| n.to_string()));
        head.extend(["clock".to_string(), "placement".to_string(), String::new()]);
        rows.push(head);
        for run in &self.runs {
            let mut row = vec![
                if run.calibration { format!("A/A {}", run.round) } else { run.round.to_string() },
                run.arm.name().to_string(),
            ];
            for name in shown {
                let value = self.value_at(run, name);
                let unit = self
                    .verdicts
                    .iter()
                    .find(|v| v.figure == *name)
                    .map_or("", |v| v.unit.as_str());
                row.push(value.map_or("–".into(), |v| value_text(v, unit)));
            }
            row.push(run.clock_ghz.map_or("–".into(), |g| format!("{g:.2} GHz")));
            row.push(run.placement.as_ref().map_or("–".into(), RunPlacement::short));
            row.push(
                run.other_regime(self.usual_placement)
                    .map(|w| format!("← {w}"))
                    .unwrap_or_default(),
            );
            rows.push(row);
        }
        let mut out = table(&rows);
        if names.len() > SHOWN {
            let _ = writeln!(out, "(the first {SHOWN} of {} figures; --json has all)", names.len());
        }
        out
    }

    /// The value of `figure` in `run`.
    fn value_at(&self, run: &RunRecord, figure: &str) -> Option<f64> {
        let values = if run.calibration { &self.calibration.values } else { &self.rounds };
        values
            .iter()
            .find(|v| v.round == run.round && v.arm == run.arm && v.figure == figure)
            .map(|v| v.value)
    }

    fn verdicts_text(&self) -> String {
        let coverage = self.verdicts.first().map_or(0.95, |v| v.coverage);
        let mut rows = vec![vec![
            "figure".to_string(),
            "A".to_string(),
            "B".to_string(),
            "B/A".to_string(),
            format!("interval ({}%)", chart::svg::trim_zeros(&format!("{:.2}", coverage * 100.0))),
            "verdict".to_string(),
        ]];
        for v in &self.verdicts {
            rows.push(vec![
                v.figure.clone(),
                value_text(v.a, &v.unit),
                value_text(v.b, &v.unit),
                ratio_text(v.ratio),
                interval_text(v.ratio_low, v.ratio_high),
                verdict_words(v),
            ]);
        }
        let mut out = table(&rows);
        if let Some(v) = self.verdicts.first() {
            let mut line = format!("verdicts of B against A on {}", v.rests_on);
            if v.detectable.is_finite() {
                let widest = self.verdicts.iter().map(|v| v.detectable).fold(f64::NAN, f64::max);
                let _ = write!(
                    line,
                    "; each could have seen a change of {} or more",
                    change_text(widest)
                );
            }
            let _ = writeln!(out, "{line}");
        }
        out
    }

    fn restored_text(&self) -> String {
        if let Some(why) = &self.restore_failed {
            return format!("NOT restored: {why}\n");
        }
        if self.restored_settings.is_empty() {
            return "restored: nothing to restore (no setting of the machine was changed)\n".into();
        }
        let words: Vec<String> =
            self.restored_settings.iter().map(|r| format!("{}={}", r.setting, r.value)).collect();
        format!("restored: {}\n", dedup_join(&words))
    }
}

/// `governor=schedutil` once, not once per cpufreq policy.
fn dedup_join(words: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for w in words {
        if !seen.contains(&w.as_str()) {
            seen.push(w);
        }
    }
    seen.join(" ")
}

/// Columns padded to their widest cell, two blanks apart.
fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c].saturating_sub(cell.chars().count());
            line.push_str(cell);
            line.push_str(&" ".repeat(pad + 2));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

impl RestoreRun {
    fn text(&self) -> String {
        match &self.journal {
            None => "nothing pending: no settings journal\n".into(),
            Some(j) => {
                let words: Vec<String> =
                    self.restored.iter().map(|r| format!("{}={}", r.setting, r.value)).collect();
                format!(
                    "restored what the A/B of pid {} (started {}) had changed: {}\n",
                    j.pid,
                    j.started,
                    dedup_join(&words)
                )
            }
        }
    }
}

/// The key of the stored metric of one side's values of `figure`.
pub fn side_metric(figure: &str, side: &str) -> Metric {
    Metric::new("ab_value", Unit::Count, Vec::new()).label("figure", figure).label("side", side)
}

impl ToMetrics for AbOutcome {
    fn to_metrics(&self) -> Vec<Metric> {
        let AbOutcome::Run(run) = self else { return Vec::new() };
        let mut out = Vec::new();
        for v in &run.verdicts {
            let unit = Unit::from_symbol(&v.unit).unwrap_or(Unit::Count);
            for (side, arm) in [("a", Side::A), ("b", Side::B)] {
                let mut m = side_metric(&v.figure, side);
                m.unit = unit;
                m.samples = run.values(&v.figure, arm);
                out.push(m);
            }
            out.push(
                Metric::new("ab_ratio", Unit::Ratio, vec![v.ratio]).label("figure", &v.figure),
            );
        }
        out
    }
}

impl experiment::Outcome for AbOutcome {
    /// The second is never stored: `--restore` measures nothing.
    const KINDS: &'static [&'static str] = &["ab", "ab --restore"];

    fn kind(&self) -> &'static str {
        match self {
            AbOutcome::Run(_) => Self::KINDS[0],
            AbOutcome::Restore(_) => Self::KINDS[1],
        }
    }

    fn interrupted(&self) -> bool {
        matches!(self, AbOutcome::Run(run) if run.interrupted)
    }

    fn worth_storing(&self) -> bool {
        matches!(self, AbOutcome::Run(run) if !run.runs.is_empty())
    }

    fn text(&self) -> String {
        match self {
            AbOutcome::Run(run) => run.text(),
            AbOutcome::Restore(r) => r.text(),
        }
    }

    fn failure(&self) -> Option<measure::Classified> {
        match self {
            AbOutcome::Run(run) => run.restore_failed.as_ref().map(|why| {
                measure::Classified::runtime(format!(
                    "settings not put back: {why}; run `platscope ab --restore`"
                ))
            }),
            AbOutcome::Restore(_) => None,
        }
    }

    fn parts(&self, _topology: &topo::Topology) -> Vec<Part> {
        let AbOutcome::Run(run) = self else { return Vec::new() };
        let mut part = Part::new(
            run.area,
            "chart-ab",
            &format!("A/B: {} against {}", run.side_text(true), run.side_text(false)),
            true,
        )
        .with_figure(Some(crate::chart::figure(run)));
        for v in &run.verdicts {
            part.headlines.push(
                Headline::new(
                    format!("{}, B against A", v.figure),
                    format!("{}× ({})", ratio_text(v.ratio), verdict_words(v)),
                    format!(
                        "interval {}–{}, {}",
                        ratio_text(v.ratio_low),
                        ratio_text(v.ratio_high),
                        v.rests_on
                    ),
                )
                .metric(side_metric(&v.figure, "b").key()),
            );
        }
        vec![part]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::judge::{calibrate, judge, FigureInfo};
    use experiment::Outcome as _;

    /// A made-up A/B: THP never against always, 6 rounds of a latency figure.
    pub(crate) fn example() -> AbRun {
        let info = FigureInfo {
            figure: "mem_latency{size=256.0 MiB}".into(),
            metric: "mem_latency{size=256.0 MiB}".into(),
            unit: "ns".into(),
        };
        let a = [281.0, 284.5, 279.9, 283.2, 282.4, 280.7];
        let b = [175.2, 176.0, 174.1, 175.9, 174.8, 176.4];
        let mut rounds = Vec::new();
        let mut runs = Vec::new();
        for r in 0..6 {
            for (i, (side, v)) in [(Side::B, b[r]), (Side::A, a[r])].into_iter().enumerate() {
                let at = 3.0 + r as f64 * 4.0 + i as f64 * 2.0;
                rounds.push(RoundValue {
                    round: r + 1,
                    arm: side,
                    figure: info.figure.clone(),
                    value: v,
                    at,
                });
                runs.push(RunRecord {
                    round: r + 1,
                    arm: side,
                    calibration: false,
                    at,
                    seconds: 1.9,
                    clock_ghz: Some(if r == 4 { 2.6 } else { 2.99 }),
                    clock_off: (r == 4).then_some(-0.13),
                    placement: None,
                    regime: None,
                    preload: None,
                });
            }
        }
        let cal_a = vec![282.0, 279.0, 283.0];
        let cal_b = vec![281.0, 284.0, 280.0];
        let calibration_figures = calibrate(&[(info.clone(), cal_a.clone(), cal_b.clone())], 6, 1);
        let values: Vec<RoundValue> = cal_a
            .iter()
            .zip(&cal_b)
            .enumerate()
            .flat_map(|(r, (x, y))| {
                [(Side::A1, *x), (Side::A2, *y)].map(|(arm, value)| RoundValue {
                    round: r + 1,
                    arm,
                    figure: info.figure.clone(),
                    value,
                    at: r as f64,
                })
            })
            .collect();
        AbRun {
            settings: Sides {
                a: [("thp".to_string(), "never".to_string())].into(),
                b: [("thp".to_string(), "always".to_string())].into(),
            },
            found: [("thp".to_string(), "madvise".to_string())].into(),
            workload: Workload::Command(
                ["mem", "latency", "--size", "256MiB", "--page", "thp", "--tlb-group", "0"]
                    .map(String::from)
                    .to_vec(),
            ),
            started: "2026-11-29T10:00:00Z".into(),
            rounds,
            runs,
            calibration: Calibration {
                rounds: 3,
                spread: Some(calibration_figures[0].spread),
                figures: calibration_figures,
                values,
            },
            verdicts: judge(&[(info, a.to_vec(), b.to_vec())], 1),
            method: Method {
                seed: 42,
                rounds_planned: 6,
                rounds_run: 6,
                looks: vec![6],
                looked_at: vec![6],
                precision: None,
                max_time_s: None,
                stopped: Stop::Rounds,
            },
            restored: true,
            restored_settings: vec![Restored {
                setting: "thp".into(),
                path: "/sys/kernel/mm/transparent_hugepage/enabled".into(),
                value: "madvise".into(),
            }],
            restore_failed: None,
            notes: Vec::new(),
            usual_placement: None,
            interrupted: false,
            area: Area::Memory,
        }
    }

    #[test]
    fn the_json_keeps_the_contract_and_reads_back() {
        let outcome = AbOutcome::Run(Box::new(example()));
        let json = outcome.json().unwrap();
        for key in ["settings", "rounds", "calibration", "verdicts", "restored"] {
            assert!(json.get(key).is_some(), "no {key}");
        }
        assert_eq!(json["settings"]["a"]["thp"], "never");
        assert_eq!(json["settings"]["b"]["thp"], "always");
        let round = &json["rounds"][0];
        for key in ["round", "arm", "figure", "value", "at"] {
            assert!(round.get(key).is_some(), "round has no {key}: {round}");
        }
        assert_eq!(round["arm"], "B");
        assert_eq!(json["calibration"]["rounds"], 3);
        assert!(json["calibration"]["spread"].as_f64().is_some());
        let v = &json["verdicts"][0];
        for key in ["figure", "unit", "a", "b", "ratio", "ratio_low", "ratio_high", "verdict"] {
            assert!(v.get(key).is_some(), "verdict has no {key}: {v}");
        }
        assert_eq!(v["verdict"], "faster");
        assert_eq!(json["restored"], true);
        let back = AbOutcome::from_stored("ab", json).unwrap();
        assert_eq!(back, outcome);
    }

    #[test]
    fn the_text_says_rounds_medians_ratio_verdict_and_what_was_restored() {
        let text = AbOutcome::Run(Box::new(example())).text();
        assert!(
            text.starts_with("A/B of `mem latency --size 256MiB --page thp --tlb-group 0`\n"),
            "{text}"
        );
        assert!(
            text.contains("  A: thp=never\n  B: thp=always\n  as found: thp=madvise"),
            "{text}"
        );
        assert!(text.contains("seed 42"), "{text}");
        assert!(text.contains("calibration (A/A, 3 rounds): run-to-run spread up to"), "{text}");
        // A run at another clock is shown as such.
        assert!(text.contains("← clock −13%"), "{text}");
        assert!(text.contains("281.7 ns") && text.contains("176.0 ns"), "{text}");
        assert!(text.contains("faster"), "{text}");
        assert!(text.contains("verdicts of B against A on 6 runs each"), "{text}");
        assert!(
            text.contains("stopped after the planned 6 rounds (one look at the end)"),
            "{text}"
        );
        assert!(text.ends_with("restored: thp=madvise\n"), "{text}");
    }

    #[test]
    fn metrics_keep_each_side_and_the_ratio() {
        let metrics = AbOutcome::Run(Box::new(example())).to_metrics();
        let keys: Vec<String> = metrics.iter().map(Metric::key).collect();
        assert_eq!(
            keys,
            [
                "ab_value{figure=mem_latency{size=256.0 MiB},side=a}",
                "ab_value{figure=mem_latency{size=256.0 MiB},side=b}",
                "ab_ratio{figure=mem_latency{size=256.0 MiB}}",
            ]
        );
        assert_eq!(metrics[0].samples.len(), 6);
        assert_eq!(metrics[0].unit, Unit::Nanoseconds);
        let restore = AbOutcome::Restore(RestoreRun { journal: None, restored: Vec::new() });
        assert!(!restore.worth_storing() && restore.to_metrics().is_empty());
        assert_eq!(restore.text(), "nothing pending: no settings journal\n");
    }
}
