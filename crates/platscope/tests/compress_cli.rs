//! `platscope compress` and `platscope cpu scale` as a user runs them: stock `lz4 -d` and
//! `zstd -d` read what it writes, runs are stored with labelled metrics, bad input is exit 2.

use std::path::Path;
use std::process::{Command, Output};
use test_support::{platscope, text};

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

#[test]
#[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
fn compress_round_trips_through_stock_tools_and_is_stored() {
    let dir = tempfile::tempdir().expect("temp dir");
    let at = |name: &str| dir.path().join(name).display().to_string();
    let (corpus, db) = (at("corpus.tsv"), at("results.db"));
    ok(&platscope(&["compress", "--make-corpus", "3MiB", &corpus]));
    let original = std::fs::read(&corpus).expect("corpus");
    assert_eq!(original.len(), 3 << 20);

    // lz4 with two workers, read back by lz4 itself and by platscope -d.
    let json = ok(&platscope(&["--db", &db, "--json", "compress", "-t", "2", &corpus]));
    let run: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(run["bytes_in"], 3 << 20);
    assert!(run["ratio"].as_f64().is_some_and(|r| r > 0.3 && r < 0.7), "{run}");
    let lz4 = format!("{corpus}.lz4");
    let stock = Command::new("lz4").args(["-d", "-c", &lz4]).output().expect("lz4 runs");
    assert!(stock.status.success(), "{}", text(&stock.stderr));
    assert!(stock.stdout == original, "lz4 -d gives the original bytes");
    let back = at("back.tsv");
    ok(&platscope(&["--no-store", "compress", "-d", "-t", "2", &lz4, "-o", &back]));
    assert!(std::fs::read(&back).expect("back") == original, "platscope -d too");

    // zstd, one frame per block, read by zstd.
    let zst = at("corpus.zst");
    ok(&platscope(&["--db", &db, "compress", "--format", "zstd", &corpus, "-o", &zst]));
    let stock = Command::new("zstd").args(["-d", "-c", "-q", &zst]).output().expect("zstd runs");
    assert!(stock.status.success() && stock.stdout == original, "zstd -d gives the original");

    // Both runs are stored with labelled metrics.
    let list: serde_json::Value =
        serde_json::from_slice(&platscope(&["results", "list", "--db", &db, "--json"]).stdout)
            .expect("json");
    let headlines: Vec<String> = list
        .as_array()
        .expect("runs")
        .iter()
        .filter_map(|r| r["headline"][0].as_str().map(String::from))
        .collect();
    assert!(
        headlines
            .iter()
            .any(|h| h.starts_with("compress_throughput{") && h.contains("format=zstd")),
        "{headlines:?}"
    );
}

#[test]
#[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
fn cpu_scale_reports_each_step_with_busy_cpus() {
    let out = ok(&platscope(&[
        "--no-store",
        "--json",
        "cpu",
        "scale",
        "--units",
        "1,2",
        "--threads",
        "1,2",
        "--size",
        "4MiB",
    ]));
    let report: serde_json::Value = serde_json::from_str(&out).expect("json");
    let steps = report["steps"].as_array().expect("steps");
    assert!(steps.len() >= 3, "1 unit × 1 and 2 threads, then 2 units: {report}");
    for s in steps {
        assert!(s["mb_per_s"].as_f64().is_some_and(|v| v > 0.0), "{s}");
        assert!(s["verdict"].is_string(), "{s}");
    }
}

#[test]
fn bad_compress_input_is_a_usage_error_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("missing.tsv").display().to_string();
    let out = platscope(&["--no-store", "compress", &missing]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("missing.tsv"), "{}", text(&out.stderr));
    let two = platscope(&["--no-store", "compress", "a", "b", "-o", "c"]);
    assert_eq!(two.status.code(), Some(2), "{}", text(&two.stderr));
    let block = platscope(&["--no-store", "compress", "--block", "1KiB", "a"]);
    assert_eq!(block.status.code(), Some(2), "{}", text(&block.stderr));
    assert!(!Path::new(&format!("{missing}.lz4")).exists());
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0, "nothing written");
}
