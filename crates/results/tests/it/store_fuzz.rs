//! Fuzz-style property tests of reading stored runs from foreign or corrupt databases: valid
//! SQLite files with wrong types, garbage JSON, NULLs, huge numbers, missing tables, missing or
//! future schema versions, foreign application ids — and byte-mutated copies of real store
//! files. Opening and reading (`results list`/`show`/`compare`, the exporter's latest figures,
//! a push's run keys) give an error naming the file, never a panic. Plus a round trip: any run
//! recorded reads back.
//!
//! Pure tier: a few hundred cases per target (each writes a database); live tier (`--ignored`):
//! 20 times more.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::path::{Path, PathBuf};
use test_tier::live;

use measure::Unit;
use results::render::{list_text, show_text};
use results::{
    compare, samples_csv, FleetFilter, FleetStore, HeadlineFigure, Metric, NewRun, ReportFigures,
    ResultStore, SqliteStore, StoreError, WorkerPlacement,
};
use serde_json::json;
use test_support::fuzz::{self, proptest};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const PURE: u32 = 300;
const LIVE: u32 = 6_000;

fn a_run(i: u32) -> NewRun {
    NewRun {
        command: if i.is_multiple_of(2) { "mem latency".into() } else { "nic stat".into() },
        parameters: json!({"size": 268435456, "i": i}),
        version: "0.1.0 (git abc)".into(),
        environment: json!({"thp_enabled": "madvise"}),
        topology: json!({"nodes": [{"id": 0}]}),
        metrics: vec![
            Metric::new("latency", Unit::Nanoseconds, vec![90.0, 91.0, 95.0 + f64::from(i)])
                .label("size", "16.0 MiB"),
            Metric::new("bandwidth", Unit::GigabytesPerSecond, vec![10.0, 10.1])
                .label("kernel", "read"),
        ],
        placements: vec![WorkerPlacement {
            worker: "cpu 0".into(),
            requested: json!({"policy": "bind", "nodes": [0]}),
            verified: json!([{"node": 0, "pages": 65536}]),
        }],
        result: json!({"point": {"ns": {"median": 92.0}}}),
        interrupted: i == 2,
    }
}

/// A report's figures for the fleet reader's tables.
fn figures(i: u32) -> ReportFigures {
    ReportFigures {
        uuid: format!("report-{i}"),
        host: "h".into(),
        recorded_at: format!("2026-11-0{}T00:00:00.000Z", i + 1),
        version: "0.1.0 (git abc)".into(),
        facts: [("Kernel".to_string(), format!("6.{i}"))].into_iter().collect(),
        facts_digest: String::new(),
        figures: vec![HeadlineFigure {
            area: "Memory".into(),
            name: "idle DRAM latency".into(),
            metric: "mem_latency{cpu_node=0,mem_node=0}".into(),
            unit: "ns".into(),
            median: 100.0,
            p25: 99.0,
            p75: 101.0,
            samples: 5,
        }],
    }
}

/// A store of today's schema with three runs and two reports' figures, as bytes.
fn current_store() -> Vec<u8> {
    let dir = fuzz::scratch_dir();
    let path = dir.path().join("results.db");
    let mut store = SqliteStore::open(&path).unwrap();
    for i in 0..3 {
        store.record(&a_run(i)).unwrap();
    }
    for i in 0..2 {
        store.record_report_figures(&figures(i)).unwrap();
    }
    drop(store);
    std::fs::read(&path).unwrap()
}

fn schema1_store() -> Vec<u8> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results_schema1_0bc0b4c.db");
    std::fs::read(path).unwrap()
}

/// Reads everything a command can read from the store at `path`, read-only and then for
/// recording; every error must name the file. Returns how many runs were shown.
fn read_all(path: &Path) -> Result<usize, TestCaseError> {
    let named = |e: &StoreError| -> Result<(), TestCaseError> {
        let msg = e.to_string();
        prop_assert!(
            msg.contains(&path.display().to_string()) || matches!(e, StoreError::NoSuchRun(_)),
            "an error that does not name the file: {msg}"
        );
        prop_assert!(!msg.contains('\n'), "not one line: {msg}");
        Ok(())
    };
    let mut shown = 0;
    match SqliteStore::open_read_only(path) {
        Err(e) => named(&e)?,
        Ok(store) => {
            match store.list(50) {
                Err(e) => named(&e)?,
                Ok(runs) => {
                    let _ = list_text(&runs);
                    let mut stored = Vec::new();
                    for r in &runs {
                        match store.run(r.id) {
                            Ok(run) => {
                                let _ = show_text(&run);
                                stored.push(run);
                                shown += 1;
                            }
                            Err(e) => named(&e)?,
                        }
                    }
                    if let [a, b, ..] = &stored[..] {
                        let _ = compare(a, b);
                    }
                    let _ = samples_csv(&stored);
                }
            }
            for r in [
                store.latest_metrics("latency", Some("size")).map(|_| ()),
                store.latest_metrics("mem_latency", None).map(|_| ()),
                store.run_keys().map(|_| ()),
                store.latest_of_host("h", "mem latency").map(|_| ()),
                store.run(i64::MAX).map(|_| ()),
                store.all_report_figures(&FleetFilter::default()).map(|_| ()),
                store.reports_without_figures().map(|_| ()),
                store.report_figures_of("report-1").map(|_| ()),
            ] {
                if let Err(e) = r {
                    named(&e)?;
                }
            }
        }
    }
    match SqliteStore::open(path) {
        Err(e) => named(&e)?,
        Ok(mut store) => {
            if let Err(e) = store.list(5) {
                named(&e)?;
            }
            if let Err(e) = store.record(&a_run(9)) {
                named(&e)?;
            }
            if let Err(e) = store.record_report_figures(&figures(3)) {
                named(&e)?;
            }
            if let Err(e) = store.all_report_figures(&FleetFilter::default()) {
                named(&e)?;
            }
        }
    }
    Ok(shown)
}

/// One damage done through SQL to a valid store.
fn damage() -> impl Strategy<Value = String> {
    let value = proptest::sample::select(vec![
        "NULL",
        "'garbage{'",
        "'null'",
        "'[]'",
        "'{\"a\": [1, {\"b\": '",
        "'\"a string\"'",
        "X'00FF80'",
        "1e308",
        "-1e308",
        "9223372036854775807",
        "-9223372036854775808",
        "''",
        "'NaN'",
        "'Infinity'",
        "0",
        "-1",
        "'2026-13-45T99:99:99Z'",
        "'{\"size\": \"' || hex(randomblob(4000)) || '\"}'",
    ]);
    let runs_col = proptest::sample::select(vec![
        "uuid",
        "host",
        "recorded_at",
        "command",
        "parameters",
        "version",
        "environment",
        "topology",
        "result",
        "interrupted",
        "id",
    ]);
    let metrics_col = proptest::sample::select(vec![
        "name", "unit", "median", "p25", "p75", "min", "max", "samples", "labels", "position",
        "run_id",
    ]);
    let placements_col =
        proptest::sample::select(vec!["worker", "requested", "verified", "position"]);
    let version =
        proptest::sample::select(vec![-1i64, 0, 1, 2, 3, 4, 5, 6, 1000, i64::from(i32::MAX)]);
    let fleet_col = proptest::sample::select(vec![
        "fleet_figures SET median",
        "fleet_figures SET samples",
        "fleet_figures SET headline_id",
        "fleet_figures SET report_id",
        "fleet_facts SET facts",
        "fleet_facts SET digest",
        "fleet_reports SET recorded_at",
        "fleet_reports SET facts_digest",
        "fleet_reports SET uuid",
        "fleet_headlines SET name",
        "fleet_headlines SET id",
    ]);
    let app = proptest::sample::select(vec![0i64, 1, 0x5053_4351, -1]);
    prop_oneof![
        (runs_col, value.clone()).prop_map(|(c, v)| format!("UPDATE runs SET {c} = {v}")),
        (metrics_col, value.clone()).prop_map(|(c, v)| format!("UPDATE metrics SET {c} = {v}")),
        (placements_col, value.clone())
            .prop_map(|(c, v)| format!("UPDATE placements SET {c} = {v}")),
        (fleet_col, value).prop_map(|(c, v)| format!("UPDATE {c} = {v}")),
        Just("DROP TABLE fleet_figures".to_string()),
        Just("DROP TABLE fleet_facts".to_string()),
        version.prop_map(|v| format!("PRAGMA user_version = {v}")),
        app.prop_map(|v| format!("PRAGMA application_id = {v}")),
        Just("DROP TABLE metrics".to_string()),
        Just("DROP TABLE placements".to_string()),
        Just("DROP TABLE IF EXISTS hosts".to_string()),
        Just("CREATE TABLE foreign_data (x)".to_string()),
        Just("DELETE FROM runs WHERE id = 1".to_string()),
        Just("INSERT INTO metrics SELECT run_id, position + 100, name, unit, median, p25, p75, min, max, samples, labels FROM metrics".to_string()),
        Just("UPDATE runs SET id = 9223372036854775807 WHERE id = 2".to_string()),
        Just("ALTER TABLE runs RENAME TO runs_old".to_string()),
        Just("ALTER TABLE metrics DROP COLUMN labels".to_string()),
    ]
}

fn sql_damage(cases: u32) {
    let dir = fuzz::scratch_dir();
    let current = current_store();
    let schema1 = schema1_store();
    let input = (any::<bool>(), proptest::collection::vec(damage(), 1..4));
    fuzz::check(cases, input, |(old, damages)| {
        let path: PathBuf = dir.path().join("damaged.db");
        std::fs::write(&path, if old { &schema1 } else { &current }).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        for d in &damages {
            // Some damages do not apply to the other schema (no labels column in schema 1).
            let _ = conn.execute_batch(d);
        }
        drop(conn);
        read_all(&path)?;
        Ok(())
    });
}

fn byte_damage(cases: u32) {
    let dir = fuzz::scratch_dir();
    let seeds = vec![current_store(), schema1_store()];
    fuzz::check(cases, fuzz::mutated(seeds), |bytes| {
        let path = dir.path().join("mutated.db");
        std::fs::write(&path, &bytes).unwrap();
        read_all(&path)?;
        Ok(())
    });
}

/// Any run recorded reads back: samples with NaN, infinities or none at all, any text.
fn round_trip(cases: u32) {
    let dir = fuzz::scratch_dir();
    let path = dir.path().join("results.db");
    // `check` takes an `Fn`: the store is borrowed mutably one case at a time.
    let store = std::cell::RefCell::new(SqliteStore::open(&path).unwrap());
    let sample = prop_oneof![
        4 => any::<f64>(),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
    ];
    let metric =
        (fuzz::text(20), proptest::collection::vec(sample, 0..6), fuzz::text(10), fuzz::text(10));
    let input = (fuzz::text(30), proptest::collection::vec(metric, 0..4), any::<bool>());
    fuzz::check(cases, input, |(command, metrics, interrupted)| {
        let run = NewRun {
            command: command.clone(),
            parameters: json!({"argv": [command]}),
            metrics: metrics
                .iter()
                .map(|(name, samples, k, v)| {
                    Metric::new(name.clone(), Unit::Nanoseconds, samples.clone())
                        .label(k.clone(), v)
                })
                .collect(),
            interrupted,
            ..NewRun::default()
        };
        let mut store = store.borrow_mut();
        let id = store.record(&run).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back = store
            .run(id)
            .map_err(|e| TestCaseError::fail(format!("recorded, not read back: {e}")))?;
        prop_assert_eq!(back.metrics.len(), run.metrics.len());
        prop_assert_eq!(back.interrupted, interrupted);
        let _ = show_text(&back);
        Ok(())
    });
}

#[test]
fn damaged_rows_and_schemas_are_errors_naming_the_file() {
    sql_damage(PURE);
}

#[live("6 000 databases damaged through SQL")]
fn damaged_rows_and_schemas_are_errors_naming_the_file_long() {
    sql_damage(LIVE);
}

#[test]
fn byte_mutated_store_files_are_errors_naming_the_file() {
    byte_damage(PURE);
}

#[live("6 000 byte-mutated store files")]
fn byte_mutated_store_files_are_errors_naming_the_file_long() {
    byte_damage(LIVE);
}

#[test]
fn any_recorded_run_reads_back() {
    round_trip(PURE);
}

#[live("6 000 recorded runs")]
fn any_recorded_run_reads_back_long() {
    round_trip(LIVE);
}

// ---- what the targets found, kept as plain tests ------------------------------------------

/// Found by `any_recorded_run_reads_back`: a metric with no finite sample has NaN quantiles,
/// which SQLite stores as NULL, and NaN samples, which JSON writes as null; the run was
/// recorded but `results show` failed on it ("Invalid column type Null … median").
#[test]
fn a_metric_without_finite_samples_reads_back() {
    let dir = fuzz::scratch_dir();
    let path = dir.path().join("results.db");
    let mut store = SqliteStore::open(&path).unwrap();
    for samples in [vec![], vec![f64::NAN, f64::INFINITY]] {
        let run = NewRun {
            metrics: vec![Metric::new("latency", Unit::Nanoseconds, samples.clone())],
            ..NewRun::default()
        };
        let id = store.record(&run).unwrap();
        let back = store.run(id).unwrap();
        assert!(back.metrics[0].median.is_nan(), "{:?}", back.metrics[0]);
        assert_eq!(back.metrics[0].samples.len(), samples.len());
        assert!(back.metrics[0].samples.iter().all(|v| v.is_nan()));
    }
}

/// Found by `damaged_rows_and_schemas_…`: a platscope file whose schema version was reset to
/// 0 or below was taken for a new store; creating the tables again failed with SQLite's
/// message quoting the whole schema over many lines. It is now refused as not platscope's, and
/// every SQLite message is kept on one line.
#[test]
fn tables_without_a_schema_version_are_refused_on_one_line() {
    let dir = fuzz::scratch_dir();
    for version in [0, -1] {
        let path = dir.path().join(format!("v{version}.db"));
        std::fs::write(&path, current_store()).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&format!("PRAGMA user_version = {version}")).unwrap();
        drop(conn);
        for e in
            [SqliteStore::open(&path).unwrap_err(), SqliteStore::open_read_only(&path).unwrap_err()]
        {
            assert!(matches!(e, StoreError::Foreign(_)), "{version}: {e:?}");
            assert!(!e.to_string().contains('\n'), "{e}");
        }
    }
}
