//! The terminal summary `platscope report` prints: the headline figures, one line each.

use std::fmt::Write as _;

use topo::units::format_bytes;

use report::html::ReportData;

/// Headline figures from a report run; the caller appends the report's path.
pub fn summary_text(d: &ReportData) -> String {
    let mut out = String::new();
    let t = &d.topology;
    let _ = writeln!(
        out,
        "platscope report ({}) — {}, {} node(s), {} CPU(s), {}",
        d.mode,
        t.machine.cpu_model.as_deref().unwrap_or("unknown CPU"),
        t.nodes.len(),
        t.online_cpu_ids().len(),
        d.version
    );
    if let (Some(first), Some(last)) = (d.latency_sweep.first(), d.latency_sweep.last()) {
        let cycles =
            first.cycles.map_or(" (cycles unknown)".to_string(), |c| format!(" ({c:.1} cycles)"));
        let _ = writeln!(
            out,
            "  latency {:>10}: {:.2} ns{cycles}",
            format_bytes(first.bytes),
            first.ns.median
        );
        let _ = writeln!(
            out,
            "  latency {:>10}: {:.1} ns (p99 {:.1}){}",
            format_bytes(last.bytes),
            last.ns.median,
            last.ns.p99,
            if last.ns.noisy { " [noisy]" } else { "" }
        );
    }
    if let Some(idle) = report::html::headline::idle_dram_latency(d) {
        let whose = idle.node.map_or(String::new(), |n| format!("node {n} to its own memory, "));
        let _ = writeln!(
            out,
            "  idle DRAM latency: {:.1} ns ({whose}{} chased){}",
            idle.ns.median,
            format_bytes(idle.bytes),
            if idle.ns.noisy { " [noisy]" } else { "" }
        );
    }
    if let Some(c) = &d.prefetch_check {
        let verdict = if c.defeated { "not prefetched" } else { "MAY BE PREFETCHED" };
        let _ = writeln!(
            out,
            "  prefetch check:   random chase {verdict} ({:.1}x slower than address order)",
            c.ratio
        );
    }
    if let Some(m) = &d.latency_matrix {
        if m.cells.len() > 1 {
            let worst = m.cells.iter().flatten().map(|c| c.ns.median).fold(0.0, f64::max);
            let best = m.cells.iter().flatten().map(|c| c.ns.median).fold(f64::INFINITY, f64::min);
            let _ = writeln!(out, "  node×node latency: {best:.1} … {worst:.1} ns");
        }
    }
    if let Some((top, what)) = report::html::headline::peak_bandwidth(d) {
        let saturation = match &d.bandwidth_scaling {
            Some(s) => match s.saturated_at {
                Some(n) => format!(", stops growing at {n} thread(s)"),
                // A partial run says nothing about threads it never added.
                None if s.interrupted => ", saturation unknown (interrupted)".to_string(),
                None => ", still growing at the last thread".to_string(),
            },
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "  read bandwidth:   {:.1} GB/s ({}), {what}{saturation}",
            top.aggregate_gbs.median,
            top.how()
        );
    }
    if let Some((best, other)) = report::html::headline::best_copy(d) {
        let other = other.map_or(String::new(), |o| {
            format!(" ({} {:.1} GB/s)", o.kernel, o.aggregate_gbs.median)
        });
        let _ = writeln!(
            out,
            "  copy bandwidth:   {:.1} GB/s with {}, {} thread(s){other}",
            best.aggregate_gbs.median,
            best.kernel,
            best.threads.len()
        );
    }
    if let Some(c) = &d.loaded_latency {
        // An interrupted curve may not have reached its idle point.
        match report::html::headline::loaded_and_idle(c) {
            (Some(loaded), Some(idle)) => {
                let _ = writeln!(
                    out,
                    "  loaded latency:   {:.1} ns at {:.1} GB/s of load vs {:.1} ns idle{}",
                    loaded.latency_ns.median,
                    loaded.load_gbs,
                    idle.latency_ns.median,
                    if c.interrupted { " (interrupted)" } else { "" }
                );
            }
            (Some(loaded), None) => {
                let _ = writeln!(
                    out,
                    "  loaded latency:   {:.1} ns at {:.1} GB/s of load (interrupted before \
                     the idle point: no comparison)",
                    loaded.latency_ns.median, loaded.load_gbs
                );
            }
            _ => {}
        }
    }
    if let Some(one) = d.slb_scaling.first() {
        let base = one.summary().median_ns;
        let mut line = format!("  SLB:              {base:.1} ns/op with 1 worker");
        if let Some((ratio, workers)) = d.slb_time_ratio() {
            let _ = write!(line, ", {ratio:.2}x the time per store with {workers}");
        }
        if d.slb_scaling.iter().any(|r| r.interrupted) {
            line.push_str(" (interrupted: partial runs left out)");
        }
        let _ = writeln!(out, "{line}");
    }
    for (name, outcome) in &d.slb_policies {
        match outcome {
            Ok(r) => {
                let _ = writeln!(out, "  SLB {name:<13} {:.1} ns/op", r.summary().median_ns);
            }
            Err(why) => {
                let _ = writeln!(out, "  SLB {name:<13} {why}");
            }
        }
    }
    for (a, b) in report::html::headline::slb_policies_alike(d) {
        let _ =
            writeln!(out, "  SLB {a} vs {b}: no difference beyond noise (worker ranges overlap)");
    }
    if let Some(why) = report::html::headline::idle_disagreement(d) {
        let _ = writeln!(out, "  note: {why}");
    }
    if let Some(c) = &d.c2c {
        for class in &c.classes {
            let _ = writeln!(
                out,
                "  core to core:     {:.1} ns round trip, {} (p99 {:.1}, {} pair(s))",
                class.median_ns,
                class.class.name(),
                class.p99_ns,
                class.pairs
            );
        }
    }
    if let Some(most) = d
        .contention
        .iter()
        .filter(|r| r.plan.lock == membench::slb_shared::LockKind::Spin)
        .max_by_key(|r| r.workers.len())
    {
        let fair = most.fairness.as_ref().map_or(String::new(), |f| {
            format!(", fairness min/max {:.2}, Jain {:.3}", f.min_max_ratio, f.jain)
        });
        let _ = writeln!(
            out,
            "  spinlock:         {:.1} ns/op with {} worker(s){fair}",
            most.median_ns(),
            most.workers.len()
        );
    }
    if let Some(c) = &d.cpu_scale {
        let _ = writeln!(out, "  cpu scale: {}", c.summary.text);
    }
    // The other sections' headline figures, as their sections show them.
    for part in &d.parts {
        for h in &part.headlines {
            let _ = writeln!(out, "  {:<17} {} ({})", format!("{}:", h.name), h.value, h.detail);
        }
    }
    for s in &d.skipped {
        let _ = writeln!(out, "  {} not measured: {}", s.title, s.why);
    }
    for note in &d.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    match (&d.database, d.stored_runs.first(), d.stored_runs.last()) {
        (Some(db), Some(first), Some(last)) => {
            let _ = writeln!(
                out,
                "  stored as runs {}–{} in {db} (platscope results list)",
                first.1, last.1
            );
        }
        _ => out.push_str("  runs not stored (--no-store, or no usable results database)\n"),
    }
    out
}
