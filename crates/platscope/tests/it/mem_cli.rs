//! `platscope mem …` as users run it: output shapes, and bad input answered in one line.

use test_support::{platscope, text};
use test_tier::live;

#[live]
fn slb_prints_memhammer_lines_and_a_verified_summary() {
    let out = platscope(&["mem", "slb", "--pages", "1024", "--loops", "20", "--workers", "2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    println!("{stdout}");
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("Total ops")).collect();
    assert_eq!(lines.len(), 2);
    for line in lines {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f[..3], ["Total", "ops", "20480"]);
        assert_eq!(
            (f[3], f[4], f[6], f[7], f[9], f[10]),
            ("Avg", "nsec/op", "gettimeofday", "usec", "TPUT", "ops/sec")
        );
        let (ns, usec, tput): (f64, f64, f64) =
            (f[5].parse().expect("ns"), f[8].parse().expect("usec"), f[11].parse().expect("tput"));
        // memhammer's arithmetic: ns/op = usec × 1000 / ops, TPUT = ops / seconds.
        assert!((ns - usec * 1000.0 / 20480.0).abs() <= 0.05 + ns * 1e-3, "{line}");
        assert!((tput - 20480.0 / (usec / 1e6)).abs() <= tput * 1e-3, "{line}");
    }
    assert!(stdout.contains("spread"), "{stdout}");
    assert!(stdout.contains("verified"), "{stdout}");
}

#[live]
fn latency_json_has_distribution_and_placement() {
    // Beyond this machine's caches (the prefetch check needs twice the last-level cache): 4×
    // it, at least 128 MiB (a KVM guest here reports a 480 MiB L3).
    let size = format!("{}MiB", ((4 * last_level_cache()) >> 20).max(128));
    let out = platscope(&["mem", "latency", "--size", &size, "--duration-ms", "100", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let ns = &v["point"]["ns"];
    let (min, median, p99) = (
        ns["min"].as_f64().expect("min"),
        ns["median"].as_f64().expect("median"),
        ns["p99"].as_f64().expect("p99"),
    );
    assert!(min <= median && median <= p99, "{ns}");
    assert!(ns["samples"].as_u64().expect("samples") >= 10);
    assert_eq!(v["point"]["placement"]["not_present"], 0);
    assert!(
        v["prefetch_check"]["ratio"].as_f64().is_some(),
        "{size} is beyond this machine's caches"
    );
}

/// The last-level cache of this machine, in bytes, as the kernel reports it.
fn last_level_cache() -> u64 {
    topo::Topology::detect().expect("topology").last_level_cache_bytes()
}

#[live]
fn latency_sweep_marks_cache_levels() {
    // To a power of two at least twice the last-level cache (64 MiB on most machines).
    let to = (2 * last_level_cache()).next_power_of_two().max(64 << 20);
    let powers = (to / (16 << 10)).trailing_zeros() as usize + 1;
    let to_arg = format!("{}MiB", to >> 20);
    let out = platscope(&[
        "mem",
        "latency",
        "--sweep",
        "--from",
        "16KiB",
        "--to",
        &to_arg,
        "--duration-ms",
        "20",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    println!("{stdout}");
    assert!(stdout.contains("fits in L1d"), "{stdout}");
    assert!(stdout.contains("beyond the caches"), "{stdout}");
    assert_eq!(
        stdout.lines().count(),
        1 + powers + (powers - 1),
        "header, {powers} powers of two from 16 KiB to {to_arg}, the midpoints between them"
    );
}

#[live]
fn bad_mem_input_gets_one_line_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["mem", "slb", "--pages", "0", "--loops", "1"], "at least 1"),
        (&["mem", "slb", "--pages", "-5", "--loops", "1"], "negative"),
        (&["mem", "slb", "--pages", "ten", "--loops", "1"], "not a whole number"),
        (&["mem", "slb", "--pages", "99999999999999999999", "--loops", "1"], "too large"),
        (&["mem", "slb", "--pages", "4294967296", "--loops", "1"], "too large"),
        (&["mem", "slb", "--pages", "2147483648", "--loops", "8589934592"], "overflows"),
        (
            &["mem", "slb", "--pages", "1000000000", "--loops", "1", "--workers", "4"],
            "use a smaller size",
        ),
        (&["mem", "slb", "--pages", "1", "--loops", "1", "--cpus", "4096"], "valid CPUs"),
        (
            &["mem", "slb", "--pages", "1", "--loops", "1", "--cpus", "0", "--workers", "2"],
            "cannot be used with",
        ),
        (&["mem", "latency", "--size", "512"], "use at least"),
        (&["mem", "latency", "--stride", "12", "--size", "1MiB"], "multiple of 8"),
        (&["mem", "latency", "--page", "5m"], "unknown page size"),
        (&["mem", "latency", "--sweep", "--from", "1GiB", "--to", "1MiB"], "--from"),
        (&["mem", "scale", "--pages", "1", "--loops", "1", "--workers", "1,0"], "at least 1"),
    ];
    for (args, needle) in cases {
        let out = platscope(args);
        let err = text(&out.stderr);
        println!("{args:?} -> {:?}: {}", out.status.code(), err.trim());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.contains(needle), "{args:?}: expected {needle:?} in {err:?}");
    }
}

#[test]
fn c2c_and_shared_slb_refuse_bad_input_in_one_line() {
    let cases: &[(&[&str], &str)] = &[
        (&["mem", "c2c", "--cpus", "0"], "needs two CPUs"),
        (&["mem", "c2c", "--cpus", "0,0"], "needs two CPUs"),
        (&["mem", "c2c", "--line-on", "9"], "node 9 does not exist"),
        (&["mem", "c2c", "--mode", "lock"], "unknown mode"),
        (&["mem", "c2c", "--lines", "65"], "--lines 65: give 1 to 64 lines per pair"),
        (&["mem", "c2c", "--lines", "0"], "0 is not allowed"),
        (&["mem", "c2c", "--lines", "-3"], "is negative"),
        (&["mem", "c2c", "--lines", "eight"], "not a whole number"),
        (
            &["mem", "slb", "--shared", "--workers", "4096", "--pages", "1", "--loops", "1"],
            "CPUs allowed",
        ),
        (&["mem", "slb", "--lock", "spin", "--pages", "1", "--loops", "1"], "--shared"),
        (
            &["mem", "slb", "--shared", "--lock", "rw", "--pages", "1", "--loops", "1"],
            "unknown lock",
        ),
        (
            &["mem", "slb", "--shared", "--counters", "5000", "--pages", "1", "--loops", "1"],
            "give 1 to 4096",
        ),
        (
            &["mem", "slb", "--shared", "--processes", "--pages", "1", "--loops", "1"],
            "cannot be used with",
        ),
    ];
    for (args, needle) in cases {
        let mut all = vec!["--no-store"];
        all.extend_from_slice(args);
        let out = platscope(&all);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr:?} lacks {needle:?}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: one line: {stderr:?}");
    }
}

#[live]
fn c2c_and_shared_slb_print_their_tables() {
    let out = platscope(&["--no-store", "mem", "c2c", "--duration-ms", "50"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("round trip between CPUs"), "{stdout}");
    assert!(stdout.contains("verified on node"), "{stdout}");
    assert!(
        stdout.contains("across lines: each pair on 8 lines, each on its own page"),
        "{stdout}"
    );
    assert!(stdout.contains("page+offset ns: 0+0x000 "), "{stdout}");
    let out =
        platscope(&["--no-store", "mem", "c2c", "--duration-ms", "20", "--lines", "3", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let pair = &v["pairs"][0];
    assert!(pair["round_trip_ns"]["median"].is_f64(), "{pair}");
    let lines = pair["lines"].as_array().expect("lines");
    let pages: Vec<u64> = lines.iter().map(|l| l["page"].as_u64().expect("page")).collect();
    assert_eq!(pages, [0, 1, 2], "{pair}");
    assert!(lines.iter().all(|l| l["median_ns"].is_f64() && l["offset"].is_u64()), "{pair}");
    assert_eq!(pair["line_spread"]["lines"], 3, "{pair}");
    let out = platscope(&[
        "--no-store",
        "mem",
        "slb",
        "--shared",
        "--lock",
        "spin",
        "--workers",
        "2",
        "--pages",
        "64",
        "--loops",
        "200",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().filter(|l| l.starts_with("Total ops 12800 ")).count(), 2);
    assert!(stdout.contains("shared counters: 25600 of 25600 operations (exact)"), "{stdout}");
    assert!(stdout.contains("Jain's index"), "{stdout}");
}
