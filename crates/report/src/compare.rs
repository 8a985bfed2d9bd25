//! Two reports side by side: the comparison a page shows under its headline figures
//! (`report --baseline REF`), built by `suite::compare` and drawn here.

use std::fmt::Write as _;

use chart::svg::{esc, fmt3};
use measure::placement::FAR_FACTOR;
use measure::verdict::{Level, Verdict};
use serde::{Deserialize, Serialize};

/// One headline figure on both machines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureComparison {
    /// The figure's name as the page shows it.
    pub figure: String,
    pub unit: String,
    /// Each side's figure: the median of its replicates.
    pub this: f64,
    pub baseline: f64,
    /// `this / baseline`: the ratio of the replicates' geometric means.
    pub ratio: f64,
    /// The ratio's interval ([`measure::verdict::CONFIDENCE`]).
    #[serde(default = "nan")]
    pub ratio_low: f64,
    #[serde(default = "nan")]
    pub ratio_high: f64,
    pub verdict: Verdict,
    /// The two-sided p-value of this figure alone, and adjusted across the page (Holm).
    pub p_value: f64,
    #[serde(default)]
    pub adjusted_p: f64,
    /// How many replicates each side's figure rests on, and what one is.
    #[serde(default)]
    pub this_replicates: usize,
    #[serde(default)]
    pub baseline_replicates: usize,
    #[serde(default)]
    pub level: Level,
    /// The replicates themselves (each round's median), this side and the baseline's.
    #[serde(default)]
    pub this_values: Vec<f64>,
    #[serde(default)]
    pub baseline_values: Vec<f64>,
    /// The run-to-run noise added to each side below the run level, and how many earlier runs
    /// measured it (0: assumed).
    #[serde(default)]
    pub run_noise: f64,
    #[serde(default)]
    pub run_noise_runs: usize,
    /// The smallest relative change this comparison could have called at its spread.
    #[serde(default = "nan")]
    pub detectable: f64,
    /// What the verdict rests on, in words ("3 rounds each; run-to-run noise 10% assumed").
    #[serde(default)]
    pub rests_on: String,
    /// Both sides' core clocks (GHz, median over the rounds), when measured.
    #[serde(default)]
    pub this_clock_ghz: Option<f64>,
    #[serde(default)]
    pub baseline_clock_ghz: Option<f64>,
    /// For a figure bound by the core clock: the same figure in cycles, judged too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<CyclesComparison>,
    /// When the clock explains the change (or hides one), in one clause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_note: Option<String>,
    /// For `placement differs`: how the two runs' probes differ, in one clause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
    /// The labels in which the two runs' metrics differ (the ISA a trial picked, the sweep's
    /// size on another machine), in one clause; absent when measured alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_as: Option<String>,
}

/// A clock-bound figure in cycles (ns × GHz, or a rate ÷ GHz), round by round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CyclesComparison {
    /// "cycles" or "per GHz".
    pub unit: String,
    pub this: f64,
    pub baseline: f64,
    pub ratio: f64,
    pub ratio_low: f64,
    pub ratio_high: f64,
    pub verdict: Verdict,
}

fn nan() -> f64 {
    f64::NAN
}

impl FigureComparison {
    /// A figure with its two values and verdict, nothing else known yet (no interval, no
    /// replicates): callers fill in what they have.
    pub fn new(figure: &str, unit: &str, this: f64, baseline: f64, verdict: Verdict) -> Self {
        Self {
            figure: figure.into(),
            unit: unit.into(),
            this,
            baseline,
            ratio: this / baseline,
            ratio_low: f64::NAN,
            ratio_high: f64::NAN,
            verdict,
            p_value: 1.0,
            adjusted_p: 1.0,
            this_replicates: 0,
            baseline_replicates: 0,
            level: Level::Rounds,
            this_values: Vec::new(),
            baseline_values: Vec::new(),
            run_noise: 0.0,
            run_noise_runs: 0,
            detectable: f64::NAN,
            rests_on: String::new(),
            this_clock_ghz: None,
            baseline_clock_ghz: None,
            cycles: None,
            clock_note: None,
            placement: None,
            measured_as: None,
        }
    }

    /// The ratio with its interval: `0.968 [0.91–1.03]`.
    pub fn ratio_text(&self) -> String {
        if self.ratio_low.is_finite() && self.ratio_high.is_finite() {
            format!("{} [{}–{}]", fmt3(self.ratio), fmt3(self.ratio_low), fmt3(self.ratio_high))
        } else {
            fmt3(self.ratio)
        }
    }

    /// The spread of this side's replicates: `3 rounds 96.1–98.4`.
    pub fn spread_text(values: &[f64], level: Level) -> String {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if finite.len() < 2 {
            return String::new();
        }
        let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!("{} {} {}–{}", finite.len(), level.plural(), fmt3(lo), fmt3(hi))
    }
}

/// A machine setting that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingDiff {
    pub setting: String,
    pub this: String,
    pub baseline: String,
}

/// This report against a baseline report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportComparison {
    /// Which run the baseline is, in words (host, run id, when, where).
    pub baseline: String,
    pub comparison: Vec<FigureComparison>,
    pub config_diff: Vec<SettingDiff>,
    /// The baseline machine's facts, for the Machine section's side-by-side table.
    #[serde(default)]
    pub baseline_machine: Vec<topo::Fact>,
    /// The baseline's own sections as its page drew them, (chart id, HTML), each shown beside
    /// this machine's section of the same id ([`crate::html::baseline_sections`]).
    #[serde(default)]
    pub baseline_sections: Vec<(String, String)>,
    /// How many earlier reports of the two hosts measured the run-to-run noise (0: assumed,
    /// [`measure::verdict::ASSUMED_RUN_NOISE`] or a figure's own).
    #[serde(default)]
    pub calibrated_from: usize,
    /// The core clock of each round, this report's and the baseline's (GHz).
    #[serde(default)]
    pub this_clock_ghz: Vec<Option<f64>>,
    #[serde(default)]
    pub baseline_clock_ghz: Vec<Option<f64>>,
    /// Whether the two reports are of one host (a clock change is then the host's, not the
    /// figure's).
    #[serde(default)]
    pub same_host: bool,
}

/// The median of the measured clocks, and their range, in one clause: `3.05 GHz (3.01–3.06,
/// 3 rounds)`; `None` when none was measured.
pub fn clock_text(clocks: &[Option<f64>]) -> Option<String> {
    let mut measured: Vec<f64> =
        clocks.iter().flatten().copied().filter(|v| v.is_finite()).collect();
    if measured.is_empty() {
        return None;
    }
    measured.sort_by(f64::total_cmp);
    let median = measured[measured.len() / 2];
    let (lo, hi) = (measured[0], measured[measured.len() - 1]);
    Some(if measured.len() == 1 {
        format!("{} GHz", fmt3(median))
    } else {
        format!("{} GHz ({}–{}, {} rounds)", fmt3(median), fmt3(lo), fmt3(hi), measured.len())
    })
}

/// The verdict as the page marks it: a word and a symbol, so it reads without colour; for
/// `untested`, with how many samples each side had.
fn verdict_mark(f: &FigureComparison) -> String {
    let symbol = match f.verdict {
        Verdict::Faster => "▲",
        Verdict::Slower => "▼",
        Verdict::Same => "=",
        Verdict::Untested => "?",
        Verdict::PlacementDiffers => "≠",
    };
    let words = f.verdict.words(f.this_replicates, f.baseline_replicates);
    let mark = match &f.placement {
        Some(why) if f.verdict == Verdict::PlacementDiffers => format!("{symbol} {words}: {why}"),
        _ => format!("{symbol} {words}"),
    };
    let mark = match &f.clock_note {
        Some(note) => format!("{mark} ({note})"),
        None => mark,
    };
    match &f.measured_as {
        Some(how) => format!("{mark} (measured as {how})"),
        None => mark,
    }
}

/// The comparison section: figures with ratio and verdict, then the settings that differ.
pub fn comparison_html(c: &ReportComparison) -> String {
    let mut out = String::from("<section id=\"sec-comparison\" class=\"wide\">");
    let _ = write!(out, "<h2>Compared with {}</h2>", esc(&c.baseline));
    if let Some(clocks) = clocks_line(c) {
        let _ = write!(out, "<p class=\"clock\">{}</p>", esc(&clocks));
    }
    out.push_str(
        "<table class=\"facts-table comparison\"><thead><tr><th>figure</th><th>this</th>\
         <th>baseline</th><th>ratio [95% interval]</th><th>verdict</th><th>rests on</th></tr>\
         </thead><tbody>",
    );
    for f in &c.comparison {
        let spread = |values: &[f64]| {
            let s = FigureComparison::spread_text(values, f.level);
            if s.is_empty() {
                String::new()
            } else {
                format!("<br><small>{}</small>", esc(&s))
            }
        };
        let _ = write!(
            out,
            "<tr class=\"verdict-{v}\"><td>{}</td><td class=\"data\" data-value=\"{}\">{} {u}{}</td>\
             <td class=\"data\" data-value=\"{}\">{} {u}{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&f.figure),
            f.this,
            fmt3(f.this),
            spread(&f.this_values),
            f.baseline,
            fmt3(f.baseline),
            spread(&f.baseline_values),
            esc(&f.ratio_text()),
            esc(&verdict_mark(f)),
            esc(&rests_on(f)),
            v = f.verdict.slug(),
            u = esc(&f.unit),
        );
    }
    out.push_str("</tbody></table>");
    let _ = write!(out, "<p class=\"how\">{}</p>", esc(&method(c)));
    if c.config_diff.is_empty() {
        out.push_str("<p>No machine setting differs.</p>");
    } else {
        out.push_str(
            "<h3>Settings that differ</h3><table class=\"facts-table\"><thead><tr><th>setting</th>\
             <th>this</th><th>baseline</th></tr></thead><tbody>",
        );
        for d in &c.config_diff {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&d.setting),
                esc(&d.this),
                esc(&d.baseline)
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</section>\n");
    out
}

/// What a figure's verdict rests on, with the smallest change it could have seen.
fn rests_on(f: &FigureComparison) -> String {
    if f.detectable.is_finite() {
        format!("{}; could see ±{}%", f.rests_on, fmt3(f.detectable * 100.0))
    } else {
        f.rests_on.clone()
    }
}

/// Both sides' core clocks in one line, when either was measured.
fn clocks_line(c: &ReportComparison) -> Option<String> {
    let this = clock_text(&c.this_clock_ghz);
    let base = clock_text(&c.baseline_clock_ghz);
    if this.is_none() && base.is_none() {
        return None;
    }
    let unknown = || "not measured".to_string();
    Some(format!(
        "Core clock: this {}, baseline {}.",
        this.unwrap_or_else(unknown),
        base.unwrap_or_else(unknown)
    ))
}

/// How the verdicts were reached, in one paragraph.
fn method(c: &ReportComparison) -> String {
    let noise = if c.calibrated_from == 0 {
        format!(
            "assumed ({:.0}% of a figure unless it is known to swing more; no three earlier \
             reports of the host to measure it on: run the report a few more times)",
            measure::verdict::ASSUMED_RUN_NOISE * 100.0
        )
    } else {
        format!("measured on {} earlier reports of the same host", c.calibrated_from)
    };
    format!(
        "Verdicts: each figure's replicates are its rounds, taken through the whole run (each \
         the step done again from a fresh start), never the samples inside one run alone. The \
         ratio is that of the rounds' geometric means, with a {conf}% Welch t-interval on the \
         log scale that adds each side's run-to-run noise — {noise}. A figure is faster or \
         slower only when its p-value, adjusted across the page's {k} tested figures by \
         Holm's method, is below {alpha}: a quiet pair of reports shows nothing, at most a \
         {alpha} chance of any call. Figures bound by the core clock are judged in cycles too; \
         when only the clock moved, the verdict says so. Too few rounds: untested. A figure \
         that depends on where the CPUs sit, taken in different placements (a cache line's \
         round trip between the same CPUs {FAR_FACTOR}× or more apart), gets no verdict: \
         placement differs (docs/comparing.md).",
        conf = (measure::verdict::CONFIDENCE * 100.0).round(),
        k = c
            .comparison
            .iter()
            .filter(|f| f.p_value.is_finite() && f.detectable.is_finite())
            .count(),
        alpha = measure::verdict::ALPHA,
    )
}

/// The comparison as the terminal summary prints it.
pub fn comparison_text(c: &ReportComparison) -> String {
    let mut out = format!("compared with {}:\n", c.baseline);
    if let Some(clocks) = clocks_line(c) {
        let _ = writeln!(out, "  {clocks}");
    }
    for f in &c.comparison {
        let verdict = match &f.placement {
            Some(why) if f.verdict == Verdict::PlacementDiffers => {
                format!("placement differs: {why}")
            }
            _ => f.verdict.words(f.this_replicates, f.baseline_replicates),
        };
        let notes: Vec<&str> =
            [f.clock_note.as_deref(), f.measured_as.as_deref()].into_iter().flatten().collect();
        let notes =
            if notes.is_empty() { String::new() } else { format!(" ({})", notes.join("; ")) };
        let _ = writeln!(
            out,
            "  {:<40} {:>10} {:>10} {:<5} {:<22} {}{}  [{}]",
            f.figure,
            fmt3(f.this),
            fmt3(f.baseline),
            f.unit,
            f.ratio_text(),
            verdict,
            notes,
            rests_on(f),
        );
    }
    let _ = writeln!(out, "  {}", method(c));
    for d in &c.config_diff {
        let _ = writeln!(out, "  differs: {}: {} (baseline {})", d.setting, d.this, d.baseline);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(name: &str, verdict: Verdict, samples: (usize, usize)) -> FigureComparison {
        FigureComparison {
            ratio_low: 1.2,
            ratio_high: 1.5,
            this_replicates: samples.0,
            baseline_replicates: samples.1,
            run_noise: 0.1,
            detectable: 0.2,
            rests_on: format!(
                "{} vs {} rounds; run-to-run noise 10% assumed",
                samples.0, samples.1
            ),
            ..FigureComparison::new(name, "MB/s", 410.0, 300.0, verdict)
        }
    }

    #[test]
    fn an_untested_figure_says_so_with_its_sample_counts() {
        let c = ReportComparison {
            baseline: "run 7".into(),
            comparison: vec![
                figure("Compression", Verdict::Untested, (1, 3)),
                figure("Bandwidth", Verdict::Faster, (20, 20)),
            ],
            config_diff: Vec::new(),
            baseline_machine: Vec::new(),
            baseline_sections: Vec::new(),
            calibrated_from: 0,
            this_clock_ghz: Vec::new(),
            baseline_clock_ghz: Vec::new(),
            same_host: true,
        };
        let html = comparison_html(&c);
        assert!(html.contains("<tr class=\"verdict-untested\">"), "{html}");
        assert!(html.contains("<td>? untested (1 vs 3 samples)</td>"), "{html}");
        assert!(html.contains("<td>▲ faster</td>"), "{html}");
        let text = comparison_text(&c);
        let line = text.lines().find(|l| l.contains("Compression")).expect("the figure's line");
        assert!(line.contains(" untested (1 vs 3 samples)  ["), "{text}");
        assert!(
            text.lines().any(|l| l.contains("Bandwidth") && l.contains(" faster  [")),
            "{text}"
        );
        assert!(line.contains("1.37 [1.20–1.50]"), "the ratio with its interval: {line}");
        // The JSON names the verdict and both counts.
        let json = serde_json::to_value(&c.comparison[0]).expect("serialises");
        assert_eq!(json["verdict"], "untested");
        assert_eq!(
            (json["this_replicates"].as_u64(), json["baseline_replicates"].as_u64()),
            (Some(1), Some(3))
        );
        assert!(json.get("placement").is_none(), "no placement key unless it differs");
        assert!(json.get("measured_as").is_none(), "no measured_as key unless labels differ");
    }

    #[test]
    fn a_figure_measured_another_way_says_how() {
        let c = ReportComparison {
            baseline: "run 7".into(),
            comparison: vec![FigureComparison {
                measured_as: Some("isa avx512, baseline avx2".into()),
                ..figure("Bandwidth (read), 1 thread(s)", Verdict::Faster, (10, 10))
            }],
            config_diff: Vec::new(),
            baseline_machine: Vec::new(),
            baseline_sections: Vec::new(),
            calibrated_from: 0,
            this_clock_ghz: Vec::new(),
            baseline_clock_ghz: Vec::new(),
            same_host: true,
        };
        let html = comparison_html(&c);
        assert!(
            html.contains("<td>▲ faster (measured as isa avx512, baseline avx2)</td>"),
            "{html}"
        );
        let text = comparison_text(&c);
        assert!(text.lines().any(|l| l.contains("faster (isa avx512, baseline avx2)")), "{text}");
    }

    #[test]
    fn a_figure_taken_in_another_placement_says_so_and_how() {
        let why = "CPUs 0↔1 handed a cache line over in 80–88 ns here, 360–410 ns in the baseline";
        let c = ReportComparison {
            baseline: "run 7".into(),
            comparison: vec![FigureComparison {
                placement: Some(why.into()),
                ..figure("Bandwidth", Verdict::PlacementDiffers, (20, 20))
            }],
            config_diff: Vec::new(),
            baseline_machine: Vec::new(),
            baseline_sections: Vec::new(),
            calibrated_from: 0,
            this_clock_ghz: Vec::new(),
            baseline_clock_ghz: Vec::new(),
            same_host: true,
        };
        let html = comparison_html(&c);
        assert!(html.contains("<tr class=\"verdict-placement-differs\">"), "{html}");
        assert!(html.contains("<td>≠ placement differs: CPUs 0↔1"), "{html}");
        let text = comparison_text(&c);
        let line = text.lines().find(|l| l.contains("Bandwidth")).expect("the figure's line");
        assert!(line.contains("in the baseline  ["), "{text}");
        assert!(!line.contains(" same") && !line.contains("slower"), "{line}");
        let json = serde_json::to_value(&c.comparison[0]).expect("serialises");
        assert_eq!(json["verdict"], "placement-differs");
        assert_eq!(json["placement"], why);
    }

    #[test]
    fn both_clocks_and_the_clock_note_are_shown() {
        let c = ReportComparison {
            baseline: "run 7".into(),
            comparison: vec![FigureComparison {
                clock_note: Some("core clock −12%: the host's frequency, not this figure".into()),
                this_values: vec![1.30, 1.31, 1.29],
                ..figure("L1 latency", Verdict::Same, (3, 3))
            }],
            config_diff: Vec::new(),
            baseline_machine: Vec::new(),
            baseline_sections: Vec::new(),
            calibrated_from: 0,
            this_clock_ghz: vec![Some(2.69), Some(2.70), None],
            baseline_clock_ghz: vec![Some(3.06)],
            same_host: true,
        };
        let text = comparison_text(&c);
        assert!(
            text.contains("Core clock: this 2.70 GHz (2.69–2.70, 2 rounds), baseline 3.06 GHz."),
            "{text}"
        );
        assert!(text.contains("same (core clock −12%"), "{text}");
        let html = comparison_html(&c);
        assert!(html.contains("3 rounds 1.29–1.31"), "{html}");
        assert!(html.contains("could see ±20.0%"), "{html}");
    }
}
