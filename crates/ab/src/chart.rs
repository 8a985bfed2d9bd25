//! The A/B's report section: each figure's value run by run against the time the run started,
//! A and B in two colours (and two shapes), the A/A runs hollow, so a drift of the machine
//! shows as both sides moving together and a true difference as two bands apart; a ring marks
//! a run taken in another placement or at another core clock. Under the chart, the verdicts.

use std::fmt::Write as _;

use chart::svg::{self, esc, exact, px, Plot, ScaleKind};
use chart::Figure;

use crate::outcome::{interval_text, ratio_text, value_text, verdict_words, AbRun, RoundValue};
use crate::plan::Side;

/// One panel per figure; a run with more figures draws the first ones.
const MAX_PANELS: usize = 6;
const PANEL: Plot =
    Plot { width: 720.0, height: 230.0, left: 78.0, right: 20.0, top: 40.0, bottom: 52.0 };
const A_COLOUR: svg::Rgb = svg::SERIES[0];
const B_COLOUR: svg::Rgb = svg::SERIES[1];
const RING: &str = "#b0413e";

/// The section's figure.
pub fn figure(run: &AbRun) -> Figure {
    let names = run.figure_names();
    let shown = &names[..names.len().min(MAX_PANELS)];
    let height = PANEL.height * shown.len().max(1) as f64;
    let mut out =
        svg::open("chart-ab", PANEL.width, height, "Each run's figure against time, A and B");
    let last = run.rounds.iter().chain(&run.calibration.values).map(|r| r.at).fold(1.0, f64::max);
    for (i, name) in shown.iter().enumerate() {
        let _ = write!(out, "<g transform=\"translate(0 {})\">", px(PANEL.height * i as f64));
        panel(&mut out, run, name, last);
        out.push_str("</g>");
    }
    out.push_str("</svg>");
    let mut caption = String::from(
        "Each run's figure against the time it started, seconds into the A/B: A ● and B ■ in \
         random order each round, the A/A runs before them hollow ○. A drift of the machine \
         moves both sides together; a difference between the settings keeps them apart.",
    );
    if run.runs.iter().any(|r| r.other_regime(run.usual_placement).is_some()) {
        caption.push_str(
            " A red ring marks a run taken in another placement or at another core clock.",
        );
    }
    if names.len() > shown.len() {
        let _ = write!(caption, " The first {} of {} figures are drawn.", shown.len(), names.len());
    }
    Figure { svg: out, caption: esc(&caption), after: after(run) }
}

fn panel(out: &mut String, run: &AbRun, name: &str, last: f64) {
    let unit = run.verdicts.iter().find(|v| v.figure == name).map_or("", |v| v.unit.as_str());
    let points: Vec<&RoundValue> = run
        .calibration
        .values
        .iter()
        .chain(&run.rounds)
        .filter(|r| r.figure == name && r.value.is_finite())
        .collect();
    let lo = points.iter().map(|p| p.value).fold(f64::INFINITY, f64::min);
    let hi = points.iter().map(|p| p.value).fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() && hi > lo {
        let pad = (hi - lo) * 0.12;
        ((lo - pad).max(0.0), hi + pad)
    } else if lo.is_finite() {
        ((lo * 0.95).max(0.0), (lo * 1.05).max(1e-9))
    } else {
        (0.0, 1.0)
    };
    let x = PANEL.x_scale(ScaleKind::Linear, 0.0, svg::nice_max(last, 6));
    let y = PANEL.y_scale(ScaleKind::Linear, lo, hi);
    out.push_str(&PANEL.axes(&x, &x.ticks(6), &y, &y.ticks(4)));
    out.push_str(&PANEL.x_title("seconds into the A/B"));
    out.push_str(&PANEL.y_title(unit));
    let verdict = run.verdicts.iter().find(|v| v.figure == name);
    let title = match verdict {
        Some(v) => format!("{name}: B/A {} ({})", ratio_text(v.ratio), verdict_words(v)),
        None => name.to_string(),
    };
    let _ = write!(
        out,
        "<text class=\"panel-title\" x=\"{}\" y=\"16\">{}</text>",
        px(PANEL.left),
        esc(&title)
    );
    // The legend, on the title's line.
    let kx = PANEL.width - PANEL.right - 150.0;
    let _ = write!(
        out,
        "<circle cx=\"{}\" cy=\"12\" r=\"4\" fill=\"{a}\"/><text class=\"tick-label\" x=\"{}\" y=\"16\">A</text>\
         <rect x=\"{}\" y=\"8\" width=\"8\" height=\"8\" fill=\"{b}\"/><text class=\"tick-label\" x=\"{}\" y=\"16\">B</text>\
         <circle cx=\"{}\" cy=\"12\" r=\"4\" fill=\"#fff\" stroke=\"{a}\" stroke-width=\"1.5\"/><text class=\"tick-label\" x=\"{}\" y=\"16\">A/A</text>",
        px(kx),
        px(kx + 8.0),
        px(kx + 36.0),
        px(kx + 48.0),
        px(kx + 76.0),
        px(kx + 84.0),
        a = A_COLOUR.hex(),
        b = B_COLOUR.hex()
    );
    for p in points {
        let calibration = matches!(p.arm, Side::A1 | Side::A2);
        let record = run
            .runs
            .iter()
            .find(|r| r.round == p.round && r.arm == p.arm && r.calibration == calibration);
        let other = record.and_then(|r| r.other_regime(run.usual_placement));
        let (cx, cy) = (x.map(p.at), y.map(p.value));
        let phase = if calibration { "A/A round" } else { "round" };
        let tip = format!(
            "{}, {phase} {}: {} at {:.0} s{}",
            p.arm.name(),
            p.round,
            value_text(p.value, unit),
            p.at,
            other.as_deref().map(|w| format!(" ({w})")).unwrap_or_default()
        );
        let data = format!(
            "data-arm=\"{}\" data-value=\"{}\" data-at=\"{}\"",
            p.arm.name(),
            exact(p.value),
            exact(p.at)
        );
        if other.is_some() {
            let _ = write!(
                out,
                "<circle class=\"ab-other\" cx=\"{}\" cy=\"{}\" r=\"8\" fill=\"none\" stroke=\"{RING}\" stroke-width=\"1.5\"/>",
                px(cx),
                px(cy)
            );
        }
        let _ = match p.arm {
            Side::B => write!(
                out,
                "<rect class=\"ab-b\" x=\"{}\" y=\"{}\" width=\"8\" height=\"8\" fill=\"{}\" {data}><title>{}</title></rect>",
                px(cx - 4.0),
                px(cy - 4.0),
                B_COLOUR.hex(),
                esc(&tip)
            ),
            Side::A => write!(
                out,
                "<circle class=\"ab-a\" cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\" {data}><title>{}</title></circle>",
                px(cx),
                px(cy),
                A_COLOUR.hex(),
                esc(&tip)
            ),
            Side::A1 | Side::A2 => write!(
                out,
                "<circle class=\"ab-aa\" cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"#fff\" stroke=\"{}\" stroke-width=\"1.5\" {data}><title>{}</title></circle>",
                px(cx),
                px(cy),
                A_COLOUR.hex(),
                esc(&tip)
            ),
        };
    }
}

/// Under the chart: the settings, the verdicts as a table, how it stopped and what was
/// restored.
fn after(run: &AbRun) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<p class=\"placement\">A: <code>{}</code>; B: <code>{}</code>; workload <code>{}</code>.</p>",
        esc(&run.side_text(false)),
        esc(&run.side_text(true)),
        esc(&run.workload.describe())
    );
    out.push_str(
        "<table class=\"runs\"><tr><th>figure</th><th>A</th><th>B</th><th>B/A</th><th>interval</th><th>verdict</th><th>rests on</th></tr>",
    );
    for v in &run.verdicts {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&v.figure),
            esc(&value_text(v.a, &v.unit)),
            esc(&value_text(v.b, &v.unit)),
            ratio_text(v.ratio),
            interval_text(v.ratio_low, v.ratio_high),
            esc(&verdict_words(v)),
            esc(&v.rests_on)
        );
    }
    out.push_str("</table>");
    let mut notes = vec![run.stopped_text()];
    notes.extend(run.notes.iter().cloned());
    notes.push(if run.restored {
        if run.restored_settings.is_empty() {
            "No setting of the machine was changed.".to_string()
        } else {
            let words: Vec<String> = run
                .restored_settings
                .iter()
                .map(|r| format!("{}={}", r.setting, r.value))
                .collect();
            let mut seen: Vec<String> = Vec::new();
            for w in words {
                if !seen.contains(&w) {
                    seen.push(w);
                }
            }
            format!("Restored: {}.", seen.join(" "))
        }
    } else {
        format!("Not restored: {}.", run.restore_failed.as_deref().unwrap_or("unknown"))
    });
    out.push_str("<ul class=\"notes\">");
    for n in notes {
        let _ = write!(out, "<li>{}</li>", esc(&n));
    }
    out.push_str("</ul>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::tests::example;

    #[test]
    fn both_sides_are_drawn_against_time_with_the_verdicts_under_them() {
        let run = example();
        let f = figure(&run);
        assert!(f.svg.starts_with("<svg id=\"chart-ab\""), "{}", f.svg);
        assert_eq!(f.svg.matches("class=\"ab-a\"").count(), 6);
        assert_eq!(f.svg.matches("class=\"ab-b\"").count(), 6);
        assert_eq!(f.svg.matches("class=\"ab-aa\"").count(), 6);
        // The run at another clock carries a ring and says why.
        assert_eq!(f.svg.matches("class=\"ab-other\"").count(), 2);
        assert!(f.svg.contains("(clock −13%)"), "{}", f.svg);
        assert!(f.caption.contains("red ring"), "{}", f.caption);
        assert!(f.after.contains("<td>faster</td>"), "{}", f.after);
        assert!(f.after.contains("Restored: thp=madvise."), "{}", f.after);
        // Drawn from the stored outcome alone: the same twice.
        assert_eq!(figure(&run), f);
    }
}
