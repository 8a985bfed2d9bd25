//! The self-contained HTML report of `platscope report`: inline CSS and SVG charts, no script
//! and no external URL of any kind, so it opens from a file on a machine with no network.
//!
//! ```no_run
//! # fn demo(data: &report::html::ReportData) -> std::io::Result<()> {
//! std::fs::write("report.html", report::html::render_html(data))?;
//! # Ok(()) }
//! ```
//!
//! Every data-bearing SVG element (a point, a bar, a heatmap cell) has the class `data` and a
//! `data-value` attribute holding the measured number at full precision; each chart's `<svg>`
//! has a stable id (`chart-latency-size`, `chart-latency-matrix`, `chart-bandwidth-matrix`,
//! `chart-bandwidth-threads`, `chart-loaded-latency`, `chart-slb`), so tests and tools can read
//! the figures back from the page.
//!
//! A section without data says "not measured" with the reason taken from
//! [`ReportData::notes`]: a note is attached to a section when it mentions the section's
//! subject (see [`SECTION_KEYWORDS`]), e.g. `node×node bandwidth: not measured (…)`.

use std::fmt::Write as _;

use measure::summary::Summary;
use membench::bandwidth::{BandwidthMatrix, BandwidthResult, Scaling};
use membench::latency::{LatencyMatrix, LatencyPoint, PrefetchCheck};
use membench::loaded::{LoadMix, LoadedCurve};
use membench::slb::{SlbResult, SlbWorkerResult};
use place::Placement;
use serde::{Deserialize, Serialize};
use topo::Topology;

#[path = "svg.rs"]
mod svg;

use svg::{bytes_label, esc, exact, fmt3, px, Plot, Rgb, ScaleKind};

/// Everything one `platscope report` run measured. Sections that were skipped are `None` (or
/// empty) and explained in `notes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportData {
    /// `quick` or `full`.
    pub mode: String,
    /// UTC, RFC 3339.
    pub generated_at: String,
    /// platscope version and git commit.
    pub version: String,
    pub topology: Topology,
    /// Latency vs working-set size, smallest first, measured from `sweep_cpu`.
    pub latency_sweep: Vec<LatencyPoint>,
    pub sweep_cpu: Option<u32>,
    pub prefetch_check: Option<PrefetchCheck>,
    pub latency_matrix: Option<LatencyMatrix>,
    pub bandwidth_matrix: Option<BandwidthMatrix>,
    pub bandwidth_scaling: Option<Scaling>,
    pub loaded_latency: Option<LoadedCurve>,
    /// SLB at 1, 2, 4 … workers.
    pub slb_scaling: Vec<SlbResult>,
    /// SLB under (policy name, result or why it was skipped).
    pub slb_policies: Vec<(String, Result<SlbResult, String>)>,
    /// (what, run id in the results database).
    pub stored_runs: Vec<(String, i64)>,
    /// Where the results database is, if runs were stored.
    pub database: Option<String>,
    /// Sections skipped or caveats, one sentence each.
    pub notes: Vec<String>,
}

/// Words that attach a note to a section, by chart id (case-insensitive substrings). A note
/// that matches none of them is still listed under "Notes" at the end of the page.
pub const SECTION_KEYWORDS: &[(&str, &[&str])] = &[
    ("chart-latency-size", &["latency at", "latency by", "working-set", "working set", "sweep"]),
    ("chart-latency-matrix", &["node×node latency", "latency matrix", "node x node latency"]),
    (
        "chart-bandwidth-matrix",
        &["node×node bandwidth", "bandwidth matrix", "node x node bandwidth"],
    ),
    ("chart-bandwidth-threads", &["bandwidth by thread", "thread count", "bandwidth scaling"]),
    ("chart-loaded-latency", &["loaded latency", "loaded-latency"]),
    ("chart-slb", &["slb", "silly little benchmark"]),
];

/// Renders the whole report as one HTML5 page.
pub fn render_html(data: &ReportData) -> String {
    let mut page = String::with_capacity(96 * 1024);
    let model = data.topology.machine.cpu_model.as_deref().unwrap_or("unknown CPU");
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"generator\" content=\"platscope {}\">\
         <title>platscope report — {}</title><style>{CSS}</style></head><body><div class=\"page\">\n",
        esc(&data.version),
        esc(model)
    );
    page.push_str(&header(data));
    page.push_str(&summary(data));
    page.push_str("<main class=\"charts\">\n");
    let sections: [(&str, &str, bool, Option<Figure>); 6] = [
        ("chart-latency-size", "Latency by working-set size", true, chart_latency_size(data)),
        (
            "chart-latency-matrix",
            "Node × node latency",
            false,
            data.latency_matrix.as_ref().and_then(|m| chart_latency_matrix(m, &data.topology)),
        ),
        (
            "chart-bandwidth-matrix",
            "Node × node bandwidth",
            false,
            data.bandwidth_matrix.as_ref().and_then(chart_bandwidth_matrix),
        ),
        (
            "chart-bandwidth-threads",
            "Bandwidth by thread count",
            false,
            data.bandwidth_scaling.as_ref().and_then(chart_bandwidth_threads),
        ),
        (
            "chart-loaded-latency",
            "Latency under load",
            false,
            data.loaded_latency.as_ref().and_then(chart_loaded_latency),
        ),
        ("chart-slb", "SLB: random stores per worker", true, chart_slb(data)),
    ];
    for (id, heading, wide, figure) in sections {
        let class = match (wide, figure.is_some()) {
            (true, _) => "wide",
            (false, true) => "half",
            (false, false) => "half empty",
        };
        let _ = write!(
            page,
            "<section id=\"{}\" class=\"{class}\"><h2>{}</h2>",
            esc(&id.replacen("chart-", "sec-", 1)),
            esc(heading)
        );
        match figure {
            Some(f) => {
                let _ = write!(
                    page,
                    "<figure>{}<figcaption>{}</figcaption></figure>",
                    f.svg, f.caption
                );
                page.push_str(&f.after);
            }
            None => {
                let _ = write!(
                    page,
                    "<p class=\"not-measured\">not measured: {}</p>",
                    esc(&not_measured_reason(id, &data.notes))
                );
            }
        }
        page.push_str("</section>\n");
    }
    page.push_str("</main>\n");
    page.push_str(&footer(data));
    page.push_str("</div></body></html>\n");
    page
}

/// A rendered chart: the `<svg>`, its caption (HTML) and anything shown under it.
#[derive(Debug)]
struct Figure {
    svg: String,
    caption: String,
    after: String,
}

/// Why a section has no chart: its notes, or a plain statement.
fn not_measured_reason(id: &str, notes: &[String]) -> String {
    let keywords = SECTION_KEYWORDS.iter().find(|(k, _)| *k == id).map_or(&[][..], |(_, w)| *w);
    let matching: Vec<&str> = notes
        .iter()
        .filter(|n| {
            let lower = n.to_lowercase();
            keywords.iter().any(|k| lower.contains(k))
        })
        .map(String::as_str)
        .collect();
    if !matching.is_empty() {
        return matching.join(" ");
    }
    match notes.iter().find(|n| n.to_lowercase().contains("interrupted")) {
        Some(n) => n.clone(),
        None => "no data for this section in this run".to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Header, summary, footer

fn fact(out: &mut String, name: &str, value: &str) {
    let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", esc(name), esc(value));
}

/// Cache levels as (name, size of one instance, instances), by level.
fn cache_levels(t: &Topology) -> Vec<(String, u64, usize)> {
    let mut levels: Vec<(u8, String, u64, usize)> = Vec::new();
    for c in t.caches.iter().filter(|c| c.size_bytes > 0) {
        let name = c.name();
        match levels.iter_mut().find(|l| l.1 == name) {
            Some(l) => {
                l.2 = l.2.max(c.size_bytes);
                l.3 += 1;
            }
            None => levels.push((c.level, name, c.size_bytes, 1)),
        }
    }
    levels.sort_by_key(|l| l.0);
    levels.into_iter().map(|(_, name, size, n)| (name, size, n)).collect()
}

fn header(d: &ReportData) -> String {
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
    let caches: Vec<String> = cache_levels(t)
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

/// One headline figure: what it is, the number, how it was obtained.
fn card(out: &mut String, label: &str, figure: &str, how: &str) {
    let _ = write!(
        out,
        "<div class=\"card\"><div class=\"label\">{}</div><div class=\"figure\">{}</div>\
         <div class=\"how\">{}</div></div>",
        esc(label),
        esc(figure),
        esc(how)
    );
}

fn summary(d: &ReportData) -> String {
    let mut out =
        String::from("<section class=\"summary\"><h2>Headline figures</h2><div class=\"cards\">");
    let before = out.len();
    // Idle DRAM latency: the local cell of the matrix, else the sweep's largest size when it is
    // beyond the last-level cache.
    let llc = cache_levels(&d.topology).last().map_or(0, |c| c.1);
    let local = d.latency_matrix.as_ref().and_then(|m| {
        m.cpu_nodes.iter().zip(&m.cells).find_map(|(from, row)| {
            let j = m.memory_nodes.iter().position(|n| n == from)?;
            row.get(j).map(|c| (*from, c, m.bytes))
        })
    });
    if let Some((node, cell, bytes)) = local {
        card(
            &mut out,
            "Idle DRAM latency",
            &format!("{} ns", fmt3(cell.ns.median)),
            &format!(
                "node {node} to its own memory, {} chased, median of {} samples (p99 {} ns)",
                bytes_label(bytes as f64),
                cell.ns.samples,
                fmt3(cell.ns.p99)
            ),
        );
    } else if let Some(last) = d.latency_sweep.last().filter(|p| llc == 0 || p.bytes > llc) {
        card(
            &mut out,
            "Idle DRAM latency",
            &format!("{} ns", fmt3(last.ns.median)),
            &format!(
                "{} chased, median of {} samples (p99 {} ns)",
                bytes_label(last.bytes as f64),
                last.ns.samples,
                fmt3(last.ns.p99)
            ),
        );
    }
    if let Some(m) = &d.latency_matrix {
        // The slowest remote pair, against the local figure of the same CPU node.
        let remote = m
            .cpu_nodes
            .iter()
            .zip(&m.cells)
            .flat_map(|(from, row)| {
                let local = m.memory_nodes.iter().position(|n| n == from).and_then(|j| row.get(j));
                m.memory_nodes
                    .iter()
                    .zip(row)
                    .filter(move |(to, _)| *to != from)
                    .map(move |(to, cell)| (*from, *to, cell, local))
            })
            .max_by(|a, b| a.2.ns.median.total_cmp(&b.2.ns.median));
        if let Some((from, to, cell, local)) = remote {
            let ratio = local.map_or(String::new(), |l| {
                format!(
                    ": {}× node {from}'s local {} ns",
                    fmt3(cell.ns.median / l.ns.median),
                    fmt3(l.ns.median)
                )
            });
            card(
                &mut out,
                "Remote latency (worst)",
                &format!("{} ns", fmt3(cell.ns.median)),
                &format!("node {from} to node {to}'s memory{ratio}"),
            );
        }
    }
    let l1 = cache_levels(&d.topology).first().map(|c| c.1);
    if let Some(first) = d.latency_sweep.first().filter(|p| l1.is_none_or(|l1| p.bytes <= l1)) {
        let cycles = first.cycles.map_or(String::new(), |c| format!(" · {} cycles", fmt3(c)));
        card(
            &mut out,
            "L1 latency",
            &format!("{} ns{cycles}", fmt3(first.ns.median)),
            &format!(
                "{} chased, median of {} samples; cycles from the measured core clock",
                bytes_label(first.bytes as f64),
                first.ns.samples
            ),
        );
    }
    let mut candidates: Vec<(&BandwidthResult, String)> = Vec::new();
    if let Some(s) = &d.bandwidth_scaling {
        for step in &s.steps {
            candidates.push((step, format!("{} thread(s)", step.threads.len())));
        }
    }
    if let Some(m) = &d.bandwidth_matrix {
        for (from, row) in m.cpu_nodes.iter().zip(&m.cells) {
            for (to, cell) in m.memory_nodes.iter().zip(row) {
                let what =
                    format!("{} thread(s) on node {from}, memory on node {to}", cell.threads.len());
                candidates.push((cell, what));
            }
        }
    }
    let peak = candidates
        .into_iter()
        .max_by(|a, b| a.0.aggregate_gbs.median.total_cmp(&b.0.aggregate_gbs.median));
    if let Some((r, what)) = peak {
        card(
            &mut out,
            "Peak bandwidth",
            &format!("{} GB/s", fmt3(r.aggregate_gbs.median)),
            &format!(
                "{} ({}), {what}; median of {} rounds, best {} GB/s",
                r.kernel,
                r.isa,
                r.aggregate_gbs.samples,
                fmt3(r.aggregate_gbs.max)
            ),
        );
    }
    if let Some(s) = &d.bandwidth_scaling {
        let most = s.steps.last().map_or(0, |r| r.threads.len());
        match s.saturated_at {
            Some(n) => card(
                &mut out,
                "Saturation point",
                &format!("{n} thread(s)"),
                "one more thread added less than 5% bandwidth",
            ),
            None => card(
                &mut out,
                "Saturation point",
                "not reached",
                &format!("bandwidth still grew at {most} thread(s)"),
            ),
        }
    }
    if let Some(c) = &d.loaded_latency {
        let loaded = c.points.iter().max_by(|a, b| a.load_gbs.total_cmp(&b.load_gbs));
        let idle = c
            .points
            .iter()
            .find(|p| p.delay_cycles.is_none())
            .or_else(|| c.points.iter().min_by(|a, b| a.load_gbs.total_cmp(&b.load_gbs)));
        if let (Some(loaded), Some(idle)) = (loaded, idle) {
            card(
                &mut out,
                "Latency at max load",
                &format!("{} ns", fmt3(loaded.latency_ns.median)),
                &format!(
                    "at {} GB/s of {} load vs {} ns idle: {}×",
                    fmt3(loaded.load_gbs),
                    mix_name(c.mix),
                    fmt3(idle.latency_ns.median),
                    fmt3(loaded.latency_ns.median / idle.latency_ns.median)
                ),
            );
        }
    }
    if let Some(one) = d.slb_scaling.first() {
        let base = one.summary().median_ns;
        let mut how = format!("median ns per random store, {} worker(s)", one.workers.len());
        if let Some(most) = d.slb_scaling.last().filter(|r| r.workers.len() > one.workers.len()) {
            let _ = write!(
                how,
                "; {}× slower with {} workers",
                fmt3(most.summary().median_ns / base),
                most.workers.len()
            );
        }
        card(&mut out, "SLB", &format!("{} ns/op", fmt3(base)), &how);
    }
    if out.len() == before {
        out.push_str(
            "<p class=\"not-measured\">not measured: nothing was measured in this run</p>",
        );
    }
    out.push_str("</div></section>\n");
    out
}

fn footer(d: &ReportData) -> String {
    let mut out = String::from("<footer><section><h2>Notes</h2>");
    if d.notes.is_empty() {
        out.push_str("<p>No notes from this run.</p>");
    } else {
        out.push_str("<ul class=\"notes\">");
        for n in &d.notes {
            let _ = write!(out, "<li>{}</li>", esc(n));
        }
        out.push_str("</ul>");
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

// ---------------------------------------------------------------------------------------------
// Shared wording

fn mix_name(mix: LoadMix) -> &'static str {
    match mix {
        LoadMix::Reads => "all-read",
        LoadMix::TwoToOne => "2:1 read:write",
        LoadMix::OneToOne => "1:1 read:write",
        LoadMix::NtWrites => "non-temporal write",
    }
}

/// `median of 40 samples` or `median of 38–41 samples`.
fn samples_text<'a>(what: &str, summaries: impl Iterator<Item = &'a Summary>) -> String {
    let counts: Vec<usize> = summaries.map(|s| s.samples).collect();
    match (counts.iter().min(), counts.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!("median of {lo} {what}"),
        (Some(lo), Some(hi)) => format!("median of {lo}–{hi} {what}"),
        _ => format!("median of the {what}"),
    }
}

/// Where an arena's pages were, as the kernel reported them.
fn placement_text(p: &Placement) -> String {
    let mut nodes: Vec<String> = p
        .per_node
        .iter()
        .map(|n| format!("node {} {:.0}%", n.node, 100.0 * p.fraction_on(n.node)))
        .collect();
    if p.not_present > 0 {
        nodes.push(format!("{} pages not resident", p.not_present));
    }
    if nodes.is_empty() {
        "no resident pages".to_string()
    } else {
        nodes.join(", ")
    }
}

fn noisy_text(noisy: usize, total: usize, what: &str) -> String {
    match noisy {
        0 => String::new(),
        n => format!(
            " {n} of {total} {what} were noisy (the middle half of their samples spread more than 5%) and are drawn hollow."
        ),
    }
}

/// A vertical whisker from `lo` to `hi` (pixels) at `x`, with caps; one that would run above
/// `top` (the plot's upper edge) stops there with an arrowhead instead of a cap.
fn whisker(x: f64, y_lo: f64, y_hi: f64, top: f64) -> String {
    whisker_capped(x, y_lo, y_hi, 4.0, top)
}

fn whisker_capped(x: f64, y_lo: f64, y_hi: f64, cap: f64, top: f64) -> String {
    if y_hi < top {
        return format!(
            "<path class=\"whisker clipped\" d=\"M{x} {a}V{t}M{l} {a}H{r}M{l} {h}L{x} {t}L{r} {h}\"/>",
            x = px(x),
            a = px(y_lo),
            t = px(top),
            h = px(top + cap.max(2.0) * 1.2),
            l = px(x - cap),
            r = px(x + cap)
        );
    }
    format!(
        "<path class=\"whisker\" d=\"M{x} {a}V{b}M{l} {a}H{r}M{l} {b}H{r}\"/>",
        x = px(x),
        a = px(y_lo),
        b = px(y_hi),
        l = px(x - cap),
        r = px(x + cap)
    )
}

/// Said in a caption when some whiskers were cut at the top of their chart.
const CLIPPED: &str =
    " Whiskers ending in an arrowhead run past the top of the chart (a few very slow \
     samples, e.g. the VM was descheduled); their p99 is in the point's tooltip.";

// ---------------------------------------------------------------------------------------------
// (a) Latency by working-set size

fn chart_latency_size(d: &ReportData) -> Option<Figure> {
    let points: Vec<&LatencyPoint> =
        d.latency_sweep.iter().filter(|p| p.bytes > 0 && p.ns.median > 0.0).collect();
    let (first, last) = (points.first()?, points.last()?);
    let caches = cache_levels(&d.topology);
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
    let id = "chart-latency-size";
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

    let cpu =
        d.sweep_cpu.or(first.cpu).map_or("an unpinned thread".to_string(), |c| format!("CPU {c}"));
    let markers: Vec<String> =
        caches.iter().map(|(n, s, _)| format!("{n} {}", bytes_label(*s as f64))).collect();
    let mut caption = format!(
        "Idle load-to-use latency: one thread on {} chases a random pointer chain through a buffer of each size ({} to {}, {} pages). \
         Points: {} per size (first sample dropped as warm-up); whiskers span best to p99. ",
        esc(&cpu),
        esc(&bytes_label(first.bytes as f64)),
        esc(&bytes_label(last.bytes as f64)),
        esc(&first.placement.page.to_string()),
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
    if let Some(c) = &d.prefetch_check {
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

// ---------------------------------------------------------------------------------------------
// (b), (c) Node × node heatmaps

/// One heatmap cell: value, a short second line, and its tooltip.
struct Cell {
    value: f64,
    note: String,
    tip: String,
}

struct Heatmap<'a> {
    id: &'a str,
    title: &'a str,
    rows: &'a [u32],
    cols: &'a [u32],
    cells: Vec<Vec<Cell>>,
    unit: &'a str,
    ramp: &'a [Rgb],
}

fn heatmap(h: &Heatmap<'_>) -> String {
    let n_rows = h.cells.len().max(1);
    let n_cols = h.cells.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let (left, top, right) = (96.0, 58.0, 20.0);
    let cell_w = ((600.0 - left - right) / n_cols as f64).min(200.0);
    let cell_h = (cell_w * 0.5).clamp(24.0, 84.0);
    let grid_w = cell_w * n_cols as f64;
    let grid_h = cell_h * n_rows as f64;
    let width = 600.0;
    let values: Vec<f64> =
        h.cells.iter().flatten().map(|c| c.value).filter(|v| v.is_finite()).collect();
    let lo = values.iter().copied().fold(f64::MAX, f64::min);
    let hi = values.iter().copied().fold(f64::MIN, f64::max);
    let height = top + grid_h + if hi > lo { 70.0 } else { 16.0 };
    let t = |v: f64| if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
    let mut out = svg::open(h.id, width, height, h.title);
    // Column labels (memory nodes) on top, row labels (CPU nodes) on the left.
    let _ = write!(
        out,
        "<text class=\"axis-title\" x=\"{}\" y=\"18\" text-anchor=\"middle\">memory node</text>",
        px(left + grid_w / 2.0)
    );
    for j in 0..n_cols {
        let label = h.cols.get(j).map_or("?".to_string(), u32::to_string);
        let _ = write!(
            out,
            "<text class=\"tick-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            px(left + cell_w * (j as f64 + 0.5)),
            px(top - 10.0),
            esc(&label)
        );
    }
    let _ = write!(
        out,
        "<text class=\"axis-title\" x=\"16\" y=\"{y}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {y})\">CPU node</text>",
        y = px(top + grid_h / 2.0)
    );
    let font = (cell_h * 0.3).clamp(9.0, 17.0);
    for (i, row) in h.cells.iter().enumerate() {
        let row_label = h.rows.get(i).map_or("?".to_string(), u32::to_string);
        let cy = top + cell_h * i as f64;
        let _ = write!(
            out,
            "<text class=\"tick-label\" x=\"{}\" y=\"{}\" dy=\"0.32em\" text-anchor=\"end\">{}</text>",
            px(left - 10.0),
            px(cy + cell_h / 2.0),
            esc(&row_label)
        );
        for (j, cell) in row.iter().enumerate() {
            let col_label = h.cols.get(j).map_or("?".to_string(), u32::to_string);
            let color = svg::ramp(h.ramp, t(cell.value));
            let ink = if color.is_light() { "#1d2430" } else { "#ffffff" };
            let cx = left + cell_w * j as f64;
            let _ = write!(
                out,
                "<rect class=\"data cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" \
                 data-value=\"{}\" data-row=\"{}\" data-col=\"{}\"><title>CPU node {} → memory node {}: {}</title></rect>",
                px(cx),
                px(cy),
                px(cell_w),
                px(cell_h),
                color.hex(),
                exact(cell.value),
                esc(&row_label),
                esc(&col_label),
                esc(&row_label),
                esc(&col_label),
                esc(&cell.tip)
            );
            let two_lines = cell_h >= 44.0 && !cell.note.is_empty();
            let value_y =
                if two_lines { cy + cell_h / 2.0 - font * 0.45 } else { cy + cell_h / 2.0 };
            let _ = write!(
                out,
                "<text class=\"cell-value\" x=\"{}\" y=\"{}\" dy=\"0.35em\" text-anchor=\"middle\" fill=\"{ink}\" font-size=\"{}\">{} {}</text>",
                px(cx + cell_w / 2.0),
                px(value_y),
                px(font),
                esc(&fmt3(cell.value)),
                esc(h.unit)
            );
            if two_lines {
                let _ = write!(
                    out,
                    "<text class=\"cell-note\" x=\"{}\" y=\"{}\" dy=\"0.35em\" text-anchor=\"middle\" fill=\"{ink}\" font-size=\"{}\">{}</text>",
                    px(cx + cell_w / 2.0),
                    px(value_y + font * 1.25),
                    px(font * 0.72),
                    esc(&cell.note)
                );
            }
        }
    }
    let _ = write!(
        out,
        "<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
        px(left),
        px(top),
        px(grid_w),
        px(grid_h)
    );
    // A colour key only where colours differ (not for a one-node machine's single cell).
    if hi > lo {
        out.push_str(&svg::legend_ramp(
            h.id,
            h.ramp,
            (left, top + grid_h + 22.0, grid_w.min(320.0)),
            &format!("{} {}", fmt3(lo), h.unit),
            &format!("{} {}", fmt3(hi), h.unit),
        ));
    }
    out.push_str("</svg>");
    out
}

fn chart_latency_matrix(m: &LatencyMatrix, topology: &Topology) -> Option<Figure> {
    if m.cells.iter().all(Vec::is_empty) {
        return None;
    }
    let cells = m
        .cells
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let from = m.cpu_nodes.get(i).copied();
            let local = from
                .and_then(|f| m.memory_nodes.iter().position(|&n| n == f))
                .and_then(|j| row.get(j))
                .map(|c| c.ns.median);
            row.iter()
                .enumerate()
                .map(|(j, c)| {
                    let to = m.memory_nodes.get(j).copied();
                    let slit = match (from, to, &topology.distances) {
                        (Some(f), Some(t), Some(d)) => d.get(f, t),
                        _ => None,
                    };
                    let note = match (local, from == to) {
                        (_, true) => "local".to_string(),
                        (Some(l), false) if l > 0.0 => format!("{}× local", fmt3(c.ns.median / l)),
                        _ => String::new(),
                    };
                    let slit_text = slit.map_or(String::new(), |s| format!("; SLIT distance {s}"));
                    Cell {
                        value: c.ns.median,
                        note,
                        tip: format!(
                            "median {} ns, best {} ns, p99 {} ns over {} samples{}; CPU {}, memory {}{slit_text}",
                            fmt3(c.ns.median),
                            fmt3(c.ns.min),
                            fmt3(c.ns.p99),
                            c.ns.samples,
                            if c.ns.noisy { " [noisy]" } else { "" },
                            c.cpu.map_or("?".to_string(), |c| c.to_string()),
                            placement_text(&c.placement)
                        ),
                    }
                })
                .collect()
        })
        .collect();
    let svg = heatmap(&Heatmap {
        id: "chart-latency-matrix",
        title: "Idle latency from each CPU node to each memory node",
        rows: &m.cpu_nodes,
        cols: &m.memory_nodes,
        cells,
        unit: "ns",
        ramp: svg::RAMP_LATENCY,
    });
    let all = m.cells.iter().flatten();
    let noisy = m.cells.iter().flatten().filter(|c| c.ns.noisy).count();
    let total = m.cells.iter().flatten().count();
    let mut caption = format!(
        "Idle load-to-use latency from the first CPU of each CPU node (rows) to memory bound to each node (columns), \
         {} chased per cell. Cells: {}; darker is slower; the second line is the ratio to the row's local cell. \
         Best, p99 and the verified placement are in each cell's tooltip.",
        esc(&bytes_label(m.bytes as f64)),
        samples_text("samples", all.map(|c| &c.ns))
    );
    if noisy > 0 {
        let _ =
            write!(caption, " {noisy} of {total} cells were noisy (middle half spread above 5%).");
    }
    if topology.distances.is_none() {
        caption.push_str(" The firmware gave no SLIT distances to compare with.");
    }
    Some(Figure { svg, caption, after: String::new() })
}

fn chart_bandwidth_matrix(m: &BandwidthMatrix) -> Option<Figure> {
    if m.cells.iter().all(Vec::is_empty) {
        return None;
    }
    let cells = m
        .cells
        .iter()
        .map(|row| {
            row.iter()
                .map(|c| {
                    let placements: Vec<&Placement> =
                        c.threads.iter().flat_map(|t| t.placements.iter()).collect();
                    let memory = placements.first().map_or("not reported".to_string(), |p| placement_text(p));
                    Cell {
                        value: c.aggregate_gbs.median,
                        note: format!("best {}", fmt3(c.aggregate_gbs.max)),
                        tip: format!(
                            "median {} GB/s, slowest round {}, best {} over {} rounds{}; {} thread(s); memory {memory}{}",
                            fmt3(c.aggregate_gbs.median),
                            fmt3(c.aggregate_gbs.min),
                            fmt3(c.aggregate_gbs.max),
                            c.aggregate_gbs.samples,
                            if c.aggregate_gbs.noisy { " [noisy]" } else { "" },
                            c.threads.len(),
                            if c.interrupted { "; INTERRUPTED" } else { "" }
                        ),
                    }
                })
                .collect()
        })
        .collect();
    let svg = heatmap(&Heatmap {
        id: "chart-bandwidth-matrix",
        title: "Bandwidth from each CPU node to each memory node",
        rows: &m.cpu_nodes,
        cols: &m.memory_nodes,
        cells,
        unit: "GB/s",
        ramp: svg::RAMP_BANDWIDTH,
    });
    let first = m.cells.iter().flatten().next();
    let kernel = first.map_or("?".to_string(), |c| format!("{} kernel ({})", c.kernel, c.isa));
    let per_thread = first.map_or(String::new(), |c| bytes_label(c.bytes_per_thread as f64));
    let accounting = first.map_or(String::new(), |c| c.accounting.clone());
    let caption = format!(
        "Bandwidth of the {} with {} thread(s) on each CPU node (rows), each streaming through its own {} bound to each memory node (columns). \
         Cells: {} of all threads together, in GB/s (10<sup>9</sup> bytes/s); darker is faster; the second line is the best round. \
         Counted: {}.",
        esc(&kernel),
        m.threads_per_cell,
        esc(&per_thread),
        samples_text("rounds", m.cells.iter().flatten().map(|c| &c.aggregate_gbs)),
        esc(&accounting)
    );
    Some(Figure { svg, caption, after: String::new() })
}

// ---------------------------------------------------------------------------------------------
// (d) Bandwidth by thread count

fn chart_bandwidth_threads(s: &Scaling) -> Option<Figure> {
    let steps: Vec<&BandwidthResult> =
        s.steps.iter().filter(|r| r.aggregate_gbs.median.is_finite()).collect();
    let first = steps.first()?;
    let most = steps.iter().map(|r| r.threads.len()).max().unwrap_or(1).max(1);
    let y_top =
        steps.iter().map(|r| r.aggregate_gbs.max.max(r.aggregate_gbs.median)).fold(0.0, f64::max);
    let plot =
        Plot { width: 600.0, height: 400.0, left: 64.0, right: 20.0, top: 34.0, bottom: 56.0 };
    let x = plot.x_scale(ScaleKind::Linear, 0.4, most as f64 + 0.6);
    let y = plot.y_scale(ScaleKind::Linear, 0.0, svg::nice_max(y_top, 6));
    let id = "chart-bandwidth-threads";
    let mut out =
        svg::open(id, plot.width, plot.height, "Aggregate bandwidth by number of threads");
    let x_ticks = svg::integer_ticks(most, 12);
    out.push_str(&plot.axes(&x, &x_ticks, &y, &y.ticks(6)));
    let slot = x.map(2.0) - x.map(1.0);
    let bar_w = (slot * 0.6).min(60.0);
    // Linear scaling from one thread, as a reference; its key sits above the plot.
    let one = first.aggregate_gbs.median / first.threads.len().max(1) as f64;
    if one > 0.0 {
        let end = (most as f64).min(y.hi / one);
        let _ = write!(
            out,
            "<line class=\"reference\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\
             <line class=\"reference\" x1=\"{}\" x2=\"{}\" y1=\"14\" y2=\"14\"/>\
             <text class=\"reference-label\" x=\"{}\" y=\"18\">linear from 1 thread</text>",
            px(x.map(1.0)),
            px(y.map(one)),
            px(x.map(end)),
            px(y.map(end * one)),
            px(plot.x0() + 4.0),
            px(plot.x0() + 28.0),
            px(plot.x0() + 34.0),
        );
    }
    // The saturation line goes under the bars so it does not strike through their labels.
    if let Some(k) = s.saturated_at {
        let sx = x.map(k as f64);
        let key = plot.x0() + 190.0;
        let _ = write!(
            out,
            "<line class=\"saturation\" data-threads=\"{k}\" x1=\"{sx}\" x2=\"{sx}\" y1=\"{}\" y2=\"{}\"/>\
             <line class=\"saturation\" x1=\"{}\" x2=\"{}\" y1=\"14\" y2=\"14\"/>\
             <text class=\"marker-label\" x=\"{}\" y=\"18\">saturated at {k} thread(s)</text>",
            px(plot.y1()),
            px(plot.y0()),
            px(key),
            px(key + 24.0),
            px(key + 30.0),
            sx = px(sx),
        );
    }
    for r in &steps {
        let n = r.threads.len() as f64;
        let top = y.map(r.aggregate_gbs.median);
        let _ = write!(
            out,
            "<rect class=\"data bar{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" data-value=\"{}\" data-threads=\"{}\" data-max=\"{}\">\
             <title>{} thread(s): median {} GB/s, slowest round {}, best {} over {} rounds{}</title></rect>",
            if r.aggregate_gbs.noisy { " noisy" } else { "" },
            px(x.map(n) - bar_w / 2.0),
            px(top),
            px(bar_w),
            px(plot.y0() - top),
            exact(r.aggregate_gbs.median),
            r.threads.len(),
            exact(r.aggregate_gbs.max),
            r.threads.len(),
            fmt3(r.aggregate_gbs.median),
            fmt3(r.aggregate_gbs.min),
            fmt3(r.aggregate_gbs.max),
            r.aggregate_gbs.samples,
            if r.interrupted { "; INTERRUPTED" } else { "" }
        );
        out.push_str(&whisker_capped(
            x.map(n),
            y.map(r.aggregate_gbs.min),
            y.map(r.aggregate_gbs.max),
            (bar_w * 0.35).min(4.0),
            plot.y1(),
        ));
        if bar_w >= 28.0 {
            let _ = write!(
                out,
                "<text class=\"bar-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                px(x.map(n)),
                px(y.map(r.aggregate_gbs.max) - 6.0),
                esc(&fmt3(r.aggregate_gbs.median))
            );
        }
    }
    out.push_str(&plot.x_title("threads"));
    out.push_str(&plot.y_title("GB/s (10⁹ bytes/s)"));
    out.push_str("</svg>");
    let saturation = match s.saturated_at {
        Some(k) => format!("Dashed red line: saturation at {k} thread(s) — one more thread added less than 5%."),
        None => format!("Bandwidth still grew by 5% or more with every thread up to {most}: not saturated by these CPUs."),
    };
    let cpus: Vec<u32> =
        steps.last().map_or(Vec::new(), |r| r.threads.iter().filter_map(|t| t.cpu).collect());
    let mut caption = format!(
        "Bandwidth of the {} kernel ({}) with 1 to {most} threads together (CPUs {}, added in that order), each streaming through its own {}. \
         Bars: {}; whiskers span the slowest to the best round. Grey dashed line: perfect scaling of the one-thread figure. {} \
         GB = 10<sup>9</sup> bytes; counted: {}.",
        esc(&first.kernel.to_string()),
        esc(&first.isa.to_string()),
        esc(&topo::idlist::format(&cpus)),
        esc(&bytes_label(first.bytes_per_thread as f64)),
        samples_text("rounds", steps.iter().map(|r| &r.aggregate_gbs)),
        esc(&saturation),
        esc(&first.accounting)
    );
    let noisy = steps.iter().filter(|r| r.aggregate_gbs.noisy).count();
    if noisy > 0 {
        let _ = write!(
            caption,
            " {noisy} of {} thread counts were noisy (middle half of the rounds spread above 5%) and are drawn lighter.",
            steps.len()
        );
    }
    if steps.iter().any(|r| r.interrupted) {
        caption.push_str(" INTERRUPTED: some figures cover only the rounds completed.");
    }
    Some(Figure { svg: out, caption, after: String::new() })
}

// ---------------------------------------------------------------------------------------------
// (e) Latency under load

fn chart_loaded_latency(c: &LoadedCurve) -> Option<Figure> {
    let mut points: Vec<_> = c
        .points
        .iter()
        .filter(|p| p.load_gbs.is_finite() && p.latency_ns.median.is_finite())
        .collect();
    if points.is_empty() {
        return None;
    }
    points.sort_by(|a, b| a.load_gbs.total_cmp(&b.load_gbs));
    let x_top = points.iter().map(|p| p.load_gbs).fold(0.0, f64::max);
    // Whiskers are cut at twice the median, so one outlying p99 cannot flatten the curve.
    let y_top = points
        .iter()
        .map(|p| p.latency_ns.p99.min(2.0 * p.latency_ns.median).max(p.latency_ns.median))
        .fold(0.0, f64::max);
    let plot =
        Plot { width: 600.0, height: 400.0, left: 64.0, right: 20.0, top: 24.0, bottom: 56.0 };
    let x = plot.x_scale(ScaleKind::Linear, 0.0, svg::nice_max(x_top, 6));
    let y = plot.y_scale(ScaleKind::Linear, 0.0, svg::nice_max(y_top, 6));
    let id = "chart-loaded-latency";
    let mut out = svg::open(
        id,
        plot.width,
        plot.height,
        "Chase latency against the bandwidth of the load threads",
    );
    out.push_str(&plot.axes(&x, &x.ticks(6), &y, &y.ticks(6)));
    let line: Vec<String> = points
        .iter()
        .map(|p| format!("{},{}", px(x.map(p.load_gbs)), px(y.map(p.latency_ns.median))))
        .collect();
    let _ = write!(out, "<polyline class=\"line\" points=\"{}\"/>", line.join(" "));
    for p in &points {
        out.push_str(&whisker(
            x.map(p.load_gbs),
            y.map(p.latency_ns.min),
            y.map(p.latency_ns.p99),
            plot.y1(),
        ));
    }
    let busiest = points.last().map(|p| p.delay_cycles);
    for p in &points {
        let (cx, cy) = (x.map(p.load_gbs), y.map(p.latency_ns.median));
        let delay = p.delay_cycles.map_or("idle".to_string(), |d| d.to_string());
        let tip = format!(
            "{}: {} GB/s of load, latency median {} ns, best {}, p99 {} over {} samples",
            p.delay_cycles
                .map_or("idle (load threads paused)".to_string(), |d| format!("delay {d} cycles")),
            fmt3(p.load_gbs),
            fmt3(p.latency_ns.median),
            fmt3(p.latency_ns.min),
            fmt3(p.latency_ns.p99),
            p.latency_ns.samples
        );
        let noisy = if p.latency_ns.noisy { " noisy" } else { "" };
        let attrs = format!(
            "data-value=\"{}\" data-gbs=\"{}\" data-delay=\"{}\" data-p99=\"{}\"",
            exact(p.latency_ns.median),
            exact(p.load_gbs),
            esc(&delay),
            exact(p.latency_ns.p99)
        );
        if p.delay_cycles.is_none() {
            let _ = write!(
                out,
                "<rect class=\"data idle{noisy}\" x=\"{}\" y=\"{}\" width=\"11\" height=\"11\" {attrs}><title>{}</title></rect>\
                 <text class=\"point-label\" x=\"{}\" y=\"{}\">idle</text>",
                px(cx - 5.5),
                px(cy - 5.5),
                esc(&tip),
                px(cx + 10.0),
                // Below the point, unless that runs into the x axis.
                px(if cy + 18.0 < plot.y0() - 4.0 { cy + 18.0 } else { cy - 8.0 })
            );
        } else {
            let _ = write!(
                out,
                "<circle class=\"data{noisy}\" cx=\"{}\" cy=\"{}\" r=\"4.5\" {attrs}><title>{}</title></circle>",
                px(cx),
                px(cy),
                esc(&tip)
            );
            if Some(p.delay_cycles) == busiest {
                // Above its whisker, clear of the curve and the neighbours' points.
                let _ = write!(
                    out,
                    "<text class=\"point-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">delay {}</text>",
                    px(cx.min(plot.x1() - 40.0)),
                    px(y.map(p.latency_ns.p99).min(cy) - 8.0),
                    esc(&delay)
                );
            }
        }
    }
    out.push_str(&plot.x_title("load bandwidth, GB/s (10⁹ bytes/s)"));
    out.push_str(&plot.y_title("chase latency, ns"));
    out.push_str("</svg>");
    let delays: Vec<String> =
        c.points.iter().filter_map(|p| p.delay_cycles).map(|d| d.to_string()).collect();
    let mut caption = format!(
        "Latency of a random pointer chase on CPU {} (memory {}) while {} load thread(s) on CPUs {} run the {} kernel ({}, {} mix), \
         pausing after every 4 KiB for a delay of {} busy cycles. Each point: x is what the load threads moved together, y the chase latency, {}; \
         whiskers span best to p99. Square: idle, load threads paused. Counted: {}.",
        c.chase_cpu,
        esc(&placement_text(&c.chase_placement)),
        c.load_cpus.len(),
        esc(&topo::idlist::format(&c.load_cpus)),
        esc(&c.kernel.to_string()),
        esc(&c.isa.to_string()),
        esc(mix_name(c.mix)),
        esc(&delays.join(", ")),
        samples_text("samples", points.iter().map(|p| &p.latency_ns)),
        esc(&c.accounting)
    );
    caption.push_str(&esc(&noisy_text(
        points.iter().filter(|p| p.latency_ns.noisy).count(),
        points.len(),
        "points",
    )));
    if points.iter().any(|p| p.latency_ns.p99 > y.hi) {
        caption.push_str(&esc(CLIPPED));
    }
    if c.interrupted {
        caption.push_str(" INTERRUPTED: only the points shown were measured.");
    }
    Some(Figure { svg: out, caption, after: String::new() })
}

// ---------------------------------------------------------------------------------------------
// (f) SLB per worker

/// One group of bars: its label and the run (or why there is none).
struct Group<'a> {
    label: String,
    panel: usize,
    run: Result<&'a SlbResult, &'a str>,
}

fn skipped_reason(why: &str) -> &str {
    let trimmed = why.trim();
    for prefix in ["skipped: ", "skipped - ", "skipped "] {
        if let Some(rest) = trimmed.strip_prefix(prefix) {
            return rest;
        }
    }
    trimmed
}

fn chart_slb(d: &ReportData) -> Option<Figure> {
    let mut groups: Vec<Group<'_>> = Vec::new();
    for r in &d.slb_scaling {
        let n = r.workers.len();
        groups.push(Group {
            label: format!("{n} worker{}", if n == 1 { "" } else { "s" }),
            panel: 0,
            run: Ok(r),
        });
    }
    for (name, outcome) in &d.slb_policies {
        groups.push(Group {
            label: name.clone(),
            panel: 1,
            run: outcome.as_ref().map_err(|why| skipped_reason(why)),
        });
    }
    let bars: usize = groups.iter().map(|g| g.run.map_or(1, |r| r.workers.len().max(1))).sum();
    if groups.iter().all(|g| g.run.is_err()) {
        return None;
    }
    let value_top = groups
        .iter()
        .filter_map(|g| g.run.ok())
        .flat_map(|r| r.workers.iter())
        .map(|w| {
            let ns = w.ns_per_op();
            w.batches.as_ref().map_or(0.0, |b| b.p99.min(2.0 * ns)).max(ns)
        })
        .fold(0.0, f64::max);
    let plot =
        Plot { width: 1200.0, height: 430.0, left: 64.0, right: 20.0, top: 62.0, bottom: 70.0 };
    let y = plot.y_scale(ScaleKind::Linear, 0.0, svg::nice_max(value_top, 6));
    let id = "chart-slb";
    let mut out = svg::open(id, plot.width, plot.height, "SLB nanoseconds per store, per worker");
    out.push_str(&plot.axes(&category_x(&plot), &[], &y, &y.ticks(6)));
    // Layout: a slot per bar, a gap slot after each group and between the panels; a group is
    // at least as wide as its label, so a crowded machine (64 workers) stays legible.
    let panels_used = usize::from(groups.iter().any(|g| g.panel == 0))
        + usize::from(groups.iter().any(|g| g.panel == 1));
    let panel_gap = if panels_used == 2 { 1.0 } else { 0.0 };
    let label_px = |g: &Group<'_>| text_px(&g.label, 12.5) + 10.0;
    let bars_in = |g: &Group<'_>| g.run.map_or(1, |r| r.workers.len().max(1)) as f64;
    let width = plot.x1() - plot.x0();
    // Gaps (after each group, between the panels, half a one in front) are at least 14 px.
    let gaps = groups.len() as f64 + panel_gap + 0.5;
    let mut slot = width / (bars as f64 + gaps);
    for _ in 0..8 {
        let gap = slot.max(14.0);
        let (mut bar_units, mut label_width) = (0.0, 0.0);
        for g in &groups {
            if bars_in(g) * slot >= label_px(g) {
                bar_units += bars_in(g);
            } else {
                label_width += label_px(g);
            }
        }
        slot = ((width - gaps * gap - label_width) / bar_units.max(1.0)).max(0.5);
    }
    let slot = slot.min(70.0);
    let gap = slot.max(14.0);
    let bar_w = slot * 0.82;
    let mut cursor = plot.x0() + gap / 2.0;
    let mut panels: Vec<(usize, f64, f64)> = Vec::new();
    let mut max_workers = 0;
    for g in &groups {
        match panels.last_mut() {
            Some(last) if last.0 == g.panel => {}
            Some(last) => {
                last.2 = cursor - gap;
                let _ = write!(
                    out,
                    "<line class=\"divider\" x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\"/>",
                    px(plot.y1() - 30.0),
                    px(plot.y0() + 50.0),
                    x = px(cursor)
                );
                cursor += gap;
                panels.push((g.panel, cursor, cursor));
            }
            None => panels.push((g.panel, cursor, cursor)),
        }
        let group_w = (bars_in(g) * slot).max(label_px(g));
        let centre = cursor + group_w / 2.0;
        let note = match g.run {
            Ok(r) => {
                max_workers = max_workers.max(r.workers.len());
                let mut bx = centre - r.workers.len() as f64 * slot / 2.0;
                for (k, w) in r.workers.iter().enumerate() {
                    out.push_str(&slb_bar(w, k, &g.label, (bx, slot, bar_w), &y, plot.y0()));
                    bx += slot;
                }
                let s = r.summary();
                if r.workers.len() > 1 {
                    vec![
                        format!("median {} · spread {}%", fmt3(s.median_ns), fmt3(s.spread_pct)),
                        format!("spread {}%", fmt3(s.spread_pct)),
                    ]
                } else {
                    vec![format!("{} ns", fmt3(s.median_ns))]
                }
            }
            Err(_) => vec!["skipped".to_string()],
        };
        let _ = write!(
            out,
            "<text class=\"group-label\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            px(plot.y0() + 20.0),
            esc(&g.label),
            x = px(centre),
        );
        // The longest note that fits under the group.
        if let Some(note) = note.iter().find(|n| text_px(n, 11.5) <= group_w + gap * 0.8) {
            let _ = write!(
                out,
                "<text class=\"group-note\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                px(plot.y0() + 36.0),
                esc(note),
                x = px(centre),
            );
        }
        cursor += group_w + gap;
        if let Some(last) = panels.last_mut() {
            last.2 = cursor - gap;
        }
    }
    for (i, &(panel, x0, _)) in panels.iter().enumerate() {
        let titles: &[&str] = if panel == 0 {
            &["same work per worker, more workers", "more workers"]
        } else {
            &["one worker per CPU under each memory policy", "memory policy"]
        };
        // A title may run past its panel, up to where the next one's title starts.
        let room = panels.get(i + 1).map_or(plot.x1(), |next| next.1 - 12.0) - x0;
        let title = titles.iter().find(|t| text_px(t, 13.0) <= room).unwrap_or(&titles[1]);
        let _ = write!(
            out,
            "<text class=\"panel-title\" x=\"{}\" y=\"{}\">{}</text>",
            px(x0),
            px(plot.y1() - 22.0),
            esc(title)
        );
    }
    // Worker colour legend, top right; past eight workers the colours repeat.
    if max_workers <= svg::SERIES.len() {
        for k in 0..max_workers {
            let lx = plot.x1() - (max_workers - k) as f64 * 78.0;
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"5\" width=\"10\" height=\"10\" fill=\"{}\"/><text class=\"tick-label\" x=\"{}\" y=\"14\">worker {k}</text>",
                px(lx),
                svg::SERIES[k].hex(),
                px(lx + 14.0),
            );
        }
    } else {
        let _ = write!(
            out,
            "<text class=\"tick-label\" x=\"{}\" y=\"14\" text-anchor=\"end\">bars in worker order; colours repeat every {} workers</text>",
            px(plot.x1()),
            svg::SERIES.len()
        );
    }
    out.push_str(&plot.y_title("ns per store"));
    out.push_str("</svg>");

    let plan = groups.iter().find_map(|g| g.run.ok()).map(|r| &r.plan);
    let mut caption = String::from("Silly Little Benchmark: ");
    if let Some(p) = plan {
        let _ = write!(
            caption,
            "each worker owns {} pages of 4 KiB ({} pages) and performs {} × {} random 8-byte stores into them; all workers start together. ",
            p.pages,
            esc(&p.page.to_string()),
            p.pages,
            p.loops
        );
    }
    caption.push_str(
        "Bars: nanoseconds per store for each worker, from the common start to its last store. \
         Whiskers span the best to the p99 of its timed batches of 2<sup>18</sup> stores. ",
    );
    if !d.slb_scaling.is_empty() {
        caption.push_str("Left: the same work per worker with more workers at once (more is slower when memory is the bottleneck). ");
    }
    if !d.slb_policies.is_empty() {
        caption.push_str("Right: one worker per CPU under each memory policy, placement verified per worker (in the tooltips). ");
    }
    let clipped = groups
        .iter()
        .filter_map(|g| g.run.ok())
        .flat_map(|r| r.workers.iter())
        .any(|w| w.batches.as_ref().is_some_and(|b| b.p99 > y.hi));
    if clipped {
        caption.push_str(&esc(CLIPPED));
    }
    if groups.iter().any(|g| g.run.is_ok_and(|r| r.interrupted)) {
        caption.push_str("Some runs were INTERRUPTED: their figures cover the stores done. ");
    }
    let skipped: Vec<String> = groups
        .iter()
        .filter_map(|g| {
            g.run.err().map(|why| format!("<li><b>{}</b>: {}</li>", esc(&g.label), esc(why)))
        })
        .collect();
    let after = if skipped.is_empty() {
        String::new()
    } else {
        format!(
            "<p class=\"skipped-title\">Policies not run:</p><ul class=\"skipped\">{}</ul>",
            skipped.join("")
        )
    };
    Some(Figure { svg: out, caption, after })
}

/// One worker's bar in the SLB chart, at `x` in a slot of `slot` pixels.
fn slb_bar(
    w: &SlbWorkerResult,
    k: usize,
    group: &str,
    (x, slot, bar_w): (f64, f64, f64),
    y: &svg::Scale,
    base: f64,
) -> String {
    let ns = w.ns_per_op();
    let top = y.map(ns);
    let color = svg::SERIES[k % svg::SERIES.len()];
    let spread = w.batches.as_ref().map_or(String::new(), |b| {
        format!("; batches of 2^18 stores: best {} ns, p99 {} ns", fmt3(b.min), fmt3(b.p99))
    });
    let mut out = format!(
        "<rect class=\"data bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" data-value=\"{}\" \
         data-group=\"{}\" data-worker=\"{}\"><title>{}, worker {} on CPU {}: {} ns per store ({} stores in {} ms){spread}; memory {}</title></rect>",
        px(x + (slot - bar_w) / 2.0),
        px(top),
        px(bar_w),
        px(base - top),
        color.hex(),
        exact(ns),
        esc(group),
        w.worker,
        esc(group),
        w.worker,
        w.cpu.map_or("?".to_string(), |c| c.to_string()),
        fmt3(ns),
        w.ops,
        fmt3(w.elapsed_ns as f64 / 1e6),
        esc(&placement_text(&w.placement))
    );
    // Whiskers only where there is room for them (not on a 64-worker machine's hairlines).
    if let Some(b) = w.batches.as_ref().filter(|_| slot >= 6.0) {
        out.push_str(&whisker_capped(
            x + slot / 2.0,
            y.map(b.min),
            y.map(b.p99),
            (slot * 0.3).min(4.0),
            y.to,
        ));
    }
    out
}

/// About how wide `text` is at `font` pixels (DejaVu Sans averages a little over half an em).
fn text_px(text: &str, font: f64) -> f64 {
    text.chars().count() as f64 * font * 0.58
}

/// An x scale for charts whose x axis is categories (no ticks).
fn category_x(plot: &Plot) -> svg::Scale {
    plot.x_scale(ScaleKind::Linear, 0.0, 1.0)
}

const CSS: &str = "\
:root{color-scheme:light;--ink:#1d2430;--muted:#5b6573;--line:#d8dde4;--accent:#2b6cb0;--warn:#b0413e}\
*{box-sizing:border-box}\
body{margin:0;font:15px/1.45 system-ui,-apple-system,'Segoe UI','DejaVu Sans','Liberation Sans',sans-serif;color:var(--ink);background:#f4f6f8}\
.page{max-width:1260px;margin:0 auto;padding:22px 20px 36px}\
h1{margin:0 0 2px;font-size:26px}\
h2{font-size:17px;margin:0 0 10px}\
.sub{color:var(--muted);margin:0 0 14px;overflow-wrap:anywhere}\
dl.facts{display:grid;grid-template-columns:max-content minmax(0,1fr) max-content minmax(0,1fr);gap:5px 16px;margin:0;padding:12px 16px;background:#fff;border:1px solid var(--line);border-radius:6px;font-size:14px}\
dl.facts dt{color:var(--muted);white-space:nowrap}\
dl.facts dd{margin:0;overflow-wrap:anywhere}\
section.summary{margin:18px 0}\
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:12px}\
.card{background:#fff;border:1px solid var(--line);border-radius:6px;padding:10px 14px}\
.card .label{color:var(--muted);font-size:13px}\
.card .figure{font-size:23px;font-weight:600;margin:2px 0}\
.card .how{color:var(--muted);font-size:12.5px;line-height:1.35}\
main.charts{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:16px}\
main.charts section{background:#fff;border:1px solid var(--line);border-radius:6px;padding:14px 16px;min-width:0}\
main.charts section.wide{grid-column:1/-1}\
main.charts section.empty{align-self:start}\
figure{margin:0}\
figcaption{color:var(--muted);font-size:13px;margin-top:8px;line-height:1.4}\
.not-measured{color:var(--warn);font-style:italic;margin:6px 0}\
svg.chart{display:block;width:100%;height:auto;font-family:inherit}\
svg .grid{stroke:#e8ebef;stroke-width:1}\
svg .grid.minor{stroke:#f3f4f6}\
svg .axis,svg .tick{stroke:#6b7280;stroke-width:1}\
svg .tick-label{font-size:12px;fill:#4b5563}\
svg .axis-title{font-size:13px;fill:var(--ink)}\
svg .line{fill:none;stroke:var(--accent);stroke-width:2}\
svg .whisker{fill:none;stroke:#37474f;stroke-width:1.2;opacity:.75}\
svg circle.data{fill:var(--accent);stroke:#fff;stroke-width:1.2}\
svg .data.idle{fill:#e08a00;stroke:#fff;stroke-width:1.2}\
svg .data.noisy{fill:#fff;stroke:var(--accent);stroke-width:1.8}\
svg rect.bar.data{stroke:none}\
#chart-bandwidth-threads rect.data{fill:#5b8fc7}\
#chart-bandwidth-threads rect.data.noisy{fill:#a9c4e3;stroke:#5b8fc7;stroke-width:1.5}\
svg .cache-marker,svg .saturation{stroke:var(--warn);stroke-width:1.3;stroke-dasharray:6 4}\
svg .marker-label{font-size:12px;fill:var(--warn)}\
svg .reference{stroke:#9aa3ad;stroke-width:1.2;stroke-dasharray:3 4}\
svg .reference-label{font-size:11.5px;fill:#7b8591}\
svg .bar-label{font-size:11.5px;fill:var(--ink)}\
svg .point-label{font-size:12px;fill:var(--ink)}\
svg .bar-label,svg .point-label,svg .marker-label{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}\
svg .frame{fill:none;stroke:#9aa3ad;stroke-width:1}\
svg .cell{stroke:#fff;stroke-width:2}\
svg .group-label{font-size:12.5px;fill:var(--ink)}\
svg .group-note{font-size:11.5px;fill:#6b7280}\
svg .panel-title{font-size:13px;font-weight:600;fill:var(--ink)}\
svg .divider{stroke:#c4cad2;stroke-width:1}\
.skipped-title{margin:8px 0 2px;font-size:13px}\
ul.skipped,ul.notes{margin:4px 0;padding-left:20px;font-size:13.5px}\
footer{margin-top:18px;display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:16px}\
footer section{background:#fff;border:1px solid var(--line);border-radius:6px;padding:14px 16px;min-width:0;overflow-wrap:anywhere}\
footer .colophon{grid-column:1/-1;color:var(--muted);font-size:12.5px;margin:0}\
table.runs{border-collapse:collapse;font-size:13.5px}\
table.runs th,table.runs td{border-bottom:1px solid var(--line);padding:3px 12px 3px 0;text-align:left}\
td.num{font-variant-numeric:tabular-nums}\
code{font-family:'DejaVu Sans Mono',ui-monospace,monospace;font-size:13px}\
@media (max-width:900px){main.charts,footer{grid-template-columns:1fr}dl.facts{grid-template-columns:max-content minmax(0,1fr)}}\
@media print{body{background:#fff}section,figure{break-inside:avoid}}\
";
