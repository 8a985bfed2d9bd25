//! What the measurements mean: the cheapest trustworthy clock among those measured
//! ([`choose_clock`]) and the warnings, each with its reason ([`warnings`]).

use super::{CallPath, ChosenClock, Clock, ClockChoice, TimerKind, TimerReport, TimerResult};

/// Clocksources whose counter Linux's vDSO can read in user space. Any other (hpet, acpi_pm,
/// jiffies, …) sends every high-resolution clock call into the kernel.
pub const VDSO_CLOCKSOURCES: &[&str] =
    &["tsc", "kvm-clock", "hyperv_clocksource_tsc_page", "arch_sys_counter", "riscv_clocksource"];

/// The cheapest trustworthy clock among the measured ones: monotonic, high resolution, and —
/// for a raw counter — one the kernel itself trusts (it is the current clocksource, so the
/// kernel's watchdog found it stable and synchronized across CPUs), ticking at a constant rate
/// (invariant TSC; the arm64 counter always is), with a measured frequency that held still.
pub fn choose_clock(r: &TimerReport) -> Option<ClockChoice> {
    let cs = r.clocksource.as_deref();
    let counter = r.counter.as_ref();
    let hz = counter.and_then(|c| c.measured_hz);
    let steady = counter.and_then(|c| c.measured_spread_ppm).is_some_and(|ppm| ppm < 1000.0);
    let mut candidates: Vec<(ChosenClock, &TimerResult, String)> = Vec::new();
    for t in &r.timers {
        match t.timer {
            TimerKind::ClockGettime(c @ (Clock::Monotonic | Clock::MonotonicRaw)) => {
                let why = format!(
                    "{} is monotonic with {} ns resolution",
                    c.name(),
                    t.resolution_ns.map_or("unknown".into(), |r| r.to_string())
                );
                if t.resolution_ns.is_none_or(|res| res <= 1000) {
                    candidates.push((ChosenClock::Posix { id: c }, t, why));
                }
            }
            TimerKind::Rdtsc => {
                let invariant = counter.and_then(|c| c.flags).is_some_and(|f| f.invariant);
                if let (true, Some("tsc"), true, Some(hz)) = (invariant, cs, steady, hz) {
                    candidates.push((
                        ChosenClock::Tsc { hz },
                        t,
                        "the TSC is invariant (constant_tsc, nonstop_tsc), the kernel uses it as its clocksource, and its measured frequency held still".into(),
                    ));
                }
            }
            TimerKind::Cntvct => {
                if let (Some("arch_sys_counter"), true, Some(hz)) = (cs, steady, hz) {
                    candidates.push((
                        ChosenClock::Cntvct { hz },
                        t,
                        "the arm64 generic timer ticks at a constant rate and the kernel uses it as its clocksource".into(),
                    ));
                }
            }
            _ => {}
        }
    }
    let (clock, t, why) =
        candidates.into_iter().min_by(|a, b| a.1.ns.median.total_cmp(&b.1.ns.median))?;
    Some(ClockChoice { clock, name: t.name.clone(), ns_per_call: t.ns.median, reason: why })
}

/// Warnings, each with its reason, from what was measured.
pub fn warnings(r: &TimerReport) -> Vec<String> {
    let mut w = Vec::new();
    let cs = r.clocksource.as_deref();
    if !r.vdso_mapped {
        w.push("no vDSO is mapped into this process (vdso=0 on the kernel command line?): every clock call is a system call".into());
    }
    let slow: Vec<&TimerResult> = r
        .timers
        .iter()
        .filter(|t| t.timer.is_libc_call() && matches!(t.path, CallPath::Kernel | CallPath::Mixed))
        .collect();
    if !slow.is_empty() {
        let names: Vec<String> = slow
            .iter()
            .map(|t| {
                let how = if t.path == CallPath::Mixed { ", some calls" } else { "" };
                format!("{} {:.0} ns{how}", t.name, t.ns.median)
            })
            .collect();
        let reason = match cs {
            Some(c) if !VDSO_CLOCKSOURCES.contains(&c) => format!(
                "the clocksource {c} cannot be read from user space, so the vDSO falls back to the system call{}",
                if r.available_clocksources.iter().any(|a| VDSO_CLOCKSOURCES.contains(&a.as_str())) {
                    format!(
                        "; available clocksources: {} (switch with echo NAME > /sys/devices/system/clocksource/clocksource0/current_clocksource if the kernel trusts it)",
                        r.available_clocksources.join(" ")
                    )
                } else {
                    String::new()
                }
            ),
            Some(c) => format!(
                "the vDSO fell back to the system call although the clocksource {c} is normally readable from user space (for kvm-clock: the host does not mark it stable)"
            ),
            None => "the clocksource is unknown".to_string(),
        };
        let fast = r
            .timer(TimerKind::ClockGettime(Clock::MonotonicCoarse))
            .filter(|t| t.path == CallPath::Vdso)
            .map(|t| {
                format!(" (CLOCK_MONOTONIC_COARSE, served by the vDSO: {:.0} ns)", t.ns.median)
            })
            .unwrap_or_default();
        w.push(format!("timing calls enter the kernel: {}{fast}; {reason}", names.join(", ")));
    }
    if let Some(counter) = &r.counter {
        if let Some(f) = counter.flags {
            if !f.invariant {
                let missing: Vec<&str> =
                    [("constant_tsc", f.constant_tsc), ("nonstop_tsc", f.nonstop_tsc)]
                        .iter()
                        .filter(|(_, has)| !has)
                        .map(|(n, _)| *n)
                        .collect();
                w.push(format!(
                    "the TSC is not invariant (no {}): its rate can follow the core frequency or stop in deep idle states, so rdtsc is not a clock here",
                    missing.join(", no ")
                ));
            }
            if f.tsc && cs.is_some_and(|c| c != "tsc") {
                let offered = r.available_clocksources.iter().any(|a| a == "tsc");
                w.push(format!(
                    "the kernel does not use the TSC as its clocksource (current: {}){}: rdtsc intervals are not trusted here",
                    cs.unwrap_or("unknown"),
                    if offered {
                        ""
                    } else {
                        " and does not offer it; it may have marked the TSC unstable (see dmesg | grep -i tsc)"
                    }
                ));
            }
        }
        if let Some(hz) = counter.measured_hz {
            for rep in &counter.reported {
                let off = (hz - rep.hz).abs() / rep.hz;
                if off > 0.001 {
                    w.push(format!(
                        "the {} frequency measured against CLOCK_MONOTONIC_RAW ({:.3} MHz) differs by {:.2}% from {} ({:.3} MHz)",
                        counter.name,
                        hz / 1e6,
                        off * 100.0,
                        rep.source,
                        rep.hz / 1e6
                    ));
                }
            }
        }
    }
    for t in &r.timers {
        if t.timer.is_instruction() {
            if let Some(mono) = r.timer(TimerKind::ClockGettime(Clock::Monotonic)) {
                // A trapped instruction costs thousands of cycles; with the core clock unknown,
                // 50 ns stands for 100 cycles (at 2 GHz).
                let slow = t.cycles.map_or(t.ns.median > 50.0, |c| c > 100.0);
                if t.ns.median > mono.ns.median && slow {
                    let cycles = t.cycles.map_or(String::new(), |c| format!(" ({c:.0} cycles)"));
                    w.push(format!(
                        "{} costs {:.0} ns{cycles}, more than clock_gettime(CLOCK_MONOTONIC): the hypervisor probably traps it",
                        t.name, t.ns.median
                    ));
                }
            }
        }
    }
    let noisy: Vec<&str> =
        r.timers.iter().filter(|t| t.ns.noisy).map(|t| t.name.as_str()).collect();
    if !noisy.is_empty() {
        w.push(format!(
            "noisy samples (middle half spread over {:.0}% of the median) for {}: something else ran meanwhile; rerun on a quiet machine",
            measure::summary::NOISY_IQR * 100.0,
            noisy.join(", ")
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timers::frequency::tests::CPUINFO_KVM;
    use crate::timers::{parse_tsc_flags, CounterInfo, PathMethod, ReportedHz, TscFlags};
    use measure::summary::{summarize, Summary};

    fn summary(median: f64) -> Summary {
        summarize(&[median]).expect("one sample")
    }

    fn result(kind: TimerKind, ns: f64, path: CallPath) -> TimerResult {
        TimerResult {
            timer: kind,
            name: kind.name(),
            ns: summary(ns),
            cycles: Some(ns * 2.5),
            path,
            probe_kernel_calls: None,
            probe_calls: None,
            resolution_ns: match kind {
                TimerKind::ClockGettime(c) if c.is_coarse() => Some(4_000_000),
                TimerKind::ClockGettime(_) => Some(1),
                _ => None,
            },
        }
    }

    fn report(clocksource: &str, flags: Option<TscFlags>, timers: Vec<TimerResult>) -> TimerReport {
        TimerReport {
            timers,
            skipped: vec![],
            path_method: PathMethod::Seccomp,
            vdso_mapped: true,
            core_ghz: Some(2.5),
            core_clock: None,
            clocksource: Some(clocksource.into()),
            available_clocksources: vec!["tsc".into(), "hpet".into(), "acpi_pm".into()],
            counter: Some(CounterInfo {
                name: "TSC".into(),
                flags,
                measured_hz: Some(2.0e9),
                measured_spread_ppm: Some(3.0),
                reported: vec![ReportedHz { source: "kernel log".into(), hz: 2.0e9 }],
            }),
            choice: None,
            warnings: vec![],
            interrupted: false,
        }
    }

    fn healthy_timers() -> Vec<TimerResult> {
        vec![
            result(TimerKind::ClockGettime(Clock::Monotonic), 29.0, CallPath::Vdso),
            result(TimerKind::ClockGettime(Clock::MonotonicRaw), 30.0, CallPath::Vdso),
            result(TimerKind::ClockGettime(Clock::MonotonicCoarse), 6.0, CallPath::Vdso),
            result(TimerKind::Gettimeofday, 30.0, CallPath::Vdso),
            result(TimerKind::SyscallMonotonic, 180.0, CallPath::Kernel),
            result(TimerKind::Rdtsc, 17.0, CallPath::Instruction),
            result(TimerKind::Rdtscp, 23.0, CallPath::Instruction),
        ]
    }

    fn invariant() -> Option<TscFlags> {
        parse_tsc_flags(CPUINFO_KVM)
    }

    #[test]
    fn healthy_machine_has_no_warnings_and_picks_rdtsc() {
        let r = report("tsc", invariant(), healthy_timers());
        assert_eq!(warnings(&r), Vec::<String>::new());
        let c = choose_clock(&r).expect("a clock");
        assert_eq!(c.clock, ChosenClock::Tsc { hz: 2.0e9 });
        assert_eq!(c.ns_per_call, 17.0);
        assert!((c.ticks_to_ns(2000) - 1000.0).abs() < 1e-9);
    }

    #[test]
    fn hpet_clocksource_warns_and_falls_back_to_monotonic() {
        let mut timers = healthy_timers();
        for t in &mut timers {
            if matches!(t.timer, TimerKind::ClockGettime(c) if !c.is_coarse())
                || t.timer == TimerKind::Gettimeofday
            {
                t.path = CallPath::Kernel;
                t.ns = summary(600.0);
            }
        }
        let r = report("hpet", invariant(), timers);
        let w = warnings(&r);
        println!("{w:#?}");
        assert!(w.iter().any(|m| m.contains("timing calls enter the kernel")
            && m.contains("gettimeofday 600 ns")
            && m.contains("clocksource hpet cannot be read from user space")
            && m.contains("CLOCK_MONOTONIC_COARSE, served by the vDSO: 6 ns")));
        assert!(w
            .iter()
            .any(|m| m.contains("does not use the TSC as its clocksource (current: hpet)")));
        // rdtsc is not trusted when the kernel does not use the TSC.
        let c = choose_clock(&r).expect("a clock");
        assert_eq!(c.clock, ChosenClock::Posix { id: Clock::Monotonic });
    }

    #[test]
    fn a_trapped_rdtsc_warns_with_or_without_a_core_clock() {
        let trapped = |cycles: bool| {
            let mut timers = healthy_timers();
            for t in &mut timers {
                if t.timer == TimerKind::Rdtsc {
                    t.ns = summary(1500.0);
                    t.cycles = Some(1500.0 * 2.5);
                }
                if !cycles {
                    t.cycles = None;
                }
            }
            warnings(&report("tsc", invariant(), timers))
        };
        let w = trapped(true);
        assert!(
            w.iter().any(|m| m.starts_with("rdtsc costs 1500 ns (3750 cycles), more than")),
            "{w:?}"
        );
        // Cycles unknown (the core clock's methods disagreed): the nanoseconds still tell.
        let w = trapped(false);
        assert!(w.iter().any(|m| m.starts_with("rdtsc costs 1500 ns, more than")), "{w:?}");
        // An untrapped rdtsc does not warn either way.
        let mut timers = healthy_timers();
        timers.iter_mut().for_each(|t| t.cycles = None);
        assert_eq!(warnings(&report("tsc", invariant(), timers)), Vec::<String>::new());
    }

    #[test]
    fn non_invariant_tsc_is_not_a_clock() {
        let flags = parse_tsc_flags("flags : tsc rdtscp constant_tsc\n");
        let r = report("tsc", flags, healthy_timers());
        let w = warnings(&r);
        assert!(w.iter().any(|m| m.contains("not invariant (no nonstop_tsc)")), "{w:?}");
        assert_eq!(
            choose_clock(&r).expect("a clock").clock,
            ChosenClock::Posix { id: Clock::Monotonic }
        );
    }

    #[test]
    fn frequency_disagreement_and_noise_warn() {
        let mut r = report("tsc", invariant(), healthy_timers());
        if let Some(c) = r.counter.as_mut() {
            c.measured_hz = Some(2.1e9);
        }
        r.timers[0].ns = summarize(&[20.0, 40.0, 20.0, 40.0]).expect("samples");
        let w = warnings(&r);
        assert!(w.iter().any(|m| m.contains("differs by 5.00% from kernel log")), "{w:?}");
        assert!(
            w.iter().any(|m| m.contains("noisy samples") && m.contains("CLOCK_MONOTONIC)")),
            "{w:?}"
        );
    }

    #[test]
    fn unsteady_frequency_keeps_the_counter_out() {
        let mut r = report("tsc", invariant(), healthy_timers());
        if let Some(c) = r.counter.as_mut() {
            c.measured_spread_ppm = Some(5000.0);
        }
        assert_eq!(
            choose_clock(&r).expect("clock").clock,
            ChosenClock::Posix { id: Clock::Monotonic }
        );
    }
}
