//! `platscope net stat` and the `nicstat` compat name as users run them: layouts, exit codes,
//! one-line errors, sub-second intervals, JSON lines, Ctrl-C and closed pipes. One test needs
//! root (a veth pair in network namespaces, seen through `ip netns exec`); it says so when it
//! skips.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use test_support::{platscope, text};
use test_tier::live;

const BIN: &str = env!("CARGO_BIN_EXE_platscope");
const HEADER: &str =
    "    Time      Int   rKB/s   wKB/s   rPk/s   wPk/s    rAvs    wAvs %Util    Sat";

#[live]
fn net_stat_prints_nicstat_layout_since_boot() {
    let out = platscope(&["net", "stat", "-i", "lo"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], HEADER);
    assert_eq!(lines.len(), 2, "{stdout}");
    // Loopback has no line rate: no utilization, never a made-up 0 or 65535.
    let fields: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!((fields[1], fields[8]), ("lo", "-"), "{stdout}");
}

#[live]
fn bad_input_is_one_line_and_exit_2() {
    for args in [
        &["net", "stat", "-i", "nosuchif0"][..],
        &["net", "stat", "-S", "nosuchif0:1000"],
        &["net", "stat", "-S", "lo"],
        &["net", "stat", "-S", "lo:fast"],
        &["net", "stat", "-S", "lo:100xd"],
        &["net", "stat", "0"],
        &["net", "stat", "-1"],
        &["net", "stat", "1", "0"],
        &["net", "stat", "soon"],
        &["compat", "nicstat", "-i", "nosuchif0"],
        &["compat", "nicstat", "0"],
    ] {
        let out = platscope(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("platscope: "), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let out = platscope(&["net", "stat", "-i", "nosuchif0"]);
    assert!(text(&out.stderr).contains("unknown interface 'nosuchif0'"));
}

#[live]
fn subsecond_interval_and_count() {
    let start = Instant::now();
    let out = platscope(&["net", "stat", "-i", "lo", "0.1", "4"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let data: Vec<&str> = stdout.lines().filter(|l| l.contains(" lo ")).collect();
    assert_eq!(data.len(), 4, "{stdout}");
    // Milliseconds in the time column when the interval is under a second.
    assert!(data[1].trim_start().as_bytes()[8] == b'.', "{stdout}");
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[live]
fn json_is_one_object_per_sample() {
    let out = platscope(&["--json", "net", "stat", "-i", "lo", "-t", "-x", "0.1", "2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    let second: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(second["since_boot"], false);
    assert_eq!(second["interfaces"][0]["name"], "lo");
    assert!(second["interfaces"][0]["util_pct"].is_null());
    assert!(second["tcp"]["retrans_pct"].is_number());
}

#[live]
fn nicstat_name_takes_the_same_flags() {
    let dir = std::env::temp_dir().join(format!("platscope-nicstat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("nicstat");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(BIN, &link).unwrap();
    let out = Command::new(&link).args(["-l", "-i", "lo"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "Int      Loopback   Mbit/s Duplex State\nlo            Yes        -   unkn    up\n"
    );
    let out = Command::new(&link).args(["-p", "-i", "lo"]).output().unwrap();
    let line = text(&out.stdout);
    assert_eq!(line.trim_end().split(':').count(), 8, "{line}");
    let out = Command::new(&link).args(["-i", "nosuchif0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[live]
fn ctrl_c_keeps_the_lines_printed() {
    let mut child = Command::new(BIN)
        .args(["net", "stat", "-i", "lo", "0.1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(450));
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let status = child.wait().unwrap();
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    assert!(status.success(), "{status:?}");
    assert!(stdout.ends_with('\n'));
    assert!(stdout.lines().filter(|l| l.contains(" lo ")).count() >= 2, "{stdout}");
}

#[live]
fn a_closed_pipe_ends_the_run() {
    let mut child = Command::new(BIN)
        .args(["net", "stat", "-i", "lo", "0.05"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    // Sub-second interval: the time column is wider (milliseconds), the rest is the same.
    assert_eq!(first.trim(), HEADER.trim());
    // The reader is gone (dropped above): the next write fails and the run ends quietly.
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status:?}");
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "still running after its reader left");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[live]
fn list_in_a_namespace_reads_its_sysfs_as_root() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED list_in_a_namespace_reads_its_sysfs_as_root: needs root for ip netns");
        return;
    }
    struct Ns(String, String);
    impl Drop for Ns {
        fn drop(&mut self) {
            let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
            let _ = Command::new("ip").args(["netns", "del", &self.1]).status();
        }
    }
    let ip = |args: &[&str]| {
        let out = Command::new("ip").args(args).output().unwrap();
        assert!(out.status.success(), "ip {args:?}: {}", text(&out.stderr));
    };
    let ns = Ns(format!("pscA{}", std::process::id()), format!("pscB{}", std::process::id()));
    ip(&["netns", "add", &ns.0]);
    ip(&["netns", "add", &ns.1]);
    ip(&[
        "-n", &ns.0, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1", "netns",
        &ns.1,
    ]);
    ip(&["-n", &ns.0, "addr", "add", "10.200.77.1/24", "dev", "veth0"]);
    ip(&["-n", &ns.1, "addr", "add", "10.200.77.2/24", "dev", "veth1"]);
    ip(&["-n", &ns.0, "link", "set", "veth0", "up"]);
    ip(&["-n", &ns.1, "link", "set", "veth1", "up"]);
    let out = Command::new("ip")
        .args(["netns", "exec", &ns.0, BIN, "net", "stat", "-l", "-v"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    println!("{stdout}");
    let veth = stdout.lines().find(|l| l.starts_with("veth0")).unwrap();
    assert!(veth.starts_with("veth0          No    10000   full    up"), "{veth}");
    assert!(veth.ends_with("sysfs"), "{veth}");
    // -S overrides what sysfs says, and the arithmetic uses it.
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns.0,
            BIN,
            "--json",
            "net",
            "stat",
            "-i",
            "veth0",
            "-S",
            "veth0:1000fd",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["interfaces"][0]["speed_mbps"], 1000);
    assert_eq!(v["interfaces"][0]["speed_source"], "command_line");
}
