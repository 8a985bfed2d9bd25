//! The `--sweep-rate` page: throughput achieved, latency percentiles and CPU per transaction
//! against offered rate, as inline SVG in one self-contained HTML file written atomically.
//!
//! The page uses the one stylesheet (`chart::CSS`) so it looks
//! like `report.html`; it is drawn here rather than in `report` because the report's SVG
//! helpers are private to it and `report` knows nothing of how a figure was made, while this
//! page only ever shows load steps.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::run::LoadReport;
use crate::Error;

const STYLE: &str = chart::CSS;

fn esc(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A round top for an axis: 1, 2 or 5 × 10^k at or above `max`.
pub fn nice_max(max: f64) -> f64 {
    if !(max.is_finite() && max > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|v| *v >= max * 0.999_999).unwrap_or(10.0 * p)
}

struct Series {
    name: &'static str,
    dash: &'static str,
    points: Vec<(f64, f64)>,
}

/// One line chart: x linear from 0, y linear from 0 or log10 (`log`).
fn chart(
    id: &str,
    title: &str,
    x_title: &str,
    y_title: &str,
    series: &[Series],
    log: bool,
    diagonal: bool,
) -> String {
    let (w, h, l, r, t, b) = (600.0, 360.0, 70.0, 20.0, 34.0, 56.0);
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let x_max = nice_max(xs.fold(0.0, f64::max));
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let (y_lo, y_hi) = if log {
        let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ys.iter().copied().fold(0.0, f64::max);
        let lo = if lo.is_finite() { 10f64.powf(lo.log10().floor()) } else { 0.01 };
        (lo, 10f64.powf(hi.max(lo * 10.0).log10().ceil()))
    } else {
        (
            0.0,
            nice_max(ys.iter().copied().fold(0.0, f64::max).max(if diagonal {
                x_max
            } else {
                0.0
            })),
        )
    };
    let mx = |x: f64| l + (x / x_max) * (w - l - r);
    let my = |y: f64| {
        let f = if log {
            (y.max(y_lo).log10() - y_lo.log10()) / (y_hi.log10() - y_lo.log10())
        } else {
            y / y_hi
        };
        h - b - f * (h - t - b)
    };
    let mut out = format!(
        "<svg id=\"{id}\" class=\"chart\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-labelledby=\"{id}-title\"><title id=\"{id}-title\">{}</title><g class=\"axes\">",
        esc(title)
    );
    let y_ticks: Vec<f64> = if log {
        let mut v = Vec::new();
        let mut y = y_lo;
        while y <= y_hi * 1.0001 {
            v.push(y);
            y *= 10.0;
        }
        v
    } else {
        (0..=5).map(|i| y_hi * f64::from(i) / 5.0).collect()
    };
    for y in y_ticks {
        let py = my(y);
        let _ = write!(
            out,
            "<line class=\"grid\" x1=\"{l}\" x2=\"{}\" y1=\"{py:.1}\" y2=\"{py:.1}\"/><text class=\"tick-label\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            w - r,
            l - 6.0,
            py + 4.0,
            trim(y)
        );
    }
    for i in 0..=5 {
        let x = x_max * f64::from(i) / 5.0;
        let _ = write!(
            out,
            "<text class=\"tick-label\" x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            mx(x),
            h - b + 18.0,
            trim(x)
        );
    }
    let _ = write!(
        out,
        "<line class=\"axis\" x1=\"{l}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/><line class=\"axis\" x1=\"{l}\" x2=\"{l}\" y1=\"{t}\" y2=\"{}\"/>\
         <text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
         <text class=\"axis-title\" transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}</text></g>",
        w - r, h - b, h - b, h - b,
        (l + w - r) / 2.0, h - 12.0, esc(x_title),
        (t + h - b) / 2.0, esc(y_title)
    );
    if diagonal {
        let _ = write!(
            out,
            "<line class=\"reference\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/>",
            mx(0.0),
            my(0.0),
            mx(x_max),
            my(x_max.min(y_hi))
        );
    }
    for (i, s) in series.iter().enumerate() {
        let pts: Vec<String> = s
            .points
            .iter()
            .filter(|p| p.1.is_finite() && (!log || p.1 > 0.0))
            .map(|p| format!("{:.1},{:.1}", mx(p.0), my(p.1)))
            .collect();
        let _ = write!(
            out,
            "<polyline class=\"line\" stroke-dasharray=\"{}\" points=\"{}\"/>",
            s.dash,
            pts.join(" ")
        );
        for p in &pts {
            if let Some((x, y)) = p.split_once(',') {
                let _ = write!(out, "<circle class=\"data\" cx=\"{x}\" cy=\"{y}\" r=\"3\"/>");
            }
        }
        let kx = l + 6.0 + 130.0 * i as f64;
        let _ = write!(
            out,
            "<line class=\"line\" stroke-dasharray=\"{}\" x1=\"{kx:.1}\" x2=\"{:.1}\" y1=\"14\" y2=\"14\"/><text class=\"point-label\" x=\"{:.1}\" y=\"18\">{}</text>",
            s.dash, kx + 24.0, kx + 30.0, esc(s.name)
        );
    }
    out.push_str("</svg>");
    out
}

fn trim(v: f64) -> String {
    let s = if v.abs() >= 100.0 || v == v.round() { format!("{v:.0}") } else { format!("{v:.3}") };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The page for a sweep's steps.
pub fn sweep_html(steps: &[LoadReport], title: &str) -> String {
    let pts = |f: &dyn Fn(&LoadReport) -> f64| -> Vec<(f64, f64)> {
        steps.iter().map(|s| (s.offered_rate, f(s))).collect()
    };
    let thr = chart(
        "chart-load-throughput",
        "Throughput achieved against offered rate",
        "offered, tx/s",
        "achieved, tx/s",
        &[Series { name: "achieved", dash: "", points: pts(&|s| s.achieved_rate) }],
        false,
        true,
    );
    let lat = chart(
        "chart-load-latency",
        "Latency from the intended start against offered rate",
        "offered, tx/s",
        "latency, ms (log)",
        &[
            Series { name: "p50", dash: "", points: pts(&|s| s.latency.p50_ns as f64 / 1e6) },
            Series { name: "p99", dash: "6 3", points: pts(&|s| s.latency.p99_ns as f64 / 1e6) },
            Series { name: "p99.9", dash: "2 3", points: pts(&|s| s.latency.p999_ns as f64 / 1e6) },
        ],
        true,
        false,
    );
    let cpu = chart(
        "chart-load-cpu",
        "CPU per transaction against offered rate",
        "offered, tx/s",
        "CPU per transaction, µs (log)",
        &[
            Series {
                name: "server",
                dash: "",
                points: pts(&|s| s.cost.map_or(f64::NAN, |c| c.server_us_per_tx)),
            },
            Series {
                name: "whole machine",
                dash: "6 3",
                points: pts(&|s| s.cost.map_or(f64::NAN, |c| c.machine_us_per_tx)),
            },
            Series {
                name: "driver",
                dash: "2 3",
                points: pts(&|s| s.cost.map_or(f64::NAN, |c| c.driver_us_per_tx)),
            },
        ],
        true,
        false,
    );
    let mut rows = String::new();
    for s in steps {
        let c = s.cost;
        let f = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1}"));
        let _ = write!(
            rows,
            "<tr><td class=\"num\">{}</td><td class=\"num\">{:.1}</td><td class=\"num\">{:.3}</td><td class=\"num\">{:.3}</td><td class=\"num\">{:.3}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            s.offered_rate,
            s.achieved_rate,
            s.latency.p50_ns as f64 / 1e6,
            s.latency.p99_ns as f64 / 1e6,
            s.latency.p999_ns as f64 / 1e6,
            s.late,
            s.failed,
            f(c.map(|c| c.server_us_per_tx)),
            f(c.map(|c| c.machine_us_per_tx)),
            f(c.map(|c| c.driver_us_per_tx)),
        );
    }
    let first = steps.first();
    let sub = first.map_or(String::new(), |s| {
        format!(
            "{} — {} ({}), {} connection(s), {} arrivals",
            s.target,
            s.workload,
            s.protocol.name(),
            s.connections,
            s.arrivals.describe()
        )
    });
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head>\
         <body><div class=\"page\"><h1>{t}</h1><p class=\"sub\">{sub}</p><main class=\"charts\">\
         <section><figure>{thr}<figcaption>Transactions completed per second at each offered rate; the dotted diagonal is “achieved = offered”. Below it the server (or the driver) could not keep up.</figcaption></figure></section>\
         <section><figure>{lat}<figcaption>Latency measured from each transaction's intended start (open loop): queueing behind a slow server counts.</figcaption></figure></section>\
         <section><figure>{cpu}<figcaption>CPU time per completed transaction: the server's process tree (exact per-process clocks), all CPUs' busy time, and the load driver itself.</figcaption></figure></section>\
         </main><table class=\"runs\"><tr><th>offered tx/s</th><th>achieved</th><th>p50 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>late</th><th>failed</th><th>server µs/tx</th><th>machine µs/tx</th><th>driver µs/tx</th></tr>{rows}</table>\
         <footer><p class=\"colophon\">platscope load --sweep-rate</p></footer></div></body></html>",
        t = esc(title),
        sub = esc(&sub)
    )
}

/// Writes the page next to `path` and renames it over, so a crash never leaves half a file.
pub fn write_sweep_html(path: &Path, steps: &[LoadReport], title: &str) -> Result<PathBuf, Error> {
    let tmp = path.with_extension(format!("html.tmp-{}", std::process::id()));
    let result =
        std::fs::write(&tmp, sweep_html(steps, title)).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(source) = result {
        std::fs::remove_file(&tmp).ok();
        return Err(Error::Io { path: path.to_path_buf(), source });
    }
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::cost::Cost;
    use crate::run::{LoadReport, Protocol};
    use crate::schedule::Arrivals;
    use crate::stats::Percentiles;

    fn step(rate: f64, achieved: f64, p99_ms: u64, cost: Option<f64>) -> LoadReport {
        let lat = Percentiles {
            count: 10,
            mean_ns: 1e6,
            p50_ns: 1_000_000,
            p90_ns: 2_000_000,
            p99_ns: p99_ms * 1_000_000,
            p999_ns: p99_ms * 2_000_000,
            max_ns: p99_ms * 3_000_000,
        };
        LoadReport {
            server: crate::ServerKind::Postgres,
            target: "PostgreSQL at <test>".into(),
            workload: "point-select".into(),
            protocol: Protocol::Prepared,
            arrivals: Arrivals::Fixed,
            offered_rate: rate,
            connections: 1,
            elapsed_s: 1.0,
            scheduled: 10,
            completed: 10,
            failed: 0,
            late: 0,
            late_after_ms: 5.0,
            skipped: 0,
            max_lag_ms: None,
            unstarted: 0,
            retries: 0,
            errors: Default::default(),
            achieved_rate: achieved,
            latency: lat,
            service: lat,
            lag: Percentiles::default(),
            latency_log2_us: Default::default(),
            intervals: Vec::new(),
            cost: cost.map(|us| Cost {
                server_pid: 1,
                server_processes: 2,
                server_cpu_ns: 0,
                server_cpu_lower_bound: false,
                machine_busy_ns: 0,
                driver_cpu_ns: 0,
                transactions: 10,
                server_us_per_tx: us,
                machine_us_per_tx: us * 3.0,
                driver_us_per_tx: us / 4.0,
            }),
            cost_unavailable: None,
            interrupted: None,
        }
    }

    #[test]
    fn sweep_page_draws_three_charts_and_escapes() {
        let steps = [step(100.0, 100.0, 2, Some(40.0)), step(400.0, 310.0, 90, None)];
        let page = sweep_html(&steps, "Load <sweep>");
        assert_eq!(page.matches("<svg").count(), 3);
        assert!(page.contains("Load &lt;sweep&gt;") && page.contains("PostgreSQL at &lt;test&gt;"));
        assert!(!page.contains("NaN") && !page.contains("inf"), "no unmeasured points drawn");
        // Throughput: two points; latency: three series of two; CPU: one point each.
        let circles = page.matches("<circle").count();
        assert_eq!(circles, 2 + 3 * 2 + 3, "{circles}");
        assert!(page.contains("<td class=\"num\">310.0</td>"));
        assert!(page.contains("<td class=\"num\">–</td>"), "unmeasured CPU is a dash");
        let dir = std::env::temp_dir().join(format!("loadgen-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let path = dir.join("s.html");
        assert!(write_sweep_html(&path, &steps, "t").is_ok());
        assert!(std::fs::read_to_string(&path).is_ok_and(|t| t.starts_with("<!DOCTYPE html>")));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn summary_text_has_percentiles_cost_and_log2() {
        let mut r = step(200.0, 199.5, 7, Some(55.5));
        r.latency_log2_us.add(300);
        r.latency_log2_us.add(700);
        r.errors.insert("40001".into(), 3);
        let text = crate::render::render_report(&r);
        assert!(text.contains("server 55.5 µs") && text.contains("driver 13.9 µs"), "{text}");
        assert!(text.contains("40001: 3"), "{text}");
        assert!(text.contains("------------- Distribution -------------"), "{text}");
        assert!(
            text.contains("  latency             1.00      2.00      7.00      14.0      21.0"),
            "{text}"
        );
        let metrics = measure::ToMetrics::to_metrics(&r);
        assert!(metrics.iter().any(|m| m.key().contains("load_latency")
            && m.labels.get("pctl").map(String::as_str) == Some("p99")
            && m.samples == [7e6]));
        assert!(metrics
            .iter()
            .any(|m| m.name == "load_server_cpu_per_tx" && (m.samples[0] - 55_500.0).abs() < 1e-6));
    }

    #[test]
    fn nice_tops() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(3.2), 5.0);
        assert_eq!(nice_max(200.0), 200.0);
        assert_eq!(nice_max(201.0), 500.0);
        assert_eq!(trim(0.25), "0.25");
        assert_eq!(trim(400.0), "400");
    }
}
