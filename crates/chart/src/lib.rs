//! chart: how platscope draws a figure, shared by every crate that renders its own report
//! section — the SVG primitives ([`svg`]), the page's one style sheet ([`CSS`]) and the
//! section model ([`Part`]) an outcome fills and [`render_part`] turns into HTML.
//!
//! Nothing here knows what was measured: a domain crate builds its `Part` from its own outcome
//! (so a stored outcome draws the same section again, byte for byte), and the report page only
//! arranges parts.
//!
//! ```
//! use chart::{render_part, Area, Part};
//!
//! let part = Part::new(Area::Memory, "chart-demo", "A demo", false);
//! let html = render_part(&part, "no data for this section in this run");
//! assert!(html.starts_with("<section id=\"sec-demo\" class=\"half empty\">"));
//! // A part that says why it drew nothing says so wherever it is shown.
//! let mut part = part;
//! part.notes.push("nothing completed".into());
//! assert!(render_part(&part, "unused").contains("not measured: nothing completed"));
//! ```

pub mod labels;
pub mod svg;

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use svg::esc;

/// The style sheet of every platscope page: one rule per line; pages inline it with the lines
/// joined ([`inline_css`]).
pub const CSS: &str = include_str!("style.css");

/// The style sheet as pages inline it: no line breaks inside `<style>`.
pub fn inline_css() -> String {
    CSS.lines().collect()
}

/// The part of the page (and of the terminal summary) a section belongs to, in page order: the
/// one list of the report's areas. The plan's sections, `report --sections`' values and help,
/// the page's headings and the fleet's order of figures all come from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Area {
    /// The machine's facts: always shown, not a section one picks.
    Machine,
    Memory,
    Contention,
    Cpu,
    Compression,
    Allocators,
    Database,
    Network,
}

impl Area {
    /// Every area, in page order.
    pub const ALL: [Area; 8] = [
        Area::Machine,
        Area::Memory,
        Area::Contention,
        Area::Cpu,
        Area::Compression,
        Area::Allocators,
        Area::Database,
        Area::Network,
    ];

    /// The areas `report --sections` picks from (all but the machine's facts), in page order.
    pub fn sections() -> impl Iterator<Item = Area> {
        Self::ALL.into_iter().filter(|a| *a != Area::Machine)
    }

    /// Its heading on the page (`CPU`).
    pub fn title(self) -> &'static str {
        match self {
            Area::Machine => "Machine",
            Area::Memory => "Memory",
            Area::Contention => "Contention",
            Area::Cpu => "CPU",
            Area::Compression => "Compression",
            Area::Allocators => "Allocators",
            Area::Database => "Database",
            Area::Network => "Network",
        }
    }

    /// Its name on the command line and in stored data (`cpu`).
    pub fn name(self) -> &'static str {
        match self {
            Area::Machine => "machine",
            Area::Memory => "memory",
            Area::Contention => "contention",
            Area::Cpu => "cpu",
            Area::Compression => "compression",
            Area::Allocators => "allocators",
            Area::Database => "database",
            Area::Network => "network",
        }
    }

    /// The area whose [`Area::title`] is `title` (as the fleet's stored figures name it).
    pub fn from_title(title: &str) -> Option<Area> {
        Self::ALL.into_iter().find(|a| a.title() == title)
    }
}

/// A section one can pick (`report --sections cpu,network`), by [`Area::name`]; the machine's
/// facts are always shown and not one of them.
impl std::str::FromStr for Area {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Area::sections().find(|a| a.name() == text.trim()).ok_or_else(|| {
            let known: Vec<&str> = Area::sections().map(Area::name).collect();
            format!("unknown section {text:?}; known: {}", known.join(", "))
        })
    }
}

/// A section of the page as the code that draws it declares it: its area, chart id, heading
/// and width. The drawing crate owns it (`membench::chart::LATENCY_SIZE`,
/// `tamp::chart::CPU_SCALE`, …) and builds its [`Part`] from it; the report's plan names it as
/// the place a step draws (and says why there when the step cannot run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    pub area: Area,
    /// The chart's id (`chart-…`).
    pub id: &'static str,
    pub title: &'static str,
    /// Drawn across the page.
    pub wide: bool,
}

impl Section {
    /// Its part with `figure` (or "not measured" when it is `None`).
    pub fn part(self, figure: Option<Figure>) -> Part {
        Part::new(self.area, self.id, self.title, self.wide).with_figure(figure)
    }
}

/// A rendered chart: the `<svg>`, its caption (HTML) and anything shown under it (HTML).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figure {
    pub svg: String,
    pub caption: String,
    pub after: String,
}

/// A headline figure: what a reader looks at first, and what two runs are compared on.
#[derive(Debug, Clone, PartialEq)]
pub struct Headline {
    /// The figure's name as the page shows it ("idle DRAM latency").
    pub name: String,
    /// The value as shown, with its unit ("96.4 ns").
    pub value: String,
    /// What it was measured on, in a few words.
    pub detail: String,
    /// The stored metric whose samples back it (`Metric::key`), for comparisons.
    pub metric: Option<String>,
}

impl Headline {
    pub fn new(
        name: impl Into<String>,
        value: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Self { name: name.into(), value: value.into(), detail: detail.into(), metric: None }
    }

    /// Backed by the stored metric `key` (`Metric::key`): a comparison tests it.
    pub fn metric(mut self, key: impl Into<String>) -> Self {
        self.metric = Some(key.into());
        self
    }
}

/// One section of a page, as an outcome draws it.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub area: Area,
    /// The chart's id (`chart-…`); the section's id is the same with `sec-`.
    pub id: String,
    pub title: String,
    /// Drawn across the page rather than in a half-width column.
    pub wide: bool,
    pub figure: Option<Figure>,
    pub headlines: Vec<Headline>,
    /// Further figures a comparison tests beside the headlines (each thread count of a
    /// scaling run, each kernel of a pair): compared, never shown as headline figures.
    pub compared: Vec<Headline>,
    /// Sentences for the reader under the chart (caveats, what was skipped).
    pub notes: Vec<String>,
}

impl Part {
    pub fn new(area: Area, id: &str, title: &str, wide: bool) -> Self {
        Self {
            area,
            id: id.to_string(),
            title: title.to_string(),
            wide,
            figure: None,
            headlines: Vec::new(),
            compared: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn with_figure(mut self, figure: Option<Figure>) -> Self {
        self.figure = figure;
        self
    }
}

/// The section's HTML: its chart with caption, or "not measured" with the part's own notes
/// (an outcome that says why it drew nothing says so wherever it is shown), else
/// `reason_if_empty`.
pub fn render_part(part: &Part, reason_if_empty: &str) -> String {
    render_part_of(part, reason_if_empty, None)
}

/// Whose section it is on a page that shows two machines: a symbol and a word in the heading,
/// so the two read apart without colour, and a class for the border.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Machine {
    This,
    Baseline,
}

impl Machine {
    fn tag(self) -> (&'static str, &'static str) {
        match self {
            Machine::This => ("this", "■ this machine"),
            Machine::Baseline => ("baseline", "□ baseline"),
        }
    }
}

/// [`render_part`], tagged with the machine it shows when two are on the page (the baseline's
/// sections get their own element ids, so ids stay unique).
pub fn render_part_of(part: &Part, reason_if_empty: &str, machine: Option<Machine>) -> String {
    let mut out = String::new();
    let class = match (part.wide, part.figure.is_some()) {
        (true, _) => "wide",
        (false, true) => "half",
        (false, false) => "half empty",
    };
    let mut id = part.id.replacen("chart-", "sec-", 1);
    let (class, tag) = match machine.map(Machine::tag) {
        Some((name, label)) => {
            if machine == Some(Machine::Baseline) {
                id.push_str("-baseline");
            }
            (format!("{class} {name}"), format!("<span class=\"machine-tag\">{label}</span> "))
        }
        None => (class.to_string(), String::new()),
    };
    let _ = write!(
        out,
        "<section id=\"{}\" class=\"{class}\"><h2>{tag}{}</h2>",
        esc(&id),
        esc(&part.title)
    );
    match &part.figure {
        Some(f) => {
            let _ = write!(out, "<figure>{}<figcaption>{}</figcaption></figure>", f.svg, f.caption);
            out.push_str(&f.after);
        }
        None => {
            let own = part.notes.join(" ");
            let reason = if own.is_empty() { reason_if_empty } else { own.as_str() };
            let _ = write!(out, "<p class=\"not-measured\">not measured: {}</p>", esc(reason));
        }
    }
    out.push_str("</section>\n");
    out
}

/// One headline figure as a card: what it is, the number, how it was obtained (the report's
/// and the fleet page's cards, styled by [`CSS`]).
pub fn card(out: &mut String, label: &str, figure: &str, how: &str) {
    let _ = write!(
        out,
        "<div class=\"card\"><div class=\"label\">{}</div><div class=\"figure\">{}</div>\
         <div class=\"how\">{}</div></div>",
        esc(label),
        esc(figure),
        esc(how)
    );
}

/// A self-contained HTML page around `body` (sections from [`render_part`]): the style sheet
/// inlined, no script and no external URL, so it opens from a file anywhere.
pub fn page(title: &str, version: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"generator\" content=\"platscope {v}\">\
         <title>{t}</title><style>{css}</style></head><body><div class=\"page\">\n\
         <header><h1>{t}</h1><p class=\"sub\">platscope {v}</p></header>\n\
         <main class=\"charts\">\n{body}</main>\n</div></body></html>\n",
        t = esc(title),
        v = esc(version),
        css = inline_css(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_areas_are_listed_in_page_order_under_their_stored_names() {
        for (i, area) in Area::ALL.into_iter().enumerate() {
            assert_eq!(area as usize, i, "{area:?} out of place in Area::ALL");
            // The name on the command line is the one stored pages and skipped steps carry.
            let stored = format!("\"{}\"", area.name());
            assert_eq!(serde_json::to_string(&area).unwrap(), stored);
            assert_eq!(serde_json::from_str::<Area>(&stored).unwrap(), area);
            assert_eq!(Area::from_title(area.title()), Some(area));
        }
        assert_eq!(Area::from_title("Storage"), None);
    }

    #[test]
    fn sections_are_picked_by_name_and_the_machine_is_not_one() {
        let picked: Vec<Area> = Area::sections().collect();
        assert_eq!(picked.len(), Area::ALL.len() - 1);
        for area in picked {
            assert_eq!(area.name().parse::<Area>(), Ok(area));
        }
        let e = "machine".parse::<Area>().unwrap_err();
        assert!(
            e.starts_with("unknown section \"machine\"; known: memory, contention, cpu"),
            "{e}"
        );
        assert!(" cpu ".parse::<Area>().is_ok());
    }

    #[test]
    fn a_card_escapes_what_it_shows() {
        let mut out = String::new();
        card(&mut out, "a <b>", "1 & 2", "\"how\"");
        assert_eq!(
            out,
            "<div class=\"card\"><div class=\"label\">a &lt;b&gt;</div><div class=\"figure\">1 \
             &amp; 2</div><div class=\"how\">&quot;how&quot;</div></div>"
        );
    }
}
