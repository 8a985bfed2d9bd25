//! `platscope ab` as a user runs it: settings and workloads the machine cannot take (one line,
//! exit 2, nothing changed), a journal left by a crash found by any command and put back by
//! `ab --restore`; and, as root on this machine, every setting kind changed for the workload
//! and put back — THP on a memory-latency workload stored and drawn again, a SIGKILL mid-run
//! then `--restore`, Ctrl-C and SIGTERM, a value the kernel refuses, the memory policy and CPUs
//! of the workload only, an allocator verified in the measured process, the governor.
//!
//! Each test has a results directory of its own (`XDG_DATA_HOME`), so a journal one leaves
//! cannot reach another; the live ones take turns on the machine ([`machine`]) and put back
//! what they found even when they fail ([`Untouched`]).

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use test_support::{command, text, wait_within};
use test_tier::live;

const THP: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
const DEFRAG: &str = "/sys/kernel/mm/transparent_hugepage/defrag";
const BALANCING: &str = "/proc/sys/kernel/numa_balancing";
const SWAPPINESS: &str = "/proc/sys/vm/swappiness";
const SCAN_SLEEP: &str = "/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs";

/// `platscope ARGS` with `home` as its `XDG_DATA_HOME` (where the journal goes).
fn ab_in(home: &Path) -> Command {
    let mut c = command();
    c.env("XDG_DATA_HOME", home);
    c
}

fn run(home: &Path, args: &[&str]) -> Output {
    ab_in(home).args(args).output().unwrap()
}

fn journal(home: &Path) -> PathBuf {
    home.join("platscope/ab-journal.json")
}

/// The value a settings file holds (the bracketed word of a list of choices).
fn value(path: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']').map(String::from))
        .unwrap_or_else(|| text.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn fails(out: &Output, needle: &str) -> String {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}{}", text(&out.stdout));
    assert!(err.contains(needle), "expected '{needle}' in: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    err
}

fn json(out: &Output) -> Value {
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn settings_and_workloads_it_cannot_take_are_one_line_and_exit_2() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let ab = |a: &str, b: &str, workload: &[&str]| {
        let mut args = vec!["--no-store", "ab", "--a", a, "--b", b, "--"];
        args.extend_from_slice(workload);
        run(h, &args)
    };
    let local = "numa=localalloc";
    fails(&ab("thp=sometimes", local, &["exec", "true"]), "thp takes always, madvise, never");
    fails(&ab("swap=1", local, &["exec", "true"]), "unknown setting 'swap'");
    fails(&ab("numa=bind:0", local, &["exec", "true"]), "not one of membind");
    fails(&ab("numa=membind:99", local, &["exec", "true"]), "numa: ");
    fails(&ab("sysctl:vm.no_such_key=1", local, &["exec", "true"]), "no such sysctl");
    fails(&ab("sysfs:/sys/../etc/passwd=x", local, &["exec", "true"]), "without '..'");
    fails(&ab("sysfs:/sys/no/such/file=1", local, &["exec", "true"]), "sysfs:/sys/no/such/file");
    fails(&ab("alloc=nosuchalloc", local, &["exec", "true"]), "alloc=nosuchalloc");
    fails(&ab(local, local, &["topo"]), "stores no figures");
    fails(&ab(local, local, &["nosuch", "command"]), "is not a platscope command");
    fails(&ab(local, local, &["ab", "--a", local]), "is an A/B itself");
    fails(&ab(local, local, &["mem", "latency", "--bogus"]), "mem latency: unexpected argument");
    fails(&ab(local, local, &["mem", "latency", "--db", "x.db"]), "the workload's --db");
    fails(&ab(local, local, &["exec", "/nonexistent/program"]), "cannot run");
    fails(&ab(local, local, &[]), "give the workload after --");
    // Nothing was written: no journal.
    assert!(!journal(h).exists());
    // Without root, a file setting says so before anything changes (as root: run as nobody).
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let mut not_root = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(test_support::bin());
        c.env("XDG_DATA_HOME", h);
        c
    } else {
        ab_in(h)
    };
    let out = not_root
        .args(["--no-store", "ab", "--a", "thp=never", "--b", "thp=always", "--", "exec", "true"])
        .output()
        .unwrap();
    fails(&out, "needs root");
    assert!(!journal(h).exists());
}

#[test]
fn a_journal_left_by_a_crash_is_said_by_every_command_and_put_back_by_restore() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    // A settings file of a made-up machine, changed by an A/B that died (pid 1 at another
    // start time is not it).
    let knob = h.join("knob");
    std::fs::write(&knob, "changed\n").unwrap();
    std::fs::create_dir_all(h.join("platscope")).unwrap();
    let left = serde_json::json!({
        "pid": 1, "start_ticks": u64::MAX, "started": "2026-01-01T00:00:00Z",
        "argv": ["platscope", "ab"],
        "originals": [{"setting": "sysctl:vm.knob", "path": knob, "value": "original"}]
    });
    std::fs::write(journal(h), left.to_string()).unwrap();
    let topo = run(h, &["--no-store", "topo"]);
    assert!(topo.status.success());
    let said = text(&topo.stderr);
    assert!(said.contains("a settings journal is pending"), "{said}");
    assert!(said.contains("run `platscope ab --restore`") && said.contains("sysctl:vm.knob"));
    // A new A/B will not start over it.
    let refused = run(
        h,
        &[
            "--no-store",
            "ab",
            "--a",
            "numa=localalloc",
            "--b",
            "numa=localalloc",
            "--",
            "exec",
            "true",
        ],
    );
    fails(&refused, "run `platscope ab --restore` first");
    let restore = run(h, &["--no-store", "ab", "--restore"]);
    assert!(restore.status.success(), "{}", text(&restore.stderr));
    assert!(
        text(&restore.stdout).contains("restored what the A/B of pid 1"),
        "{}",
        text(&restore.stdout)
    );
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), "original\n");
    assert!(!journal(h).exists());
    // Nothing pending any more: said by neither.
    let topo = run(h, &["--no-store", "topo"]);
    assert!(!text(&topo.stderr).contains("journal"), "{}", text(&topo.stderr));
    let again = run(h, &["--no-store", "--json", "ab", "--restore"]);
    assert_eq!(json(&again)["journal"], Value::Null);
}

/// The live tests change the machine: one at a time.
static MACHINE: Mutex<()> = Mutex::new(());

fn machine() -> std::sync::MutexGuard<'static, ()> {
    MACHINE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The values of some settings files as a test found them, written back when it ends however
/// it ends (a failed assertion included), and the test's journal removed.
struct Untouched {
    found: Vec<(String, String)>,
    journal: PathBuf,
}

impl Untouched {
    fn new(paths: &[&str], home: &Path) -> Self {
        Untouched {
            found: paths.iter().map(|p| (p.to_string(), value(p))).collect(),
            journal: journal(home),
        }
    }

    /// Every file holds what it held.
    fn assert_unchanged(&self) {
        for (path, was) in &self.found {
            assert_eq!(&value(path), was, "{path}");
        }
        assert!(!self.journal.exists(), "the journal is left");
    }
}

impl Drop for Untouched {
    fn drop(&mut self) {
        for (path, was) in &self.found {
            if &value(path) != was {
                let _ = std::fs::write(path, format!("{was}\n"));
            }
        }
        let _ = std::fs::remove_file(&self.journal);
    }
}

/// Each run's side (`A`, `B`, `A1`, `A2`) in the order they ran.
fn sides(report: &Value) -> Vec<String> {
    report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["arm"].as_str().unwrap().to_string())
        .collect()
}

#[live("changes THP on this machine (root) and measures memory latency")]
fn thp_a_b_on_memory_latency_is_judged_stored_drawn_and_restored() {
    let _machine = machine();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let untouched = Untouched::new(&[THP], h);
    let db = h.join("results.db");
    let page = h.join("ab.html");
    let out = run(
        h,
        &[
            "--json",
            "--db",
            db.to_str().unwrap(),
            "--html-out",
            page.to_str().unwrap(),
            "ab",
            "--a",
            "thp=never",
            "--b",
            "thp=always",
            "--rounds",
            "2",
            "--calibration-rounds",
            "2",
            "--seed",
            "7",
            "--",
            "mem",
            "latency",
            "--size",
            "64MiB",
            "--page",
            "thp",
            "--tlb-group",
            "0",
            "--duration-ms",
            "100",
        ],
    );
    let report = json(&out);
    untouched.assert_unchanged();
    assert_eq!(report["settings"]["a"]["thp"], "never");
    assert_eq!(report["settings"]["b"]["thp"], "always");
    assert_eq!(report["restored"], true);
    assert_eq!(report["method"]["seed"], 7);
    assert_eq!(report["calibration"]["rounds"], 2);
    assert!(report["calibration"]["spread"].as_f64().is_some());
    let rounds = report["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 4, "2 rounds × 2 sides × one figure");
    for r in rounds {
        assert!(r["value"].as_f64().unwrap() > 0.0 && r["at"].as_f64().is_some(), "{r}");
        assert!(r["figure"].as_str().unwrap().starts_with("mem_latency"), "{r}");
    }
    let v = &report["verdicts"][0];
    assert_eq!(v["unit"], "ns");
    assert!(["faster", "slower", "same", "untested"].contains(&v["verdict"].as_str().unwrap()));
    assert!(v["ratio_low"].as_f64().unwrap() <= v["ratio"].as_f64().unwrap());
    // Every run recorded its clock and placement.
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 8);
    assert!(runs.iter().all(|r| r.get("clock_ghz").is_some()));
    // Stored: `report --from-db` draws the same section.
    let id = test_support::newest_run(db.to_str().unwrap());
    let again = h.join("again");
    let drawn = run(
        h,
        &[
            "report",
            "--from-db",
            &id,
            "--db",
            db.to_str().unwrap(),
            "--out",
            again.to_str().unwrap(),
        ],
    );
    assert!(drawn.status.success(), "{}", text(&drawn.stderr));
    let live = test_support::page_sections(&std::fs::read_to_string(&page).unwrap());
    let stored =
        test_support::page_sections(&std::fs::read_to_string(again.join("report.html")).unwrap());
    let section =
        |all: &[(String, String)]| all.iter().find(|s| s.0 == "sec-ab").map(|s| s.1.clone());
    assert!(section(&live).is_some_and(|s| s.contains("class=\"ab-b\"")));
    assert_eq!(section(&live), section(&stored));
}

#[live("changes THP and a sysctl on this machine (root), then SIGKILLs the A/B")]
fn a_sigkill_leaves_a_journal_that_restore_puts_back() {
    let _machine = machine();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let untouched = Untouched::new(&[THP, SWAPPINESS], h);
    let (thp, swappiness) = (value(THP), value(SWAPPINESS));
    let other_thp = if thp == "never" { "always" } else { "never" };
    let other_swappiness = if swappiness == "33" { "34" } else { "33" };
    let pids = h.join("pids");
    let script = format!("echo $$ >> {}; sleep 30", pids.display());
    let a = [format!("thp={other_thp}"), format!("sysctl:vm.swappiness={other_swappiness}")];
    let mut child = ab_in(h)
        .args([
            "--no-store",
            "ab",
            "--a",
            &a[0],
            &a[1],
            "--b",
            &format!("thp={thp}"),
            "--",
            "exec",
            "sh",
            "-c",
            &script,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The first run has started: A's settings are in place.
    let started = Instant::now();
    while !pids.exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "no run started");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        (value(THP), value(SWAPPINESS)),
        (other_thp.to_string(), other_swappiness.to_string())
    );
    test_support::signal(&child, libc::SIGKILL);
    let _ = child.wait();
    assert!(journal(h).exists(), "a SIGKILL leaves the journal");
    // The workload dies with it (it was started with PR_SET_PDEATHSIG).
    let workload: u32 = std::fs::read_to_string(&pids).unwrap().trim().parse().unwrap();
    let gone = Instant::now();
    while Path::new(&format!("/proc/{workload}")).exists()
        && !std::fs::read_to_string(format!("/proc/{workload}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
    {
        assert!(
            gone.elapsed() < Duration::from_secs(5),
            "the workload {workload} outlived the A/B"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let topo = run(h, &["--no-store", "topo"]);
    assert!(text(&topo.stderr).contains("a settings journal is pending"), "{}", text(&topo.stderr));
    let restore = run(h, &["--no-store", "ab", "--restore"]);
    assert!(restore.status.success(), "{}", text(&restore.stderr));
    let said = text(&restore.stdout);
    assert!(
        said.contains(&format!("thp={thp}"))
            && said.contains(&format!("sysctl:vm.swappiness={swappiness}")),
        "{said}"
    );
    untouched.assert_unchanged();
    let topo = run(h, &["--no-store", "topo"]);
    assert!(!text(&topo.stderr).contains("journal"), "{}", text(&topo.stderr));
}

#[live("changes THP on this machine (root), stopped by Ctrl-C and SIGTERM")]
fn ctrl_c_and_sigterm_stop_the_rounds_and_restore() {
    let _machine = machine();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let untouched = Untouched::new(&[THP], h);
    let thp = value(THP);
    let other = if thp == "never" { "always" } else { "never" };
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let marks = h.join(format!("marks-{signal}"));
        let script = format!("echo x >> {}; sleep 0.2", marks.display());
        let child = ab_in(h)
            .args([
                "--no-store",
                "--json",
                "ab",
                "--a",
                &format!("thp={other}"),
                "--b",
                &format!("thp={thp}"),
            ])
            .args(["--rounds", "100", "--no-calibrate", "--", "exec", "sh", "-c", &script])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::fs::read_to_string(&marks).map_or(0, |t| t.lines().count()) < 3 {
            assert!(started.elapsed() < Duration::from_secs(60), "too slow to start");
            std::thread::sleep(Duration::from_millis(20));
        }
        test_support::signal(&child, signal);
        let (out, _) = wait_within(child, Duration::from_secs(30));
        let report = json(&out);
        assert_eq!(report["interrupted"], true);
        assert_eq!(report["method"]["stopped"], "interrupted");
        assert_eq!(report["restored"], true);
        assert!(!report["runs"].as_array().unwrap().is_empty(), "what was measured is kept");
        untouched.assert_unchanged();
    }
}

#[live("writes THP defrag, NUMA balancing, a sysctl and a sysfs file (root)")]
fn every_file_setting_reaches_the_workload_and_is_put_back() {
    let _machine = machine();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let files = [DEFRAG, BALANCING, SWAPPINESS, SCAN_SLEEP];
    let untouched = Untouched::new(&files, h);
    let found: Vec<String> = files.iter().map(|f| value(f)).collect();
    let pick = |now: &str, x: &'static str, y: &'static str| if now == x { y } else { x };
    let a_values = [
        pick(&found[0], "never", "defer"),
        pick(&found[1], "1", "0"),
        pick(&found[2], "33", "34"),
        pick(&found[3], "12345", "12346"),
    ];
    let b_values = [pick(a_values[0], "never", "defer"), pick(a_values[1], "1", "0")];
    let seen = h.join("seen");
    let script = format!("for f in {}; do cat $f; done >> {}", files.join(" "), seen.display());
    let a = [
        format!("thp-defrag={}", a_values[0]),
        format!("numa-balancing={}", a_values[1]),
        format!("sysctl:vm.swappiness={}", a_values[2]),
        format!("sysfs:{SCAN_SLEEP}={}", a_values[3]),
    ];
    let b = [format!("thp-defrag={}", b_values[0]), format!("numa-balancing={}", b_values[1])];
    let out = ab_in(h)
        .args(["--no-store", "--json", "ab", "--a"])
        .args(&a)
        .arg("--b")
        .args(&b)
        .args(["--rounds", "2", "--calibration-rounds", "2", "--", "exec", "sh", "-c", &script])
        .output()
        .unwrap();
    let report = json(&out);
    untouched.assert_unchanged();
    // Each run saw its side's values; B leaves what it does not set as found.
    let text = std::fs::read_to_string(&seen).unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix('[')?.strip_suffix(']').map(String::from))
                .unwrap_or_else(|| l.trim().to_string())
        })
        .collect();
    let sides = sides(&report);
    assert_eq!(lines.len(), 4 * sides.len(), "{text}");
    for (run, side) in lines.chunks(4).zip(&sides) {
        let expected: Vec<&str> = if side == "B" {
            vec![b_values[0], b_values[1], found[2].as_str(), found[3].as_str()]
        } else {
            a_values.to_vec()
        };
        assert_eq!(run, expected.as_slice(), "a run of {side}");
    }
    let restored: Vec<&str> = report["restored_settings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["setting"].as_str().unwrap())
        .collect();
    assert_eq!(restored.len(), 4, "{restored:?}");
}

#[live("a value the kernel refuses (root)")]
fn a_value_the_kernel_refuses_ends_it_with_everything_put_back() {
    let _machine = machine();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let untouched = Untouched::new(&[THP, SWAPPINESS], h);
    let other = if value(THP) == "never" { "always" } else { "never" };
    let out = run(
        h,
        &[
            "--no-store",
            "ab",
            "--a",
            &format!("thp={other}"),
            "--b",
            "sysctl:vm.swappiness=lots",
            "--",
            "exec",
            "true",
        ],
    );
    let err = fails(&out, "sysctl:vm.swappiness");
    assert!(err.contains("every setting was put back"), "{err}");
    untouched.assert_unchanged();
}

#[live("runs workloads under a memory policy and CPU binding")]
fn the_memory_policy_and_cpus_are_the_workloads_only() {
    let _machine = machine();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let seen = h.join("seen");
    // The policy of the workload's first mapping and the CPUs it may use, as the kernel says.
    let script = format!(
        "{{ grep -m1 -oE 'default|bind:[0-9,-]+|interleave:[0-9,-]+' /proc/self/numa_maps; \
         grep Cpus_allowed_list /proc/self/status; }} >> {}",
        seen.display()
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let b_cpu = if cpus > 1 { "1" } else { "0" };
    let out = run(
        h,
        &[
            "--no-store",
            "--json",
            "ab",
            "--a",
            "numa=membind:0",
            "numa=physcpubind:0",
            "--b",
            "numa=interleave:all",
            &format!("numa=physcpubind:{b_cpu}"),
            "--rounds",
            "2",
            "--no-calibrate",
            "--",
            "exec",
            "sh",
            "-c",
            &script,
        ],
    );
    let report = json(&out);
    assert_eq!(report["settings"]["a"]["numa"], "membind:0");
    assert_eq!(report["settings"]["b"]["numa-cpus"], format!("physcpubind:{b_cpu}"));
    assert_eq!(report["restored_settings"].as_array().unwrap().len(), 0, "no file was touched");
    let text = std::fs::read_to_string(&seen).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let sides = sides(&report);
    assert_eq!(lines.len(), 2 * sides.len(), "{text}");
    for (run, side) in lines.chunks(2).zip(&sides) {
        let (policy, cpus) = if side == "A" { ("bind:0", "0") } else { ("interleave:0", b_cpu) };
        assert!(run[0].starts_with(policy), "{side}: {run:?}");
        assert_eq!(run[1].split_whitespace().last(), Some(cpus), "{side}: {run:?}");
    }
}

#[live("preloads jemalloc into the workload (libjemalloc2 installed)")]
fn an_allocator_is_preloaded_and_verified_in_the_measured_process() {
    let _machine = machine();
    let home = tempfile::tempdir().unwrap();
    let out = run(
        home.path(),
        &[
            "--no-store",
            "--json",
            "ab",
            "--a",
            "alloc=jemalloc",
            "--b",
            "alloc=glibc:arena_max=1",
            "--rounds",
            "2",
            "--no-calibrate",
            "--",
            "exec",
            "sleep",
            "0.2",
        ],
    );
    let report = json(&out);
    for r in report["runs"].as_array().unwrap() {
        let preload = r["preload"].as_str().unwrap_or("");
        if r["arm"] == "A" {
            assert!(preload.contains("libjemalloc"), "{r}");
        } else {
            assert!(preload.contains("GLIBC_TUNABLES=glibc.malloc.arena_max=1"), "{r}");
        }
    }
    // A preload that does not take (a statically linked program) is refused, not measured.
    let linked = |p: &str| text(&Command::new("ldd").arg(p).output().unwrap().stdout);
    let static_program = ["/bin/busybox", "/usr/bin/busybox"]
        .into_iter()
        .find(|p| Path::new(p).exists() && !linked(p).contains("libc"));
    let Some(program) = static_program else {
        println!("no statically linked busybox here: a refused preload is not tried");
        return;
    };
    let out = run(
        home.path(),
        &[
            "--no-store",
            "ab",
            "--a",
            "alloc=jemalloc",
            "--b",
            "alloc=glibc",
            "--rounds",
            "2",
            "--no-calibrate",
            "--",
            "exec",
            program,
            "sleep",
            "0.2",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("alloc=jemalloc") && err.contains("not mapped"), "{err}");
}

#[live("the cpufreq governor (root), or its clear refusal where there is no cpufreq")]
fn the_governor_is_set_where_cpufreq_exists_and_refused_where_not() {
    let _machine = machine();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let policy = Path::new("/sys/devices/system/cpu/cpufreq/policy0");
    if !policy.join("scaling_governor").exists() {
        let out = run(
            h,
            &[
                "--no-store",
                "ab",
                "--a",
                "governor=performance",
                "--b",
                "governor=powersave",
                "--",
                "exec",
                "true",
            ],
        );
        fails(&out, "no cpufreq driver");
        assert!(!journal(h).exists());
        return;
    }
    let governor = policy.join("scaling_governor").display().to_string();
    let untouched = Untouched::new(&[&governor], h);
    let now = value(&governor);
    let offered = std::fs::read_to_string(policy.join("scaling_available_governors")).unwrap();
    let other = offered.split_whitespace().find(|g| *g != now).unwrap_or(&now).to_string();
    let out = run(
        h,
        &[
            "--no-store",
            "--json",
            "ab",
            "--a",
            &format!("governor={other}"),
            "--b",
            &format!("governor={now}"),
            "--rounds",
            "2",
            "--no-calibrate",
            "--",
            "exec",
            "true",
        ],
    );
    assert_eq!(json(&out)["restored"], true);
    untouched.assert_unchanged();
}
