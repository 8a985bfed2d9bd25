//! (f) SLB per worker: a bar per worker, grouped by worker count (left panel) and by memory
//! policy (right panel), with the policies that could not run listed under the chart.

use std::fmt::Write as _;

use crate::slb::{SlbResult, SlbWorkerResult};

use super::{placement_text, whisker_capped, Figure, CLIPPED};
use chart::svg::{self, esc, exact, fmt3, px, Plot, ScaleKind};

/// One group of bars: its label and the run (or why there is none).
struct Group<'a> {
    label: String,
    panel: usize,
    run: Result<&'a SlbResult, &'a str>,
}

fn skipped_reason(why: &str) -> &str {
    let trimmed = why.trim();
    for prefix in ["skipped: ", "skipped - ", "skipped "] {
        if let Some(rest) = trimmed.strip_prefix(prefix) {
            return rest;
        }
    }
    trimmed
}

/// The SLB per worker as chart `id`: `scaling` (the same work at 1, 2, 4 … workers) in the
/// left panel, `policies` (a run or why it was skipped, per placement) in the right one.
pub fn slb(
    id: &str,
    scaling: &[SlbResult],
    policies: &[(String, Result<SlbResult, String>)],
) -> Option<Figure> {
    let mut groups: Vec<Group<'_>> = Vec::new();
    for r in scaling {
        let n = r.workers.len();
        groups.push(Group {
            label: format!("{n} worker{}", if n == 1 { "" } else { "s" }),
            panel: 0,
            run: Ok(r),
        });
    }
    for (name, outcome) in policies {
        groups.push(Group {
            label: name.clone(),
            panel: 1,
            run: outcome.as_ref().map_err(|why| skipped_reason(why)),
        });
    }
    let bars: usize = groups.iter().map(|g| g.run.map_or(1, |r| r.workers.len().max(1))).sum();
    if groups.iter().all(|g| g.run.is_err()) {
        return None;
    }
    let value_top = groups
        .iter()
        .filter_map(|g| g.run.ok())
        .flat_map(|r| r.workers.iter())
        .map(|w| {
            let ns = w.ns_per_op();
            w.batches.as_ref().map_or(0.0, |b| b.p99.min(2.0 * ns)).max(ns)
        })
        .fold(0.0, f64::max);
    let plot =
        Plot { width: 1200.0, height: 430.0, left: 64.0, right: 20.0, top: 62.0, bottom: 70.0 };
    let y = plot.y_scale(ScaleKind::Linear, 0.0, svg::nice_max(value_top, 6));
    let mut out = svg::open(id, plot.width, plot.height, "SLB nanoseconds per store, per worker");
    out.push_str(&plot.axes(&category_x(&plot), &[], &y, &y.ticks(6)));
    // Layout: a slot per bar, a gap slot after each group and between the panels; a group is
    // at least as wide as its label, so a crowded machine (64 workers) stays legible.
    let panels_used = usize::from(groups.iter().any(|g| g.panel == 0))
        + usize::from(groups.iter().any(|g| g.panel == 1));
    let panel_gap = if panels_used == 2 { 1.0 } else { 0.0 };
    let label_px = |g: &Group<'_>| text_px(&g.label, 12.5) + 10.0;
    let bars_in = |g: &Group<'_>| g.run.map_or(1, |r| r.workers.len().max(1)) as f64;
    let width = plot.x1() - plot.x0();
    // Gaps (after each group, between the panels, half a one in front) are at least 14 px.
    let gaps = groups.len() as f64 + panel_gap + 0.5;
    let mut slot = width / (bars as f64 + gaps);
    for _ in 0..8 {
        let gap = slot.max(14.0);
        let (mut bar_units, mut label_width) = (0.0, 0.0);
        for g in &groups {
            if bars_in(g) * slot >= label_px(g) {
                bar_units += bars_in(g);
            } else {
                label_width += label_px(g);
            }
        }
        slot = ((width - gaps * gap - label_width) / bar_units.max(1.0)).max(0.5);
    }
    let slot = slot.min(70.0);
    let gap = slot.max(14.0);
    let bar_w = slot * 0.82;
    let mut cursor = plot.x0() + gap / 2.0;
    let mut panels: Vec<(usize, f64, f64)> = Vec::new();
    let mut max_workers = 0;
    for g in &groups {
        match panels.last_mut() {
            Some(last) if last.0 == g.panel => {}
            Some(last) => {
                last.2 = cursor - gap;
                let _ = write!(
                    out,
                    "<line class=\"divider\" x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\"/>",
                    px(plot.y1() - 30.0),
                    px(plot.y0() + 50.0),
                    x = px(cursor)
                );
                cursor += gap;
                panels.push((g.panel, cursor, cursor));
            }
            None => panels.push((g.panel, cursor, cursor)),
        }
        let group_w = (bars_in(g) * slot).max(label_px(g));
        let centre = cursor + group_w / 2.0;
        let note = match g.run {
            Ok(r) => {
                max_workers = max_workers.max(r.workers.len());
                let mut bx = centre - r.workers.len() as f64 * slot / 2.0;
                for (k, w) in r.workers.iter().enumerate() {
                    out.push_str(&slb_bar(w, k, &g.label, (bx, slot, bar_w), &y, plot.y0()));
                    bx += slot;
                }
                let s = r.summary();
                if r.workers.len() > 1 {
                    vec![
                        format!("median {} · spread {}%", fmt3(s.median_ns), fmt3(s.spread_pct)),
                        format!("spread {}%", fmt3(s.spread_pct)),
                    ]
                } else {
                    vec![format!("{} ns", fmt3(s.median_ns))]
                }
            }
            Err(_) => vec!["skipped".to_string()],
        };
        let _ = write!(
            out,
            "<text class=\"group-label\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            px(plot.y0() + 20.0),
            esc(&g.label),
            x = px(centre),
        );
        // The longest note that fits under the group.
        if let Some(note) = note.iter().find(|n| text_px(n, 11.5) <= group_w + gap * 0.8) {
            let _ = write!(
                out,
                "<text class=\"group-note\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                px(plot.y0() + 36.0),
                esc(note),
                x = px(centre),
            );
        }
        cursor += group_w + gap;
        if let Some(last) = panels.last_mut() {
            last.2 = cursor - gap;
        }
    }
    for (i, &(panel, x0, _)) in panels.iter().enumerate() {
        let titles: &[&str] = if panel == 0 {
            &["same work per worker, more workers", "more workers"]
        } else {
            &["one worker per CPU under each memory policy", "memory policy"]
        };
        // A title may run past its panel, up to where the next one's title starts.
        let room = panels.get(i + 1).map_or(plot.x1(), |next| next.1 - 12.0) - x0;
        let title = titles.iter().find(|t| text_px(t, 13.0) <= room).unwrap_or(&titles[1]);
        let _ = write!(
            out,
            "<text class=\"panel-title\" x=\"{}\" y=\"{}\">{}</text>",
            px(x0),
            px(plot.y1() - 22.0),
            esc(title)
        );
    }
    // Worker colour legend, top right; past eight workers the colours repeat.
    if max_workers <= svg::SERIES.len() {
        for k in 0..max_workers {
            let lx = plot.x1() - (max_workers - k) as f64 * 78.0;
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"5\" width=\"10\" height=\"10\" fill=\"{}\"/><text class=\"tick-label\" x=\"{}\" y=\"14\">worker {k}</text>",
                px(lx),
                svg::SERIES[k].hex(),
                px(lx + 14.0),
            );
        }
    } else {
        let _ = write!(
            out,
            "<text class=\"tick-label\" x=\"{}\" y=\"14\" text-anchor=\"end\">bars in worker order; colours repeat every {} workers</text>",
            px(plot.x1()),
            svg::SERIES.len()
        );
    }
    out.push_str(&plot.y_title("ns per store"));
    out.push_str("</svg>");

    let run = groups.iter().find_map(|g| g.run.ok());
    let mut caption = String::from("Silly Little Benchmark: ");
    if let Some(r) = run {
        let p = &r.plan;
        let _ = write!(
            caption,
            "each worker owns {} pages of 4 KiB ({}) and performs {} × {} random 8-byte stores into them; all workers start together. ",
            p.pages,
            esc(&crate::render::mem::slb_pages(r)),
            p.pages,
            p.loops
        );
    }
    caption.push_str(
        "Bars: nanoseconds per store for each worker, from the common start to its last store. \
         Whiskers span the best to the p99 of its timed batches of 2<sup>18</sup> stores. ",
    );
    // Each panel is named by where it is only when both are drawn.
    let (first, second) = if !scaling.is_empty() && !policies.is_empty() {
        ("Left: t", "Right: o")
    } else {
        ("T", "O")
    };
    if !scaling.is_empty() {
        let _ = write!(caption, "{first}he same work per worker with more workers at once (more is slower when memory is the bottleneck). ");
    }
    if !policies.is_empty() {
        let _ = write!(caption, "{second}ne worker per CPU under each memory policy, placement verified per worker (in the tooltips). ");
    }
    let clipped = groups
        .iter()
        .filter_map(|g| g.run.ok())
        .flat_map(|r| r.workers.iter())
        .any(|w| w.batches.as_ref().is_some_and(|b| b.p99 > y.hi));
    if clipped {
        caption.push_str(&esc(CLIPPED));
    }
    if groups.iter().any(|g| g.run.is_ok_and(|r| r.interrupted)) {
        caption.push_str("Some runs were INTERRUPTED: their figures cover the stores done. ");
    }
    let skipped: Vec<String> = groups
        .iter()
        .filter_map(|g| {
            g.run.err().map(|why| format!("<li><b>{}</b>: {}</li>", esc(&g.label), esc(why)))
        })
        .collect();
    let after = if skipped.is_empty() {
        String::new()
    } else {
        format!(
            "<p class=\"skipped-title\">Policies not run:</p><ul class=\"skipped\">{}</ul>",
            skipped.join("")
        )
    };
    Some(Figure { svg: out, caption, after })
}

/// One worker's bar in the SLB chart, at `x` in a slot of `slot` pixels.
fn slb_bar(
    w: &SlbWorkerResult,
    k: usize,
    group: &str,
    (x, slot, bar_w): (f64, f64, f64),
    y: &svg::Scale,
    base: f64,
) -> String {
    let ns = w.ns_per_op();
    let top = y.map(ns);
    let color = svg::SERIES[k % svg::SERIES.len()];
    let spread = w.batches.as_ref().map_or(String::new(), |b| {
        format!("; batches of 2^18 stores: best {} ns, p99 {} ns", fmt3(b.min), fmt3(b.p99))
    });
    let mut out = format!(
        "<rect class=\"data bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" data-value=\"{}\" \
         data-group=\"{}\" data-worker=\"{}\"><title>{}, worker {} on CPU {}: {} ns per store ({} stores in {} ms){spread}; memory {}</title></rect>",
        px(x + (slot - bar_w) / 2.0),
        px(top),
        px(bar_w),
        px(base - top),
        color.hex(),
        exact(ns),
        esc(group),
        w.worker,
        esc(group),
        w.worker,
        w.cpu.map_or("?".to_string(), |c| c.to_string()),
        fmt3(ns),
        w.ops,
        fmt3(w.elapsed_ns as f64 / 1e6),
        esc(&placement_text(&w.placement))
    );
    // Whiskers only where there is room for them (not on a 64-worker machine's hairlines).
    if let Some(b) = w.batches.as_ref().filter(|_| slot >= 6.0) {
        out.push_str(&whisker_capped(
            x + slot / 2.0,
            y.map(b.min),
            y.map(b.p99),
            (slot * 0.3).min(4.0),
            y.to,
        ));
    }
    out
}

/// About how wide `text` is at `font` pixels (DejaVu Sans averages a little over half an em).
fn text_px(text: &str, font: f64) -> f64 {
    text.chars().count() as f64 * font * 0.58
}

/// An x scale for charts whose x axis is categories (no ticks).
fn category_x(plot: &Plot) -> svg::Scale {
    plot.x_scale(ScaleKind::Linear, 0.0, 1.0)
}
