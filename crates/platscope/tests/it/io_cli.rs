//! `platscope io pattern` end to end (root): the DTrace random-vs-sequential I/O script's table
//! and JSON for a workload on a fresh tmpfs, Ctrl-C keeping the interval so far, bad input, and
//! no privileges.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use test_tier::live;

use serde_json::Value;
use test_support::{platscope, stderr};

const BIN: &str = env!("CARGO_BIN_EXE_platscope");

/// A tmpfs mounted for one test, unmounted on drop.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("platscope-io-cli-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64m", "pstest"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(status.success());
        Tmpfs(dir)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// The tests that attach run one at a time (each checks what is attached).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Starts `platscope ARGS` and returns once it says it is tracing; its stderr is then
/// drained in the background (the returned handle joins it for the rest).
fn start_tracing(args: &[&str]) -> (Child, std::thread::JoinHandle<String>) {
    let mut child =
        Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("tracing file I/O") {
            let rest = std::thread::spawn(move || {
                lines.map_while(Result::ok).fold(seen, |acc, l| acc + &l + "\n")
            });
            return (child, rest);
        }
    }
    let status = child.wait();
    panic!("platscope never started tracing ({status:?}): {seen}");
}

#[live]
fn json_interval_counts_a_workload_on_the_chosen_filesystem() {
    let fs = Tmpfs::new("json");
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = fs.0.to_str().unwrap().to_string();
    let (tracer, err) =
        start_tracing(&["--json", "io", "pattern", "2", "1", "--fs", &dir, "--per-file", "3"]);
    // 16 sequential 64 KiB writes by a separate process (dd), then 100 stats.
    let file = format!("{dir}/data");
    let dd = Command::new("dd")
        .args(["if=/dev/zero", &format!("of={file}"), "bs=64k", "count=16", "status=none"])
        .status()
        .unwrap();
    assert!(dd.success());
    let stats = Command::new("sh")
        .arg("-c")
        .arg(format!("i=0; while [ $i -lt 100 ]; do stat {file} > /dev/null; i=$((i+1)); done"))
        .status()
        .unwrap();
    assert!(stats.success());
    let out = tracer.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", err.join().unwrap());
    let text = String::from_utf8(out.stdout).unwrap();
    let interval: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let fss = interval["filesystems"].as_array().unwrap();
    assert_eq!(fss.len(), 1, "--fs shows one filesystem: {interval}");
    let fs_json = &fss[0];
    assert_eq!(fs_json["mount_point"], dir.as_str());
    assert_eq!(fs_json["fstype"], "tmpfs");
    let counts = &fs_json["counts"];
    assert_eq!(counts["ops"][0][1], 16, "sequential writes: {counts}");
    assert_eq!(counts["bytes"][0][1], 16 * 65536, "{counts}");
    assert_eq!(counts["ops"][1][1], 0, "no random writes: {counts}");
    // 100 stat(1) runs: each stats the file by its absolute path at least once.
    assert!(counts["meta"][2].as_u64().unwrap() >= 100, "geta/seta: {counts}");
    let files = interval["files"].as_array().unwrap();
    assert_eq!(files[0]["name"], "data", "{interval}");
    assert_eq!(files[0]["bytes"][0][1], 16 * 65536);
}

#[live]
fn text_has_the_dtrace_header_and_ctrl_c_prints_the_interval_so_far() {
    let fs = Tmpfs::new("text");
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = fs.0.to_str().unwrap().to_string();
    let (tracer, err) = start_tracing(&["io", "pattern", "30", "--fs", &dir]);
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(format!("{dir}/x"), vec![1u8; 8192]).unwrap_or_default();
    let pid = libc::pid_t::try_from(tracer.id()).unwrap();
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let out = tracer.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", err.join().unwrap());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("Sample interval: 0."), "a partial interval: {text}");
    assert!(lines[1].starts_with("End time: "), "{text}");
    let header = lines.iter().position(|l| l.starts_with(&dir)).unwrap();
    assert!(lines[header].contains("rd/s    wr/s   rdKB/s   wrKB/s   acc/look:"), "{text}");
    assert!(lines[header + 1].trim_start().starts_with("sequential"));
    assert!(lines[header + 4].trim_start().starts_with("TOTAL"));
    // The test process wrote it: not excluded (only platscope itself is).
    assert!(!lines[header + 1].contains("sequential       0       0"), "{text}");
    // Nothing stays attached once platscope has exited (the kernel frees a program shortly
    // after its last link closes, so give it a moment).
    let mut listed = String::new();
    for _ in 0..40 {
        let progs = Command::new("bpftool").args(["prog", "show"]).output().unwrap();
        listed = String::from_utf8_lossy(&progs.stdout).into_owned();
        if !listed.contains("iop_sys_enter") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!listed.contains("iop_sys_enter"), "left attached:\n{listed}");
}

#[live]
fn bad_input_is_one_line_and_exit_2() {
    for args in [
        &["io", "pattern", "0"][..],
        &["io", "pattern", "-1"],
        &["io", "pattern", "1", "0"],
        &["io", "pattern", "--pid", "999999999"],
        &["io", "pattern", "--pid", "4194000"],
        &["io", "pattern", "--comm", "a-name-longer-than-15"],
        &["io", "pattern", "--comm", ""],
        &["io", "pattern", "--cgroup", "/no/such/cgroup"],
        &["io", "pattern", "--fs", "/no/such/path"],
        &["io", "pattern", "--tolerance", "lots"],
        &["io", "pattern", "--per-file", "0"],
        &["io", "pattern", "--bogus"],
    ] {
        let out = platscope(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[live]
fn without_privileges_it_says_what_is_missing() {
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN, "io", "pattern", "1", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("needs root") && err.contains("sudo"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

/// Where cgroup2 is mounted here (hybrid hierarchies put it under /sys/fs/cgroup/unified).
fn cgroup2_root() -> String {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let line = mountinfo.lines().find(|l| l.contains(" - cgroup2 ")).expect("cgroup2 mounted");
    line.split(' ').nth(4).unwrap().to_string()
}

#[live]
fn cgroup_filter_counts_only_tasks_inside_it() {
    let fs = Tmpfs::new("cgroup");
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = fs.0.to_str().unwrap().to_string();
    let name = format!("platscope-test-{}", std::process::id());
    let cgroup = format!("{}/{name}", cgroup2_root());
    std::fs::create_dir(&cgroup).unwrap();
    let (tracer, err) =
        start_tracing(&["--json", "io", "pattern", "2", "1", "--fs", &dir, "--cgroup", &name]);
    // Inside: a shell that moves itself into the cgroup, then writes 10 blocks.
    let inside = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo $$ > {cgroup}/cgroup.procs && dd if=/dev/zero of={dir}/in bs=4k count=10 status=none"
        ))
        .status()
        .unwrap();
    // Outside: 7 blocks.
    let outside = Command::new("dd")
        .args(["if=/dev/zero", &format!("of={dir}/out"), "bs=4k", "count=7", "status=none"])
        .status()
        .unwrap();
    let out = tracer.wait_with_output().unwrap();
    let _ = std::fs::remove_dir(&cgroup);
    assert!(inside.success() && outside.success());
    assert!(out.status.success(), "{}", err.join().unwrap());
    let interval: Value = serde_json::from_slice(&out.stdout).unwrap();
    let counts = &interval["filesystems"][0]["counts"];
    assert_eq!(counts["ops"][0][1], 10, "only the 10 writes inside the cgroup: {counts}");
    assert_eq!(counts["bytes"][0][1], 40960, "{counts}");
}
