//! The HTML report, read back from its text: every chart carries one mark per measured figure
//! with the figure's exact value, the page is self-contained and escaped, its areas each have
//! one heading the contents bar links to, and sections without data say so.
//! (tests/it/browser.rs checks the same page as Chromium renders it.)

use crate::common;

use chart::svg::esc;
use chart::Area;
use common::*;
use experiment::Outcome as _;
use membench::bandwidth::Scaling;
use membench::chart as mem;
use membench::experiments::bandwidth::{BandwidthOutcome, BandwidthScale};
use membench::experiments::latency::{LatencyOutcome, LatencySweep};
use report::html::{area_anchor, render_html, Note, ReportData, Section, SkippedSection};

/// The sample, its page (with the sections its outcomes draw) and the page's HTML.
fn page() -> (Sample, ReportData, String) {
    let sample = sample();
    let data = sample.page();
    let html = render_html(&data);
    (sample, data, html)
}

#[test]
fn every_chart_has_one_mark_per_measured_value() {
    let (sample, _, html) = page();
    let all = tags(&html);
    let counts = [
        ("chart-latency-size", 10),
        ("chart-latency-matrix", 4),
        ("chart-bandwidth-matrix", 4),
        ("chart-bandwidth-threads", 4),
        ("chart-loaded-latency", 5),
        // The SLB by worker count and by placement are two charts now, each its own step's.
        ("chart-slb", 1 + 2 + 4),
        ("chart-slb-policies", 4 + 4),
    ];
    assert_eq!(counts.map(|(id, _)| id), CHARTS, "every chart counted");
    for (id, count) in counts {
        let chart = chart_tags(&all, id).unwrap_or_else(|| panic!("no <svg id={id}>"));
        let marks = data_marks(&chart);
        assert_eq!(marks.len(), count, "{id}: data marks");
        assert_eq!(mark_values(&marks), expected(&sample, id), "{id}: data-value of each mark");
        assert!(
            marks.iter().all(|m| ["circle", "rect", "path"].contains(&m.name.as_str())),
            "{id}: data marks are circles, rects or paths"
        );
        assert_eq!(html.matches(&format!("id=\"{id}\"")).count(), 1, "{id} appears once");
    }
    // The copy kernels are a table: a cell per kernel with its aggregate.
    let kernels = section(&html, "sec-bandwidth-kernels").expect("the copy kernels' section");
    let marks = data_marks(&tags(kernels));
    assert_eq!(marks.len(), 2, "copy and copy-nt");
    assert!(marks.iter().all(|m| m.name == "td"), "table cells");
    assert_eq!(mark_values(&marks), expected(&sample, "chart-bandwidth-kernels"));
    assert_eq!(html.matches("id=\"sec-bandwidth-kernels\"").count(), 1);
}

#[test]
fn the_expected_values_are_the_fixture_inputs() {
    // Guards the helper the other tests compare with: it reads the same numbers we put in.
    let data = sample();
    let sorted = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v
    };
    assert_eq!(
        expected(&data, "chart-latency-size"),
        sorted(SWEEP.iter().map(|(_, ns)| *ns).collect())
    );
    assert_eq!(
        expected(&data, "chart-loaded-latency"),
        sorted(LOADED.iter().map(|p| p.2).collect())
    );
    assert_eq!(expected(&data, "chart-bandwidth-threads"), SCALING.to_vec());
    assert_eq!(expected(&data, "chart-bandwidth-kernels"), [14.5, 19.5]);
    assert_eq!(
        expected(&data, "chart-slb"),
        sorted(SLB_SCALING.iter().flat_map(|ns| ns.iter().copied()).collect())
    );
    assert_eq!(
        expected(&data, "chart-slb-policies"),
        sorted(SLB_LOCAL.iter().chain(&SLB_INTERLEAVE).copied().collect())
    );
}

#[test]
fn every_chart_has_a_title_axes_and_a_caption_with_the_spread() {
    let (_, _, html) = page();
    let all = tags(&html);
    for id in CHARTS {
        let chart = chart_tags(&all, id).expect("chart");
        assert_eq!(chart.first().map(|t| t.name.as_str()), Some("title"), "{id}: <title> first");
        let start = html.find(&format!("<svg id=\"{id}\"")).expect("svg");
        let figure_end = html[start..].find("</figure>").expect("figure") + start;
        let caption = &html[start..figure_end];
        assert!(caption.contains("<figcaption>"), "{id}: figcaption");
        assert!(caption.contains("p99") || caption.contains("best"), "{id}: the spread");
        if !id.starts_with("chart-slb") {
            // SLB bars are whole-run ns per store; the others are medians of samples.
            assert!(caption.contains("median of"), "{id}: what the mark is a median of");
        }
    }
    // Axes with ticks and units on the x/y charts; row and column labels on the heatmaps.
    for id in [
        "chart-latency-size",
        "chart-bandwidth-threads",
        "chart-loaded-latency",
        "chart-slb",
        "chart-slb-policies",
    ] {
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
    let (_, _, html) = page();
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
    let (_, _, html) = page();
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
    let (_, _, html) = page();
    assert!(!html.contains(NASTY_MODEL), "raw CPU model in the page");
    assert!(html.contains("Xeon &lt;Test&gt; &amp; &quot;Co&quot; &#39;quoted&#39;"));
    assert!(!html.contains("<script"), "the note's script tag must be text");
    assert!(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more"));
    assert!(html.contains("only node with memory &lt;&amp;&gt;"));
    assert_balanced(&html);
}

#[test]
fn page_is_self_contained() {
    let (_, _, html) = page();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for banned in ["<script", "http://", "https://", "src=", "@import", "<link", "<img"] {
        assert!(!html.contains(banned), "{banned:?} in a page that must open offline");
    }
    // Links only within the page (the contents bar), each to an element that is there.
    let all = tags(&html);
    let hrefs: Vec<&str> = all.iter().filter_map(|t| t.attr("href")).collect();
    assert!(!hrefs.is_empty(), "the contents bar links to the areas");
    for href in hrefs {
        let id = href.strip_prefix('#').unwrap_or_else(|| panic!("link out of the page: {href}"));
        assert_eq!(all.iter().filter(|t| t.attr("id") == Some(id)).count(), 1, "{href} resolves");
    }
    assert_eq!(html.matches("href=").count(), html.matches("href=\"#").count());
    // url() only as a reference inside the page (gradient fills).
    for (i, _) in html.match_indices("url(") {
        assert!(html[i..].starts_with("url(#"), "external url(): {}", &html[i..i + 40]);
    }
    assert!(html.contains("Content-Security-Policy"), "the page forbids loads it does not need");
}

#[test]
fn header_summary_and_footer_say_what_was_run_where() {
    let (_, data, html) = page();
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
    let summary_start = html.find("<section class=\"summary\" id=\"headlines\">").expect("summary");
    let charts_start = html.find("<main").expect("charts");
    assert!(summary_start < charts_start, "summary before the charts");
    // The cards: each section's first headline figure as its step's part gave it, with how
    // each was measured.
    let shown = cards(&html);
    assert_eq!(shown, expected_cards(&data), "the cards are the parts' first headlines");
    let labels: Vec<&str> = shown.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "L1 latency",
            "Idle DRAM latency",
            "Remote bandwidth (worst)",
            "Peak bandwidth",
            "Copy bandwidth",
            "Latency at max load",
            "SLB",
            "SLB local"
        ]
    );
    assert_eq!(shown[0].figure, "1.21 ns · 3.75 cycles");
    assert_eq!(shown[1].figure, "92.5 ns");
    // The sweep's other figures are under the memory heading.
    let under = area_figures(&html, chart::Area::Memory).expect("memory heading");
    assert!(
        under.contains(&("Latency at 512 MiB".into(), "98.2 ns".into())),
        "98.25 ns to three digits"
    );
    assert!(under.contains(&("Prefetch check".into(), "not prefetched".into())));
    // The headline figures: each from its step's part, with its words, and on the page — on a
    // card, or (past an area's first three) under its area's heading.
    let headlines = data.headlines();
    for (name, value, words) in [
        ("Idle DRAM latency", "92.5 ns", &["node 0 to its own memory"][..]),
        ("L1 latency", "1.21 ns · 3.75 cycles", &[][..]),
        ("Peak bandwidth", "21.6 GB/s", &[][..]),
        ("Saturation point", "3 thread(s)", &[][..]),
        // The better of the two copies, named, with the other beside it.
        ("Copy bandwidth", "19.5 GB/s", &["copy-nt (avx2), 4 thread(s)", "copy gave 14.5 GB/s"]),
        ("Latency at max load", "241 ns", &["98.4 ns idle"]),
        (
            "Remote latency (worst)",
            "151 ns",
            &["node 1 to node 0's memory: 1.62× node 1's local 93.1 ns"],
        ),
    ] {
        let (area, h) = headlines
            .iter()
            .find(|(_, h)| h.name == name)
            .unwrap_or_else(|| panic!("headline {name:?} missing"));
        assert_eq!(h.value, value, "{name}");
        for w in words {
            assert!(h.detail.contains(w), "{name}: {w:?} not in {:?}", h.detail);
        }
        let under_heading = area_figures(&html, *area).expect("the area's heading");
        assert!(
            under_heading.contains(&(name.to_string(), value.to_string())),
            "{name} {value} under the {} heading: {under_heading:?}",
            area.title()
        );
        if let Some(card) = shown.iter().find(|c| c.label == name) {
            assert_eq!((card.figure.as_str(), card.how.as_str()), (value, h.detail.as_str()));
        }
    }
    let footer = &html[html.find("<footer").expect("footer")..];
    assert!(footer.contains("/home/dba/.local/share/platscope/results.sqlite"));
    for id in 41..=47 {
        assert!(footer.contains(&format!("<td class=\"num\">{id}</td>")), "run {id} listed");
    }
    assert!(footer.contains("prefetch self-check: &lt;script&gt;"), "notes listed");
    // Order: header, contents, summary, the machine, the memory heading, charts in the order
    // of the brief (the copy kernels' table after the thread scaling), notes, runs.
    let mut charts: Vec<String> = CHARTS.iter().map(|id| format!("<svg id=\"{id}\"")).collect();
    charts.insert(4, "<section id=\"sec-bandwidth-kernels\"".to_string());
    let order: Vec<usize> = [
        "<header",
        "<nav class=\"contents\"",
        "<section class=\"summary\" id=\"headlines\">",
        "<div class=\"area-head\" id=\"area-machine\">",
        "<section id=\"sec-machine\"",
        "<div class=\"area-head\" id=\"area-memory\">",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(charts)
    .chain(["<h2>Notes</h2>".to_string(), "<h2>Stored runs</h2>".to_string()])
    .map(|s| html.find(&s).unwrap_or_else(|| panic!("{s} missing")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "sections out of order: {order:?}");
}

#[test]
fn skipped_policies_are_listed_with_their_reason() {
    let (_, data, html) = page();
    let policies = section(&html, "sec-slb-policies").expect("the placements' section");
    let after_chart = &policies[policies.find("</svg>").expect("chart")..];
    assert!(after_chart.contains("Policies not run:"));
    assert!(after_chart
        .contains("<li><b>remote</b>: every worker&#39;s node is the only node with memory &lt;&amp;&gt;</li>"));
    assert!(!section(&html, "sec-slb").expect("scaling").contains("Policies not run:"));
    let all = tags(&html);
    let groups = |id: &str| -> Vec<String> {
        let chart = chart_tags(&all, id).expect("chart");
        let mut groups: Vec<String> =
            chart.iter().filter_map(|t| t.attr("data-group")).map(str::to_string).collect();
        groups.dedup();
        groups
    };
    assert_eq!(groups("chart-slb"), ["1 worker", "2 workers", "4 workers"], "bars by workers");
    // No bars for a skipped policy.
    assert_eq!(groups("chart-slb-policies"), ["local", "interleave"], "bars by placement");
    // The skipped policy's headline says it did not run, and why.
    let (_, remote) =
        data.headlines().into_iter().find(|(_, h)| h.name == "SLB remote").expect("headline");
    assert_eq!(remote.value, "not run");
    assert!(remote.detail.contains("only node with memory <&>"), "{}", remote.detail);
}

#[test]
fn sections_without_data_say_not_measured_and_why() {
    // No memory step drew anything: two ran and were stopped before their first figure, the
    // others could not run here (each a skipped step with its reason).
    let mut sample = sample();
    sample.latency_sweep.clear();
    sample.prefetch_check = None;
    sample.latency_matrix = None;
    sample.bandwidth_matrix = None;
    sample.bandwidth_scaling = None;
    sample.copy_bandwidth.clear();
    sample.loaded_latency = None;
    sample.slb_scaling.clear();
    sample.slb_policies.clear();
    let mut data = sample.page();
    assert!(data.parts.is_empty(), "no step drew a section");
    let t = data.topology.clone();
    let sweep = LatencySweep {
        points: Vec::new(),
        prefetch_check: None,
        interrupted: false,
        caches: Vec::new(),
    };
    data.parts.extend(LatencyOutcome::Sweep(sweep).parts(&t));
    let scaling =
        Scaling { steps: Vec::new(), saturated_at: None, interrupted: false, size_checks: vec![] };
    let scale = BandwidthScale { scaling, peak: None, interrupted: false };
    data.parts.extend(BandwidthOutcome::Scale(scale).parts(&t));
    let skip = |s: mem::Section, why: &str| SkippedSection {
        area: s.area,
        id: s.id.to_string(),
        title: s.title.to_string(),
        why: why.to_string(),
    };
    data.skipped = vec![
        skip(mem::LATENCY_MATRIX, "node×node latency: cannot bind memory to node 1"),
        skip(mem::BANDWIDTH_MATRIX, "node×node bandwidth: cannot bind memory to node 1"),
        skip(
            mem::BANDWIDTH_KERNELS,
            "copy bandwidth, ordinary and non-temporal stores: no <&> memory",
        ),
        skip(
            mem::LOADED_LATENCY,
            "loaded latency: needs at least two CPUs: one chases, the others load",
        ),
        skip(mem::SLB, "SLB by worker count: not enough free memory on node 0"),
        skip(
            mem::SLB_POLICIES,
            "SLB under local, interleaved and remote memory: not enough free memory on node 0",
        ),
    ];
    // A section that drew nothing says why from its own notes, else the run's, else plainly.
    data.notes = vec![Note::new(
        Section::of(mem::BANDWIDTH_THREADS),
        "bandwidth by thread count: stopped before the first thread count",
    )];
    let html = render_html(&data);
    let all = tags(&html);
    for id in CHARTS {
        assert!(chart_tags(&all, id).is_none(), "{id} drawn without data");
    }
    let main = &html[html.find("<main").expect("main")..html.find("</main>").expect("main end")];
    assert_eq!(main.matches("<p class=\"not-measured\">not measured: ").count(), 8);
    assert!(html.contains("not measured: nothing was measured in this run"), "summary says so");
    let says = |id: &str, why: &str| {
        let sec = section(&html, id).unwrap_or_else(|| panic!("{id}: no section"));
        assert!(sec.contains(&format!("not measured: {why}")), "{id} says why: {sec}");
        assert_eq!(html.matches(&format!("<section id=\"{id}\"")).count(), 1, "{id} once");
    };
    says("sec-latency-size", "no data for this section in this run");
    says("sec-bandwidth-threads", "bandwidth by thread count: stopped before the first");
    says("sec-latency-matrix", "node×node latency: cannot bind memory to node 1");
    says("sec-bandwidth-matrix", "node×node bandwidth: cannot bind memory to node 1");
    says(
        "sec-bandwidth-kernels",
        "copy bandwidth, ordinary and non-temporal stores: no &lt;&amp;&gt; memory",
    );
    says("sec-loaded-latency", "loaded latency: needs at least two CPUs: one chases, the others");
    says("sec-slb", "SLB by worker count: not enough free memory on node 0");
    says("sec-slb-policies", "SLB under local, interleaved and remote memory: not enough free");
    // All of them under the memory heading, which has no figures to show.
    assert_eq!(area_figures(&html, Area::Memory), Some(Vec::new()));
    let memory_head = html.find("id=\"area-memory\"").expect("memory heading");
    assert!(html.find("<section id=\"sec-latency-size\"").is_some_and(|at| at > memory_head));
    assert!(html.contains("<a href=\"#area-memory\">Memory</a>"), "in the contents bar");
    assert_balanced(&html);
}

#[test]
fn an_interrupted_run_says_so_in_the_sections_it_missed() {
    // Ctrl-C during the loaded-latency step, before its first point: the steps after it did
    // not run and draw nothing.
    let mut sample = sample();
    for c in sample.loaded_latency.iter_mut() {
        c.points.clear();
        c.interrupted = true;
    }
    sample.slb_scaling.clear();
    sample.slb_policies.clear();
    sample.data.notes = vec![Note::new(
        Section::Run,
        "interrupted with Ctrl-C: the sections after the interruption were not measured",
    )];
    let html = render_html(&sample.page());
    let loaded = section(&html, "sec-loaded-latency").expect("the interrupted step's section");
    assert!(loaded.contains("not measured: interrupted with Ctrl-C"), "{loaded}");
    assert!(section(&html, "sec-slb").is_none() && section(&html, "sec-slb-policies").is_none());
    let footer = &html[html.find("<footer").expect("footer")..];
    assert!(footer.contains("interrupted with Ctrl-C: the sections after the interruption"));
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
    let page = data.page();
    let html = render_html(&page);
    let all = tags(&html);
    for (id, value) in [("chart-latency-matrix", 92.5), ("chart-bandwidth-matrix", 18.4)] {
        let marks = data_marks(&chart_tags(&all, id).expect("1×1 matrix drawn"));
        assert_eq!(mark_values(&marks), [value], "{id}");
    }
    assert!(!html.contains("Remote latency"), "no remote figure without a remote node");
    assert!(!html.contains("Remote bandwidth"), "no remote figure without a remote node");
    let names: Vec<String> = page.headlines().into_iter().map(|(_, h)| h.name).collect();
    assert!(names.iter().all(|n| !n.starts_with("Remote")), "{names:?}");
    assert!(names.iter().any(|n| n == "Idle DRAM latency"), "the one cell is the local one");
}

#[test]
fn figures_have_three_significant_digits() {
    let (_, _, html) = page();
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
    let html = render_html(&data.page());
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
    let (mut sample, _, html) = page();
    assert!(!html.contains("chart-cpu-scale"), "absent when not run");
    assert!(!html.contains("area-cpu"), "no CPU heading when nothing of it ran");
    sample.cpu_scale = Some(cpu_scale(&[(1, 1, 310.5, 1), (1, 2, 402.25, 2), (2, 1, 398.0, 2)]));
    let html = render_html(&sample.page());
    let all = tags(&html);
    let marks = data_marks(&chart_tags(&all, "chart-cpu-scale").expect("drawn"));
    assert_eq!(mark_values(&marks), [310.5, 398.0, 402.25]);
    assert!(html.contains(">1/2</text>") && html.contains(">2/2</text>"), "busy CPUs labelled");
    // Room for every label in full: none left out, none shortened.
    assert!(!html.contains("found no free place") && !html.contains("For room"), "{html}");
    assert!(html.contains("one thread 310 MB/s"), "the summary is the caption");
    assert!(html.contains("&lt;why&gt;"), "escaped");
    let cpu_head = html.find("<div class=\"area-head\" id=\"area-cpu\">").expect("CPU heading");
    assert!(html.find("<svg id=\"chart-cpu-scale\"").is_some_and(|at| at > cpu_head));
    assert_balanced(&html);
}

/// An interrupted `--scale` used to draw "not saturated" from one row.
#[test]
fn an_interrupted_bandwidth_scaling_draws_no_conclusion() {
    let mut sample = sample();
    if let Some(s) = sample.bandwidth_scaling.as_mut() {
        s.steps.truncate(1);
        s.saturated_at = None;
        s.interrupted = true;
    }
    let data = sample.page();
    let html = render_html(&data);
    let no_growth_claim = |text: &str| !text.contains("still grew") && !text.contains("still grow");
    assert!(no_growth_claim(&html), "no growth claim from a partial run");
    assert!(html.contains("Interrupted after 1 thread(s): no conclusion on saturation."));
    // The headline figure says it is unknown, and why; under the memory heading.
    let headlines = data.headlines();
    assert!(headlines.iter().all(|(_, h)| no_growth_claim(&h.detail)), "{headlines:?}");
    let (area, saturation) =
        headlines.iter().find(|(_, h)| h.name == "Saturation point").expect("headline");
    assert_eq!(saturation.value, "unknown");
    assert!(
        saturation.detail.contains("interrupted after 1 thread(s)")
            && saturation.detail.contains("no conclusion"),
        "{}",
        saturation.detail
    );
    let under_heading = area_figures(&html, *area).expect("memory heading");
    assert!(under_heading.contains(&("Saturation point".into(), "unknown".into())));
    // On a page of that step alone, its heading says so, with the reason.
    let mut alone = data.clone();
    alone.parts.retain(|p| p.id == mem::BANDWIDTH_THREADS.id);
    let html = render_html(&alone);
    let under_heading = area_figures(&html, *area).expect("memory heading");
    assert!(under_heading.contains(&("Saturation point".into(), "unknown".into())));
    let heading = between(&html, "<div class=\"area-head\" id=\"area-memory\">", "</div>");
    let heading = heading.expect("memory heading");
    assert!(
        heading.contains("interrupted after 1 thread(s)") && heading.contains("no conclusion"),
        "{heading}"
    );
    assert!(no_growth_claim(&html));
}

/// The page's structure: one heading per area that ran, in area order, each over its own
/// sections with its headline figures; the contents bar links to each, and every link lands.
#[test]
fn every_area_has_one_heading_and_the_contents_bar_links_to_each() {
    let data = full_sample().page();
    let html = render_html(&data);
    let areas = [Area::Machine, Area::Memory, Area::Contention, Area::Cpu];
    let heads: Vec<usize> = areas
        .iter()
        .map(|&a| {
            let head = format!(
                "<div class=\"area-head\" id=\"{}\"><h2>{}</h2>",
                area_anchor(a),
                a.title()
            );
            assert_eq!(html.matches(&head).count(), 1, "{} heading once", a.title());
            html.find(&head).expect("heading")
        })
        .collect();
    assert!(heads.windows(2).all(|w| w[0] < w[1]), "headings in area order: {heads:?}");
    assert_eq!(html.matches("class=\"area-head\"").count(), areas.len(), "no other heading");
    for (id, area) in [
        ("sec-machine", 0),
        ("sec-latency-size", 1),
        ("sec-bandwidth-kernels", 1),
        ("sec-slb-policies", 1),
        ("sec-c2c", 2),
        ("sec-contention", 2),
        ("sec-cpu-scale", 3),
    ] {
        let at = html.find(&format!("<section id=\"{id}\"")).expect("section");
        assert!(
            at > heads[area] && heads.get(area + 1).is_none_or(|&next| at < next),
            "{id} under the {} heading",
            areas[area].title()
        );
    }
    // Each heading lists every headline figure of its area, in page order.
    let headlines = data.headlines();
    for area in areas {
        let want: Vec<(String, String)> = headlines
            .iter()
            .filter(|(a, _)| *a == area)
            .map(|(_, h)| (h.name.clone(), h.value.clone()))
            .collect();
        assert_eq!(area_figures(&html, area), Some(want), "{} figures", area.title());
    }
    // The contents bar: after the header, before the cards; a link to each area and each link
    // lands on one element of the page.
    let nav_at = html.find("<nav class=\"contents\"").expect("contents bar");
    assert!(html.find("</header>").is_some_and(|h| h < nav_at));
    assert!(html.find("id=\"headlines\"").is_some_and(|c| nav_at < c));
    let nav = between(&html[nav_at..], "", "</nav>").expect("nav end");
    let all = tags(&html);
    let links: Vec<String> =
        tags(nav).iter().filter_map(|t| t.attr("href").map(str::to_string)).collect();
    assert_eq!(
        links,
        ["#headlines", "#area-machine", "#area-memory", "#area-contention", "#area-cpu", "#notes"]
    );
    for link in &links {
        let id = &link[1..];
        let targets = all.iter().filter(|t| t.attr("id") == Some(id)).count();
        assert_eq!(targets, 1, "{link} lands on one element");
    }
    // The cards: every section's first figure, each shown under its heading too.
    let shown = cards(&html);
    assert_eq!(shown, expected_cards(&data));
    let labels: Vec<&str> = shown.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels[..5],
        [
            "L1 latency",
            "Idle DRAM latency",
            "Remote bandwidth (worst)",
            "Peak bandwidth",
            "Copy bandwidth"
        ],
        "memory's sections"
    );
    assert!(labels.iter().any(|l| l.starts_with("Core to core")), "contention's: {labels:?}");
    assert!(labels.contains(&"Spinlock"), "contention's: {labels:?}");
    for card in &shown {
        assert!(html.contains(&format!("<b>{}</b>", esc(&card.figure))), "{card:?} figure");
    }
    assert_balanced(&html);
}
