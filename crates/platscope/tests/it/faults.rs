//! Faults a real machine produces, against the real thing: a full disk under the
//! results store, a path with a Latin-1 byte, a closed stderr, `ulimit -v` and a cgroup memory
//! limit, Ctrl-C and SIGTERM during set-up, SIGTERM to the SLB's worker processes, an
//! interrupted scaling run, and a wrapped command's exit status.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use test_support::{signal, stderr, stdout, wait_within};
use test_tier::live;

const BIN: &str = env!("CARGO_BIN_EXE_platscope");

/// A fresh directory for one test, removed on drop.
fn scratch(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("platscope-faults-{tag}-")).tempdir().unwrap()
}

/// Tests that take half the machine's memory or watch the system's semaphore sets run one at a
/// time (libtest runs a file's tests in parallel).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

// ---- non-UTF-8 bytes in path arguments ------------------------------------------------------

/// A directory name with a Latin-1 'é' (0xE9), legal on Linux and not UTF-8.
fn latin1(dir: &Path, stem: &[u8]) -> PathBuf {
    dir.join(OsStr::from_bytes(stem))
}

#[test]
fn latin1_bytes_in_db_and_file_arguments_do_not_panic() {
    let dir = scratch("latin1");
    let sub = latin1(dir.path(), b"r\xe9sultats");
    std::fs::create_dir(&sub).unwrap();
    let db = sub.join(OsStr::from_bytes(b"caf\xe9.db"));

    let out = test_support::command()
        .args(["timer", "--batches", "5", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "timer --db: {}", stderr(&out));
    assert!(db.exists(), "the store was made at the Latin-1 path");

    let out = test_support::command().args(["results", "list", "--db"]).arg(&db).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "results list: {}", stderr(&out));
    assert!(stdout(&out).contains("timer"), "{}", stdout(&out));

    let file = sub.join(OsStr::from_bytes(b"donn\xe9es"));
    std::fs::write(&file, vec![7u8; 64 << 10]).unwrap();
    let out =
        test_support::command().arg("pagecache").arg(&file).arg("--no-store").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "pagecache: {}", stderr(&out));
    assert!(stdout(&out).contains("donn"), "{}", stdout(&out));

    // A missing file with a Latin-1 name: a one-line error, not a panic.
    let missing = sub.join(OsStr::from_bytes(b"absent\xe9"));
    let out =
        test_support::command().arg("pagecache").arg(&missing).arg("--no-store").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    assert_eq!(stderr(&out).trim_end().lines().count(), 1, "{}", stderr(&out));
}

#[test]
fn latin1_bytes_in_report_out_do_not_panic() {
    let dir = scratch("latin1-out");
    let db = dir.path().join("r.db");
    let out = test_support::command()
        .args(["mem", "latency", "--size", "1MiB", "--duration-ms", "50", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page_dir = latin1(dir.path(), b"rapport\xe9");
    let out = test_support::command()
        .args(["report", "--from-db", "1", "--db"])
        .arg(&db)
        .arg("--out")
        .arg(&page_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(page_dir.join("report.html").is_file(), "the page is in the Latin-1 directory");
}

// ---- a closed stderr ------------------------------------------------------------------------

/// Runs platscope with stderr a pipe whose reading end is already closed (`2>&1 | head -c0`).
fn with_closed_stderr(args: &[&str]) -> std::process::ExitStatus {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    test_support::command().args(args).stdout(Stdio::null()).stderr(writer).status().unwrap()
}

#[test]
fn a_closed_stderr_never_turns_the_exit_code_into_a_panic() {
    // pagecache writes every failed file but the last as a line of its own, then the error.
    let status = with_closed_stderr(&["pagecache", "/nonexistent/a", "/nonexistent/b"]);
    assert_eq!(status.code(), Some(1), "{status}");
    // cpu util writes its column legend to stderr on the first report.
    let status = with_closed_stderr(&["cpu", "util", "0.1", "1"]);
    assert_eq!(status.code(), Some(0), "{status}");
    // A usage error.
    let status = with_closed_stderr(&["mem", "latency", "--size", "lots"]);
    assert_eq!(status.code(), Some(2), "{status}");
}

// ---- limits other than free memory ----------------------------------------------------------

/// `platscope ARGS` under `ulimit -v KIB`.
fn under_ulimit_v(kib: u64, args: &str) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec {BIN} {args}"))
        .output()
        .unwrap()
}

#[test]
fn an_address_space_limit_is_refused_up_front_naming_it() {
    // 400 MiB of address space cannot hold a 256 MiB buffer and what the run needs besides.
    let out = under_ulimit_v(400 << 10, "mem latency --size 256MiB --duration-ms 50 --no-store");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("address-space limit (RLIMIT_AS, `ulimit -v`)"), "{err}");
    assert!(err.contains("ulimit -v unlimited"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // What fits still runs.
    let out = under_ulimit_v(400 << 10, "mem latency --size 8MiB --duration-ms 50 --no-store");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// The directory of a new memory cgroup (v2 `memory.max` or v1 `memory.limit_in_bytes`),
/// removed on drop; None (with the reason printed) where none can be made.
struct MemCgroup {
    dir: PathBuf,
}

impl MemCgroup {
    fn new(limit: u64) -> Option<Self> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let mut candidates = Vec::new();
        for line in mountinfo.lines() {
            let Some((left, right)) = line.split_once(" - ") else { continue };
            let mount = left.split_whitespace().nth(4).unwrap_or("");
            let mut r = right.split_whitespace();
            let (fstype, _, opts) = (r.next(), r.next(), r.next().unwrap_or(""));
            match fstype {
                Some("cgroup2") => candidates.push((PathBuf::from(mount), "memory.max")),
                Some("cgroup") if opts.split(',').any(|o| o == "memory") => {
                    candidates.push((PathBuf::from(mount), "memory.limit_in_bytes"))
                }
                _ => {}
            }
        }
        for (mount, file) in candidates {
            let dir = mount.join(format!("platscope-faults-{}", std::process::id()));
            if std::fs::create_dir(&dir).is_err() {
                continue;
            }
            let cg = MemCgroup { dir };
            if std::fs::write(cg.dir.join(file), limit.to_string()).is_ok() {
                return Some(cg);
            }
        }
        println!("skipped: no memory cgroup can be made here (needs root and a memory controller)");
        None
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[live]
fn a_cgroup_memory_limit_is_refused_up_front_naming_it() {
    let Some(cg) = MemCgroup::new(256 << 20) else { return };
    let procs = cg.dir.join("cgroup.procs");
    let run = |size: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > '{}' && exec {BIN} mem latency --size {size} --duration-ms 50 --no-store",
                procs.display()
            ))
            .output()
            .unwrap()
    };
    let out = run("512MiB");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the memory limit of cgroup"), "{err}");
    assert!(err.contains(&cg.dir.display().to_string()), "{err}");
    let out = run("8MiB");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

// ---- Ctrl-C and SIGTERM during set-up -------------------------------------------------------

/// A buffer large enough that first touch takes seconds, small enough for this machine.
fn large_size() -> String {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let available_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    let mib = (available_kib / 1024 / 2).min(6 << 10);
    format!("{mib}MiB")
}

/// Sends `sig` `after` into a large `mem latency` run (still preparing: first touch at 300 ms,
/// shuffling and linking the chase or its warm-up lap seconds later) and checks it ends at once.
fn stopped_during_setup(sig: libc::c_int, after: Duration, says: &str) {
    let _one_at_a_time = serial();
    let size = large_size();
    let child = test_support::command()
        .args(["mem", "latency", "--size", &size, "--no-store"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    signal(&child, sig);
    let (out, took) = wait_within(child, Duration::from_secs(30));
    let err = stderr(&out);
    println!("{size}: ended {took:?} after the signal: {err}");
    assert!(took < Duration::from_secs(2), "honoured only after {took:?}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(says), "{err}");
    assert!(err.contains("before anything was measured"), "{err}");
}

#[live]
fn ctrl_c_during_set_up_is_honoured_at_once() {
    stopped_during_setup(libc::SIGINT, Duration::from_millis(300), "stopped by Ctrl-C");
    stopped_during_setup(libc::SIGINT, Duration::from_millis(2500), "stopped by Ctrl-C");
}

#[live]
fn sigterm_during_set_up_is_honoured_at_once() {
    stopped_during_setup(libc::SIGTERM, Duration::from_millis(300), "stopped by SIGTERM");
}

// ---- interrupted output draws no conclusion -------------------------------------------------

#[live]
fn an_interrupted_bandwidth_scaling_draws_no_conclusion() {
    let child = test_support::command()
        .args(["mem", "bandwidth", "--scale", "--duration-ms", "3000", "--size", "16MiB"])
        .arg("--no-store")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    signal(&child, libc::SIGINT);
    let (out, _) = wait_within(child, Duration::from_secs(10));
    let text = stdout(&out);
    println!("{text}");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!text.contains("not saturated"), "{text}");
    assert!(text.contains("INTERRUPTED"), "{text}");
}

// ---- SIGTERM to the SLB's worker processes --------------------------------------------------

/// Ids of the System V semaphore sets that exist now (`ipcs -s`).
fn semaphore_ids() -> Vec<String> {
    let out = Command::new("ipcs").arg("-s").output().unwrap();
    stdout(&out)
        .lines()
        .filter(|l| l.starts_with("0x"))
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
        .collect()
}

fn slb_processes_then(signals: &[libc::c_int]) -> (Output, Vec<String>) {
    let _one_at_a_time = serial();
    let before = semaphore_ids();
    let child = test_support::command()
        .args(["mem", "slb", "--processes", "--pages", "1024", "--loops", "1000000"])
        .args(["--workers", "2", "--no-store"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let made = loop {
        let new: Vec<String> =
            semaphore_ids().into_iter().filter(|id| !before.contains(id)).collect();
        if !new.is_empty() {
            break new;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no semaphore set appeared");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(500)); // workers released and hammering
    for &sig in signals {
        signal(&child, sig);
        std::thread::sleep(Duration::from_millis(5));
    }
    let (out, _) = wait_within(child, Duration::from_secs(15));
    let left: Vec<String> = semaphore_ids().into_iter().filter(|id| made.contains(id)).collect();
    (out, left)
}

#[live]
fn sigterm_to_slb_processes_keeps_results_and_removes_the_semaphore() {
    let (out, left) = slb_processes_then(&[libc::SIGTERM]);
    println!("{}{}", stdout(&out), stderr(&out));
    assert!(left.is_empty(), "semaphore set(s) left behind: {left:?}");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("INTERRUPTED"), "{}", stdout(&out));
}

#[live]
fn a_second_sigterm_kills_but_still_removes_the_semaphore() {
    let (out, left) = slb_processes_then(&[libc::SIGTERM, libc::SIGTERM]);
    assert!(left.is_empty(), "semaphore set(s) left behind: {left:?}");
    use std::os::unix::process::ExitStatusExt;
    // Either the second signal killed it, or the first had already ended the run.
    assert!(
        out.status.signal() == Some(libc::SIGTERM) || out.status.code() == Some(0),
        "{:?}",
        out.status
    );
}

// ---- a full disk under the results store ----------------------------------------------------

/// A tmpfs of `size` mounted on a fresh directory; unmounted on drop, whatever the test did.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn new(size: &str) -> Self {
        let dir = scratch("tmpfs");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "platscope-faults"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "mount (needs root)");
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

#[live]
fn a_full_disk_keeps_the_measurement_and_says_where() {
    let disk = Tmpfs::new("512k");
    let cwd = scratch("unsaved");
    let db = disk.path().join("results.db");
    let child = test_support::command()
        .args(["mem", "latency", "--size", "1MiB", "--duration-ms", "1500", "--json", "--db"])
        .arg(&db)
        .current_dir(cwd.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the store is open (its WAL exists), fill the disk under it, mid-run.
    let started = Instant::now();
    while !disk.path().join("results.db-wal").exists() {
        assert!(started.elapsed() < Duration::from_secs(10), "the store was never opened");
        std::thread::sleep(Duration::from_millis(10));
    }
    let filled = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", disk.path().join("fill").display()))
        .arg("bs=4k")
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(!filled.success(), "dd stops at a full disk");
    let (out, _) = wait_within(child, Duration::from_secs(30));
    let (text, err) = (stdout(&out), stderr(&out));
    println!("{text}{err}");

    // The result was printed (JSON, whole), the failure said in words, exit 1.
    assert_eq!(out.status.code(), Some(1), "{err}");
    let printed: serde_json::Value = serde_json::from_str(&text).expect("stdout is whole JSON");
    assert!(printed.get("point").is_some(), "{text}");
    assert!(err.contains(&db.display().to_string()), "names the store: {err}");
    assert!(err.contains("the disk is full"), "the cause in words: {err}");
    assert!(!err.contains("disk I/O error"), "not SQLite's words: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");

    // The measurement is kept in the file the message names, and it parses.
    let kept = err
        .split("kept in ")
        .nth(1)
        .and_then(|rest| rest.split(" (").next())
        .expect("names the kept file");
    assert!(kept.contains("platscope-unsaved-"), "{kept}");
    let kept = Path::new(kept);
    let kept = if kept.is_absolute() { kept.to_path_buf() } else { cwd.path().join(kept) };
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&kept).unwrap()).expect("the kept file parses");
    assert_eq!(run["command"], "mem latency", "{run}");
    assert!(!run["metrics"].as_array().unwrap().is_empty(), "{run}");
}

// ---- cpu util -- CMD passes CMD's status on -------------------------------------------------

#[test]
fn cpu_util_passes_the_commands_exit_status_on() {
    let status = |script: &str| {
        let out = test_support::command()
            .args(["cpu", "util", "--", "sh", "-c", script])
            .stderr(Stdio::null())
            .output()
            .unwrap();
        assert!(stdout(&out).contains("sh -c"), "the report is printed: {}", stdout(&out));
        out.status.code()
    };
    assert_eq!(status("true"), Some(0));
    assert_eq!(status("exit 3"), Some(3));
    // Killed by a signal: 128 + its number, as shells report it.
    assert_eq!(status("kill -TERM $$"), Some(128 + libc::SIGTERM));
}

#[live]
fn sigterm_to_cpu_util_ends_the_command_too() {
    let child = test_support::command()
        .args(["cpu", "util", "--", "sleep", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, libc::SIGTERM);
    let (out, took) = wait_within(child, Duration::from_secs(10));
    assert!(took < Duration::from_secs(2), "{took:?}");
    // The report of the command's lifetime, and sleep's end by SIGTERM passed on.
    assert!(stdout(&out).contains("killed by signal 15"), "{}", stdout(&out));
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM), "{}", stderr(&out));
}

// ---- a store another user recorded, read-only to us -----------------------------------------

#[live]
fn a_0444_store_recorded_by_root_is_read_by_another_user() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("readonly");
    let db = dir.path().join("results.db");
    let out = test_support::command()
        .args(["timer", "--batches", "5", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.path()).collect();
    let as_nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", BIN])
            .args(args)
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap()
    };
    let out = as_nobody(&["results", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("timer"), "{}", stdout(&out));
    let out = as_nobody(&["results", "show", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let after: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(before, after, "nothing created beside the store");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
}

// ---- things that go away while watched ------------------------------------------------------

/// A network namespace for one test, deleted on drop.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

#[live]
fn nicstat_says_when_its_interface_disappears() {
    let ns = Netns(format!("psfaults{}", std::process::id()));
    let ip = |args: &[&str]| {
        let status = Command::new("ip").args(args).status().unwrap();
        assert!(status.success(), "ip {args:?} (needs root)");
    };
    ip(&["netns", "add", &ns.0]);
    ip(&["-n", &ns.0, "link", "add", "psa", "type", "veth", "peer", "name", "psb"]);
    ip(&["-n", &ns.0, "link", "set", "psa", "up"]);
    ip(&["-n", &ns.0, "link", "set", "psb", "up"]);
    let child = Command::new("ip")
        .args(["netns", "exec", &ns.0, BIN, "net", "stat", "-i", "psa", "0.2", "15"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    ip(&["-n", &ns.0, "link", "del", "psa"]);
    let (out, _) = wait_within(child, Duration::from_secs(15));
    let err = stderr(&out);
    println!("{}{err}", stdout(&out));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        err.matches("psa: the interface disappeared; it is left out until it comes back").count(),
        1,
        "said once: {err}"
    );
}

#[live]
fn io_pattern_ends_with_a_note_when_its_process_exits() {
    let mut sleeper = Command::new("sleep").arg("1").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let child = test_support::command()
        .args(["io", "pattern", "5", "--pid", &pid])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = sleeper.wait();
    let (out, took) = wait_within(child, Duration::from_secs(10));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("process {pid} exited")), "{err}");
    assert!(took < Duration::from_secs(3), "ended {took:?} after the process, not at the interval");
    assert!(stdout(&out).contains("Sample interval"), "{}", stdout(&out));
}

// ---- store before print: a failing stdout loses no run --------------------------------------

/// Runs platscope ARGS with stdout on /dev/full (every write fails with ENOSPC).
fn onto_dev_full(args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let child = test_support::command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(full))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_within(child, Duration::from_secs(120)).0
}

/// The stored runs' (id, command) in `db`.
fn stored_runs(db: &Path) -> Vec<(i64, String)> {
    let out = test_support::command()
        .args(["results", "list", "--json", "--db"])
        .arg(db)
        .output()
        .unwrap();
    assert!(out.status.success(), "results list: {}", stderr(&out));
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    runs.as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_i64().unwrap(), r["command"].as_str().unwrap().to_string()))
        .collect()
}

/// A full stdout fails the command with one line naming the stored run, which is in the store.
fn stored_although_printing_failed(tag: &str, args: &[&str], command: &str) {
    let dir = scratch(tag);
    let db = dir.path().join("results.db");
    let mut argv: Vec<&str> = args.to_vec();
    argv.extend(["--db", db.to_str().unwrap()]);
    let out = onto_dev_full(&argv);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{argv:?}: {err}");
    let line = err
        .lines()
        .find(|l| l.contains("writing the output"))
        .unwrap_or_else(|| panic!("{argv:?}: no output failure line in {err:?}"));
    assert!(line.contains("No space left on device"), "{line}");
    let runs = stored_runs(&db);
    assert_eq!(runs.len(), 1, "{argv:?}: one run stored: {runs:?}");
    assert_eq!(runs[0].1, command, "{runs:?}");
    assert!(line.contains(&format!("(the run is stored as {})", runs[0].0)), "{line}");
    assert!(!err.contains("panicked"), "{err}");
}

#[live]
fn a_full_stdout_still_stores_the_run_and_says_so() {
    let latency = ["mem", "latency", "--size", "64KiB", "--duration-ms", "50"];
    stored_although_printing_failed("full-text", &latency, "mem latency");
    let json: Vec<&str> = [&latency[..], &["--json"]].concat();
    stored_although_printing_failed("full-json", &json, "mem latency");
    // `net links` is the command with a CSV form.
    let csv = ["net", "links", "--seconds", "0.2", "--csv"];
    stored_although_printing_failed("full-csv", &csv, "net links");
}

#[live]
fn a_full_stdout_still_stores_a_compress_run() {
    let dir = scratch("full-compress");
    let corpus = dir.path().join("corpus");
    let made = test_support::command()
        .args(["--no-store", "compress", "--make-corpus", "1MiB"])
        .arg(&corpus)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", stderr(&made));
    let out = dir.path().join("corpus.lz4");
    let args = ["compress", "-t", "1", corpus.to_str().unwrap(), "-o", out.to_str().unwrap()];
    stored_although_printing_failed("full-compress-run", &args, "compress");
}

#[live]
fn a_full_stdout_after_a_report_names_the_stored_report() {
    let dir = scratch("full-report");
    let db = dir.path().join("results.db");
    let out_dir = dir.path().join("page");
    let out = onto_dev_full(&[
        "report",
        "--sections",
        "compression",
        "--out",
        out_dir.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let report = stored_runs(&db).into_iter().find(|(_, c)| c == "report");
    let (id, _) = report.unwrap_or_else(|| panic!("the report run is stored: {err}"));
    assert!(err.contains(&format!("(the run is stored as {id})")), "{err}");
    assert!(out_dir.join("report.html").is_file(), "the page is written before the summary");
}
