//! pstime's sampler on this machine: a child that burns a known amount of CPU time (measured by
//! its own `CLOCK_PROCESS_CPUTIME_ID`) between two snapshots is reported at that time ± 2 %,
//! through the process clock and through schedstat; a child that starts inside the interval
//! counts from zero; one that vanishes is not an error.
//!
//! The child is this test binary run again with `PLATSCOPE_TEST_BURN` set (see `burner_child`
//! at the binary's root), so the tests need nothing installed.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use measure::time::ClockTicks;
use measure::FsRoot;
use pstime::{compare, CpuSource, Lifetime, Options, Sampler};
use test_support::Burner;
use test_tier::live;

const BURN_NS: u64 = 500_000_000;

fn within_2_percent(measured: u64, expected: u64) {
    let diff = measured.abs_diff(expected) as f64 / expected as f64;
    assert!(diff <= 0.02, "measured {measured} ns, expected {expected} ns ({:.2} %)", diff * 100.0);
}

fn exact_time_through(root: FsRoot, source: CpuSource) {
    let mut burner = Burner::start(BURN_NS);
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

#[live]
fn exact_cpu_time_through_the_process_clock() {
    exact_time_through(FsRoot::live(), CpuSource::ProcessClock);
}

#[live]
fn exact_cpu_time_through_schedstat() {
    // The same files read as a captured tree would be: no process clock.
    exact_time_through(FsRoot::at("/"), CpuSource::Schedstat);
}

#[live]
fn a_process_started_inside_the_interval_counts_from_zero() {
    let mut sampler =
        Sampler::new(FsRoot::live(), Options::default(), ClockTicks::system()).unwrap();
    let before = sampler.snapshot().unwrap();
    let mut burner = Burner::start(BURN_NS);
    let own = burner.burn();
    let after = sampler.snapshot().unwrap();
    let report = compare(&before, &after, None, sampler.basis(), sampler.options());
    let row = report.processes.iter().find(|p| p.pid == burner.pid()).unwrap();
    assert_eq!(row.lifetime, Lifetime::Started);
    // Its whole life: start-up, then the burn.
    assert!(row.cpu_ns.unwrap() >= own, "{row:?} own {own}");
}

#[live]
fn a_process_vanishing_mid_interval_is_not_an_error() {
    let burner = Burner::start(BURN_NS);
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

#[live]
fn a_process_that_did_not_run_is_carried_over_and_one_that_ran_is_read_again() {
    let mut burner = Burner::start(BURN_NS); // blocked on its stdin: not running
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
