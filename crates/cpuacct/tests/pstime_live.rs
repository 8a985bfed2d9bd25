//! pstime's sampler on this machine: a child that burns a known amount of CPU time (measured by
//! its own `CLOCK_PROCESS_CPUTIME_ID`) between two snapshots is reported at that time ± 2 %,
//! through the process clock and through schedstat; a child that starts inside the interval
//! counts from zero; one that vanishes is not an error.
//!
//! The child is this test binary run again with `PROCMON_TEST_BURN` set (see [`burner_child`]),
//! so the tests need nothing installed.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use cpuacct::pstime::{compare, CpuSource, Lifetime, Options, Sampler};
use measure::time::ClockTicks;
use measure::FsRoot;

const BURN_ENV: &str = "PROCMON_TEST_BURN";
const BURN_NS: u64 = 500_000_000;

fn own_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a live local the kernel writes one timespec into.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Not a test on its own: the burner the other tests start. Prints `ready`, waits for a line,
/// burns `PROCMON_TEST_BURN` ns of its own CPU time, prints `done N` (N: its CPU time from
/// `ready` to `done`), then waits for stdin to close.
#[test]
#[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
fn burner_child() {
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

struct Burner {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Burner {
    fn start() -> Self {
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args([
                "burner_child",
                "--exact",
                "--include-ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(BURN_ENV, BURN_NS.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut burner = Self { child, stdin, stdout };
        burner.wait_for("ready");
        burner
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The rest of the first line holding `marker`, from the marker on (libtest may print
    /// `test burner_child ... ` before it).
    fn wait_for(&mut self, marker: &str) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "burner ended early");
            if let Some(at) = line.find(marker) {
                return line[at..].trim().to_string();
            }
        }
    }

    /// Burns and returns the child's own CPU time from `ready` to `done`.
    fn burn(&mut self) -> u64 {
        writeln!(self.stdin.as_mut().unwrap(), "go").unwrap();
        let done = self.wait_for("done ");
        done["done ".len()..].parse().unwrap()
    }
}

impl Drop for Burner {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn within_2_percent(measured: u64, expected: u64) {
    let diff = measured.abs_diff(expected) as f64 / expected as f64;
    assert!(diff <= 0.02, "measured {measured} ns, expected {expected} ns ({:.2} %)", diff * 100.0);
}

fn exact_time_through(root: FsRoot, source: CpuSource) {
    let mut burner = Burner::start();
    let opts = Options { pids: vec![burner.pid()], threads: true };
    let mut sampler = Sampler::new(root, opts, ClockTicks::system()).unwrap();
    assert_eq!(sampler.basis().source, source);
    let before = sampler.snapshot().unwrap();
    let own = burner.burn();
    let after = sampler.snapshot().unwrap();
    let report = compare(&before, &after, None, sampler.basis(), sampler.options());
    let row = &report.processes[0];
    assert_eq!((row.pid, row.lifetime), (burner.pid(), Lifetime::Whole));
    let cpu = row.cpu_ns.unwrap();
    within_2_percent(cpu, BURN_NS);
    within_2_percent(cpu, own);
    assert_eq!(row.user_ns.unwrap() + row.system_ns.unwrap(), cpu);
}

#[test]
#[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
fn exact_cpu_time_through_the_process_clock() {
    exact_time_through(FsRoot::live(), CpuSource::ProcessClock);
}

#[test]
#[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
fn exact_cpu_time_through_schedstat() {
    // The same files read as a captured tree would be: no process clock.
    exact_time_through(FsRoot::at("/"), CpuSource::Schedstat);
}

#[test]
#[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
fn a_process_started_inside_the_interval_counts_from_zero() {
    let mut sampler =
        Sampler::new(FsRoot::live(), Options::default(), ClockTicks::system()).unwrap();
    let before = sampler.snapshot().unwrap();
    let mut burner = Burner::start();
    let own = burner.burn();
    let after = sampler.snapshot().unwrap();
    let report = compare(&before, &after, None, sampler.basis(), sampler.options());
    let row = report.processes.iter().find(|p| p.pid == burner.pid()).unwrap();
    assert_eq!(row.lifetime, Lifetime::Started);
    // Its whole life: start-up, then the burn.
    assert!(row.cpu_ns.unwrap() >= own, "{row:?} own {own}");
}

#[test]
#[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
fn a_process_vanishing_mid_interval_is_not_an_error() {
    let burner = Burner::start();
    let pid = burner.pid();
    let opts = Options { pids: vec![pid], threads: false };
    let mut sampler = Sampler::new(FsRoot::live(), opts, ClockTicks::system()).unwrap();
    let before = sampler.snapshot().unwrap();
    drop(burner);
    let after = sampler.snapshot().unwrap();
    let report = compare(&before, &after, None, sampler.basis(), sampler.options());
    assert_eq!((report.counts.exited, report.counts.exited_unmeasured), (1, 1));
    assert_eq!(report.processes[0].lifetime, Lifetime::Exited);
}

#[test]
#[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
fn a_process_that_did_not_run_is_carried_over_and_one_that_ran_is_read_again() {
    let mut burner = Burner::start(); // blocked on its stdin: not running
    let opts = Options { pids: vec![burner.pid()], threads: false };
    let mut sampler = Sampler::new(FsRoot::live(), opts, ClockTicks::system()).unwrap();
    let first = sampler.snapshot().unwrap();
    let idle = sampler.snapshot().unwrap();
    assert_eq!((first.carried_over, idle.carried_over), (0, 1));
    let report = compare(&first, &idle, None, sampler.basis(), sampler.options());
    assert_eq!(
        (report.processes[0].lifetime, report.processes[0].cpu_ns),
        (Lifetime::Whole, Some(0))
    );
    burner.burn();
    let busy = sampler.snapshot().unwrap();
    assert_eq!(busy.carried_over, 0);
    let report = compare(&idle, &busy, None, sampler.basis(), sampler.options());
    within_2_percent(report.processes[0].cpu_ns.unwrap(), BURN_NS);
    assert!(report.processes[0].utime_ticks > 0, "stat was read again: {:?}", report.processes[0]);
}
