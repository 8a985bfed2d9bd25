//! `platscope report` and `platscope results` as a user runs them, against a real SQLite file.

use std::path::Path;
use test_support::{page_sections, platscope, text};
use test_tier::live;

/// A fresh directory (`tempfile`), removed when dropped; `path` names a file in it as an argument.
struct TempDir(tempfile::TempDir);

impl TempDir {
    fn new(name: &str) -> Self {
        let prefix = format!("platscope-{name}-");
        TempDir(tempfile::Builder::new().prefix(&prefix).tempdir().expect("temp dir"))
    }
    fn path(&self, name: &str) -> String {
        self.0.path().join(name).display().to_string()
    }
}

#[live]
fn quick_report_writes_html_records_runs_and_results_reads_them() {
    let dir = TempDir::new("report");
    let (out, db) = (dir.path("out"), dir.path("results.db"));
    let run = platscope(&["report", "--quick", "--out", &out, "--db", &db]);
    let stdout = text(&run.stdout);
    println!("{stdout}\n{}", text(&run.stderr));
    assert!(run.status.success(), "{}", text(&run.stderr));
    let report = Path::new(&out).join("report.html");
    assert!(stdout
        .trim_end()
        .ends_with(&format!("report: {}", report.canonicalize().expect("exists").display())));
    let html = std::fs::read_to_string(&report).expect("report.html");
    // Every section (the database too: the tests run as root with PostgreSQL 15 installed).
    for id in [
        "chart-machine",
        "chart-latency-size",
        "chart-latency-matrix",
        "chart-bandwidth-matrix",
        "chart-bandwidth-threads",
        "chart-bandwidth-kernels",
        "chart-loaded-latency",
        "chart-slb",
        "chart-slb-policies",
        "chart-c2c",
        "chart-contention",
        "chart-cpu-scale",
        "chart-timer",
        "chart-compress-lz4",
        "chart-compress-zstd",
        "chart-alloc-relative",
        "chart-load-throughput",
        "chart-network",
    ] {
        assert!(
            html.contains(&format!("<section id=\"{}\"", id.replacen("chart-", "sec-", 1))),
            "{id} missing from the report"
        );
    }
    // Which sections said "not measured", and why, so a failure names them.
    let unmeasured: Vec<String> = page_sections(&html)
        .into_iter()
        .filter(|(_, section)| section.contains("class=\"not-measured\""))
        .map(|(id, section)| {
            let why = section.split("class=\"not-measured\">").nth(1).unwrap_or("");
            format!("{id}: {}", why.split('<').next().unwrap_or(""))
        })
        .collect();
    assert!(
        unmeasured.is_empty() && !html.contains("class=\"not-measured\""),
        "a section did not run: {unmeasured:?}; stderr: {}",
        text(&run.stderr)
    );
    // A contents bar, and an anchored heading for every area it links to.
    for area in [
        "machine",
        "memory",
        "contention",
        "cpu",
        "compression",
        "allocators",
        "database",
        "network",
    ] {
        assert!(html.contains(&format!("<a href=\"#area-{area}\">")), "no link to {area}");
        assert_eq!(html.matches(&format!("id=\"area-{area}\"")).count(), 1, "{area}'s heading");
    }
    // The terminal carries the sections' headline figures.
    for figure in
        ["single-thread compression", "Core to core", "Idle DRAM latency", "Peak bandwidth"]
    {
        assert!(stdout.contains(figure), "{figure} missing from the summary: {stdout}");
    }
    assert!(!html.contains("<script"), "self-contained, no scripts");
    assert!(stdout.contains("latency"), "{stdout}");
    // The whole page as a person opens it: Chromium builds every section and logs nothing
    // about the page; the screenshot stays in target/tmp/report-browser/quick-report.png.
    test_support::browser::open_page(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        &report,
        "quick-report",
    );

    // Every step was stored; list, show, compare and export read them back.
    let list = platscope(&["results", "list", "--limit", "1000", "--db", &db, "--json"]);
    assert!(list.status.success(), "{}", text(&list.stderr));
    let runs: serde_json::Value = serde_json::from_slice(&list.stdout).expect("json");
    let ids: Vec<i64> =
        runs.as_array().expect("runs").iter().map(|r| r["id"].as_i64().expect("id")).collect();
    assert!(ids.len() >= 6, "report stored {} runs", ids.len());
    let commands: Vec<&str> =
        runs.as_array().expect("runs").iter().filter_map(|r| r["command"].as_str()).collect();
    assert!(commands.contains(&"mem latency --sweep"), "{commands:?}");
    // Every step is stored under its own command's kind: none under a kind of the report's own.
    assert!(commands.iter().all(|c| !c.starts_with("report:")), "{commands:?}");

    let latency_run = runs
        .as_array()
        .expect("runs")
        .iter()
        .find(|r| r["command"] == "mem latency --sweep")
        .expect("sweep stored");
    let id = latency_run["id"].as_i64().expect("id").to_string();
    let show = platscope(&["results", "show", &id, "--db", &db]);
    assert!(show.status.success(), "{}", text(&show.stderr));
    let shown = text(&show.stdout);
    assert!(shown.contains("mem_latency{size=16.0 KiB}"), "labelled metrics: {shown}");
    assert!(shown.contains("→"), "requested → verified placement: {shown}");

    let stored: serde_json::Value =
        serde_json::from_slice(&platscope(&["results", "show", &id, "--db", &db, "--json"]).stdout)
            .expect("json");
    assert!(
        stored["metrics"][0]["samples"].as_array().is_some_and(|s| s.len() >= 10),
        "raw samples kept"
    );
    assert!(stored["environment"]["kernel"].is_string());
    assert!(stored["topology"]["nodes"].is_array());

    let cmp = platscope(&["results", "compare", &id, &id, "--db", &db]);
    assert!(cmp.status.success(), "{}", text(&cmp.stderr));
    let cmp = text(&cmp.stdout);
    assert!(cmp.lines().skip(1).all(|l| l.ends_with(" same")), "a run against itself: {cmp}");
    assert!(!cmp.contains("faster") && !cmp.contains("slower"), "no change against itself: {cmp}");

    let csv = platscope(&["results", "export", &id, "--format", "csv", "--db", &db]);
    assert!(text(&csv.stdout).starts_with("run_id,metric,labels,unit,index,value\n"));

    // The whole page rebuilds from the database, byte for byte.
    let report_id = run_of(&runs, "report").expect("the report's own data is stored");
    let again = dir.path("again");
    let rebuilt = platscope(&["report", "--from-db", &report_id, "--out", &again, "--db", &db]);
    assert!(rebuilt.status.success(), "{}", text(&rebuilt.stderr));
    let rebuilt_html =
        std::fs::read_to_string(Path::new(&again).join("report.html")).expect("rebuilt page");
    assert_eq!(rebuilt_html, html, "report --from-db rebuilds the same page");

    // Its headline figures are stored beside it for the fleet reader: every one the page backs
    // with a stored metric, in page order.
    use results::FleetStore;
    let store = results::SqliteStore::open_read_only(Path::new(&db)).expect("opens");
    let fleet = store.all_report_figures(&results::FleetFilter::default()).expect("reads");
    assert_eq!(fleet.len(), 1);
    let page: Vec<(String, String)> = suite::from_db::rebuild(
        &store,
        &[report_id.parse().expect("an id")],
        &platscope::registry::REGISTRY,
    )
    .expect("rebuilds")
    .headlines()
    .into_iter()
    .filter_map(|(_, h)| Some((h.name, h.metric?)))
    .collect();
    let stored: Vec<(String, String)> =
        fleet[0].figures.iter().map(|f| (f.name.clone(), f.metric.clone())).collect();
    println!("{} headline figures stored: {stored:?}", stored.len());
    assert_eq!(stored, page, "a headline's metric is missing from its step's run");

    // Step runs draw their own sections, and only those.
    let scaling_id = run_of(&runs, "mem bandwidth --scale").expect("scaling stored");
    let parts = dir.path("parts");
    let from_steps =
        platscope(&["report", "--from-db", &id, &scaling_id, "--out", &parts, "--db", &db]);
    assert!(from_steps.status.success(), "{}", text(&from_steps.stderr));
    let page = std::fs::read_to_string(Path::new(&parts).join("report.html")).expect("page");
    assert!(
        page.contains("<svg id=\"chart-latency-size\"")
            && page.contains("<svg id=\"chart-bandwidth-threads\"")
            && !page.contains("id=\"sec-latency-matrix\""),
        "the two sections drawn, no other"
    );
    let not_reportable =
        platscope(&["report", "--from-db", "999999", "--out", &parts, "--db", &db]);
    assert_eq!(not_reportable.status.code(), Some(2), "{}", text(&not_reportable.stderr));
}

#[live]
fn bad_out_db_and_ids_are_clear_errors_that_touch_nothing() {
    let dir = TempDir::new("report-bad");
    let foreign = dir.path("foreign.db");
    std::fs::write(&foreign, b"this is not a database, and it must stay exactly like this")
        .expect("write");
    let before = std::fs::read(&foreign).expect("read");

    let cases: Vec<(Vec<String>, i32, &str)> = vec![
        (
            vec![
                "report".into(),
                "--out".into(),
                "/proc/platscope-report".into(),
                "--no-store".into(),
            ],
            1,
            "--out",
        ),
        (
            vec![
                "mem".into(),
                "latency".into(),
                "--size".into(),
                "1MiB".into(),
                "--db".into(),
                foreign.clone(),
            ],
            1,
            "not a platscope results database",
        ),
        (
            vec!["results".into(), "list".into(), "--db".into(), foreign.clone()],
            1,
            "not a platscope results database",
        ),
        (
            vec!["results".into(), "show".into(), "42".into(), "--db".into(), dir.path("empty.db")],
            1,
            "no results database",
        ),
        (
            vec![
                "mem".into(),
                "latency".into(),
                "--size".into(),
                "1MiB".into(),
                "--db".into(),
                "/proc/x/results.db".into(),
            ],
            1,
            "/proc/x/results.db",
        ),
        (
            vec!["mem".into(), "latency".into(), "--db".into(), "a.db".into(), "--no-store".into()],
            2,
            "cannot be used with",
        ),
    ];
    for (args, code, needle) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = platscope(&args);
        let err = text(&out.stderr);
        println!("{args:?} -> {:?}: {}", out.status.code(), err.trim());
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.contains(needle), "{args:?}: expected {needle:?} in {err:?}");
    }
    assert_eq!(std::fs::read(&foreign).expect("read"), before, "the foreign file was not touched");

    // An unknown run id in a real database is a usage error.
    let db = dir.path("real.db");
    assert!(platscope(&["mem", "latency", "--size", "1MiB", "--duration-ms", "10", "--db", &db])
        .status
        .success());
    let out = platscope(&["results", "show", "999", "--db", &db]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no run 999"));

    // A baseline that cannot be read is known before the report measures anything: no page,
    // no run stored.
    let runs = |db: &str| {
        text(&platscope(&["results", "list", "--limit", "1000", "--db", db, "--json"]).stdout)
    };
    let stored = runs(&db);
    let out_dir = dir.path("pages");
    let missing = dir.path("missing.db");
    let baselines: [(&str, &[&str], i32, &str); 5] = [
        (missing.as_str(), &[], 2, "no results database"),
        ("999", &[], 2, "no run 999"),
        (db.as_str(), &[], 2, "no report run"),
        (foreign.as_str(), &[], 1, "not a platscope results database"),
        (db.as_str(), &["--no-store"], 2, "drop --no-store"),
    ];
    for (baseline, extra, code, needle) in baselines {
        let mut args = vec!["report", "--quick", "--db", &db, "--out", &out_dir];
        if extra.contains(&"--no-store") {
            args.retain(|a| *a != "--db" && *a != db.as_str());
        }
        args.extend_from_slice(extra);
        args.extend(["--baseline", baseline]);
        let out = platscope(&args);
        let err = text(&out.stderr);
        println!("{args:?} -> {:?}: {}", out.status.code(), err.trim());
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.contains("--baseline") && err.contains(needle), "{args:?}: {err:?}");
        assert!(!Path::new(&out_dir).exists(), "{args:?} made --out or wrote a page");
        assert_eq!(runs(&db), stored, "{args:?} stored a run");
    }
}

#[live]
fn timer_and_pagecache_runs_are_stored_too() {
    let dir = TempDir::new("store-more");
    let db = dir.path("r.db");
    let file = dir.path("cached.txt");
    std::fs::write(&file, vec![7u8; 1 << 20]).expect("write");
    assert!(platscope(&["timer", "--batches", "10", "--db", &db]).status.success());
    assert!(platscope(&["pagecache", &file, "--read-from", "0", "--db", &db]).status.success());
    let list = platscope(&["results", "list", "--limit", "1000", "--db", &db, "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&list.stdout).expect("json");
    let commands: Vec<&str> =
        runs.as_array().expect("runs").iter().filter_map(|r| r["command"].as_str()).collect();
    assert_eq!(commands, vec!["pagecache", "timer"], "newest first");
    let id = runs[0]["id"].as_i64().expect("id").to_string();
    let shown = text(&platscope(&["results", "show", &id, "--db", &db]).stdout);
    assert!(
        shown.contains("pagecache_read_bandwidth{file=") && shown.contains(",node=0}"),
        "{shown}"
    );
    assert!(shown.contains("node 0: 256 pages"), "verified residency: {shown}");
}

/// The id of the first run of `command` in `results list --json`'s output.
fn run_of(runs: &serde_json::Value, command: &str) -> Option<String> {
    runs.as_array()?
        .iter()
        .find(|r| r["command"] == command)
        .and_then(|r| r["id"].as_i64())
        .map(|id| id.to_string())
}
