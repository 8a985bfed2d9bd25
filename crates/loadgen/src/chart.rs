//! The report sections of `load`: one run's latency by interval, and a `--sweep-rate`'s
//! throughput achieved, latency percentiles and CPU per transaction against offered rate, with
//! its steps as a table. Drawn with the shared primitives (`chart::svg`) into [`chart::Part`]s,
//! so `--html-out`, `load --out` and `report --from-db` show the same sections.

use std::fmt::Write as _;

use chart::svg::{self, esc, exact, fmt3, px, Plot, ScaleKind};
use chart::{Area, Figure, Headline, Part, Section};
use measure::ToMetrics;

use crate::run::LoadReport;
use crate::stats::Percentiles;

struct Series {
    name: &'static str,
    dash: &'static str,
    points: Vec<(f64, f64)>,
}

/// A shaded stretch of the x axis (an outage), with what it was.
struct Band {
    from: f64,
    to: f64,
    label: String,
}

/// The plot area every load chart uses.
const PLOT: Plot =
    Plot { width: 600.0, height: 360.0, left: 70.0, right: 20.0, top: 34.0, bottom: 56.0 };

/// One line chart: x linear from 0, y linear from 0 or log10 (`log`); `diagonal` draws
/// "y = x" for reference. Points that are not finite (or not positive on a log axis) are left
/// out; every point drawn is a `data` circle with its value.
fn line_chart(
    id: &str,
    title: &str,
    (x_title, y_title): (&str, &str),
    series: &[Series],
    (log, diagonal): (bool, bool),
    bands: &[Band],
) -> String {
    let drawn = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite() && (!log || p.1 > 0.0);
    let points = || series.iter().flat_map(|s| s.points.iter().filter(drawn));
    let band_end = bands.iter().map(|b| b.to).filter(|v| v.is_finite()).fold(0.0, f64::max);
    let x_top = svg::nice_max(points().map(|p| p.0).fold(band_end, f64::max), 5);
    let y_max = points().map(|p| p.1).fold(0.0, f64::max);
    let y = if log {
        let min = points().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let lo = if min.is_finite() { 10f64.powf(min.log10().floor()) } else { 0.01 };
        let hi = 10f64.powf(y_max.max(lo * 10.0).log10().ceil());
        PLOT.y_scale(ScaleKind::Log10, lo, hi)
    } else {
        let top = if diagonal { y_max.max(x_top) } else { y_max };
        PLOT.y_scale(ScaleKind::Linear, 0.0, svg::nice_max(top, 5))
    };
    let x = PLOT.x_scale(ScaleKind::Linear, 0.0, x_top);
    let mut out = svg::open(id, PLOT.width, PLOT.height, title);
    out.push_str(&PLOT.axes(&x, &x.ticks(5), &y, &y.ticks(6)));
    out.push_str(&PLOT.x_title(x_title));
    out.push_str(&PLOT.y_title(y_title));
    for b in bands {
        let (x0, x1) = (x.map(b.from), x.map(b.to));
        let _ = write!(
            out,
            "<rect class=\"outage\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" \
             data-from=\"{}\" data-to=\"{}\"><title>{}</title></rect>",
            px(x0),
            px(PLOT.top),
            px((x1 - x0).max(1.0)),
            px(PLOT.height - PLOT.top - PLOT.bottom),
            exact(b.from),
            exact(b.to),
            esc(&b.label)
        );
    }
    if diagonal {
        let end = x_top.min(y.hi);
        let _ = write!(
            out,
            "<line class=\"reference\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
            px(x.map(0.0)),
            px(y.map(0.0)),
            px(x.map(end)),
            px(y.map(end))
        );
    }
    for (i, s) in series.iter().enumerate() {
        let pts: Vec<&(f64, f64)> = s.points.iter().filter(drawn).collect();
        let line: Vec<String> =
            pts.iter().map(|p| format!("{},{}", px(x.map(p.0)), px(y.map(p.1)))).collect();
        let _ = write!(
            out,
            "<polyline class=\"line\" stroke-dasharray=\"{}\" points=\"{}\"/>",
            s.dash,
            line.join(" ")
        );
        for p in pts {
            let _ = write!(
                out,
                "<circle class=\"data\" cx=\"{}\" cy=\"{}\" r=\"3\" data-value=\"{}\" \
                 data-x=\"{}\"><title>{}: {} at {}</title></circle>",
                px(x.map(p.0)),
                px(y.map(p.1)),
                exact(p.1),
                exact(p.0),
                esc(s.name),
                fmt3(p.1),
                fmt3(p.0)
            );
        }
        let kx = PLOT.left + 6.0 + 130.0 * i as f64;
        let _ = write!(
            out,
            "<line class=\"line\" stroke-dasharray=\"{}\" x1=\"{}\" x2=\"{}\" y1=\"14\" y2=\"14\"/>\
             <text class=\"point-label\" x=\"{}\" y=\"18\">{}</text>",
            s.dash,
            px(kx),
            px(kx + 24.0),
            px(kx + 30.0),
            esc(s.name)
        );
    }
    out.push_str("</svg>");
    out
}

/// `target — workload (protocol), N connection(s), arrivals`: what a run or sweep loaded.
fn describe(r: &LoadReport) -> String {
    format!(
        "{} — {} ({}), {} connection(s), {} arrivals",
        r.target,
        r.workload,
        r.protocol.name(),
        r.connections,
        r.arrivals.describe()
    )
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The stored metric `name` of a run, as its key, for a headline.
fn metric_key(r: &LoadReport, name: &str, pctl: Option<&str>) -> Option<String> {
    r.to_metrics()
        .into_iter()
        .find(|m| {
            m.name == name
                && pctl.is_none_or(|p| m.labels.get("pctl").map(String::as_str) == Some(p))
        })
        .map(|m| m.key())
}

/// A run's outages as shaded windows: from the loss to the first success (to the end of the
/// run when none came).
fn outage_bands(r: &LoadReport) -> Vec<Band> {
    r.outages
        .iter()
        .map(|o| Band {
            from: o.start_s,
            to: o.first_success_s.unwrap_or(r.elapsed_s),
            label: format!("outage {}", crate::render::outage_text(o)),
        })
        .collect()
}

/// A sweep step's outages: each window's time to the first success after it, or "open".
fn outage_cell(s: &LoadReport) -> String {
    if s.outages.is_empty() {
        return "–".to_string();
    }
    let each: Vec<String> = s
        .outages
        .iter()
        .map(|o| {
            let title = esc(&crate::render::outage_text(o));
            match o.time_to_first_success_s() {
                Some(t) => format!("<span title=\"{title}\">{t:.2} at {:.1}</span>", o.start_s),
                None => format!("<span title=\"{title}\">open from {:.1}</span>", o.start_s),
            }
        })
        .collect();
    each.join("; ")
}

/// One steady-rate run's section.
pub const LOAD: Section = Section {
    area: Area::Database,
    id: "chart-load",
    title: "Steady-rate load: latency by interval",
    wide: false,
};
/// A sweep's throughput: the first of its sections (the report's database step draws it first).
pub const LOAD_THROUGHPUT: Section = Section {
    area: Area::Database,
    id: "chart-load-throughput",
    title: "Load sweep: throughput",
    wide: false,
};
pub const LOAD_LATENCY: Section = Section {
    area: Area::Database,
    id: "chart-load-latency",
    title: "Load sweep: latency",
    wide: false,
};
pub const LOAD_CPU: Section = Section {
    area: Area::Database,
    id: "chart-load-cpu",
    title: "Load sweep: CPU per transaction",
    wide: false,
};
pub const LOAD_STEPS: Section = Section {
    area: Area::Database,
    id: "chart-load-steps",
    title: "Load sweep: steps",
    wide: true,
};

/// One run's section: latency (p50, p99, max) of each interval, the run's percentiles and CPU
/// per transaction under it.
pub fn run_parts(r: &LoadReport) -> Vec<Part> {
    let mut part = LOAD.part(None);
    let pts = |f: &dyn Fn(&Percentiles) -> u64| -> Vec<(f64, f64)> {
        r.intervals
            .iter()
            .filter(|l| l.completed > 0)
            .map(|l| (l.end_s, ms(f(&l.latency))))
            .collect()
    };
    let series = [
        Series { name: "p50", dash: "", points: pts(&|p| p.p50_ns) },
        Series { name: "p99", dash: "6 3", points: pts(&|p| p.p99_ns) },
        Series { name: "max", dash: "2 3", points: pts(&|p| p.max_ns) },
    ];
    if r.completed == 0 || series[0].points.is_empty() {
        part.notes.push(match &r.interrupted {
            Some(why) => format!("no transaction completed: {why}"),
            None => "no transaction completed".to_string(),
        });
        return vec![part];
    }
    let svg = line_chart(
        LOAD.id,
        "Latency by interval",
        ("seconds from the first intended start", "latency, ms (log)"),
        &series,
        (true, false),
        &outage_bands(r),
    );
    let mut caption = format!(
        "{}: offered {} tx/s, achieved {} tx/s over {} s; latency from each transaction's \
         intended start (open loop), per interval. Late {} (started more than {} ms after their \
         time), skipped {}, failed {}.",
        esc(&describe(r)),
        fmt3(r.offered_rate),
        fmt3(r.achieved_rate),
        fmt3(r.elapsed_s),
        r.late,
        fmt3(r.late_after_ms),
        r.skipped,
        r.failed
    );
    if let Some(why) = &r.interrupted {
        let _ = write!(caption, " INTERRUPTED: {} (figures cover what ran).", esc(why));
    }
    for o in &r.outages {
        let _ = write!(caption, " Outage (shaded) {}.", esc(&crate::render::outage_text(o)));
    }
    let mut after = String::from(
        "<table class=\"facts-table\"><thead><tr><th>ms</th><th>p50</th><th>p90</th><th>p99</th>\
         <th>p99.9</th><th>max</th></tr></thead><tbody>",
    );
    // The driver's own lateness where it was measured (not in runs stored before it).
    let driver =
        (r.driver_late.count > 0).then_some(("driver late (woke to send)", &r.driver_late));
    let rows = [("latency", &r.latency), ("service time", &r.service), ("schedule lag", &r.lag)];
    for (name, p) in rows.into_iter().chain(driver) {
        let _ = write!(after, "<tr><td>{name}</td>");
        for (_, v) in p.labelled() {
            let _ = write!(
                after,
                "<td class=\"data\" data-value=\"{}\">{}</td>",
                exact(ms(v)),
                fmt3(ms(v))
            );
        }
        after.push_str("</tr>");
    }
    after.push_str("</tbody></table>");
    match (&r.cost, &r.cost_unavailable) {
        (Some(c), _) => {
            let _ = write!(
                after,
                "<p>CPU per transaction: server <span class=\"data\" data-value=\"{}\">{} µs</span>{}, \
                 whole machine {} µs, this driver {} µs.</p>",
                exact(c.server_us_per_tx),
                fmt3(c.server_us_per_tx),
                if c.server_cpu_lower_bound { " (at least)" } else { "" },
                fmt3(c.machine_us_per_tx),
                fmt3(c.driver_us_per_tx)
            );
        }
        (None, Some(why)) => {
            let _ = write!(after, "<p>CPU per transaction not measured: {}</p>", esc(why));
        }
        (None, None) => {}
    }
    part.figure = Some(Figure { svg, caption, after });
    part.headlines.push(Headline {
        name: "load achieved".into(),
        value: format!("{} tx/s", fmt3(r.achieved_rate)),
        detail: format!("offered {} tx/s", fmt3(r.offered_rate)),
        metric: metric_key(r, "load_throughput", None),
    });
    if r.latency.count > 0 {
        part.headlines.push(Headline {
            name: "load p99 latency".into(),
            value: format!("{} ms", fmt3(ms(r.latency.p99_ns))),
            detail: "from the intended start".into(),
            metric: metric_key(r, "load_latency", Some("p99")),
        });
    }
    if let Some(c) = r.cost.filter(|c| c.server_us_per_tx.is_finite()) {
        part.headlines.push(Headline {
            name: "server CPU per transaction".into(),
            value: format!("{} µs", fmt3(c.server_us_per_tx)),
            detail: r.workload.clone(),
            metric: metric_key(r, "load_server_cpu_per_tx", None),
        });
    }
    vec![part]
}

/// A sweep's sections: throughput, latency and CPU per transaction against offered rate, and
/// the steps as a table.
pub fn sweep_parts(steps: &[LoadReport]) -> Vec<Part> {
    let pts = |f: &dyn Fn(&LoadReport) -> f64| -> Vec<(f64, f64)> {
        steps.iter().map(|s| (s.offered_rate, f(s))).collect()
    };
    let [mut throughput, mut latency, mut cpu, mut table] =
        [LOAD_THROUGHPUT, LOAD_LATENCY, LOAD_CPU, LOAD_STEPS].map(|s| s.part(None));
    if steps.is_empty() {
        return vec![throughput, latency, cpu, table];
    }
    let figure = |svg: String, caption: &str| {
        Some(Figure { svg, caption: caption.to_string(), after: String::new() })
    };
    throughput.figure = figure(
        line_chart(
            LOAD_THROUGHPUT.id,
            "Throughput achieved against offered rate",
            ("offered, tx/s", "achieved, tx/s"),
            &[Series { name: "achieved", dash: "", points: pts(&|s| s.achieved_rate) }],
            (false, true),
            &[],
        ),
        "Transactions completed per second at each offered rate; the dotted diagonal is \
         “achieved = offered”. Below it the server (or the driver) could not keep up.",
    );
    latency.figure = figure(
        line_chart(
            LOAD_LATENCY.id,
            "Latency from the intended start against offered rate",
            ("offered, tx/s", "latency, ms (log)"),
            &[
                Series { name: "p50", dash: "", points: pts(&|s| ms(s.latency.p50_ns)) },
                Series { name: "p99", dash: "6 3", points: pts(&|s| ms(s.latency.p99_ns)) },
                Series { name: "p99.9", dash: "2 3", points: pts(&|s| ms(s.latency.p999_ns)) },
            ],
            (true, false),
            &[],
        ),
        "Latency measured from each transaction's intended start (open loop): queueing behind a \
         slow server counts.",
    );
    let cost = |f: fn(&crate::cost::Cost) -> f64| {
        move |s: &LoadReport| s.cost.as_ref().map_or(f64::NAN, f)
    };
    cpu.figure = figure(
        line_chart(
            LOAD_CPU.id,
            "CPU per transaction against offered rate",
            ("offered, tx/s", "CPU per transaction, µs (log)"),
            &[
                Series { name: "server", dash: "", points: pts(&cost(|c| c.server_us_per_tx)) },
                Series {
                    name: "whole machine",
                    dash: "6 3",
                    points: pts(&cost(|c| c.machine_us_per_tx)),
                },
                Series { name: "driver", dash: "2 3", points: pts(&cost(|c| c.driver_us_per_tx)) },
            ],
            (true, false),
            &[],
        ),
        "CPU time per completed transaction: the server's process tree (exact per-process \
         clocks), all CPUs' busy time, and the load driver itself.",
    );
    let mut rows = String::from(
        "<table class=\"runs\"><tr><th>offered tx/s</th><th>achieved</th><th>p50 ms</th>\
         <th>p99 ms</th><th>p99.9 ms</th><th>late</th><th>failed</th><th>outage s</th><th>server µs/tx</th>\
         <th>machine µs/tx</th><th>driver µs/tx</th></tr>",
    );
    for s in steps {
        let c = s.cost;
        let f = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1}"));
        let _ = write!(
            rows,
            "<tr><td class=\"num\">{}</td><td class=\"num\">{:.1}</td><td class=\"num\">{:.3}</td>\
             <td class=\"num\">{:.3}</td><td class=\"num\">{:.3}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            s.offered_rate,
            s.achieved_rate,
            ms(s.latency.p50_ns),
            ms(s.latency.p99_ns),
            ms(s.latency.p999_ns),
            s.late,
            s.failed,
            outage_cell(s),
            f(c.map(|c| c.server_us_per_tx)),
            f(c.map(|c| c.machine_us_per_tx)),
            f(c.map(|c| c.driver_us_per_tx)),
        );
    }
    rows.push_str("</table>");
    let mut caption =
        format!("{}; one fixed-rate step per offered rate.", esc(&describe(&steps[0])));
    if steps.iter().any(|s| !s.outages.is_empty()) {
        caption.push_str(
            " Outage s: a step rode through a lost server, from the loss to the first \
             transaction that completed after it (its failures are in “failed”).",
        );
    }
    if let Some(why) = steps.iter().find_map(|s| s.interrupted.as_deref()) {
        let _ = write!(caption, " INTERRUPTED: {} (the steps shown are those that ran).", esc(why));
    }
    table.figure = Some(Figure { svg: rows, caption, after: String::new() });
    if let Some(best) = steps.iter().max_by(|a, b| a.achieved_rate.total_cmp(&b.achieved_rate)) {
        throughput.headlines.push(Headline {
            name: "load sweep: most achieved".into(),
            value: format!("{} tx/s", fmt3(best.achieved_rate)),
            detail: format!("offered {} tx/s, {}", fmt3(best.offered_rate), best.workload),
            // Backed by the step's interval rates, one sample an interval, so a comparison
            // can test it (the step's own rate is one figure).
            metric: metric_key(best, "load_interval_throughput", None),
        });
    }
    vec![throughput, latency, cpu, table]
}

/// The x ticks of a chart, for tests.
#[cfg(test)]
fn tick_values(ticks: &[svg::Tick]) -> Vec<f64> {
    ticks.iter().map(|t| t.value).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    use crate::cost::Cost;
    use crate::run::{LoadReport, Protocol};
    use crate::schedule::Arrivals;
    use crate::stats::Percentiles;

    pub(crate) fn step(rate: f64, achieved: f64, p99_ms: u64, cost: Option<f64>) -> LoadReport {
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
            driver_late: Percentiles::default(),
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
            outages: Vec::new(),
        }
    }

    /// An interval line of `r` with its latency, nothing late, skipped or failed.
    fn interval(r: &LoadReport, end_s: f64, completed: u64, down: u32) -> crate::run::IntervalLine {
        crate::run::IntervalLine {
            end_s,
            completed,
            rate: completed as f64,
            latency: r.latency,
            late: 0,
            skipped: 0,
            errors: 0,
            down,
        }
    }

    /// A sweep's sections on one page, as `load --out` writes it.
    fn sweep_html(steps: &[LoadReport], title: &str) -> String {
        let body: String =
            sweep_parts(steps).iter().map(|p| chart::render_part(p, "no steps")).collect();
        chart::page(title, "test", &body)
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
        assert!(page.starts_with("<!DOCTYPE html>"));
        // Every drawn point carries its figure.
        assert!(page.contains("data-value=\"310\""), "achieved 310 tx/s is a data point");
    }

    #[test]
    fn the_sweep_s_headline_is_backed_by_one_sample_an_interval() {
        let mut top = step(1600.0, 1598.0, 3, None);
        top.intervals =
            (1..=8u32).map(|i| interval(&top, f64::from(i) / 4.0, 400 - u64::from(i), 0)).collect();
        let steps = [step(100.0, 100.0, 2, None), top.clone()];
        let head = &sweep_parts(&steps)[0].headlines[0];
        assert_eq!(head.name, "load sweep: most achieved");
        let key = head.metric.as_deref().expect("a headline backed by a metric");
        assert!(key.starts_with("load_interval_throughput{") && key.contains("rate=1600"), "{key}");
        let metrics = top.to_metrics();
        let backing = metrics.iter().find(|m| m.key() == key).expect("the headline's metric");
        assert_eq!(backing.samples.len(), 8);
    }

    #[test]
    fn one_run_draws_its_intervals_and_headlines() {
        let mut r = step(200.0, 199.5, 7, Some(55.5));
        let line = |end_s, completed| interval(&r, end_s, completed, 0);
        r.intervals = vec![line(1.0, 200), line(2.0, 0), line(3.0, 199)];
        let parts = run_parts(&r);
        assert_eq!(parts.len(), 1);
        let f = parts[0].figure.as_ref().expect("drawn");
        // p50, p99 and max of the two intervals that completed anything.
        assert_eq!(f.svg.matches("<circle").count(), 6, "{}", f.svg);
        assert!(f.caption.contains("PostgreSQL at &lt;test&gt;"), "{}", f.caption);
        assert!(f.after.contains("data-value=\"55.5\""), "{}", f.after);
        let names: Vec<&str> = parts[0].headlines.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["load achieved", "load p99 latency", "server CPU per transaction"]);
        assert!(parts[0].headlines.iter().all(|h| h.metric.is_some()));
        r.completed = 0;
        r.intervals.clear();
        assert!(run_parts(&r)[0].figure.is_none(), "nothing completed: nothing drawn");
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

    /// The axes' tops and tick labels come from `chart::svg`: round numbers above the data.
    #[test]
    fn nice_tops() {
        assert_eq!(svg::nice_max(0.0, 5), 1.0);
        assert_eq!(svg::nice_max(3.2, 5), 3.5, "a whole 0.5 step above 3.2 plus headroom");
        assert_eq!(svg::nice_max(200.0, 5), 250.0);
        let x = PLOT.x_scale(ScaleKind::Linear, 0.0, svg::nice_max(360.0, 5));
        assert_eq!(tick_values(&x.ticks(5)), [0.0, 100.0, 200.0, 300.0, 400.0]);
        let labels: Vec<String> = x.ticks(5).into_iter().filter_map(|t| t.label).collect();
        assert_eq!(labels, ["0", "100", "200", "300", "400"]);
        assert_eq!(svg::trim_zeros(&fmt3(0.25)), "0.25");
    }

    fn outage(start_s: f64, first_success_s: Option<f64>) -> crate::run::Outage {
        crate::run::Outage {
            start_s,
            reconnected_s: first_success_s.map(|t| t - 0.1),
            first_success_s,
            connections: 1,
            failed: 40,
            causes: [("connection lost".to_string(), 1), ("connection refused".to_string(), 39)]
                .into(),
        }
    }

    #[test]
    fn an_outage_is_shaded_captioned_printed_and_stored() {
        let mut r = step(200.0, 180.0, 7, Some(55.5));
        r.elapsed_s = 5.0;
        let line = |end_s, completed, down| interval(&r, end_s, completed, down);
        r.intervals = vec![line(1.0, 200, 0), line(2.0, 20, 1), line(3.0, 150, 0)];
        r.outages = vec![outage(1.25, Some(2.5))];
        let f = run_parts(&r).remove(0).figure.expect("drawn");
        assert_eq!(f.svg.matches("<rect class=\"outage\"").count(), 1, "{}", f.svg);
        assert!(f.svg.contains("data-from=\"1.25\" data-to=\"2.5\""), "{}", f.svg);
        assert!(f.caption.contains("Outage (shaded) from 1.25 s to 2.50 s"), "{}", f.caption);
        assert!(f.caption.contains("first success 1.25 s after the loss"), "{}", f.caption);
        let text = crate::render::render_report(&r);
        assert!(text.contains("outage  from 1.25 s"), "{text}");
        assert!(text.contains("connection refused: 39"), "{text}");
        assert!(
            crate::render::interval_line(&r.intervals[1]).ends_with("OUTAGE: 1 connection(s) down")
        );
        assert!(!crate::render::interval_line(&r.intervals[0]).contains("OUTAGE"));
        let metrics = measure::ToMetrics::to_metrics(&r);
        let took = metrics.iter().find(|m| m.name == "load_outage_to_first_success");
        assert_eq!(took.map(|m| m.samples.clone()), Some(vec![1.25]));
        // An open outage runs to the end of the run on the chart and says so.
        r.outages = vec![outage(4.0, None)];
        let f = run_parts(&r).remove(0).figure.expect("drawn");
        assert!(f.svg.contains("data-from=\"4\" data-to=\"5\""), "{}", f.svg);
        assert!(f.caption.contains("no transaction completed after it"), "{}", f.caption);
        // The sweep table has the window of a step that rode through one.
        let mut quiet = step(100.0, 100.0, 2, None);
        quiet.outages.clear();
        r.outages = vec![outage(1.25, Some(2.5))];
        let page = sweep_html(&[quiet, r], "sweep");
        assert!(page.contains(">1.25 at 1.2</span>"), "{page}");
        assert!(page.contains("Outage s: a step rode through"), "{page}");
    }
}
