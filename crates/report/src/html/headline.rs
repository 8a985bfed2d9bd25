//! Headline figures, each defined once: the page's cards and the terminal summary
//! (`suite::summary`) both read them from here, so they cannot disagree about the same run.

use measure::summary::{differs_beyond_noise, Summary};
use membench::bandwidth::BandwidthResult;
use membench::loaded::{LoadedCurve, LoadedPoint};

use super::ReportData;

/// The idle DRAM latency of a report, and where it came from.
#[derive(Debug, Clone, Copy)]
pub struct IdleLatency<'a> {
    pub ns: &'a Summary,
    /// Bytes chased.
    pub bytes: u64,
    /// The node whose CPUs chased their own memory, when it is the matrix's local cell.
    pub node: Option<u32>,
}

/// Idle DRAM latency: the matrix's first local cell (a CPU node to its own memory), else the
/// sweep's largest size when it is beyond the last-level cache.
pub fn idle_dram_latency(d: &ReportData) -> Option<IdleLatency<'_>> {
    let local = d.latency_matrix.as_ref().and_then(|m| {
        m.cpu_nodes.iter().zip(&m.cells).find_map(|(from, row)| {
            let j = m.memory_nodes.iter().position(|n| n == from)?;
            row.get(j).map(|c| IdleLatency { ns: &c.ns, bytes: m.bytes, node: Some(*from) })
        })
    });
    local.or_else(|| {
        let llc = d.topology.cache_levels().last().map_or(0, |c| c.1);
        d.latency_sweep.last().filter(|p| llc == 0 || p.bytes > llc).map(|p| IdleLatency {
            ns: &p.ns,
            bytes: p.bytes,
            node: None,
        })
    })
}

/// The loaded-latency curve's own idle point against the headline idle latency: `Some(text)`
/// saying they disagree when they differ beyond their noise (the same quantity measured twice
/// on one page), `None` when they agree or one is missing.
pub fn idle_disagreement(d: &ReportData) -> Option<String> {
    let headline = idle_dram_latency(d)?;
    let curve = d.loaded_latency.as_ref()?;
    let idle = curve.points.iter().find(|p| p.delay_cycles.is_none())?;
    differs_beyond_noise(headline.ns, &idle.latency_ns).then(|| {
        format!(
            "the loaded-latency run's idle point ({:.1} ns) and the idle DRAM latency ({:.1} ns) \
             differ beyond their noise: the machine's state changed between the two steps",
            idle.latency_ns.median, headline.ns.median
        )
    })
}

/// Placement scenarios of the SLB whose per-worker ranges overlap: pairs of names that show no
/// difference beyond noise (on a one-node machine, local and interleave are the same placement).
pub fn slb_policies_alike(d: &ReportData) -> Vec<(String, String)> {
    let ok: Vec<(&String, (f64, f64))> = d
        .slb_policies
        .iter()
        .filter_map(|(name, r)| {
            let s = r.as_ref().ok()?.summary();
            Some((name, (s.min_ns, s.max_ns)))
        })
        .collect();
    let mut out = Vec::new();
    for (i, (a, (amin, amax))) in ok.iter().enumerate() {
        for (b, (bmin, bmax)) in &ok[i + 1..] {
            if amin <= bmax && bmin <= amax {
                out.push(((*a).clone(), (*b).clone()));
            }
        }
    }
    out
}

/// The loaded-latency curve's headline pair: the point with the most load (delay > 0) and the
/// idle point (load threads paused), either missing when the run did not reach it.
pub fn loaded_and_idle(c: &LoadedCurve) -> (Option<&LoadedPoint>, Option<&LoadedPoint>) {
    let loaded = c
        .points
        .iter()
        .filter(|p| p.delay_cycles.is_some())
        .max_by(|a, b| a.load_gbs.total_cmp(&b.load_gbs));
    let idle = c.points.iter().find(|p| p.delay_cycles.is_none());
    (loaded, idle)
}

/// Peak read bandwidth: the highest median among the thread-count steps and the node×node
/// cells, with what ran it (`"2 thread(s)"`, `"2 thread(s) on node 0, memory on node 1"`).
pub fn peak_bandwidth(d: &ReportData) -> Option<(&BandwidthResult, String)> {
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
    candidates
        .into_iter()
        .max_by(|a, b| a.0.aggregate_gbs.median.total_cmp(&b.0.aggregate_gbs.median))
}

/// Copy bandwidth as MLC and STREAM users expect it: the better of ordinary-store `copy` and
/// non-temporal `copy-nt` (what glibc's memcpy does for large copies), with the other beside it.
pub fn best_copy(d: &ReportData) -> Option<(&BandwidthResult, Option<&BandwidthResult>)> {
    let mut runs: Vec<&BandwidthResult> = d.copy_bandwidth.iter().collect();
    runs.sort_by(|a, b| b.aggregate_gbs.median.total_cmp(&a.aggregate_gbs.median));
    let best = *runs.first()?;
    Some((best, runs.get(1).copied()))
}
