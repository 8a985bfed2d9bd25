//! The results database on a real SQLite file.

use results::{compare, samples_csv, Metric, NewRun, Store, StoreError, WorkerPlacement};
use serde_json::json;
use tempfile::TempDir;

/// A fresh directory, removed at the end of the test.
fn temp_dir(name: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(&format!("platscope-store-{name}-"))
        .tempdir()
        .expect("temp dir")
}

fn run(median_shift: f64) -> NewRun {
    NewRun {
        command: "mem latency".into(),
        parameters: json!({"size": 268435456}),
        version: "0.1.0 (git abc)".into(),
        environment: json!({"thp_enabled": "madvise"}),
        topology: json!({"nodes": [{"id": 0}]}),
        metrics: vec![
            Metric::new(
                "latency",
                "ns",
                (0..21).map(|i| 90.0 + median_shift + f64::from(i % 5)).collect(),
            ),
            Metric::new("bandwidth", "GB/s", vec![10.0, 10.1, 10.2]),
        ],
        placements: vec![WorkerPlacement {
            worker: "cpu 0".into(),
            requested: json!({"policy": "bind", "nodes": [0]}),
            verified: json!([{"node": 0, "pages": 65536}]),
        }],
        result: json!({"point": {"ns": {"median": 92.0}}}),
        interrupted: false,
    }
}

#[test]
fn records_and_reads_back_everything() {
    let dir = temp_dir("roundtrip");
    let path = dir.path().join("nested/dir/results.db");
    let mut s = Store::open(&path).expect("opens, creating directories");
    let id = s.record(&run(0.0)).expect("records");
    let back = s.run(id).expect("reads");
    assert_eq!(back.command, "mem latency");
    assert_eq!(back.metrics.len(), 2);
    assert_eq!(back.metrics[0].samples.len(), 21);
    assert_eq!(back.metrics[0].median, 92.0);
    assert_eq!(back.placements[0].verified, json!([{"node": 0, "pages": 65536}]));
    assert_eq!(back.environment["thp_enabled"], "madvise");
    let list = s.list(10).expect("lists");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].headline, Some(("latency".into(), 92.0, "ns".into())));
    assert!(matches!(s.run(999), Err(StoreError::NoSuchRun(999))));
    drop(s);
    // Reopening keeps the data and the schema.
    let s = Store::open(&path).expect("reopens");
    assert_eq!(s.list(10).expect("lists").len(), 1);
}

#[test]
fn compare_calls_real_only_changes_beyond_both_spreads() {
    let dir = temp_dir("compare");
    let mut s = Store::open(&dir.path().join("r.db")).expect("opens");
    let a = s.record(&run(0.0)).expect("a");
    let same = s.record(&run(0.5)).expect("within noise");
    let slower = s.record(&run(20.0)).expect("clearly slower");
    let c = compare(&s.run(a).expect("a"), &s.run(same).expect("b"));
    assert!(!c.deltas[0].real, "{:?}", c.deltas[0]);
    let c = compare(&s.run(a).expect("a"), &s.run(slower).expect("c"));
    assert!(c.deltas[0].real, "{:?}", c.deltas[0]);
    assert!((c.deltas[0].delta - 20.0).abs() < 1e-9);
    assert!(c.unmatched.is_empty());
}

#[test]
fn foreign_and_corrupt_files_are_refused_untouched() {
    let dir = temp_dir("foreign");
    let foreign = dir.path().join("other.db");
    foreign_db(&foreign);
    let before = std::fs::read(&foreign).expect("read");
    let err = Store::open(&foreign).expect_err("foreign refused");
    assert!(matches!(err, StoreError::Foreign(_)), "{err}");
    assert!(err.to_string().contains("nothing was written"));
    assert_eq!(std::fs::read(&foreign).expect("read"), before, "left untouched");

    let corrupt = dir.path().join("corrupt.db");
    let junk: Vec<u8> = (0..8192u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(&corrupt, &junk).expect("write");
    let err = Store::open(&corrupt).expect_err("corrupt refused");
    println!("{err}");
    assert!(matches!(err, StoreError::Foreign(_)), "{err}");
    assert_eq!(std::fs::read(&corrupt).expect("read"), junk);
}

/// A SQLite file made by someone else: a table of its own, no platscope application id.
fn foreign_db(path: &std::path::Path) {
    let conn = rusqlite::Connection::open(path).expect("creates");
    conn.execute_batch("CREATE TABLE accounts (id INTEGER); INSERT INTO accounts VALUES (1);")
        .expect("writes");
}

#[test]
fn newer_schema_is_refused() {
    let dir = temp_dir("newer");
    let path = dir.path().join("r.db");
    Store::open(&path).expect("creates").record(&run(0.0)).expect("records");
    rusqlite::Connection::open(&path)
        .expect("opens")
        .pragma_update(None, "user_version", 99)
        .expect("sets");
    let err = Store::open(&path).expect_err("newer refused");
    assert!(matches!(err, StoreError::NewerSchema { found: 99, .. }), "{err}");
}

#[test]
fn unwritable_location_names_the_file() {
    let err =
        Store::open(std::path::Path::new("/proc/platscope/results.db")).expect_err("unwritable");
    println!("{err}");
    assert!(err.to_string().contains("/proc/platscope/results.db"));
    assert!(err.to_string().contains("--no-store"));
}

#[test]
fn concurrent_writers_both_land() {
    let dir = temp_dir("concurrent");
    let path = dir.path().join("r.db");
    Store::open(&path).expect("creates");
    std::thread::scope(|s| {
        for _ in 0..4 {
            let path = &path;
            s.spawn(move || {
                let mut store = Store::open(path).expect("opens");
                for _ in 0..10 {
                    store.record(&run(0.0)).expect("records despite the others");
                }
            });
        }
    });
    assert_eq!(Store::open(&path).expect("opens").list(100).expect("lists").len(), 40);
}

#[test]
fn csv_has_one_row_per_sample() {
    let dir = temp_dir("csv");
    let mut s = Store::open(&dir.path().join("r.db")).expect("opens");
    let id = s.record(&run(0.0)).expect("records");
    let csv = samples_csv(&[s.run(id).expect("run")]);
    assert!(csv.starts_with("run_id,metric,unit,index,value\n"));
    assert_eq!(csv.lines().count(), 1 + 21 + 3);
    assert!(csv.contains(&format!("{id},bandwidth,GB/s,2,10.2")));
}
