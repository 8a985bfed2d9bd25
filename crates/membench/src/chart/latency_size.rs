//! (a) Latency by working-set size: one point per size on log–log axes, whiskers from best to
//! p99, the cache sizes marked, and the prefetch check in the caption.

use std::fmt::Write as _;

use crate::latency::{LatencyPoint, PrefetchCheck};

use super::{noisy_text, placement_text, samples_text, whisker, Figure, CLIPPED};
use chart::svg::{self, bytes_label, esc, exact, fmt3, px, Plot, ScaleKind};
use topo::Topology;

/// Latency against working-set size: `points` (one per size, smallest first) chased from
/// `cpu` (else the first point's CPU), the `prefetch` check in the caption, and the cache
/// sizes of `topology` marked.
pub fn latency_size(
    points: &[LatencyPoint],
    cpu: Option<u32>,
    prefetch: Option<&PrefetchCheck>,
    topology: &Topology,
) -> Option<Figure> {
    let points: Vec<&LatencyPoint> =
        points.iter().filter(|p| p.bytes > 0 && p.ns.median > 0.0).collect();
    let (first, last) = (points.first()?, points.last()?);
    let caches = topology.cache_levels();
    let sizes = points.iter().map(|p| p.bytes as f64).chain(caches.iter().map(|c| c.1 as f64));
    let (x_lo, x_hi) = sizes.fold((f64::MAX, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let y_lo = points.iter().map(|p| p.ns.min.min(p.ns.median)).fold(f64::MAX, f64::min);
    // Outlying p99s (a descheduled VM) do not get to squash the curve: whiskers are cut at 3×
    // the median.
    let y_hi =
        points.iter().map(|p| p.ns.p99.min(3.0 * p.ns.median).max(p.ns.median)).fold(0.0, f64::max);
    let plot =
        Plot { width: 1200.0, height: 440.0, left: 70.0, right: 24.0, top: 24.0, bottom: 56.0 };
    let x = plot.x_scale(ScaleKind::Log2, x_lo / 1.4, x_hi * 1.4);
    let y = plot.y_scale(ScaleKind::Log10, (y_lo / 1.25).max(1e-3), (y_hi * 1.25).max(1e-3 * 2.0));
    let id = super::LATENCY_SIZE.id;
    let mut out = svg::open(id, plot.width, plot.height, "Load-to-use latency by working-set size");
    out.push_str(&plot.axes(&x, &x.ticks(8), &y, &y.ticks(8)));
    // Cache sizes: dashed lines, labels staggered so neighbours do not overlap.
    let mut last_label_end = f64::MIN;
    let mut row = 0;
    for (name, size, _) in &caches {
        let cx = x.map(*size as f64);
        let label = format!("{name} {}", bytes_label(*size as f64));
        let width = label.chars().count() as f64 * 7.0 + 8.0;
        row = if cx < last_label_end { row + 1 } else { 0 };
        last_label_end = cx + width;
        let _ = write!(
            out,
            "<line class=\"cache-marker\" data-cache=\"{}\" data-bytes=\"{size}\" x1=\"{cx}\" x2=\"{cx}\" y1=\"{}\" y2=\"{}\"/>\
             <text class=\"marker-label\" x=\"{}\" y=\"{}\">{}</text>",
            esc(name),
            px(plot.y1()),
            px(plot.y0()),
            px(cx + 4.0),
            px(plot.y1() + 14.0 + 15.0 * f64::from(row)),
            esc(&label),
            cx = px(cx),
        );
    }
    let line: Vec<String> = points
        .iter()
        .map(|p| format!("{},{}", px(x.map(p.bytes as f64)), px(y.map(p.ns.median))))
        .collect();
    let _ = write!(out, "<polyline class=\"line\" points=\"{}\"/>", line.join(" "));
    for p in &points {
        let cx = x.map(p.bytes as f64);
        out.push_str(&whisker(cx, y.map(p.ns.min), y.map(p.ns.p99), plot.y1()));
    }
    for p in &points {
        let cycles = p.cycles.map_or(String::new(), |c| format!(", {} cycles", fmt3(c)));
        let _ = write!(
            out,
            "<circle class=\"data{}\" cx=\"{}\" cy=\"{}\" r=\"4.5\" data-value=\"{}\" data-bytes=\"{}\" \
             data-p99=\"{}\" data-min=\"{}\"><title>{}: median {} ns{cycles}, best {} ns, p99 {} ns over {} samples; memory {}</title></circle>",
            if p.ns.noisy { " noisy" } else { "" },
            px(x.map(p.bytes as f64)),
            px(y.map(p.ns.median)),
            exact(p.ns.median),
            p.bytes,
            exact(p.ns.p99),
            exact(p.ns.min),
            esc(&bytes_label(p.bytes as f64)),
            fmt3(p.ns.median),
            fmt3(p.ns.min),
            fmt3(p.ns.p99),
            p.ns.samples,
            esc(&placement_text(&p.placement)),
        );
    }
    out.push_str(&plot.x_title("working-set size (bytes, log scale)"));
    out.push_str(&plot.y_title("ns per load (log scale)"));
    out.push_str("</svg>");

    let cpu = cpu.or(first.cpu).map_or("an unpinned thread".to_string(), |c| format!("CPU {c}"));
    let markers: Vec<String> =
        caches.iter().map(|(n, s, _)| format!("{n} {}", bytes_label(*s as f64))).collect();
    let mut caption = format!(
        "Idle load-to-use latency: one thread on {} chases a random pointer chain through a buffer of each size ({} to {}, {}). \
         Points: {} per size (first sample dropped as warm-up); whiskers span best to p99. ",
        esc(&cpu),
        esc(&bytes_label(first.bytes as f64)),
        esc(&bytes_label(last.bytes as f64)),
        esc(&place::pages_label_of(&points.iter().map(|p| p.placement.clone()).collect::<Vec<_>>())
            .unwrap_or_else(|| format!("{} pages", first.placement.page))),
        samples_text("samples", points.iter().map(|p| &p.ns)),
    );
    if markers.is_empty() {
        caption.push_str("The topology reported no cache sizes to mark. ");
    } else {
        let _ = write!(
            caption,
            "Dashed lines: cache size per instance ({}). ",
            esc(&markers.join(", "))
        );
    }
    let _ =
        write!(caption, "Memory at the largest size: {}.", esc(&placement_text(&last.placement)));
    caption.push_str(&esc(&noisy_text(
        points.iter().filter(|p| p.ns.noisy).count(),
        points.len(),
        "sizes",
    )));
    if points.iter().any(|p| p.ns.p99 > y.hi) {
        caption.push_str(&esc(CLIPPED));
    }
    if let Some(c) = prefetch {
        caption.push(' ');
        caption.push_str(&esc(&prefetch_sentence(c)));
    }
    Some(Figure { svg: out, caption, after: String::new() })
}

fn prefetch_sentence(c: &PrefetchCheck) -> String {
    if c.defeated {
        format!(
            "Prefetch check passed: at {} the random chase ({} ns) is {}× slower than the same buffer in address order ({} ns), so prefetchers are not hiding its latency.",
            bytes_label(c.bytes as f64),
            fmt3(c.random_ns),
            fmt3(c.ratio),
            fmt3(c.sequential_ns)
        )
    } else {
        format!(
            "Prefetch check FAILED: at {} the random chase ({} ns) is only {}× slower than address order ({} ns); the figures may be helped by prefetchers.",
            bytes_label(c.bytes as f64),
            fmt3(c.random_ns),
            fmt3(c.ratio),
            fmt3(c.sequential_ns)
        )
    }
}
