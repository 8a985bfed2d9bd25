//! The allocator bake-off's report sections: relative throughput, CPU per operation and peak memory
//! (what the original bake-off compared) and address-space growth, one bar per allocator and thread
//! count with its min–max range. `--html-out`, `alloc --html` and `report --from-db` all show these
//! parts.

use std::fmt::Write as _;

use chart::svg::{self, esc, exact, fmt3, px, Plot, ScaleKind, Tick};
use chart::{Area, Headline, Part, Section};

use crate::bakeoff::{BakeOff, Figure, Group, Verdict};

/// Shades for up to four thread counts (then they repeat).
const FILLS: [&str; 4] = ["#2b6cb0", "#5b8fc7", "#93b6de", "#c6d8ee"];

/// One chart: a value per group (with its range), grouped by allocator, one bar per thread
/// count.
fn bar_chart(
    id: &str,
    title: &str,
    y_title: &str,
    b: &BakeOff,
    value: &dyn Fn(&Group) -> Option<Figure>,
    fmt: &dyn Fn(f64) -> String,
) -> String {
    let names: Vec<&str> = b.allocators.iter().map(|a| a.name.as_str()).collect();
    let top = b
        .groups
        .iter()
        .filter_map(value)
        .map(|f| f.max)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let plot =
        Plot { width: 620.0, height: 340.0, left: 70.0, right: 16.0, top: 30.0, bottom: 64.0 };
    let n = names.len().max(1) as f64;
    let x = plot.x_scale(ScaleKind::Linear, 0.0, n);
    let y = plot.y_scale(ScaleKind::Linear, 0.0, svg::nice_max(top.max(f64::MIN_POSITIVE), 6));
    let ticks: Vec<Tick> = names
        .iter()
        .enumerate()
        .map(|(i, name)| Tick { value: i as f64 + 0.5, label: Some((*name).to_string()) })
        .collect();
    let mut out = svg::open(id, plot.width, plot.height, title);
    out.push_str(&plot.axes(&x, &ticks, &y, &y.ticks(6)));
    out.push_str(&plot.y_title(y_title));
    let slot = (x.map(1.0) - x.map(0.0)) * 0.8;
    let per = slot / b.threads.len().max(1) as f64;
    for (ti, t) in b.threads.iter().enumerate() {
        let fill = FILLS[ti % FILLS.len()];
        let key_x = plot.x0() + 8.0 + 90.0 * ti as f64;
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"8\" width=\"12\" height=\"10\" fill=\"{fill}\"/>\
             <text class=\"point-label\" x=\"{}\" y=\"17\">{t} thread(s)</text>",
            px(key_x),
            px(key_x + 16.0)
        );
        for (ai, name) in names.iter().enumerate() {
            let Some(g) = b.groups.iter().find(|g| g.threads == *t && g.allocator == *name) else {
                continue;
            };
            let Some(f) = value(g).filter(|f| f.median.is_finite()) else { continue };
            let x0 = x.map(ai as f64) + (x.map(1.0) - x.map(0.0)) * 0.1 + per * ti as f64;
            let (y0, ym) = (y.map(0.0), y.map(f.median));
            let _ = write!(
                out,
                "<rect class=\"bar data\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\" \
                 data-value=\"{}\" data-allocator=\"{}\" data-threads=\"{t}\">\
                 <title>{} × {t} thread(s): {} (range {} – {}, {} round(s))</title></rect>",
                px(x0 + 1.0),
                px(ym),
                px((per - 2.0).max(1.0)),
                px((y0 - ym).max(0.0)),
                exact(f.median),
                esc(name),
                esc(name),
                fmt(f.median),
                fmt(f.min),
                fmt(f.max),
                f.samples.len()
            );
            if f.samples.len() > 1 {
                let cx = px(x0 + per / 2.0);
                let _ = write!(
                    out,
                    "<line class=\"axis\" x1=\"{cx}\" x2=\"{cx}\" y1=\"{}\" y2=\"{}\"/>",
                    px(y.map(f.min)),
                    px(y.map(f.max))
                );
            }
        }
    }
    out.push_str("</svg>");
    out
}

/// Throughput relative to the baseline allocator: the first of the bake-off's sections.
pub const RELATIVE: Section = Section {
    area: Area::Allocators,
    id: "chart-alloc-relative",
    title: "Throughput relative to glibc",
    wide: false,
};
pub const CPU: Section = Section {
    area: Area::Allocators,
    id: "chart-alloc-cpu",
    title: "CPU per operation",
    wide: false,
};
pub const PEAK: Section = Section {
    area: Area::Allocators,
    id: "chart-alloc-peak",
    title: "Peak resident memory",
    wide: false,
};
pub const SPACE: Section = Section {
    area: Area::Allocators,
    id: "chart-alloc-space",
    title: "Address-space growth without reservations",
    wide: false,
};

fn part(section: Section, svg: String, caption: String) -> Part {
    section.part(Some(chart::Figure { svg, caption, after: String::new() }))
}

/// The bake-off's sections: one chart each for relative throughput, CPU per operation, peak
/// resident memory and address-space growth; refused allocators and missing libraries are
/// listed under the first.
pub fn parts(b: &BakeOff) -> Vec<Part> {
    let base = b.baseline.clone().unwrap_or_else(|| "glibc".into());
    if b.groups.is_empty() {
        let mut empty = RELATIVE.part(None);
        empty.notes.push(if b.interrupted {
            "stopped before any run was verified.".to_string()
        } else {
            "no run could be verified: every allocator was refused.".to_string()
        });
        empty
            .notes
            .extend(b.refused.iter().map(|r| format!("{} refused: {}.", r.allocator, r.reason)));
        return vec![empty];
    }
    let rel = |g: &Group| {
        let base_g = b.groups.iter().find(|x| x.threads == g.threads && x.allocator == base)?;
        let m = base_g.throughput.median;
        let scale = |v: &[f64]| v.iter().map(|s| s / m).collect::<Vec<f64>>();
        Some(Figure {
            median: g.throughput.median / m,
            min: g.throughput.min / m,
            max: g.throughput.max / m,
            samples: scale(&g.throughput.samples),
        })
    };
    let mib = |f: &Figure| Figure {
        median: f.median / 1048576.0,
        min: f.min / 1048576.0,
        max: f.max / 1048576.0,
        samples: f.samples.iter().map(|s| s / 1048576.0).collect(),
    };
    let mut relative = part(
        RELATIVE,
        bar_chart(
            RELATIVE.id,
            RELATIVE.title,
            &format!("throughput ÷ {base}'s median"),
            b,
            &rel,
            &|v| format!("{}×", fmt3(v)),
        ),
        format!(
            "{} — {} round(s), interleaved round-robin. Bars: median over the rounds; lines: \
             min–max. Where ranges overlap the difference is not significant.{}",
            esc(&b.workload),
            b.repeat,
            if b.interrupted { " INTERRUPTED: the bars are the rounds that finished." } else { "" }
        ),
    );
    if let Some(f) = relative.figure.as_mut() {
        for r in &b.refused {
            let _ = write!(
                f.after,
                "<p class=\"not-measured\">refused: {} — {}</p>",
                esc(&r.allocator),
                esc(&r.reason)
            );
        }
        for m in &b.missing {
            let _ =
                write!(f.after, "<p class=\"not-measured\">missing: {}</p>", esc(&m.to_string()));
        }
        for n in &b.notes {
            let _ = write!(f.after, "<p>{}</p>", esc(n));
        }
    }
    // The headlines: each allocator against the baseline at the most threads measured.
    if let Some(&most) =
        b.threads.iter().filter(|t| b.groups.iter().any(|g| g.threads == **t)).max()
    {
        for g in b.groups.iter().filter(|g| g.threads == most && g.verdict != Verdict::Baseline) {
            let Some(rel) = g.relative.filter(|r| r.is_finite()) else { continue };
            relative.headlines.push(Headline {
                name: format!("{} vs {base}", g.allocator),
                value: format!("{}×", fmt3(rel)),
                detail: match g.grounds() {
                    grounds if grounds.is_empty() => format!(
                        "{most} thread(s), {} round(s), {}",
                        g.throughput.samples.len(),
                        verdict_words(&g.verdict)
                    ),
                    grounds => {
                        format!("{most} thread(s), {}: {grounds}", verdict_words(&g.verdict))
                    }
                },
                metric: Some(format!(
                    "alloc_relative_throughput{{allocator={},threads={most}}}",
                    g.allocator
                )),
            });
        }
    }
    vec![
        relative,
        part(
            CPU,
            bar_chart(
                CPU.id,
                CPU.title,
                "µs of CPU per operation",
                b,
                &|g| Some(g.cpu_per_op_us.clone()),
                &|v| format!("{} µs", fmt3(v)),
            ),
            "User + system time of the measured process (tree) divided by the operations counted."
                .into(),
        ),
        part(
            PEAK,
            bar_chart(
                PEAK.id,
                PEAK.title,
                "MiB (VmHWM)",
                b,
                &|g| g.hwm_bytes.as_ref().map(mib),
                &|v| format!("{} MiB", fmt3(v)),
            ),
            "Peak RSS of the measured process.".into(),
        ),
        part(
            SPACE,
            bar_chart(
                SPACE.id,
                SPACE.title,
                "MiB (PROT_NONE excluded)",
                b,
                &|g| Some(mib(&g.accessible_growth_bytes)),
                &|v| format!("{} MiB", fmt3(v)),
            ),
            "Growth of the mappings that can hold memory; glibc's 64 MiB arena reservations are \
             PROT_NONE and left out."
                .into(),
        ),
    ]
}

fn verdict_words(v: &Verdict) -> &'static str {
    match v {
        Verdict::Baseline => "the baseline",
        Verdict::NoSignificantDifference => "no significant difference",
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        Verdict::NotJudged => "not ranked",
    }
}

#[cfg(test)]
mod tests {
    use crate::allocator::{parse_glibc, Allocator};
    use crate::bakeoff::summarize_runs;
    use crate::procfs::{AddressSpace, Memory};
    use crate::run::{CpuUse, RunRecord};

    use super::*;

    fn record(allocator: &str, round: u32, throughput: f64) -> RunRecord {
        RunRecord {
            allocator: allocator.into(),
            threads: 2,
            round,
            pid: 1,
            verified: "x".into(),
            ops: 1000.0,
            seconds: 1000.0 / throughput,
            throughput,
            cpu: CpuUse { process_s: 0.001, ..Default::default() },
            cpu_per_op_us: 1.0,
            machine_cpu_per_op_us: 2.0,
            memory: Memory { hwm_bytes: Some(1 << 20), rss_bytes: None, pss_bytes: None },
            space_start: AddressSpace::default(),
            space_end: AddressSpace { total_bytes: 1 << 20, prot_none_bytes: 0 },
            minor_faults: 10,
        }
    }

    #[test]
    fn the_page_draws_one_bar_per_allocator_and_thread_count_with_relative_values() {
        let tuned = parse_glibc("glibc:arena_max=1").unwrap().unwrap();
        let allocators = vec![Allocator::glibc(), tuned];
        let runs: Vec<RunRecord> = (0..3)
            .flat_map(|r| {
                [record("glibc", r, 100.0 + f64::from(r)), record("glibc:arena_max=1", r, 150.0)]
            })
            .collect();
        let groups = summarize_runs(&allocators, &[2], &runs, Some("glibc"));
        let b = BakeOff {
            workload: "built-in <test>".into(),
            allocators,
            missing: Vec::new(),
            threads: vec![2],
            repeat: 3,
            baseline: Some("glibc".into()),
            runs,
            refused: Vec::new(),
            groups,
            notes: Vec::new(),
            interrupted: false,
        };
        let body: String = parts(&b).iter().map(|p| chart::render_part(p, "none")).collect();
        let page = chart::page("platscope alloc", "test", &body);
        assert!(page.contains("built-in &lt;test&gt;"));
        assert_eq!(page.matches("data-allocator=\"glibc:arena_max=1\"").count(), 4);
        // Relative throughput: 150 ÷ glibc's median 101.
        assert!(page.contains(&format!("data-value=\"{}\"", 150.0 / 101.0)), "{page}");
        let head = &parts(&b)[0].headlines;
        assert_eq!(head.len(), 1, "one allocator against the baseline");
        assert_eq!(
            head[0].metric.as_deref(),
            Some("alloc_relative_throughput{allocator=glibc:arena_max=1,threads=2}")
        );
    }

    #[test]
    fn nothing_verified_says_why() {
        let b = BakeOff {
            workload: "w".into(),
            allocators: vec![Allocator::glibc()],
            missing: Vec::new(),
            threads: vec![1],
            repeat: 1,
            baseline: None,
            runs: Vec::new(),
            refused: vec![crate::run::Refusal {
                allocator: "glibc".into(),
                threads: 1,
                round: 0,
                reason: "no <maps>".into(),
            }],
            groups: Vec::new(),
            notes: Vec::new(),
            interrupted: false,
        };
        let html = chart::render_part(&parts(&b)[0], "unused");
        assert!(
            html.contains("every allocator was refused. glibc refused: no &lt;maps&gt;."),
            "{html}"
        );
    }
}
