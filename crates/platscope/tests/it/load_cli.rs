//! `platscope load` as a user runs it: usage errors, unreachable servers, and (live tier) a
//! prepared PostgreSQL, a sweep with its chart, and a server killed mid-run.

use std::process::{Command, Stdio};
use std::time::Duration;
use test_tier::live;

use test_support::{newest_run, platscope, text};
use testdb::{PgOptions, Postgres};

#[test]
fn load_usage_errors_exit_2() {
    for args in [
        &["--no-store", "load", "--server", "postgres", "--rate", "-5"][..],
        &[
            "--no-store",
            "load",
            "--server",
            "postgres",
            "--rate",
            "10",
            "--arrivals",
            "poisson",
            "--jitter",
            "5",
        ],
        &["--no-store", "load", "--server", "oracle", "--rate", "10"],
        &[
            "--no-store",
            "load",
            "--server",
            "postgres",
            "--rate",
            "10",
            "--workload",
            "/no/such.sql",
        ],
        &["--no-store", "load", "--server", "postgres"],
    ] {
        let out = platscope(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert_eq!(text(&out.stderr).trim().lines().count(), 1, "{args:?}: {}", text(&out.stderr));
    }
}

#[test]
fn an_unreachable_socket_is_one_line_and_exit_1() {
    for server in ["postgres", "mariadb"] {
        let out = platscope(&[
            "--no-store",
            "load",
            "--server",
            server,
            "--socket",
            "/nonexistent/platscope-test/s",
            "--rate",
            "10",
            "--duration",
            "1",
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{server}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{server}: {err}");
        assert!(err.contains("cannot connect"), "{server}: {err}");
    }
}

#[live]
fn prepare_sweep_and_a_server_killed_mid_run() {
    let mut pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("results.db").display().to_string();
    let url = pg.conninfo();
    let out = platscope(&[
        "--no-store",
        "load",
        "prepare",
        "--server",
        "postgres",
        "--url",
        &url,
        "--tables",
        "2",
        "--rows",
        "500",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("prepared 2 table(s)"), "{}", text(&out.stdout));

    let chart = dir.path().join("sweep.html");
    let chart_s = chart.display().to_string();
    let out = platscope(&[
        "--db",
        &db,
        "load",
        "--server",
        "postgres",
        "--url",
        &url,
        "--sweep-rate",
        "50,100",
        "--duration",
        "1",
        "--workload",
        "read-only",
        "--out",
        &chart_s,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = std::fs::read_to_string(&chart).expect("chart written");
    assert!(page.contains("chart-load-latency") && page.matches("<svg").count() == 3, "{page}");
    assert!(text(&out.stdout).contains("achieved"), "{}", text(&out.stdout));

    // The driver's own lateness beside the schedule lag: at a rate the server keeps up with,
    // most transactions find their connection waiting, and how late it woke to send is measured
    // for those; it is part of their lag, so never above the lag's largest.
    let out = platscope(&[
        "--no-store",
        "--json",
        "load",
        "--server",
        "postgres",
        "--url",
        &url,
        "--rate",
        "200",
        "--duration",
        "2",
        "--workload",
        "read-only",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let (late, lag) = (&run["driver_late"], &run["lag"]);
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k}: {run}"));
    assert!(n(late, "count") > n(&run, "scheduled") / 2, "most sends waited: {run}");
    assert!(n(late, "count") <= n(&run, "scheduled"), "{run}");
    assert!(n(late, "p50_ns") <= n(late, "p999_ns") && n(late, "p999_ns") <= n(late, "max_ns"));
    assert!(n(late, "max_ns") <= n(lag, "max_ns") + n(lag, "max_ns") / 500, "{run}");
    let out = platscope(&[
        "--no-store",
        "load",
        "--server",
        "postgres",
        "--url",
        &url,
        "--rate",
        "100",
        "--duration",
        "1",
    ]);
    let shown = text(&out.stdout);
    assert!(shown.contains("driver late") && shown.contains("woke to send"), "{shown}");

    // Bad credentials: one line, exit 1.
    let bad = format!("{url} user=nobody_here");
    let out =
        platscope(&["--no-store", "load", "--server", "postgres", "--url", &bad, "--rate", "10"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("nobody_here"), "{}", text(&out.stderr));

    // The server restarts mid-run: the run rides through (reconnecting), reports the outage and
    // exits 0; stored with its window.
    let spawn = |seconds: &str, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_platscope"))
            .args(["--db", &db, "load", "--server", "postgres", "--url", &url, "--rate", "100"])
            .args(["--duration", seconds])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("runs")
    };
    let child = spawn("6", &[]);
    std::thread::sleep(Duration::from_millis(2000));
    pg.restart(libc::SIGINT, Duration::from_millis(500)).expect("PostgreSQL restarts");
    let out = child.wait_with_output().expect("ends");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("OUTAGE: ") && stdout.contains("outage  from"), "{stdout}");
    assert!(!stdout.contains("INTERRUPTED"), "{stdout}");
    let shown = platscope(&["--json", "results", "show", &newest_run(&db), "--db", &db]);
    let shown = text(&shown.stdout).replace([' ', '\n'], "");
    let stored = shown.split("\"outages\":[{").nth(1).unwrap_or_else(|| panic!("{shown}"));
    assert!(
        stored.split(']').next().is_some_and(|o| o.contains("\"first_success_s\":")),
        "{stored}"
    );

    // --on-disconnect stop: what ran is printed and stored as interrupted, exit 1.
    let child = spawn("6", &["--on-disconnect", "stop"]);
    std::thread::sleep(Duration::from_millis(2000));
    // SIGQUIT: immediate shutdown, backends end at once.
    pg.restart(libc::SIGQUIT, Duration::from_millis(200)).expect("PostgreSQL restarts");
    let out = child.wait_with_output().expect("ends");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("went away"), "{err}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("INTERRUPTED"), "{stdout}");
    let list = platscope(&["--json", "results", "list", "--db", &db]);
    let listed = text(&list.stdout);
    assert!(listed.matches("\"load").count() >= 3, "{listed}");
    assert!(listed.replace([' ', '\n'], "").contains("\"interrupted\":true"), "{listed}");

    // The server goes away for good: the run keeps its schedule to the end, every transaction
    // after the loss failed, exit 1 naming it.
    let child = spawn("4", &[]);
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill has no memory preconditions; the PID is the test's postmaster.
    unsafe { libc::kill(pg.pid() as i32, libc::SIGQUIT) };
    let out = child.wait_with_output().expect("ends");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("did not come back before the end"), "{err}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("no transaction completed after it"), "{stdout}");
}
