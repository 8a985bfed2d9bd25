//! One bandwidth figure (`mem bandwidth` without --matrix or --scale): a table of each
//! thread's median and the threads' aggregate, with where each thread's memory was.

use std::fmt::Write as _;

use crate::bandwidth::BandwidthResult;

use super::{placement_text, samples_text, Figure};
use chart::svg::{bytes_label, esc, exact, fmt3};

pub fn bandwidth_run(r: &BandwidthResult) -> Option<Figure> {
    if r.threads.is_empty() || !r.aggregate_gbs.median.is_finite() {
        return None;
    }
    let mut table = String::from(
        "<table class=\"facts-table\"><thead><tr><th>CPU</th><th>median GB/s</th>\
         <th>best GB/s</th><th>memory</th></tr></thead><tbody>",
    );
    for t in &r.threads {
        let memory: Vec<String> = t.placements.iter().map(placement_text).collect();
        let _ = write!(
            table,
            "<tr><td>{}</td><td class=\"data\" data-value=\"{}\">{}</td><td>{}</td><td>{}</td></tr>",
            t.cpu.map_or("?".to_string(), |c| c.to_string()),
            exact(t.gbs.median),
            fmt3(t.gbs.median),
            fmt3(t.gbs.max),
            esc(&memory.join("; "))
        );
    }
    let _ = write!(
        table,
        "<tr><td>all {} together</td><td class=\"data\" data-value=\"{}\">{}</td><td>{}</td>\
         <td></td></tr></tbody></table>",
        r.threads.len(),
        exact(r.aggregate_gbs.median),
        fmt3(r.aggregate_gbs.median),
        fmt3(r.aggregate_gbs.max)
    );
    let mut caption = format!(
        "Bandwidth of the {} kernel ({}) with {} thread(s) at once, each streaming through its \
         own {}: {} in GB/s (10<sup>9</sup> bytes/s). Counted: {}.",
        esc(&r.kernel.to_string()),
        esc(&r.how()),
        r.threads.len(),
        esc(&bytes_label(r.bytes_per_thread as f64)),
        samples_text("rounds", std::iter::once(&r.aggregate_gbs)),
        esc(&r.accounting)
    );
    if r.interrupted {
        caption.push_str(" INTERRUPTED: the figures cover the rounds completed.");
    }
    size_checks(&mut caption, std::iter::once(r));
    Some(Figure { svg: table, caption, after: String::new() })
}

/// The buffer-size self-checks of `runs` (those sized from the cache), one sentence each.
fn size_checks<'a>(caption: &mut String, runs: impl Iterator<Item = &'a BandwidthResult>) {
    let checks: Vec<String> = runs
        .filter_map(|r| r.size_check.as_ref().map(|c| format!("{}: {}", r.kernel, c.sentence())))
        .collect();
    if !checks.is_empty() {
        let _ = write!(
            caption,
            " Buffers sized so the threads together stream at least 4× the last-level cache, \
             and checked at twice that: {}.",
            esc(&checks.join("; "))
        );
    }
}

/// Several kernels over the same threads (`mem bandwidth --kernel copy,copy-nt`): a row per
/// kernel with its aggregate median and best round.
pub fn bandwidth_kernels(runs: &[BandwidthResult]) -> Option<Figure> {
    let runs: Vec<&BandwidthResult> =
        runs.iter().filter(|r| r.aggregate_gbs.median.is_finite()).collect();
    let first = runs.first()?;
    let mut table = String::from(
        "<table class=\"facts-table\"><thead><tr><th>kernel</th><th>median GB/s</th>\
         <th>best GB/s</th><th>threads</th><th>counted</th></tr></thead><tbody>",
    );
    for r in &runs {
        let _ = write!(
            table,
            "<tr><td>{} ({})</td><td class=\"data\" data-value=\"{}\">{}</td><td>{}</td>\
             <td>{}</td><td>{}</td></tr>",
            esc(&r.kernel.to_string()),
            esc(&r.how()),
            exact(r.aggregate_gbs.median),
            fmt3(r.aggregate_gbs.median),
            fmt3(r.aggregate_gbs.max),
            r.threads.len(),
            esc(&r.accounting)
        );
    }
    table.push_str("</tbody></table>");
    let mut caption = format!(
        "Bandwidth of each kernel with {} thread(s) at once, each streaming through its own {}: \
         {} in GB/s (10<sup>9</sup> bytes/s).",
        first.threads.len(),
        esc(&bytes_label(first.bytes_per_thread as f64)),
        samples_text("rounds", runs.iter().map(|r| &r.aggregate_gbs)),
    );
    if runs.iter().any(|r| r.interrupted) {
        caption.push_str(" INTERRUPTED: the figures cover the rounds completed.");
    }
    size_checks(&mut caption, runs.iter().copied());
    Some(Figure { svg: table, caption, after: String::new() })
}
