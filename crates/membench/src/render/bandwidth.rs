//! Bandwidth and loaded-latency results as text.

use std::fmt::Write as _;

use crate::bandwidth::{BandwidthMatrix, BandwidthResult, Scaling};
use crate::loaded::LoadedCurve;
use crate::thread_read::ThreadRead;
use place::Placement;
use topo::units::format_bytes;

/// Where the buffers' memory was, and, when other than 4 KiB pages were asked for, what pages
/// they got (THP is a request the kernel may not grant).
fn nodes_of(placements: &[Placement]) -> String {
    let mut nodes: Vec<String> = Vec::new();
    for p in placements {
        for n in &p.per_node {
            let text = format!("node {} {:.0}%", n.node, 100.0 * p.fraction_on(n.node));
            if !nodes.contains(&text) {
                nodes.push(text);
            }
        }
    }
    let mut text = nodes.join(", ");
    if placements.iter().any(|p| p.page != place::PageSize::Base) {
        if let Some(pages) = place::pages_label_of(placements) {
            text.push_str(" in ");
            text.push_str(&pages);
        }
    }
    text
}

/// Peak as measured percent, when a peak is known.
fn of_peak(gbs: f64, peak: Option<f64>) -> String {
    peak.map_or(String::new(), |p| {
        format!(" ({:.0}% of the {p:.1} GB/s theoretical peak)", 100.0 * gbs / p)
    })
}

/// One bandwidth figure: aggregate, spread, per thread, where memory was, what was counted.
pub fn bandwidth_text(r: &BandwidthResult, peak: Option<f64>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({}), {} thread(s), {} per buffer: median {:.2} GB/s, best {:.2} GB/s, middle-half spread {:.1}%{}{}",
        r.kernel,
        r.how(),
        r.threads.len(),
        format_bytes(r.bytes_per_thread),
        r.aggregate_gbs.median,
        r.aggregate_gbs.max,
        100.0 * r.aggregate_gbs.iqr_ratio,
        if r.aggregate_gbs.noisy { " [noisy]" } else { "" },
        of_peak(r.aggregate_gbs.median, peak),
    );
    if !r.isa_trial.is_empty() {
        let figures: Vec<String> =
            r.isa_trial.iter().map(|t| format!("{} {} {:.2} GB/s", t.isa, t.walk, t.gbs)).collect();
        let _ = writeln!(
            out,
            "  {}: chosen in a trial on these buffers ({}; a narrower ISA or the four-page walk \
             only when more than {:.0}% faster); --isa and --walk pick them",
            r.how(),
            figures.join(", "),
            100.0 * crate::bandwidth::TRIAL_MARGIN
        );
    }
    for t in &r.threads {
        let cpu = t.cpu.map_or("?".to_string(), |c| c.to_string());
        let _ = writeln!(
            out,
            "  CPU {cpu}: median {:.2} GB/s over {} rounds; memory {} (verified)",
            t.gbs.median,
            t.gbs.samples,
            nodes_of(&t.placements)
        );
    }
    let _ = writeln!(out, "  counted: {}; GB = 10^9 bytes", r.accounting);
    if let Some(check) = &r.size_check {
        let _ = writeln!(out, "  size check: {}", check.sentence());
    }
    if r.interrupted {
        out.push_str("  INTERRUPTED: figures cover the rounds completed\n");
    }
    out
}

/// A node×node GB/s table like numactl's distance table.
pub fn bandwidth_matrix(m: &BandwidthMatrix) -> String {
    let mut out = String::new();
    let kernel = m
        .cells
        .first()
        .and_then(|r| r.first())
        .map_or("?".to_string(), |c| format!("{} ({})", c.kernel, c.how()));
    let _ = writeln!(
        out,
        "{kernel} bandwidth in GB/s (median), {} thread(s) on the CPU node (down), memory bound to the node across:",
        m.threads_per_cell
    );
    out.push_str("node ");
    for n in &m.memory_nodes {
        let _ = write!(out, "{n:>9} ");
    }
    out.push('\n');
    for (from, row) in m.cpu_nodes.iter().zip(&m.cells) {
        let _ = write!(out, "{from:>3}: ");
        for cell in row {
            let _ = write!(
                out,
                "{:>9.2}{}",
                cell.aggregate_gbs.median,
                if cell.aggregate_gbs.noisy { "*" } else { " " }
            );
        }
        out.push('\n');
    }
    if let Some(cell) = m.cells.first().and_then(|r| r.first()) {
        let _ = writeln!(out, "counted: {}", cell.accounting);
        if let Some(check) = &cell.size_check {
            let _ = writeln!(
                out,
                "size check (first cell, its size used for all): {}",
                check.sentence()
            );
        }
    }
    out
}

/// 1 … N threads and where the bandwidth stopped growing.
pub fn bandwidth_scaling(s: &Scaling, peak: Option<f64>) -> String {
    let mut out = String::new();
    let _ =
        writeln!(out, "{:>8} {:>12} {:>10} {:>10}", "threads", "median GB/s", "best GB/s", "gain");
    let mut previous: Option<f64> = None;
    for step in &s.steps {
        let median = step.aggregate_gbs.median;
        let gain =
            previous.map_or("-".to_string(), |p| format!("{:+.0}%", 100.0 * (median / p - 1.0)));
        let _ = writeln!(
            out,
            "{:>8} {:>12.2} {:>10.2} {:>10}{}",
            step.threads.len(),
            median,
            step.aggregate_gbs.max,
            gain,
            of_peak(median, peak)
        );
        previous = Some(median);
    }
    match s.saturated_at {
        Some(n) => {
            let _ = writeln!(
                out,
                "bandwidth stops growing at {n} thread(s): one more added less than 5%"
            );
        }
        None if s.interrupted => out.push_str(
            "INTERRUPTED before every thread count ran: no conclusion on where bandwidth \
             saturates\n",
        ),
        None => out.push_str(
            "bandwidth still grew with every thread added: not saturated by these CPUs\n",
        ),
    }
    if s.interrupted && s.saturated_at.is_some() {
        out.push_str("INTERRUPTED: the rows above were measured; the last may be partial\n");
    }
    for check in &s.size_checks {
        let _ = writeln!(out, "size check: {}", check.sentence());
    }
    if let Some(step) = s.steps.first() {
        let _ = writeln!(out, "counted: {}", step.accounting);
    }
    out
}

/// The latency-versus-bandwidth curve.
pub fn loaded_latency(c: &LoadedCurve) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "chase on CPU {} (memory {}), {} load thread(s) on CPUs {} running {} ({}):",
        c.chase_cpu,
        nodes_of(std::slice::from_ref(&c.chase_placement)),
        c.load_cpus.len(),
        topo::idlist::format(&c.load_cpus),
        c.kernel,
        c.isa
    );
    let loads: Vec<Placement> = c.load_placements.iter().flatten().cloned().collect();
    if loads.iter().any(|p| p.page != place::PageSize::Base) {
        if let Some(pages) = place::pages_label_of(&loads) {
            let _ = writeln!(out, "load buffers in {pages}");
        }
    }
    let _ = writeln!(
        out,
        "{:>12} {:>12} {:>12} {:>10} {:>10}",
        "delay", "load GB/s", "latency ns", "p99 ns", "best ns"
    );
    for p in &c.points {
        let delay = p.delay_cycles.map_or("idle".to_string(), |d| d.to_string());
        let _ = writeln!(
            out,
            "{:>12} {:>12.2} {:>12.1} {:>10.1} {:>10.1}{}",
            delay,
            p.load_gbs,
            p.latency_ns.median,
            p.latency_ns.p99,
            p.latency_ns.min,
            if p.latency_ns.noisy { " [noisy]" } else { "" }
        );
    }
    let _ = writeln!(
        out,
        "delay: busy cycles a load thread spends after every 4 KiB it moves; counted: {}",
        c.accounting
    );
    if let Some(caveat) = &c.delay_caveat {
        let _ = writeln!(out, "  {caveat}");
    }
    if c.interrupted {
        out.push_str("INTERRUPTED: the points above were measured\n");
    }
    out
}

/// thread_read's extra line after the original's two: the rate and where the memory was.
pub fn thread_read_summary(r: &ThreadRead) -> String {
    format!(
        "{} passes × 256 MiB read by CPU {} in {:.3} s: {:.2} GB/s; memory first-touched by CPU {} is on {}\n",
        r.passes,
        r.to_cpu,
        r.elapsed_ns as f64 / 1e9,
        r.gbs(),
        r.from_cpu,
        nodes_of(std::slice::from_ref(&r.placement))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bandwidth::saturation_point;
    use crate::kernels::bandwidth::{Isa, Kernel, Walk};

    fn step(gbs: f64, threads: usize, interrupted: bool) -> BandwidthResult {
        BandwidthResult {
            kernel: Kernel::Read,
            isa: Isa::Avx2,
            walk: Walk::Sequential,
            isa_trial: Vec::new(),
            accounting: "bytes read".into(),
            bytes_per_thread: 1 << 26,
            aggregate_gbs: measure::summarize(&[gbs, gbs, gbs]).unwrap(),
            threads: (0..threads)
                .map(|cpu| crate::bandwidth::ThreadResult {
                    cpu: Some(cpu as u32),
                    gbs: measure::summarize(&[gbs]).unwrap(),
                    placements: Vec::new(),
                })
                .collect(),
            interrupted,
            size_check: None,
        }
    }

    #[test]
    fn a_chosen_isa_is_shown_with_the_trial_it_won() {
        let mut r = step(10.0, 1, false);
        assert!(!bandwidth_text(&r, None).contains("trial"), "--isa given: no trial line");
        let trial = |isa, walk, gbs| crate::bandwidth::IsaTrial { isa, walk, gbs };
        r.isa_trial = vec![
            trial(Isa::Avx512, Walk::Sequential, 8.214),
            trial(Isa::Avx2, Walk::Sequential, 9.931),
        ];
        let text = bandwidth_text(&r, None);
        assert!(text.starts_with("read (avx2), 1 thread(s)"), "{text}");
        assert!(
            text.contains(
                "avx2: chosen in a trial on these buffers (avx512 sequential 8.21 GB/s, avx2 \
                 sequential 9.93 GB/s; a narrower ISA or the four-page walk only when more than \
                 3% faster)"
            ),
            "{text}"
        );
        r.walk = Walk::FourPages;
        r.isa_trial.push(trial(Isa::Avx2, Walk::FourPages, 10.95));
        let text = bandwidth_text(&r, None);
        assert!(text.starts_with("read (avx2, four-pages walk), 1 thread(s)"), "{text}");
        assert!(text.contains("avx2 four-pages 10.95 GB/s;"), "{text}");
    }

    #[test]
    fn a_checked_size_is_said_in_the_text_the_chart_and_the_copy_headline() {
        let mut r = step(10.0, 1, false);
        assert!(!bandwidth_text(&r, None).contains("size check"), "--size given: no check");
        r.size_check = Some(crate::bandwidth::SizeCheck {
            threads: 1,
            tried: vec![(1 << 26, 14.0), (1 << 27, 10.2), (1 << 28, 10.0)],
            agreed: true,
        });
        let text = bandwidth_text(&r, None);
        assert!(
            text.contains("size check: 1 thread(s), buffer per thread checked at twice its size: 14.0 GB/s at 64.0 MiB, 10.2 GB/s at 128.0 MiB, 10.0 GB/s at 256.0 MiB — the cache served the smaller buffers"),
            "{text}"
        );
        let runs = vec![r.clone(), crate::bandwidth::BandwidthResult { size_check: None, ..r }];
        let figure = crate::chart::bandwidth_kernels(&runs).unwrap();
        assert_eq!(
            figure.caption.matches("checked at twice that").count(),
            1,
            "{}",
            figure.caption
        );
        let (headlines, _) = crate::chart::headlines::copies(&runs);
        assert!(headlines[0].detail.contains("grown until twice agreed"), "{:?}", headlines[0]);
    }

    #[test]
    fn a_finished_scaling_states_its_conclusion() {
        let steps = vec![step(10.0, 1, false), step(19.0, 2, false)];
        let s = Scaling {
            saturated_at: saturation_point(&steps),
            steps,
            interrupted: false,
            size_checks: Vec::new(),
        };
        let text = bandwidth_scaling(&s, None);
        assert!(text.contains("not saturated by these CPUs"), "{text}");
    }

    /// `mem bandwidth --scale` stopped after one row used to say "not saturated".
    #[test]
    fn an_interrupted_scaling_draws_no_conclusion() {
        let s = Scaling {
            steps: vec![step(10.0, 1, true)],
            saturated_at: None,
            interrupted: true,
            size_checks: Vec::new(),
        };
        let text = bandwidth_scaling(&s, None);
        assert!(!text.contains("not saturated"), "{text}");
        assert!(text.contains("INTERRUPTED before every thread count ran"), "{text}");
    }

    #[test]
    fn loaded_latency_says_what_its_delays_are_when_the_core_clock_is_unknown() {
        let placement = Placement::base_pages(4096, Vec::new());
        let mut c = LoadedCurve {
            mix: crate::loaded::LoadMix::Reads,
            kernel: Kernel::Read,
            isa: Isa::Avx2,
            accounting: "bytes read".into(),
            chase_cpu: 0,
            load_cpus: vec![1],
            chase_placement: placement,
            load_placements: Vec::new(),
            points: vec![crate::loaded::LoadedPoint {
                delay_cycles: Some(100),
                load_gbs: 10.0,
                latency_ns: measure::summarize(&[90.0]).unwrap(),
            }],
            interrupted: false,
            delay_caveat: None,
        };
        let text = loaded_latency(&c);
        assert!(text.trim_end().ends_with("counted: bytes read"), "{text}");
        c.delay_caveat = Some("core clock unknown (why); busy cycles are timed at 1.00 GHz".into());
        let text = loaded_latency(&c);
        assert!(
            text.ends_with("counted: bytes read\n  core clock unknown (why); busy cycles are timed at 1.00 GHz\n"),
            "{text}"
        );
        // THP asked for and partly refused: the chase's and the load buffers' pages say so.
        let base = c.chase_placement.clone();
        let thp = |bytes: u64, huge: u64| Placement {
            page: place::PageSize::Thp,
            bytes,
            thp_bytes: Some(huge),
            thp_mode: Some("madvise".into()),
            per_node: vec![place::NodePages { node: 0, pages: bytes / 4096 }],
            ..base.clone()
        };
        c.chase_placement = thp(64 << 20, 64 << 20);
        c.load_placements = vec![vec![thp(64 << 20, 60 << 20), thp(64 << 20, 64 << 20)]];
        let text = loaded_latency(&c);
        assert!(text.contains("(memory node 0 100% in thp pages: all 64 MiB huge)"), "{text}");
        assert!(
            text.contains(
                "\nload buffers in thp requested: 124 MiB of 128 MiB huge; THP is 'madvise'\n"
            ),
            "{text}"
        );
        // Stored curves from before the caveat existed read back without one.
        let mut json = serde_json::to_value(&c).unwrap();
        json.as_object_mut().unwrap().remove("delay_caveat");
        let back: LoadedCurve = serde_json::from_value(json).unwrap();
        assert_eq!(back.delay_caveat, None);
    }
}
