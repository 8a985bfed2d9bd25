//! (d) Bandwidth by thread count: a bar per thread count, whiskers from the slowest to the best
//! round, linear scaling from one thread as a reference, and the saturation point marked.

use std::fmt::Write as _;

use crate::bandwidth::{BandwidthResult, Scaling};

use super::{samples_text, whisker_capped, Figure};
use chart::svg::{self, bytes_label, esc, exact, fmt3, px, Plot, ScaleKind};

pub fn bandwidth_threads(s: &Scaling) -> Option<Figure> {
    let steps: Vec<&BandwidthResult> =
        s.steps.iter().filter(|r| r.aggregate_gbs.median.is_finite()).collect();
    let first = steps.first()?;
    let most = steps.iter().map(|r| r.threads.len()).max().unwrap_or(1).max(1);
    let y_top =
        steps.iter().map(|r| r.aggregate_gbs.max.max(r.aggregate_gbs.median)).fold(0.0, f64::max);
    let plot =
        Plot { width: 600.0, height: 400.0, left: 64.0, right: 20.0, top: 34.0, bottom: 56.0 };
    let x = plot.x_scale(ScaleKind::Linear, 0.4, most as f64 + 0.6);
    let y = plot.y_scale(ScaleKind::Linear, 0.0, svg::nice_max(y_top, 6));
    let id = super::BANDWIDTH_THREADS.id;
    let mut out =
        svg::open(id, plot.width, plot.height, "Aggregate bandwidth by number of threads");
    let x_ticks = svg::integer_ticks(most, 12);
    out.push_str(&plot.axes(&x, &x_ticks, &y, &y.ticks(6)));
    let slot = x.map(2.0) - x.map(1.0);
    let bar_w = (slot * 0.6).min(60.0);
    // Linear scaling from one thread, as a reference; its key sits above the plot.
    let one = first.aggregate_gbs.median / first.threads.len().max(1) as f64;
    if one > 0.0 {
        let end = (most as f64).min(y.hi / one);
        let _ = write!(
            out,
            "<line class=\"reference\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\
             <line class=\"reference\" x1=\"{}\" x2=\"{}\" y1=\"14\" y2=\"14\"/>\
             <text class=\"reference-label\" x=\"{}\" y=\"18\">linear from 1 thread</text>",
            px(x.map(1.0)),
            px(y.map(one)),
            px(x.map(end)),
            px(y.map(end * one)),
            px(plot.x0() + 4.0),
            px(plot.x0() + 28.0),
            px(plot.x0() + 34.0),
        );
    }
    // The saturation line goes under the bars so it does not strike through their labels.
    if let Some(k) = s.saturated_at {
        let sx = x.map(k as f64);
        let key = plot.x0() + 190.0;
        let _ = write!(
            out,
            "<line class=\"saturation\" data-threads=\"{k}\" x1=\"{sx}\" x2=\"{sx}\" y1=\"{}\" y2=\"{}\"/>\
             <line class=\"saturation\" x1=\"{}\" x2=\"{}\" y1=\"14\" y2=\"14\"/>\
             <text class=\"marker-label\" x=\"{}\" y=\"18\">saturated at {k} thread(s)</text>",
            px(plot.y1()),
            px(plot.y0()),
            px(key),
            px(key + 24.0),
            px(key + 30.0),
            sx = px(sx),
        );
    }
    for r in &steps {
        let n = r.threads.len() as f64;
        let top = y.map(r.aggregate_gbs.median);
        let _ = write!(
            out,
            "<rect class=\"data bar{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" data-value=\"{}\" data-threads=\"{}\" data-max=\"{}\">\
             <title>{} thread(s): median {} GB/s, slowest round {}, best {} over {} rounds{}</title></rect>",
            if r.aggregate_gbs.noisy { " noisy" } else { "" },
            px(x.map(n) - bar_w / 2.0),
            px(top),
            px(bar_w),
            px(plot.y0() - top),
            exact(r.aggregate_gbs.median),
            r.threads.len(),
            exact(r.aggregate_gbs.max),
            r.threads.len(),
            fmt3(r.aggregate_gbs.median),
            fmt3(r.aggregate_gbs.min),
            fmt3(r.aggregate_gbs.max),
            r.aggregate_gbs.samples,
            if r.interrupted { "; INTERRUPTED" } else { "" }
        );
        out.push_str(&whisker_capped(
            x.map(n),
            y.map(r.aggregate_gbs.min),
            y.map(r.aggregate_gbs.max),
            (bar_w * 0.35).min(4.0),
            plot.y1(),
        ));
        if bar_w >= 28.0 {
            let _ = write!(
                out,
                "<text class=\"bar-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                px(x.map(n)),
                px(y.map(r.aggregate_gbs.max) - 6.0),
                esc(&fmt3(r.aggregate_gbs.median))
            );
        }
    }
    out.push_str(&plot.x_title("threads"));
    out.push_str(&plot.y_title("GB/s (10⁹ bytes/s)"));
    out.push_str("</svg>");
    let saturation = match s.saturated_at {
        Some(k) => format!("Dashed red line: saturation at {k} thread(s) — one more thread added less than 5%."),
        None if s.interrupted => format!("Interrupted after {most} thread(s): no conclusion on saturation."),
        None => format!("Bandwidth still grew by 5% or more with every thread up to {most}: not saturated by these CPUs."),
    };
    let cpus: Vec<u32> =
        steps.last().map_or(Vec::new(), |r| r.threads.iter().filter_map(|t| t.cpu).collect());
    let mut caption = format!(
        "Bandwidth of the {} kernel ({}) with 1 to {most} threads together (CPUs {}, added in that order), each streaming through its own {}. \
         Bars: {}; whiskers span the slowest to the best round. Grey dashed line: perfect scaling of the one-thread figure. {} \
         GB = 10<sup>9</sup> bytes; counted: {}.",
        esc(&first.kernel.to_string()),
        esc(&first.isa.to_string()),
        esc(&topo::idlist::format(&cpus)),
        esc(&buffer_text(&steps)),
        samples_text("rounds", steps.iter().map(|r| &r.aggregate_gbs)),
        esc(&saturation),
        esc(&first.accounting)
    );
    let noisy = steps.iter().filter(|r| r.aggregate_gbs.noisy).count();
    if noisy > 0 {
        let _ = write!(
            caption,
            " {noisy} of {} thread counts were noisy (middle half of the rounds spread above 5%) and are drawn lighter.",
            steps.len()
        );
    }
    if steps.iter().any(|r| r.interrupted) {
        caption.push_str(" INTERRUPTED: some figures cover only the rounds completed.");
    }
    if !s.size_checks.is_empty() {
        caption.push_str(" Buffers sized so each step's threads together stream at least 4× the last-level cache, and checked at twice that:");
        for check in &s.size_checks {
            let _ = write!(caption, " {}.", esc(&check.sentence()));
        }
    }
    Some(Figure { svg: out, caption, after: String::new() })
}

/// Each thread's buffer: one size, or the range over the steps when each step has its own.
fn buffer_text(steps: &[&BandwidthResult]) -> String {
    let sizes = steps.iter().map(|r| r.bytes_per_thread);
    match (sizes.clone().min(), sizes.max()) {
        (Some(lo), Some(hi)) if lo != hi => {
            format!("{}–{}", bytes_label(lo as f64), bytes_label(hi as f64))
        }
        (Some(one), _) => bytes_label(one as f64),
        _ => String::new(),
    }
}
