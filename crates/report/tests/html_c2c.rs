//! The full report's core-to-core and lock-contention sections, read back from the page: one
//! data mark per measured pair (the diagonal blank) and per contention run, with its value;
//! quick reports without the data show neither section; stored reports without the fields
//! still load.

mod common;

use common::*;
use measure::summary::summarize;
use membench::c2c::{fold_classes, fold_nodes, pair_class, C2cMode, C2cPair, C2cResult};
use membench::slb_shared::{
    fairness, LockKind, SharedSlbPlan, SharedSlbResult, SharedWorkerResult,
};
use place::MemPolicy;
use report::html::{render_html, ReportData};

fn c2c(data: &ReportData) -> C2cResult {
    let t = &data.topology;
    let mut pairs = Vec::new();
    for a in 0..4u32 {
        for b in a + 1..4 {
            let ns = 100.0 + 10.0 * f64::from(a) + f64::from(b);
            let round_trip_ns = summarize(&[ns * 0.99, ns, ns * 1.3]).expect("samples");
            pairs.push(C2cPair {
                a,
                b,
                class: pair_class(t, a, b),
                round_trip_ns,
                batch_rounds: 900,
                lines: Vec::new(),
                line_spread: None,
            });
        }
    }
    C2cResult {
        mode: C2cMode::Read,
        cpus: vec![0, 1, 2, 3],
        line_on: Some(1),
        line: on_node(1, 4096),
        classes: fold_classes(&pairs),
        nodes: fold_nodes(&pairs, t),
        pairs,
        interrupted: false,
    }
}

fn contention(lock: LockKind, workers: usize, ns: f64) -> SharedSlbResult {
    let w: Vec<SharedWorkerResult> = (0..workers)
        .map(|i| SharedWorkerResult {
            worker: i,
            cpu: Some(i as u32),
            ops: 1000,
            planned_ops: 1000,
            elapsed_ns: (ns * 1000.0) as u64,
            batches: None,
            handoffs: 10,
            contended_ops: 500 + 100 * i as u64,
        })
        .collect();
    let counts: Vec<u64> = w.iter().map(|w| w.contended_ops).collect();
    SharedSlbResult {
        plan: SharedSlbPlan {
            pages: 16,
            loops: 10,
            counters: 1,
            lock,
            cpus: (0..workers as u32).map(Some).collect(),
            policy: MemPolicy::Inherit,
            seed: 1,
        },
        ops_total: 1000 * workers as u64,
        counters_total: 1000 * workers as u64,
        workers: w,
        region: on_node(0, 20 * 4096),
        wall_ns: 1_000_000,
        fairness: fairness(&counts),
        interrupted: false,
    }
}

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
    let mut data = sample();
    data.mode = "full".into();
    let r = c2c(&data);
    data.c2c = Some(r.clone());
    data.contention = vec![
        contention(LockKind::Spin, 1, 50.0),
        contention(LockKind::Spin, 2, 180.0),
        contention(LockKind::Ticket, 2, 220.0),
    ];
    data.lock_placement = vec![
        ("line local".into(), Ok(contention(LockKind::Spin, 2, 190.0))),
        ("line remote".into(), Err("skipped: one node <&>".into())),
    ];
    let html = render_html(&data);
    assert!(html.contains("line local") && html.contains("skipped: one node &lt;&amp;&gt;"));
    assert!(html.contains("<td>3.60</td>"), "spin with 2 workers is 180/50 = 3.6 times slower");
    // Every pair appears twice in the symmetric matrix; the diagonal carries no data.
    let mut want: Vec<f64> =
        r.pairs.iter().flat_map(|p| [p.round_trip_ns.median, p.round_trip_ns.median]).collect();
    want.sort_by(f64::total_cmp);
    assert_eq!(data_values(&html, "chart-c2c"), want);
    assert_eq!(html.matches("class=\"cell blank\"").count(), 4, "the diagonal is blank");
    assert!(html.contains("same L3"), "class table");
    assert!(html.contains("bound to node 1"), "the line's home is said");
    assert_eq!(data_values(&html, "chart-contention"), [50.0, 180.0, 220.0]);
    assert!(html.contains("Jain"));
}

#[test]
fn quick_reports_have_no_c2c_sections_and_old_reports_load() {
    let data = sample();
    let html = render_html(&data);
    assert!(!html.contains("chart-c2c") && !html.contains("chart-contention"));
    let mut full = sample();
    full.mode = "full".into();
    let html = render_html(&full);
    assert!(!html.contains("id=\"sec-c2c\""), "contention not chosen (--sections): no section");
    full.notes.push(report::html::Note::new(
        report::html::Section::C2c,
        "core to core: not measured (one CPU)",
    ));
    let html = render_html(&full);
    assert!(
        html.contains("id=\"sec-c2c\""),
        "a report that tried says the section was not measured"
    );
    assert!(html.contains("core to core: not measured (one CPU)"));
    // A report stored before these fields existed.
    let mut json = serde_json::to_value(&data).expect("json");
    let object = json.as_object_mut().expect("object");
    object.remove("c2c");
    object.remove("contention");
    object.remove("lock_placement");
    let back: ReportData = serde_json::from_value(json).expect("old report loads");
    assert!(back.c2c.is_none() && back.contention.is_empty());
}

#[test]
fn a_lock_far_slower_than_the_others_gets_a_log_scale() {
    let mut data = sample();
    data.mode = "full".into();
    data.contention =
        vec![contention(LockKind::Spin, 1, 20.0), contention(LockKind::Ticket, 2, 50_000.0)];
    let html = render_html(&data);
    assert_eq!(data_values(&html, "chart-contention"), [20.0, 50_000.0]);
    assert!(html.contains("median of workers, log scale"));
    data.contention.truncate(1);
    assert!(!render_html(&data).contains("median of workers, log scale"));
}
