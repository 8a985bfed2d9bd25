//! The binary as users run it, on this machine: output layouts, exit codes, one-line errors.

use std::process::{Command, Stdio};
use test_support::{platscope, stderr, stdout};

/// `numactl --hardware` parsed into (available line, per-node cpus lines, sizes MB, frees MB,
/// distance rows).
struct Hardware {
    available: String,
    cpus: Vec<String>,
    sizes: Vec<i64>,
    frees: Vec<i64>,
    distances: Vec<String>,
}

fn parse_hardware(text: &str) -> Hardware {
    let mb = |line: &str| -> i64 {
        line.split_whitespace().nth(3).and_then(|v| v.parse().ok()).expect("MB figure")
    };
    let lines: Vec<&str> = text.lines().collect();
    let after = lines.iter().position(|l| *l == "node distances:").expect("distances");
    Hardware {
        available: lines[0].to_string(),
        cpus: lines
            .iter()
            .filter(|l| l.contains(" cpus:"))
            .map(|l| l.trim_end().to_string())
            .collect(),
        sizes: lines.iter().filter(|l| l.contains(" size: ")).map(|l| mb(l)).collect(),
        frees: lines.iter().filter(|l| l.contains(" free: ")).map(|l| mb(l)).collect(),
        distances: lines[after + 1..].iter().map(|l| l.trim_end().to_string()).collect(),
    }
}

#[test]
fn topo_hardware_agrees_with_numactl() {
    let numactl = Command::new("numactl")
        .arg("--hardware")
        .output()
        .expect("numactl must be installed for this test (scripts/setup.sh installs it)");
    let ours = platscope(&["topo", "--hardware"]);
    assert!(ours.status.success(), "{}", stderr(&ours));
    let (theirs_text, ours_text) = (stdout(&numactl), stdout(&ours));
    println!("numactl --hardware:\n{theirs_text}\nplatscope topo --hardware:\n{ours_text}");
    let (theirs, ours) = (parse_hardware(&theirs_text), parse_hardware(&ours_text));
    assert_eq!(ours.available, theirs.available);
    assert_eq!(ours.cpus, theirs.cpus);
    assert_eq!(ours.distances, theirs.distances);
    assert_eq!(ours.sizes.len(), theirs.sizes.len());
    for (i, (a, b)) in ours.sizes.iter().zip(&theirs.sizes).enumerate() {
        // Sizes are read a few ms apart; on VMs with hot-plugged memory they can grow between.
        assert!((a - b).abs() <= b / 50 + 1, "node {i} size: {a} MB vs numactl {b} MB");
    }
    for (i, (a, b)) in ours.frees.iter().zip(&theirs.frees).enumerate() {
        let drift = 256 + theirs.sizes[i] / 20;
        assert!((a - b).abs() <= drift, "node {i} free: {a} MB vs numactl {b} MB");
    }
}

#[test]
fn topo_json_describes_this_machine() {
    let out = platscope(&["topo", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").expect("online CPUs");
    let online = topo::idlist::parse(&online).expect("kernel list");
    let mut from_nodes: Vec<u64> = json["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .flat_map(|n| n["cpus"].as_array().expect("cpus").iter().map(|c| c.as_u64().expect("id")))
        .collect();
    from_nodes.sort_unstable();
    assert_eq!(from_nodes, online.iter().map(|&c| u64::from(c)).collect::<Vec<_>>());
    let env = &json["environment"];
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    assert_eq!(env["kernel"].as_str(), Some(kernel.trim()));
    assert!(env["thp_enabled"].is_string());
    assert!(json["nodes"][0]["memory"]["free_bytes"].as_u64().expect("free") > 0);
    assert!(json["caches"].as_array().is_some_and(|c| !c.is_empty()));
    // The document reads back into the library's type.
    let back: topo::Topology = serde_json::from_slice(&out.stdout).expect("schema matches");
    assert_eq!(back.nodes.len(), json["nodes"].as_array().map_or(0, Vec::len));
}

#[test]
fn topo_text_shows_every_section() {
    let out = platscope(&["topo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for section in [
        "NUMA nodes",
        "Distances",
        "HMAT",
        "Caches",
        "SMT:",
        "Environment",
        "THP",
        "numa_balancing",
        "clocksource",
        "cpufreq governor",
        "hypervisor",
        "huge pages",
    ] {
        assert!(text.contains(section), "missing {section:?} in\n{text}");
    }
}

#[test]
fn topo_facts_prints_the_machine_table() {
    let out = platscope(&["topo", "--facts"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    println!("{text}");
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    let kernel_line = text.lines().find(|l| l.starts_with("Kernel ")).expect("a Kernel row");
    assert_eq!(kernel_line.split_whitespace().nth(1), Some(kernel.trim()));
    let json = platscope(&["topo", "--facts", "--json"]);
    assert!(json.status.success(), "{}", stderr(&json));
    let facts: Vec<topo::Fact> = serde_json::from_slice(&json.stdout).expect("a list of facts");
    // The same rows in both forms, none empty.
    assert_eq!(facts.len(), text.lines().count());
    assert!(facts.iter().all(|f| !f.value.trim().is_empty()), "{facts:#?}");
    for setting in ["CPU model", "Sockets", "L1d cache", "Page sizes", "Mitigations"] {
        assert!(facts.iter().any(|f| f.setting == setting), "no {setting:?}");
    }
}

#[test]
fn place_reports_verified_pages() {
    let out =
        platscope(&["place", "--size", "32MiB", "--membind", "0", "--physcpubind", "0", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    println!("{json}");
    assert_eq!(json["touched_from_cpu"], 0);
    assert_eq!(json["placement"]["per_node"][0]["node"], 0);
    assert_eq!(json["placement"]["per_node"][0]["pages"], 8192);
    assert_eq!(json["placement"]["not_present"], 0);
}

#[test]
fn bad_input_gets_one_line_and_the_right_exit_code() {
    let cases: &[(&[&str], i32, &str)] = &[
        (&["place", "--size", "-1"], 2, "negative"),
        (&["place", "--size", "10QB"], 2, "unknown unit"),
        (&["place", "--size", "99999TiB"], 2, "use a smaller size"),
        (&["place", "--size", "0"], 2, "greater than zero"),
        (&["place", "--size", "1M", "--membind", "3-1"], 2, "runs backwards"),
        (&["place", "--size", "1M", "--membind", "a"], 2, "not a number"),
        (&["place", "--size", "1M", "--physcpubind", "1,,2"], 2, "empty element"),
        (&["place", "--size", "1M", "--physcpubind", "4096"], 2, "valid CPUs"),
        (&["place", "--size", "1M", "--membind", "63"], 2, "valid nodes"),
        (
            &["place", "--size", "1M", "--membind", "0", "--interleave", "0"],
            2,
            "cannot be used with",
        ),
        (
            &["place", "--size", "1M", "--cpunodebind", "0", "--physcpubind", "0"],
            2,
            "cannot be used with",
        ),
        (&["place", "--size", "1M", "--page", "3m"], 2, "unknown page size"),
        (&["place"], 2, "--size"),
        (&["topo", "--hardware", "--json"], 2, "cannot be used with"),
        (&["topo", "--facts", "--hardware"], 2, "cannot be used with"),
        (&["no-such-command"], 2, "unrecognized subcommand"),
        // Said before the run: nothing is measured or printed first.
        (&["--no-store", "--html-out", "/proc/no-such-dir/page.html", "timer"], 1, "--html-out"),
        (&["--no-store", "--html-out", "/", "timer"], 1, "is a directory"),
        (&["--no-store", "compress", "/no-such-file"], 2, "cannot read /no-such-file"),
        // Counts and rates say what is wrong in the same words everywhere, negatives included
        // (not clap's "0 is not in 1..18446744073709551615" or "unexpected argument '-1'").
        (&["--no-store", "io", "pattern", "1", "0"], 2, "0 is not allowed"),
        (&["--no-store", "io", "pattern", "1", "-3"], 2, "\"-3\" is negative"),
        (&["--no-store", "alloc", "--ops", "-1"], 2, "\"-1\" is negative"),
        (&["--no-store", "load", "--rate", "0"], 2, "must be above 0"),
        (&["--no-store", "load", "--rate", "-1"], 2, "must be above 0"),
        (&["--no-store", "load", "--rate", "5", "--duration", "-2"], 2, "positive number"),
        (&["--no-store", "mem", "latency", "--size", "1"], 2, "fewer than the 16 a chase needs"),
    ];
    for (args, code, needle) in cases {
        let out = platscope(args);
        let err = stderr(&out);
        println!("{args:?} -> {:?}: {}", out.status.code(), err.trim());
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line, got {err:?}");
        assert!(err.starts_with("platscope: "), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: expected {needle:?} in {err:?}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout after an error");
    }
    // A cause the message already says is not repeated after it.
    let out = platscope(&["--no-store", "compress", "/no-such-file"]);
    let err = stderr(&out);
    assert_eq!(err.matches("No such file").count(), 1, "said once: {err}");
}

#[test]
fn version_names_the_commit() {
    let out = platscope(&["--version"]);
    assert!(out.status.success());
    let text = stdout(&out);
    println!("{text}");
    assert!(text.starts_with("platscope 0."), "{text}");
    assert!(text.contains("(git "), "{text}");
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_platscope"))
        .arg("topo")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawns");
    drop(child.stdout.take()); // the reader goes away before anything is written
    let out = child.wait_with_output().expect("exits");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}
