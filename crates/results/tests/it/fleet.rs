//! The fleet reader's tables in a real SQLite file: each report's figures recorded once, read
//! back in (host, time) order through a filter, and a store from before them migrated.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use results::{
    FleetFilter, FleetStore, HeadlineFigure, NewRun, ReportFigures, ResultStore, SqliteStore,
    StoreError,
};

fn figure(name: &str, median: f64) -> HeadlineFigure {
    HeadlineFigure {
        area: "Memory".into(),
        name: name.into(),
        metric: format!("mem_latency{{figure={name}}}"),
        unit: "ns".into(),
        median,
        p25: median - 1.0,
        p75: median + 1.0,
        samples: 21,
    }
}

fn facts(kernel: &str) -> BTreeMap<String, String> {
    [("CPU model", "Example CPU"), ("Kernel", kernel), ("THP", "madvise")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn report(uuid: &str, host: &str, day: u32, kernel: &str) -> ReportFigures {
    ReportFigures {
        uuid: uuid.into(),
        host: host.into(),
        recorded_at: format!("2026-11-{day:02}T03:00:00.000Z"),
        version: "0.1.0 (git abc)".into(),
        facts: facts(kernel),
        facts_digest: String::new(),
        figures: vec![
            figure("idle DRAM latency", 100.0 + f64::from(day)),
            figure("L1 latency", 1.2),
        ],
    }
}

fn count(path: &std::path::Path, table: &str) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)).unwrap()
}

fn keys(reports: &[ReportFigures]) -> Vec<(String, String)> {
    reports.iter().map(|r| (r.host.clone(), r.recorded_at[..10].to_string())).collect()
}

#[test]
fn figures_round_trip_once_each_in_host_and_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let mut store = SqliteStore::open(&path).unwrap();
    // Recorded out of order; beta's kernel changes on the 3rd.
    let all = [
        report("u-b2", "beta", 2, "6.1.0"),
        report("u-a1", "alpha", 1, "6.1.0"),
        report("u-b3", "beta", 3, "6.12.1"),
        report("u-a2", "alpha", 2, "6.1.0"),
    ];
    for r in &all {
        assert!(store.record_report_figures(r).unwrap(), "{} is new", r.uuid);
    }
    // Idempotent by UUID: a second record (even with other figures) changes nothing.
    let mut again = all[0].clone();
    again.figures[0].median = 1.0;
    assert!(!store.record_report_figures(&again).unwrap());
    assert_eq!(count(&path, "fleet_reports"), 4);
    assert_eq!(count(&path, "fleet_figures"), 8);
    // Two fact sets (6.1.0 and 6.12.1) and two figure descriptions, each stored once.
    assert_eq!(count(&path, "fleet_facts"), 2);
    assert_eq!(count(&path, "fleet_headlines"), 2);
    // Hosts known from their figures alone (a fleet store filled without whole runs).
    assert_eq!(count(&path, "hosts WHERE name IN ('alpha', 'beta')"), 2);

    let back = store.all_report_figures(&FleetFilter::default()).unwrap();
    assert_eq!(
        keys(&back),
        [
            ("alpha", "2026-11-01"),
            ("alpha", "2026-11-02"),
            ("beta", "2026-11-02"),
            ("beta", "2026-11-03")
        ]
        .map(|(h, d)| (h.to_string(), d.to_string()))
    );
    for r in &back {
        let original = all.iter().find(|o| o.uuid == r.uuid).unwrap();
        let mut expected = original.clone();
        expected.facts_digest = original.digest();
        assert_eq!(r, &expected);
    }
    // The digest tells beta's configuration change.
    assert_eq!(back[0].facts_digest, back[1].facts_digest);
    assert_ne!(back[2].facts_digest, back[3].facts_digest);
    assert_eq!(store.report_figures_of("u-b3").unwrap().unwrap().facts["Kernel"], "6.12.1");
    assert_eq!(store.report_figures_of("none").unwrap(), None);
}

#[test]
fn the_filter_keeps_a_time_window_and_host_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("results.db")).unwrap();
    for (i, host) in ["db-1", "DB-2", "cache-1", "db_x"].iter().enumerate() {
        for day in 1..=4 {
            store
                .record_report_figures(&report(&format!("{i}-{day}"), host, day, "6.1.0"))
                .unwrap();
        }
    }
    let hosts = |filter: &FleetFilter| {
        let mut seen: Vec<String> =
            store.all_report_figures(filter).unwrap().into_iter().map(|r| r.host).collect();
        seen.dedup();
        seen
    };
    let only = |patterns: &[&str]| FleetFilter {
        hosts: patterns.iter().map(|p| p.to_string()).collect(),
        ..FleetFilter::default()
    };
    // Case does not matter; `_` is a character like any other, not a wildcard.
    assert_eq!(hosts(&only(&["db-*"])), ["DB-2", "db-1"]);
    assert_eq!(hosts(&only(&["db?1", "cache*"])), ["cache-1", "db-1"]);
    assert_eq!(hosts(&only(&["db_*"])), ["db_x"]);
    assert!(hosts(&only(&["nothing*"])).is_empty());
    // Since is inclusive, until exclusive; a date stands for its midnight.
    let window = FleetFilter {
        since: Some("2026-11-02".into()),
        until: Some("2026-11-04".into()),
        hosts: vec!["cache-1".into()],
    };
    let days: Vec<String> = store
        .all_report_figures(&window)
        .unwrap()
        .iter()
        .map(|r| r.recorded_at[..10].to_string())
        .collect();
    assert_eq!(days, ["2026-11-02", "2026-11-03"]);
    // The reader may stop early.
    let mut given = 0;
    let n = store
        .report_figures(&FleetFilter::default(), &mut |_| {
            given += 1;
            if given == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!((n, given), (3, 3));
}

#[test]
fn a_figure_without_a_finite_median_is_left_out_and_a_report_without_figures_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("results.db")).unwrap();
    let mut r = report("u1", "alpha", 1, "6.1.0");
    r.figures.insert(0, figure("never measured", f64::NAN));
    store.record_report_figures(&r).unwrap();
    let mut empty = report("u2", "alpha", 2, "6.1.0");
    empty.figures.clear();
    store.record_report_figures(&empty).unwrap();
    let back = store.all_report_figures(&FleetFilter::default()).unwrap();
    let names: Vec<&str> = back[0].figures.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["idle DRAM latency", "L1 latency"]);
    assert!(back[1].figures.is_empty());
    assert_eq!(back[1].facts, facts("6.1.0"));
}

fn report_run() -> NewRun {
    NewRun { command: "report".into(), version: "old".into(), ..NewRun::default() }
}

/// A store as the release before the fleet tables wrote it (schema 4): the same tables
/// without them.
fn as_schema_4(path: &std::path::Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "DROP TABLE fleet_figures; DROP TABLE fleet_headlines; DROP TABLE fleet_reports;
         DROP TABLE fleet_facts; PRAGMA user_version = 4;",
    )
    .unwrap();
}

#[test]
fn a_schema_4_store_migrates_and_lists_its_reports_for_a_backfill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let mut store = SqliteStore::open(&path).unwrap();
    let step = store
        .record(&NewRun { command: "timer".into(), version: "old".into(), ..NewRun::default() })
        .unwrap();
    let first = store.record(&report_run()).unwrap();
    let second = store.record(&report_run()).unwrap();
    drop(store);
    as_schema_4(&path);

    // Read-only, it stays schema 4: nothing to read yet, every report still to compute, and
    // recording says how to bring it up to date.
    let mut old = SqliteStore::open_read_only(&path).unwrap();
    assert_eq!(old.reports_without_figures().unwrap(), [first, second]);
    assert_eq!(old.all_report_figures(&FleetFilter::default()).unwrap(), []);
    let refused = old.record_report_figures(&report("u", "h", 1, "k")).unwrap_err();
    assert!(matches!(refused, StoreError::Open { .. }), "{refused:?}");
    assert!(refused.to_string().contains("open it for recording once"), "{refused}");
    drop(old);

    let mut store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.run(step).unwrap().command, "timer", "old runs still read");
    assert_eq!(store.reports_without_figures().unwrap(), [first, second]);
    let run = store.run(first).unwrap();
    let mut figures = report(&run.uuid, &run.host, 1, "6.1.0");
    figures.recorded_at = run.recorded_at.clone();
    assert!(store.record_report_figures(&figures).unwrap());
    assert_eq!(store.reports_without_figures().unwrap(), [second]);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, results::SCHEMA_VERSION);
    assert_eq!(results::SCHEMA_VERSION, 5);
}

#[test]
fn published_findings_replace_the_previous_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let mut store = SqliteStore::open(&path).unwrap();
    let outlier = |host: &str, ratio: f64| results::PublishedOutlier {
        host: host.into(),
        class: "Example CPU, 1 socket".into(),
        figure: "Idle DRAM latency".into(),
        unit: "ns".into(),
        value: 100.0 * ratio,
        class_median: 100.0,
        ratio,
        min_effect: 0.06,
        verdict: "slower".into(),
    };
    let change = results::PublishedChange {
        host: "db-1".into(),
        figure: "Idle DRAM latency".into(),
        unit: "ns".into(),
        at: "2026-11-09T03:00:00.000Z".into(),
        before: 100.0,
        after: 125.0,
        ratio: 1.25,
        p_value: 0.001,
        config: "Kernel 6.1 → 6.12".into(),
        verdict: "slower".into(),
    };
    let first = results::Findings {
        analysed_at: "2026-11-28T01:00:00Z".into(),
        window: "every report".into(),
        outliers: vec![outlier("db-1", 1.3), outlier("db-2", 1.2)],
        changes: vec![change.clone()],
    };
    store.publish_findings(&first).unwrap();
    assert_eq!((count(&path, "fleet_outliers"), count(&path, "fleet_changes")), (2, 1));
    // The next analysis found one outlier and no change: that is all the tables hold.
    let second = results::Findings {
        analysed_at: "2026-11-29T01:00:00Z".into(),
        outliers: vec![outlier("db-3", 0.7)],
        changes: Vec::new(),
        ..first
    };
    store.publish_findings(&second).unwrap();
    assert_eq!((count(&path, "fleet_outliers"), count(&path, "fleet_changes")), (1, 0));
    let conn = rusqlite::Connection::open(&path).unwrap();
    let (host, at): (String, String) = conn
        .query_row("SELECT host, analysed_at FROM fleet_outliers", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((host.as_str(), at.as_str()), ("db-3", "2026-11-29T01:00:00Z"));
}
