//! `platscope results textfile`: a real run recorded, written as a textfile, checked by
//! `promtool` and read by a real node_exporter.

use std::path::Path;
use std::process::{Command, Stdio};
use test_tier::live;

use testdb::{NodeExporter, NodeExporterOptions};

fn platscope(db: &Path, args: &[&str]) -> std::process::Output {
    test_support::command().arg("--db").arg(db).args(args).output().expect("running platscope")
}

/// The value of the sample whose line starts with `prefix` (name and labels).
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(prefix)?.trim().parse().ok())
}

#[test]
fn missing_store_or_dir_is_one_line_and_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("results.db");
    let one_line_exit_1 = |out: std::process::Output, says: &str| {
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    };
    let dir = tmp.path().to_str().unwrap();
    one_line_exit_1(platscope(&db, &["results", "textfile", "--dir", dir]), "no results database");
    // An empty store: the directory is checked next.
    drop(results::SqliteStore::open(&db).unwrap());
    one_line_exit_1(
        platscope(&db, &["results", "textfile", "--dir", "/nonexistent/dir"]),
        "is not a directory",
    );
    assert!(!tmp.path().join("platscope.prom").exists());
}

#[live("runs a benchmark, promtool and Debian's prometheus-node-exporter")]
fn node_exporter_reads_the_textfile() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("results.db");
    let dir = tmp.path().join("textfile");
    std::fs::create_dir(&dir).unwrap();

    let run = platscope(
        &db,
        &["--json", "mem", "latency", "--matrix", "--size", "1MiB", "--duration-ms", "20"],
    );
    assert!(run.status.success(), "mem latency: {}", String::from_utf8_lossy(&run.stderr));
    let shown = platscope(&db, &["--json", "results", "show", "1"]);
    assert!(shown.status.success(), "{}", String::from_utf8_lossy(&shown.stderr));
    let stored: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    let first = &stored["metrics"][0];
    assert_eq!(first["name"], "mem_latency");
    let (cpu_node, mem_node) = (
        first["labels"]["cpu_node"].as_str().unwrap(),
        first["labels"]["mem_node"].as_str().unwrap(),
    );
    let recorded_ns = first["median"].as_f64().unwrap();

    let out = platscope(&db, &["results", "textfile", "--dir", dir.to_str().unwrap()]);
    assert!(out.status.success(), "textfile: {}", String::from_utf8_lossy(&out.stderr));
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["platscope.prom".to_string()], "no temp file may be left behind");
    let text = std::fs::read_to_string(dir.join("platscope.prom")).unwrap();
    println!("{text}");

    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("promtool not runnable ({e}): run scripts/setup.sh --deps"));
    std::io::Write::write_all(check.stdin.as_mut().unwrap(), text.as_bytes()).unwrap();
    let checked = check.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );

    let exporter = NodeExporter::start(&NodeExporterOptions::default().textfile_dir(&dir))
        .unwrap_or_else(|e| panic!("{e}"));
    let metrics = exporter.metrics().unwrap_or_else(|e| panic!("{e}"));
    let log = exporter.log_file();
    assert!(exporter.stop(), "node_exporter did not stop on SIGTERM in time");
    assert_eq!(
        sample(&metrics, "node_textfile_scrape_error "),
        Some(0.0),
        "node_exporter rejected the textfile:\n{metrics}\n(log {})",
        log.display()
    );
    let prefix = format!(
        "platscope_bench_memory_latency_seconds{{cpu_node=\"{cpu_node}\",mem_node=\"{mem_node}\"}} "
    );
    let seconds = sample(&metrics, &prefix)
        .unwrap_or_else(|| panic!("no {prefix} in node_exporter's answer:\n{metrics}"));
    let relative = (seconds - recorded_ns * 1e-9).abs() / (recorded_ns * 1e-9);
    assert!(relative < 1e-9, "exported {seconds} s, recorded {recorded_ns} ns");
    assert!(sample(
        &metrics,
        "platscope_bench_last_run_timestamp_seconds{benchmark=\"memory_latency\"} "
    )
    .is_some_and(|t| t > 1.0e9));
}
