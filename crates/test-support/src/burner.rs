//! A child that burns a known amount of CPU time: the test binary run again, with
//! [`BURN_ENV`] set, as its test `burner_child` (which every test binary that uses a [`Burner`]
//! defines at its root, so the name is exact, as a call to [`child`]). It measures its own CPU time, so nothing needs installing.
//! And a [`Spinner`]: a shell busy loop pinned to one CPU until dropped, to take that CPU from
//! a measurement.
//!
//! ```no_run
//! // In the test file:
//! #[test_tier::live]
//! fn burner_child() {
//!     test_support::burner::child();
//! }
//!
//! let mut b = test_support::Burner::start(500_000_000);
//! let own_ns = b.burn(); // its own CPU time from `ready` to `done`
//! # let _ = (b.pid(), own_ns);
//! ```

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The variable that makes `burner_child` burn (its value: ns of CPU time).
pub const BURN_ENV: &str = "PLATSCOPE_TEST_BURN";

/// This process's own CPU time (`CLOCK_PROCESS_CPUTIME_ID`), ns.
pub fn own_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a live local the kernel writes one timespec into.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// The child's body, for the test file's `burner_child` test: without [`BURN_ENV`] it returns
/// at once (the test passes as a no-op). With it: prints `ready`, waits for a line, burns that
/// many ns of its own CPU time, prints `done N` (N: its CPU time from `ready` to `done`), then
/// waits for stdin to close.
pub fn child() {
    let Some(burn) = std::env::var(BURN_ENV).ok().and_then(|v| v.parse::<u64>().ok()) else {
        return;
    };
    let mut lines = std::io::stdin().lock().lines();
    let ready = own_cpu_ns();
    println!("ready");
    let _go = lines.next();
    let start = own_cpu_ns();
    let mut x = 0u64;
    while own_cpu_ns() < start + burn {
        for i in 0..1000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
    }
    println!("done {}", own_cpu_ns() - ready);
    for _ in lines {}
}

/// The running child; killed and reaped on drop.
#[derive(Debug)]
pub struct Burner {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Burner {
    /// Starts the child (this test binary's `burner_child`), which will burn `burn_ns` of CPU
    /// time on [`burn`](Burner::burn), and waits until it is ready (idle, blocked on stdin).
    pub fn start(burn_ns: u64) -> Self {
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("the test binary: {e}"));
        let spawned = Command::new(exe)
            .args([
                "burner_child",
                "--exact",
                "--include-ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(BURN_ENV, burn_ns.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn();
        let mut child = spawned.unwrap_or_else(|e| panic!("starting the burner: {e}"));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().map(BufReader::new);
        let Some(stdout) = stdout else { panic!("the burner's stdout is piped") };
        let mut burner = Self { child, stdin, stdout };
        burner.wait_for("ready");
        burner
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The rest of the first line holding `marker`, from the marker on (libtest may print
    /// `test burner_child ... ` before it).
    fn wait_for(&mut self, marker: &str) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            match self.stdout.read_line(&mut line) {
                Ok(n) if n > 0 => {}
                other => panic!("the burner ended early ({other:?})"),
            }
            if let Some(at) = line.find(marker) {
                return line[at..].trim().to_string();
            }
        }
    }

    /// Burns, and returns the child's own CPU time from `ready` to `done`, ns.
    pub fn burn(&mut self) -> u64 {
        let stdin = self.stdin.as_mut().map(|s| writeln!(s, "go"));
        assert!(matches!(stdin, Some(Ok(()))), "telling the burner to go: {stdin:?}");
        let done = self.wait_for("done ");
        let ns = done["done ".len()..].parse();
        ns.unwrap_or_else(|e| panic!("the burner said {done:?}: {e}"))
    }
}

impl Drop for Burner {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A shell spinning on one CPU (`taskset`, from util-linux) until dropped, then killed by its
/// PID and reaped.
#[derive(Debug)]
pub struct Spinner(Child);

impl Spinner {
    /// Starts the busy loop on `cpu`.
    pub fn on_cpu(cpu: u32) -> Self {
        let child = Command::new("taskset")
            .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
            .spawn()
            .unwrap_or_else(|e| panic!("taskset from util-linux: {e}"));
        Spinner(child)
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
