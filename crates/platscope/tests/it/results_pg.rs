//! `results push` and `--db postgresql://…` against a real PostgreSQL 15 (live tier, root): a
//! throwaway cluster on loopback, two hosts' local stores pushed to it twice, listed and
//! compared across hosts, and a server that is not there.

use std::path::Path;
use std::process::Output;
use test_tier::live;

use testdb::{PgOptions, Postgres};

fn platscope(host: &str, data_home: &Path, args: &[&str]) -> Output {
    test_support::cli::as_host(host, data_home, args)
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A short measurement that records one run.
fn measure(host: &str, data_home: &Path, db: &str) -> Output {
    platscope(
        host,
        data_home,
        &["mem", "latency", "--size", "1MiB", "--duration-ms", "30", "--db", db],
    )
}

fn count(pg: &Postgres, sql: &str) -> usize {
    pg.sql(sql).expect("psql").trim().parse().expect("a count")
}

#[live("starts PostgreSQL 15 (root)")]
fn push_twice_holds_each_run_once_and_compares_across_hosts() {
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    // testdb's superuser, trust authentication on loopback.
    let url = format!("postgresql://platscope@127.0.0.1:{}/postgres", pg.port());
    let dir = tempfile::tempdir().expect("tmp");
    let (db_a, db_b) = (dir.path().join("a.db"), dir.path().join("b.db"));
    let (db_a, db_b) = (db_a.to_str().expect("utf-8"), db_b.to_str().expect("utf-8"));
    for _ in 0..2 {
        ok(&measure("alpha", dir.path(), db_a));
    }
    ok(&measure("beta", dir.path(), db_b));

    // Pushed twice: the second copies nothing, and the database holds each run once.
    let first =
        ok(&platscope("alpha", dir.path(), &["results", "push", "--to", &url, "--db", db_a]));
    assert!(first.starts_with("pushed 2 run(s)"), "{first}");
    let again =
        ok(&platscope("alpha", dir.path(), &["results", "push", "--to", &url, "--db", db_a]));
    assert!(
        again.starts_with("pushed 0 run(s)") && again.contains("2 were there already"),
        "{again}"
    );
    // libpq key=value form over the socket works too.
    let conninfo = pg.conninfo();
    ok(&platscope("beta", dir.path(), &["results", "push", "--to", &conninfo, "--db", db_b]));
    assert_eq!(count(&pg, "SELECT count(*) FROM runs"), 3);
    assert_eq!(count(&pg, "SELECT count(DISTINCT uuid) FROM runs"), 3);
    assert_eq!(count(&pg, "SELECT count(*) FROM runs WHERE host = 'alpha'"), 2);
    assert_eq!(count(&pg, "SELECT count(*) FROM hosts"), 2);
    assert!(count(&pg, "SELECT count(*) FROM metrics") >= 3, "metrics travel with their runs");

    // The local UUIDs are the shared ones: the same run, not a copy with a new identity.
    let local: serde_json::Value = serde_json::from_str(&ok(&platscope(
        "alpha",
        dir.path(),
        &["--json", "results", "list", "--db", db_a],
    )))
    .expect("json");
    let uuid = local[0]["uuid"].as_str().expect("a uuid").to_string();
    assert_eq!(count(&pg, &format!("SELECT count(*) FROM runs WHERE uuid = '{uuid}'")), 1);

    // list and compare read the shared database, across hosts.
    let list = ok(&platscope("alpha", dir.path(), &["results", "list", "--db", &url]));
    assert!(list.contains("alpha") && list.contains("beta"), "{list}");
    let compare = ok(&platscope(
        "alpha",
        dir.path(),
        &["results", "compare", "--db", &url, "--host", "alpha", "--host", "beta"],
    ));
    assert!(compare.contains("mem_latency"), "{compare}");
    let missing = platscope(
        "alpha",
        dir.path(),
        &["results", "compare", "--db", &url, "--host", "alpha", "--host", "gamma"],
    );
    assert_eq!(missing.status.code(), Some(2), "{}", String::from_utf8_lossy(&missing.stderr));

    // --db postgresql://… on a measuring command: stored in the default local file, and pushed.
    ok(&measure("gamma", dir.path(), &url));
    assert_eq!(count(&pg, "SELECT count(*) FROM runs WHERE host = 'gamma'"), 1);
    let default_db = dir.path().join("platscope/results.db");
    let default_db = default_db.to_str().expect("utf-8");
    let local = ok(&platscope("gamma", dir.path(), &["results", "list", "--db", default_db]));
    assert!(local.contains("mem latency"), "kept locally: {local}");
}

#[live("runs platscope against a closed port")]
fn an_unreachable_server_is_a_clear_error_and_the_local_store_is_intact() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = dir.path().join("a.db");
    let db = db.to_str().expect("utf-8");
    ok(&measure("alpha", dir.path(), db));
    let before = ok(&platscope("alpha", dir.path(), &["--json", "results", "list", "--db", db]));
    // Port 1 on loopback: nothing listens there.
    let url = "postgresql://platscope:secret@127.0.0.1:1/results";
    let out = platscope("alpha", dir.path(), &["results", "push", "--to", url, "--db", db]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("127.0.0.1:1") && err.contains("try again"), "{err}");
    assert!(!err.contains("secret"), "the password is not printed: {err}");
    let after = ok(&platscope("alpha", dir.path(), &["--json", "results", "list", "--db", db]));
    assert_eq!(before, after, "the local store is untouched");
    // A measuring command with an unreachable --db keeps its run locally and says so.
    let out = measure("alpha", dir.path(), url);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not pushed"));
    // A --to that is not a database is a usage error.
    let out = platscope("alpha", dir.path(), &["results", "push", "--to", "/tmp/x.db", "--db", db]);
    assert_eq!(out.status.code(), Some(2));
}
