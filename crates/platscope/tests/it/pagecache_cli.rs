//! `platscope pagecache` and `platscope timer` as users run them on this machine (one NUMA
//! node): a written file is cached on node 0, evict drops it, read-from gives a sane GB/s, bad
//! files each give one line while the others are processed, and the clock figures are sane.
//! Scratch files live under target/ (a disk filesystem; /tmp may be tmpfs elsewhere).

use std::io::Write;
use std::path::PathBuf;
use std::process::Output;
use test_tier::live;

use serde_json::Value;
use test_support::{platscope, text};

/// A file of `mib` MiB under target/, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str, mib: usize) -> Self {
        let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("pagecache-cli-{name}-{}", std::process::id()));
        let mut f = std::fs::File::create(&path).expect("create");
        let chunk: Vec<u8> = (0..1 << 20).map(|i| (i % 253) as u8).collect();
        for _ in 0..mib {
            f.write_all(&chunk).expect("write");
        }
        Scratch(path)
    }

    fn arg(&self) -> &str {
        self.0.to_str().expect("utf-8 path")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn json(out: &Output) -> Value {
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

fn residency(v: &Value) -> &Value {
    &v[0]["result"]["residency"]
}

#[live]
fn written_file_is_cached_on_node_0_and_evict_drops_it() {
    let f = Scratch::new("cycle", 32);
    let out = platscope(&["pagecache", f.arg()]);
    println!("{}", text(&out.stdout));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("cached: 8192 of 8192 pages (100.0%)"),
        "{}",
        text(&out.stdout)
    );

    let v = json(&platscope(&["pagecache", "--json", f.arg()]));
    let r = residency(&v);
    assert_eq!(r["pages"], 8192);
    assert_eq!(r["resident"], 8192, "just written: all cached");
    assert_eq!(r["nodes"][0]["node"], 0);
    assert_eq!(r["nodes"][0]["pages"], 8192);
    assert_eq!(r["nodes"][0]["percent_of_cached"], 100.0);

    let v = json(&platscope(&["pagecache", "--evict", "--json", f.arg()]));
    let evict = &v[0]["result"]["evict"];
    println!("{evict}");
    assert_eq!(evict["resident_before"], 8192);
    let after = evict["resident_after"].as_u64().expect("after");
    assert!(after * 20 < 8192, "{after} of 8192 pages still cached: more than 5%");
    assert!(residency(&v)["resident"].as_u64().expect("resident") * 20 < 8192);

    // Loading brings it back, under this process's (default) policy: node 0.
    let v = json(&platscope(&["pagecache", "--load", "--json", f.arg()]));
    assert_eq!(v[0]["result"]["load"]["bytes_read"], 32 << 20);
    assert_eq!(residency(&v)["resident"], 8192);
    assert_eq!(residency(&v)["nodes"][0]["node"], 0);
}

#[live]
fn read_from_node_0_is_sane() {
    let f = Scratch::new("read", 64);
    let out = platscope(&["pagecache", "--load", "--read-from", "0", f.arg()]);
    let stdout = text(&out.stdout);
    println!("{stdout}");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("GB/s = 10^9 bytes/s"), "{stdout}");

    let v =
        json(&platscope(&["pagecache", "--read-from", "0", "--passes", "5", "--json", f.arg()]));
    let read = &v[0]["result"]["reads"][0];
    assert_eq!(read["node"], 0);
    assert_eq!(read["passes"].as_array().expect("passes").len(), 5);
    assert_eq!(read["vs_home"], 1.0, "node 0 holds the cache: the ratio is against itself");
    let gbps = read["gbps"].as_f64().expect("gbps");
    // Copying cached pages to user space: well above a disk, well below any memory bus.
    assert!((0.2..200.0).contains(&gbps), "{gbps} GB/s");
}

#[live]
fn bad_files_give_one_line_each_and_the_good_one_is_still_done() {
    let good = Scratch::new("good", 1);
    let dir = env!("CARGO_TARGET_TMPDIR");
    let fifo = PathBuf::from(dir).join(format!("pagecache-cli-fifo-{}", std::process::id()));
    let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let fifo_arg = fifo.to_str().expect("utf-8");
    let missing = "/nonexistent/platscope-file";
    let out = platscope(&["pagecache", missing, dir, "/dev/zero", fifo_arg, good.arg()]);
    let _ = std::fs::remove_file(&fifo);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    println!("{stdout}\n{stderr}");
    assert_eq!(out.status.code(), Some(1), "runtime failure");
    assert!(stdout.contains("cached: 256 of 256 pages"), "the good file is reported: {stdout}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 4, "one line per bad file: {stderr}");
    assert!(lines[0].contains(missing) && lines[0].ends_with("no such file"));
    assert!(lines[1].contains("is a directory"));
    assert!(lines[2].contains("/dev/zero: is a character device"));
    assert!(lines[3].contains("is a FIFO") && lines[3].ends_with("(4 of 5 files failed)"));
    for l in &lines {
        assert!(l.starts_with("platscope: "), "{l}");
    }

    // One bad file alone: one line, no count.
    let out = platscope(&["pagecache", missing]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr), format!("platscope: {missing}: no such file\n"));

    // In JSON every file has an entry.
    let out = platscope(&["pagecache", "--json", missing, good.arg()]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v[0]["ok"], false);
    assert!(v[0]["error"].as_str().expect("error").ends_with("no such file"));
    assert_eq!(v[1]["ok"], true);
}

#[live]
fn empty_file_reports_zero_pages() {
    let f = Scratch::new("empty", 0);
    let out = platscope(&["pagecache", f.arg()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("cached: 0 of 0 pages (0.0%)"), "{}", text(&out.stdout));
    let out = platscope(&["pagecache", "--read-from", "0", f.arg()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("the file is empty"), "{}", text(&out.stderr));
}

#[live]
fn nonexistent_node_is_a_usage_error_before_any_file() {
    let f = Scratch::new("node", 1);
    for args in [
        vec!["pagecache", "--read-from", "7", f.arg()],
        vec!["pagecache", "--load", "--membind", "7", f.arg()],
        vec!["pagecache", "--load", "--interleave", "0,9", f.arg()],
    ] {
        let out = platscope(&args);
        let stderr = text(&out.stderr);
        println!("{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("does not exist (valid nodes: 0"), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing processed");
    }
    let out = platscope(&["pagecache", "--interleave", "0", f.arg()]);
    assert_eq!(out.status.code(), Some(2), "--interleave needs --load");
    let out = platscope(&["pagecache"]);
    assert_eq!(out.status.code(), Some(2), "a file is required");
}

#[live]
fn timer_figures_are_positive_and_the_vdso_beats_the_syscall() {
    let out = platscope(&["timer", "--batches", "50"]);
    let stdout = text(&out.stdout);
    println!("{stdout}");
    assert!(out.status.success(), "{}", text(&out.stderr));
    for needle in
        ["clock_gettime(CLOCK_MONOTONIC)", "gettimeofday", "kernel (forced)", "clocksource:"]
    {
        assert!(stdout.contains(needle), "{needle}: {stdout}");
    }
    let v = json(&platscope(&["timer", "--batches", "50", "--json"]));
    let timers = v["timers"].as_array().expect("timers");
    assert!(timers.len() >= 9, "{v}");
    let median = |name: &str| -> f64 {
        timers.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name} missing"))["ns"]
            ["median"]
            .as_f64()
            .expect("median")
    };
    for t in timers {
        let ns = t["ns"]["median"].as_f64().expect("median");
        assert!(ns > 0.0, "{t}");
        if let Some(c) = t["cycles"].as_f64() {
            assert!(c > 0.0, "{t}");
        }
    }
    let mono = median("clock_gettime(CLOCK_MONOTONIC)");
    let sys = median("syscall(SYS_clock_gettime, CLOCK_MONOTONIC)");
    assert!(mono <= sys, "monotonic {mono} ns > raw syscall {sys} ns");
    assert_eq!(
        timers.iter().find(|t| t["timer"]["kind"] == "syscall_monotonic").expect("syscall")["path"],
        "kernel"
    );
    assert!(v["choice"]["name"].is_string(), "a clock was picked: {}", v["choice"]);
    // Cycles come from the judged core clock; both of its methods gave a figure.
    let clock = &v["core_clock"];
    assert_eq!(v["core_ghz"], clock["ghz"], "{clock}");
    assert!(clock["add_ghz"].is_f64() && clock["mul_ghz"].is_f64(), "{clock}");
    if let Some(hz) = v["counter"]["measured_hz"].as_f64() {
        assert!((1e7..1e10).contains(&hz), "{hz}");
    }
}
