//! The Silly Little Benchmark's kit as its article ran it: links named create_sem, memhammer,
//! trigger and cpu_bind to the platscope binary in a scratch directory, and the article's
//! scripts (example1, example2) run with `sh`, unchanged but for their sizes. Every test uses its
//! own semaphore key (PLATSCOPE_SLB_KEY), so tests run in parallel without meeting.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use test_tier::live;

use membench::kit::SlbSemaphore;
use test_support::{platscope, text};

/// The SLB article's example1, verbatim.
const EXAMPLE1: &str = "\
./cpu_bind $$ 7
./create_sem
./memhammer 262144 6000 &
./trigger
wait
./cpu_bind $$ 7
./create_sem
./memhammer 262144 6000 &
./cpu_bind $$ 6
./memhammer 262144 6000 &
./trigger
wait
";

/// The SLB article's example2, verbatim.
const EXAMPLE2: &str = "\
./cpu_bind $$ 7
./create_sem
./memhammer 262144 6000 &
./cpu_bind $$ 5
./memhammer 262144 6000 &
./trigger
wait
";

/// The original scripts' 1 GiB × 6000 passes, cut to 8 MiB × 20 for tests.
const ORIGINAL_SIZES: &str = "262144 6000";
const TEST_SIZES: &str = "2048 20";
const TEST_OPS: u64 = 2048 * 20;

const TOOLS: [&str; 4] = ["create_sem", "memhammer", "trigger", "cpu_bind"];

/// A scratch directory with the kit's links and a semaphore key of its own; both are removed
/// on drop.
struct Kit {
    dir: PathBuf,
    key: i32,
}

impl Kit {
    fn new() -> Kit {
        static NEXT: AtomicU32 = AtomicU32::new(1);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let dir = std::env::temp_dir().join(format!("platscope-slb-kit-{pid}-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        for tool in TOOLS {
            std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_platscope"), dir.join(tool))
                .expect("link");
        }
        let key = (0x5300_0000 | ((pid & 0xFFFF) << 8) | (n & 0xFF)) as i32;
        Kit { dir, key }
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.current_dir(&self.dir).env("PLATSCOPE_SLB_KEY", self.key.to_string());
        c
    }

    /// Runs `./TOOL ARGS…` in the scratch directory.
    fn tool(&self, tool: &str, args: &[&str]) -> Output {
        self.command(&format!("./{tool}")).args(args).output().expect("runs")
    }

    fn spawn(&self, tool: &str, args: &[&str]) -> Child {
        self.command(&format!("./{tool}"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawns")
    }

    /// Writes `script` into the directory as `name` and runs `sh ./name`.
    fn script(&self, name: &str, script: &str) -> Output {
        std::fs::write(self.dir.join(name), script).expect("script");
        println!("$ cat {name}\n{script}");
        let out = self.command("sh").arg(format!("./{name}")).output().expect("sh runs");
        println!("$ sh ./{name}\n{}{}", text(&out.stdout), text(&out.stderr));
        out
    }

    /// Waits until `n` processes wait at this kit's gate.
    fn await_waiters(&self, n: u32) {
        let started = Instant::now();
        loop {
            let waiting = SlbSemaphore::open(self.key).and_then(|s| s.waiting()).unwrap_or(0);
            if waiting >= n {
                return;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{n} waiters never came");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Kit {
    fn drop(&mut self) {
        if let Ok(sem) = SlbSemaphore::open(self.key) {
            let _ = sem.remove();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Checks one line against memhammer's format, `Total ops N Avg nsec/op X.X gettimeofday usec
/// N TPUT ops/sec X.X`, and its arithmetic; returns (ops, usec).
fn memhammer_line(line: &str) -> (u64, u64) {
    let t: Vec<&str> = line.split(' ').collect();
    let shape = ["Total", "ops", "N", "Avg", "nsec/op", "X", "gettimeofday", "usec", "N", "TPUT"];
    assert_eq!(t.len(), 12, "not memhammer's line: {line:?}");
    for (i, want) in shape.iter().enumerate() {
        match *want {
            "N" => {
                assert!(!t[i].is_empty() && t[i].bytes().all(|b| b.is_ascii_digit()), "{line:?}")
            }
            "X" => {}
            word => assert_eq!(t[i], word, "{line:?}"),
        }
    }
    assert_eq!(t[10], "ops/sec", "{line:?}");
    for decimal in [t[5], t[11]] {
        let (int, frac) = decimal.split_once('.').unwrap_or_else(|| panic!("{line:?}"));
        assert!(!int.is_empty() && int.bytes().all(|b| b.is_ascii_digit()), "{line:?}");
        assert!(frac.len() == 1 && frac.bytes().all(|b| b.is_ascii_digit()), "{line:?}");
    }
    let ops: u64 = t[2].parse().expect("ops");
    let usec: u64 = t[8].parse().expect("usec");
    // The original's arithmetic: nsec/op = usec × 1000 / ops, ops/sec = ops / (usec / 10^6).
    assert_eq!(t[5], format!("{:.1}", usec as f64 * 1000.0 / ops as f64), "{line:?}");
    assert_eq!(t[11], format!("{:.1}", ops as f64 / (usec.max(1) as f64 / 1e6)), "{line:?}");
    (ops, usec)
}

fn online_cpus() -> Vec<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").expect("online CPUs");
    topo::idlist::parse(&text).expect("kernel list")
}

/// The memhammer lines of a script run: every stdout line must be one, each for `TEST_OPS`
/// stores.
fn check_lines(out: &Output, expected: usize) {
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), expected, "{stdout}");
    for line in lines {
        assert_eq!(memhammer_line(line).0, TEST_OPS, "{line}");
    }
}

/// On a machine without the article's CPUs, the script's `cpu_bind $$ 7` fails with its one-line
/// error and the rest runs; with them, nothing is printed on stderr.
fn check_cpu_bind_stderr(out: &Output, script: &str) {
    let online = online_cpus();
    let missing: Vec<u32> = script
        .lines()
        .filter_map(|l| l.strip_prefix("./cpu_bind $$ ")?.trim().parse().ok())
        .filter(|cpu| !online.contains(cpu))
        .collect();
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), missing.len(), "{stderr}");
    for (line, cpu) in lines.iter().zip(&missing) {
        assert!(line.starts_with(&format!("cpu_bind: CPU {cpu} does not exist (valid CPUs: ")));
    }
}

#[live]
fn example1_prints_three_memhammer_lines() {
    let kit = Kit::new();
    let script = EXAMPLE1.replace(ORIGINAL_SIZES, TEST_SIZES);
    let out = kit.script("example1", &script);
    assert!(out.status.success());
    check_lines(&out, 3);
    check_cpu_bind_stderr(&out, &script);
}

#[live]
fn example2_prints_two_memhammer_lines() {
    let kit = Kit::new();
    let script = EXAMPLE2.replace(ORIGINAL_SIZES, TEST_SIZES);
    let out = kit.script("example2", &script);
    assert!(out.status.success());
    check_lines(&out, 2);
    check_cpu_bind_stderr(&out, &script);
}

/// The article's examples with their CPU numbers mapped onto this machine's, so every cpu_bind
/// succeeds: 7 → the last online CPU, 6 and 5 → the first.
#[live]
fn examples_on_this_machines_cpus_run_cleanly() {
    let cpus = online_cpus();
    let (first, last) = (cpus[0], cpus[cpus.len() - 1]);
    for (name, script, lines) in [("example1", EXAMPLE1, 3), ("example2", EXAMPLE2, 2)] {
        let kit = Kit::new();
        let script = script
            .replace(ORIGINAL_SIZES, TEST_SIZES)
            .replace("$$ 7", &format!("$$ {last}"))
            .replace("$$ 6", &format!("$$ {first}"))
            .replace("$$ 5", &format!("$$ {first}"));
        let out = kit.script(name, &script);
        assert!(out.status.success());
        assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
        check_lines(&out, lines);
    }
}

#[live]
fn cpu_bind_binds_the_shell_and_its_children() {
    let kit = Kit::new();
    let cpu = *online_cpus().last().expect("a CPU");
    let script = format!("./cpu_bind $$ {cpu}\ngrep Cpus_allowed_list /proc/self/status\n");
    let out = kit.script("bind", &script);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("Cpus_allowed_list:\t{cpu}\n"));
}

/// One line on stderr, prefixed with the tool's name, containing `needle`; nothing on stdout.
fn check_error(out: &Output, tool: &str, code: i32, needle: &str) {
    let err = text(&out.stderr);
    println!("{tool} -> {:?}: {}", out.status.code(), err.trim_end());
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    assert!(err.starts_with(&format!("{tool}: ")), "{err}");
    assert!(err.contains(needle), "expected {needle:?} in {err:?}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.stdout.is_empty(), "nothing on stdout after an error: {}", text(&out.stdout));
}

#[live]
fn trigger_or_memhammer_before_create_sem() {
    let kit = Kit::new();
    let want = format!("no SLB semaphore (IPC key {:#x}): run create_sem first", kit.key);
    check_error(&kit.tool("trigger", &[]), "trigger", 1, &want);
    check_error(&kit.tool("memhammer", &["64", "1"]), "memhammer", 1, &want);
}

#[live]
fn trigger_twice_and_a_late_memhammer() {
    let kit = Kit::new();
    assert!(kit.tool("create_sem", &[]).status.success());
    let hammer = kit.spawn("memhammer", &["64", "1"]);
    let trigger = kit.tool("trigger", &[]);
    assert!(trigger.status.success(), "{}", text(&trigger.stderr));
    assert!(trigger.stdout.is_empty() && trigger.stderr.is_empty());
    let out = hammer.wait_with_output().expect("memhammer exits");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(memhammer_line(text(&out.stdout).trim_end()).0, 64);

    check_error(&kit.tool("trigger", &[]), "trigger", 1, "already triggered (trigger ran twice");
    check_error(&kit.tool("memhammer", &["64", "1"]), "memhammer", 1, "run create_sem to arm it");
}

#[live]
fn trigger_with_no_memhammer_waiting() {
    let kit = Kit::new();
    assert!(kit.tool("create_sem", &[]).status.success());
    let started = Instant::now();
    let out = kit.tool("trigger", &[]);
    check_error(&out, "trigger", 1, "no memhammer is waiting");
    assert!(out.status.code() == Some(1) && text(&out.stderr).contains("trigger already ran?"));
    assert!(started.elapsed() >= Duration::from_secs(5), "it waits for a late memhammer");
}

#[live]
fn bad_arguments_get_one_line_and_exit_code_2() {
    let kit = Kit::new();
    let cases: &[(&str, &[&str], &str)] = &[
        ("memhammer", &["0", "10"], "PAGES 0 is not allowed"),
        ("memhammer", &["10", "0"], "LOOPS 0 is not allowed"),
        ("memhammer", &["-5", "10"], "is negative"),
        ("memhammer", &["abc", "10"], "is not a whole number"),
        ("memhammer", &["99999999999999999999", "10"], "is too large"),
        ("memhammer", &["4294967295", "4294967298"], "more stores than a 64-bit count"),
        ("memhammer", &["10"], "takes 2 arguments, got 1"),
        ("memhammer", &["--pages", "10"], "takes no options"),
        // 16 TiB: refused from the nodes' free memory before anything is allocated.
        ("memhammer", &["4294967295", "1"], "use a smaller size"),
        ("cpu_bind", &["1"], "takes 2 arguments, got 1"),
        ("cpu_bind", &["x", "0"], "is not a process id"),
        ("cpu_bind", &["2147483647", "0"], "process 2147483647 does not exist"),
        ("cpu_bind", &["1", "0-"], "invalid CPU list"),
        ("trigger", &["now"], "trigger takes no arguments"),
        ("create_sem", &["-x"], "create_sem takes no options"),
    ];
    for (tool, args, needle) in cases {
        check_error(&kit.tool(tool, args), tool, 2, needle);
    }
    // cpu_bind on a CPU this machine lacks, from a shell as the article's scripts call it.
    let out = kit.command("sh").args(["-c", "./cpu_bind $$ 99999"]).output().expect("sh");
    check_error(&out, "cpu_bind", 2, "CPU 99999 does not exist (valid CPUs: ");
    // A key that cannot be used.
    let out = kit.command("./create_sem").env("PLATSCOPE_SLB_KEY", "0").output().expect("runs");
    check_error(&out, "create_sem", 2, "PLATSCOPE_SLB_KEY=\"0\" is not a usable IPC key");
    // Through `platscope compat`, the same checks with platscope's prefix.
    let out = Command::new(env!("CARGO_BIN_EXE_platscope"))
        .args(["compat", "memhammer", "0", "1"])
        .output()
        .expect("runs");
    check_error(&out, "platscope", 2, "PAGES 0 is not allowed");
}

#[live]
fn help_goes_to_stdout() {
    let kit = Kit::new();
    for tool in TOOLS {
        let out = kit.tool(tool, &["--help"]);
        assert!(out.status.success());
        assert!(text(&out.stdout).starts_with(&format!("usage: {tool}")), "{}", text(&out.stdout));
        assert!(out.stderr.is_empty());
    }
}

fn interrupt(child: &Child) {
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill has no memory effects; the pid is our unreaped child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
}

#[live]
fn ctrl_c_prints_the_line_for_the_stores_done() {
    let kit = Kit::new();
    assert!(kit.tool("create_sem", &[]).status.success());
    let planned: u64 = 4096 * 1_000_000_000;
    let hammer = kit.spawn("memhammer", &["4096", "1000000000"]);
    kit.await_waiters(1);
    assert!(kit.tool("trigger", &[]).status.success());
    std::thread::sleep(Duration::from_millis(300));
    interrupt(&hammer);
    let out = hammer.wait_with_output().expect("exits");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    println!("{stdout}{stderr}");
    assert!(out.status.success(), "{stderr}");
    let (ops, usec) = memhammer_line(stdout.trim_end());
    assert!(ops > 0 && ops < planned, "{ops}");
    assert!(usec > 0);
    assert!(stderr.starts_with(&format!("memhammer: interrupted after {ops} of {planned} stores")));
}

#[live]
fn ctrl_c_before_the_trigger_measures_nothing() {
    let kit = Kit::new();
    assert!(kit.tool("create_sem", &[]).status.success());
    let hammer = kit.spawn("memhammer", &["64", "1"]);
    kit.await_waiters(1);
    interrupt(&hammer);
    let out = hammer.wait_with_output().expect("exits");
    check_error(
        &out,
        "memhammer",
        1,
        "interrupted while waiting for the trigger: nothing was measured",
    );
}

#[live]
fn mem_slb_processes_reports_verified_memory_per_worker() {
    let args = ["mem", "slb", "--processes", "--workers", "2", "--pages", "2048", "--loops", "20"];
    let out = platscope(&[&args[..], &["--json"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let workers = json["workers"].as_array().expect("workers");
    assert_eq!(workers.len(), 2);
    for (i, w) in workers.iter().enumerate() {
        println!("worker {i}: {w}");
        assert_eq!(w["worker"], i);
        assert_eq!(w["ops"], TEST_OPS);
        assert_eq!(w["planned_ops"], TEST_OPS);
        assert!(w["elapsed_ns"].as_u64().expect("elapsed") > 0);
        let placement = &w["placement"];
        assert_eq!(placement["not_present"], 0);
        let pages: u64 = placement["per_node"]
            .as_array()
            .expect("per_node")
            .iter()
            .map(|n| n["pages"].as_u64().expect("pages"))
            .sum();
        assert_eq!(pages, 2048, "every page verified resident");
    }
    assert_eq!(json["interrupted"], false);

    // The text layout is thread mode's: the memhammer lines, then the summary and placement.
    let out = platscope(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    println!("{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(memhammer_line(lines[0]).0, TEST_OPS);
    assert_eq!(memhammer_line(lines[1]).0, TEST_OPS);
    assert!(lines[3].starts_with("2 worker(s), 2048 pages × 20 loops each"), "{stdout}");
    assert_eq!(lines.iter().filter(|l| l.ends_with(", verified)")).count(), 2, "{stdout}");
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

#[live]
fn mem_slb_processes_refuses_bad_plans_before_starting_workers() {
    let out = platscope(&[
        "mem",
        "slb",
        "--processes",
        "--workers",
        "2",
        "--pages",
        "4294967295",
        "--loops",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("use a smaller size"), "{}", text(&out.stderr));
    let hidden = platscope(&["mem", "--help"]);
    assert!(!text(&hidden.stdout).contains("slb-worker"), "the worker subcommand is hidden");
}

#[live]
fn memhammers_share_one_segment_and_lock_it() {
    let kit = Kit::new();
    let script = "./create_sem\n\
                  ./memhammer --shared --lock ticket 64 200 &\n\
                  ./memhammer --shared --lock ticket 64 200 &\n\
                  ./trigger\n\
                  wait\n";
    let out = kit.script("shared", script);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let totals: Vec<&str> = stdout.lines().filter(|l| l.starts_with("Total ops")).collect();
    assert_eq!(totals.len(), 2, "{stdout}");
    for line in totals {
        assert_eq!(memhammer_line(line).0, 64 * 200, "{line}");
    }
    let locks: Vec<&str> = stdout.lines().filter(|l| l.starts_with("Lock ticket")).collect();
    assert_eq!(locks.len(), 2, "{stdout}");
    for line in locks {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!((f[2], f[3]), ("acquisitions", "12800"), "{line}");
        let handoffs: u64 = f[5].parse().expect("hand-offs");
        assert!((1..=12_800).contains(&handoffs), "{line}");
    }
    // Both attached the same segment, which went away with them.
    let gone = std::process::Command::new("ipcs").args(["-m"]).output();
    if let Ok(ipcs) = gone {
        assert!(!text(&ipcs.stdout).contains(&format!("{:#010x}", kit.key)), "segment left");
    }
    // Different sizes in one round are refused in words.
    assert!(kit.tool("create_sem", &[]).status.success());
    let first = kit.spawn("memhammer", &["--shared", "64", "1"]);
    kit.await_waiters(1);
    let out = kit.tool("memhammer", &["--shared", "128", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("give every memhammer --shared the same PAGES"));
    assert!(kit.tool("trigger", &[]).status.success());
    let first = first.wait_with_output().expect("first memhammer");
    assert!(first.status.success(), "{}", text(&first.stderr));
}
