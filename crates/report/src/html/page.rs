//! The page around the charts: the header with the machine's facts, the contents bar, the
//! headline-figure cards and the footer with the notes and the stored runs.

use std::fmt::Write as _;

use chart::{card, Area, Part};
use measure::placement::{PlacementSummary, Regime};

use super::{area_anchor, ReportData};
use chart::svg::{bytes_label, esc};

fn fact(out: &mut String, name: &str, value: &str) {
    let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", esc(name), esc(value));
}

pub(super) fn header(d: &ReportData) -> String {
    let t = &d.topology;
    let m = &t.machine;
    let mut out = String::from("<header>");
    let model = m.cpu_model.as_deref().unwrap_or("unknown CPU");
    let _ = write!(
        out,
        "<h1>platscope report</h1><p class=\"sub\">{} · {} mode · generated {} · platscope {}</p>",
        esc(model),
        esc(&d.mode),
        esc(&d.generated_at),
        esc(&d.version)
    );
    out.push_str("<dl class=\"facts\">");
    let cpu = match (&m.cpu_vendor, &m.cpu_model) {
        (Some(v), Some(model)) if !model.contains(v.as_str()) => format!("{model} ({v})"),
        (_, Some(model)) => model.clone(),
        (Some(v), None) => v.clone(),
        (None, None) => "unknown".to_string(),
    };
    let cpu = match &m.architecture {
        Some(a) => format!("{cpu}, {a}"),
        None => cpu,
    };
    fact(&mut out, "CPU", &cpu);
    let online = t.online_cpu_ids();
    let offline = t.offline_cpu_ids();
    let mut cpus = format!(
        "{} online ({}), {} core(s), {} package(s)",
        online.len(),
        topo::idlist::format(&online),
        m.cores,
        m.packages
    );
    if !offline.is_empty() {
        let _ = write!(cpus, "; offline {}", topo::idlist::format(&offline));
    }
    if let Some(smt) = t.environment.as_ref().and_then(|e| e.smt_control.as_ref()) {
        let _ = write!(cpus, "; SMT {smt}");
    }
    fact(&mut out, "CPUs", &cpus);
    let nodes: Vec<String> = t
        .nodes
        .iter()
        .map(|n| {
            let cpus = if n.cpus.is_empty() {
                "no CPUs (memory-only)".to_string()
            } else {
                format!("CPUs {}", topo::idlist::format(&n.cpus))
            };
            format!("node {}: {cpus}, {}", n.id, bytes_label(n.total_bytes as f64))
        })
        .collect();
    fact(&mut out, "NUMA nodes", &format!("{} — {}", t.nodes.len(), nodes.join("; ")));
    let caches: Vec<String> = t
        .cache_levels()
        .iter()
        .map(|(name, size, n)| format!("{name} {} ×{n}", bytes_label(*size as f64)))
        .collect();
    let line = t.caches.iter().find_map(|c| c.line_bytes);
    let mut cache_text =
        if caches.is_empty() { "not reported".to_string() } else { caches.join(", ") };
    if let Some(line) = line {
        let _ = write!(cache_text, " ({line}-byte lines)");
    }
    fact(&mut out, "Caches", &cache_text);
    if let Some(dist) = &t.distances {
        let rows: Vec<String> = dist
            .matrix
            .iter()
            .map(|r| r.iter().map(u32::to_string).collect::<Vec<_>>().join(" "))
            .collect();
        fact(&mut out, "SLIT distances", &rows.join(" / "));
    }
    match &t.environment {
        Some(e) => {
            let unknown = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".to_string());
            fact(&mut out, "Kernel", &unknown(&e.kernel));
            let thp = match (&e.thp_enabled, &e.thp_defrag) {
                (Some(en), Some(df)) => format!("{en} (defrag {df})"),
                (Some(en), None) => en.clone(),
                _ => "unknown".to_string(),
            };
            fact(&mut out, "Transparent huge pages", &thp);
            let balancing = match e.numa_balancing.as_deref() {
                Some("0") => "0 (off)".to_string(),
                Some("1") => "1 (on)".to_string(),
                Some("2") => "2 (memory tiering)".to_string(),
                Some(other) => other.to_string(),
                None => "not available".to_string(),
            };
            fact(&mut out, "numa_balancing", &balancing);
            if let Some(z) = &e.zone_reclaim_mode {
                fact(&mut out, "zone_reclaim_mode", z);
            }
            let mut clock = unknown(&e.clocksource);
            if e.available_clocksources.len() > 1 {
                let _ = write!(clock, " (available: {})", e.available_clocksources.join(", "));
            }
            fact(&mut out, "Clocksource", &clock);
            let governors: Vec<String> = e
                .governors
                .iter()
                .map(|g| format!("{} (CPUs {})", g.name, topo::idlist::format(&g.cpus)))
                .collect();
            let governor = if governors.is_empty() {
                "none (no cpufreq)".to_string()
            } else {
                governors.join(", ")
            };
            fact(&mut out, "Governor", &governor);
            fact(&mut out, "Hypervisor", e.hypervisor.as_deref().unwrap_or("none detected"));
            if let Some(system) = &e.system {
                fact(&mut out, "System", system);
            }
            if let Some(total) = e.machine_memory_bytes {
                fact(&mut out, "Memory", &bytes_label(total as f64));
            }
        }
        None => fact(&mut out, "Environment", "not recorded (synthetic or XML topology)"),
    }
    out.push_str("</dl></header>\n");
    out
}

/// The headline cards: each section's first headline figure, in page order (every one of them
/// is under its area's heading).
pub(super) fn summary(d: &ReportData) -> String {
    let mut out = String::from(
        "<section class=\"summary\" id=\"headlines\"><h2>Headline figures</h2><div class=\"cards\">",
    );
    let before = out.len();
    for part in d.sections() {
        if let Some(h) = part.headlines.first() {
            card(&mut out, &h.name, &h.value, &h.detail);
        }
    }
    if out.len() == before {
        out.push_str(
            "<p class=\"not-measured\">not measured: nothing was measured in this run</p>",
        );
    }
    out.push_str("</div></section>\n");
    out
}

/// The contents bar: a link to the headline figures, the comparison, each area on the page,
/// and the notes.
pub(super) fn contents(d: &ReportData, sections: &[Part]) -> String {
    let mut out = String::from("<nav class=\"contents\" aria-label=\"Contents\"><a href=\"#headlines\">Headline figures</a>");
    if d.comparison.is_some() {
        out.push_str("<a href=\"#sec-comparison\">Comparison</a>");
    }
    let mut areas = vec![Area::Machine];
    for part in sections {
        if !areas.contains(&part.area) {
            areas.push(part.area);
        }
    }
    for area in areas {
        let _ = write!(out, "<a href=\"#{}\">{}</a>", area_anchor(area), esc(area.title()));
    }
    out.push_str("<a href=\"#notes\">Notes</a></nav>\n");
    out
}

/// Each probed step with the placement it was measured in: the regime (when the run saw more
/// than one) and the cache line's round trip between its CPUs before and after it.
fn placement_table(p: &PlacementSummary) -> String {
    let mut out = String::from(
        "<h3 id=\"placement\">Placement</h3><p>A cache line handed between the CPUs of each step \
         whose figures depend on where they sit, just before and just after it (round trip, \
         the fastest of 8 lines; docs/comparing.md).</p><table class=\"runs placement\"><thead><tr>\
         <th>step</th><th>placement</th><th>round trip</th></tr></thead><tbody>",
    );
    for s in &p.steps {
        let regime = match s.regime {
            _ if p.changed => s.regime.name(),
            Regime::Near => "one throughout",
            Regime::Far => "far throughout",
            other => other.name(),
        };
        let _ = write!(
            out,
            "<tr class=\"regime-{}\"><td>{}</td><td>{}</td><td>{}</td></tr>",
            s.regime.name().replace(' ', "-"),
            esc(&s.step),
            esc(regime),
            esc(&s.hand_off)
        );
    }
    out.push_str("</tbody></table>");
    out
}

pub(super) fn footer(d: &ReportData) -> String {
    let mut out = String::from("<footer><section class=\"run-notes\" id=\"notes\"><h2>Notes</h2>");
    let placement_notes = d.placement.iter().flat_map(|p| &p.notes);
    let notes: Vec<&str> = placement_notes
        .map(String::as_str)
        .chain(d.notes.iter().map(|n| n.text.as_str()))
        .collect();
    if notes.is_empty() {
        out.push_str("<p>No notes from this run.</p>");
    } else {
        out.push_str("<ul class=\"notes\">");
        for n in notes {
            let _ = write!(out, "<li>{}</li>", esc(n));
        }
        out.push_str("</ul>");
    }
    if let Some(p) = d.placement.as_ref().filter(|p| !p.steps.is_empty()) {
        out.push_str(&placement_table(p));
    }
    out.push_str("</section><section><h2>Stored runs</h2>");
    if d.stored_runs.is_empty() {
        out.push_str("<p>No runs were stored.</p>");
    } else {
        out.push_str("<table class=\"runs\"><thead><tr><th>run id</th><th>measurement</th></tr></thead><tbody>");
        for (what, id) in &d.stored_runs {
            let _ = write!(out, "<tr><td class=\"num\">{id}</td><td>{}</td></tr>", esc(what));
        }
        out.push_str("</tbody></table>");
    }
    match &d.database {
        Some(db) => {
            let _ = write!(
                out,
                "<p>Database: <code>{}</code> — read back with <code>platscope results show ID</code>.</p>",
                esc(db)
            );
        }
        None => out.push_str("<p>Database: none (results not stored).</p>"),
    }
    let _ = writeln!(
        out,
        "</section><p class=\"colophon\">platscope {} · {} · {} mode</p></footer>",
        esc(&d.version),
        esc(&d.generated_at),
        esc(&d.mode)
    );
    out
}
