//! (g) Core to core: the CPU×CPU heatmap of cache-line round trips with the class summary
//! under it; (h) lock contention: shared-SLB ns/op by worker count for each lock, with
//! fairness in the tooltips.

use std::fmt::Write as _;

use crate::c2c::{C2cResult, ADDRESS_FACTOR};
use crate::slb_shared::{LockKind, SharedSlbResult};

use super::heatmap::{heatmap, Cell, Heatmap};
use super::{placement_text, samples_text, Figure};
use chart::svg::{self, esc, exact, fmt3, px, Plot, ScaleKind};

pub fn c2c(r: &C2cResult) -> Option<Figure> {
    if r.pairs.is_empty() {
        return None;
    }
    let cells = r
        .cpus
        .iter()
        .map(|&a| {
            r.cpus
                .iter()
                .map(|&b| match r.pair(a, b) {
                    Some(p) if a != b => Cell {
                        value: p.round_trip_ns.median,
                        note: p.class.name().to_string(),
                        tip: format!(
                            "round trip median {} ns, p99 {} ns, best {} ns over {} batches of {} round trips; one hand-off {} ns; {}{}",
                            fmt3(p.round_trip_ns.median),
                            fmt3(p.round_trip_ns.p99),
                            fmt3(p.round_trip_ns.min),
                            p.round_trip_ns.samples,
                            p.batch_rounds,
                            fmt3(p.one_way_ns()),
                            p.class.name(),
                            p.line_spread.as_ref().map_or(String::new(), |s| format!(
                                "; {} lines from {} to {} ns{}",
                                s.lines,
                                fmt3(s.min_ns),
                                fmt3(s.max_ns),
                                if s.wider_than_noise { ", wider than the noise" } else { "" }
                            ))
                        ),
                    },
                    _ => Cell {
                        value: f64::NAN,
                        note: String::new(),
                        tip: if a == b { "the same CPU".into() } else { "not measured".into() },
                    },
                })
                .collect()
        })
        .collect();
    let svg = heatmap(&Heatmap {
        id: super::C2C.id,
        title: "Cache line round trip between CPUs",
        rows: &r.cpus,
        cols: &r.cpus,
        cells,
        unit: "ns",
        ramp: svg::RAMP_LATENCY,
        row_title: "CPU",
        col_title: "CPU",
    });
    let mut after = String::from(
        "<table class=\"c2c-classes\"><thead><tr><th>pairs</th><th>count</th><th>median ns</th>\
         <th>p99 ns</th><th>one hand-off ns</th></tr></thead><tbody>",
    );
    for c in &r.classes {
        let _ = write!(
            after,
            "<tr><td>{}</td><td>{}</td><td class=\"data\" data-value=\"{}\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(c.class.name()),
            c.pairs,
            exact(c.median_ns),
            esc(&fmt3(c.median_ns)),
            esc(&fmt3(c.p99_ns)),
            esc(&fmt3(c.median_ns / 2.0))
        );
    }
    after.push_str("</tbody></table>");
    let home = r
        .line_on
        .map_or("first touched by the first CPU".to_string(), |n| format!("bound to node {n}"));
    let lines = r.pairs.iter().map(|p| p.lines.len()).max().unwrap_or(0);
    let words = if lines > 1 {
        format!("an 8-byte word, alone on its page, on each of {lines} lines (pages)")
    } else {
        "one 8-byte word, alone on its page,".to_string()
    };
    let mut caption = format!(
        "Two threads pinned to each pair of CPUs hand {} back and forth ({} mode); \
         cells: {} of the round trip (two hand-offs) over all lines; darker is slower. The {} {}, verified on {}. \
         p99 is over batches of round trips, not single hand-offs.",
        esc(&words),
        esc(r.mode.name()),
        samples_text("batches", r.pairs.iter().map(|p| &p.round_trip_ns)),
        if lines > 1 { "lines were" } else { "line was" },
        esc(&home),
        esc(&placement_text(&r.line))
    );
    let spread: Vec<_> = r.pairs.iter().filter_map(|p| p.line_spread.as_ref()).collect();
    if !spread.is_empty() {
        let wider = spread.iter().filter(|s| s.wider_than_noise).count();
        let widest = spread.iter().map(|s| s.range_ns()).fold(0.0, f64::max);
        caption.push_str(&format!(
            " Across lines, the spread of a pair's line medians is wider than {ADDRESS_FACTOR:.0}× \
             the noise (the largest move of one line between two passes) on {wider} of {} pairs; \
             the widest spread is {} ns.",
            spread.len(),
            esc(&fmt3(widest))
        ));
    }
    if r.interrupted {
        caption.push_str(" INTERRUPTED: blank cells were not measured.");
    }
    Some(Figure { svg, caption, after })
}

fn lock_color(lock: LockKind) -> &'static str {
    match lock {
        LockKind::None => "#8a94a3",
        LockKind::Spin => "#c0392b",
        LockKind::Ticket => "#2471a3",
        LockKind::Mutex => "#1e8449",
    }
}

pub fn contention(
    runs: &[SharedSlbResult],
    placement: &[(String, Result<SharedSlbResult, String>)],
) -> Option<Figure> {
    let runs: Vec<&SharedSlbResult> = runs.iter().filter(|r| r.median_ns().is_finite()).collect();
    if runs.is_empty() {
        return None;
    }
    let most = runs.iter().map(|r| r.workers.len()).max().unwrap_or(1).max(1);
    let y_top = runs.iter().map(|r| r.median_ns()).fold(0.0, f64::max);
    let plot =
        Plot { width: 600.0, height: 400.0, left: 64.0, right: 20.0, top: 34.0, bottom: 56.0 };
    let x = plot.x_scale(ScaleKind::Linear, 0.6, most as f64 + 0.4);
    // One lock can be orders of magnitude slower (a ticket lock whose next holder is
    // descheduled): then a log scale keeps the others readable.
    let y_low = runs.iter().map(|r| r.median_ns()).fold(f64::INFINITY, f64::min);
    let log = y_low > 0.0 && y_top / y_low > 20.0;
    let y = if log {
        let lo = 10f64.powf(y_low.log10().floor());
        let hi = 10f64.powf(y_top.log10().ceil());
        plot.y_scale(ScaleKind::Log10, lo, hi)
    } else {
        plot.y_scale(ScaleKind::Linear, 0.0, svg::nice_max(y_top, 6))
    };
    let mut out = svg::open(
        super::CONTENTION.id,
        plot.width,
        plot.height,
        "Shared-memory SLB: ns per locked store by number of workers",
    );
    out.push_str(&plot.axes(&x, &svg::integer_ticks(most, 12), &y, &y.ticks(6)));
    let mut key_x = plot.x0() + 4.0;
    for lock in LockKind::ALL {
        let mut series: Vec<&&SharedSlbResult> =
            runs.iter().filter(|r| r.plan.lock == lock).collect();
        if series.is_empty() {
            continue;
        }
        series.sort_by_key(|r| r.workers.len());
        let color = lock_color(lock);
        let points: Vec<String> = series
            .iter()
            .map(|r| format!("{},{}", px(x.map(r.workers.len() as f64)), px(y.map(r.median_ns()))))
            .collect();
        let _ = write!(
            out,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
            points.join(" ")
        );
        for r in &series {
            let fair = r.fairness.as_ref().map_or(String::new(), |f| {
                format!("; fairness min/max {}, Jain {}", fmt3(f.min_max_ratio), fmt3(f.jain))
            });
            let handoffs = r
                .handoffs_per_sec()
                .map_or(String::new(), |h| format!("; {} hand-offs/s", fmt3(h)));
            let _ = write!(
                out,
                "<circle class=\"data point\" cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{color}\" data-value=\"{}\" data-lock=\"{}\" data-workers=\"{}\">\
                 <title>{} lock, {} worker(s): median {} ns/op{handoffs}{fair}; counters {} of {}</title></circle>",
                px(x.map(r.workers.len() as f64)),
                px(y.map(r.median_ns())),
                exact(r.median_ns()),
                lock.name(),
                r.workers.len(),
                lock.name(),
                r.workers.len(),
                fmt3(r.median_ns()),
                r.counters_total,
                r.ops_total
            );
        }
        let _ = write!(
            out,
            "<line x1=\"{}\" x2=\"{}\" y1=\"14\" y2=\"14\" stroke=\"{color}\" stroke-width=\"2\"/>\
             <text class=\"reference-label\" x=\"{}\" y=\"18\">{}</text>",
            px(key_x),
            px(key_x + 20.0),
            px(key_x + 24.0),
            lock.name()
        );
        key_x += 80.0;
    }
    out.push_str(&plot.x_title("workers"));
    out.push_str(&plot.y_title(if log {
        "ns per operation (median of workers, log scale)"
    } else {
        "ns per operation (median of workers)"
    }));
    out.push_str("</svg>");
    let mut after = String::from(
        "<table class=\"contention\"><thead><tr><th>lock</th><th>workers</th><th>ns/op</th>\
         <th>times slower</th><th>hand-offs/s</th><th>min/max</th><th>Jain</th><th>lost updates</th></tr></thead><tbody>",
    );
    for r in &runs {
        // Against the same lock with one worker, as `mem scale` does.
        let one = runs
            .iter()
            .find(|o| o.plan.lock == r.plan.lock && o.workers.len() == 1)
            .map(|o| o.median_ns());
        let slower =
            one.filter(|&o| o > 0.0).map_or("—".to_string(), |o| fmt3(r.median_ns() / o));
        let (mm, jain) = r.fairness.as_ref().map_or(("—".to_string(), "—".to_string()), |f| {
            (fmt3(f.min_max_ratio), fmt3(f.jain))
        });
        let _ = write!(
            after,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r.plan.lock.name(),
            r.workers.len(),
            esc(&fmt3(r.median_ns())),
            esc(&slower),
            r.handoffs_per_sec().map_or("—".to_string(), fmt3),
            esc(&mm),
            esc(&jain),
            r.lost_updates()
        );
    }
    after.push_str("</tbody></table>");
    if !placement.is_empty() {
        after.push_str(
            "<table class=\"lock-placement\"><thead><tr><th>scenario (spin lock)</th><th>ns/op</th>\
             <th>hand-offs/s</th><th>Jain</th><th>shared region on</th></tr></thead><tbody>",
        );
        for (name, outcome) in placement {
            match outcome {
                Ok(r) => {
                    let _ = write!(
                        after,
                        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        esc(name),
                        esc(&fmt3(r.median_ns())),
                        r.handoffs_per_sec().map_or("—".to_string(), fmt3),
                        r.fairness.as_ref().map_or("—".to_string(), |f| fmt3(f.jain)),
                        esc(&placement_text(&r.region))
                    );
                }
                Err(why) => {
                    let _ = write!(
                        after,
                        "<tr><td>{}</td><td colspan=\"4\">{}</td></tr>",
                        esc(name),
                        esc(why)
                    );
                }
            }
        }
        after.push_str("</tbody></table>");
    }
    let first = runs[0];
    let caption = format!(
        "Every worker (one per CPU) makes {} × {} operations on one shared region of {} pages: take the lock, add one to a shared counter, \
         store to a random page, release. Fairness is each worker's share of the acquisitions made while all were still running \
         (1 is even; a fast but unfair lock starves workers). Shared region on {}.",
        first.plan.pages,
        first.plan.loops,
        first.plan.pages,
        esc(&placement_text(&first.region))
    );
    Some(Figure { svg: out, caption, after })
}
