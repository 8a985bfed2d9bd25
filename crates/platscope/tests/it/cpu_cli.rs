//! `platscope cpu pstime`, `platscope cpu util` and the `pstime` compat name as users run them:
//! the exact CPU time of a child that burns a known amount (within ± 2 %), the original pstime's
//! layout, threads, vanished PIDs, the notes about what needs BPF, bad input (one line,
//! exit 2), utilization since boot, per interval and over one command's lifetime, --busy-only,
//! and `cpu util --from` on captured mpstat logs, stdin and garbage (pure: no root, no live
//! system).
//!
//! The burning child is this test binary run again with `PLATSCOPE_TEST_BURN` set
//! (`burner_child`, at the binary's root); it measures its own CPU time, so nothing else needs
//! installing.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::process::{Command, Output, Stdio};
use std::time::Duration;
use test_support::{platscope, platscope_with_stdin, text, Burner};
use test_tier::live;

const BIN: &str = env!("CARGO_BIN_EXE_platscope");
const BURN_NS: u64 = 500_000_000;

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

#[live]
fn pstime_reports_a_half_second_burn_within_2_percent() {
    let mut burner = Burner::start(BURN_NS);
    let pid = burner.pid().to_string();
    let mut pstime = Command::new(BIN)
        .args(["--json", "cpu", "pstime", "4", &pid])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let pstime take its first sample (of one process: milliseconds) before the burn starts.
    std::thread::sleep(Duration::from_millis(1000));
    burner.burn();
    assert!(
        pstime.try_wait().unwrap().is_none(),
        "the burn outlasted pstime's interval (machine too busy for this test)"
    );
    let out = pstime.wait_with_output().unwrap();
    let report = json(&out);
    let row = &report["processes"][0];
    assert_eq!(row["pid"].as_u64().unwrap().to_string(), pid);
    assert_eq!(row["lifetime"], "whole");
    let cpu_ns = row["cpu_ns"].as_u64().unwrap();
    let off = cpu_ns.abs_diff(BURN_NS) as f64 / BURN_NS as f64;
    assert!(
        off <= 0.02,
        "pstime says {cpu_ns} ns for a {BURN_NS} ns burn ({:.2} % off)",
        off * 100.0
    );
    assert_eq!(report["exits_traced"], true, "as root, exits are traced with BPF");
}

#[live]
fn pstime_prints_the_original_layout_under_its_own_name() {
    // Some CPU first, so ticks have fallen on this process and its user/system split is
    // known (with none, pstime prints "-": it cannot split what no tick sampled).
    let until = std::time::Instant::now() + Duration::from_millis(30);
    while std::time::Instant::now() < until {
        std::hint::black_box(0u64);
    }
    let dir = std::env::temp_dir().join(format!("platscope-pstime-link-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("pstime");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(BIN, &link).unwrap();
    let me = std::process::id().to_string();
    let outputs = [
        Command::new(&link).args(["0.2", &me]).output().unwrap(),
        platscope(&["compat", "pstime", "0.2", &me]),
    ];
    let _ = std::fs::remove_dir_all(&dir);
    for out in outputs {
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines[0], "  UID    PID  %USR  %SYS COMMAND", "{stdout}");
        assert_eq!(lines.len(), 2, "{stdout}");
        let fields: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(fields[1], me);
        for figure in &fields[2..4] {
            // Four significant digits: 0.000, 3.391, 44.17, 100.0.
            let digits = figure.chars().filter(char::is_ascii_digit).count();
            assert!(digits == 4 && figure.contains('.'), "{figure} in {stdout}");
        }
        // The command line, cut at 52 characters as the original pstime's.
        let rest = lines[1].split_whitespace().skip(4).collect::<Vec<_>>().join(" ");
        assert!(!rest.is_empty() && rest.chars().count() <= 52, "{stdout}");
        // As root exits are traced: no note about short-lived processes.
        let stderr = text(&out.stderr);
        assert!(!stderr.contains("short-lived processes"), "{stderr}");
    }
}

/// Runs the binary as user nobody: no BPF.
fn platscope_unprivileged(args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .args(args)
        .output()
        .unwrap()
}

#[live]
fn without_bpf_privileges_pstime_and_util_say_so_and_go_on() {
    let out = platscope_unprivileged(&["cpu", "pstime", "0.2", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("short-lived processes") && stderr.contains("needs root"), "{stderr}");
    assert!(text(&out.stdout).starts_with("  UID    PID"));

    let out = platscope_unprivileged(&["cpu", "util", "--event", "0.1", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--event") && stderr.contains("needs root"), "{stderr}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains(" all ") && !stdout.contains("%busy-ev"), "{stdout}");
}

#[live]
fn pstime_with_exact_columns_threads_and_every_process() {
    let me = std::process::id().to_string();
    let out = platscope(&["cpu", "pstime", "0.2", "--threads", &me]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("  UID    PID  %USR  %SYS  %CPU   CPU-ms COMMAND\n"), "{stdout}");
    // This test binary runs tests on several threads: each is listed under the process.
    assert!(stdout.lines().filter(|l| l.contains(" \\_ ")).count() >= 2, "{stdout}");

    let out = platscope(&["--json", "cpu", "pstime", "0.2"]);
    let report = json(&out);
    let processes = report["processes"].as_array().unwrap();
    assert!(processes.iter().any(|p| p["pid"].as_u64().unwrap().to_string() == me));
    assert!(processes.iter().any(|p| p["pid"] == 1));
    assert_eq!(report["source"], "process_clock");
}

#[live]
fn pstime_a_pid_that_exits_mid_interval_is_not_an_error() {
    let mut sleeper = Command::new("sleep").arg("0.2").spawn().unwrap();
    let pid = sleeper.id().to_string();
    // Reaped as soon as it ends, so it is gone (not a zombie) at pstime's second sample.
    let reaper = std::thread::spawn(move || sleeper.wait());
    let out = platscope(&["cpu", "pstime", "1", &pid]);
    let _ = reaper.join();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // As root its exit is traced, so it is in the table with its CPU time up to the exit.
    let stdout = text(&out.stdout);
    let row = stdout.lines().find(|l| l.split_whitespace().nth(1) == Some(pid.as_str()));
    assert!(row.is_some_and(|r| r.contains("sleep <exited>")), "{stdout}");
}

#[live]
fn bad_input_is_one_line_and_exit_2() {
    // A thread of this process (not the main one) is not a process.
    let tid = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .find(|t| *t != std::process::id().to_string());
    let mut cases: Vec<Vec<String>> = [
        &["cpu", "pstime"][..],
        &["cpu", "pstime", "0"],
        &["cpu", "pstime", "-1"],
        &["cpu", "pstime", "-0.5"],
        &["cpu", "pstime", "soon"],
        &["cpu", "pstime", "1", "0"],
        &["cpu", "pstime", "1", "-7"],
        &["cpu", "pstime", "1", "abc"],
        &["cpu", "pstime", "1", "4000000000"],
        &["cpu", "pstime", "1", "--bogus"],
        &["cpu", "util", "0"],
        &["cpu", "util", "-2"],
        &["cpu", "util", "1", "0"],
        &["cpu", "util", "1", "-1"],
        &["cpu", "util", "often"],
        &["cpu", "util", "--bogus"],
        &["cpu", "util", "1", "--", "true"],
        &["cpu", "util", "--", "/nonexistent/command"],
        &["compat", "pstime"],
        &["compat", "pstime", "0"],
        &["compat", "pstime", "1", "-3"],
    ]
    .iter()
    .map(|a| a.iter().map(|s| s.to_string()).collect())
    .collect();
    // No such process: the highest PID the kernel can hand out is not in use.
    let pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap();
    let unused = (1..=pid_max.trim().parse::<u32>().unwrap())
        .rev()
        .find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        .unwrap();
    cases.push(vec!["cpu".into(), "pstime".into(), "0.1".into(), unused.to_string()]);
    if let Some(tid) = tid {
        cases.push(vec!["cpu".into(), "pstime".into(), "0.1".into(), tid]);
    }
    for args in &cases {
        let out = Command::new(BIN).args(args).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("platscope: "), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let out = platscope(&["cpu", "pstime", "0.1", &unused.to_string()]);
    assert_eq!(text(&out.stderr).trim(), format!("platscope: no such process: {unused}"));
}

fn cpu_count() -> usize {
    std::fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count()
}

#[live]
fn util_since_boot_and_per_interval() {
    let out = platscope(&["cpu", "util"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].ends_with(
            "CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle"
        ),
        "{stdout}"
    );
    assert_eq!(lines[1].split_whitespace().nth(1), Some("all"), "{stdout}");
    assert_eq!(lines.len(), 2 + cpu_count(), "{stdout}");

    let out = platscope(&["cpu", "util", "0.1", "3"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().filter(|l| l.contains("%usr")).count(), 3, "{stdout}");
    // Sub-second intervals print milliseconds.
    assert_eq!(stdout.lines().next().unwrap().as_bytes()[8], b'.', "{stdout}");
}

#[live]
fn util_over_a_commands_lifetime() {
    let out = platscope(&["cpu", "util", "--", "sleep", "0.2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("command: sleep 0.2 (exited 0; "), "{stdout}");
    assert!(lines[1].contains("%idle") && lines[2].contains(" all "), "{stdout}");

    // A failing command is reported, and its status passed on as time(1) does.
    let out = platscope(&["--json", "cpu", "util", "--busy-only", "--", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["command"]["status"].as_str(), v["command"]["exit_code"].as_i64()),
        (Some("exited 3"), Some(3))
    );
    assert!(v["report"]["elapsed_s"].as_f64().unwrap() > 0.0);
}

#[live]
fn util_busy_only_hides_idle_cpus() {
    let out = platscope(&["--json", "cpu", "util", "--busy-only", "0.2", "1"]);
    let v = json(&out);
    let shown = v["cpus"].as_array().unwrap();
    let hidden = v["hidden_idle"].as_array().unwrap();
    assert_eq!(shown.len() + hidden.len(), cpu_count(), "{v}");
    for cpu in shown {
        assert!(cpu["idle"].as_f64().unwrap() < 99.995, "an idle CPU was shown: {cpu}");
    }
    for cpu in hidden {
        let n = cpu.as_u64().unwrap();
        assert!(n < cpu_count() as u64, "{v}");
    }
    // Without the flag, nothing is hidden.
    let v = json(&platscope(&["--json", "cpu", "util", "0.2", "1"]));
    assert_eq!(v["cpus"].as_array().unwrap().len(), cpu_count());
    assert!(v["hidden_idle"].as_array().unwrap().is_empty());
}

#[live]
fn util_event_shows_switch_measured_busy_time_next_to_the_tick() {
    let out = platscope(&["cpu", "util", "--event", "0.2", "2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let header = stdout.lines().next().unwrap();
    assert!(header.ends_with("%idle %busy-tk %busy-ev    diff"), "{stdout}");
    let all: Vec<&str> =
        stdout.lines().filter(|l| l.split_whitespace().nth(1) == Some("all")).collect();
    assert_eq!(all.len(), 2, "{stdout}");
    for line in all {
        let ev: f64 = line.split_whitespace().nth(12).unwrap().parse().unwrap();
        assert!((0.0..=100.0).contains(&ev), "{line}");
    }
    // The legend once, on stderr.
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("%busy-ev").count(), 1, "{stderr}");
}

#[live]
fn pstime_counts_a_process_that_starts_and_exits_inside_the_interval() {
    let pstime = Command::new(BIN)
        .args(["--json", "cpu", "pstime", "1.5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(600)); // after the first sample
                                                    // A child that burns CPU for a while and exits, all between pstime's two samples.
    let child = Command::new("sh")
        .args(["-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"])
        .spawn()
        .unwrap();
    let pid = u64::from(child.id());
    assert!(child.wait_with_output().unwrap().status.success());
    let out = pstime.wait_with_output().unwrap();
    let report = json(&out);
    let row = report["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"].as_u64() == Some(pid))
        .unwrap_or_else(|| panic!("pid {pid} not reported: {}", text(&out.stderr)));
    assert_eq!(row["lifetime"], "started_and_exited", "{row}");
    assert_eq!(row["comm"], "sh");
    assert!(row["cpu_ns"].as_u64().unwrap() > 10_000_000, "{row}");
}

fn mpstat_fixture(name: &str) -> String {
    format!("{}/../cpuacct/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn util_from_reads_a_captured_mpstat_log() {
    let log = mpstat_fixture("mpstat_sysstat12_debian12_2cpu_24h_ctime_each_line.txt");
    let out = platscope(&["cpu", "util", "--from", &log]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // One table per mpstat interval, mpstat's own times, the live command's columns.
    let headers: Vec<&str> = stdout.lines().filter(|l| l.contains("%usr")).collect();
    assert_eq!(headers.len(), 5, "{stdout}");
    assert!(headers[0].starts_with("21:13:42  CPU    %usr"), "{stdout}");
    assert_eq!(stdout.lines().filter(|l| l.split_whitespace().nth(1) == Some("all")).count(), 5);

    // --json: one object per interval, the live command's keys.
    let out = platscope(&["--json", "cpu", "util", "--from", &log]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> =
        text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 5);
    for v in &lines {
        assert_eq!(v["cpus"].as_array().unwrap().len(), 2, "{v}");
        assert!(v["all"]["usr"].is_f64() && v["hidden_idle"].is_array());
        assert_eq!(v["logged_at"]["zone"], "UTC");
    }

    // -: standard input; --busy-only and --node-cpus on the hand-made 256-CPU log.
    let big = std::fs::read(mpstat_fixture("mpstat_sysstat12_handmade_256cpu_24h.txt")).unwrap();
    let out = platscope_with_stdin(
        &["cpu", "util", "--from", "-", "--busy-only", "--node-cpus", "0-127,128-255"],
        &big,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.matches(" NODE ").count(), 3, "{stdout}");
    assert!(stdout.lines().all(|l| !l.ends_with(" 100.00")), "{stdout}");
    assert!(stdout.contains("   48  100.00"), "{stdout}");
}

#[test]
fn util_from_garbage_a_missing_file_and_bad_flags() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("vmstat.txt");
    std::fs::write(&garbage, "procs -----------memory----------\n r  b   swpd   free\n").unwrap();
    let garbage = garbage.to_str().unwrap();
    let out = platscope(&["cpu", "util", "--from", garbage]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("platscope: {garbage} is not mpstat output: expected")),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());

    let missing = dir.path().join("no-such.log");
    let missing = missing.to_str().unwrap();
    let out = platscope(&["cpu", "util", "--from", missing]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with(&format!("platscope: cannot read {missing}: ")), "{stderr}");

    // One bad interval among good ones: named, counted, the rest printed, exit 0.
    let log = std::fs::read_to_string(mpstat_fixture("mpstat_sysstat12_debian12_2cpu_24h.txt"))
        .unwrap()
        .replacen("21:13:28       1   76.77", "21:13:28       1   7x.77", 1);
    let path = dir.path().join("one-bad.log");
    std::fs::write(&path, log).unwrap();
    let out = platscope(&["cpu", "util", "--from", path.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [
            "platscope: interval at 21:13:28 (line 16): CPU 1: %usr is '7x.77', not a number",
            "platscope: 1 of 5 intervals could not be read",
        ]
    );
    assert_eq!(text(&out.stdout).matches("%usr").count(), 4);

    // Usage errors: exit 2, one line.
    let log = mpstat_fixture("mpstat_sysstat12_debian12_2cpu_24h.txt");
    for args in [
        &["cpu", "util", "--node-cpus", "0-1"][..],
        &["cpu", "util", "--from", &log, "1"],
        &["cpu", "util", "--from", &log, "--event"],
        &["cpu", "util", "--from", &log, "--node-cpus", "3-1"],
        &["cpu", "util", "--from", &log, "--", "true"],
    ] {
        let out = platscope(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}
