//! The full report's core-to-core and lock-contention sections, read back from the page: one
//! data mark per measured pair (the diagonal blank) and per contention run, with its value;
//! quick reports without the data show neither section; stored reports of earlier versions
//! (which kept the figures in the page's own fields) still load.

use crate::common;

use chart::Area;
use common::*;
use membench::chart as mem;
use membench::slb_shared::LockKind;
use report::html::{render_html, ReportData, SkippedSection};

fn data_values(html: &str, chart: &str) -> Vec<f64> {
    let all = tags(html);
    let start = all
        .iter()
        .position(|t| t.name == "svg" && t.attr("id") == Some(chart))
        .unwrap_or_else(|| panic!("{chart} missing"));
    let mut values: Vec<f64> = all[start..]
        .iter()
        .take_while(|t| !(t.name == "svg" && t.closing))
        .filter(|t| t.has_class("data"))
        .filter_map(|t| t.attr("data-value")?.parse().ok())
        .collect();
    values.sort_by(f64::total_cmp);
    values
}

#[test]
fn full_report_shows_the_c2c_matrix_and_contention() {
    let s = full_sample();
    let html = render_html(&s.page());
    assert!(html.contains("line local") && html.contains("skipped: one node &lt;&amp;&gt;"));
    assert!(html.contains("<td>3.60</td>"), "spin with 2 workers is 180/50 = 3.6 times slower");
    // Every pair appears twice in the symmetric matrix; the diagonal carries no data.
    let r = s.c2c.as_ref().expect("c2c");
    let mut want: Vec<f64> =
        r.pairs.iter().flat_map(|p| [p.round_trip_ns.median, p.round_trip_ns.median]).collect();
    want.sort_by(f64::total_cmp);
    assert_eq!(data_values(&html, "chart-c2c"), want);
    assert_eq!(html.matches("class=\"cell blank\"").count(), 4, "the diagonal is blank");
    assert!(html.contains("same L3"), "class table");
    assert!(html.contains("bound to node 1"), "the line's home is said");
    assert_eq!(data_values(&html, "chart-contention"), [50.0, 180.0, 220.0]);
    assert!(html.contains("Jain"));
    // Both under the contention heading, after the memory sections.
    let head = html.find("<div class=\"area-head\" id=\"area-contention\">").expect("heading");
    assert!(html.find("<section id=\"sec-slb-policies\"").is_some_and(|at| at < head));
    for id in ["sec-c2c", "sec-contention"] {
        assert!(html.find(&format!("<section id=\"{id}\"")).is_some_and(|at| at > head), "{id}");
    }
}

#[test]
fn quick_reports_have_no_c2c_sections_and_old_reports_load() {
    let quick = sample();
    let html = render_html(&quick.page());
    assert!(!html.contains("chart-c2c") && !html.contains("chart-contention"));
    assert!(!html.contains("area-contention"), "no contention heading either");
    let mut full = sample();
    full.data.mode = "full".into();
    let html = render_html(&full.page());
    assert!(!html.contains("id=\"sec-c2c\""), "contention not chosen (--sections): no section");
    // A report whose core-to-core step could not run says so in its place.
    full.data.skipped.push(SkippedSection {
        area: Area::Contention,
        id: mem::C2C.id.into(),
        title: mem::C2C.title.into(),
        why: "core to core: not measured (one CPU)".into(),
    });
    let html = render_html(&full.page());
    assert!(
        html.contains("id=\"sec-c2c\""),
        "a report that tried says the section was not measured"
    );
    assert!(html.contains("not measured: core to core: not measured (one CPU)"));
    assert!(html.contains("id=\"area-contention\""), "under its area's heading");
    // A report stored by an earlier version: its figures in the page's own fields (read and
    // ignored: its stored steps draw the sections), no skipped steps, no comparison.
    let data = quick.data.clone();
    let mut json = serde_json::to_value(&data).expect("json");
    let object = json.as_object_mut().expect("object");
    object.remove("skipped");
    object.remove("comparison");
    let old = |v: Result<serde_json::Value, serde_json::Error>| v.expect("json");
    object.insert("latency_sweep".into(), old(serde_json::to_value(&quick.latency_sweep)));
    object.insert("sweep_cpu".into(), 0.into());
    object.insert("prefetch_check".into(), old(serde_json::to_value(quick.prefetch_check)));
    object.insert("latency_matrix".into(), old(serde_json::to_value(&quick.latency_matrix)));
    object.insert("bandwidth_matrix".into(), old(serde_json::to_value(&quick.bandwidth_matrix)));
    object.insert("bandwidth_scaling".into(), old(serde_json::to_value(&quick.bandwidth_scaling)));
    object.insert("copy_bandwidth".into(), old(serde_json::to_value(&quick.copy_bandwidth)));
    object.insert("loaded_latency".into(), old(serde_json::to_value(&quick.loaded_latency)));
    object.insert("slb_scaling".into(), old(serde_json::to_value(&quick.slb_scaling)));
    object.insert("slb_policies".into(), old(serde_json::to_value(&quick.slb_policies)));
    object.insert("c2c".into(), serde_json::Value::Null);
    object.insert("contention".into(), serde_json::Value::Array(Vec::new()));
    object.insert("lock_placement".into(), serde_json::Value::Array(Vec::new()));
    object.insert("cpu_scale".into(), serde_json::Value::Null);
    let back: ReportData = serde_json::from_value(json).expect("old report loads");
    assert_eq!(back, data, "the page's own facts read back; the old figures are ignored");
    assert!(back.parts.is_empty() && back.skipped.is_empty() && back.comparison.is_none());
}

#[test]
fn a_lock_far_slower_than_the_others_gets_a_log_scale() {
    let mut s = sample();
    s.data.mode = "full".into();
    s.contention =
        vec![contention(LockKind::Spin, 1, 20.0), contention(LockKind::Ticket, 2, 50_000.0)];
    let html = render_html(&s.page());
    assert_eq!(data_values(&html, "chart-contention"), [20.0, 50_000.0]);
    assert!(html.contains("median of workers, log scale"));
    s.contention.truncate(1);
    assert!(!render_html(&s.page()).contains("median of workers, log scale"));
}
