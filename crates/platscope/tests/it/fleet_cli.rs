//! `platscope fleet` as users run it: every bad input a one-line answer with the right exit
//! status and no page written; a fleet made by `fleet::synthetic` from four real reports of
//! this VM, read from a SQLite store (pure tier) and from a real PostgreSQL 15 (live tier),
//! found as it was made; an empty store, a store of one host, a store of the previous release
//! (backfilled on the first read) and a connection lost in the middle of the read.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::path::{Path, PathBuf};
use std::process::Output;
use test_tier::live;

use fleet::analysis::FleetReport;
use fleet::synthetic::{generate, made_up_machine, Plan, Truth};
use results::fleet::ReportFigures;
use results::{FleetStore, PgStore, SqliteStore};

fn platscope(args: &[&str]) -> Output {
    test_support::command().args(args).output().expect("running platscope")
}

/// One line on stderr, nothing on stdout, exit `code`, saying `says`.
fn refused(out: Output, code: i32, says: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(says), "{stderr}");
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
}

/// Three made-up reports of one machine (the generator takes its levels and noise from them).
fn machine() -> Vec<ReportFigures> {
    made_up_machine(
        &[("Idle DRAM latency", "ns", 100.0, 1.0), ("Peak bandwidth", "GB/s", 20.0, -0.2)],
        &[("CPU model", "Xeon"), ("Kernel", "6.1")],
    )
}

fn write_reports(path: &Path, reports: &[ReportFigures]) {
    std::fs::write(path, serde_json::to_vec(reports).unwrap()).unwrap();
}

#[test]
fn bad_input_is_one_line_and_writes_no_page() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("fleet.json");
    write_reports(&json, &generate(&machine(), &Plan::new(6, 10, 1, 1)).unwrap().0);
    let json = json.to_str().unwrap();
    let out = tmp.path().join("page");
    let out_dir = out.to_str().unwrap();
    let with = |extra: &[&str]| {
        let mut args = vec!["fleet", "--reports-json", json, "--out", out_dir];
        args.extend_from_slice(extra);
        platscope(&args)
    };
    refused(with(&["--since", "March"]), 2, "--since \"March\" is not a date");
    refused(with(&["--until", "2026-02-30"]), 2, "--until \"2026-02-30\" is not a date");
    refused(with(&["--since", "2026-03-05", "--until", "2026-03-01"]), 2, "is not before --until");
    refused(with(&["--hosts", "db[1-3]"]), 2, "--hosts \"db[1-3]\"");
    refused(with(&["--hosts", "db1,,db2"]), 2, "an empty pattern");
    // Nothing in the window: said, exit 1.
    refused(with(&["--hosts", "web-*"]), 1, "widen --since/--until or --hosts");
    refused(with(&["--since", "2030-01-01"]), 1, "no report in");
    assert!(!out.join("fleet.html").exists(), "a refused run wrote a page");

    // The store: --from must be PostgreSQL, not both --from and --db, the file must exist.
    refused(platscope(&["fleet", "--from", "results.db"]), 2, "is not a PostgreSQL database");
    refused(
        platscope(&["--db", "x.db", "fleet", "--from", "postgresql://u@localhost/fleet"]),
        2,
        "not both",
    );
    let missing = tmp.path().join("missing.db");
    refused(platscope(&["--db", missing.to_str().unwrap(), "fleet"]), 1, "no results database at");

    // Report files: empty, not JSON, missing; --out naming a file.
    let empty = tmp.path().join("empty.json");
    std::fs::write(&empty, "[]").unwrap();
    refused(platscope(&["fleet", "--reports-json", empty.to_str().unwrap()]), 1, "no reports in");
    let garbage = tmp.path().join("garbage.json");
    std::fs::write(&garbage, "{\"hosts\": 3").unwrap();
    refused(
        platscope(&["fleet", "--reports-json", garbage.to_str().unwrap()]),
        2,
        "is not a JSON array of report records",
    );
    refused(platscope(&["fleet", "--reports-json", "/nonexistent.json"]), 1, "cannot read");
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    refused(
        platscope(&["fleet", "--reports-json", json, "--out", file.to_str().unwrap()]),
        2,
        "is a file; give a directory",
    );
}

#[test]
fn a_fleet_reads_as_summary_json_and_page() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("fleet.json");
    let (reports, truth) = generate(&machine(), &Plan::new(16, 24, 2, 2)).unwrap();
    write_reports(&json, &reports);
    let json = json.to_str().unwrap();
    let out = tmp.path().join("page");

    let text = platscope(&["fleet", "--reports-json", json, "--out", out.to_str().unwrap()]);
    assert!(text.status.success(), "{}", String::from_utf8_lossy(&text.stderr));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.starts_with("fleet: 16 host(s) in 2 class(es), 384 report(s)"), "{text}");
    for shift in &truth.shifts {
        assert!(text.contains(&shift.host), "{text}");
    }
    let page = std::fs::read_to_string(out.join("fleet.html")).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
    assert!(text.ends_with(&format!("page: {}\n", out.join("fleet.html").display())), "{text}");

    // The global --html-out writes the same page to a file.
    let file = tmp.path().join("fleet-page.html");
    let again = platscope(&["--html-out", file.to_str().unwrap(), "fleet", "--reports-json", json]);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), page);

    let run = platscope(&["--json", "fleet", "--reports-json", json, "--since", "2026-01-01"]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let keys: Vec<&str> = report.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["changes", "classes", "config_changes_without_shift", "hosts", "outliers"],
        "the JSON's top level is the documented one"
    );
    assert_eq!(report["hosts"], 16);
    let steady = truth.steady.unwrap();
    let outlier = report["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["host"] == steady.host.as_str())
        .expect("the steady host is an outlier");
    for key in ["class", "figure", "unit", "value", "class_median", "ratio", "min_effect"] {
        assert!(!outlier[key].is_null(), "{key} in {outlier}");
    }
    let change = &report["changes"][0];
    for key in ["host", "figure", "unit", "at", "before", "after", "ratio", "p_value", "config"] {
        assert!(!change[key].is_null(), "{key} in {change}");
    }

    // One host with a single report: an answer with a note, not a failure.
    let one = tmp.path().join("one.json");
    write_reports(&one, &reports[..1]);
    let run = platscope(&["fleet", "--reports-json", one.to_str().unwrap()]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let text = String::from_utf8(run.stdout).unwrap();
    assert!(text.contains("fleet: 1 host(s) in 1 class(es), 1 report(s)"), "{text}");
    assert!(text.contains("too few for a change to be called"), "{text}");
}

/// Four real quick reports of this VM (the fleet crate's fixture; its README says how made).
fn real() -> Vec<ReportFigures> {
    fleet::synthetic::fixture_reports().unwrap()
}

/// The 40 hosts × 30 days of the fleet reader's own test, and what was injected.
fn fleet_of_forty() -> (Plan, Vec<ReportFigures>, Truth) {
    let plan = Plan::new(40, 30, 2, 1);
    let (reports, truth) = generate(&real(), &plan).unwrap();
    (plan, reports, truth)
}

fn json_report(out: Output) -> FleetReport {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_fleet_in_a_sqlite_store_is_found_as_it_was_made() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("fleet.db");
    let (plan, reports, truth) = fleet_of_forty();
    SqliteStore::open(&db).unwrap().record_many_report_figures(&reports).unwrap();
    let db = db.to_str().unwrap();
    let report = json_report(platscope(&["--db", db, "--json", "fleet"]));
    assert_eq!(report.hosts, 40);
    let misses = truth.misses(&plan, &report);
    assert!(misses.is_empty(), "{}", misses.join("\n"));
    // The window and the host pattern reach the store's filter and the analysis alike.
    let some = json_report(platscope(&["--db", db, "--json", "fleet", "--hosts", "DB-000*"]));
    assert_eq!(some.hosts, 10);
    let late = json_report(platscope(&["--db", db, "--json", "fleet", "--since", "2026-01-21"]));
    assert!(late.changes.iter().all(|c| c.at.as_str() >= "2026-01-21"), "{:?}", late.changes);
}

#[test]
fn empty_one_host_and_previous_release_stores_are_answered() {
    let tmp = tempfile::tempdir().unwrap();
    // Empty: made by this release, nothing in it.
    let empty = tmp.path().join("empty.db");
    drop(SqliteStore::open(&empty).unwrap());
    refused(platscope(&["--db", empty.to_str().unwrap(), "fleet"]), 1, "no reports in");
    // One host with a handful of reports: an answer, saying what it could not test.
    let one = tmp.path().join("one.db");
    let (_, reports, _) = fleet_of_forty();
    let first: Vec<ReportFigures> =
        reports.iter().filter(|r| r.host == "db-0000").take(4).cloned().collect();
    SqliteStore::open(&one).unwrap().record_many_report_figures(&first).unwrap();
    let out = platscope(&["--db", one.to_str().unwrap(), "fleet"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("fleet: 1 host(s) in 1 class(es), 4 report(s)"), "{text}");
    assert!(text.contains("too few for a change to be called: db-0000"), "{text}");
    assert!(text.contains("fewer than 3 hosts"), "{text}");
    // The previous release's store: its reports get their figures on the first read (said on
    // stderr, once), and are read.
    let old = tmp.path().join("old.db");
    let fixture: PathBuf =
        [env!("CARGO_MANIFEST_DIR"), "tests", "fixtures", "results_schema4_40aede5.db"]
            .iter()
            .collect();
    std::fs::copy(&fixture, &old).unwrap();
    let first = platscope(&["--db", old.to_str().unwrap(), "--json", "fleet"]);
    let said = String::from_utf8_lossy(&first.stderr).to_string();
    assert!(said.contains("computing the headline figures of"), "{said}");
    let report = json_report(first);
    assert_eq!(report.hosts, 1);
    assert_eq!(report.classes[0].hosts, ["fixture-host"]);
    let again = platscope(&["--db", old.to_str().unwrap(), "--json", "fleet"]);
    assert!(again.stderr.is_empty(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(json_report(again), report);
}

fn pg_url(pg: &testdb::Postgres) -> String {
    format!("postgresql://platscope@127.0.0.1:{}/postgres", pg.port())
}

#[live("starts PostgreSQL 15 (root), about 8 s")]
fn a_fleet_in_postgresql_is_found_as_it_was_made_and_a_lost_connection_is_one_line() {
    let pg = testdb::Postgres::start(&testdb::PgOptions::default()).expect("PostgreSQL starts");
    let url = pg_url(&pg);
    let (plan, reports, truth) = fleet_of_forty();
    PgStore::connect(&url).unwrap().record_many_report_figures(&reports).unwrap();
    let report = json_report(platscope(&["--json", "fleet", "--from", &url]));
    let misses = truth.misses(&plan, &report);
    assert!(misses.is_empty(), "{}", misses.join("\n"));

    // Published for the dashboards: the same outliers and changes, row for row, and a second
    // publication replaces the first.
    for _ in 0..2 {
        let again = json_report(platscope(&["--json", "fleet", "--from", &url, "--publish"]));
        assert_eq!(again, report, "publishing changes nothing of the answer");
    }
    let rows = |sql: &str| -> Vec<String> {
        let out = pg.sql(sql).unwrap();
        out.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect()
    };
    let outliers = rows(
        "SELECT host || '|' || figure || '|' || round(ratio::numeric, 6) FROM fleet_outliers \
         ORDER BY host, figure",
    );
    let mut expected: Vec<String> =
        report.outliers.iter().map(|o| format!("{}|{}|{:.6}", o.host, o.figure, o.ratio)).collect();
    expected.sort();
    assert!(!expected.is_empty(), "the steady slow host is an outlier");
    assert_eq!(outliers, expected);
    let changes =
        rows("SELECT host || '|' || figure || '|' || at || '|' || config FROM fleet_changes");
    assert_eq!(changes.len(), report.changes.len());
    for c in &report.changes {
        let line =
            format!("{}|{}|{}|{}", c.host, c.figure, c.at, fleet::facts::describe(&c.config));
        assert!(changes.contains(&line), "{line} not published: {changes:?}");
    }

    // A larger fleet takes a few seconds to read: the server ends the connection while
    // `platscope fleet` reads, which answers on one line naming the store, exit 1.
    let (big, _) = generate(&real(), &Plan::new(200, 90, 2, 2).quiet()).unwrap();
    let mut store = PgStore::connect(&url).unwrap();
    for chunk in big.chunks(5000) {
        store.record_many_report_figures(chunk).unwrap();
    }
    drop(store);
    let child = test_support::command()
        .args(["fleet", "--from", &url])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let mut terminated = false;
    while started.elapsed() < std::time::Duration::from_secs(60) {
        let ended = pg
            .sql(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE application_name = 'platscope' AND state = 'active' \
                 AND query LIKE '%fleet_figures%'",
            )
            .unwrap();
        if ended.trim() != "0" {
            terminated = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    assert!(terminated, "the read was never seen active");
    refused(out, 1, &format!("127.0.0.1:{}", pg.port()));
}
