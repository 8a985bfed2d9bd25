//! The terminal summary of `platscope fleet`: the fleet in one line, its classes, the
//! outliers, the changes newest first with what changed at each, and the configuration changes
//! that moved nothing. Long lists are cut (the JSON and the page have everything).

use std::fmt::Write as _;

use chart::svg::fmt3;

use crate::analysis::Analysis;
use crate::facts::describe;

/// How many rows of each list the terminal shows.
pub const ROWS: usize = 25;

fn more(out: &mut String, total: usize) {
    if total > ROWS {
        let _ = writeln!(out, "  … and {} more (--json or --out DIR for all)", total - ROWS);
    }
}

/// `1.25×`, `0.873×`.
fn times(ratio: f64) -> String {
    format!("{}×", fmt3(ratio))
}

/// The summary of `analysis`; `source` names the store, `window` what was looked at.
pub fn summary(analysis: &Analysis, source: &str, window: &str) -> String {
    let report = &analysis.report;
    let fleet = &analysis.fleet;
    let mut out = String::new();
    let span = fleet
        .span()
        .map(|(a, b)| format!(" from {} to {}", a.strftime("%Y-%m-%d"), b.strftime("%Y-%m-%d")))
        .unwrap_or_default();
    let within = if window.is_empty() { String::new() } else { format!(" ({window})") };
    let _ = writeln!(
        out,
        "fleet: {} host(s) in {} class(es), {} report(s){span} in {source}{within}",
        report.hosts,
        report.classes.len(),
        fleet.reports(),
    );
    let _ = writeln!(out, "\nclasses");
    for class in &report.classes {
        let _ = writeln!(out, "  {} host(s): {}", class.hosts.len(), class.class);
    }
    let _ = writeln!(out, "\noutliers within their class ({})", report.outliers.len());
    if report.outliers.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for o in report.outliers.iter().take(ROWS) {
        let interval = match (o.ratio_low, o.ratio_high) {
            (Some(low), Some(high)) => format!("95% interval {}–{}× on ", fmt3(low), fmt3(high)),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  {:<16} {:<28} {:>9} {} vs class {} ({}, {}: {interval}{}; noise {}%)",
            o.host,
            o.figure,
            fmt3(o.value),
            o.unit,
            fmt3(o.class_median),
            times(o.ratio),
            o.verdict.word(),
            o.rests_on,
            fmt3(o.min_effect * 100.0)
        );
    }
    more(&mut out, report.outliers.len());
    let _ = writeln!(out, "\nchanges, newest first ({})", report.changes.len());
    if report.changes.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for c in report.changes.iter().take(ROWS) {
        let config = if c.config.is_empty() {
            "no configuration change".to_string()
        } else {
            describe(&c.config)
        };
        let _ = writeln!(
            out,
            "  {} {:<16} {:<28} {} → {} {} ({}, {}, p {}): {config}",
            c.at.get(..10).unwrap_or(&c.at),
            c.host,
            c.figure,
            fmt3(c.before),
            fmt3(c.after),
            c.unit,
            times(c.ratio),
            c.verdict.word(),
            fmt3(c.p_value)
        );
    }
    more(&mut out, report.changes.len());
    let quiet = &report.config_changes_without_shift;
    let _ = writeln!(out, "\nconfiguration changes that moved no figure ({})", quiet.len());
    if quiet.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for q in quiet.iter().take(ROWS) {
        let _ = writeln!(
            out,
            "  {} {:<16} {}",
            q.at.get(..10).unwrap_or(&q.at),
            q.host,
            describe(&q.config)
        );
    }
    more(&mut out, quiet.len());
    if !analysis.notes.is_empty() {
        let _ = writeln!(out, "\nnotes");
        for note in &analysis.notes {
            let _ = writeln!(out, "  {note}");
        }
    }
    out
}
