//! The memory benchmarks' report charts, one file each: [`latency_size`], [`latency_matrix`],
//! [`bandwidth_matrix`], [`bandwidth_threads`], [`loaded_latency`], [`slb`], [`c2c`] and
//! [`contention`] (the three matrices share the heatmap). Each draws from the outcome(s) it
//! shows, never from a whole page's data, so an experiment's stored outcome draws its section
//! again (`report --from-db`) and the report page calls the same functions. Each section's id,
//! heading and width is one [`Section`] here, the one copy the drawing code and the report's
//! plan use.
//!
//! Every data-bearing SVG element has the class `data` and a `data-value` attribute holding
//! the measured number at full precision.

use chart::Area;
use measure::summary::Summary;
use place::Placement;

use crate::loaded::LoadMix;
use chart::svg::px;

mod bandwidth_matrix;
mod bandwidth_run;
mod bandwidth_threads;
mod c2c;
pub mod headlines;
mod heatmap;
mod latency_matrix;
mod latency_size;
mod loaded_latency;
mod slb;

pub use bandwidth_matrix::bandwidth_matrix;
pub use bandwidth_run::{bandwidth_kernels, bandwidth_run};
pub use bandwidth_threads::bandwidth_threads;
pub use c2c::{c2c, contention};
pub use chart::Figure;
pub use latency_matrix::latency_matrix;
pub use latency_size::latency_size;
pub use loaded_latency::loaded_latency;
pub use slb::slb;

pub use chart::Section;

pub const LATENCY_SIZE: Section = Section {
    area: Area::Memory,
    id: "chart-latency-size",
    title: "Latency by working-set size",
    wide: true,
};
pub const LATENCY_MATRIX: Section = Section {
    area: Area::Memory,
    id: "chart-latency-matrix",
    title: "Node × node latency",
    wide: false,
};
pub const BANDWIDTH_MATRIX: Section = Section {
    area: Area::Memory,
    id: "chart-bandwidth-matrix",
    title: "Node × node bandwidth",
    wide: false,
};
/// One `mem bandwidth` figure (not a section of the report page).
pub const BANDWIDTH: Section =
    Section { area: Area::Memory, id: "chart-bandwidth", title: "Bandwidth", wide: false };
pub const BANDWIDTH_THREADS: Section = Section {
    area: Area::Memory,
    id: "chart-bandwidth-threads",
    title: "Bandwidth by thread count",
    wide: false,
};
pub const LOADED_LATENCY: Section = Section {
    area: Area::Memory,
    id: "chart-loaded-latency",
    title: "Latency under load",
    wide: false,
};
pub const SLB: Section = Section {
    area: Area::Memory,
    id: "chart-slb",
    title: "SLB: random stores per worker",
    wide: true,
};
pub const SLB_POLICIES: Section = Section {
    area: Area::Memory,
    id: "chart-slb-policies",
    title: "SLB under local, interleaved and remote memory",
    wide: true,
};
/// Several kernels at once (`mem bandwidth --kernel copy,copy-nt`).
pub const BANDWIDTH_KERNELS: Section = Section {
    area: Area::Memory,
    id: "chart-bandwidth-kernels",
    title: "Bandwidth by kernel",
    wide: false,
};
/// `timer`'s table of clocks (the report's CPU area).
pub const TIMER: Section =
    Section { area: Area::Cpu, id: "chart-timer", title: "Reading the clock", wide: false };
pub const C2C: Section = Section {
    area: Area::Contention,
    id: "chart-c2c",
    title: "Core to core: cache line hand-off",
    wide: false,
};
pub const CONTENTION: Section = Section {
    area: Area::Contention,
    id: "chart-contention",
    title: "Lock contention in shared memory",
    wide: false,
};

/// A load mix as captions and cards name it.
pub fn mix_name(mix: LoadMix) -> &'static str {
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
    let mut text =
        if nodes.is_empty() { "no resident pages".to_string() } else { nodes.join(", ") };
    if p.page != place::PageSize::Base {
        text.push_str(" in ");
        text.push_str(&p.pages_label());
    }
    text
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
