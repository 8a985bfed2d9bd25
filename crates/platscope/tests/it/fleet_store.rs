//! The fleet reader's compact rows (`results::FleetStore`) filled from real stored reports:
//! a store written by the release before them (a fixture) is backfilled, old step kinds
//! included; a report run now stores the headline figures its page shows; `results push`
//! carries them to a real PostgreSQL 15, computing them first for reports that lack them.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::path::{Path, PathBuf};
use std::process::Output;
use test_tier::live;

use platscope::registry::REGISTRY;
use results::{FleetFilter, FleetStore, ReportFigures, ResultStore, SqliteStore};
use testdb::{PgOptions, Postgres};

fn fixture_copy(dir: &Path) -> PathBuf {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results_schema4_40aede5.db");
    let path = dir.join("old.db");
    std::fs::copy(fixture, &path).expect("copies the fixture");
    path
}

/// The headline figures `report --from-db ID` draws that name a stored metric, in page order:
/// what the figures row must hold.
fn page_headlines(store: &dyn ResultStore, id: i64) -> Vec<(String, String, String)> {
    suite::from_db::rebuild(store, &[id], &REGISTRY)
        .expect("the report draws again")
        .headlines()
        .into_iter()
        .filter_map(|(area, h)| Some((area.title().to_string(), h.name, h.metric?)))
        .collect()
}

fn figure_keys(report: &ReportFigures) -> Vec<(String, String, String)> {
    report.figures.iter().map(|f| (f.area.clone(), f.name.clone(), f.metric.clone())).collect()
}

/// Each figure is the stored metric of one of the report's steps, summary as stored.
fn backed_by_steps(store: &dyn ResultStore, id: i64, report: &ReportFigures) {
    let stored = suite::compare::StoredReport::read(store, id).expect("reads");
    for f in &report.figures {
        let metric = stored
            .steps
            .iter()
            .flat_map(|(_, run)| run.metrics.iter())
            .find(|m| m.key() == f.metric)
            .unwrap_or_else(|| panic!("{}: no stored metric {}", f.name, f.metric));
        assert_eq!(
            (f.unit.as_str(), f.median, f.p25, f.p75),
            (metric.unit.as_str(), metric.median, metric.p25, metric.p75),
            "{}",
            f.name
        );
        assert_eq!(f.samples as usize, metric.samples.len(), "{}", f.name);
    }
}

/// The facts that class hosts and explain shifts are all there, from the report's topology.
fn has_the_facts(report: &ReportFigures) {
    for fact in [
        "CPU model",
        "Sockets",
        "Cores per socket",
        "NUMA nodes",
        "Memory",
        "Hypervisor",
        "Kernel",
        "Microcode",
        "THP",
        "Governor",
        "Mitigations",
        "BIOS",
    ] {
        assert!(report.facts.contains_key(fact), "no {fact:?} in {:#?}", report.facts);
    }
    assert_eq!(report.facts_digest, results::facts_digest(&report.facts));
}

#[test]
fn a_store_of_the_previous_release_is_backfilled_through_its_old_step_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture_copy(dir.path());
    // Its contention report's core-to-core step as releases before it stored that step.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let renamed = conn
        .execute("UPDATE runs SET command = 'report: core to core' WHERE command = 'mem c2c'", [])
        .unwrap();
    assert_eq!(renamed, 1);
    drop(conn);

    let mut store = SqliteStore::open(&path).expect("a schema-4 store opens and migrates");
    for run in store.list(100).unwrap() {
        store.run(run.id).unwrap_or_else(|e| panic!("run {} ({}): {e}", run.id, run.command));
    }
    assert_eq!(store.reports_without_figures().unwrap(), [5, 8]);
    let filled = suite::figures::backfill(&mut store, &REGISTRY).unwrap();
    assert_eq!(filled, suite::figures::Backfill { stored: 2, skipped: Vec::new() });
    assert!(store.reports_without_figures().unwrap().is_empty());
    assert_eq!(suite::figures::backfill(&mut store, &REGISTRY).unwrap().stored, 0);

    let reports = store.all_report_figures(&FleetFilter::default()).unwrap();
    assert_eq!(reports.len(), 2);
    for (report, id) in reports.iter().zip([5, 8]) {
        let run = store.run(id).unwrap();
        assert_eq!((&report.uuid, &report.host), (&run.uuid, &run.host));
        assert_eq!((&report.recorded_at, &report.version), (&run.recorded_at, &run.version));
        assert_eq!(report.host, "fixture-host");
        assert_eq!(figure_keys(report), page_headlines(&store, id), "report run {id}");
        backed_by_steps(&store, id, report);
        has_the_facts(report);
        // Recorded before platscope read the firmware's version.
        assert_eq!(report.facts["BIOS"], "not recorded (stored by an older platscope)");
    }
    let names = |r: &ReportFigures| r.figures.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
    assert!(names(&reports[0]).contains(&"compress lz4".to_string()), "{:?}", names(&reports[0]));
    assert!(
        names(&reports[1]).iter().any(|n| n.starts_with("Core to core")),
        "the old kind's step gives its figure: {:?}",
        names(&reports[1])
    );
    // Same machine, same settings: one fact set.
    assert_eq!(reports[0].facts_digest, reports[1].facts_digest);
}

#[test]
fn a_report_that_cannot_be_read_is_skipped_with_why_and_the_others_filled() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture_copy(dir.path());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE runs SET result = '{\"not\": \"a page\"}' WHERE id = 5", []).unwrap();
    drop(conn);
    let mut store = SqliteStore::open(&path).unwrap();
    let filled = suite::figures::backfill(&mut store, &REGISTRY).unwrap();
    assert_eq!(filled.stored, 1);
    assert_eq!(filled.skipped.len(), 1);
    assert_eq!(filled.skipped[0].id, 5);
    assert!(filled.skipped[0].why.contains("does not read"), "{}", filled.skipped[0].why);
    assert_eq!(store.reports_without_figures().unwrap(), [5]);
    // Not a report at all: refused by name.
    let e = suite::figures::of_report(&store, 9, &REGISTRY).unwrap_err();
    assert!(e.to_string().contains("only a `report` run"), "{e}");
}

fn ok(what: &str, out: Output) -> String {
    assert!(
        out.status.success(),
        "{what}: exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A quick report of the cheapest sections with headline figures (compression and CPU: about
/// 8 s on a 2-vCPU x86-64 KVM guest, under load), as host `host`.
fn quick_report(host: &str, dir: &Path, db: &Path) -> String {
    let out = dir.join(format!("page-{host}"));
    let args = [
        "report",
        "--quick",
        "--sections",
        "compression,cpu",
        "--out",
        out.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ];
    ok("report", test_support::cli::as_host(host, dir, &args))
}

#[live(
    "a quick report of the compression and CPU sections (about 9 s on a 2-vCPU x86-64 KVM guest)"
)]
fn a_report_stores_the_headline_figures_its_page_shows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let summary = quick_report("alpha", dir.path(), &db);
    let store = SqliteStore::open_read_only(&db).unwrap();
    assert!(store.reports_without_figures().unwrap().is_empty(), "filled as it was stored");
    let reports = store.all_report_figures(&FleetFilter::default()).unwrap();
    assert_eq!(reports.len(), 1);
    let report = &reports[0];
    let run = store.list(1).unwrap().remove(0);
    assert_eq!((run.command.as_str(), &run.uuid), ("report", &report.uuid));
    assert_eq!((report.host.as_str(), &report.version), ("alpha", &run.version));
    assert_eq!(figure_keys(report), page_headlines(&store, run.id));
    assert!(report.figures.len() >= 5, "{:?}", figure_keys(report));
    backed_by_steps(&store, run.id, report);
    has_the_facts(report);
    // Every figure is one the terminal summary shows, with the value it shows (three
    // significant digits there: within half a percent).
    for f in &report.figures {
        let line = summary
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{}:", f.name)))
            .unwrap_or_else(|| panic!("{} not in:\n{summary}", f.name));
        let shown: f64 = line[line.find(':').unwrap() + 1..]
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no value in {line:?}"));
        assert!((shown - f.median).abs() <= 0.005 * f.median.abs(), "{line:?} vs {}", f.median);
    }
}

fn count(pg: &Postgres, sql: &str) -> usize {
    pg.sql(sql).expect("psql").trim().parse().expect("a count")
}

#[live("PostgreSQL 15 (root) and two quick reports (about 15 s on a 2-vCPU x86-64 KVM guest)")]
fn push_carries_the_figures_and_computes_those_of_older_reports_first() {
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    let url = format!("postgresql://platscope@127.0.0.1:{}/postgres", pg.port());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("alpha.db");
    quick_report("alpha", dir.path(), &db);
    let push = |host: &str, db: &Path| {
        let args = ["results", "push", "--to", &url, "--db", db.to_str().unwrap()];
        ok("push", test_support::cli::as_host(host, dir.path(), &args))
    };
    let first = push("alpha", &db);
    assert!(first.trim_end().ends_with("; the headline figures of 1 report(s)"), "{first}");
    let again = push("alpha", &db);
    assert!(!again.contains("headline figures"), "{again}");

    // The store of the previous release: its reports' figures are computed, then pushed.
    let old = fixture_copy(dir.path());
    let pushed = push("fixture-host", &old);
    assert!(pushed.contains("the headline figures of 2 report(s)"), "{pushed}");
    assert_eq!(count(&pg, "SELECT count(*) FROM fleet_reports"), 3);
    assert_eq!(count(&pg, "SELECT count(DISTINCT digest) FROM fleet_facts"), 2);

    // The shared store reads back what each local store holds, in (host, time) order.
    let shared = results::PgStore::connect(&url).unwrap();
    let remote = shared.all_report_figures(&FleetFilter::default()).unwrap();
    let mut local = Vec::new();
    for path in [&db, &old] {
        let store = SqliteStore::open_read_only(path).unwrap();
        local.extend(store.all_report_figures(&FleetFilter::default()).unwrap());
    }
    local.sort_by(|a, b| (&a.host, &a.recorded_at).cmp(&(&b.host, &b.recorded_at)));
    assert_eq!(remote, local);
    // Every pushed report has its figures: nothing left to backfill in the shared store.
    assert!(shared.reports_without_figures().unwrap().is_empty());

    // A report recorded with --db postgresql://… pushes its figures as it stores them.
    let page = dir.path().join("page-gamma");
    let args = ["report", "--quick", "--sections", "compression", "--out", page.to_str().unwrap()];
    let mut args = args.to_vec();
    args.extend(["--db", &url]);
    ok("report --db postgresql://…", test_support::cli::as_host("gamma", dir.path(), &args));
    let gamma = FleetFilter { hosts: vec!["gamma".into()], ..FleetFilter::default() };
    let pushed = shared.all_report_figures(&gamma).unwrap();
    assert_eq!(pushed.len(), 1);
    assert!(pushed[0].figures.iter().any(|f| f.name == "compress lz4"), "{pushed:?}");
    assert!(shared.reports_without_figures().unwrap().is_empty());
}
