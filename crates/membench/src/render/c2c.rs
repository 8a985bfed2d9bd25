//! `mem c2c` and `mem slb --shared` as text.

use std::fmt::Write as _;

use crate::c2c::C2cResult;
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
    let asked = r
        .line_on
        .map_or("first touched by CPU's thread".to_string(), |n| format!("bound to node {n}"));
    let asked = asked.replace("CPU's", &format!("CPU {}'s", r.cpus.first().copied().unwrap_or(0)));
    let _ = writeln!(out, "\nline: {asked}; verified on {}", where_pages_were(&r.line));
    let _ = writeln!(
        out,
        "p99 is over batches of round trips (each batch ~0.5 ms), not single hand-offs"
    );
    if r.interrupted {
        let _ = writeln!(
            out,
            "interrupted: the pairs shown were measured (the last possibly for less time), the rest were not"
        );
    }
    out
}

/// memhammer's line per worker, then the lock's figures, fairness and the counters' check.
pub fn shared_slb_text(r: &SharedSlbResult) -> String {
    let mut out = String::new();
    for w in &r.workers {
        let _ = writeln!(out, "{}", w.seed_line());
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
