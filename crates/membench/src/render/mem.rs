//! Memory benchmark results as text.

use std::fmt::Write as _;

use crate::latency::{LatencyMatrix, LatencyPoint, PrefetchCheck, PREFETCH_RATIO};
use crate::slb::{SlbResult, SlbSummary};
use place::Placement;
use topo::units::format_bytes;
use topo::{Cache, Distances};

fn where_memory_was(p: &Placement) -> String {
    let nodes: Vec<String> = p
        .per_node
        .iter()
        .map(|n| format!("node {} {:.0}%", n.node, 100.0 * p.fraction_on(n.node)))
        .collect();
    let mut text =
        if nodes.is_empty() { "no resident pages".to_string() } else { nodes.join(", ") };
    if p.not_present > 0 {
        let _ = write!(text, ", {} pages absent", p.not_present);
    }
    text
}

/// One latency figure with its spread and where its memory was.
pub fn latency_line(point: &LatencyPoint) -> String {
    let cycles =
        point.cycles.map_or(" (cycles unknown)".to_string(), |c| format!(" ({c:.0} cycles)"));
    let cpu = point.cpu.map_or("?".to_string(), |c| c.to_string());
    format!(
        "{}: median {:.1} ns{cycles}, p99 {:.1} ns, best {:.1} ns over {} samples{}; CPU {cpu}, memory on {} ({})",
        format_bytes(point.bytes),
        point.ns.median,
        point.ns.p99,
        point.ns.min,
        point.ns.samples,
        if point.ns.noisy { " [noisy]" } else { "" },
        where_memory_was(&point.placement),
        point.placement.pages_label(),
    )
}

/// The prefetch self-check's verdict.
pub fn prefetch_line(check: &PrefetchCheck) -> String {
    if check.defeated {
        format!(
            "prefetch check: the same buffer chased in address order takes {:.1} ns per load vs {:.1} ns random ({:.1}x): the random chase is not being prefetched",
            check.sequential_ns, check.random_ns, check.ratio
        )
    } else {
        format!(
            "prefetch check FAILED: address order {:.1} ns vs random {:.1} ns ({:.1}x, expected at least {PREFETCH_RATIO}x): the random figure may be helped by prefetchers or the buffer fits in a cache",
            check.sequential_ns, check.random_ns, check.ratio
        )
    }
}

/// Header of the size-sweep table.
pub fn sweep_header() -> String {
    format!(
        "{:>12} {:>10} {:>8} {:>10} {:>10}  {}\n",
        "size", "median ns", "cycles", "p99 ns", "best ns", ""
    )
}

/// Said under a latency sweep whose cycles column is empty: the core clock is unknown, and a
/// cycle count computed from a wrong clock would be wrong by the same factor.
pub const CYCLES_UNKNOWN: &str = "cycles unknown (-): the core clock's two methods disagree or \
                                  exceed what the platform states; `platscope timer` says why\n";

/// [`CYCLES_UNKNOWN`] when any of `points` has no cycles.
pub fn cycles_note(points: &[LatencyPoint]) -> &'static str {
    if points.iter().any(|p| p.cycles.is_none()) {
        CYCLES_UNKNOWN
    } else {
        ""
    }
}

/// One sweep row; marks the cache level the size has just outgrown.
pub fn sweep_row(point: &LatencyPoint, caches: &[Cache]) -> String {
    let fits: Vec<String> = caches
        .iter()
        .filter(|c| c.size_bytes > 0)
        .map(|c| (c.name(), c.size_bytes))
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .filter(|(_, size)| point.bytes <= *size)
        .map(|(name, _)| name)
        .take(1)
        .collect();
    let note = match fits.first() {
        Some(level) => format!("fits in {level}"),
        None => "beyond the caches".to_string(),
    };
    format!(
        "{:>12} {:>10.2} {:>8} {:>10.2} {:>10.2}  {}{}\n",
        format_bytes(point.bytes),
        point.ns.median,
        point.cycles.map_or("-".to_string(), |c| format!("{c:.1}")),
        point.ns.p99,
        point.ns.min,
        note,
        if point.ns.noisy { " [noisy]" } else { "" }
    )
}

/// A node×node latency table shaped like numactl's distance table, then measured ratios next
/// to the SLIT ratios.
pub fn latency_matrix(m: &LatencyMatrix, slit: Option<&Distances>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "idle latency in ns (median), {} per cell, CPU node down, memory node across:",
        format_bytes(m.bytes)
    );
    out.push_str("node ");
    for n in &m.memory_nodes {
        let _ = write!(out, "{n:>8} ");
    }
    out.push('\n');
    for (from, row) in m.cpu_nodes.iter().zip(&m.cells) {
        let _ = write!(out, "{from:>3}: ");
        for cell in row {
            let _ = write!(out, "{:>8.1}{}", cell.ns.median, if cell.ns.noisy { "*" } else { " " });
        }
        out.push('\n');
    }
    out.push_str("\nmeasured / local vs SLIT / 10:\n");
    for (i, (from, row)) in m.cpu_nodes.iter().zip(&m.cells).enumerate() {
        let local = m.memory_nodes.iter().position(|n| n == from).map(|j| row[j].ns.median);
        let _ = write!(out, "{from:>3}: ");
        for (j, cell) in row.iter().enumerate() {
            let measured = local.map_or("-".to_string(), |l| format!("{:.2}", cell.ns.median / l));
            let firmware = slit
                .and_then(|d| d.get(m.cpu_nodes[i], m.memory_nodes[j]))
                .map_or("-".to_string(), |d| format!("{:.1}", f64::from(d) / 10.0));
            let _ = write!(out, "{:>12} ", format!("{measured}/{firmware}"));
        }
        out.push('\n');
    }
    if m.cells.iter().flatten().any(|c| c.ns.noisy) {
        out.push_str("* noisy: the middle half of the samples spread more than 5%\n");
    }
    out
}

/// What the SLB workers' pages were: read back from their arenas, else as planned.
pub(crate) fn slb_pages(result: &SlbResult) -> String {
    let placements: Vec<Placement> = result.workers.iter().map(|w| w.placement.clone()).collect();
    place::pages_label_of(&placements).unwrap_or_else(|| format!("{} pages", result.plan.page))
}

/// memhammer's line per worker, then the summary and where each worker's memory was.
pub fn slb_text(result: &SlbResult) -> String {
    let mut out = String::new();
    for w in &result.workers {
        out.push_str(&w.memhammer_line());
        out.push('\n');
    }
    let s = result.summary();
    let _ = writeln!(
        out,
        "\n{} worker(s), {} pages × {} loops each ({}): ns/op min {:.1} / median {:.1} / max {:.1}, spread {:.1}%, aggregate {:.1} M ops/s{}",
        result.workers.len(),
        result.plan.pages,
        result.plan.loops,
        slb_pages(result),
        s.min_ns,
        s.median_ns,
        s.max_ns,
        s.spread_pct,
        s.aggregate_ops_per_sec / 1e6,
        if result.interrupted { " — INTERRUPTED: figures cover the stores done so far" } else { "" }
    );
    for w in &result.workers {
        let cpu = w.cpu.map_or("?".to_string(), |c| c.to_string());
        let _ = writeln!(
            out,
            "  worker {} on CPU {cpu}: memory {} (policy {}, verified)",
            w.worker,
            where_memory_was(&w.placement),
            w.placement.requested
        );
    }
    out
}

/// Header of the scaling table.
pub fn scale_header() -> String {
    format!(
        "{:>8} {:>12} {:>12} {:>10} {:>14}\n",
        "workers", "median ns/op", "times slower", "spread %", "aggregate M/s"
    )
}

/// One scaling row against the one-worker baseline.
pub fn scale_row(workers: usize, s: &SlbSummary, baseline_ns: f64) -> String {
    format!(
        "{:>8} {:>12.1} {:>12.2} {:>10.1} {:>14.1}\n",
        workers,
        s.median_ns,
        s.median_ns / baseline_ns,
        s.spread_pct,
        s.aggregate_ops_per_sec / 1e6
    )
}

/// One row of the placement comparison.
pub fn compare_row(name: &str, result: Option<&SlbResult>, why_not: &str) -> String {
    match result {
        Some(r) => {
            let s = r.summary();
            let placements: Vec<String> =
                r.workers.iter().map(|w| where_memory_was(&w.placement)).collect();
            format!(
                "{:<12} {:>12.1} {:>10.1} {:>14.1}  {}\n",
                name,
                s.median_ns,
                s.spread_pct,
                s.aggregate_ops_per_sec / 1e6,
                placements.join(" | ")
            )
        }
        None => format!("{name:<12} {why_not}\n"),
    }
}

/// Header of the placement comparison.
pub fn compare_header() -> String {
    format!(
        "{:<12} {:>12} {:>10} {:>14}  {}\n",
        "policy", "median ns/op", "spread %", "aggregate M/s", "memory (verified)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use measure::summary::summarize;
    use place::{NodePages, PageSize};

    fn point(cycles: Option<f64>) -> LatencyPoint {
        LatencyPoint {
            bytes: 32 << 10,
            ns: summarize(&[1.0, 1.1, 1.2]).expect("samples"),
            cycles,
            cpu: Some(0),
            placement: Placement::base_pages(32 << 10, vec![NodePages { node: 0, pages: 8 }]),
            loads: 1000,
        }
    }

    /// `mem latency --page thp` on a VM with THP `never`: the kernel gave no huge page.
    #[test]
    fn a_thp_request_the_kernel_refused_is_not_called_thp_pages() {
        let mut p = point(Some(5.0));
        p.placement.page = PageSize::Thp;
        p.placement.bytes = 512 << 20;
        (p.placement.thp_bytes, p.placement.thp_mode) = (Some(0), Some("never".into()));
        let line = latency_line(&p);
        assert!(
            line.ends_with(
                "memory on node 0 100% (thp requested: 0 of 512 MiB huge; THP is 'never')"
            ),
            "{line}"
        );
        assert!(!line.contains("(thp pages)"), "{line}");
        p.placement.thp_bytes = Some(512 << 20);
        assert!(latency_line(&p).ends_with("(thp pages: all 512 MiB huge)"));
        assert!(latency_line(&point(None)).ends_with("(4k pages)"));
    }

    // A wrong clock makes every cycle count wrong by its factor: none is printed, and the
    // text says why the column is empty.
    #[test]
    fn unknown_cycles_are_said_not_guessed() {
        let known = latency_line(&point(Some(5.0)));
        assert!(known.contains("median 1.1 ns (5 cycles)"), "{known}");
        let unknown = latency_line(&point(None));
        assert!(unknown.contains("median 1.1 ns (cycles unknown)"), "{unknown}");
        assert_eq!(cycles_note(&[point(Some(5.0))]), "");
        assert_eq!(cycles_note(&[point(Some(5.0)), point(None)]), CYCLES_UNKNOWN);
        let row = sweep_row(&point(None), &[]);
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[..4], ["32.0", "KiB", "1.10", "-"], "{row}");
    }
}
