//! The report sections of `cpu scale` and `compress`.
//!
//! - [`cpu_scale`]: throughput against threads (as the Tamp article drew it), one line per number
//!   of units run at once, each point labelled with how many CPUs were busy — single-thread speed,
//!   where one instance stops scaling, and what the filled machine does. The one copy: `report
//!   --full` draws its section with it too.
//! - [`run_part`]: one compress or decompress run — where each thread's time went, MB/s, CPU
//!   seconds per MB and the verdict.

use std::fmt::Write as _;

use chart::labels::{self, PointLabel, Rect};
use chart::svg::{self, esc, exact, fmt3, px, Plot, ScaleKind};
use chart::{Area, Figure, Headline, Part, Section};
use measure::ToMetrics;

use crate::scale::{ScaleReport, ScaleStep};
use crate::{Operation, RunResult};

/// `cpu scale`'s section (the report's CPU scaling).
pub const CPU_SCALE: Section = Section {
    area: Area::Cpu,
    id: "chart-cpu-scale",
    title: "CPU scaling: throughput by threads and units (compression)",
    wide: false,
};

/// The section of an lz4 compress run ([`run_part`] names each run's `chart-{op}-{format}`):
/// the report's compression step draws it first, and says there why when it cannot run.
pub const COMPRESS_LZ4: Section = Section {
    area: Area::Compression,
    id: "chart-compress-lz4",
    title: "Compression (lz4): where the time went",
    wide: false,
};

/// Line styles for up to four unit counts (then they repeat).
const DASHES: [&str; 4] = ["", "6 3", "2 3", "10 3 2 3"];

/// The radius of a point of the scaling chart.
const POINT_RADIUS: f64 = 4.5;

/// The size of `.point-label` text (chart's style sheet).
const LABEL_FONT_PX: f64 = 12.0;

/// The throughput-by-threads-and-units chart; `None` when no step measured anything.
pub fn cpu_scale(r: &ScaleReport) -> Option<Figure> {
    let steps: Vec<&ScaleStep> = r.steps.iter().filter(|s| s.mb_per_s.is_finite()).collect();
    if steps.is_empty() {
        return None;
    }
    let most = steps.iter().map(|s| s.threads).max().unwrap_or(1).max(2);
    let y_top = steps.iter().map(|s| s.mb_per_s).fold(0.0, f64::max);
    let plot =
        Plot { width: 600.0, height: 400.0, left: 64.0, right: 20.0, top: 34.0, bottom: 56.0 };
    let x = plot.x_scale(ScaleKind::Log2, 1.0, most as f64);
    let y = plot.y_scale(ScaleKind::Linear, 0.0, svg::nice_max(y_top, 6));
    let id = CPU_SCALE.id;
    let mut out = svg::open(id, plot.width, plot.height, "Throughput against threads and units");
    let x_ticks: Vec<svg::Tick> = std::iter::successors(Some(1usize), |t| Some(t * 2))
        .take_while(|&t| t <= most)
        .map(|t| svg::Tick { value: t as f64, label: Some(t.to_string()) })
        .collect();
    out.push_str(&plot.axes(&x, &x_ticks, &y, &y.ticks(6)));
    let mut units: Vec<usize> = steps.iter().map(|s| s.units).collect();
    units.sort_unstable();
    units.dedup();
    // Each point's busy-CPU count with the online CPUs it is of. The labels go on last, over
    // every line, each where it covers no other label, point or legend entry and stays inside
    // the drawing (chart::labels).
    let mut labels: Vec<(PointLabel, usize)> = Vec::new();
    let mut legend: Vec<Rect> = Vec::new();
    for (i, u) in units.iter().enumerate() {
        let mut line: Vec<&ScaleStep> = steps.iter().copied().filter(|s| s.units == *u).collect();
        line.sort_by_key(|s| s.threads);
        let dash = DASHES[i % DASHES.len()];
        let points: Vec<String> = line
            .iter()
            .map(|s| format!("{},{}", px(x.map(s.threads as f64)), px(y.map(s.mb_per_s))))
            .collect();
        let _ = write!(
            out,
            "<polyline class=\"line\" stroke-dasharray=\"{dash}\" points=\"{}\"/>",
            points.join(" ")
        );
        let key_x = plot.x0() + 6.0 + 120.0 * i as f64;
        let key_text = format!("{u} unit(s)");
        let _ = write!(
            out,
            "<line class=\"line\" stroke-dasharray=\"{dash}\" x1=\"{}\" x2=\"{}\" y1=\"14\" y2=\"14\"/>\
             <text class=\"point-label\" x=\"{}\" y=\"18\">{key_text}</text>",
            px(key_x),
            px(key_x + 24.0),
            px(key_x + 30.0),
        );
        let key_box = labels::text_box(&key_text, LABEL_FONT_PX, key_x + 30.0, 18.0, "start");
        legend.push(Rect { left: key_x - 2.0, ..key_box });
        for s in line {
            let busy = s.machine.as_ref().map(|m| (m.cpus_busy, m.machine_share));
            let busy_text = busy.map_or(String::new(), |(n, share)| {
                format!(", {n} of {} CPUs busy, machine {:.0}% busy", s.online_cpus, share * 100.0)
            });
            let (cx, cy) = (x.map(s.threads as f64), y.map(s.mb_per_s));
            let _ = write!(
                out,
                "<circle class=\"data\" cx=\"{}\" cy=\"{}\" r=\"{POINT_RADIUS}\" data-value=\"{}\" data-units=\"{}\" data-threads=\"{}\">\
                 <title>{} unit(s) × {} thread(s): {} MB/s{}; {}</title></circle>",
                px(cx),
                px(cy),
                exact(s.mb_per_s),
                s.units,
                s.threads,
                s.units,
                s.threads,
                fmt3(s.mb_per_s),
                busy_text,
                esc(&s.verdict_reason),
            );
            if let Some((n, _)) = busy {
                labels.push((PointLabel { x: cx, y: cy, text: n.to_string() }, s.online_cpus));
            }
        }
    }
    // Inside the drawing, right of the y axis's tick labels and above the x axis's.
    let bounds = Rect { left: plot.x0() + 1.0, top: 0.0, right: plot.width, bottom: plot.y0() };
    let (placed, short_of) = place_busy_labels(&labels, bounds, &legend);
    let left_out = placed.iter().filter(|p| p.is_none()).count();
    for p in placed.iter().flatten() {
        out.push_str(&p.svg("point-label"));
    }
    out.push_str(&plot.x_title("compressor threads per unit"));
    out.push_str(&plot.y_title("MB/s (10⁶ bytes/s, uncompressed)"));
    out.push_str("</svg>");
    let rounds = r.steps.iter().map(|s| s.rounds_mb_per_s.len()).max().unwrap_or(0);
    let mut caption = format!(
        "The {} compressor{} on an in-memory corpus of {} per unit, to nowhere: one reader, N \
         workers and one writer per unit, units run at once.{} Labels: CPUs at least 90% busy \
         during the step (from /proc/stat) of all online CPUs — one busy CPU of many is what a \
         machine-wide idle figure hides. {}",
        esc(&r.codec),
        r.level.map_or(String::new(), |l| format!(" at level {l}")),
        esc(&svg::bytes_label(r.input_bytes as f64)),
        if rounds > 1 {
            format!(
                " Every step ran {rounds} times, one round of all steps after another; each \
                 point is the median round's."
            )
        } else {
            String::new()
        },
        esc(&r.summary.text),
    );
    if let Some(online) = short_of {
        let _ = write!(
            caption,
            " For room, each label is the busy CPUs alone, of the {online} online CPUs."
        );
    }
    if left_out > 0 {
        let _ = write!(
            caption,
            " {left_out} label(s) found no free place beside their point and are left out; each \
             point's tooltip has its figures."
        );
    }
    if r.interrupted {
        caption.push_str(
            " INTERRUPTED: only the steps drawn were measured; no conclusion is drawn from them.",
        );
    }
    Some(Figure { svg: out, caption, after: String::new() })
}

/// Places the busy-CPU labels (`labels`: each point's busy count and the online CPUs) as
/// `busy/online`; when some find no room and every point has the same online count, as the
/// busy count alone if that leaves fewer out — then with that count (`Some`), for the caption.
fn place_busy_labels(
    labels: &[(PointLabel, usize)],
    bounds: Rect,
    legend: &[Rect],
) -> (Vec<Option<labels::Placed>>, Option<usize>) {
    let place =
        |points: &[PointLabel]| labels::place(points, POINT_RADIUS, LABEL_FONT_PX, bounds, legend);
    let left_out =
        |placed: &[Option<labels::Placed>]| placed.iter().filter(|p| p.is_none()).count();
    let long: Vec<PointLabel> = labels
        .iter()
        .map(|(p, online)| PointLabel { text: format!("{}/{online}", p.text), ..p.clone() })
        .collect();
    let placed = place(&long);
    let online = labels.first().map(|l| l.1);
    let uniform = labels.iter().all(|l| Some(l.1) == online);
    if left_out(&placed) == 0 || !uniform {
        return (placed, None);
    }
    let short: Vec<PointLabel> = labels.iter().map(|(p, _)| p.clone()).collect();
    let shorter = place(&short);
    if left_out(&shorter) < left_out(&placed) {
        (shorter, online)
    } else {
        (placed, None)
    }
}

/// The stored metric `name` of a result's metrics, as its key.
fn key(
    metrics: &[measure::Metric],
    name: &str,
    f: impl Fn(&measure::Metric) -> bool,
) -> Option<String> {
    metrics.iter().find(|m| m.name == name && f(m)).map(measure::Metric::key)
}

/// `cpu scale`'s section (the same as `report --full`'s), with its headline figures.
pub fn scale_part(r: &ScaleReport) -> Part {
    let mut part = CPU_SCALE.part(cpu_scale(r));
    let metrics = r.to_metrics();
    let at = |units: usize, threads: usize| {
        key(&metrics, crate::metrics::SCALE_THROUGHPUT, |m| {
            m.labels.get("units") == Some(&units.to_string())
                && m.labels.get("threads") == Some(&threads.to_string())
        })
    };
    // Each value is the median of the samples its metric stores (one a round).
    let step_median = |units: usize, threads: usize, mb: f64| {
        let step = r.steps.iter().find(|s| s.units == units && s.threads == threads);
        let samples = step.map(ScaleStep::mb_per_s_samples).unwrap_or_default();
        let rounds = rounds_words(step.map_or(0, |s| s.rounds_mb_per_s.len()));
        (median(&samples).unwrap_or(mb), rounds)
    };
    if let Some(mb) = r.summary.single_thread_mb_s.filter(|v| v.is_finite()) {
        let (mb, rounds) = step_median(1, 1, mb);
        part.headlines.push(Headline {
            name: "single-thread compression".into(),
            value: format!("{} MB/s", fmt3(mb)),
            detail: format!("{}, one worker{rounds}", r.codec),
            metric: at(1, 1),
        });
    }
    if let Some((units, threads, mb)) = r.summary.filled_best.filter(|b| b.2.is_finite()) {
        let (mb, rounds) = step_median(units, threads, mb);
        part.headlines.push(Headline {
            name: "filled machine compression".into(),
            value: format!("{} MB/s", fmt3(mb)),
            detail: format!("{units} unit(s) × {threads} thread(s){rounds}"),
            metric: at(units, threads),
        });
    }
    // Every step, compared under its own name: the filled machine's best step can differ
    // between two runs whose steps are within noise, and then its headline names two
    // different steps that are not compared; each step's figure always is.
    for s in r.steps.iter().filter(|s| s.mb_per_s.is_finite()) {
        let (mb, rounds) = step_median(s.units, s.threads, s.mb_per_s);
        part.compared.push(Headline {
            name: format!("compression, {} unit(s) × {} thread(s)", s.units, s.threads),
            value: format!("{} MB/s", fmt3(mb)),
            detail: format!("{}{rounds}", r.codec),
            metric: at(s.units, s.threads),
        });
    }
    part
}

/// One compress or decompress run's section: each thread's busy and CPU share (why it went no
/// faster), with MB/s, CPU seconds per MB and the verdict.
pub fn run_part(r: &RunResult) -> Part {
    let (op, what) = match r.operation {
        Operation::Compress => ("compress", "Compression"),
        Operation::Decompress => ("decompress", "Decompression"),
    };
    // One section per format, so lz4 and zstd runs sit side by side on one page.
    let format: String = r.format.chars().filter(char::is_ascii_alphanumeric).collect();
    let id = format!("chart-{op}-{}", format.to_ascii_lowercase());
    let title = format!("{what} ({}): where the time went", r.format);
    let id = id.as_str();
    let mut part = Part::new(Area::Compression, id, &title, false);
    let cpu_per_mb = r.cpu_s_per_mb();
    if !r.thread_busy.is_empty() {
        part.figure = Some(Figure {
            svg: busy_chart(id, r),
            caption: format!(
                "{}{op} {}{}: {} of {} with {} → ratio {}; {} MB/s (uncompressed, 10⁶ B), {} CPU \
                 s per MB; verdict: {} — {}.{}",
                rounds_sentence(r),
                esc(&r.format),
                r.level.map_or(String::new(), |l| format!(" -{l}")),
                esc(&svg::bytes_label(r.bytes_in as f64)),
                esc(&r.input),
                if r.parallel { format!("{} worker(s)", r.threads) } else { "one thread".into() },
                fmt3(r.ratio),
                fmt3(r.mb_per_s),
                cpu_per_mb.map_or("–".to_string(), fmt3),
                r.verdict.name(),
                esc(&r.verdict_reason),
                if r.interrupted { " INTERRUPTED: the figures cover the part done." } else { "" }
            ),
            after: String::new(),
        });
    } else {
        part.notes.push(format!("{op} of {} measured no thread", r.input));
    }
    // The headline values are the medians of the samples their metrics store (one a round),
    // the figures a comparison tests.
    let metrics = r.to_metrics();
    let of_rounds = rounds_words(r.rounds.len());
    part.headlines.push(Headline {
        name: format!("{op} {}", r.format),
        value: format!("{} MB/s", fmt3(median(&r.mb_per_s_samples()).unwrap_or(r.mb_per_s))),
        detail: format!("{} worker(s){of_rounds}", r.threads),
        metric: key(&metrics, crate::metrics::THROUGHPUT, |_| true),
    });
    if let Some(c) = median(&r.cpu_s_per_mb_samples()).or(cpu_per_mb) {
        part.headlines.push(Headline {
            name: format!("{op} {} CPU per MB", r.format),
            value: format!("{} s", fmt3(c)),
            detail: format!("user + system{of_rounds}"),
            metric: key(&metrics, crate::metrics::CPU_PER_MB, |_| true),
        });
    }
    part
}

/// The median of `samples` (`None` for none, or any not finite).
fn median(samples: &[f64]) -> Option<f64> {
    measure::summarize(samples).map(|s| s.median)
}

/// `, median of N rounds` for a figure measured in `rounds` rounds (nothing for a single run).
fn rounds_words(rounds: usize) -> String {
    if rounds > 1 {
        format!(", median of {rounds} rounds")
    } else {
        String::new()
    }
}

/// For a run repeated in rounds: how many, each one's MB/s, and that the rest of the caption
/// and the bars are the median round's.
fn rounds_sentence(r: &RunResult) -> String {
    if r.rounds.len() <= 1 {
        return String::new();
    }
    let speeds: Vec<String> = r.rounds.iter().map(|x| fmt3(x.mb_per_s)).collect();
    format!(
        "{} rounds, each a fresh pipeline over the whole input (MB/s: {}); the figures and bars \
         below are the median round's. ",
        r.rounds.len(),
        speeds.join(", ")
    )
}

/// Each thread's busy share (solid) and CPU share (light) as horizontal bars.
fn busy_chart(id: &str, r: &RunResult) -> String {
    let rows = r.thread_busy.len() as f64;
    let height = 60.0 + 22.0 * rows;
    let plot = Plot { width: 600.0, height, left: 90.0, right: 20.0, top: 26.0, bottom: 44.0 };
    let x = plot.x_scale(ScaleKind::Linear, 0.0, 100.0);
    let mut out = svg::open(id, plot.width, plot.height, "Busy and CPU share of each thread");
    out.push_str(&plot.axes(&x, &x.ticks(5), &plot.y_scale(ScaleKind::Linear, 0.0, 1.0), &[]));
    out.push_str(&plot.x_title("% of the thread's lifetime"));
    let _ = write!(
        out,
        "<rect x=\"{}\" y=\"6\" width=\"12\" height=\"10\" fill=\"#2b6cb0\"/>\
         <text class=\"point-label\" x=\"{}\" y=\"15\">busy (not waiting for the pipeline)</text>\
         <rect x=\"{}\" y=\"6\" width=\"12\" height=\"10\" fill=\"#c6d8ee\"/>\
         <text class=\"point-label\" x=\"{}\" y=\"15\">on CPU</text>",
        px(plot.x0()),
        px(plot.x0() + 16.0),
        px(plot.x0() + 260.0),
        px(plot.x0() + 276.0)
    );
    for (i, t) in r.thread_busy.iter().enumerate() {
        let y0 = plot.top + 10.0 + 22.0 * i as f64;
        let _ = write!(
            out,
            "<text class=\"tick-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            px(plot.x0() - 6.0),
            px(y0 + 12.0),
            esc(&t.role)
        );
        for (share, fill, dy, h, what) in [
            (t.busy_share, "#2b6cb0", 0.0, 16.0, "busy"),
            (t.cpu_share, "#c6d8ee", 5.0, 6.0, "on CPU"),
        ] {
            let _ = write!(
                out,
                "<rect class=\"bar data\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{h}\" \
                 fill=\"{fill}\" data-value=\"{}\" data-thread=\"{}\"><title>{}: {what} {}%\
                 </title></rect>",
                px(x.map(0.0)),
                px(y0 + dy),
                px((x.map(share * 100.0) - x.map(0.0)).max(0.0)),
                exact(share),
                esc(&t.role),
                esc(&t.role),
                fmt3(share * 100.0)
            );
        }
    }
    out.push_str("</svg>");
    out
}
