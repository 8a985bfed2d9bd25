//! The analysis on small fleets made by hand: outliers against their class, changes with the
//! facts that changed around them, configuration changes that moved nothing, and the odd
//! fleets a store can hold (one host, one report per host, no figures, values that are not
//! numbers) — each answered, never a panic, and the JSON never holds a NaN.

use std::collections::BTreeMap;

use fleet::analysis::{analyse, Direction, Options};
use fleet::synthetic::made_up_figure;
use results::fleet::ReportFigures;

fn facts(cpu: &str, kernel: &str) -> BTreeMap<String, String> {
    [
        ("CPU model", cpu),
        ("Sockets", "2"),
        ("Cores per socket", "16"),
        ("NUMA nodes", "2"),
        ("Memory", "251.4 GiB (MemTotal)"),
        ("Hypervisor", "none detected (bare metal)"),
        ("Kernel", kernel),
        ("THP", "madvise (defrag madvise)"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// A report: `day` after 2026-02-01, two figures.
fn report(
    host: &str,
    day: usize,
    facts: BTreeMap<String, String>,
    dram: f64,
    bw: f64,
) -> ReportFigures {
    ReportFigures {
        figures: vec![
            made_up_figure("Idle DRAM latency", "ns", dram),
            made_up_figure("Peak bandwidth", "GB/s", bw),
        ],
        ..fleet::synthetic::report_record(
            &format!("{host}-{day}"),
            host,
            &format!("2026-02-{:02}T03:00:00Z", day + 1),
            "0.1.0",
            facts,
        )
    }
}

/// `hosts` hosts of one CPU, 24 daily reports, 1 % noise.
fn fleet(hosts: usize, seed: u64) -> Vec<ReportFigures> {
    let mut rng = measure::rng::SplitMix64::new(seed);
    let mut out = Vec::new();
    for h in 0..hosts {
        for day in 0..24 {
            let dram = 100.0 * (1.0 + 0.01 * measure::stats::normal(&mut rng));
            let bw = 20.0 * (1.0 + 0.01 * measure::stats::normal(&mut rng));
            out.push(report(&format!("db{h:02}"), day, facts("EPYC", "6.1"), dram, bw));
        }
    }
    out
}

fn json_has_no_nan(analysis: &fleet::analysis::Analysis) {
    let text = serde_json::to_string(&analysis.report).expect("serialises");
    assert!(!text.contains("null") && !text.contains("NaN"), "{text}");
}

#[test]
fn a_host_steadily_off_its_class_is_its_outlier_and_no_other_is() {
    let mut reports = fleet(8, 1);
    for r in reports.iter_mut().filter(|r| r.host == "db03") {
        r.figures[0].median *= 1.15;
    }
    let a = analyse(&reports, &Options::default());
    assert_eq!(a.report.outliers.len(), 1, "{:?}", a.report.outliers);
    let o = &a.report.outliers[0];
    assert_eq!(
        (o.host.as_str(), o.figure.as_str(), o.verdict),
        ("db03", "Idle DRAM latency", Direction::Slower)
    );
    assert!((o.ratio - 1.15).abs() < 0.03, "{o:?}");
    // Decided on runs: its five recent reports against the seven other hosts' five each, the
    // ratio's interval beside it.
    assert_eq!(o.rests_on, "5 vs 35 runs");
    assert!(o.p_value < fleet::outliers::ALPHA, "{o:?}");
    let (low, high) = (o.ratio_low.expect("an interval"), o.ratio_high.expect("an interval"));
    assert!(1.1 < low && low < high && high < 1.2, "{o:?}");
    // The minimum effect is the class's own noise (1 % a report: consecutive reports differ by
    // up to a few percent), not a fixed 10 %.
    assert!(o.min_effect > 0.01 && o.min_effect < 0.06, "{o:?}");
    assert!(a.report.changes.is_empty(), "{:?}", a.report.changes);
    json_has_no_nan(&a);
}

#[test]
fn hosts_of_another_class_are_not_compared() {
    let mut reports = fleet(6, 2);
    // Three hosts of a faster CPU: 30 % quicker, but only among themselves.
    for h in 0..3 {
        for day in 0..24 {
            reports.push(report(
                &format!("new{h}"),
                day,
                facts("EPYC 2", "6.1"),
                70.0 + h as f64 * 0.1,
                30.0,
            ));
        }
    }
    let a = analyse(&reports, &Options::default());
    assert_eq!(a.report.classes.len(), 2);
    assert!(a.report.outliers.is_empty(), "{:?}", a.report.outliers);
    let class =
        a.report.classes.iter().find(|c| c.hosts.contains(&"new0".to_string())).expect("class");
    assert_eq!(class.hosts, ["new0", "new1", "new2"]);
    assert_eq!(class.facts["Memory"], "256 GiB");
}

#[test]
fn a_shift_with_a_kernel_change_is_found_with_it_and_a_quiet_update_is_listed_apart() {
    let mut reports = fleet(6, 3);
    for r in reports.iter_mut() {
        let day: usize = r.uuid.rsplit('-').next().and_then(|d| d.parse().ok()).expect("day");
        if r.host == "db01" && day >= 12 {
            r.figures[0].median *= 1.25;
            r.facts.insert("Kernel".into(), "6.12".into());
        }
        if r.host == "db04" && day >= 9 {
            r.facts.insert("THP".into(), "always (defrag madvise)".into());
        }
        if r.host == "db05" && day >= 20 {
            r.version = "0.2.0".into();
        }
    }
    let a = analyse(&reports, &Options::default());
    assert_eq!(a.report.changes.len(), 1, "{:?}", a.report.changes);
    let c = &a.report.changes[0];
    assert_eq!(
        (c.host.as_str(), c.figure.as_str(), c.verdict),
        ("db01", "Idle DRAM latency", Direction::Slower)
    );
    assert_eq!(c.at, "2026-02-13T03:00:00Z");
    assert!((c.ratio - 1.25).abs() < 0.03 && c.p_value <= 0.002, "{c:?}");
    assert_eq!(c.config.len(), 1);
    assert_eq!(
        (c.config[0].fact.as_str(), c.config[0].before.as_str(), c.config[0].after.as_str()),
        ("Kernel", "6.1", "6.12")
    );
    let quiet: Vec<(&str, &str, &str)> = a
        .report
        .config_changes_without_shift
        .iter()
        .map(|q| (q.host.as_str(), q.at.as_str(), q.config[0].fact.as_str()))
        .collect();
    assert_eq!(
        quiet,
        [
            ("db05", "2026-02-21T03:00:00Z", "platscope version"),
            ("db04", "2026-02-10T03:00:00Z", "THP")
        ]
    );
    json_has_no_nan(&a);
}

#[test]
fn odd_fleets_are_answered_with_notes() {
    // One host.
    let one: Vec<ReportFigures> = fleet(1, 4);
    let a = analyse(&one, &Options::default());
    assert_eq!(a.report.hosts, 1);
    assert!(a.report.outliers.is_empty());
    assert!(a.notes.iter().any(|n| n.contains("fewer than 3 hosts")), "{:?}", a.notes);
    json_has_no_nan(&a);
    // One report per host; values that are not numbers; a report without figures.
    let mut single: Vec<ReportFigures> = (0..5)
        .map(|h| report(&format!("h{h}"), 0, facts("EPYC", "6.1"), 100.0 + h as f64, 20.0))
        .collect();
    single[1].figures[0].median = f64::NAN;
    single[2].figures[1].median = f64::INFINITY;
    single[3].figures[0].median = 0.0;
    single[4].figures.clear();
    let a = analyse(&single, &Options::default());
    assert_eq!(a.report.hosts, 5);
    assert!(a.report.changes.is_empty());
    assert!(a.notes.iter().any(|n| n.contains("too few for a change")), "{:?}", a.notes);
    assert!(a.notes.iter().any(|n| n.contains("3 figure values left out")), "{:?}", a.notes);
    assert!(
        a.notes.iter().any(|n| n.contains("no headline figures") && n.contains("h4")),
        "{:?}",
        a.notes
    );
    assert!(a.notes.iter().any(|n| n.contains("calibrate")), "{:?}", a.notes);
    json_has_no_nan(&a);
    // Nothing at all.
    let a = analyse(&[], &Options::default());
    assert_eq!(a.report.hosts, 0);
    json_has_no_nan(&a);
}

#[test]
fn the_same_reports_give_the_same_answer_on_any_number_of_threads() {
    let mut reports = fleet(10, 5);
    for r in reports.iter_mut().filter(|r| r.host == "db07") {
        let day: usize = r.uuid.rsplit('-').next().and_then(|d| d.parse().ok()).expect("day");
        if day >= 8 {
            r.figures[1].median *= 0.8;
        }
    }
    let one = analyse(&reports, &Options { threads: 1, ..Options::default() });
    let four = analyse(&reports, &Options { threads: 4, ..Options::default() });
    assert_eq!(one.report, four.report);
    assert_eq!(one.report.changes.len(), 1);
    // Shuffled input, same answer.
    reports.reverse();
    assert_eq!(analyse(&reports, &Options::default()).report, one.report);
}
