//! What reading the clock costs, as text.

use std::fmt::Write as _;

use crate::timers::{CallPath, PathMethod, TimerKind, TimerReport, TimerResult};
use measure::core_clock::CoreClock;

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

/// Frequencies the platform states for the core, or why there are none.
fn stated(c: &CoreClock) -> String {
    let mut parts = Vec::new();
    if c.cpuid_base_mhz.is_some() || c.cpuid_max_mhz.is_some() {
        let mhz = |m: Option<f64>| m.map_or("-".to_string(), |m| format!("{m:.0} MHz"));
        parts.push(format!(
            "CPUID leaf 0x16 base {}, max {}",
            mhz(c.cpuid_base_mhz),
            mhz(c.cpuid_max_mhz)
        ));
    }
    if let Some(m) = c.cpufreq_max_mhz {
        let driver = c.cpufreq_driver.as_deref().unwrap_or("unknown driver");
        parts.push(format!("cpufreq ({driver}) max {m:.0} MHz"));
    }
    if let Some(m) = c.cpufreq_cur_mhz {
        let cpu = c.cpufreq_cur_cpu.map_or("?".to_string(), |n| n.to_string());
        let gap = c
            .cur_freq_gap()
            .map_or(String::new(), |g| format!(", the measured clock {:+.0}% from it", g * 100.0));
        parts.push(format!(
            "cpufreq scaling_cur_freq {m:.0} MHz on CPU {cpu}{gap} (the kernel's estimate, not a bound)"
        ));
    }
    if parts.is_empty() {
        format!("none: {}", c.notes.join("; "))
    } else {
        parts.join("; ")
    }
}

/// The whole `platscope timer` report.
pub fn timer_text(r: &TimerReport) -> String {
    let mut out = String::new();
    let samples = r.timers.first().map_or(0, |t| t.ns.samples);
    let cycles = match (r.core_ghz, &r.core_clock) {
        (Some(g), _) => format!("cycles at the measured {g:.2} GHz core clock"),
        (None, Some(c)) => {
            format!("cycles unknown: {}", c.why_unknown.as_deref().unwrap_or("no core clock"))
        }
        (None, None) => "cycles unknown: no core clock measurement".into(),
    };
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
    if let Some(c) = &r.core_clock {
        // When unknown, the first line already gave the reason.
        let line = if c.ghz.is_some() { c.summary() } else { format!("unknown ({})", c.methods()) };
        let _ = writeln!(out, "core clock: {line}");
        let _ = writeln!(out, "  stated: {}", stated(c));
    }
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
    use measure::core_clock::{Stated, MUL_LATENCY};
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

    fn clock(add: f64, mul: f64) -> CoreClock {
        CoreClock::new(
            Some(add),
            Some(mul),
            Stated {
                notes: vec!["no CPUID leaf 0x16".into(), "no cpufreq".into()],
                ..Stated::default()
            },
        )
    }

    fn report() -> TimerReport {
        TimerReport {
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
            core_clock: Some(clock(2.0, 2.0)),
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
        }
    }

    #[test]
    fn renders_rows_facts_choice_and_warnings() {
        let text = timer_text(&report());
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
        let core = format!(
            "core clock: 2.00 GHz (add chain 2.00 GHz, multiply chain 2.00 GHz at {MUL_LATENCY} cycles per multiply, within 3%)\n  stated: none: no CPUID leaf 0x16; no cpufreq\n"
        );
        assert!(text.contains(&core), "{text}");
        assert!(text.contains("TSC flags: constant_tsc yes, nonstop_tsc yes => invariant yes"));
        assert!(text.contains("TSC frequency: 2445.426 MHz measured against CLOCK_MONOTONIC_RAW"));
        assert!(text.contains("  stated by kernel log: 2445.426 MHz\n"));
        assert!(text.contains(
            "cheapest trustworthy clock: rdtsc (11.5 ns per call); trusted because because\n"
        ));
        assert!(text.ends_with("warnings:\n  - something\n"));
        assert!(text.contains("made 1000 times"));
    }

    #[test]
    fn disagreeing_methods_say_cycles_unknown_and_why() {
        let mut r = report();
        let c = clock(22.3, 4.19);
        r.core_ghz = c.ghz;
        r.core_clock = Some(c);
        for t in &mut r.timers {
            t.cycles = None;
        }
        let text = timer_text(&r);
        println!("{text}");
        let first = text.lines().next().expect("a line");
        assert!(
            first.starts_with("Clock reads: cost per call, median of 1 batches; cycles unknown: the add chain says 22.30 GHz and the multiply chain 4.19 GHz"),
            "{first}"
        );
        let mono = text.lines().find(|l| l.contains("(CLOCK_MONOTONIC) ")).expect("row");
        assert_eq!(mono.split_whitespace().nth(2), Some("-"), "{mono}");
        let core = format!(
            "\ncore clock: unknown (add chain 22.30 GHz, multiply chain 4.19 GHz at {MUL_LATENCY} cycles per multiply)\n"
        );
        assert!(text.contains(&core), "{text}");
        // A report stored before the core clock's details were kept.
        let mut json = serde_json::to_value(&r).expect("json");
        json.as_object_mut().expect("object").remove("core_clock");
        r = serde_json::from_value(json).expect("reads back");
        assert_eq!(r.core_clock, None);
        assert!(timer_text(&r)
            .lines()
            .next()
            .expect("a line")
            .ends_with("cycles unknown: no core clock measurement"));
    }

    #[test]
    fn stated_frequencies_are_shown() {
        let c = CoreClock::new(
            Some(4.19),
            Some(4.18),
            Stated {
                cpuid_base_mhz: Some(2100.0),
                cpuid_max_mhz: Some(4200.0),
                cpufreq_max_mhz: Some(4200.0),
                cpufreq_driver: Some("intel_pstate".into()),
                cpufreq_cur_mhz: Some(3990.0),
                cpufreq_cur_cpu: Some(2),
                notes: vec![],
            },
        );
        assert_eq!(
            stated(&c),
            "CPUID leaf 0x16 base 2100 MHz, max 4200 MHz; cpufreq (intel_pstate) max 4200 MHz; \
             cpufreq scaling_cur_freq 3990 MHz on CPU 2, the measured clock +5% from it (the \
             kernel's estimate, not a bound)"
        );
    }
}
