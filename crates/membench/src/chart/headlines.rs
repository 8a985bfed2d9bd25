//! The memory and contention sections' headline figures: what the report's cards and terminal
//! summary show first, and what two reports are compared on. Each is drawn from the one outcome
//! that measured it, with the key of the stored metric whose samples back it, so a stored run
//! gives the same headlines again and a comparison finds its samples.

use chart::svg::{bytes_label, fmt3};
use chart::Headline;
use measure::metric::Step;
use measure::ToMetrics;
use topo::Topology;

use crate::bandwidth::{BandwidthMatrix, BandwidthResult, Scaling};
use crate::c2c::C2cResult;
use crate::latency::{LatencyMatrix, LatencyPoint, PrefetchCheck};
use crate::loaded::{LoadedCurve, LoadedPoint};
use crate::slb::SlbResult;
use crate::slb_rounds::StepVerdict;
use crate::slb_shared::{LockKind, SharedSlbResult};

use super::mix_name;

/// The key of the first metric of `of` that `pick` accepts.
fn key_of(of: &impl ToMetrics, pick: impl Fn(&measure::Metric) -> bool) -> Option<String> {
    of.to_metrics().into_iter().find(|m| pick(m)).map(|m| m.key())
}

fn with_key(headline: Headline, key: Option<String>) -> Headline {
    match key {
        Some(key) => headline.metric(key),
        None => headline,
    }
}

/// A sweep's smallest size when it fits in L1 ("L1 latency"), its largest ("Latency at 256
/// MiB"), and the prefetch self-check on the largest when it ran.
pub fn latency_sweep(
    points: &[LatencyPoint],
    prefetch: Option<&PrefetchCheck>,
    topology: &Topology,
) -> Vec<Headline> {
    let mut out = Vec::new();
    let l1 = topology.cache_levels().first().map(|c| c.1);
    if let Some(first) = points.first().filter(|p| l1.is_none_or(|l1| p.bytes <= l1)) {
        let cycles = first
            .cycles
            .map_or(" · cycles unknown".to_string(), |c| format!(" · {} cycles", fmt3(c)));
        out.push(with_key(
            Headline::new(
                "L1 latency",
                format!("{} ns{cycles}", fmt3(first.ns.median)),
                format!(
                    "{} chased, median of {} samples; cycles from the measured core clock",
                    bytes_label(first.bytes as f64),
                    first.ns.samples
                ),
            ),
            key_of(first, |_| true),
        ));
    }
    if let Some(last) = points.last().filter(|_| points.len() > 1) {
        out.push(with_key(
            Headline::new(
                format!("Latency at {}", bytes_label(last.bytes as f64)),
                format!("{} ns", fmt3(last.ns.median)),
                format!(
                    "median of {} samples, p99 {} ns{}",
                    last.ns.samples,
                    fmt3(last.ns.p99),
                    if last.ns.noisy { " [noisy]" } else { "" }
                ),
            ),
            key_of(last, |_| true),
        ));
    }
    if let Some(c) = prefetch {
        let verdict = if c.defeated { "not prefetched" } else { "MAY BE PREFETCHED" };
        out.push(Headline::new(
            "Prefetch check",
            verdict,
            format!(
                "the random chase of {} was {}× slower than address order",
                bytes_label(c.bytes as f64),
                fmt3(c.ratio)
            ),
        ));
    }
    out
}

/// The first local cell ("Idle DRAM latency": a CPU node to its own memory) and, with more than
/// one node, the slowest remote pair against its CPU node's local figure.
pub fn latency_matrix(m: &LatencyMatrix) -> Vec<Headline> {
    let mut out = Vec::new();
    if let Some((node, cell)) = m.first_local() {
        out.push(with_key(
            Headline::new(
                "Idle DRAM latency",
                format!("{} ns", fmt3(cell.ns.median)),
                format!(
                    "node {node} to its own memory, {} chased, median of {} samples (p99 {} \
                     ns){}",
                    bytes_label(m.bytes as f64),
                    cell.ns.samples,
                    fmt3(cell.ns.p99),
                    if cell.ns.noisy { " [noisy]" } else { "" }
                ),
            ),
            key_of(m, |metric| {
                metric.labels.get("cpu_node") == Some(&node.to_string())
                    && metric.labels.get("mem_node") == Some(&node.to_string())
            }),
        ));
    }
    let remote = m
        .cpu_nodes
        .iter()
        .zip(&m.cells)
        .flat_map(|(&from, row)| {
            let local = m.local(from).map(|c| c.ns.median);
            m.memory_nodes
                .iter()
                .zip(row)
                .filter(move |(&to, _)| to != from)
                .map(move |(&to, cell)| (from, to, cell, local))
        })
        .max_by(|a, b| a.2.ns.median.total_cmp(&b.2.ns.median));
    if let Some((from, to, cell, local)) = remote {
        let ratio = local.map_or(String::new(), |l| {
            format!(": {}× node {from}'s local {} ns", fmt3(cell.ns.median / l), fmt3(l))
        });
        out.push(with_key(
            Headline::new(
                "Remote latency (worst)",
                format!("{} ns", fmt3(cell.ns.median)),
                format!("node {from} to node {to}'s memory{ratio}"),
            ),
            key_of(m, |metric| {
                metric.labels.get("cpu_node") == Some(&from.to_string())
                    && metric.labels.get("mem_node") == Some(&to.to_string())
            }),
        ));
    }
    out
}

/// The slowest node pair of a bandwidth matrix with more than one node (one node's cell is the
/// thread scaling's figure again).
pub fn bandwidth_matrix(m: &BandwidthMatrix) -> Vec<Headline> {
    let cells = m.cpu_nodes.iter().zip(&m.cells).flat_map(|(&from, row)| {
        m.memory_nodes.iter().zip(row).map(move |(&to, cell)| (from, to, cell))
    });
    let worst = cells
        .filter(|(from, to, _)| from != to)
        .min_by(|a, b| a.2.aggregate_gbs.median.total_cmp(&b.2.aggregate_gbs.median));
    let Some((from, to, cell)) = worst else { return Vec::new() };
    vec![with_key(
        Headline::new(
            "Remote bandwidth (worst)",
            format!("{} GB/s", fmt3(cell.aggregate_gbs.median)),
            format!(
                "{} thread(s) on node {from} reading node {to}'s memory ({})",
                cell.threads.len(),
                cell.how()
            ),
        ),
        key_of(m, |metric| {
            metric.labels.get("cpu_node") == Some(&from.to_string())
                && metric.labels.get("mem_node") == Some(&to.to_string())
        }),
    )]
}

/// Peak bandwidth and where it stops growing; every thread count as a compared figure.
pub fn bandwidth_scaling(s: &Scaling) -> (Vec<Headline>, Vec<Headline>) {
    let mut headlines = Vec::new();
    let top =
        s.steps.iter().max_by(|a, b| a.aggregate_gbs.median.total_cmp(&b.aggregate_gbs.median));
    let key_for =
        |threads: usize| key_of(s, |m| m.labels.get("threads") == Some(&threads.to_string()));
    if let Some(r) = top {
        let mut detail = format!(
            "{} ({}), {} thread(s); median of {} rounds, best {} GB/s",
            r.kernel,
            r.how(),
            r.threads.len(),
            r.aggregate_gbs.samples,
            fmt3(r.aggregate_gbs.max)
        );
        let check = s.size_checks.iter().find(|c| c.threads == r.threads.len());
        if let Some(check) = check {
            detail.push_str(&format!(
                "; {} per thread, {}",
                bytes_label(r.bytes_per_thread as f64),
                check.verdict()
            ));
        }
        headlines.push(with_key(
            Headline::new(
                "Peak bandwidth",
                format!("{} GB/s", fmt3(r.aggregate_gbs.median)),
                detail,
            ),
            key_for(r.threads.len()),
        ));
    }
    let most = s.steps.last().map_or(0, |r| r.threads.len());
    if !s.steps.is_empty() {
        headlines.push(match s.saturated_at {
            Some(n) => Headline::new(
                "Saturation point",
                format!("{n} thread(s)"),
                format!("bandwidth stops growing at {n} thread(s): one more added less than 5%"),
            ),
            // A partial run says nothing about threads it never added.
            None if s.interrupted => Headline::new(
                "Saturation point",
                "unknown",
                format!("saturation unknown (interrupted after {most} thread(s)): no conclusion"),
            ),
            None => Headline::new(
                "Saturation point",
                "not reached",
                format!("bandwidth still growing at the last thread ({most} thread(s))"),
            ),
        });
    }
    let compared = s
        .steps
        .iter()
        .map(|r| {
            let n = r.threads.len();
            with_key(
                Headline::new(
                    format!("Bandwidth ({}), {n} thread(s)", r.kernel),
                    format!("{} GB/s", fmt3(r.aggregate_gbs.median)),
                    r.how(),
                ),
                key_for(n),
            )
        })
        .collect();
    (headlines, compared)
}

/// Copy bandwidth as MLC and STREAM users read it: the better of the runs (ordinary-store
/// `copy` and non-temporal `copy-nt`, what glibc's memcpy does for large copies), with the other
/// beside it; each kernel as a compared figure.
pub fn copies(runs: &[BandwidthResult]) -> (Vec<Headline>, Vec<Headline>) {
    let key = |r: &BandwidthResult| key_of(r, |m| m.name == crate::metrics::BANDWIDTH);
    let mut sorted: Vec<&BandwidthResult> = runs.iter().collect();
    sorted.sort_by(|a, b| b.aggregate_gbs.median.total_cmp(&a.aggregate_gbs.median));
    let mut headlines = Vec::new();
    if let Some(best) = sorted.first() {
        let mut how = format!(
            "{} ({}), {} thread(s): {}",
            best.kernel,
            best.how(),
            best.threads.len(),
            best.accounting
        );
        if let Some(other) = sorted.get(1) {
            how.push_str(&format!(
                "; {} gave {} GB/s",
                other.kernel,
                fmt3(other.aggregate_gbs.median)
            ));
        }
        if let Some(check) = &best.size_check {
            how.push_str(&format!(
                "; {} per thread, {}",
                bytes_label(best.bytes_per_thread as f64),
                check.verdict()
            ));
        }
        headlines.push(with_key(
            Headline::new(
                "Copy bandwidth",
                format!("{} GB/s", fmt3(best.aggregate_gbs.median)),
                how,
            ),
            key(best),
        ));
    }
    let compared = runs
        .iter()
        .map(|r| {
            with_key(
                Headline::new(
                    format!("Copy bandwidth ({})", r.kernel),
                    format!("{} GB/s", fmt3(r.aggregate_gbs.median)),
                    format!("{} thread(s)", r.threads.len()),
                ),
                key(r),
            )
        })
        .collect();
    (headlines, compared)
}

/// The curve's headline pair: the point with the most load (delay > 0) and the idle point
/// (load threads paused), either missing when the run did not reach it.
pub fn loaded_and_idle(c: &LoadedCurve) -> (Option<&LoadedPoint>, Option<&LoadedPoint>) {
    let loaded = c
        .points
        .iter()
        .filter(|p| p.delay_cycles.is_some())
        .max_by(|a, b| a.load_gbs.total_cmp(&b.load_gbs));
    let idle = c.points.iter().find(|p| p.delay_cycles.is_none());
    (loaded, idle)
}

/// Latency with the most load against the same run's idle point.
pub fn loaded_latency(c: &LoadedCurve) -> Vec<Headline> {
    let (Some(loaded), idle) = loaded_and_idle(c) else { return Vec::new() };
    let delay = loaded.delay_cycles.map_or("idle".to_string(), |d| d.to_string());
    let how = match idle {
        Some(idle) => format!(
            "at {} GB/s of {} load vs {} ns idle in the same run: {}×{}",
            fmt3(loaded.load_gbs),
            mix_name(c.mix),
            fmt3(idle.latency_ns.median),
            fmt3(loaded.latency_ns.median / idle.latency_ns.median),
            if c.interrupted { " (interrupted)" } else { "" }
        ),
        None => format!(
            "at {} GB/s of {} load (interrupted before the idle point: no comparison)",
            fmt3(loaded.load_gbs),
            mix_name(c.mix)
        ),
    };
    vec![with_key(
        Headline::new("Latency at max load", format!("{} ns", fmt3(loaded.latency_ns.median)), how),
        key_of(c, |m| {
            m.name == crate::metrics::LOADED_LATENCY && m.labels.get("delay") == Some(&delay)
        }),
    )]
}

/// The SLB's time per store with the most workers, as a multiple of one worker's: `(ratio,
/// workers)`, from the widest run that did all its stores (an interrupted one is partial).
pub fn slb_time_ratio(runs: &[SlbResult]) -> Option<(f64, usize)> {
    let one = runs.first()?.summary().median_ns;
    let most = runs.iter().rev().find(|r| r.workers.len() > 1 && !r.interrupted)?;
    Some((most.summary().median_ns / one, most.workers.len()))
}

/// One worker's time per store and how it grows with more, with the interval of that growth
/// when the runs were in rounds (`verdicts`: each count against the first,
/// [`crate::slb_rounds`]); the first worker at each count as a compared figure.
pub fn slb_scaling(runs: &[SlbResult], verdicts: &[StepVerdict]) -> (Vec<Headline>, Vec<Headline>) {
    let steps: Vec<Step<'_, SlbResult>> =
        runs.iter().map(|r| Step::new("workers", r.workers.len(), r)).collect();
    let key_for = |workers: usize| {
        key_of(&steps, |m| {
            m.labels.get("worker").is_some_and(|w| w == "0")
                && m.labels.get("workers") == Some(&workers.to_string())
        })
    };
    let mut headlines = Vec::new();
    if let Some(one) = runs.first() {
        let mut how = format!("median ns per random store, {} worker(s)", one.workers.len());
        if let Some((ratio, workers)) = slb_time_ratio(runs) {
            how.push_str(&format!("; {}× the time per store with {workers} workers", fmt3(ratio)));
            let judged = verdicts.iter().find(|v| v.step == format!("{workers} workers"));
            if let Some(v) = judged.filter(|v| v.tested()) {
                how.push_str(&format!(" ({})", interval_words(v)));
            }
        }
        if runs.iter().any(|r| r.interrupted) {
            how.push_str(" (interrupted: partial runs left out)");
        }
        headlines.push(with_key(
            Headline::new("SLB", format!("{} ns/op", fmt3(one.summary().median_ns)), how),
            key_for(one.workers.len()),
        ));
    }
    let compared = runs
        .iter()
        .map(|r| {
            let n = r.workers.len();
            with_key(
                Headline::new(
                    format!("SLB ns/op, {n} worker(s)"),
                    format!("{} ns/op", fmt3(r.summary().median_ns)),
                    "worker 0",
                ),
                key_for(n),
            )
        })
        .collect();
    (headlines, compared)
}

/// "95% interval 2.10–2.55, slower; 3 rounds each, adjusted p < 0.001": a verdict on rounds in
/// a headline's words.
fn interval_words(v: &StepVerdict) -> String {
    let j = &v.judgement;
    format!(
        "{:.0}% interval {}–{}, {}; {}, {}",
        measure::verdict::CONFIDENCE * 100.0,
        fmt3(j.ratio_low),
        fmt3(j.ratio_high),
        j.verdict.name(),
        v.rests_on,
        j.adjusted_p_words()
    )
}

/// The SLB under each placement (or why it did not run); a placement judged against the first
/// on rounds (`verdicts`, [`crate::slb_rounds`]) says its ratio, interval and verdict. The
/// workers of one run are never the evidence: their ranges share that run's pages and minute.
pub fn slb_policies(
    policies: &[(String, Result<SlbResult, String>)],
    verdicts: &[StepVerdict],
) -> Vec<Headline> {
    policies
        .iter()
        .map(|(name, outcome)| match outcome {
            Ok(r) => {
                let mut detail = format!("{} worker(s), median over workers", r.workers.len());
                if let Some(v) = verdicts.iter().find(|v| &v.step == name && v.tested()) {
                    detail.push_str(&format!(
                        "; {}× {}'s time per store ({})",
                        fmt3(v.judgement.ratio),
                        v.baseline,
                        interval_words(v)
                    ));
                }
                Headline::new(
                    format!("SLB {name}"),
                    format!("{} ns/op", fmt3(r.summary().median_ns)),
                    detail,
                )
            }
            Err(why) => Headline::new(format!("SLB {name}"), "not run", why.clone()),
        })
        .collect()
}

/// The round trip of each class of CPU pair (SMT siblings, same L3, same node, other node).
pub fn c2c(r: &C2cResult) -> Vec<Headline> {
    r.classes
        .iter()
        .map(|class| {
            with_key(
                Headline::new(
                    format!("Core to core, {}", class.class.name()),
                    format!("{} ns", fmt3(class.median_ns)),
                    format!(
                        "round trip, median of {} pair(s), worst p99 {} ns",
                        class.pairs,
                        fmt3(class.p99_ns)
                    ),
                ),
                key_of(r, |m| {
                    m.name == crate::metrics::C2C_CLASS_ROUND_TRIP
                        && m.labels.get("class").map(String::as_str) == Some(class.class.label())
                }),
            )
        })
        .collect()
}

/// The spinlock with the most workers: time per store and how fairly the lock was handed out.
pub fn locks(runs: &[SharedSlbResult]) -> Vec<Headline> {
    let most =
        runs.iter().filter(|r| r.plan.lock == LockKind::Spin).max_by_key(|r| r.workers.len());
    let Some(most) = most else { return Vec::new() };
    let fair = most.fairness.as_ref().map_or(String::new(), |f| {
        format!(", fairness min/max {}, Jain {:.3}", fmt3(f.min_max_ratio), f.jain)
    });
    vec![Headline::new(
        "Spinlock",
        format!("{} ns/op", fmt3(most.median_ns())),
        format!("{} worker(s){fair}", most.workers.len()),
    )]
}
