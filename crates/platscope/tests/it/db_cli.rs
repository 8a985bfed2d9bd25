//! `platscope db querystat` as a user runs it, against a throwaway PostgreSQL 15 started here.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use test_tier::live;

use test_support::text;
use testdb::{PgOptions, Postgres};

/// Starts `platscope ARGS` and returns once it says it is tracing (the probes are on), with
/// what it said until then and the rest of its standard error as it comes; bounded at 30 s.
fn start_tracing(args: &[&str]) -> (std::process::Child, String, mpsc::Receiver<String>) {
    let mut tracer = Command::new(env!("CARGO_BIN_EXE_platscope"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("platscope runs");
    let (lines_tx, lines) = mpsc::channel();
    let stderr = tracer.stderr.take().expect("piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let mut seen = String::new();
    while !seen.contains("platscope: tracing ") {
        match lines.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => seen += &(line + "\n"),
            Err(e) => {
                let _ = tracer.kill();
                panic!("not tracing after 30 s ({e}): {seen}");
            }
        }
    }
    (tracer, seen, lines)
}

/// A throwaway PostgreSQL 15 and a results database in a temp directory (kept while the
/// directory lives).
fn server_and_store() -> (Postgres, tempfile::TempDir, String) {
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL 15 starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("results.db").display().to_string();
    (pg, dir, db)
}

/// The rest of standard error once the tracer has ended (its reader sees the pipe close).
fn rest(lines: &mpsc::Receiver<String>) -> String {
    lines.iter().map(|line| line + "\n").collect()
}

#[live]
fn querystat_counts_the_statements_a_client_sends_and_is_stored() {
    let (pg, _dir, db) = server_and_store();
    let pid = pg.pid().to_string();
    let args = ["--json", "--db", &db, "db", "querystat", "1", "3", "--pid", &pid];
    let (tracer, said, lines) = start_tracing(&args);
    assert!(said.contains(&format!("PID {pid}")), "{said}");
    let started = Instant::now();
    let statements = 40;
    let script: String = (0..statements).map(|i| format!("SELECT {i};\n")).collect();
    let psql = pg.command("psql").args(["-q", "-c", &script]).output().expect("psql runs");
    assert!(psql.status.success(), "{}", text(&psql.stderr));
    assert!(started.elapsed() < Duration::from_secs(1), "the statements fit in the run");
    let out = tracer.wait_with_output().expect("platscope ends after COUNT intervals");
    let err = rest(&lines);
    assert!(out.status.success(), "{err}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON report");
    let count = report["all"]["count"].as_u64().expect("count");
    // One -c string of 40 statements is one simple-protocol query message the server executes
    // as 40 statements; psql itself sends none others with -q -c.
    assert!(count >= statements, "{count} queries traced, {statements} sent: {report}");
    assert_eq!(report["end"], "count", "{report}");

    let show = Command::new(env!("CARGO_BIN_EXE_platscope"))
        .args(["results", "list", "--db", &db])
        .output()
        .expect("runs");
    assert!(text(&show.stdout).contains("db querystat"), "{}", text(&show.stdout));
}

#[test]
fn querystat_without_root_or_with_a_bad_pid_says_why() {
    let out = Command::new(env!("CARGO_BIN_EXE_platscope"))
        .args(["--no-store", "db", "querystat", "1", "1", "--pid", "notapid"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("notapid"), "{}", text(&out.stderr));
}

/// Runs `db querystat 1 3 --slower 50` (plus `extra`) while a slow statement carrying a secret
/// literal runs; returns what the terminal showed and the stored run as `results show --json`.
fn slow_query_run(pg: &Postgres, db: &str, extra: &[&str]) -> (String, String) {
    let pid = pg.pid().to_string();
    let mut args = vec!["--db", db, "db", "querystat", "1", "3", "--pid", &pid, "--slower", "50"];
    args.extend_from_slice(extra);
    let (tracer, _, lines) = start_tracing(&args);
    let psql = pg
        .command("psql")
        .args(["-q", "-c", "SELECT pg_sleep(0.1), 'SECRET-customer-42'"])
        .output()
        .expect("psql runs");
    assert!(psql.status.success(), "{}", text(&psql.stderr));
    let out = tracer.wait_with_output().expect("platscope ends after COUNT intervals");
    assert!(out.status.success(), "{}", rest(&lines));
    let newest = test_support::newest_run(db);
    let show = Command::new(env!("CARGO_BIN_EXE_platscope"))
        .args(["results", "show", &newest, "--db", db, "--json"])
        .output()
        .expect("show");
    assert!(show.status.success(), "{}", text(&show.stderr));
    (text(&out.stdout), text(&show.stdout))
}

#[live]
fn slow_query_text_is_printed_whole_and_stored_without_its_literals() {
    let (pg, _dir, db) = server_and_store();

    let (terminal, stored) = slow_query_run(&pg, &db, &[]);
    assert!(terminal.contains("'SECRET-customer-42'"), "the terminal shows it whole: {terminal}");
    assert!(!stored.contains("SECRET"), "the literal reached the store: {stored}");
    assert!(stored.contains("SELECT pg_sleep($1), $2"), "stored normalized: {stored}");

    // Asked for, the text is stored whole.
    let (_, stored) = slow_query_run(&pg, &db, &["--store-query-text"]);
    assert!(stored.contains("SELECT pg_sleep(0.1), 'SECRET-customer-42'"), "{stored}");
}

#[live]
fn a_server_that_exits_under_querystat_ends_it_with_exit_1_and_keeps_what_was_traced() {
    let (pg, _dir, db) = server_and_store();
    let pid = pg.pid().to_string();
    // No COUNT: only the server's exit ends it (or the deadline below).
    let (tracer, _, lines) = start_tracing(&["--db", &db, "db", "querystat", "1", "--pid", &pid]);
    let psql = pg.command("psql").args(["-q", "-c", "SELECT 1; SELECT 2;"]).output();
    assert!(psql.expect("psql runs").status.success());
    pg.stop();
    let (out, _) = test_support::wait_within(tracer, Duration::from_secs(30));
    let err = rest(&lines);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains(&format!("(PID {pid}) exited during the run")), "{err}");
    let terminal = text(&out.stdout);
    assert!(
        terminal.contains("exited during the run; what was measured until then:"),
        "{terminal}"
    );
    let show = Command::new(env!("CARGO_BIN_EXE_platscope"))
        .args(["results", "show", &test_support::newest_run(&db), "--db", &db, "--json"])
        .output()
        .expect("show");
    assert!(show.status.success(), "{}", text(&show.stderr));
    let stored: serde_json::Value = serde_json::from_slice(&show.stdout).expect("JSON");
    let report = &stored["result"];
    assert_eq!(report["end"], "server_exited", "{stored}");
    assert!(report["all"]["count"].as_u64().is_some_and(|n| n >= 2), "{stored}");
}
