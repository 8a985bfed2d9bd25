//! The self-contained HTML report of `platscope report`: inline CSS and SVG charts, no script
//! and no external URL of any kind, so it opens from a file on a machine with no network.
//!
//! ```no_run
//! # fn demo(data: &report::html::ReportData) -> std::io::Result<()> {
//! std::fs::write("report.html", report::html::render_html(data))?;
//! # Ok(()) }
//! ```
//!
//! The page is the machine's facts, then the sections ([`chart::Part`]) of the runs the report
//! composed, each drawn by its own outcome exactly as `report --from-db` draws it again from the
//! store, grouped under one heading per area (Machine, Memory, Contention, CPU, Compression,
//! Allocators, Database, Network) with a contents bar linking to each. The headline figures are
//! the parts' own ([`chart::Headline`]): every area's under its heading, the first of each on
//! the cards at the top, and all of them in the terminal summary (`suite::summary`).
//!
//! Every data-bearing SVG element (a point, a bar, a heatmap cell) has the class `data` and a
//! `data-value` attribute holding the measured number at full precision; each chart's `<svg>`
//! has a stable id (`chart-latency-size`, `chart-latency-matrix`, …), so tests and tools can
//! read the figures back from the page.
//!
//! A section that could not run is a [`SkippedSection`] and says "not measured" with its
//! reason; a section without data says why from [`ReportData::notes`] (each [`Note`] names its
//! [`Section`]), else the run's notes, e.g. an interruption.

use std::fmt::Write as _;

use chart::{Area, Headline, Part};
use serde::{Deserialize, Serialize};
use topo::Topology;

mod notes;
mod page;

pub use notes::{Note, Section};

use chart::svg::esc;
use chart::CSS;
use notes::not_measured_reason;
use page::{contents, footer, header, summary};

/// One `platscope report` page: the machine it ran on, the stored runs it composed and what
/// they draw. Measurements live in the runs (each step is an experiment stored under its own
/// kind); the page keeps their ids, so `report --from-db` draws them again. Reports stored by
/// earlier versions also held their memory figures here: those fields are ignored on reading,
/// and their stored steps draw the sections instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportData {
    /// `quick` or `full` (or `from stored runs`).
    pub mode: String,
    /// UTC, RFC 3339.
    pub generated_at: String,
    /// platscope version and git commit.
    pub version: String,
    pub topology: Topology,
    /// (what, run id in the results database), one per step run, in page order.
    pub stored_runs: Vec<(String, i64)>,
    /// Where the results database is, if runs were stored.
    pub database: Option<String>,
    /// Caveats, one sentence each, with the section each explains.
    pub notes: Vec<Note>,
    /// The sections the composed runs draw (not stored: the runs draw them again).
    #[serde(skip)]
    pub parts: Vec<Part>,
    /// Steps that could not run here, each with why (stored with the page).
    #[serde(default)]
    pub skipped: Vec<SkippedSection>,
    /// `report --baseline`: this report against another (kept with the stored page).
    #[serde(default)]
    pub comparison: Option<crate::compare::ReportComparison>,
    /// Where the CPUs sat in each step whose figures depend on it, and what changed
    /// (`measure::placement::classify` over the steps' probes). Pages stored before probes
    /// existed have none; `report --from-db` works it out again from the steps.
    #[serde(default)]
    pub placement: Option<measure::placement::PlacementSummary>,
    /// The later rounds of the repeated steps: (step label, round from 2, run id). Round 1 is
    /// `stored_runs`; each figure's rounds are its replicates in a comparison.
    #[serde(default)]
    pub rounds: Vec<RoundRun>,
    /// The core clock measured at the end of each round (GHz; `None` where it could not be).
    #[serde(default)]
    pub clock_ghz: Vec<Option<f64>>,
}

/// A later round of a repeated step, stored as a run of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundRun {
    /// The step's label, as in [`ReportData::stored_runs`].
    pub label: String,
    /// 2, 3, …
    pub round: u32,
    pub id: i64,
}

impl ReportData {
    /// A page with nothing measured yet: the steps (or stored runs) fill its sections.
    pub fn new(mode: &str, version: &str, topology: Topology, database: Option<String>) -> Self {
        Self {
            mode: mode.into(),
            generated_at: measure::time::utc_now_rfc3339(),
            version: version.into(),
            topology,
            stored_runs: Vec::new(),
            database,
            notes: Vec::new(),
            parts: Vec::new(),
            skipped: Vec::new(),
            comparison: None,
            placement: None,
            rounds: Vec::new(),
            clock_ghz: Vec::new(),
        }
    }

    /// Every section on the page after the machine facts, in page order (by area, then as the
    /// runs drew them): the runs' parts and the skipped steps' placeholders.
    pub fn sections(&self) -> Vec<Part> {
        let mut out: Vec<Part> = self.parts.clone();
        for s in &self.skipped {
            let mut part = Part::new(s.area, &s.id, &s.title, false);
            part.notes.push(s.why.clone());
            out.push(part);
        }
        // A stable sort keeps each area's sections in the order they were measured.
        out.sort_by_key(|p| p.area);
        out
    }

    /// Every headline figure, with the area it belongs to, in page order: what the cards, the
    /// area headings and the terminal summary show.
    pub fn headlines(&self) -> Vec<(Area, Headline)> {
        self.sections()
            .into_iter()
            .flat_map(|p| {
                let area = p.area;
                p.headlines.into_iter().map(move |h| (area, h))
            })
            .collect()
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
    let sections = data.sections();
    page.push_str(&contents(data, &sections));
    page.push_str(&summary(data));
    if let Some(c) = &data.comparison {
        page.push_str(&crate::compare::comparison_html(c));
    }
    page.push_str("<main class=\"charts\">\n");
    // The machine first: its facts, beside the baseline's when compared (the differing rows
    // marked), so a configuration diff is read next to the results diff.
    page.push_str(&area_heading(Area::Machine, &[]));
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

/// The id of an area's heading on the page (the contents bar links to it).
pub fn area_anchor(area: Area) -> String {
    format!("area-{}", area.title().to_lowercase())
}

/// An area's heading across the page, with its headline figures beside it.
fn area_heading(area: Area, headlines: &[&Headline]) -> String {
    let mut out = format!(
        "<div class=\"area-head\" id=\"{}\"><h2>{}</h2>",
        area_anchor(area),
        esc(area.title())
    );
    if !headlines.is_empty() {
        out.push_str("<ul class=\"area-figures\">");
        for h in headlines {
            let _ = write!(
                out,
                "<li><span class=\"label\">{}</span> <b>{}</b> <span class=\"how\">{}</span></li>",
                esc(&h.name),
                esc(&h.value),
                esc(&h.detail)
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</div>\n");
    out
}

/// The page's sections after the machine facts, in page order, each as (chart id, HTML),
/// tagged with whose they are when two machines share the page. Each area opens with its
/// heading (ids `area-…`, which a baseline's sections leave out).
pub fn sections_html(data: &ReportData, machine: Option<chart::Machine>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let sections = data.sections();
    let mut area = None;
    for part in &sections {
        if area != Some(part.area) {
            area = Some(part.area);
            let headlines: Vec<&Headline> = sections
                .iter()
                .filter(|p| p.area == part.area)
                .flat_map(|p| &p.headlines)
                .collect();
            out.push((area_anchor(part.area), area_heading(part.area, &headlines)));
        }
        let reason = not_measured_reason(&part.id, &data.notes);
        out.push((part.id.clone(), chart::render_part_of(part, &reason, machine)));
    }
    out
}

/// The baseline's page sections, tagged as the baseline's, with their element ids (charts,
/// gradients, titles) prefixed so they stay unique beside this machine's.
pub fn baseline_sections(baseline: &ReportData) -> Vec<(String, String)> {
    sections_html(baseline, Some(chart::Machine::Baseline))
        .into_iter()
        // The area headings are this page's own.
        .filter(|(id, _)| !id.starts_with("area-"))
        .map(|(id, html)| {
            let html = html
                .replace("id=\"chart-", "id=\"baseline-chart-")
                .replace("url(#chart-", "url(#baseline-chart-")
                .replace("aria-labelledby=\"chart-", "aria-labelledby=\"baseline-chart-");
            (id, html)
        })
        .collect()
}
