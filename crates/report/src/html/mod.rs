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
//! `chart-bandwidth-threads`, `chart-loaded-latency`, `chart-slb`, and in full reports
//! `chart-c2c` and `chart-contention`), so tests and tools can read the figures back from the
//! page.
//!
//! A section without data says "not measured" with the reason taken from
//! [`ReportData::notes`]: each [`Note`] names its [`Section`] (set by the step that wrote it);
//! a section without notes of its own shows the run's, e.g. an interruption.
//!
//! Layout: `page` (header, headline figures, footer) and `notes` (which note explains which
//! section); this crate draws no chart of its own: the memory sections are drawn by
//! `membench::chart` from the outcomes they show, the machine's by `topo::render`, the others
//! by their crates; the style sheet is `chart::CSS`. Sections of
//! other stored runs ([`ReportData::parts`]) take the place of the page's empty section of the
//! same id, or follow the page's own.

use std::fmt::Write as _;

use membench::bandwidth::{BandwidthMatrix, BandwidthResult, Scaling};
use membench::c2c::C2cResult;
use membench::latency::{LatencyMatrix, LatencyPoint, PrefetchCheck};
use membench::loaded::LoadedCurve;
use membench::slb::SlbResult;
use membench::slb_shared::SharedSlbResult;
use serde::{Deserialize, Serialize};
use topo::Topology;

pub mod headline;
mod notes;
mod page;

pub use notes::{Note, Section};

use chart::svg::esc;
use chart::CSS;
use membench::chart as mem;
use notes::not_measured_reason;
use page::{footer, header, summary};

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
    /// Copy with ordinary and with non-temporal stores on every CPU (absent from older stored
    /// reports): the headline copy figure is the better of the two, named.
    #[serde(default)]
    pub copy_bandwidth: Vec<BandwidthResult>,
    pub loaded_latency: Option<LoadedCurve>,
    /// SLB at 1, 2, 4 … workers.
    pub slb_scaling: Vec<SlbResult>,
    /// SLB under (policy name, result or why it was skipped).
    pub slb_policies: Vec<(String, Result<SlbResult, String>)>,
    /// `report --full`: the cache-line round trip between every pair of CPUs.
    #[serde(default)]
    pub c2c: Option<C2cResult>,
    /// `report --full`: the shared-memory SLB by lock and worker count.
    #[serde(default)]
    pub contention: Vec<SharedSlbResult>,
    /// `report --full`: the spinlock run with its shared region (lock word) on the workers'
    /// node, remote, interleaved, and with the workers spread over nodes: (scenario, result or
    /// why it was skipped).
    #[serde(default)]
    pub lock_placement: Vec<(String, Result<SharedSlbResult, String>)>,
    /// (what, run id in the results database).
    pub stored_runs: Vec<(String, i64)>,
    /// Where the results database is, if runs were stored.
    pub database: Option<String>,
    /// Sections skipped or caveats, one sentence each, with the section each explains.
    pub notes: Vec<Note>,
    /// Throughput by threads and units (`report --full`; absent from older stored reports).
    #[serde(default)]
    pub cpu_scale: Option<tamp::scale::ScaleReport>,
    /// Sections drawn by the outcomes of other stored runs shown on this page
    /// (`report --from-db` with runs of any kind); each outcome draws its own.
    #[serde(skip)]
    pub parts: Vec<chart::Part>,
    /// Sections of the report that could not run here, each with why (stored with the page).
    #[serde(default)]
    pub skipped: Vec<SkippedSection>,
    /// `report --baseline`: this report against another (kept with the stored page).
    #[serde(default)]
    pub comparison: Option<crate::compare::ReportComparison>,
}

impl ReportData {
    /// A page with nothing measured yet: the steps (or stored runs) fill its sections.
    pub fn new(mode: &str, version: &str, topology: Topology, database: Option<String>) -> Self {
        Self {
            mode: mode.into(),
            generated_at: measure::time::utc_now_rfc3339(),
            version: version.into(),
            topology,
            latency_sweep: Vec::new(),
            sweep_cpu: None,
            prefetch_check: None,
            latency_matrix: None,
            bandwidth_matrix: None,
            bandwidth_scaling: None,
            copy_bandwidth: Vec::new(),
            loaded_latency: None,
            slb_scaling: Vec::new(),
            slb_policies: Vec::new(),
            stored_runs: Vec::new(),
            database,
            notes: Vec::new(),
            cpu_scale: None,
            c2c: None,
            contention: Vec::new(),
            lock_placement: Vec::new(),
            parts: Vec::new(),
            skipped: Vec::new(),
            comparison: None,
        }
    }

    /// SLB's time per store with the most workers, as a multiple of one worker's: `(ratio,
    /// workers)`, from the widest run that did all its stores (an interrupted one is partial).
    /// Above 1, each store took longer with company.
    pub fn slb_time_ratio(&self) -> Option<(f64, usize)> {
        let one = self.slb_scaling.first()?.summary().median_ns;
        let most = self.slb_scaling.iter().rev().find(|r| r.workers.len() > 1 && !r.interrupted)?;
        Some((most.summary().median_ns / one, most.workers.len()))
    }
}

/// A section of the report that did not run here, and why in one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedSection {
    pub area: chart::Area,
    /// The chart id of its place on the page.
    pub id: String,
    pub title: String,
    pub why: String,
}

/// Renders the whole report as one HTML5 page.
pub fn render_html(data: &ReportData) -> String {
    let mut page = String::with_capacity(96 * 1024);
    let model = data.topology.machine.cpu_model.as_deref().unwrap_or("unknown CPU");
    let css: String = CSS.lines().collect();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"generator\" content=\"platscope {}\">\
         <title>platscope report — {}</title><style>{css}</style></head><body><div class=\"page\">\n",
        esc(&data.version),
        esc(model)
    );
    page.push_str(&header(data));
    page.push_str(&summary(data));
    if let Some(c) = &data.comparison {
        page.push_str(&crate::compare::comparison_html(c));
    }
    page.push_str("<main class=\"charts\">\n");
    // The machine first: its facts, beside the baseline's when compared (the differing rows
    // marked), so a configuration diff is read next to the results diff.
    let baseline_machine = data.comparison.as_ref().map(|c| c.baseline_machine.as_slice());
    let machine = topo::render::facts_part(
        &topo::machine_facts(&data.topology),
        baseline_machine.filter(|facts| !facts.is_empty()),
    );
    page.push_str(&chart::render_part(&machine, ""));
    // Compared: each section of this machine, then the baseline's of the same id beside it
    // (a half section pairs with its half, a wide one stacks above its twin); the baseline's
    // sections this page has no twin for come last.
    let compared = data.comparison.as_ref();
    let own = sections_html(data, compared.map(|_| chart::Machine::This));
    let twins = compared.map(|c| c.baseline_sections.as_slice()).unwrap_or_default();
    let mut paired = vec![false; twins.len()];
    for (id, html) in &own {
        page.push_str(html);
        if let Some(i) = twins.iter().position(|(twin, _)| twin == id) {
            paired[i] = true;
            page.push_str(&twins[i].1);
        }
    }
    for ((_, html), paired) in twins.iter().zip(paired) {
        if !paired {
            page.push_str(html);
        }
    }
    page.push_str("</main>\n");
    page.push_str(&footer(data));
    page.push_str("</div></body></html>\n");
    page
}

/// The page's sections after the machine facts, in page order, each as (chart id, HTML),
/// tagged with whose they are when two machines share the page.
pub fn sections_html(data: &ReportData, machine: Option<chart::Machine>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let draw = |out: &mut Vec<(String, String)>, part: &chart::Part| {
        let reason = not_measured_reason(&part.id, &data.notes);
        out.push((part.id.clone(), chart::render_part_of(part, &reason, machine)));
    };
    let noted = |sections: &[Section]| data.notes.iter().any(|n| sections.contains(&n.section));
    // The memory sections when memory was measured (or tried: its notes say why not); a report
    // of other `--sections`, or of other kinds of run, leaves them out.
    let memory_ran = !data.latency_sweep.is_empty()
        || data.latency_matrix.is_some()
        || data.bandwidth_matrix.is_some()
        || data.bandwidth_scaling.is_some()
        || !data.copy_bandwidth.is_empty()
        || data.loaded_latency.is_some()
        || !data.slb_scaling.is_empty()
        || !data.slb_policies.is_empty()
        || noted(&[
            Section::LatencySize,
            Section::LatencyMatrix,
            Section::BandwidthMatrix,
            Section::BandwidthThreads,
            Section::LoadedLatency,
            Section::Slb,
        ]);
    let mut sections: Vec<chart::Part> = Vec::new();
    let memory = [
        mem::LATENCY_SIZE.part(mem::latency_size(
            &data.latency_sweep,
            data.sweep_cpu,
            data.prefetch_check.as_ref(),
            &data.topology,
        )),
        mem::LATENCY_MATRIX.part(
            data.latency_matrix.as_ref().and_then(|m| mem::latency_matrix(m, &data.topology)),
        ),
        mem::BANDWIDTH_MATRIX.part(data.bandwidth_matrix.as_ref().and_then(mem::bandwidth_matrix)),
        mem::BANDWIDTH_THREADS
            .part(data.bandwidth_scaling.as_ref().and_then(mem::bandwidth_threads)),
        mem::LOADED_LATENCY.part(data.loaded_latency.as_ref().and_then(mem::loaded_latency)),
        mem::SLB.part(mem::slb(&data.slb_scaling, &data.slb_policies)),
    ];
    if memory_ran {
        sections.extend(memory);
    }
    // When contention was measured or tried.
    if data.c2c.is_some()
        || !data.contention.is_empty()
        || noted(&[Section::C2c, Section::Contention])
    {
        sections.push(mem::C2C.part(data.c2c.as_ref().and_then(mem::c2c)));
        sections
            .push(mem::CONTENTION.part(mem::contention(&data.contention, &data.lock_placement)));
    }
    // An experiment of `--full` only: drawn when it ran, or explained when it was tried.
    let scale_tried = data.notes.iter().any(|n| n.section == Section::CpuScale);
    if data.cpu_scale.is_some() || scale_tried {
        // Drawn as `cpu scale` draws it (older stored reports kept the run in the page).
        sections.push(match &data.cpu_scale {
            Some(run) => tamp::chart::scale_part(run),
            None => chart::Part::new(
                chart::Area::Cpu,
                "chart-cpu-scale",
                "Throughput by threads and units (compression)",
                false,
            ),
        });
    }
    // Sections of the other stored runs shown with this page, each drawn by its own outcome:
    // in place of a section of the same id this page has no data for, else after the page's.
    let mut placed = vec![false; data.parts.len()];
    for section in &sections {
        let own: Vec<usize> =
            (0..data.parts.len()).filter(|&i| data.parts[i].id == section.id).collect();
        if section.figure.is_some() || own.is_empty() {
            draw(&mut out, section);
        }
        for i in own {
            placed[i] = true;
            draw(&mut out, &data.parts[i]);
        }
    }
    for (part, placed) in data.parts.iter().zip(placed) {
        if !placed {
            draw(&mut out, part);
        }
    }
    // A skipped section's part carries its reason as its own note.
    for s in &data.skipped {
        let mut part = chart::Part::new(s.area, &s.id, &s.title, false);
        part.notes.push(s.why.clone());
        draw(&mut out, &part);
    }
    out
}
