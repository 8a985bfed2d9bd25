//! Two reports side by side, as the issue asks of them: a report taken while a CPU burner runs
//! on CPU 1 against a quiet one (two-thread bandwidth `slower`, the ratio that of the two
//! medians), and a quiet report against a second quiet run (no `faster` or `slower` on the
//! memory latency figures). One test in its own binary: nothing else of the test suite runs
//! beside these measurements.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::process::{Child, Command};

use test_support::{platscope, text};

/// A shell spinning on one CPU (taskset, from util-linux), killed by PID when dropped.
struct Spinner(Child);

impl Spinner {
    fn on_cpu(cpu: u32) -> Self {
        let child = Command::new("taskset")
            .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("taskset from util-linux");
        Spinner(child)
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A quick memory-only report into `db`; the id of its stored `report` run.
fn report(db: &str, out: &str) -> String {
    let run = platscope(&["report", "--quick", "--sections", "memory", "--out", out, "--db", db]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let list = platscope(&["results", "list", "--db", db, "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&list.stdout).expect("json");
    runs.as_array()
        .expect("runs")
        .iter()
        .filter(|r| r["command"] == "report")
        .filter_map(|r| r["id"].as_i64())
        .max()
        .expect("a report run")
        .to_string()
}

fn compare(db: &str, this: &str, baseline: &str, out: &str) -> Vec<serde_json::Value> {
    let run = platscope(&[
        "report",
        "--from-db",
        this,
        "--baseline",
        baseline,
        "--db",
        db,
        "--out",
        out,
        "--json",
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let v: serde_json::Value = serde_json::from_slice(&run.stdout).expect("json");
    v["comparison"].as_array().expect("comparison").clone()
}

#[test]
#[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
fn a_burner_on_cpu_1_makes_two_thread_bandwidth_slower_and_quiet_runs_stay_the_same() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| dir.path().join(name).display().to_string();
    let db = path("results.db");
    let quiet = report(&db, &path("a"));
    let again = report(&db, &path("b"));
    let burned = {
        let _spinner = Spinner::on_cpu(1);
        report(&db, &path("c"))
    };

    let figures = compare(&db, &burned, &quiet, &path("cmp"));
    let two = figures
        .iter()
        .find(|f| f["figure"] == "Bandwidth (read), 2 thread(s)")
        .unwrap_or_else(|| panic!("no two-thread bandwidth figure: {figures:?}"));
    assert_eq!(two["verdict"], "slower", "{two}");
    let (this, base) = (two["this"].as_f64().unwrap(), two["baseline"].as_f64().unwrap());
    let ratio = two["ratio"].as_f64().unwrap();
    assert!((ratio - this / base).abs() < 1e-9, "the ratio of the two medians: {two}");

    let figures = compare(&db, &again, &quiet, &path("self"));
    let latency: Vec<&serde_json::Value> =
        figures.iter().filter(|f| f["figure"].as_str().unwrap_or("").contains("latency")).collect();
    assert!(latency.len() >= 2, "{figures:?}");
    for f in latency {
        assert_eq!(f["verdict"], "same", "a quiet run against a quiet run of itself: {f}");
    }
}
