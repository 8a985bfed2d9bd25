//! The terminal summary `platscope report` prints: every section's headline figures, one line
//! each, in page order — the same list the page's cards and area headings show.

use std::fmt::Write as _;

use report::html::ReportData;

/// Headline figures from a report run; the caller appends the report's path.
pub fn summary_text(d: &ReportData) -> String {
    let mut out = String::new();
    let t = &d.topology;
    let _ = writeln!(
        out,
        "platscope report ({}) — {}, {} node(s), {} CPU(s), {}",
        d.mode,
        t.machine.cpu_model.as_deref().unwrap_or("unknown CPU"),
        t.nodes.len(),
        t.online_cpu_ids().len(),
        d.version
    );
    let mut area = None;
    for (a, h) in d.headlines() {
        if area != Some(a) {
            area = Some(a);
            let _ = writeln!(out, "  {}", a.title());
        }
        let _ = writeln!(out, "    {:<24} {} ({})", format!("{}:", h.name), h.value, h.detail);
    }
    for s in &d.skipped {
        let _ = writeln!(out, "  {} not measured: {}", s.title, s.why);
    }
    if let Some(p) = &d.placement {
        if !p.changed && !p.steps.is_empty() {
            let far = p.steps.iter().all(|s| s.regime == measure::placement::Regime::Far);
            let _ = writeln!(
                out,
                "  placement: one throughout the run{} (a cache line's round trip {})",
                if far { ", far" } else { "" },
                p.hand_offs()
            );
        }
        for note in &p.notes {
            let _ = writeln!(out, "  placement: {note}");
        }
    }
    for note in &d.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    let ids: Vec<i64> = d.stored_runs.iter().map(|(_, id)| *id).collect();
    match (&d.database, ids.iter().min(), ids.iter().max()) {
        (Some(db), Some(first), Some(last)) => {
            let _ =
                writeln!(out, "  stored as runs {first}–{last} in {db} (platscope results list)");
        }
        _ => out.push_str("  runs not stored (--no-store, or no usable results database)\n"),
    }
    out
}
