//! The charts, one file each (`latency_size`, `latency_matrix`, `bandwidth_matrix`,
//! `bandwidth_threads`, `loaded_latency`, `slb`, `c2c` with the contention chart; the two
//! matrices share `heatmap`; `cpu scale`'s is `tamp`'s own, `tamp::chart::cpu_scale`), and what
//! they share: the rendered [`Figure`], the wording of sample counts, placement and noise, and
//! the whiskers.

use measure::summary::Summary;
use membench::loaded::LoadMix;
use place::Placement;

use chart::svg::px;

mod bandwidth_matrix;
mod bandwidth_threads;
mod c2c;
mod heatmap;
mod latency_matrix;
mod latency_size;
mod loaded_latency;
mod slb;

pub(super) use bandwidth_matrix::chart_bandwidth_matrix;
pub(super) use bandwidth_threads::chart_bandwidth_threads;
pub(super) use c2c::{chart_c2c, chart_contention};
pub(super) use latency_matrix::chart_latency_matrix;
pub(super) use latency_size::chart_latency_size;
pub(super) use loaded_latency::chart_loaded_latency;
pub(super) use slb::chart_slb;
pub(super) use tamp::chart::cpu_scale as chart_cpu_scale;

pub(super) use chart::Figure;

/// A load mix as captions and cards name it.
pub(super) fn mix_name(mix: LoadMix) -> &'static str {
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
