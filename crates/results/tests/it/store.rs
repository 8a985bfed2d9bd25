//! The results database on a real SQLite file.

use measure::Unit;
use results::{
    compare, samples_csv, Metric, NewRun, ResultStore, SqliteStore as Store, StoreError,
    WorkerPlacement,
};
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
                Unit::Nanoseconds,
                (0..21).map(|i| 90.0 + median_shift + f64::from(i % 5)).collect(),
            ),
            Metric::new("bandwidth", Unit::GigabytesPerSecond, vec![10.0, 10.1, 10.2])
                .label("kernel", "read"),
        ],
        placements: vec![WorkerPlacement {
            worker: "cpu 0".into(),
            requested: json!({"policy": "bind", "nodes": [0]}),
            verified: json!([{"node": 0, "pages": 65536}]),
        }],
        result: json!({"point": {"ns": {"median": 92.0, "p99": 94.0, "values": [90.0, 94.0]}}}),
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
    assert_eq!(back.metrics[1].key(), "bandwidth{kernel=read}");
    // Samples are kept once, in the metrics: the stored result loses its summaries' values.
    assert_eq!(back.result, json!({"point": {"ns": {"median": 92.0, "p99": 94.0}}}));
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
    // The verdict: two runs are one run a side, so their samples carry the assumed
    // run-to-run noise; 22% higher latency is within it (the interval holds 1): same.
    let d = &c.deltas[0];
    assert_eq!(d.verdict, measure::verdict::Verdict::Same, "{d:?}");
    assert!(d.ratio_low < 1.0 && d.ratio_high > d.ratio && d.ratio > 1.2, "{d:?}");
    assert_eq!(d.rests_on, "21 samples each; run-to-run noise 10% assumed");
    // Twice the latency is beyond it: slower.
    let doubled = s.record(&run(92.0)).expect("twice as slow");
    let c = compare(&s.run(a).expect("a"), &s.run(doubled).expect("d"));
    assert_eq!(c.deltas[0].verdict, measure::verdict::Verdict::Slower, "{:?}", c.deltas[0]);
    let c = compare(&s.run(a).expect("a"), &s.run(same).expect("b"));
    assert_eq!(c.deltas[0].verdict, measure::verdict::Verdict::Same, "{:?}", c.deltas[0]);
    assert!(c.unmatched.is_empty());
    // Three bandwidth samples a side: tested, with both counts in the JSON.
    let bandwidth = &c.deltas[1];
    assert_eq!(bandwidth.name, "bandwidth{kernel=read}");
    assert_eq!(bandwidth.verdict, measure::verdict::Verdict::Same, "{bandwidth:?}");
    assert_eq!((bandwidth.a_samples, bandwidth.b_samples), (3, 3));
    let json = serde_json::to_value(bandwidth).expect("serialises");
    assert_eq!((json["verdict"].as_str(), json["a_samples"].as_u64()), (Some("same"), Some(3)));
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
    assert!(csv.starts_with("run_id,metric,labels,unit,index,value\n"));
    assert_eq!(csv.lines().count(), 1 + 21 + 3);
    assert!(csv.contains(&format!("{id},bandwidth,kernel=read,GB/s,2,10.2")));
}

#[test]
fn compare_matches_on_name_and_labels_not_text() {
    let dir = temp_dir("labels");
    let mut s = Store::open(&dir.path().join("r.db")).expect("opens");
    let a = s.record(&run(0.0)).expect("a");
    let mut other = run(0.0);
    other.metrics[1] = other.metrics[1].clone().label("kernel", "copy");
    let b = s.record(&other).expect("b");
    let c = compare(&s.run(a).expect("a"), &s.run(b).expect("b"));
    assert_eq!(c.deltas.len(), 1, "only the unlabelled latency matches: {c:?}");
    assert_eq!(c.unmatched, ["bandwidth{kernel=read}", "bandwidth{kernel=copy}"]);
    let slower = s.record(&run(20.0)).expect("slower");
    let c = compare(&s.run(a).expect("a"), &s.run(slower).expect("c"));
    assert_eq!(c.deltas[0].better, Some(false), "higher latency is worse");
}

#[test]
fn many_writers_creating_a_new_store_at_once_all_land() {
    for round in 0..5 {
        let dir = temp_dir(&format!("race-{round}"));
        let path = dir.path().join("new.db");
        let barrier = std::sync::Barrier::new(6);
        std::thread::scope(|s| {
            for _ in 0..6 {
                let (path, barrier) = (&path, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let mut store = Store::open(path).expect("creating races are waited out");
                    store.record(&run(0.0)).expect("records");
                });
            }
        });
        assert_eq!(Store::open(&path).expect("opens").list(100).expect("lists").len(), 6);
    }
}

#[test]
fn read_only_open_writes_nothing() {
    let dir = temp_dir("readonly");
    let path = dir.path().join("r.db");
    let id = Store::open(&path).expect("creates").record(&run(0.0)).expect("records");
    let files = || {
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("lists")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let (before, bytes) = (files(), std::fs::read(&path).expect("reads"));
    let s = Store::open_read_only(&path).expect("opens read-only");
    assert_eq!(s.run(id).expect("reads").metrics.len(), 2);
    assert_eq!(s.list(5).expect("lists").len(), 1);
    drop(s);
    assert_eq!(std::fs::read(&path).expect("reads"), bytes, "the file is unchanged");
    assert_eq!(files(), before, "nothing was created beside it");
    let err = Store::open_read_only(&dir.path().join("missing.db")).expect_err("missing");
    assert!(err.to_string().contains("missing.db"), "{err}");
}

/// A copy of the schema-1 database the previous release wrote, in a temporary directory.
fn schema1_copy(dir: &TempDir) -> std::path::PathBuf {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/results_schema1_0bc0b4c.db");
    let path = dir.path().join("old.db");
    std::fs::copy(fixture, &path).expect("copies the fixture");
    path
}

fn keys(run: &results::StoredRun) -> Vec<String> {
    run.metrics.iter().map(results::StoredMetric::key).collect()
}

#[test]
fn a_schema_1_database_migrates_and_compares_with_labelled_runs() {
    let dir = temp_dir("migrate");
    let path = schema1_copy(&dir);
    // Read-only, unmigrated: relabelled as it is read, the file untouched.
    let bytes = std::fs::read(&path).expect("reads");
    let old = Store::open_read_only(&path).expect("opens schema 1 read-only");
    let before: Vec<Vec<String>> = (1..=8).map(|id| keys(&old.run(id).expect("run"))).collect();
    drop(old);
    assert_eq!(std::fs::read(&path).expect("reads"), bytes);

    let mut s = Store::open(&path).expect("migrates");
    let after: Vec<Vec<String>> = (1..=8).map(|id| keys(&s.run(id).expect("run"))).collect();
    assert_eq!(before, after, "reading relabels exactly as migrating does");
    assert_eq!(after[0], ["mem_latency{size=16.0 MiB}"]);
    assert_eq!(after[1][0], "mem_latency{size=16.0 KiB}");
    assert!(after[2][0].starts_with("mem_bandwidth{isa="), "{:?}", after[2]);
    assert!(after[2][0].ends_with(",kernel=triad}"), "{:?}", after[2]);
    assert!(after[2][1].starts_with("mem_bandwidth_thread{cpu="), "{:?}", after[2]);
    assert!(after[3][0].contains("kernel=read,threads=1}"), "{:?}", after[3]);
    assert_eq!(after[4], ["slb_ns_per_op{worker=0}", "slb_ns_per_op{worker=1}"]);
    assert_eq!(after[5][0], "slb_ns_per_op{worker=0,workers=1}");
    assert_eq!(after[6][0], "slb_ns_per_op{policy=local,worker=0}");
    assert!(after[7].iter().all(|k| k.starts_with("timer_cost{timer=")), "{:?}", after[7]);
    assert!(
        after
            .iter()
            .flatten()
            .all(|k| !k.contains(' ') || k.contains("size=") || k.contains("timer=")),
        "every name is relabelled: {after:?}"
    );

    // A run recorded now under today's names compares with the old one.
    let new = s
        .record(&NewRun {
            command: "mem latency".into(),
            metrics: vec![Metric::new("mem_latency", Unit::Nanoseconds, vec![100.0, 101.0])
                .label("size", "16.0 MiB")],
            ..NewRun::default()
        })
        .expect("records");
    let c = compare(&s.run(1).expect("old"), &s.run(new).expect("new"));
    assert_eq!(c.deltas.len(), 1, "{c:?}");
    assert!(c.unmatched.is_empty(), "{c:?}");
    assert_eq!(s.list(20).expect("lists").len(), 9);
    assert!(samples_csv(&[s.run(3).expect("run")]).contains("kernel=triad"));
}

#[test]
fn latest_metrics_finds_the_newest_run_with_that_metric_and_label() {
    let dir = temp_dir("latest");
    let path = dir.path().join("results.db");
    let mut store = Store::open(&path).expect("store");
    let lat = |v: f64| Metric::new("mem_latency", Unit::Nanoseconds, vec![v]);
    let matrix = |v: f64| NewRun {
        metrics: vec![lat(v).label("cpu_node", 0).label("mem_node", 0)],
        ..NewRun::default()
    };
    let single = NewRun { metrics: vec![lat(50.0).label("size", "1MiB")], ..NewRun::default() };
    store.record(&matrix(80.0)).expect("store");
    let newest_matrix = store.record(&matrix(90.0)).expect("store");
    let newest = store.record(&single).expect("store");
    drop(store);
    let store = Store::open_read_only(&path).expect("store");
    let any = store.latest_metrics("mem_latency", None).expect("read").expect("a run");
    assert_eq!(any.run_id, newest);
    let m = store.latest_metrics("mem_latency", Some("cpu_node")).expect("read").expect("a run");
    assert_eq!(m.run_id, newest_matrix);
    assert_eq!(m.metrics.len(), 1);
    assert_eq!(m.metrics[0].median, 90.0);
    // Recorded just now: within a day of the clock.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("store");
    assert!((m.recorded_at_unix - now.as_secs_f64()).abs() < 86_400.0, "{}", m.recorded_at_unix);
    assert!(store.latest_metrics("mem_bandwidth", None).expect("store").is_none());
}

/// A new store (and a directory made for it) is its owner's alone; an existing file keeps the
/// mode it has.
#[test]
fn a_new_store_is_0600_in_a_0700_directory_and_an_old_one_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("mode");
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("exists").permissions().mode() & 0o777;
    let path = dir.path().join("made/for/it/results.db");
    let mut store = Store::open(&path).expect("opens");
    store.record(&run(0.0)).expect("records");
    drop(store);
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&dir.path().join("made/for/it")), 0o700);
    assert_eq!(mode(&dir.path().join("made")), 0o700);
    for side in ["results.db-wal", "results.db-shm"] {
        let p = path.with_file_name(side);
        if p.exists() {
            assert_eq!(mode(&p) & 0o077, 0, "{side} is not readable by others");
        }
    }

    let shared = dir.path().join("shared.db");
    std::fs::write(&shared, b"").expect("an empty file");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let mut store = Store::open(&shared).expect("opens an empty file as a new store");
    store.record(&run(0.0)).expect("records");
    assert_eq!(mode(&shared), 0o644, "an existing file keeps its mode");
}

/// The recorder stores the command line with its passwords redacted.
#[test]
fn the_recorder_stores_argv_without_passwords() {
    use results::{Recorder, RunContext, StoreOptions};
    let dir = temp_dir("argv");
    let db = dir.path().join("results.db");
    let argv: Vec<String> = [
        "platscope",
        "load",
        "--url",
        "postgresql://app:Hunter2Secret@db1/orders",
        "--also",
        "host=db1 password='Hunter2 Secret' dbname=x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let context = RunContext { argv, ..RunContext::default() };
    let options = StoreOptions { db: Some(db.clone()), no_store: false };
    let mut recorder = Recorder::open(&options, context).expect("opens");
    let metric = [Metric::new("x", Unit::Nanoseconds, vec![1.0])];
    let id = recorder.record("load", &json!({}), &metric[..], false).expect("records").expect("id");
    drop(recorder);
    let stored = Store::open_read_only(&db).expect("opens").run(id).expect("run");
    let words: Vec<&str> = stored.parameters["argv"]
        .as_array()
        .expect("argv")
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    assert_eq!(words[3], "postgresql://app:***@db1/orders");
    assert_eq!(words[5], "host=db1 password='***' dbname=x");
    let bytes = std::fs::read(&db).expect("db");
    let wal = std::fs::read(db.with_file_name("results.db-wal")).unwrap_or_default();
    for file in [&bytes, &wal] {
        assert!(!file.windows(7).any(|w| w == b"Hunter2"), "the password is not in the file");
    }
}

/// A store written before command lines were redacted (schema 3): opening it for writing
/// migrates it and scrubs the passwords from the runs it holds.
#[test]
fn runs_stored_with_a_password_are_scrubbed_when_the_store_is_opened() {
    let dir = temp_dir("scrub");
    let path = dir.path().join("results.db");
    let mut old = run(0.0);
    old.parameters = json!({
        "argv": ["platscope", "load", "--url", "postgresql://app:hunter2@db1/orders",
                 "--password", "s3cret"],
    });
    let mut s = Store::open(&path).expect("opens");
    let id = s.record(&run(0.0)).expect("records");
    // Recording scrubs too: write the run's parameters as an old version stored them.
    drop(s);
    let conn = rusqlite::Connection::open(&path).expect("opens the file");
    conn.execute("UPDATE runs SET parameters = ?1 WHERE id = ?2", (old.parameters.to_string(), id))
        .expect("writes the old row");
    conn.pragma_update(None, "user_version", 3).expect("as a schema-3 file");
    drop(conn);
    let s = Store::open_read_only(&path).expect("opens to read");
    assert!(s.run(id).expect("reads").parameters.to_string().contains("hunter2"));
    drop(s);

    let s = Store::open(&path).expect("reopens");
    let argv = s.run(id).expect("reads").parameters["argv"].clone();
    assert_eq!(
        argv,
        json!([
            "platscope",
            "load",
            "--url",
            "postgresql://app:***@db1/orders",
            "--password",
            "***"
        ])
    );
    let raw = std::fs::read(&path).expect("the file");
    let wal = std::fs::read(dir.path().join("results.db-wal")).unwrap_or_default();
    for bytes in [&raw, &wal] {
        assert!(
            !bytes.windows(7).any(|w| w == b"hunter2"),
            "the password is still in the file's pages"
        );
    }
}
