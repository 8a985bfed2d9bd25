//! `mem c2c` and `mem slb --shared` as text.

use std::fmt::Write as _;

use crate::c2c::{C2cPair, C2cResult, ADDRESS_FACTOR, PASSES};
use crate::slb_shared::SharedSlbResult;
use place::Placement;

fn where_pages_were(p: &Placement) -> String {
    let nodes: Vec<String> = p
        .per_node
        .iter()
        .map(|n| format!("node {} {:.0}%", n.node, 100.0 * p.fraction_on(n.node)))
        .collect();
    if nodes.is_empty() {
        "no resident pages".to_string()
    } else {
        nodes.join(", ")
    }
}

/// The CPU×CPU matrix of median round trips, the class and node summaries, and the line's
/// verified home.
pub fn c2c_text(r: &C2cResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "cache line round trip between CPUs ({} mode), median ns; one hand-off is half",
        r.mode.name()
    );
    let width = 9;
    let _ = write!(out, "{:>6}", "CPU");
    for &b in &r.cpus {
        let _ = write!(out, "{b:>width$}");
    }
    out.push('\n');
    for &a in &r.cpus {
        let _ = write!(out, "{a:>6}");
        for &b in &r.cpus {
            let cell = if a == b {
                "-".to_string()
            } else {
                r.pair(a, b).map_or("?".into(), |p| format!("{:.1}", p.round_trip_ns.median))
            };
            let _ = write!(out, "{cell:>width$}");
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "\n{:<22} {:>5} {:>11} {:>9} {:>11}",
        "pairs", "count", "median ns", "p99 ns", "one-way ns"
    );
    for c in &r.classes {
        let _ = writeln!(
            out,
            "{:<22} {:>5} {:>11.1} {:>9.1} {:>11.1}",
            c.class.name(),
            c.pairs,
            c.median_ns,
            c.p99_ns,
            c.median_ns / 2.0
        );
    }
    if r.nodes.len() > 1 {
        let _ = writeln!(out, "\nnode to node, median ns (p99)");
        for c in &r.nodes {
            let _ = writeln!(
                out,
                "  node {} to node {}: {:.1} ({:.1}) over {} pairs",
                c.from, c.to, c.median_ns, c.p99_ns, c.pairs
            );
        }
    }
    out.push_str(&lines_text(r));
    let asked = r
        .line_on
        .map_or("first touched by CPU's thread".to_string(), |n| format!("bound to node {n}"));
    let asked = asked.replace("CPU's", &format!("CPU {}'s", r.cpus.first().copied().unwrap_or(0)));
    let pages = r.line.total_pages();
    let what = if pages == 1 { "line" } else { "lines" };
    let _ = writeln!(out, "\n{what}: {asked}; verified on {}", where_pages_were(&r.line));
    let _ = writeln!(
        out,
        "matrix and classes: medians over the batches of all lines; p99 is over batches of round \
         trips (each about {}), not single hand-offs",
        batch_length(r)
    );
    if r.interrupted {
        let _ = writeln!(
            out,
            "interrupted: the pairs shown were measured (the last possibly for less time), the rest were not"
        );
    }
    out
}

/// The length of one timed batch: round trips per batch × the median round trip.
fn batch_length(r: &C2cResult) -> String {
    let ns: Vec<f64> = r
        .pairs
        .iter()
        .map(|p| p.batch_rounds as f64 * p.round_trip_ns.median)
        .filter(|ns| ns.is_finite() && *ns > 0.0)
        .collect();
    match ns.first() {
        None => "? ms".into(),
        Some(_) => {
            let mean = ns.iter().sum::<f64>() / ns.len() as f64;
            if mean >= 1e5 {
                format!("{:.1} ms", mean / 1e6)
            } else {
                format!("{:.0} µs", mean / 1e3)
            }
        }
    }
}

/// Pairs listed one by one in the lines section; the rest are counted.
const LINES_LISTED: usize = 8;

/// How far each pair's lines are apart: a count of the pairs whose spread is wider than the
/// noise, then the pairs with the widest spread, each with its lines.
pub fn lines_text(r: &C2cResult) -> String {
    let mut out = String::new();
    let measured: Vec<&C2cPair> = r.pairs.iter().filter(|p| p.line_spread.is_some()).collect();
    let Some(lines) = measured.iter().map(|p| p.lines.len()).max() else {
        return out;
    };
    let wider = measured
        .iter()
        .filter(|p| p.line_spread.as_ref().is_some_and(|s| s.wider_than_noise))
        .count();
    let _ = writeln!(
        out,
        "\nacross lines: each pair on {lines} lines, each on its own page at its own offset, \
         {PASSES} passes over them; spread = slowest line's median − fastest's, noise = the \
         largest move of one line between passes"
    );
    let whom = match (wider, measured.len()) {
        (0, _) => "on no pair is the spread".to_string(),
        (1, 1) => "on the pair, the spread is".to_string(),
        (w, n) if w == n => "on every pair, the spread is".to_string(),
        (w, n) => format!("on {w} of {n} pairs, the spread is"),
    };
    let _ = writeln!(
        out,
        "{whom} wider than {ADDRESS_FACTOR:.0}× the noise{}",
        if wider > 0 {
            ": the round trip depends on the line's address; compare pairs by their medians over lines"
        } else {
            ": the lines agree within the noise"
        }
    );
    let mut widest = measured.clone();
    widest.sort_by(|x, y| {
        let range = |p: &C2cPair| p.line_spread.as_ref().map_or(0.0, |s| s.range_ns());
        range(y).total_cmp(&range(x)).then((x.a, x.b).cmp(&(y.a, y.b)))
    });
    for p in widest.iter().take(LINES_LISTED) {
        let Some(s) = &p.line_spread else { continue };
        let noise = s.noise_ns.map_or("noise unknown".to_string(), |n| format!("noise {n:.1}"));
        let _ = writeln!(
            out,
            "  {}-{}: median over lines {:.1} ns, lines {:.1} to {:.1} (spread {:.1}, {noise}){}",
            p.a,
            p.b,
            s.median_ns,
            s.min_ns,
            s.max_ns,
            s.range_ns(),
            if s.wider_than_noise { " wider than noise" } else { "" }
        );
        let each: Vec<String> = p
            .lines
            .iter()
            .map(|l| format!("{}+{:#05x} {:.1}", l.page, l.offset, l.median_ns))
            .collect();
        for (i, chunk) in each.chunks(8).enumerate() {
            let head = if i == 0 { "page+offset ns:" } else { "" };
            let _ = writeln!(out, "    {head:<15} {}", chunk.join(", "));
        }
    }
    if widest.len() > LINES_LISTED {
        let _ = writeln!(
            out,
            "  ({} more pairs; the JSON output has every pair's lines)",
            widest.len() - LINES_LISTED
        );
    }
    out
}

/// memhammer's line per worker, then the lock's figures, fairness and the counters' check.
pub fn shared_slb_text(r: &SharedSlbResult) -> String {
    let mut out = String::new();
    for w in &r.workers {
        let _ = writeln!(out, "{}", w.memhammer_line());
    }
    let lock = r.plan.lock.name();
    let _ = writeln!(
        out,
        "\nshared region {} pages + {} counter(s), lock {lock}, {} workers: {:.0} ops/s together, median {:.1} ns/op",
        r.plan.pages,
        r.plan.counters,
        r.workers.len(),
        r.ops_per_sec(),
        r.median_ns()
    );
    match r.handoffs_per_sec() {
        Some(h) => {
            let total: u64 = r.workers.iter().map(|w| w.handoffs).sum();
            let _ = writeln!(
                out,
                "lock hand-offs: {total} ({h:.0}/s, {:.1}% of acquisitions)",
                100.0 * total as f64 / r.ops_total.max(1) as f64
            );
        }
        None => {
            let _ = writeln!(out, "lock hand-offs: none (no lock)");
        }
    }
    if let Some(f) = &r.fairness {
        let shares: Vec<String> = r
            .workers
            .iter()
            .zip(&f.shares)
            .map(|(w, s)| {
                let cpu = w.cpu.map_or("?".to_string(), |c| c.to_string());
                format!("worker {} (CPU {cpu}) {:.1}%", w.worker, 100.0 * s)
            })
            .collect();
        let _ = writeln!(
            out,
            "fairness while all contended: {}; min/max {:.3}, Jain's index {:.3}",
            shares.join(", "),
            f.min_max_ratio,
            f.jain
        );
    }
    let check = if r.counters_total == r.ops_total {
        "exact".to_string()
    } else {
        format!("{} increments lost to races", r.lost_updates())
    };
    let _ = writeln!(
        out,
        "shared counters: {} of {} operations ({check})",
        r.counters_total, r.ops_total
    );
    let _ = writeln!(out, "shared region on {}", where_pages_were(&r.region));
    if r.interrupted {
        let _ = writeln!(out, "interrupted: the lines cover the operations done");
    }
    out
}

/// Header of the contention scaling table.
pub fn contention_header() -> String {
    format!(
        "{:>7} {:>10} {:>13} {:>14} {:>8} {:>8}\n",
        "workers", "ns/op", "times slower", "hand-offs/s", "min/max", "Jain"
    )
}

/// One row of the contention scaling table against `baseline` ns/op (one worker).
pub fn contention_row(r: &SharedSlbResult, baseline: f64) -> String {
    let ns = r.median_ns();
    let (mm, jain) =
        r.fairness.as_ref().map_or((f64::NAN, f64::NAN), |f| (f.min_max_ratio, f.jain));
    format!(
        "{:>7} {:>10.1} {:>13.2} {:>14.0} {:>8.3} {:>8.3}\n",
        r.workers.len(),
        ns,
        ns / baseline,
        r.handoffs_per_sec().unwrap_or(0.0),
        mm,
        jain
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::c2c::{fold_classes, fold_pair_lines, pair_class, C2cMode, PairSamples};
    use place::NodePages;
    use topo::Topology;

    /// A two-CPU run whose one pair has lines at `ns`, moving `drift` ns between passes.
    fn run(ns: &[f64], drift: f64) -> C2cResult {
        let t =
            Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1").expect("topology");
        let batch = |n: f64| vec![n - 0.2, n, n + 0.2];
        let mut per_visit: Vec<Vec<f64>> = ns.iter().map(|&n| batch(n)).collect();
        per_visit.extend(ns.iter().map(|&n| batch(n + drift)));
        let samples = PairSamples { per_visit, batch_rounds: 8000 };
        let (round_trip_ns, lines, line_spread) =
            fold_pair_lines(&samples, ns.len()).expect("folded");
        let pairs = vec![C2cPair {
            a: 0,
            b: 1,
            class: pair_class(&t, 0, 1),
            round_trip_ns,
            batch_rounds: 8000,
            lines,
            line_spread,
        }];
        C2cResult {
            mode: C2cMode::Read,
            cpus: vec![0, 1],
            line_on: None,
            line: Placement::base_pages(
                4096 * ns.len() as u64,
                vec![NodePages { node: 0, pages: ns.len() as u64 }],
            ),
            classes: fold_classes(&pairs),
            nodes: Vec::new(),
            pairs,
            interrupted: false,
        }
    }

    #[test]
    fn the_text_says_when_lines_differ_beyond_the_noise() {
        let text = c2c_text(&run(&[57.0, 63.0, 80.0, 61.0], 0.5));
        assert!(
            text.contains("across lines: each pair on 4 lines, each on its own page"),
            "{text}"
        );
        assert!(text.contains("on the pair, the spread is wider than 2× the noise"), "{text}");
        assert!(text.contains("depends on the line's address"), "{text}");
        assert!(text.contains("0-1: median over lines 62.2 ns, lines 57.2 to 80.2"), "{text}");
        assert!(text.contains("page+offset ns: 0+0x000 57.2, 1+0x140 63.2"), "{text}");
        assert!(text.contains("lines: first touched by CPU 0's thread; verified on node 0 100%"));
        // 8000 round trips of ~62 ns: about half a millisecond per batch.
        assert!(text.contains("(each about 0.5 ms)"), "{text}");

        let text = c2c_text(&run(&[57.0, 63.0, 80.0, 61.0], 30.0));
        assert!(text.contains("on no pair is the spread wider than 2× the noise"), "{text}");
        assert!(text.contains("the lines agree within the noise"), "{text}");
    }

    #[test]
    fn one_line_has_no_lines_section() {
        let text = c2c_text(&run(&[70.0], 0.0));
        assert!(!text.contains("across lines") && !text.contains("spread"), "{text}");
        assert!(text.contains("\nline: first touched by CPU 0's thread"), "{text}");
    }
}
