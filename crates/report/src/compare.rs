//! Two reports side by side: the comparison a page shows under its headline figures
//! (`report --baseline REF`), built by `suite::compare` and drawn here.

use std::fmt::Write as _;

use chart::svg::{esc, fmt3};
use measure::placement::FAR_FACTOR;
use measure::verdict::Verdict;
use serde::{Deserialize, Serialize};

/// One headline figure on both machines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureComparison {
    /// The figure's name as the page shows it.
    pub figure: String,
    pub unit: String,
    /// Medians.
    pub this: f64,
    pub baseline: f64,
    /// `this / baseline`.
    pub ratio: f64,
    pub verdict: Verdict,
    /// The Mann–Whitney U test's two-sided p-value.
    pub p_value: f64,
    /// How many samples each side's figure rests on (`untested` when too few to test).
    #[serde(default)]
    pub this_samples: usize,
    #[serde(default)]
    pub baseline_samples: usize,
    /// The relative difference of medians below which a tested verdict is `same`: the figure's
    /// run-to-run noise on earlier reports of the same host, or the default when none.
    #[serde(default = "default_min_effect")]
    pub min_effect: f64,
    /// For `placement differs`: how the two runs' probes differ, in one clause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
    /// The labels in which the two runs' metrics differ (the ISA a trial picked, the sweep's
    /// size on another machine), in one clause; absent when measured alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_as: Option<String>,
}

fn default_min_effect() -> f64 {
    measure::verdict::MIN_EFFECT
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
    /// How many earlier reports of the two hosts calibrated the minimum effects (0: the
    /// default [`measure::verdict::MIN_EFFECT`] everywhere).
    #[serde(default)]
    pub calibrated_from: usize,
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
    let words = f.verdict.words(f.this_samples, f.baseline_samples);
    let mark = match &f.placement {
        Some(why) if f.verdict == Verdict::PlacementDiffers => format!("{symbol} {words}: {why}"),
        _ => format!("{symbol} {words}"),
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
    out.push_str(
        "<table class=\"facts-table comparison\"><thead><tr><th>figure</th><th>this</th>\
         <th>baseline</th><th>ratio</th><th>min effect</th><th>verdict</th></tr></thead><tbody>",
    );
    for f in &c.comparison {
        let _ = write!(
            out,
            "<tr class=\"verdict-{v}\"><td>{}</td><td class=\"data\" data-value=\"{}\">{} {u}</td>\
             <td class=\"data\" data-value=\"{}\">{} {u}</td><td>{}</td><td>±{}%</td><td>{}</td></tr>",
            esc(&f.figure),
            f.this,
            fmt3(f.this),
            f.baseline,
            fmt3(f.baseline),
            fmt3(f.ratio),
            fmt3(f.min_effect * 100.0),
            esc(&verdict_mark(f)),
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

/// How the verdicts were reached, in one paragraph: the method and where its minimum effects
/// come from.
fn method(c: &ReportComparison) -> String {
    let calibration = if c.calibrated_from == 0 {
        format!(
            "the default {}% (no earlier reports of either host to calibrate on: run the report \
             a few more times, or bench/verdict_calibration.sh)",
            fmt3(measure::verdict::MIN_EFFECT * 100.0)
        )
    } else {
        format!(
            "each figure's largest difference between two of {} earlier reports of the same \
             host, at least {}%",
            c.calibrated_from,
            fmt3(measure::verdict::MIN_EFFECT * 100.0)
        )
    };
    format!(
        "Verdicts: the ratio of medians must differ from 1 by more than the minimum effect — \
         {calibration} — and the stored samples by a two-sided Mann–Whitney U test at p < 0.01; \
         otherwise same. A figure with too few samples for that test ever to reach p < 0.01 (5 \
         against 5 at the least for equal counts; one sample never) is untested. A figure \
         that depends on where the CPUs sit, taken in different placements by the two runs (a \
         cache line's round trip between the same CPUs {FAR_FACTOR}× or more apart), gets no \
         verdict: placement differs (docs/comparing.md)."
    )
}

/// The comparison as the terminal summary prints it.
pub fn comparison_text(c: &ReportComparison) -> String {
    let mut out = format!("compared with {}:\n", c.baseline);
    for f in &c.comparison {
        let _ = writeln!(
            out,
            "  {:<40} {:>10} {:>10} {:<5} {:>6} ±{:>4}%  {}",
            f.figure,
            fmt3(f.this),
            fmt3(f.baseline),
            f.unit,
            fmt3(f.ratio),
            fmt3(f.min_effect * 100.0),
            match &f.placement {
                Some(why) if f.verdict == Verdict::PlacementDiffers => {
                    format!("placement differs: {why}")
                }
                _ => f.verdict.words(f.this_samples, f.baseline_samples),
            } + &f.measured_as.as_ref().map_or(String::new(), |how| format!(" ({how})"))
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
            figure: name.into(),
            unit: "MB/s".into(),
            this: 410.0,
            baseline: 300.0,
            ratio: 410.0 / 300.0,
            verdict,
            p_value: 1.0,
            this_samples: samples.0,
            baseline_samples: samples.1,
            min_effect: 0.1,
            placement: None,
            measured_as: None,
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
        };
        let html = comparison_html(&c);
        assert!(html.contains("<tr class=\"verdict-untested\">"), "{html}");
        assert!(html.contains("<td>? untested (1 vs 3 samples)</td>"), "{html}");
        assert!(html.contains("<td>▲ faster</td>"), "{html}");
        let text = comparison_text(&c);
        let line = text.lines().find(|l| l.contains("Compression")).expect("the figure's line");
        assert!(line.ends_with("untested (1 vs 3 samples)"), "{text}");
        assert!(text.lines().any(|l| l.contains("Bandwidth") && l.ends_with("faster")), "{text}");
        // The JSON names the verdict and both counts.
        let json = serde_json::to_value(&c.comparison[0]).expect("serialises");
        assert_eq!(json["verdict"], "untested");
        assert_eq!(
            (json["this_samples"].as_u64(), json["baseline_samples"].as_u64()),
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
        };
        let html = comparison_html(&c);
        assert!(
            html.contains("<td>▲ faster (measured as isa avx512, baseline avx2)</td>"),
            "{html}"
        );
        let text = comparison_text(&c);
        assert!(text.lines().any(|l| l.ends_with("faster (isa avx512, baseline avx2)")), "{text}");
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
        };
        let html = comparison_html(&c);
        assert!(html.contains("<tr class=\"verdict-placement-differs\">"), "{html}");
        assert!(html.contains("<td>≠ placement differs: CPUs 0↔1"), "{html}");
        let text = comparison_text(&c);
        let line = text.lines().find(|l| l.contains("Bandwidth")).expect("the figure's line");
        assert!(line.ends_with("in the baseline"), "{text}");
        assert!(!line.contains(" same") && !line.contains("slower"), "{line}");
        let json = serde_json::to_value(&c.comparison[0]).expect("serialises");
        assert_eq!(json["verdict"], "placement-differs");
        assert_eq!(json["placement"], why);
    }
}
