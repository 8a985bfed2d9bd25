//! The allocator bake-off as a standalone page: relative throughput (the seed's second chart),
//! CPU per operation (the third) and peak memory (the fourth), one bar per allocator and thread
//! count with its min–max range. A page of its own rather than a section of `report`: the
//! bake-off is run on its own (`platscope alloc`), not as a step of characterising a machine.
//! It uses the report's style sheet and chart primitives, and is written atomically.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use allocbench::bakeoff::{BakeOff, Figure, Group};

use chart::svg::{self, esc, exact, fmt3, px, Plot, ScaleKind, Tick};

use chart::CSS;

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

fn section(title: &str, chart: String, caption: &str) -> String {
    format!(
        "<section><h2>{}</h2><figure>{chart}<figcaption>{}</figcaption></figure></section>",
        esc(title),
        esc(caption)
    )
}

/// The page as HTML text.
pub fn render_page(b: &BakeOff) -> String {
    let base = b.baseline.clone().unwrap_or_else(|| "glibc".into());
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
    let mut charts = String::new();
    charts.push_str(&section(
        "Throughput relative to glibc",
        bar_chart(
            "chart-alloc-relative",
            "Throughput relative to glibc",
            &format!("throughput ÷ {base}'s median"),
            b,
            &rel,
            &|v| format!("{}×", fmt3(v)),
        ),
        "Bars: median over the rounds; lines: min–max. Where ranges overlap the difference is \
         not significant.",
    ));
    charts.push_str(&section(
        "CPU per operation",
        bar_chart(
            "chart-alloc-cpu",
            "CPU per operation",
            "µs of CPU per operation",
            b,
            &|g| Some(g.cpu_per_op_us.clone()),
            &|v| format!("{} µs", fmt3(v)),
        ),
        "User + system time of the measured process (tree) divided by the operations counted.",
    ));
    charts.push_str(&section(
        "Peak resident memory",
        bar_chart(
            "chart-alloc-peak",
            "Peak resident memory",
            "MiB (VmHWM)",
            b,
            &|g| {
                g.hwm_bytes.clone().map(|f| Figure {
                    median: f.median / 1048576.0,
                    min: f.min / 1048576.0,
                    max: f.max / 1048576.0,
                    samples: f.samples.iter().map(|s| s / 1048576.0).collect(),
                })
            },
            &|v| format!("{} MiB", fmt3(v)),
        ),
        "Peak RSS of the measured process.",
    ));
    charts.push_str(&section(
        "Address-space growth without reservations",
        bar_chart(
            "chart-alloc-space",
            "Address-space growth without reservations",
            "MiB (PROT_NONE excluded)",
            b,
            &|g| {
                let f = &g.accessible_growth_bytes;
                Some(Figure {
                    median: f.median / 1048576.0,
                    min: f.min / 1048576.0,
                    max: f.max / 1048576.0,
                    samples: f.samples.iter().map(|s| s / 1048576.0).collect(),
                })
            },
            &|v| format!("{} MiB", fmt3(v)),
        ),
        "Growth of the mappings that can hold memory; glibc's 64 MiB arena reservations are \
         PROT_NONE and left out.",
    ));
    let mut notes = String::new();
    for r in &b.refused {
        let _ = write!(
            notes,
            "<p class=\"not-measured\">refused: {} — {}</p>",
            esc(&r.allocator),
            esc(&r.reason)
        );
    }
    for m in &b.missing {
        let _ = write!(notes, "<p class=\"not-measured\">missing: {}</p>", esc(&m.to_string()));
    }
    let css: String = CSS.lines().collect();
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>platscope alloc</title><style>{css}</style></head><body><div class=\"page\">\
         <h1>Allocator bake-off</h1><p class=\"sub\">{} — {} round(s), interleaved round-robin</p>\
         {notes}<main class=\"charts\">{charts}</main></div></body></html>\n",
        esc(&b.workload),
        b.repeat
    )
}

/// Writes the page to `path` atomically (a temporary file beside it, renamed over it).
pub fn write_page(path: &Path, b: &BakeOff) -> io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let result = std::fs::write(&tmp, render_page(b)).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        std::fs::remove_file(&tmp).ok();
    }
    result
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
mod tests {
    use allocbench::allocator::{parse_glibc, Allocator};
    use allocbench::bakeoff::summarize_runs;
    use allocbench::procfs::{AddressSpace, Memory};
    use allocbench::run::{CpuUse, RunRecord};

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
        let page = render_page(&b);
        assert!(page.contains("built-in &lt;test&gt;"));
        assert_eq!(page.matches("data-allocator=\"glibc:arena_max=1\"").count(), 4);
        // Relative throughput: 150 ÷ glibc's median 101.
        assert!(page.contains(&format!("data-value=\"{}\"", 150.0 / 101.0)), "{page}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("alloc.html");
        write_page(&path, &b).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), page);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary left");
    }
}
