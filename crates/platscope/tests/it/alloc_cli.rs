//! `platscope alloc` as a user runs it: the built-in workload under two allocators stored with
//! labelled metrics and drawn as a page, a command workload, a database server end to end, and
//! the errors a user can make (exit 2) or a command can cause (exit 1), each one clear line.

use std::process::Output;
use std::time::{Duration, Instant};
use test_support::{platscope, text};
use test_tier::live;

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

fn fails(out: &Output, code: i32, needle: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(err.contains(needle), "expected '{needle}' in: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
}

#[test]
fn usage_errors_are_one_line_and_exit_2() {
    fails(&platscope(&["alloc", "--allocators", "glibc:arena_mox=1"]), 2, "arena_max");
    fails(&platscope(&["alloc", "--allocators", "nosuchalloc"]), 2, "--allocator nosuchalloc=PATH");
    fails(&platscope(&["alloc", "--allocator", "x=/nonexistent/libx.so"]), 2, "no such file");
    fails(&platscope(&["alloc", "--", "true"]), 2, "--metric REGEX");
    fails(&platscope(&["alloc", "--metric", "(", "--", "true"]), 2, "regular expression");
    fails(&platscope(&["alloc", "--threads", "1,2", "--ops", "1", "--", "true"]), 2, "{threads}");
    fails(&platscope(&["alloc", "--cross-thread", "1.5"]), 2, "--cross-thread");
}

#[live]
fn builtin_runs_are_verified_stored_and_drawn() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("results.db").display().to_string();
    let html = dir.path().join("alloc.html").display().to_string();
    let json = ok(&platscope(&[
        "--db",
        &db,
        "--json",
        "alloc",
        "--allocators",
        "glibc,jemalloc",
        "--threads",
        "1,2",
        "--repeat",
        "2",
        "--ops",
        "50000",
        "--html",
        &html,
    ]));
    let run: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(run["runs"].as_array().map(Vec::len), Some(8), "{run}");
    assert!(run["runs"][0]["verified"].is_string());
    // Each jemalloc group says what its verdict rests on, with the ratio's interval.
    let judged: Vec<&serde_json::Value> = run["groups"]
        .as_array()
        .map(|g| g.iter().filter(|g| g["allocator"] == "jemalloc").collect())
        .unwrap_or_default();
    assert_eq!(judged.len(), 2, "{run}");
    for g in judged {
        assert_eq!(g["rests_on"], "2 runs each", "{g}");
        assert!(
            g["judgement"]["ratio_low"].is_f64() && g["judgement"]["ratio_high"].is_f64(),
            "{g}"
        );
    }
    let page = std::fs::read_to_string(&html).expect("page");
    assert!(page.contains("chart-alloc-relative") && page.contains("data-allocator=\"jemalloc\""));
    let shown = ok(&platscope(&["results", "show", "--db", &db, "1"]));
    assert!(shown.contains("alloc_throughput{allocator=jemalloc,threads=2}"), "{shown}");
}

#[live]
fn a_command_is_measured_and_its_failures_are_clear() {
    let out = ok(&platscope(&[
        "--no-store",
        "alloc",
        "--allocators",
        "glibc,tcmalloc",
        "--threads",
        "1",
        "--repeat",
        "1",
        "--metric",
        r"rate=(\d+)",
        "--",
        "sh",
        "-c",
        "sleep 0.2; echo rate=42",
    ]));
    assert!(out.contains("tcmalloc") && out.contains("42"), "{out}");
    fails(
        &platscope(&["--no-store", "alloc", "--ops", "1", "--", "sh", "-c", "exit 4"]),
        1,
        "exited with status 4",
    );
    fails(
        &platscope(&["--no-store", "alloc", "--metric", "tps=(\\d+)", "--", "sleep", "0.1"]),
        1,
        "printed nothing matching --metric",
    );
}

#[live]
fn a_database_server_under_two_allocators_end_to_end_in_two_minutes() {
    let start = Instant::now();
    let json = ok(&platscope(&[
        "--no-store",
        "--json",
        "alloc",
        "--server",
        "postgres",
        "--allocators",
        "glibc,jemalloc",
        "--threads",
        "2",
        "--repeat",
        "1",
        "--seconds",
        "3",
    ]));
    let run: serde_json::Value = serde_json::from_str(&json).expect("json");
    let runs = run["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "{run}");
    for r in runs {
        assert!(r["throughput"].as_f64().is_some_and(|t| t > 0.0), "{r}");
        assert!(r["cpu"]["process_s"].as_f64().is_some_and(|c| c > 0.0), "server CPU: {r}");
    }
    let je = runs.iter().find(|r| r["allocator"] == "jemalloc").expect("jemalloc run");
    assert!(je["verified"].as_str().is_some_and(|v| v.contains("libjemalloc")), "{je}");
    assert!(start.elapsed() < Duration::from_secs(120), "took {:?}", start.elapsed());
}

/// `--allocator x=libz.so.1` (a real library, mapped, not an allocator) is refused before
/// measuring in the built-in workload, a command and a `--server` run, naming where malloc
/// resolved; glibc beside it is measured and printed, `x` never is, and the run exits 1 (what
/// was asked was not all done).
#[live]
fn a_library_that_is_not_an_allocator_is_refused_everywhere() {
    let libz = system_library("libz.so.1");
    let x = format!("x={libz}");
    let builtin = ["--no-store", "--json", "alloc", "--allocator", &x, "--allocators", "glibc"];
    let tiny = ["--threads", "1", "--repeat", "1", "--ops", "20000"];
    let command = ["--", "sleep", "0.2"];
    let runs: [Vec<&str>; 3] = [
        [&builtin[..], &tiny[..]].concat(),
        [&builtin[..], &["--threads", "1", "--repeat", "1", "--ops", "1"], &command[..]].concat(),
        [&builtin[..], &["--server", "postgres", "--threads", "1", "--repeat", "1"]].concat(),
    ];
    for args in runs {
        let out = platscope(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        let refusal =
            err.lines().find(|l| l.contains("x refused")).unwrap_or_else(|| panic!("{err}"));
        assert!(refusal.contains("malloc resolves to") && refusal.contains("libc.so"), "{refusal}");
        let b: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let runs = b["runs"].as_array().expect("runs");
        assert!(runs.iter().any(|r| r["allocator"] == "glibc"), "{b}");
        assert!(!runs.iter().any(|r| r["allocator"] == "x"), "{b}");
        assert!(b["refused"].as_array().is_some_and(|r| r.iter().any(|r| r["allocator"] == "x")));
    }
}

/// A library of the system's multiarch directory (x86-64 or arm64).
fn system_library(name: &str) -> String {
    ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"]
        .into_iter()
        .map(|dir| format!("{dir}/{name}"))
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or_else(|| panic!("{name} installed"))
}

/// A candidate that is not an allocator — zlib, libm, a text file — is refused in one line,
/// the other allocator is measured, stored and printed, and the run exits 1: a candidate that
/// was named and could not be measured is a failure of what was asked, as `cp a b dir/` fails
/// when one of its files cannot be copied.
#[live]
fn a_refused_candidate_fails_the_run_after_the_others_are_measured_and_stored() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text_file = dir.path().join("notes.txt");
    std::fs::write(&text_file, "not a library\n").expect("write the text file");
    let candidates = [
        ("zlib", system_library("libz.so.1")),
        ("libm", system_library("libm.so.6")),
        ("notes", text_file.display().to_string()),
    ];
    for (i, (name, path)) in candidates.iter().enumerate() {
        let db = dir.path().join(format!("results-{i}.db")).display().to_string();
        let candidate = format!("{name}={path}");
        let out = platscope(&[
            "--db",
            &db,
            "alloc",
            "--allocator",
            &candidate,
            "--allocators",
            "glibc",
            "--threads",
            "1",
            "--repeat",
            "1",
            "--ops",
            "20000",
        ]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{name}: exit 1, not 0 or 2: {stderr}");
        // The refusal: one line naming the candidate and why.
        let refusals: Vec<&str> =
            stderr.lines().filter(|l| l.starts_with(&format!("alloc: {name} refused: "))).collect();
        assert_eq!(refusals.len(), 1, "{name}: one refusal line: {stderr}");
        assert!(refusals[0].contains(path.as_str()), "{name}: names the library: {stderr}");
        // The end: one line naming what was refused, last.
        let last = stderr.trim_end().lines().last().unwrap_or_default();
        assert!(last.contains(&format!("refused: {name}")), "{name}: {stderr}");
        // glibc was measured and printed…
        let glibc_row = stdout.lines().find(|l| l.trim_start().starts_with("glibc "));
        assert!(glibc_row.is_some_and(|l| l.contains("1.00×")), "{name}: glibc printed: {stdout}");
        assert!(stdout.contains(&format!("refused: {name} ")), "{name}: {stdout}");
        // …and stored, with the refusal and without any run of the candidate.
        let stored = platscope(&["--db", &db, "--json", "results", "show", "1"]);
        assert!(stored.status.success(), "{name}: {}", text(&stored.stderr));
        let run: serde_json::Value = serde_json::from_slice(&stored.stdout).expect("json");
        let result = &run["result"];
        let runs = result["runs"].as_array().expect("stored runs");
        assert!(runs.iter().any(|r| r["allocator"] == "glibc"), "{name}: {run}");
        assert!(!runs.iter().any(|r| r["allocator"] == *name), "{name}: {run}");
        let refused = result["refused"].as_array().expect("stored refusals");
        assert!(refused.iter().any(|r| r["allocator"] == *name), "{name}: {run}");
    }
}
