//! What reading the clock costs, as text.

use std::fmt::Write as _;

use crate::timers::{CallPath, PathMethod, TimerKind, TimerReport, TimerResult};

fn path_word(t: &TimerResult) -> String {
    match t.path {
        CallPath::Vdso => "vDSO".into(),
        CallPath::Kernel if t.timer == TimerKind::SyscallMonotonic => "kernel (forced)".into(),
        CallPath::Kernel => "kernel".into(),
        CallPath::Mixed => match (t.probe_kernel_calls, t.probe_calls) {
            (Some(k), Some(n)) => format!("mixed ({k}/{n} kernel)"),
            _ => "mixed".into(),
        },
        CallPath::Instruction => "instruction".into(),
        CallPath::Unknown => "unknown".into(),
    }
}

fn resolution(ns: Option<u64>) -> String {
    match ns {
        None => String::new(),
        Some(ns) if ns >= 1_000_000 && ns % 1_000 == 0 => format!("{} ms", ns as f64 / 1e6),
        Some(ns) if ns >= 1_000 => format!("{} us", ns as f64 / 1e3),
        Some(ns) => format!("{ns} ns"),
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// The whole `platscope timer` report.
pub fn timer_text(r: &TimerReport) -> String {
    let mut out = String::new();
    let samples = r.timers.first().map_or(0, |t| t.ns.samples);
    let cycles = r.core_ghz.map_or("cycles unknown: no core clock measurement".into(), |g| {
        format!("cycles at the measured {g:.2} GHz core clock")
    });
    let _ = writeln!(out, "Clock reads: cost per call, median of {samples} batches; {cycles}");
    let _ = writeln!(
        out,
        "  {:<46} {:>9} {:>8} {:>9}  {:<16} resolution",
        "call", "ns/call", "cycles", "p99 ns", "path"
    );
    for t in &r.timers {
        let cycles = t.cycles.map_or("-".into(), |c| format!("{c:.1}"));
        let mut tail = resolution(t.resolution_ns);
        if t.ns.noisy {
            tail.push_str(if tail.is_empty() { "[noisy]" } else { " [noisy]" });
        }
        let row = format!(
            "  {:<46} {:>9.1} {:>8} {:>9.1}  {:<16} {tail}",
            t.name,
            t.ns.median,
            cycles,
            t.ns.p99,
            path_word(t),
        );
        let _ = writeln!(out, "{}", row.trim_end());
    }
    for s in &r.skipped {
        let _ = writeln!(out, "  {:<46} skipped: {}", s.name, s.reason);
    }
    if r.interrupted {
        let _ = writeln!(out, "  interrupted: the rows above were measured");
    }
    let method = match &r.path_method {
        PathMethod::Seccomp => {
            let calls = r.timers.iter().find_map(|t| t.probe_calls).unwrap_or(0);
            format!(
                "observed: on a probe thread a seccomp filter makes the clock system calls fail, then each call is made {calls} times; \"kernel\" calls failed, \"vDSO\" calls never entered the kernel"
            )
        }
        PathMethod::Cost(why) => why.clone(),
    };
    let _ = writeln!(out, "path: {method}");
    let _ = writeln!(
        out,
        "clocksource: {} (available: {}); vDSO {}",
        r.clocksource.as_deref().unwrap_or("unknown"),
        if r.available_clocksources.is_empty() {
            "unknown".into()
        } else {
            r.available_clocksources.join(" ")
        },
        if r.vdso_mapped { "mapped" } else { "not mapped" }
    );
    if let Some(c) = &r.counter {
        if let Some(f) = c.flags {
            let _ = writeln!(
                out,
                "{} flags: constant_tsc {}, nonstop_tsc {} => invariant {}; tsc_reliable {}, tsc_known_freq {}, rdtscp {}",
                c.name,
                yes(f.constant_tsc),
                yes(f.nonstop_tsc),
                yes(f.invariant),
                yes(f.tsc_reliable),
                yes(f.tsc_known_freq),
                yes(f.rdtscp)
            );
        }
        match (c.measured_hz, c.measured_spread_ppm) {
            (Some(hz), Some(ppm)) => {
                let _ = writeln!(
                    out,
                    "{} frequency: {:.3} MHz measured against CLOCK_MONOTONIC_RAW (rounds within {ppm:.1} ppm)",
                    c.name,
                    hz / 1e6
                );
            }
            _ => {
                let _ = writeln!(out, "{} frequency: not measured", c.name);
            }
        }
        for rep in &c.reported {
            let _ = writeln!(out, "  stated by {}: {:.3} MHz", rep.source, rep.hz / 1e6);
        }
    }
    match &r.choice {
        Some(c) => {
            let _ = writeln!(
                out,
                "cheapest trustworthy clock: {} ({:.1} ns per call); trusted because {}",
                c.name, c.ns_per_call, c.reason
            );
        }
        None => {
            let _ =
                writeln!(out, "cheapest trustworthy clock: none of the measured clocks qualified");
        }
    }
    if !r.warnings.is_empty() {
        let _ = writeln!(out, "warnings:");
        for w in &r.warnings {
            let _ = writeln!(out, "  - {w}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timers::{ChosenClock, Clock, ClockChoice, CounterInfo, ReportedHz, TscFlags};
    use measure::summary::summarize;

    fn t(kind: TimerKind, ns: f64, path: CallPath, res: Option<u64>) -> TimerResult {
        TimerResult {
            timer: kind,
            name: kind.name(),
            ns: summarize(&[ns]).expect("sample"),
            cycles: Some(ns * 2.0),
            path,
            probe_kernel_calls: Some(if path == CallPath::Kernel { 1000 } else { 0 }),
            probe_calls: Some(1000),
            resolution_ns: res,
        }
    }

    #[test]
    fn renders_rows_facts_choice_and_warnings() {
        let r = TimerReport {
            timers: vec![
                t(TimerKind::ClockGettime(Clock::Monotonic), 29.0, CallPath::Vdso, Some(1)),
                t(
                    TimerKind::ClockGettime(Clock::MonotonicCoarse),
                    9.0,
                    CallPath::Vdso,
                    Some(4_000_000),
                ),
                t(TimerKind::SyscallMonotonic, 350.0, CallPath::Kernel, None),
                t(TimerKind::Rdtsc, 11.5, CallPath::Instruction, None),
            ],
            skipped: vec![],
            path_method: PathMethod::Seccomp,
            vdso_mapped: true,
            core_ghz: Some(2.0),
            clocksource: Some("tsc".into()),
            available_clocksources: vec!["tsc".into(), "kvm-clock".into()],
            counter: Some(CounterInfo {
                name: "TSC".into(),
                flags: Some(TscFlags {
                    tsc: true,
                    constant_tsc: true,
                    nonstop_tsc: true,
                    invariant: true,
                    ..TscFlags::default()
                }),
                measured_hz: Some(2_445_425_884.0),
                measured_spread_ppm: Some(0.4),
                reported: vec![ReportedHz { source: "kernel log".into(), hz: 2_445_426_000.0 }],
            }),
            choice: Some(ClockChoice {
                clock: ChosenClock::Tsc { hz: 2.445e9 },
                name: "rdtsc".into(),
                ns_per_call: 11.5,
                reason: "because".into(),
            }),
            warnings: vec!["something".into()],
            interrupted: false,
        };
        let text = timer_text(&r);
        println!("{text}");
        let line = |start: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(start))
                .unwrap_or_else(|| panic!("{start}: {text}"))
        };
        let mono: Vec<&str> = line("clock_gettime(CLOCK_MONOTONIC) ").split_whitespace().collect();
        assert_eq!(
            mono,
            ["clock_gettime(CLOCK_MONOTONIC)", "29.0", "58.0", "29.0", "vDSO", "1", "ns"]
        );
        assert!(line("clock_gettime(CLOCK_MONOTONIC_COARSE)").ends_with("vDSO             4 ms"));
        assert!(line("syscall(").contains("kernel (forced)"));
        assert!(line("rdtsc").contains("instruction"));
        assert!(text.starts_with("Clock reads: cost per call, median of 1 batches; cycles at the measured 2.00 GHz core clock\n"));
        assert!(text.contains("clocksource: tsc (available: tsc kvm-clock); vDSO mapped\n"));
        assert!(text.contains("TSC flags: constant_tsc yes, nonstop_tsc yes => invariant yes"));
        assert!(text.contains("TSC frequency: 2445.426 MHz measured against CLOCK_MONOTONIC_RAW"));
        assert!(text.contains("  stated by kernel log: 2445.426 MHz\n"));
        assert!(text.contains(
            "cheapest trustworthy clock: rdtsc (11.5 ns per call); trusted because because\n"
        ));
        assert!(text.ends_with("warnings:\n  - something\n"));
        assert!(text.contains("made 1000 times"));
    }
}
