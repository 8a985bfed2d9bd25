//! Text output (the interval lines and the summary) and the stored metrics.

use std::fmt::Write as _;

use measure::{Metric, ToMetrics, Unit};

use crate::run::{IntervalLine, LoadReport, Outage};
use crate::stats::{ms, Percentiles};

/// The header over the interval lines.
pub fn interval_header() -> String {
    format!(
        "{:>8} {:>9} {:>9} {:>9} {:>9} {:>6} {:>6} {:>6}",
        "time s", "tx/s", "p50 ms", "p99 ms", "max ms", "late", "skip", "errors"
    )
}

/// One interval line; connections lost at its end are named after it.
pub fn interval_line(l: &IntervalLine) -> String {
    let mut line = format!(
        "{:>8.1} {:>9.1} {:>9} {:>9} {:>9} {:>6} {:>6} {:>6}",
        l.end_s,
        l.rate,
        ms(l.latency.p50_ns),
        ms(l.latency.p99_ns),
        ms(l.latency.max_ns),
        l.late,
        l.skipped,
        l.errors
    );
    if l.down > 0 {
        let _ = write!(line, "  OUTAGE: {} connection(s) down", l.down);
    }
    line
}

/// What an outage's window and failures were, on one line (text and chart caption).
pub fn outage_text(o: &Outage) -> String {
    let causes: Vec<String> = o.causes.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let back = match (o.time_to_first_success_s(), o.first_success_s, o.reconnected_s) {
        (Some(took), Some(at), Some(re)) => format!(
            "to {at:.2} s: first success {took:.2} s after the loss (reconnected at {re:.2} s)"
        ),
        (Some(took), Some(at), None) => {
            format!("to {at:.2} s: first success {took:.2} s after the loss")
        }
        _ => "to the end: no transaction completed after it".to_string(),
    };
    format!(
        "from {:.2} s {back}; {} connection(s) lost, {} transaction(s) failed ({})",
        o.start_s,
        o.connections,
        o.failed,
        causes.join(", ")
    )
}

fn pct_row(name: &str, p: &Percentiles) -> String {
    let mut s = format!("  {name:<14}");
    for (_, v) in p.labelled() {
        let _ = write!(s, " {:>9}", ms(v));
    }
    let _ = write!(s, " {:>9}", ms(p.mean_ns as u64));
    s
}

/// The summary after a run.
pub fn render_report(r: &LoadReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} ({}), offered {} tx/s ({}) over {} connection(s), {:.1} s",
        r.target,
        r.workload,
        r.protocol.name(),
        r.offered_rate,
        r.arrivals.describe(),
        r.connections,
        r.elapsed_s
    );
    if let Some(why) = &r.interrupted {
        let _ = writeln!(out, "INTERRUPTED: {why} (figures cover what ran)");
    }
    let _ = writeln!(
        out,
        "transactions  {} completed of {} scheduled: {:.1} tx/s achieved; late {} (started > {} ms after their time), skipped {}{}, failed {}",
        r.completed,
        r.scheduled,
        r.achieved_rate,
        r.late,
        r.late_after_ms,
        r.skipped,
        r.max_lag_ms.map_or(String::new(), |m| format!(" (--max-lag {m} ms)")),
        r.failed
    );
    if r.unstarted > 0 {
        let _ = writeln!(
            out,
            "behind at the end  {} more were due before the end but could not start: the offered rate was not sustained",
            r.unstarted
        );
    }
    if !r.errors.is_empty() {
        let list: Vec<String> = r.errors.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        let _ = writeln!(
            out,
            "errors by SQLSTATE or connection  {} ({} retried)",
            list.join(", "),
            r.retries
        );
    }
    for o in &r.outages {
        let _ = writeln!(out, "outage  {}", outage_text(o));
    }
    let _ = writeln!(
        out,
        "\n  {:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "ms", "p50", "p90", "p99", "p99.9", "max", "mean"
    );
    let _ = writeln!(out, "{}", pct_row("latency", &r.latency));
    let _ = writeln!(out, "{}", pct_row("service time", &r.service));
    let _ = writeln!(out, "{}", pct_row("schedule lag", &r.lag));
    if r.driver_late.count > 0 {
        let _ = writeln!(out, "{}", pct_row("driver late", &r.driver_late));
    }
    let _ = writeln!(
        out,
        "  (latency: from the intended start; service time: from the actual start, what a closed-loop tool reports)"
    );
    if r.driver_late.count > 0 {
        let _ = writeln!(
            out,
            "  (driver late: how late this driver woke to send the {} of {} transactions whose connection was waiting for their time; the rest of the lag is queueing behind the server)",
            r.driver_late.count,
            r.scheduled
        );
    }
    match (&r.cost, &r.cost_unavailable) {
        (Some(c), _) => {
            let _ = writeln!(
                out,
                "\nCPU per transaction  server {:.1} µs{} (PID {} and {} more process(es)), whole machine {:.1} µs, this driver {:.1} µs",
                c.server_us_per_tx,
                if c.server_cpu_lower_bound { " (at least)" } else { "" },
                c.server_pid,
                c.server_processes.saturating_sub(1),
                c.machine_us_per_tx,
                c.driver_us_per_tx
            );
        }
        (None, Some(why)) => {
            let _ = writeln!(out, "\nCPU per transaction  not measured: {why}");
        }
        (None, None) => {}
    }
    let hist = r.latency_log2_us.render();
    if !hist.is_empty() {
        let _ = writeln!(out, "\nlatency, µs (from the intended start)");
        out.push_str(&hist);
    }
    out
}

/// One line per sweep step.
pub fn sweep_line(r: &LoadReport) -> String {
    let cpu = r.cost.map_or("-".to_string(), |c| format!("{:.1}", c.server_us_per_tx));
    format!(
        "{:>9} {:>10.1} {:>9} {:>9} {:>9} {:>7} {:>12}",
        r.offered_rate,
        r.achieved_rate,
        ms(r.latency.p50_ns),
        ms(r.latency.p99_ns),
        ms(r.latency.p999_ns),
        r.late,
        cpu
    )
}

/// The header over [`sweep_line`]s.
pub fn sweep_header() -> String {
    format!(
        "{:>9} {:>10} {:>9} {:>9} {:>9} {:>7} {:>12}",
        "offered", "achieved", "p50 ms", "p99 ms", "p99.9 ms", "late", "server µs/tx"
    )
}

impl ToMetrics for LoadReport {
    fn to_metrics(&self) -> Vec<Metric> {
        let label = |m: Metric| {
            m.label("server", self.server_name())
                .label("workload", &self.workload)
                .label("protocol", self.protocol.name())
                .label("rate", self.offered_rate)
        };
        let one = |name: &str, unit: Unit, v: f64| label(Metric::new(name, unit, vec![v]));
        let mut out = vec![
            one("load_throughput", Unit::PerSecond, self.achieved_rate),
            label(Metric::new(
                "load_interval_throughput",
                Unit::PerSecond,
                self.intervals.iter().map(|l| l.rate).collect(),
            )),
            one("load_completed", Unit::Count, self.completed as f64),
            one("load_late", Unit::Count, self.late as f64),
            one("load_skipped", Unit::Count, self.skipped as f64),
            one("load_failed", Unit::Count, self.failed as f64),
            one("load_unstarted", Unit::Count, self.unstarted as f64),
        ];
        for (name, p) in [
            ("load_latency", &self.latency),
            ("load_service_time", &self.service),
            ("load_schedule_lag", &self.lag),
            ("load_driver_late", &self.driver_late),
        ] {
            if p.count == 0 {
                continue;
            }
            for (pctl, v) in p.labelled() {
                out.push(one(name, Unit::Nanoseconds, v as f64).label("pctl", pctl));
            }
        }
        for (cause, n) in &self.errors {
            // A SQLSTATE is five characters; the rest are connection causes.
            let key = if cause.len() == 5 && !cause.contains(' ') { "sqlstate" } else { "cause" };
            out.push(one("load_errors", Unit::Count, *n as f64).label(key, cause));
        }
        if !self.outages.is_empty() {
            out.push(one("load_outages", Unit::Count, self.outages.len() as f64));
            let took: Vec<f64> =
                self.outages.iter().filter_map(Outage::time_to_first_success_s).collect();
            if !took.is_empty() {
                out.push(label(Metric::new("load_outage_to_first_success", Unit::Seconds, took)));
            }
        }
        if let Some(c) = &self.cost {
            // ns per transaction: the metric units have no µs.
            out.push(one("load_server_cpu_per_tx", Unit::Nanoseconds, c.server_us_per_tx * 1e3));
            out.push(one("load_machine_cpu_per_tx", Unit::Nanoseconds, c.machine_us_per_tx * 1e3));
            out.push(one("load_driver_cpu_per_tx", Unit::Nanoseconds, c.driver_us_per_tx * 1e3));
        }
        out.retain(|m| m.samples.iter().all(|v| v.is_finite()));
        out
    }
}

impl LoadReport {
    fn server_name(&self) -> &'static str {
        self.server.name()
    }
}
