//! `results list`, `show` and `compare` as text tables.

use std::fmt::Write as _;

use crate::{Comparison, RunSummary, StoredRun};

/// The runs as `results list` prints them.
pub fn list_text(runs: &[RunSummary]) -> String {
    // A host column only when the runs come from more than one host (a shared database).
    let mut hosts: Vec<&str> = runs.iter().map(|r| r.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let by_host = hosts.len() > 1;
    let width = runs.iter().map(|r| r.host.len()).max().unwrap_or(0).max(4);
    let host = |name: &str| if by_host { format!("{name:<width$} ") } else { String::new() };
    let mut out = format!(
        "{:>5}  {}{:<24} {:<22} {:<28} {}\n",
        "id",
        host("host"),
        "recorded (UTC)",
        "command",
        "headline",
        "version"
    );
    for r in runs {
        let headline =
            r.headline.as_ref().map_or("-".to_string(), |(n, v, u)| format!("{n}: {v:.3} {u}"));
        let _ = writeln!(
            out,
            "{:>5}  {}{:<24} {:<22} {:<28} {}{}",
            r.id,
            host(&r.host),
            r.recorded_at,
            r.command,
            headline,
            r.version,
            if r.interrupted { " (interrupted)" } else { "" }
        );
    }
    out
}

/// One run as `results show` prints it.
pub fn show_text(run: &StoredRun) -> String {
    let mut out = format!(
        "run {} — {} — {} — platscope {}\n",
        run.id, run.recorded_at, run.command, run.version
    );
    if !run.host.is_empty() {
        let _ = writeln!(out, "host {} — run {}", run.host, run.uuid);
    }
    if let Some(argv) = run.parameters.get("argv").and_then(|a| a.as_array()) {
        let words: Vec<&str> = argv.iter().filter_map(|w| w.as_str()).collect();
        let _ = writeln!(out, "command line: {}", words.join(" "));
    }
    let env = &run.environment;
    let _ = writeln!(
        out,
        "kernel {}, THP {}, numa_balancing {}, clocksource {}, hypervisor {}",
        env["kernel"].as_str().unwrap_or("?"),
        env["thp_enabled"].as_str().unwrap_or("?"),
        env["numa_balancing"].as_str().unwrap_or("?"),
        env["clocksource"].as_str().unwrap_or("?"),
        env["hypervisor"].as_str().unwrap_or("none")
    );
    if run.interrupted {
        out.push_str("INTERRUPTED: figures cover what was measured before Ctrl-C or SIGTERM\n");
    }
    if let Some(p) = measure::placement::RunPlacement::from_parameters(&run.parameters) {
        let _ = writeln!(out, "{}", p.describe());
    }
    let _ = writeln!(
        out,
        "\n{:<44} {:>10} {:>10} {:>10} {:>10} {:>8}  unit",
        "metric", "median", "p25", "p75", "best", "samples"
    );
    for m in &run.metrics {
        let _ = writeln!(
            out,
            "{:<44} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>8}  {}",
            m.key(),
            m.median,
            m.p25,
            m.p75,
            m.min,
            m.samples.len(),
            m.unit
        );
    }
    if !run.placements.is_empty() {
        out.push_str("\nplacement (requested → verified by the kernel):\n");
        for p in &run.placements {
            let _ = writeln!(out, "  {}: {} → {}", p.worker, p.requested, compact(&p.verified));
        }
    }
    out
}

/// Two runs side by side, as `results compare` prints them.
pub fn compare_text(c: &Comparison) -> String {
    let (a, b) = (c.a, c.b);
    let mut out = format!(
        "{:<44} {:>12} {:>12} {:>10} {:>7}  verdict (run {b} against run {a})\n",
        "metric",
        format!("run {a}"),
        format!("run {b}"),
        "change",
        "ratio"
    );
    for d in &c.deltas {
        let _ = writeln!(
            out,
            "{:<44} {:>12.3} {:>12.3} {:>+9.1}% {:>7.3}  {}",
            d.name,
            d.a_median,
            d.b_median,
            d.delta_pct,
            d.ratio,
            d.verdict.words(d.a_samples, d.b_samples)
        );
    }
    if !c.unmatched.is_empty() {
        let _ = writeln!(out, "in only one run: {}", c.unmatched.join(", "));
    }
    if let Some(why) = &c.placement {
        let _ = writeln!(
            out,
            "placement differs: {why} (here: run {b}; baseline: run {a}); figures that depend \
             on where the CPUs sit have no verdict"
        );
    }
    out
}

/// Placement JSON in one short line: pages per node when that is what it holds.
fn compact(verified: &serde_json::Value) -> String {
    let per_node = |p: &serde_json::Value| -> Option<String> {
        // Arena placements carry `per_node`, page-cache residency `nodes`.
        let nodes = p.get("per_node").or_else(|| p.get("nodes"))?.as_array()?;
        Some(
            nodes
                .iter()
                .map(|n| format!("node {}: {} pages", n["node"], n["pages"]))
                .collect::<Vec<_>>()
                .join(", "),
        )
    };
    match verified {
        serde_json::Value::Array(items) => {
            items.iter().filter_map(per_node).collect::<Vec<_>>().join("; ")
        }
        other => per_node(other).unwrap_or_else(|| other.to_string()),
    }
}
