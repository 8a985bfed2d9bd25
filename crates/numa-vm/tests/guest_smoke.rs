//! Boots real guests (QEMU TCG). Needs `tests/numa-vm/prepare.sh` to succeed, which it runs
//! itself: as root it installs what is missing; otherwise these tests fail saying what to run.
//! They never skip.

use std::path::Path;
use std::time::{Duration, Instant};
use test_tier::guest;

use numa_vm::{run_in_guest, GuestError, GuestRun, GuestSpec};

/// Present pages per node (node id, pages) from /proc/zoneinfo: everything the node holds,
/// including what the kernel reserved (MemTotal leaves that out).
const ZONEINFO_PRESENT: &str = r#"awk '$1 == "Node" { n = $2; sub(",", "", n) } $1 == "present" { p[n] += $2 } END { for (k in p) print k, p[k] }' /proc/zoneinfo"#;

fn range_list(first: u32, last: u32) -> String {
    if first == last {
        first.to_string()
    } else {
        format!("{first}-{last}")
    }
}

/// Commands that show the guest's node layout; `check_topology` reads their results.
fn topology_commands(nodes: usize) -> Vec<String> {
    let mut c = vec![
        "cat /sys/devices/system/node/online".to_string(),
        "cat /sys/devices/system/node/has_cpu".to_string(),
        "ls -d /sys/devices/system/node/node*".to_string(),
        "cat /sys/devices/system/node/node*/distance".to_string(),
        ZONEINFO_PRESENT.to_string(),
    ];
    for i in 0..nodes {
        c.push(format!("cat /sys/devices/system/node/node{i}/cpulist"));
        c.push(format!("grep MemTotal /sys/devices/system/node/node{i}/meminfo"));
    }
    c
}

fn boot(spec: &GuestSpec, binary: &Path, extra: &[&str]) -> GuestRun {
    let mut commands = topology_commands(spec.nodes.len());
    commands.extend(extra.iter().map(|s| s.to_string()));
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    let t = Instant::now();
    let run =
        run_in_guest(spec, binary, &commands).unwrap_or_else(|e| panic!("guest run failed: {e}"));
    println!(
        "guest with {} nodes: init after {:.2} s, QEMU exited after {:.2} s, run_in_guest {:.2} s",
        spec.nodes.len(),
        run.boot_secs,
        run.total_secs,
        t.elapsed().as_secs_f64()
    );
    for r in &run.results {
        println!("$ {}\n{}{}[exit {}]", r.command, r.stdout, r.stderr, r.exit_code);
    }
    assert_eq!(run.results.len(), commands.len());
    run
}

/// Asserts the guest saw exactly the nodes, CPU lists, distances and sizes of `spec`.
fn check_topology(spec: &GuestSpec, run: &GuestRun) {
    let out = |i: usize| {
        let r = &run.results[i];
        assert_eq!(r.exit_code, 0, "`{}` failed: {}", r.command, r.stderr);
        r.stdout.trim_end().to_string()
    };
    let n = spec.nodes.len();
    let with_cpus = spec.nodes.iter().filter(|node| node.cpus > 0).count();
    assert_eq!(out(0), range_list(0, n as u32 - 1), "online nodes");
    assert_eq!(out(1), range_list(0, with_cpus as u32 - 1), "nodes with CPUs");
    let dirs: Vec<String> = (0..n).map(|i| format!("/sys/devices/system/node/node{i}")).collect();
    assert_eq!(out(2).lines().collect::<Vec<_>>(), dirs, "node directories");

    let seen: Vec<Vec<u8>> = out(3)
        .lines()
        .map(|l| l.split_whitespace().map(|d| d.parse().expect("distance")).collect())
        .collect();
    assert_eq!(seen, spec.distances, "distance matrix");

    let mut present = vec![0u64; n];
    for line in out(4).lines() {
        let mut f = line.split_whitespace().map(|x| x.parse::<u64>().expect("zoneinfo number"));
        let (node, pages) = (f.next().expect("node") as usize, f.next().expect("pages"));
        present[node] = pages * 4 / 1024; // 4 KiB pages to MiB
    }
    for (i, (node, cpus)) in spec.nodes.iter().zip(spec.cpu_ranges()).enumerate() {
        let cpulist = out(5 + 2 * i);
        let expected = cpus.map(|(a, b)| range_list(a, b)).unwrap_or_default();
        assert_eq!(cpulist, expected, "node {i} cpulist");

        let want = node.mem_mib as f64;
        let got = present[i] as f64;
        assert!(
            (got - want).abs() <= 0.05 * want,
            "node {i}: {got} MiB present, configured {want}"
        );

        let mem_total_kib: u64 = out(6 + 2 * i)
            .split_whitespace()
            .rev()
            .nth(1)
            .and_then(|v| v.parse().ok())
            .expect("MemTotal value");
        let mem_total = mem_total_kib as f64 / 1024.0;
        // Node 0 also holds the kernel image and early allocations, outside MemTotal.
        let floor = if i == 0 { 0.5 } else { 0.95 };
        assert!(
            mem_total <= want && mem_total >= floor * want,
            "node {i}: MemTotal {mem_total:.1} MiB, configured {want}"
        );
        println!(
            "node {i}: cpus [{cpulist}], present {got} MiB, MemTotal {mem_total:.1} MiB, \
             configured {want} MiB, distances {:?}",
            seen[i]
        );
    }
}

const EXIT_3: &str = "echo to-stdout; echo to-stderr >&2; exit 3";

fn check_exit_3(run: &GuestRun) {
    let r = run.results.last().expect("results");
    assert_eq!(r.command, EXIT_3);
    assert_eq!(
        (r.stdout.as_str(), r.stderr.as_str(), r.exit_code),
        ("to-stdout\n", "to-stderr\n", 3)
    );
}

#[guest]
fn two_nodes_dynamic_binary() {
    // getconf (libc-bin, Essential) is dynamically linked: this exercises the ldd copy.
    let spec = GuestSpec::two_nodes();
    let run = boot(&spec, Path::new("/usr/bin/getconf"), &["getconf _NPROCESSORS_ONLN", EXIT_3]);
    check_topology(&spec, &run);
    let getconf = &run.results[run.results.len() - 2];
    assert_eq!((getconf.stdout.trim(), getconf.exit_code), ("2", 0), "{getconf:?}");
    check_exit_3(&run);
}

#[guest]
fn four_nodes_with_memory_only_node() {
    let spec = GuestSpec::four_nodes_with_memory_only();
    let extra = [
        "cat /sys/devices/system/node/has_memory",
        "grep MemTotal /sys/devices/system/node/node3/meminfo",
        "busybox nproc",
        EXIT_3,
    ];
    let run = boot(&spec, Path::new("/bin/busybox"), &extra);
    check_topology(&spec, &run);
    let n = run.results.len();
    assert_eq!(run.results[n - 4].stdout.trim(), "0-3", "nodes with memory");
    assert!(run.results[n - 3].stdout.contains("Node 3 MemTotal"));
    assert_eq!(run.results[n - 2].stdout.trim(), "4", "online CPUs");
    check_exit_3(&run);
}

#[guest]
fn hung_guest_is_killed_at_timeout_with_console_tail() {
    let spec = GuestSpec::two_nodes().with_timeout(Duration::from_secs(2));
    let t = Instant::now();
    let err =
        run_in_guest(&spec, Path::new("/bin/busybox"), &["sleep 1000"]).expect_err("must time out");
    // Includes waiting for other tests' guests: guests of one process run one at a time.
    println!("error after {:.2} s:\n{err}", t.elapsed().as_secs_f64());
    assert!(matches!(err, GuestError::Timeout { .. }), "{err}");
    let tail = err.console_tail().expect("console tail");
    assert!(!tail.trim().is_empty(), "console tail is empty");
    assert!(err.to_string().contains(tail));
}

#[guest]
fn guest_that_stops_early_reports_console() {
    let spec = GuestSpec::new(&[(1, 256)], vec![]);
    let err = run_in_guest(
        &spec,
        Path::new("/bin/busybox"),
        &["echo before", "poweroff -f", "echo never"],
    )
    .expect_err("init never reaches its end marker");
    println!("error:\n{err}");
    match &err {
        GuestError::Incomplete { completed, total, stage, console_tail } => {
            assert_eq!((*completed, *total), (1, 3));
            assert!(stage.contains("command 2 of 3"), "{stage}");
            assert!(console_tail.contains("numa-vm: running command 2 of 3"), "{console_tail}");
        }
        other => panic!("expected Incomplete, got {other}"),
    }
}
