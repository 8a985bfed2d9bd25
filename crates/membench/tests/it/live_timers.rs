//! Clock costs and paths on this machine. Orderings and physical bounds only: no timing
//! thresholds (these machines are shared and noisy).

use membench::timers::{measure_all, CallPath, Clock, TimerKind, TimerOptions};
use test_tier::live;

#[live]
fn every_timer_measured_and_monotonic_beats_the_raw_syscall() {
    let r = measure_all(&TimerOptions::default());
    for t in &r.timers {
        println!(
            "{:48} {:8.1} ns {:8.1} cycles  {:?} ({:?}/{:?} probe calls in the kernel)",
            t.name,
            t.ns.median,
            t.cycles.unwrap_or(f64::NAN),
            t.path,
            t.probe_kernel_calls,
            t.probe_calls
        );
    }
    println!("skipped: {:?}\nmethod: {:?}\ncounter: {:#?}", r.skipped, r.path_method, r.counter);
    println!("choice: {:?}\nwarnings: {:#?}", r.choice, r.warnings);
    let clock = r.core_clock.as_ref().expect("the core clock's details");
    println!("core clock: {}", clock.summary());
    assert_eq!(r.core_ghz, clock.ghz, "cycles use the judged clock");
    assert!(clock.add_ghz.is_some() && clock.mul_ghz.is_some(), "{clock:?}");
    assert!(!r.interrupted);
    assert!(r.timers.len() >= 9, "{:?}", r.skipped);
    for t in &r.timers {
        assert!(t.ns.median > 0.0 && t.ns.min > 0.0, "{}: {:?}", t.name, t.ns);
        assert_eq!(t.cycles.is_some(), r.core_ghz.is_some(), "{}", t.name);
        if let Some(c) = t.cycles {
            assert!(c > 0.0, "{}", t.name);
        }
    }
    let mono = r.timer(TimerKind::ClockGettime(Clock::Monotonic)).expect("monotonic");
    let sys = r.timer(TimerKind::SyscallMonotonic).expect("raw syscall");
    assert!(mono.ns.median <= sys.ns.median, "{} > {}", mono.ns.median, sys.ns.median);
    assert_eq!(sys.path, CallPath::Kernel, "the raw system call is the probe's control");
    if r.clocksource.as_deref() == Some("tsc") {
        assert_eq!(mono.path, CallPath::Vdso, "clocksource tsc: the vDSO answers");
    }
    let coarse = r.timer(TimerKind::ClockGettime(Clock::MonotonicCoarse)).expect("coarse");
    assert!(coarse.resolution_ns.unwrap_or(0) >= 1_000_000, "coarse = one tick");
    if let Some(hz) = r.counter.as_ref().and_then(|c| c.measured_hz) {
        assert!((1e7..1e10).contains(&hz), "counter at {hz} Hz");
    }
    assert!(r.choice.is_some(), "some clock qualifies on every Linux machine");
}
