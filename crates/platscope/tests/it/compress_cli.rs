//! `platscope compress` and `platscope cpu scale` as a user runs them: stock `lz4 -d` and
//! `zstd -d` read what it writes, runs are stored with labelled metrics, bad input is exit 2.

use std::path::Path;
use std::process::{Command, Output};
use test_support::{platscope, platscope_with_stdin, text};
use test_tier::live;

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

#[live]
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

    // zstd, one frame per block (2 MiB by default, as pzstd -1), read by zstd.
    let zst = at("corpus.zst");
    let json = ok(&platscope(&[
        "--db", &db, "--json", "compress", "--format", "zstd", &corpus, "-o", &zst,
    ]));
    let run: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(
        (run["block_size"].as_u64(), run["blocks"].as_u64()),
        (Some(2 << 20), Some(2)),
        "{run}"
    );
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

#[live]
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

/// `--rounds N` compresses a file N times to nowhere, every round stored as a sample; it needs
/// --discard and a file, and says so in one line otherwise (exit 2, nothing written).
#[test]
fn rounds_store_a_sample_each_and_need_discard_and_a_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let at = |name: &str| dir.path().join(name).display().to_string();
    let (corpus, db) = (at("corpus.tsv"), at("results.db"));
    ok(&platscope(&["compress", "--make-corpus", "256KiB", &corpus]));
    let json = ok(&platscope(&[
        "--db",
        &db,
        "--json",
        "compress",
        "--discard",
        "-t",
        "2",
        "--rounds",
        "5",
        &corpus,
    ]));
    let run: serde_json::Value = serde_json::from_str(&json).expect("json");
    let rounds = run["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len(), 5, "{run}");
    let speeds: Vec<f64> = rounds.iter().filter_map(|r| r["mb_per_s"].as_f64()).collect();
    assert!(speeds.contains(&run["mb_per_s"].as_f64().expect("MB/s")), "the median round's");
    let list: serde_json::Value =
        serde_json::from_slice(&platscope(&["results", "list", "--db", &db, "--json"]).stdout)
            .expect("json");
    let id = list[0]["id"].as_i64().expect("the run's id").to_string();
    let shown: serde_json::Value =
        serde_json::from_slice(&platscope(&["results", "show", &id, "--db", &db, "--json"]).stdout)
            .expect("json");
    let samples = |name: &str| {
        let metrics = shown["metrics"].as_array().expect("metrics");
        let m = metrics.iter().find(|m| m["name"] == name).expect(name);
        m["samples"].as_array().map_or(0, Vec::len)
    };
    assert_eq!((samples("compress_throughput"), samples("compress_cpu_seconds_per_mb")), (5, 5));

    for (args, says) in [
        (vec!["--rounds", "3", corpus.as_str()], "give --discard"),
        (vec!["--rounds", "3", "--discard", "-"], "not standard input"),
        (vec!["--rounds", "0", "--discard", corpus.as_str()], "--rounds"),
    ] {
        let mut argv = vec!["--no-store", "compress"];
        argv.extend(args);
        let out = platscope_with_stdin(&argv, b"piped");
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(says), "{argv:?}: {}", text(&out.stderr));
    }
    assert!(!Path::new(&format!("{corpus}.lz4")).exists(), "nothing written");
}

/// `-` is standard input, as for lz4 and zstd: a pipe compresses and decompresses to the same
/// bytes; without -o or --discard, or beside another input, it is a usage error.
#[test]
fn a_dash_reads_standard_input_in_both_directions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let at = |name: &str| dir.path().join(name).display().to_string();
    let original: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8 ^ (i >> 13) as u8).collect();
    let (packed, unpacked) = (at("piped.lz4"), at("piped"));
    let out = platscope_with_stdin(
        &["--no-store", "--json", "compress", "-t", "2", "-", "-o", &packed],
        &original,
    );
    let json: serde_json::Value = serde_json::from_str(&ok(&out)).expect("json");
    assert_eq!(json["input"], "standard input", "{json}");
    assert_eq!(json["bytes_in"], original.len() as u64, "{json}");
    let compressed = std::fs::read(&packed).expect("the compressed file");
    ok(&platscope_with_stdin(&["--no-store", "compress", "-d", "-", "-o", &unpacked], &compressed));
    assert!(std::fs::read(&unpacked).expect("the decompressed file") == original);

    let unnamed = platscope_with_stdin(&["--no-store", "compress", "-"], &original);
    assert_eq!(unnamed.status.code(), Some(2), "{}", text(&unnamed.stderr));
    assert!(text(&unnamed.stderr).contains("-o"), "{}", text(&unnamed.stderr));
    let beside =
        platscope_with_stdin(&["--no-store", "compress", "--discard", "-", &packed], &original);
    assert_eq!(beside.status.code(), Some(2), "{}", text(&beside.stderr));
}

/// `-o -` writes the stream to standard output, as `lz4 -c` does, in both directions; the
/// run's figures go to standard error so they never mix with the data. A reader that goes away
/// is a one-line error, exit 1.
#[test]
fn a_dash_output_writes_standard_output_in_both_directions() {
    let original: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8 ^ (i >> 13) as u8).collect();
    for format in ["lz4", "zstd"] {
        let packed = platscope_with_stdin(
            &["--no-store", "--json", "compress", "--format", format, "-t", "2", "-", "-o", "-"],
            &original,
        );
        assert!(packed.status.success(), "{}", text(&packed.stderr));
        let json: serde_json::Value =
            serde_json::from_slice(&packed.stderr).expect("json on stderr");
        assert_eq!(json["output"], "standard output", "{json}");
        assert_eq!(json["bytes_out"], packed.stdout.len() as u64, "{json}");
        let magic: &[u8] =
            if format == "lz4" { &[0x04, 0x22, 0x4d, 0x18] } else { &[0x28, 0xb5, 0x2f, 0xfd] };
        assert!(packed.stdout.starts_with(magic), "{format}: a frame on stdout");
        let unpacked =
            platscope_with_stdin(&["--no-store", "compress", "-d", "-", "-o", "-"], &packed.stdout);
        assert!(unpacked.status.success(), "{}", text(&unpacked.stderr));
        assert!(unpacked.stdout == original, "{format}: the original bytes back on stdout");
        assert!(text(&unpacked.stderr).contains("standard output"), "the text goes to stderr");
    }

    // Bytes that do not compress, so the stream outgrows the pipe's buffer: the reader is gone
    // before platscope has written it all, whatever the timing.
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    let noise: Vec<u8> = (0..4_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("noise");
    std::fs::write(&input, &noise).expect("write");
    let mut child = test_support::command()
        .args(["--no-store", "compress", "-o", "-", &input.display().to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
    assert!(err.contains("cannot write standard output"), "{err}");
}

/// An existing output is refused without `--force` in both directions (exit 1, one line naming
/// `--force`), left byte for byte as it was with nothing beside it, and replaced with `--force`.
#[test]
fn compress_refuses_to_overwrite_without_force_in_both_directions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let at = |name: &str| dir.path().join(name).display().to_string();
    let (input, lz4, back) = (at("in.tsv"), at("in.tsv.lz4"), at("back.tsv"));
    let original: Vec<u8> = (0..200_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
    std::fs::write(&input, &original).expect("input");
    let precious = b"precious bytes, not a frame\n";
    let refused = |args: &[&str], path: &str| {
        std::fs::write(path, precious).expect("the file in the way");
        let out = platscope(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(err.contains("--force") && err.contains(path), "{err}");
        assert_eq!(std::fs::read(path).expect("still there"), precious, "left as it was");
    };
    let names = || {
        let mut n: Vec<String> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };

    // Compress: the default name and -o.
    refused(&["--no-store", "compress", "-t", "2", &input], &lz4);
    refused(&["--no-store", "compress", "-t", "2", &input, "-o", &back], &back);
    assert_eq!(names(), ["back.tsv", "in.tsv", "in.tsv.lz4"], "no temporary left behind");
    ok(&platscope(&["--no-store", "compress", "-t", "2", "--force", &input]));
    assert_ne!(std::fs::read(&lz4).expect("lz4"), precious, "--force replaced it");

    // Decompress: -o, and the name with the suffix taken off (the input itself).
    refused(&["--no-store", "compress", "-d", "-t", "2", &lz4, "-o", &back], &back);
    let copy = at("copy.tsv.lz4");
    std::fs::copy(&lz4, &copy).expect("copy");
    refused(&["--no-store", "compress", "-d", &copy], &at("copy.tsv"));
    ok(&platscope(&["--no-store", "compress", "-d", "-t", "2", "-f", &lz4, "-o", &back]));
    assert!(std::fs::read(&back).expect("back") == original, "-f replaced it with the original");

    // Several inputs: one taken name refuses the whole command before any run.
    let other = at("other.tsv");
    std::fs::write(&other, &original).expect("other");
    refused(&["--no-store", "compress", "-t", "2", &other, &input], &lz4);
    assert!(!Path::new(&format!("{other}.lz4")).exists(), "the first input was not run either");

    // --make-corpus too.
    refused(&["--no-store", "compress", "--make-corpus", "64KiB", &other], &other);
    ok(&platscope(&["--no-store", "compress", "--force", "--make-corpus", "64KiB", &other]));
    assert_eq!(std::fs::metadata(&other).expect("corpus").len(), 64 << 10);
    assert!(names().iter().all(|n| !n.starts_with('.')), "no temporary left: {:?}", names());
}

/// Starts `platscope ARGS`, sends `sig` after `after`, and waits for its end (10 s at most).
fn signalled(args: &[&str], sig: libc::c_int, after: std::time::Duration) -> Output {
    let child = test_support::command()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("platscope runs");
    std::thread::sleep(after);
    test_support::signal(&child, sig);
    // A silent input that held it would fail the test here ("still running after 10s").
    test_support::wait_within(child, std::time::Duration::from_secs(10)).0
}

#[test]
fn a_silent_input_is_ended_by_one_sigterm_or_ctrl_c_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fifo = dir.path().join("silent");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (fifo, out) = (fifo.display().to_string(), dir.path().join("out").display().to_string());
    // No writer ever opens the FIFO: the open and the reads would wait for ever.
    let wait = std::time::Duration::from_millis(400);
    let args = ["--no-store", "--json", "compress", &fifo, "-o", &out];
    let run = signalled(&args, libc::SIGTERM, wait);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let json: serde_json::Value = serde_json::from_slice(&run.stdout).expect("one JSON result");
    assert_eq!((json["interrupted"].as_bool(), json["bytes_in"].as_u64()), (Some(true), Some(0)));
    assert!(!Path::new(&out).exists(), "an interrupted run leaves no output");

    let run = signalled(&["--no-store", "compress", "-d", &fifo, "-o", &out], libc::SIGINT, wait);
    let err = text(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(err.contains("stopped (Ctrl-C or SIGTERM) before any input arrived"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!Path::new(&out).exists(), "nothing written");
}
