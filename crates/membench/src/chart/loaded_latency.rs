//! (e) Latency under load: chase latency against the bandwidth the load threads moved, one
//! point per delay, the idle point drawn as a square.

use std::fmt::Write as _;

use crate::loaded::LoadedCurve;

use super::{mix_name, noisy_text, placement_text, samples_text, whisker, Figure, CLIPPED};
use chart::svg::{self, esc, exact, fmt3, px, Plot, ScaleKind};

pub fn loaded_latency(c: &LoadedCurve) -> Option<Figure> {
    let mut points: Vec<_> = c
        .points
        .iter()
        .filter(|p| p.load_gbs.is_finite() && p.latency_ns.median.is_finite())
        .collect();
    if points.is_empty() {
        return None;
    }
    points.sort_by(|a, b| a.load_gbs.total_cmp(&b.load_gbs));
    let x_top = points.iter().map(|p| p.load_gbs).fold(0.0, f64::max);
    // Whiskers are cut at twice the median, so one outlying p99 cannot flatten the curve.
    let y_top = points
        .iter()
        .map(|p| p.latency_ns.p99.min(2.0 * p.latency_ns.median).max(p.latency_ns.median))
        .fold(0.0, f64::max);
    let plot =
        Plot { width: 600.0, height: 400.0, left: 64.0, right: 20.0, top: 24.0, bottom: 56.0 };
    let x = plot.x_scale(ScaleKind::Linear, 0.0, svg::nice_max(x_top, 6));
    let y = plot.y_scale(ScaleKind::Linear, 0.0, svg::nice_max(y_top, 6));
    let id = super::LOADED_LATENCY.id;
    let mut out = svg::open(
        id,
        plot.width,
        plot.height,
        "Chase latency against the bandwidth of the load threads",
    );
    out.push_str(&plot.axes(&x, &x.ticks(6), &y, &y.ticks(6)));
    let line: Vec<String> = points
        .iter()
        .map(|p| format!("{},{}", px(x.map(p.load_gbs)), px(y.map(p.latency_ns.median))))
        .collect();
    let _ = write!(out, "<polyline class=\"line\" points=\"{}\"/>", line.join(" "));
    for p in &points {
        out.push_str(&whisker(
            x.map(p.load_gbs),
            y.map(p.latency_ns.min),
            y.map(p.latency_ns.p99),
            plot.y1(),
        ));
    }
    let busiest = points.last().map(|p| p.delay_cycles);
    for p in &points {
        let (cx, cy) = (x.map(p.load_gbs), y.map(p.latency_ns.median));
        let delay = p.delay_cycles.map_or("idle".to_string(), |d| d.to_string());
        let tip = format!(
            "{}: {} GB/s of load, latency median {} ns, best {}, p99 {} over {} samples",
            p.delay_cycles
                .map_or("idle (load threads paused)".to_string(), |d| format!("delay {d} cycles")),
            fmt3(p.load_gbs),
            fmt3(p.latency_ns.median),
            fmt3(p.latency_ns.min),
            fmt3(p.latency_ns.p99),
            p.latency_ns.samples
        );
        let noisy = if p.latency_ns.noisy { " noisy" } else { "" };
        let attrs = format!(
            "data-value=\"{}\" data-gbs=\"{}\" data-delay=\"{}\" data-p99=\"{}\"",
            exact(p.latency_ns.median),
            exact(p.load_gbs),
            esc(&delay),
            exact(p.latency_ns.p99)
        );
        if p.delay_cycles.is_none() {
            let _ = write!(
                out,
                "<rect class=\"data idle{noisy}\" x=\"{}\" y=\"{}\" width=\"11\" height=\"11\" {attrs}><title>{}</title></rect>\
                 <text class=\"point-label\" x=\"{}\" y=\"{}\">idle</text>",
                px(cx - 5.5),
                px(cy - 5.5),
                esc(&tip),
                px(cx + 10.0),
                // Below the point, unless that runs into the x axis.
                px(if cy + 18.0 < plot.y0() - 4.0 { cy + 18.0 } else { cy - 8.0 })
            );
        } else {
            let _ = write!(
                out,
                "<circle class=\"data{noisy}\" cx=\"{}\" cy=\"{}\" r=\"4.5\" {attrs}><title>{}</title></circle>",
                px(cx),
                px(cy),
                esc(&tip)
            );
            if Some(p.delay_cycles) == busiest {
                // Above its whisker, clear of the curve and the neighbours' points.
                let _ = write!(
                    out,
                    "<text class=\"point-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">delay {}</text>",
                    px(cx.min(plot.x1() - 40.0)),
                    px(y.map(p.latency_ns.p99).min(cy) - 8.0),
                    esc(&delay)
                );
            }
        }
    }
    out.push_str(&plot.x_title("load bandwidth, GB/s (10⁹ bytes/s)"));
    out.push_str(&plot.y_title("chase latency, ns"));
    out.push_str("</svg>");
    let delays: Vec<String> =
        c.points.iter().filter_map(|p| p.delay_cycles).map(|d| d.to_string()).collect();
    let mut caption = format!(
        "Latency of a random pointer chase on CPU {} (memory {}) while {} load thread(s) on CPUs {} run the {} kernel ({}, {} mix), \
         pausing after every 4 KiB for a delay of {} busy cycles. Each point: x is what the load threads moved together, y the chase latency, {}; \
         whiskers span best to p99. Square: idle, load threads paused. Counted: {}.",
        c.chase_cpu,
        esc(&placement_text(&c.chase_placement)),
        c.load_cpus.len(),
        esc(&topo::idlist::format(&c.load_cpus)),
        esc(&c.kernel.to_string()),
        esc(&c.isa.to_string()),
        esc(mix_name(c.mix)),
        esc(&delays.join(", ")),
        samples_text("samples", points.iter().map(|p| &p.latency_ns)),
        esc(&c.accounting)
    );
    if let Some(caveat) = &c.delay_caveat {
        caption.push_str(&format!(" Delays: {}.", esc(caveat)));
    }
    caption.push_str(&esc(&noisy_text(
        points.iter().filter(|p| p.latency_ns.noisy).count(),
        points.len(),
        "points",
    )));
    if points.iter().any(|p| p.latency_ns.p99 > y.hi) {
        caption.push_str(&esc(CLIPPED));
    }
    if c.interrupted {
        caption.push_str(" INTERRUPTED: only the points shown were measured.");
    }
    Some(Figure { svg: out, caption, after: String::new() })
}
