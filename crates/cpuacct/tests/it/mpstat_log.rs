//! `cpu util --from`: mpstat logs captured on this machine (sysstat 12.6.1 from Debian 12, and
//! sysstat 11.7.3 and 9.1.7 built from their release tags) and a hand-made 256-CPU one, read
//! back and printed the way the live command prints (fixtures/README.md says where each came
//! from).
//!
//! The expected figures are read from each fixture here, independently of the parser: mpstat's
//! own `all` line, each CPU's `%idle`.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use measure::Usage;
use std::collections::BTreeSet;
use std::path::PathBuf;

use cpuacct::cpuutil::mpstat_log::{parse, Item};
use cpuacct::cpuutil::render::{render_report, stamp_for, Sink};
use cpuacct::cpuutil::replay::{self, NodeCpus, ReplayError, Summary};
use cpuacct::cpuutil::{self, Options, Snapshot};
use measure::cpustat::parse_proc_stat;
use measure::time::ClockTicks;
use proptest::prelude::*;
use serde_json::Value;

/// The captured `/proc/stat` the parser's own tests read (measure's tests/fixtures/README.md).
const PROC_STAT: &str =
    include_str!("../../../measure/tests/fixtures/proc_stat_linux_6_18_captured.txt");

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

struct Run {
    result: Result<Summary, ReplayError>,
    out: String,
    notes: Vec<String>,
}

fn run(log: &str, opts: Options, nodes: Option<&NodeCpus>, json: bool) -> Run {
    let (mut out, mut notes) = (String::new(), Vec::new());
    let mut write = |t: &str| {
        out.push_str(t);
        Ok(true)
    };
    let mut note = |n: &str| notes.push(n.to_string());
    let mut sink = Sink { out: &mut write, note: &mut note };
    let result = replay::replay(log.as_bytes(), "the log", &opts, nodes, json, &mut sink);
    Run { result, out, notes }
}

fn json_lines(out: &str) -> Vec<Value> {
    out.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

const PLAIN: Options = Options { busy_only: false };
const BUSY: Options = Options { busy_only: true };

/// mpstat's own all-CPU lines of a text log (not the Average block, not the NODE table's):
/// (usr, sys, idle), found by the header's column names; whatever precedes the time is ignored.
fn mpstat_all_lines(text: &str) -> Vec<(f64, f64, f64)> {
    let mut names: Vec<String> = Vec::new();
    let mut in_cpu_table = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let toks: Vec<&str> = line.split_whitespace().collect();
        if let Some(i) = toks.iter().position(|t| *t == "CPU" || *t == "NODE") {
            if toks.iter().any(|t| t.starts_with('%')) {
                in_cpu_table = toks[i] == "CPU";
                names = toks[i + 1..].iter().map(|s| s.to_string()).collect();
                continue;
            }
        }
        if !in_cpu_table || line.contains("Average") {
            continue;
        }
        let Some(at) = toks.iter().position(|t| *t == "all") else { continue };
        let get = |name: &str| -> f64 {
            let col = names.iter().position(|n| n == name).unwrap();
            toks[at + 1 + col].parse().unwrap()
        };
        out.push((get("%usr"), get("%sys"), get("%idle")));
    }
    out
}

fn assert_all_lines_agree(name: &str, expected_intervals: usize) {
    let text = fixture(name);
    let want = mpstat_all_lines(&text);
    assert_eq!(want.len(), expected_intervals, "{name}: the fixture's own all lines");
    let r = run(&text, PLAIN, None, true);
    let summary = r.result.unwrap();
    assert_eq!(summary.intervals, expected_intervals, "{name}: {:?}", r.notes);
    assert_eq!(summary.unreadable, 0, "{name}: {:?}", r.notes);
    let got = json_lines(&r.out);
    assert_eq!(got.len(), want.len(), "{name}");
    for (v, (usr, sys, idle)) in got.iter().zip(&want) {
        let all = &v["all"];
        for (key, want) in [("usr", usr), ("sys", sys), ("idle", idle)] {
            let have = all[key].as_f64().unwrap();
            assert!((have - want).abs() <= 0.05, "{name}: {key} {have} vs mpstat's {want}");
        }
    }
}

#[test]
fn captured_mpstat_p_all_1_5_gives_mpstats_all_line_per_interval() {
    // The case `--from` was built for: mpstat -P ALL 1 5, plain and with a ctime date before
    // every line.
    assert_all_lines_agree("mpstat_sysstat12_debian12_2cpu_24h.txt", 5);
    assert_all_lines_agree("mpstat_sysstat12_debian12_2cpu_24h_ctime_each_line.txt", 5);
    assert_all_lines_agree("mpstat_sysstat12_debian12_2cpu_ampm.txt", 5);
    // A date before the first line of each run only (echo "$(date) $(mpstat -P ALL 1 1)").
    assert_all_lines_agree("mpstat_sysstat12_debian12_2cpu_24h_ctime_per_run.txt", 3);
    assert_all_lines_agree("mpstat_sysstat12_debian12_2cpu_24h_iso_each_line.txt", 3);
    assert_all_lines_agree("mpstat_sysstat12_debian12_2cpu_nodes_24h.txt", 3);
    assert_all_lines_agree("mpstat_sysstat12_debian12_2cpu_allonly_24h.txt", 3);
    assert_all_lines_agree("mpstat_sysstat11_7_3_built_2cpu_nodes_24h.txt", 3);
    // sysstat 9: no %gnice column.
    assert_all_lines_agree("mpstat_sysstat9_1_7_built_2cpu_24h.txt", 3);
    assert_all_lines_agree("mpstat_sysstat12_handmade_256cpu_24h.txt", 3);
}

#[test]
fn rows_print_as_mpstat_printed_them() {
    // Same columns, same two decimals: every row of ours is mpstat's row, token for token
    // (the time 24-hour; the AM/PM log's rows compared after the time).
    for (name, time_tokens) in [
        ("mpstat_sysstat12_debian12_2cpu_24h.txt", 1),
        ("mpstat_sysstat12_debian12_2cpu_ampm.txt", 2),
        ("mpstat_sysstat12_handmade_256cpu_24h.txt", 1),
    ] {
        let text = fixture(name);
        let mpstat_rows: Vec<Vec<&str>> = text
            .lines()
            .filter(|l| !l.starts_with("Average") && !l.contains('%') && !l.starts_with("Linux"))
            .map(|l| l.split_whitespace().skip(time_tokens).collect::<Vec<_>>())
            .filter(|t| !t.is_empty())
            .collect();
        let r = run(&text, PLAIN, None, false);
        r.result.unwrap();
        let ours: Vec<Vec<&str>> = r
            .out
            .lines()
            .filter(|l| !l.contains('%') && !l.is_empty())
            .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>())
            .collect();
        assert_eq!(ours, mpstat_rows, "{name}");
    }
    // AM/PM becomes the live command's 24-hour clock.
    let r = run(&fixture("mpstat_sysstat12_debian12_2cpu_ampm.txt"), PLAIN, None, false);
    assert!(r.out.starts_with("21:14:08  CPU") || r.out.starts_with("21:14:09  CPU"), "{}", r.out);
}

#[test]
fn json_logs_sysstat_12_and_11() {
    for (name, all_label) in [
        ("mpstat_sysstat12_debian12_2cpu.json", "\"all\""),
        // sysstat 11.7 names the all line "-1".
        ("mpstat_sysstat11_7_3_built_2cpu_nodes.json", "\"-1\""),
    ] {
        let text = fixture(name);
        assert!(text.contains(&format!("\"cpu\": {all_label}")), "{name}");
        let doc: Value = serde_json::from_str(&text).unwrap();
        let stats = doc["sysstat"]["hosts"][0]["statistics"].as_array().unwrap();
        let r = run(&text, PLAIN, None, true);
        assert_eq!(r.result.unwrap().intervals, stats.len(), "{name}: {:?}", r.notes);
        for (v, s) in json_lines(&r.out).iter().zip(stats) {
            let want = &s["cpu-load"][0];
            for key in ["usr", "nice", "sys", "iowait", "steal", "idle"] {
                assert_eq!(v["all"][key], want[key], "{name} {key}");
            }
            assert_eq!(
                v["cpus"].as_array().unwrap().len(),
                s["cpu-load"].as_array().unwrap().len() - 1
            );
            assert_eq!(v["logged_at"]["time"], s["timestamp"]);
            if let Some(nodes) = s.get("node-load") {
                // The node lines as mpstat gave them (less its "all").
                assert_eq!(v["nodes"][0]["util"]["usr"], nodes[1]["usr"], "{name}");
            }
        }
    }
}

#[test]
fn busy_only_hides_exactly_the_idle_cpus() {
    for name in [
        "mpstat_sysstat12_handmade_256cpu_24h.txt",
        "mpstat_sysstat12_debian12_2cpu_24h.txt",
        "mpstat_sysstat12_debian12_2cpu_ampm.txt",
    ] {
        let text = fixture(name);
        // Per interval, from the text: the CPUs at %idle 100.00, and those with nothing but
        // idle and iowait (the live command's rule: waiting for I/O is idle).
        let mut idle_100: Vec<BTreeSet<u32>> = Vec::new();
        let mut idle_or_io: Vec<BTreeSet<u32>> = Vec::new();
        let mut shown_all: Vec<usize> = Vec::new();
        for line in text.lines().filter(|l| !l.starts_with("Average") && !l.contains('%')) {
            let t: Vec<&str> = line.split_whitespace().collect();
            let Some(cpu) = t.get(t.len().wrapping_sub(11)).and_then(|c| c.parse::<u32>().ok())
            else {
                if t.get(t.len().wrapping_sub(11)) == Some(&"all") {
                    idle_100.push(BTreeSet::new());
                    idle_or_io.push(BTreeSet::new());
                    shown_all.push(0);
                }
                continue;
            };
            let v: Vec<f64> = t[t.len() - 10..].iter().map(|x| x.parse().unwrap()).collect();
            *shown_all.last_mut().unwrap() += 1;
            if t[t.len() - 1] == "100.00" {
                idle_100.last_mut().unwrap().insert(cpu);
            }
            if v[0] + v[1] + v[2] + v[4] + v[5] + v[6] + v[7] + v[8] == 0.0 {
                idle_or_io.last_mut().unwrap().insert(cpu);
            }
        }
        let r = run(&text, BUSY, None, true);
        r.result.unwrap();
        let got = json_lines(&r.out);
        assert_eq!(got.len(), idle_100.len(), "{name}");
        for (k, v) in got.iter().enumerate() {
            let hidden: BTreeSet<u32> = v["hidden_idle"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_u64().unwrap() as u32)
                .collect();
            let shown: Vec<u32> = v["cpus"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["cpu"].as_u64().unwrap() as u32)
                .collect();
            assert_eq!(hidden, idle_100[k], "{name} interval {k}");
            assert_eq!(shown.len() + hidden.len(), shown_all[k], "{name} interval {k}");
            assert!(shown.iter().all(|c| !hidden.contains(c)));
        }
        if name.contains("256") {
            // The hand-made log has idle CPUs, and CPU 200 waits for I/O only: it is shown,
            // as `grep -v ' 100.00$'` shows it.
            let first = &idle_100[0];
            assert!(first.len() > 200 && !first.contains(&48) && !first.contains(&200));
            assert!(idle_or_io[0].contains(&200));
        }
        // As `grep -v ' 100.00$'`: no row left ends in 100.00.
        let r = run(&text, BUSY, None, false);
        for line in r.out.lines().filter(|l| !l.contains(" all ")) {
            assert!(!line.ends_with(" 100.00"), "{name}: {line}");
        }
    }
}

/// The live command's report from two captured /proc/stat readings.
fn live_report() -> Value {
    let before = parse_proc_stat(PROC_STAT).unwrap();
    let mut after = before.clone();
    for c in &mut after.cpus {
        c.times.user += 50;
        c.times.idle += 50;
    }
    let at = std::time::Instant::now();
    let a = Snapshot { at, epoch_s: 1.0, stat: before, event: None };
    let b = Snapshot {
        at: at + std::time::Duration::from_secs(1),
        epoch_s: 2.0,
        stat: after,
        event: None,
    };
    let report = cpuutil::compute(Some(&a), &b, ClockTicks::new(100), &PLAIN);
    serde_json::to_value(&report).unwrap()
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn json_has_the_live_commands_shape() {
    let live = live_report();
    for name in [
        "mpstat_sysstat12_debian12_2cpu_24h.txt",
        "mpstat_sysstat12_debian12_2cpu.json",
        "mpstat_sysstat12_debian12_2cpu_nodes_24h.txt",
    ] {
        let r = run(&fixture(name), PLAIN, None, true);
        r.result.unwrap();
        for v in json_lines(&r.out) {
            let extra: BTreeSet<String> = keys(&v).difference(&keys(&live)).cloned().collect();
            assert!(keys(&live).is_subset(&keys(&v)), "{name}: {v}");
            assert!(extra.iter().all(|k| k == "nodes" || k == "logged_at"), "{name}: {extra:?}");
            assert_eq!(keys(&v["all"]), keys(&live["all"]), "{name}");
            for cpu in v["cpus"].as_array().unwrap() {
                assert_eq!(keys(cpu), keys(&live["cpus"][0]), "{name}");
            }
            // Same types where the live command has a value.
            for k in keys(&live) {
                let same = std::mem::discriminant(&v[&k]) == std::mem::discriminant(&live[&k]);
                assert!(same || v[&k].is_null(), "{name}: {k}: {} vs {}", v[&k], live[&k]);
            }
        }
    }
    assert!(live.get("nodes").is_none() && live.get("logged_at").is_none());
}

#[test]
fn live_and_log_share_the_renderer() {
    // The text --from prints is render_report of the report, as the live command's is.
    let text = fixture("mpstat_sysstat12_debian12_2cpu_24h.txt");
    let parsed = parse(&text);
    let Item::Interval(first) = &parsed.items[0] else { panic!("{:?}", parsed.items[0]) };
    let (report, _) = replay::to_report(first, &PLAIN, None);
    let r = run(&text, PLAIN, None, false);
    assert!(r.out.starts_with(&render_report(&report, &stamp_for(&report, false))));
}

#[test]
fn dates_before_lines_place_intervals_in_time() {
    let text = fixture("mpstat_sysstat12_debian12_2cpu_24h_ctime_each_line.txt");
    let parsed = parse(&text);
    let intervals: Vec<_> = parsed.intervals().collect();
    assert_eq!(intervals.len(), 5);
    for i in &intervals {
        // The epoch of the date before the line, moved to mpstat's own second, in UTC.
        let line = text.lines().nth(i.line - 1).unwrap();
        let clock = i.clock.unwrap();
        assert!(line.contains(&format!("UTC 2026 {clock}")), "{line}");
        let days = i.date.unwrap().days_since_epoch();
        assert_eq!(i.epoch_s, Some((days * 86_400 + i64::from(clock.0)) as f64), "{line}");
        assert_eq!(i.zone.as_deref(), Some("UTC"));
        assert_eq!(i.elapsed_s, Some(1.0));
    }
    // mpstat's own date only: a date, no zone, no epoch.
    let plain = parse(&fixture("mpstat_sysstat12_debian12_2cpu_24h.txt"));
    let i = plain.intervals().next().unwrap();
    assert_eq!((i.date.unwrap().to_string(), i.epoch_s), ("2026-11-25".to_string(), None));
    // The ISO log says +00:00.
    let iso = parse(&fixture("mpstat_sysstat12_debian12_2cpu_24h_iso_each_line.txt"));
    assert!(iso.intervals().all(|i| i.epoch_s.is_some() && i.zone.as_deref() == Some("+00:00")));
}

#[test]
fn since_boot_all_only_and_averages() {
    let p = parse(&fixture("mpstat_sysstat12_debian12_2cpu_sinceboot_24h.txt"));
    let i: Vec<_> = p.intervals().collect();
    assert_eq!(i.len(), 1);
    assert!(i[0].since_boot && i[0].elapsed_s.is_none() && i[0].cpus.len() == 2);
    let p = parse(&fixture("mpstat_sysstat12_debian12_2cpu_allonly_24h.txt"));
    assert_eq!(p.intervals().count(), 3);
    assert!(p.intervals().all(|i| i.cpus.is_empty() && i.all.is_some() && !i.since_boot));
    let averages = p.items.iter().filter(|i| matches!(i, Item::Average(_))).count();
    assert_eq!(averages, 1);
    let r = run(&fixture("mpstat_sysstat12_debian12_2cpu_24h.txt"), PLAIN, None, false);
    assert_eq!(r.result.unwrap().averages, 1);
    assert!(!r.out.contains("Average"));
}

#[test]
fn sysstat_9_has_no_gnice_and_says_so() {
    let r = run(&fixture("mpstat_sysstat9_1_7_built_2cpu_24h.txt"), PLAIN, None, true);
    r.result.unwrap();
    assert!(r.notes.iter().any(|n| n.contains("no %gnice column")), "{:?}", r.notes);
    assert!(json_lines(&r.out).iter().all(|v| v["all"]["gnice"] == 0.0));
}

#[test]
fn node_lines_from_the_log_from_t_and_from_node_cpus() {
    // -N ALL: mpstat's node lines.
    let text = fixture("mpstat_sysstat12_debian12_2cpu_nodes_24h.txt");
    let r = run(&text, PLAIN, None, false);
    r.result.unwrap();
    assert_eq!(r.out.matches(" NODE ").count(), 3, "{}", r.out);
    let node_rows: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("Average"))
        .scan(false, |in_node, l| {
            if l.contains('%') {
                *in_node = l.contains("NODE");
            }
            Some((*in_node, l))
        })
        .filter(|(in_node, l)| *in_node && l.split_whitespace().nth(1) == Some("0"))
        .map(|(_, l)| l)
        .collect();
    let ours: Vec<&str> =
        r.out.lines().filter(|l| l.split_whitespace().nth(1) == Some("0")).collect();
    // Each interval: CPU 0's row, then node 0's row.
    for (k, row) in node_rows.iter().enumerate() {
        let want: Vec<&str> = row.split_whitespace().collect();
        let have: Vec<&str> = ours[2 * k + 1].split_whitespace().collect();
        assert_eq!(have, want);
    }

    // -T: each CPU's NODE column groups them.
    let r = run(&fixture("mpstat_sysstat12_debian12_2cpu_topology_24h.txt"), PLAIN, None, true);
    r.result.unwrap();
    for v in json_lines(&r.out) {
        let cpus = v["cpus"].as_array().unwrap();
        let node = &v["nodes"][0];
        assert_eq!(node["cpus"], serde_json::json!([0, 1]));
        let mean = (cpus[0]["usr"].as_f64().unwrap() + cpus[1]["usr"].as_f64().unwrap()) / 2.0;
        assert!((node["util"]["usr"].as_f64().unwrap() - mean).abs() < 1e-9);
    }
    let r = run(&fixture("mpstat_sysstat12_debian12_2cpu_topology.json"), PLAIN, None, true);
    assert_eq!(r.result.unwrap().intervals, 2);
    assert!(json_lines(&r.out).iter().all(|v| v["nodes"][0]["cpus"] == serde_json::json!([0, 1])));

    // --node-cpus on the 256-CPU log: each node the mean of its CPUs' lines.
    let nodes = NodeCpus::parse("0-127,128-255").unwrap();
    let r = run(&fixture("mpstat_sysstat12_handmade_256cpu_24h.txt"), BUSY, Some(&nodes), true);
    r.result.unwrap();
    let plain = json_lines(
        &run(&fixture("mpstat_sysstat12_handmade_256cpu_24h.txt"), PLAIN, None, true).out,
    );
    for (v, p) in json_lines(&r.out).iter().zip(&plain) {
        let all_cpus = p["cpus"].as_array().unwrap();
        for (n, range) in [(0u64, 0..128u64), (1, 128..256)] {
            let members: Vec<&Value> =
                all_cpus.iter().filter(|c| range.contains(&c["cpu"].as_u64().unwrap())).collect();
            let mean = members.iter().map(|c| c["usr"].as_f64().unwrap()).sum::<f64>()
                / members.len() as f64;
            let node = &v["nodes"][n as usize];
            assert_eq!(node["node"], n);
            assert_eq!(node["cpus"].as_array().unwrap().len(), members.len());
            assert!((node["util"]["usr"].as_f64().unwrap() - mean).abs() < 1e-9);
        }
    }
    // CPUs named but never seen, and seen but in no node, are said.
    let nodes = NodeCpus::parse("0-1,2-5").unwrap();
    let r = run(&fixture("mpstat_sysstat12_debian12_2cpu_24h.txt"), PLAIN, Some(&nodes), true);
    r.result.unwrap();
    assert!(r.notes.iter().any(|n| n.contains("CPU 2-5 never appear")), "{:?}", r.notes);
    let nodes = NodeCpus::parse("0").unwrap();
    let r = run(&fixture("mpstat_sysstat12_debian12_2cpu_24h.txt"), PLAIN, Some(&nodes), true);
    r.result.unwrap();
    assert!(r.notes.iter().any(|n| n.contains("CPU 1 are in no node")), "{:?}", r.notes);
}

#[test]
fn an_offline_cpu_sysstat_11_style_is_left_out() {
    let text = fixture("mpstat_sysstat12_debian12_2cpu_24h.txt");
    // sysstat 11 prints an offline CPU as zeros, %idle included.
    let zeros = "   0.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00";
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let at = lines.iter().position(|l| l.starts_with("21:13:27       1")).unwrap();
    lines[at] = format!("21:13:27       1 {zeros}");
    let r = run(&lines.join("\n"), PLAIN, None, true);
    r.result.unwrap();
    let v = json_lines(&r.out);
    assert_eq!(v[1]["offlined"], serde_json::json!([1]));
    assert_eq!(v[1]["cpus"].as_array().unwrap().len(), 1);
    assert!(r.notes.iter().any(|n| n.contains("CPU 1 went offline during the 21:13:27 interval")));
}

#[test]
fn unreadable_intervals_are_named_and_counted() {
    let text = fixture("mpstat_sysstat12_debian12_2cpu_24h.txt");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    // Interval 2: a figure that is not a number; interval 4: a row cut short.
    let a = lines.iter().position(|l| l.starts_with("21:13:27       0")).unwrap();
    lines[a] = lines[a].replacen("94.95", "9x.95", 1);
    let b = lines.iter().position(|l| l.starts_with("21:13:29       1")).unwrap();
    lines[b].truncate(30);
    let r = run(&lines.join("\n"), PLAIN, None, false);
    let s = r.result.unwrap();
    assert_eq!((s.intervals, s.unreadable), (3, 2));
    assert_eq!(
        r.notes[..3],
        [
            format!("interval at 21:13:27 (line {}): CPU 0: %nice is '9x.95', not a number", a + 1),
            format!(
                "interval at 21:13:29 (line {}): CPU 1: 2 figures where the header at line {} has 10",
                b + 1,
                b - 2
            ),
            "2 of 5 intervals could not be read".to_string(),
        ]
    );
    assert_eq!(r.out.matches("%usr").count(), 3);

    // Out of range (old sysstat's iowait when a counter went back).
    let bad = text.replacen("21:13:26       1   90.10", "21:13:26       1 18446744073709551.00", 1);
    let r = run(&bad, PLAIN, None, false);
    assert_eq!(r.result.unwrap().unreadable, 1);
    assert!(r.notes[0].contains("outside 0-100"), "{:?}", r.notes);

    // Nothing readable: an error after the reasons.
    let all_bad: String = text.replace(".00 ", ".0x ");
    let r = run(&all_bad, PLAIN, None, false);
    let e = r.result.unwrap_err();
    assert!(matches!(e, ReplayError::NothingReadable { count: 5, .. }), "{e}");
    assert_eq!(r.notes.len(), 6, "{:?}", r.notes);
    assert!(r.out.is_empty());
}

#[test]
fn not_mpstat_output_is_one_clear_error() {
    for (text, says) in [
        ("", "it is empty"),
        ("\n\n", "it is empty"),
        ("hello world\nthis is not mpstat\n", "its first line reads \"hello world\""),
        ("procs -----------memory---------- ---swap--\n r  b   swpd   free\n", "procs"),
        ("{\"not\": \"sysstat\"}\n", "its first line reads"),
        (
            "CPU minf mjf xcal  intr ithr  csw icsw migr smtx  srw syscl  usr sys  wt idl\n",
            "CPU minf",
        ),
    ] {
        let r = run(text, PLAIN, None, false);
        let e = r.result.unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ReplayError::NotMpstat { .. }), "{text:?}: {msg}");
        assert!(msg.starts_with("the log is not mpstat output: expected"), "{msg}");
        assert!(msg.contains(says), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
        assert!(r.out.is_empty());
    }
    // mpstat's first line but only interrupt tables.
    let irq = "Linux 6.1 (h) \t11/25/26 \t_x86_64_\t(2 CPU)\n\n21:00:00  CPU    intr/s\n21:00:01  all    100.00\n";
    let e = run(irq, PLAIN, None, false).result.unwrap_err();
    assert!(matches!(e, ReplayError::NoIntervals { .. }), "{e}");
}

#[test]
fn a_missing_file_names_the_path() {
    let (mut write, mut note) = (|_: &str| Ok(true), |_: &str| {});
    let mut sink = Sink { out: &mut write, note: &mut note };
    let path = std::path::Path::new("/nonexistent/mpstat.log");
    let e = replay::run(path, &PLAIN, None, false, &mut sink).unwrap_err();
    assert!(matches!(e, ReplayError::Read { .. }));
    assert!(e.to_string().starts_with("cannot read /nonexistent/mpstat.log: "), "{e}");
    assert!(!e.is_usage());
}

#[test]
fn a_truncated_json_log_gives_what_it_holds() {
    let text = fixture("mpstat_sysstat12_debian12_2cpu.json");
    let cut = text.find("\"timestamp\": \"21:13:41\"").unwrap() + 60;
    let r = run(&text[..cut], PLAIN, None, true);
    let s = r.result.unwrap();
    assert_eq!((s.intervals, s.unreadable), (2, 1));
    assert!(r.notes.iter().any(|n| n.contains("the JSON ends inside this entry")), "{:?}", r.notes);
    assert!(r.notes.iter().any(|n| n.contains("truncated file")), "{:?}", r.notes);
}

#[test]
fn lines_that_are_not_mpstats_are_skipped_and_counted() {
    let text = format!(
        "$ mpstat -P ALL 1 5 > log\n{}^C\n",
        fixture("mpstat_sysstat12_debian12_2cpu_24h.txt")
    );
    let r = run(&text, PLAIN, None, false);
    assert_eq!(r.result.unwrap().intervals, 5);
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("2 lines are not mpstat's, skipped (the first, line 1:")),
        "{:?}",
        r.notes
    );
}

#[test]
fn the_reader_going_away_stops_the_replay() {
    let text = fixture("mpstat_sysstat12_handmade_256cpu_24h.txt");
    let mut writes = 0;
    let mut write = |_: &str| {
        writes += 1;
        Ok(false)
    };
    let mut note = |_: &str| {};
    let mut sink = Sink { out: &mut write, note: &mut note };
    let s = replay::replay(text.as_bytes(), "log", &PLAIN, None, false, &mut sink).unwrap();
    assert!(s.stopped_early);
    assert_eq!(writes, 1);
}

// ---------------------------------------------------------------------------------------------
// Property tests: arbitrary and mutated input never panics, and what comes out is sane.

const FIXTURES: [&str; 7] = [
    "mpstat_sysstat12_debian12_2cpu_24h.txt",
    "mpstat_sysstat12_debian12_2cpu_ampm.txt",
    "mpstat_sysstat12_debian12_2cpu_24h_ctime_each_line.txt",
    "mpstat_sysstat12_debian12_2cpu_nodes_24h.txt",
    "mpstat_sysstat12_debian12_2cpu.json",
    "mpstat_sysstat11_7_3_built_2cpu_nodes.json",
    "mpstat_sysstat12_debian12_2cpu_topology_24h.txt",
];

/// Everything the parser yields keeps figures in range and lines within the input.
fn check_sane(text: &str) {
    let parsed = parse(text);
    let lines = text.lines().count().max(1);
    for item in &parsed.items {
        let (line, figures): (usize, Vec<_>) = match item {
            Item::Interval(i) | Item::Average(i) => {
                let mut f: Vec<_> = i.cpus.iter().map(|c| c.figures).collect();
                f.extend(i.all);
                f.extend(i.nodes.iter().map(|n| n.figures));
                (i.line, f)
            }
            Item::Unreadable(u) => (u.line, Vec::new()),
        };
        assert!(line >= 1 && line <= lines, "line {line} of {lines}");
        for f in figures {
            for field in cpuacct::cpuutil::mpstat_log::Field::ALL {
                let v = f.get(field);
                assert!((0.0..=100.5).contains(&v), "{field:?} {v}");
            }
        }
    }
    // The whole path too: JSON out is one valid object per line.
    let r = run(text, BUSY, None, true);
    for l in r.out.lines() {
        serde_json::from_str::<Value>(l).unwrap();
    }
    let _ = run(text, PLAIN, Some(&NodeCpus::parse("0,1").unwrap()), false);
}

#[derive(Debug, Clone)]
enum Mutation {
    FlipByte(usize, u8),
    DeleteLine(usize),
    DuplicateLine(usize),
    Truncate(usize),
    InsertToken(usize, String),
    SwapLines(usize, usize),
}

fn mutate(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let n = lines.len().max(1);
    match m {
        Mutation::FlipByte(at, b) => {
            let mut bytes = text.as_bytes().to_vec();
            if !bytes.is_empty() {
                let i = at % bytes.len();
                bytes[i] = *b;
            }
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        Mutation::DeleteLine(i) if !lines.is_empty() => {
            lines.remove(i % n);
        }
        Mutation::DuplicateLine(i) if !lines.is_empty() => {
            let l = lines[i % n].clone();
            lines.insert(i % n, l);
        }
        Mutation::Truncate(at) => {
            let mut cut = at % (text.len() + 1);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            return text[..cut].to_string();
        }
        Mutation::InsertToken(i, tok) if !lines.is_empty() => {
            let l = &mut lines[i % n];
            let mut at = (i / n) % (l.len() + 1);
            while !l.is_char_boundary(at) {
                at -= 1;
            }
            l.insert_str(at, tok);
        }
        Mutation::SwapLines(a, b) if !lines.is_empty() => lines.swap(a % n, b % n),
        _ => {}
    }
    lines.join("\n")
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let token = prop_oneof![
        Just(" ".to_string()),
        Just("\t".to_string()),
        Just("all".to_string()),
        Just("CPU".to_string()),
        Just("NODE".to_string()),
        Just("%idle".to_string()),
        Just("Average:".to_string()),
        Just("12:00:00 PM".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("\"statistics\": [".to_string()),
        Just("Wed Nov 25 21:04:05 UTC 2026 ".to_string()),
        Just("2026-11-25T21:04:05+99:99 ".to_string()),
        Just("-1".to_string()),
        Just("1e308".to_string()),
        Just("NaN".to_string()),
        Just("(99999999999 CPU)".to_string()),
        "\\PC{0,12}",
    ];
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Mutation::FlipByte(a, b)),
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), token).prop_map(|(a, t)| Mutation::InsertToken(a, t)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}") {
        check_sane(&text);
    }

    #[test]
    fn arbitrary_lines_of_mpstat_words_never_panic(
        words in proptest::collection::vec(
            prop_oneof![
                Just("21:13:26"), Just("09:14:09"), Just("PM"), Just("AM"), Just("CPU"),
                Just("NODE"), Just("all"), Just("0"), Just("1"), Just("-1"), Just("%usr"),
                Just("%sys"), Just("%idle"), Just("%gnice"), Just("12.50"), Just("100.00"),
                Just("Average:"), Just("\n"), Just("\n"), Just("Linux"), Just("(2"), Just("CPU)"),
                Just("11/25/26"), Just("Wed"), Just("Nov"), Just("25"), Just("UTC"), Just("2026"),
                Just("{"), Just("}"), Just("["), Just("]"), Just("\"cpu-load\":"), Just("\"sysstat\""),
            ],
            0..200,
        )
    ) {
        check_sane(&words.join(" "));
    }

    #[test]
    fn mutated_fixtures_never_panic(
        which in 0..FIXTURES.len(),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let mut text = fixture(FIXTURES[which]);
        for m in &mutations {
            text = mutate(&text, m);
        }
        check_sane(&text);
    }
}
