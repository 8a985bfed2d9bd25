//! (g) Throughput against threads (seed 004's Tamp): one line per number of units run at once,
//! each point labelled with how many CPUs were busy — single-thread speed, where one instance
//! stops scaling, and what the filled machine does.

use std::fmt::Write as _;

use tamp::scale::{ScaleReport, ScaleStep};

use super::Figure;
use chart::svg::{self, esc, exact, fmt3, px, Plot, ScaleKind};

/// Line styles for up to four unit counts (then they repeat).
const DASHES: [&str; 4] = ["", "6 3", "2 3", "10 3 2 3"];

pub(in crate::html) fn chart_cpu_scale(r: &ScaleReport) -> Option<Figure> {
    let steps: Vec<&ScaleStep> = r.steps.iter().filter(|s| s.mb_per_s.is_finite()).collect();
    if steps.is_empty() {
        return None;
    }
    let most = steps.iter().map(|s| s.threads).max().unwrap_or(1).max(2);
    let y_top = steps.iter().map(|s| s.mb_per_s).fold(0.0, f64::max);
    let plot =
        Plot { width: 600.0, height: 400.0, left: 64.0, right: 20.0, top: 34.0, bottom: 56.0 };
    let x = plot.x_scale(ScaleKind::Log2, 1.0, most as f64);
    let y = plot.y_scale(ScaleKind::Linear, 0.0, svg::nice_max(y_top, 6));
    let id = "chart-cpu-scale";
    let mut out = svg::open(id, plot.width, plot.height, "Throughput against threads and units");
    let x_ticks: Vec<svg::Tick> = std::iter::successors(Some(1usize), |t| Some(t * 2))
        .take_while(|&t| t <= most)
        .map(|t| svg::Tick { value: t as f64, label: Some(t.to_string()) })
        .collect();
    out.push_str(&plot.axes(&x, &x_ticks, &y, &y.ticks(6)));
    let mut units: Vec<usize> = steps.iter().map(|s| s.units).collect();
    units.sort_unstable();
    units.dedup();
    for (i, u) in units.iter().enumerate() {
        let mut line: Vec<&ScaleStep> = steps.iter().copied().filter(|s| s.units == *u).collect();
        line.sort_by_key(|s| s.threads);
        let dash = DASHES[i % DASHES.len()];
        let points: Vec<String> = line
            .iter()
            .map(|s| format!("{},{}", px(x.map(s.threads as f64)), px(y.map(s.mb_per_s))))
            .collect();
        let _ = write!(
            out,
            "<polyline class=\"line\" stroke-dasharray=\"{dash}\" points=\"{}\"/>",
            points.join(" ")
        );
        let key_x = plot.x0() + 6.0 + 120.0 * i as f64;
        let _ = write!(
            out,
            "<line class=\"line\" stroke-dasharray=\"{dash}\" x1=\"{}\" x2=\"{}\" y1=\"14\" y2=\"14\"/>\
             <text class=\"point-label\" x=\"{}\" y=\"18\">{u} unit(s)</text>",
            px(key_x),
            px(key_x + 24.0),
            px(key_x + 30.0),
        );
        for s in line {
            let busy = s.machine.as_ref().map(|m| (m.cpus_busy, m.machine_share));
            let busy_text = busy.map_or(String::new(), |(n, share)| {
                format!(", {n} of {} CPUs busy, machine {:.0}% busy", s.online_cpus, share * 100.0)
            });
            let (cx, cy) = (x.map(s.threads as f64), y.map(s.mb_per_s));
            let _ = write!(
                out,
                "<circle class=\"data\" cx=\"{}\" cy=\"{}\" r=\"4.5\" data-value=\"{}\" data-units=\"{}\" data-threads=\"{}\">\
                 <title>{} unit(s) × {} thread(s): {} MB/s{}; {}</title></circle>",
                px(cx),
                px(cy),
                exact(s.mb_per_s),
                s.units,
                s.threads,
                s.units,
                s.threads,
                fmt3(s.mb_per_s),
                busy_text,
                esc(&s.verdict_reason),
            );
            if let Some((n, _)) = busy {
                let _ = write!(
                    out,
                    "<text class=\"point-label\" x=\"{}\" y=\"{}\">{n}/{}</text>",
                    px(cx + 6.0),
                    px(cy - 6.0),
                    s.online_cpus
                );
            }
        }
    }
    out.push_str(&plot.x_title("compressor threads per unit"));
    out.push_str(&plot.y_title("MB/s (10⁶ bytes/s, uncompressed)"));
    out.push_str("</svg>");
    let mut caption = format!(
        "The {} compressor{} on an in-memory corpus of {} per unit, to nowhere: one reader, N \
         workers and one writer per unit, units run at once. Labels: CPUs at least 90% busy \
         during the step (from /proc/stat) of all online CPUs — one busy CPU of many is what a \
         machine-wide idle figure hides. {}",
        esc(&r.codec),
        r.level.map_or(String::new(), |l| format!(" at level {l}")),
        esc(&svg::bytes_label(r.input_bytes as f64)),
        esc(&r.summary.text),
    );
    if r.interrupted {
        caption.push_str(
            " INTERRUPTED: only the steps drawn were measured; no conclusion is drawn from them.",
        );
    }
    Some(Figure { svg: out, caption, after: String::new() })
}
