//! The HTML report, read back from its text: every chart carries one mark per measured figure
//! with the figure's exact value, the page is self-contained and escaped, and sections without
//! data say so. (tests/browser.rs checks the same page as Chromium renders it.)

mod common;

use common::*;
use report::html::{render_html, Note, ReportData, Section};

fn page() -> (ReportData, String) {
    let data = sample();
    let html = render_html(&data);
    (data, html)
}

#[test]
fn every_chart_has_one_mark_per_measured_value() {
    let (data, html) = page();
    let all = tags(&html);
    let counts = [
        ("chart-latency-size", 10),
        ("chart-latency-matrix", 4),
        ("chart-bandwidth-matrix", 4),
        ("chart-bandwidth-threads", 4),
        ("chart-loaded-latency", 5),
        ("chart-slb", 1 + 2 + 4 + 4 + 4),
    ];
    for (id, count) in counts {
        let chart = chart_tags(&all, id).unwrap_or_else(|| panic!("no <svg id={id}>"));
        let marks = data_marks(&chart);
        assert_eq!(marks.len(), count, "{id}: data marks");
        assert_eq!(mark_values(&marks), expected(&data, id), "{id}: data-value of each mark");
        assert!(
            marks.iter().all(|m| ["circle", "rect", "path"].contains(&m.name.as_str())),
            "{id}: data marks are circles, rects or paths"
        );
        assert_eq!(html.matches(&format!("id=\"{id}\"")).count(), 1, "{id} appears once");
    }
}

#[test]
fn the_expected_values_are_the_fixture_inputs() {
    // Guards the helper the other tests compare with: it reads the same numbers we put in.
    let data = sample();
    let mut sweep: Vec<f64> = SWEEP.iter().map(|(_, ns)| *ns).collect();
    sweep.sort_by(f64::total_cmp);
    assert_eq!(expected(&data, "chart-latency-size"), sweep);
    let mut loaded: Vec<f64> = LOADED.iter().map(|p| p.2).collect();
    loaded.sort_by(f64::total_cmp);
    assert_eq!(expected(&data, "chart-loaded-latency"), loaded);
    assert_eq!(expected(&data, "chart-bandwidth-threads"), SCALING.to_vec());
}

#[test]
fn every_chart_has_a_title_axes_and_a_caption_with_the_spread() {
    let (_, html) = page();
    let all = tags(&html);
    for id in CHARTS {
        let chart = chart_tags(&all, id).expect("chart");
        assert_eq!(chart.first().map(|t| t.name.as_str()), Some("title"), "{id}: <title> first");
        let start = html.find(&format!("<svg id=\"{id}\"")).expect("svg");
        let figure_end = html[start..].find("</figure>").expect("figure") + start;
        let caption = &html[start..figure_end];
        assert!(caption.contains("<figcaption>"), "{id}: figcaption");
        assert!(caption.contains("p99") || caption.contains("best"), "{id}: the spread");
        if id != "chart-slb" {
            // SLB bars are whole-run ns per store; the others are medians of samples.
            assert!(caption.contains("median of"), "{id}: what the mark is a median of");
        }
    }
    // Axes with ticks and units on the x/y charts; row and column labels on the heatmaps.
    for id in ["chart-latency-size", "chart-bandwidth-threads", "chart-loaded-latency", "chart-slb"]
    {
        let chart = chart_tags(&all, id).expect("chart");
        assert!(chart.iter().filter(|t| t.has_class("tick")).count() >= 3, "{id}: ticks");
        assert!(chart.iter().any(|t| t.has_class("axis-title")), "{id}: axis titles");
    }
    for (unit, id) in [("ns per load", "chart-latency-size"), ("GB/s", "chart-bandwidth-threads")] {
        let start = html.find(&format!("<svg id=\"{id}\"")).expect("svg");
        let end = html[start..].find("</svg>").expect("end") + start;
        assert!(html[start..end].contains(unit), "{id}: unit {unit} on an axis");
    }
    for id in ["chart-latency-matrix", "chart-bandwidth-matrix"] {
        let chart = chart_tags(&all, id).expect("chart");
        assert_eq!(chart.iter().filter(|t| t.has_class("cell-value")).count(), 4, "{id}");
    }
}

#[test]
fn latency_chart_marks_each_cache_level() {
    let (_, html) = page();
    let chart = chart_tags(&tags(&html), "chart-latency-size").expect("chart");
    let markers: Vec<(String, String)> = chart
        .iter()
        .filter(|t| t.has_class("cache-marker"))
        .map(|t| {
            (
                t.attr("data-cache").unwrap_or("").to_string(),
                t.attr("data-bytes").unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        markers,
        [
            ("L1d".to_string(), (48 * KIB).to_string()),
            ("L2".to_string(), (1280 * KIB).to_string()),
            ("L3".to_string(), (24 * MIB).to_string()),
        ],
        "one dashed line per level, at one instance's size"
    );
    assert!(
        html.contains("L1d 48 KiB") && html.contains("L2 1.25 MiB") && html.contains("L3 24 MiB")
    );
}

#[test]
fn saturation_and_idle_point_are_marked() {
    let (_, html) = page();
    let all = tags(&html);
    let threads = chart_tags(&all, "chart-bandwidth-threads").expect("chart");
    let saturation: Vec<&Tag> = threads
        .iter()
        .filter(|t| t.has_class("saturation") && t.attr("data-threads").is_some())
        .collect();
    assert_eq!(saturation.len(), 1);
    assert_eq!(saturation[0].attr("data-threads"), Some("3"));
    let loaded = chart_tags(&all, "chart-loaded-latency").expect("chart");
    let idle: Vec<&Tag> = loaded.iter().filter(|t| t.has_class("idle")).collect();
    assert_eq!(idle.len(), 1, "one idle point, drawn differently");
    assert_eq!(idle[0].name, "rect");
    assert_eq!(idle[0].attr("data-value"), Some("98.4"));
    assert_eq!(idle[0].attr("data-delay"), Some("idle"));
    assert_eq!(idle[0].attr("data-gbs"), Some("0.02"));
}

#[test]
fn markup_and_text_are_escaped() {
    let (_, html) = page();
    assert!(!html.contains(NASTY_MODEL), "raw CPU model in the page");
    assert!(html.contains("Xeon &lt;Test&gt; &amp; &quot;Co&quot; &#39;quoted&#39;"));
    assert!(!html.contains("<script"), "the note's script tag must be text");
    assert!(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more"));
    assert!(html.contains("only node with memory &lt;&amp;&gt;"));
    assert_balanced(&html);
}

#[test]
fn page_is_self_contained() {
    let (_, html) = page();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for banned in ["<script", "http://", "https://", "src=", "href=", "@import", "<link", "<img"] {
        assert!(!html.contains(banned), "{banned:?} in a page that must open offline");
    }
    // url() only as a reference inside the page (gradient fills).
    for (i, _) in html.match_indices("url(") {
        assert!(html[i..].starts_with("url(#"), "external url(): {}", &html[i..i + 40]);
    }
    assert!(html.contains("Content-Security-Policy"), "the page forbids loads it does not need");
}

#[test]
fn header_summary_and_footer_say_what_was_run_where() {
    let (_, html) = page();
    for fact in [
        "GenuineIntel",
        "4 online (0-3), 4 core(s), 2 package(s)",
        "node 0: CPUs 0-1, 8 GiB",
        "node 1: CPUs 2-3, 8 GiB",
        "L1d 48 KiB ×4, L2 1.25 MiB ×4, L3 24 MiB ×2 (64-byte lines)",
        "6.1.0-28-amd64",
        "madvise (defrag defer+madvise)",
        "0 (off)",
        "tsc (available: tsc, hpet, acpi_pm)",
        "performance (CPUs 0-3)",
        "KVM",
        "0.1.0 (abc1234)",
        "2025-01-31T12:34:56Z",
        "quick mode",
        "10 21 / 21 10",
    ] {
        assert!(html.contains(fact), "header fact {fact:?} missing");
    }
    let summary_start = html.find("Headline figures").expect("summary");
    let charts_start = html.find("<main").expect("charts");
    assert!(summary_start < charts_start, "summary before the charts");
    let summary = &html[summary_start..charts_start];
    for figure in [
        "Idle DRAM latency",
        "92.5 ns",
        "L1 latency",
        "1.21 ns · 3.75 cycles",
        "Peak bandwidth",
        "21.6 GB/s",
        "Saturation point",
        "3 thread(s)",
        // The better of the two copies, named, with the other beside it.
        "Copy bandwidth",
        "19.5 GB/s",
        "copy-nt (avx2), 4 thread(s)",
        "copy gave 14.5 GB/s",
        "Latency at max load",
        "241 ns",
        "98.4 ns idle",
        "Remote latency (worst)",
        "151 ns",
        "node 1 to node 0&#39;s memory: 1.62× node 1&#39;s local 93.1 ns",
    ] {
        assert!(summary.contains(figure), "summary figure {figure:?} missing");
    }
    let footer = &html[html.find("<footer").expect("footer")..];
    assert!(footer.contains("/home/dba/.local/share/platscope/results.sqlite"));
    for id in 41..=47 {
        assert!(footer.contains(&format!("<td class=\"num\">{id}</td>")), "run {id} listed");
    }
    assert!(footer.contains("prefetch self-check: &lt;script&gt;"), "notes listed");
    // Order: header, summary, charts in the order of the brief, notes, runs.
    let order: Vec<usize> = ["<header", "Headline figures"]
        .iter()
        .map(|s| s.to_string())
        .chain(CHARTS.iter().map(|id| format!("<svg id=\"{id}\"")))
        .chain(["<h2>Notes</h2>".to_string(), "<h2>Stored runs</h2>".to_string()])
        .map(|s| html.find(&s).unwrap_or_else(|| panic!("{s} missing")))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "sections out of order: {order:?}");
}

#[test]
fn skipped_policies_are_listed_with_their_reason() {
    let (_, html) = page();
    let after_chart = &html[html.find("<svg id=\"chart-slb\"").expect("slb")..];
    assert!(after_chart.contains("Policies not run:"));
    assert!(after_chart
        .contains("<li><b>remote</b>: every worker&#39;s node is the only node with memory &lt;&amp;&gt;</li>"));
    let chart = chart_tags(&tags(&html), "chart-slb").expect("chart");
    let groups: Vec<&str> = chart.iter().filter_map(|t| t.attr("data-group")).collect();
    for group in ["1 worker", "2 workers", "4 workers", "local", "interleave"] {
        assert!(groups.contains(&group), "bars for {group}");
    }
    assert!(!groups.contains(&"remote"), "no bars for a skipped policy");
}

#[test]
fn sections_without_data_say_not_measured_and_why() {
    let mut data = sample();
    data.latency_sweep.clear();
    data.prefetch_check = None;
    data.latency_matrix = None;
    data.bandwidth_matrix = None;
    data.bandwidth_scaling = None;
    data.copy_bandwidth.clear();
    data.loaded_latency = None;
    data.slb_scaling.clear();
    data.slb_policies = vec![("remote".into(), Err("skipped: one node".into()))];
    data.notes = vec![
        Note::new(
            Section::LatencyMatrix,
            "node×node latency: not measured (cannot bind memory to node 1)",
        ),
        Note::new(
            Section::LoadedLatency,
            "loaded latency: not measured (needs at least two CPUs: one chases, the others load)",
        ),
        Note::new(
            Section::Slb,
            "SLB with 1 workers: not measured (not enough free memory on node 0)",
        ),
    ];
    let html = render_html(&data);
    let all = tags(&html);
    for id in CHARTS {
        assert!(chart_tags(&all, id).is_none(), "{id} drawn without data");
    }
    let main = &html[html.find("<main").expect("main")..html.find("</main>").expect("main end")];
    assert_eq!(main.matches("<p class=\"not-measured\">not measured: ").count(), 6);
    assert!(html.contains("not measured: nothing was measured in this run"), "summary says so");
    assert!(html.contains("not measured: node×node latency: not measured (cannot bind memory"));
    assert!(html.contains("not measured: loaded latency: not measured (needs at least two CPUs"));
    assert!(html.contains("not measured: SLB with 1 workers: not measured (not enough free"));
    assert!(html.contains("not measured: no data for this section in this run"));
    assert_balanced(&html);
}

#[test]
fn an_interrupted_run_says_so_in_the_sections_it_missed() {
    let mut data = sample();
    data.loaded_latency = None;
    data.notes = vec![Note::new(
        Section::Run,
        "interrupted with Ctrl-C: the sections after the interruption were not measured",
    )];
    let html = render_html(&data);
    assert!(html.contains("not measured: interrupted with Ctrl-C"));
}

#[test]
fn a_one_node_machine_still_gets_its_one_cell_matrices() {
    let mut data = sample();
    for m in data.latency_matrix.iter_mut() {
        m.cpu_nodes.truncate(1);
        m.memory_nodes.truncate(1);
        m.cells.truncate(1);
        m.cells[0].truncate(1);
    }
    for m in data.bandwidth_matrix.iter_mut() {
        m.cpu_nodes.truncate(1);
        m.memory_nodes.truncate(1);
        m.cells.truncate(1);
        m.cells[0].truncate(1);
    }
    let html = render_html(&data);
    let all = tags(&html);
    for (id, value) in [("chart-latency-matrix", 92.5), ("chart-bandwidth-matrix", 18.4)] {
        let marks = data_marks(&chart_tags(&all, id).expect("1×1 matrix drawn"));
        assert_eq!(mark_values(&marks), [value], "{id}");
    }
    assert!(!html.contains("Remote latency"), "no remote figure without a remote node");
}

#[test]
fn figures_have_three_significant_digits() {
    let (_, html) = page();
    let chart_start = html.find("<svg id=\"chart-latency-matrix\"").expect("chart");
    let chart = &html[chart_start..html[chart_start..].find("</svg>").expect("end") + chart_start];
    for shown in [">92.5 ns<", ">148 ns<", ">151 ns<", ">93.1 ns<", "1.60× local"] {
        assert!(chart.contains(shown), "{shown:?} in the latency heatmap");
    }
    assert!(!chart.contains(">148.04"), "cell text is rounded");
    assert!(chart.contains("data-value=\"148.04\""), "the exact value is in data-value");
}

#[test]
fn one_outlying_p99_does_not_flatten_a_curve() {
    // A VM descheduled during one sample: p99 at 80× the median.
    let mut data = sample();
    for c in data.loaded_latency.iter_mut() {
        c.points[2].latency_ns.p99 = 8000.0;
    }
    data.latency_sweep[3].ns.p99 = 400.0;
    let html = render_html(&data);
    let all = tags(&html);
    for id in ["chart-loaded-latency", "chart-latency-size"] {
        let chart = chart_tags(&all, id).expect("chart");
        let clipped = chart.iter().filter(|t| t.has_class("whisker") && t.has_class("clipped"));
        assert_eq!(clipped.count(), 1, "{id}: the outlier's whisker is cut with an arrowhead");
    }
    let loaded = &html[html.find("<svg id=\"chart-loaded-latency\"").expect("chart")..];
    let loaded = &loaded[..loaded.find("</figure>").expect("figure")];
    assert!(!loaded.contains(">8000<"), "the axis does not stretch to the outlier");
    assert!(loaded.contains(">250<"), "the axis still fits the medians (up to 241 ns)");
    assert!(loaded.contains("arrowhead"), "the caption explains the cut whiskers");
    assert!(loaded.contains("data-p99=\"8000\""), "the outlier is still in the data");
}

/// Every element opened is closed, in order (void elements and `/>` aside).
fn assert_balanced(html: &str) {
    const VOID: [&str; 6] = ["meta", "br", "hr", "img", "input", "link"];
    let mut open: Vec<String> = Vec::new();
    for t in tags(html) {
        if t.closing {
            let top = open.pop();
            assert_eq!(top.as_deref(), Some(t.name.as_str()), "</{}> closes {top:?}", t.name);
        } else if !t.self_closing && !VOID.contains(&t.name.as_str()) {
            open.push(t.name);
        }
    }
    assert!(open.is_empty(), "unclosed: {open:?}");
}

#[test]
fn cpu_scale_draws_a_point_per_step_with_its_busy_cpus() {
    use tamp::procstat::MachineBusy;
    use tamp::scale::{ScaleReport, ScaleStep, ScaleSummary};
    use tamp::Verdict;
    let step = |units: usize, threads: usize, mb_per_s: f64, busy: usize| ScaleStep {
        units,
        threads,
        bytes: 1 << 26,
        wall_s: 0.5,
        mb_per_s,
        ratio: 0.5,
        reader_busy: 0.5,
        workers_busy: 0.9,
        writer_busy: 0.1,
        machine: Some(MachineBusy {
            per_cpu: vec![(0, 0.95), (1, 0.5)],
            machine_share: 0.72,
            cpus_busy: busy,
        }),
        online_cpus: 2,
        verdict: if busy == 2 { Verdict::CpuBound } else { Verdict::Scales },
        verdict_reason: "<why>".into(),
    };
    let (mut data, _) = page();
    let html = render_html(&data);
    assert!(!html.contains("chart-cpu-scale"), "absent when not run");
    data.cpu_scale = Some(ScaleReport {
        codec: "lz4".into(),
        level: Some(1),
        input_bytes: 1 << 26,
        block_size: 256 << 10,
        steps: vec![step(1, 1, 310.5, 1), step(1, 2, 402.25, 2), step(2, 1, 398.0, 2)],
        summary: ScaleSummary {
            single_thread_mb_s: Some(310.5),
            one_unit_best: Some((2, 402.25)),
            one_unit_stops_at: None,
            one_unit_limit: None,
            filled_best: Some((1, 2, 402.25)),
            text: "one thread 310 MB/s".into(),
        },
        interrupted: false,
    });
    let html = render_html(&data);
    let all = tags(&html);
    let marks = data_marks(&chart_tags(&all, "chart-cpu-scale").expect("drawn"));
    assert_eq!(mark_values(&marks), [310.5, 398.0, 402.25]);
    assert!(html.contains(">1/2</text>") && html.contains(">2/2</text>"), "busy CPUs labelled");
    // Room for every label in full: none left out, none shortened.
    assert!(!html.contains("found no free place") && !html.contains("For room"), "{html}");
    assert!(html.contains("one thread 310 MB/s"), "the summary is the caption");
    assert!(html.contains("&lt;why&gt;"), "escaped");
    assert_balanced(&html);
}

/// Issue 20: an interrupted `--scale` drew "not saturated" from one row.
#[test]
fn an_interrupted_bandwidth_scaling_draws_no_conclusion() {
    let mut data = sample();
    if let Some(s) = data.bandwidth_scaling.as_mut() {
        s.steps.truncate(1);
        s.saturated_at = None;
        s.interrupted = true;
    }
    let html = render_html(&data);
    assert!(!html.contains("still grew"), "no growth claim from a partial run");
    assert!(html.contains("Interrupted after 1 thread(s): no conclusion on saturation."));
    assert!(html.contains("interrupted after 1 thread(s): no conclusion"));
}
