//! The hardware counter's frequency (TSC on x86-64, CNTVCT_EL0 on arm64): measured against
//! `CLOCK_MONOTONIC_RAW`, beside what the CPU, the hypervisor, the architecture and the kernel
//! log state; the TSC flags of `/proc/cpuinfo`.

use serde::{Deserialize, Serialize};

use super::calls::{clock_ns, read_cntvct, read_tsc, tsc_allowed};
use super::TimerOptions;
use measure::summary::summarize;

/// The TSC feature flags in `/proc/cpuinfo`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TscFlags {
    pub tsc: bool,
    /// Ticks at a constant rate whatever the core frequency.
    pub constant_tsc: bool,
    /// Keeps ticking in deep idle states.
    pub nonstop_tsc: bool,
    /// The hypervisor or platform vouches for it; the kernel skips its watchdog.
    pub tsc_reliable: bool,
    /// The frequency came from CPUID or the hypervisor, not a calibration.
    pub tsc_known_freq: bool,
    pub rdtscp: bool,
    /// `constant_tsc` and `nonstop_tsc`: the TSC is a clock.
    pub invariant: bool,
}

/// Reads the TSC flags from the first `flags` line of `/proc/cpuinfo` text; `None` when
/// there is none (not x86).
pub fn parse_tsc_flags(cpuinfo: &str) -> Option<TscFlags> {
    let line = cpuinfo.lines().find(|l| l.split(':').next().map(str::trim) == Some("flags"))?;
    let flags: Vec<&str> = line.split_once(':')?.1.split_whitespace().collect();
    let has = |f: &str| flags.contains(&f);
    let (constant_tsc, nonstop_tsc) = (has("constant_tsc"), has("nonstop_tsc"));
    Some(TscFlags {
        tsc: has("tsc"),
        constant_tsc,
        nonstop_tsc,
        tsc_reliable: has("tsc_reliable"),
        tsc_known_freq: has("tsc_known_freq"),
        rdtscp: has("rdtscp"),
        invariant: constant_tsc && nonstop_tsc,
    })
}

/// A counter frequency somebody other than us states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportedHz {
    pub source: String,
    pub hz: f64,
}

/// The hardware counter (TSC, or the arm64 virtual counter) and its frequency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterInfo {
    /// `TSC` or `CNTVCT_EL0`.
    pub name: String,
    /// x86 only.
    pub flags: Option<TscFlags>,
    /// Ticks per second of `CLOCK_MONOTONIC_RAW`: the median of several measurements.
    pub measured_hz: Option<f64>,
    /// Largest deviation of one measurement from that median, in parts per million.
    pub measured_spread_ppm: Option<f64>,
    /// Frequencies stated by the CPU, hypervisor, architecture register or kernel log.
    pub reported: Vec<ReportedHz>,
}

#[cfg(target_arch = "aarch64")]
fn cntfrq_hz() -> Option<f64> {
    let v: u64;
    // SAFETY: reads the counter-frequency register, readable at EL0; no memory is touched.
    unsafe { std::arch::asm!("mrs {v}, cntfrq_el0", v = out(reg) v, options(nomem, nostack)) };
    (v > 0).then_some(v as f64)
}

#[cfg(not(target_arch = "aarch64"))]
fn cntfrq_hz() -> Option<f64> {
    None
}

/// (nanoseconds of CLOCK_MONOTONIC_RAW, counter) read as close together as possible: the pair
/// with the shortest raw-clock gap around the counter read, of 16 tries.
fn paired_read(counter: fn() -> u64) -> Option<(f64, u64)> {
    let mut best: Option<(u64, f64, u64)> = None;
    for _ in 0..16 {
        let t0 = clock_ns(libc::CLOCK_MONOTONIC_RAW)?;
        let c = counter();
        let t1 = clock_ns(libc::CLOCK_MONOTONIC_RAW)?;
        let gap = t1.saturating_sub(t0);
        if best.is_none_or(|(g, _, _)| gap < g) {
            best = Some((gap, (t0 as f64 + t1 as f64) / 2.0, c));
        }
    }
    best.map(|(_, t, c)| (t, c))
}

/// Counter ticks per second of CLOCK_MONOTONIC_RAW: (median, largest deviation in ppm).
fn measure_hz(counter: fn() -> u64, opts: &TimerOptions) -> Option<(f64, f64)> {
    let mut rates = Vec::new();
    for _ in 0..opts.frequency_rounds.max(1) {
        let (t0, c0) = paired_read(counter)?;
        std::thread::sleep(opts.frequency_span);
        let (t1, c1) = paired_read(counter)?;
        if t1 > t0 && c1 > c0 {
            rates.push((c1 - c0) as f64 / (t1 - t0) * 1e9);
        }
    }
    let s = summarize(&rates)?;
    let spread = rates.iter().map(|r| (r - s.median).abs() / s.median * 1e6).fold(0.0, f64::max);
    Some((s.median, spread))
}

/// Frequencies the CPU and the hypervisor state through CPUID (none off x86-64).
fn cpuid_frequencies() -> Vec<ReportedHz> {
    use topo::cpuid::query;
    let mut out = Vec::new();
    if query(0, 0).is_some_and(|l| l.eax >= 0x15) {
        // Leaf 0x15: TSC = crystal (ECX, Hz) × EBX / EAX. ECX is 0 on CPUs that do not say.
        if let Some(l) = query(0x15, 0).filter(|l| l.eax != 0 && l.ebx != 0 && l.ecx != 0) {
            out.push(ReportedHz {
                source: "CPUID leaf 0x15 (crystal × ratio)".into(),
                hz: l.ecx as f64 * l.ebx as f64 / l.eax as f64,
            });
        }
    }
    if query(1, 0).is_some_and(|l| l.ecx & (1 << 31) != 0)
        && query(0x4000_0000, 0).is_some_and(|l| l.eax >= 0x4000_0010)
    {
        // Hypervisor timing leaf (VMware convention, also KVM/QEMU): EAX = TSC kHz.
        if let Some(khz) = query(0x4000_0010, 0).map(|l| l.eax).filter(|&khz| khz != 0) {
            out.push(ReportedHz {
                source: "hypervisor CPUID leaf 0x40000010".into(),
                hz: khz as f64 * 1e3,
            });
        }
    }
    out
}

/// The kernel's TSC frequency from its log lines (one message per line, as `dmesg` prints or
/// `/dev/kmsg` records after the `;`): the refined calibration if present, else the detected
/// TSC frequency, else the detected processor frequency, which the kernel prints alone only
/// when it equals the TSC's.
pub fn parse_kernel_tsc(messages: &str) -> Option<ReportedHz> {
    let mhz_after = |line: &str, key: &str| -> Option<f64> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split_whitespace().next()?.parse().ok()
    };
    let lines: Vec<&str> = messages.lines().collect();
    let find = |key: &str, tail: &str| {
        lines.iter().rev().find_map(|l| {
            if l.contains(key) && l.contains(tail) {
                mhz_after(l, key).map(|mhz| (l.trim(), mhz))
            } else {
                None
            }
        })
    };
    let refined = find("tsc: Refined TSC clocksource calibration:", "MHz");
    let tsc = find("tsc: Detected", "MHz TSC");
    let processor = find("tsc: Detected", "MHz processor");
    let (line, mhz) = match (refined, tsc, processor) {
        (Some(r), _, _) => r,
        (None, Some(t), _) => t,
        (None, None, Some(p)) if lines.iter().all(|l| !l.contains("MHz TSC")) => p,
        _ => return None,
    };
    let text = line.split_once(';').map_or(line, |(_, m)| m);
    Some(ReportedHz { source: format!("kernel log: \"{}\"", text.trim()), hz: mhz * 1e6 })
}

/// The kernel log's messages, read without blocking from `/dev/kmsg` (root, or
/// `kernel.dmesg_restrict=0`); `None` when unreadable.
fn kernel_messages() -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/kmsg")
        .ok()?;
    let mut out = String::new();
    let mut buf = vec![0u8; 8192];
    for _ in 0..200_000 {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let record = String::from_utf8_lossy(&buf[..n]);
                if let Some((_, msg)) = record.split_once(';') {
                    out.push_str(msg.lines().next().unwrap_or(""));
                    out.push('\n');
                }
            }
            // EPIPE: a record was overwritten while we read; the next read continues.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => {}
            Err(_) => break, // EAGAIN: the end of the buffer
        }
    }
    Some(out)
}

pub(super) fn counter_info(opts: &TimerOptions) -> Option<CounterInfo> {
    if cfg!(target_arch = "x86_64") {
        let flags = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| parse_tsc_flags(&t));
        let measured = if tsc_allowed() { measure_hz(read_tsc, opts) } else { None };
        let mut reported = cpuid_frequencies();
        reported.extend(kernel_messages().and_then(|m| parse_kernel_tsc(&m)));
        Some(CounterInfo {
            name: "TSC".into(),
            flags,
            measured_hz: measured.map(|m| m.0),
            measured_spread_ppm: measured.map(|m| m.1),
            reported,
        })
    } else if cfg!(target_arch = "aarch64") {
        let measured = measure_hz(read_cntvct, opts);
        Some(CounterInfo {
            name: "CNTVCT_EL0".into(),
            flags: None,
            measured_hz: measured.map(|m| m.0),
            measured_spread_ppm: measured.map(|m| m.1),
            reported: cntfrq_hz()
                .map(|hz| ReportedHz { source: "CNTFRQ_EL0".into(), hz })
                .into_iter()
                .collect(),
        })
    } else {
        None
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    // The flags line of /proc/cpuinfo on the development VM (AMD EPYC under KVM, kernel 6.18),
    // trimmed to the TSC-related and neighbouring flags.
    pub(in crate::timers) const CPUINFO_KVM: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\n\
        flags\t\t: fpu vme de pse tsc msr pae rdtscp lm constant_tsc rep_good nopl nonstop_tsc \
        cpuid extd_apicid tsc_known_freq pni tsc_deadline_timer tsc_adjust\n\
        bugs\t\t: sysret_ss_attrs\n";

    #[test]
    fn reads_tsc_flags() {
        let f = parse_tsc_flags(CPUINFO_KVM).expect("flags line");
        assert!(f.tsc && f.constant_tsc && f.nonstop_tsc && f.invariant && f.rdtscp);
        assert!(f.tsc_known_freq && !f.tsc_reliable);
        let f = parse_tsc_flags("flags : tsc constant_tsc\n").expect("flags");
        assert!(f.constant_tsc && !f.nonstop_tsc && !f.invariant);
        // arm64 /proc/cpuinfo has "Features", not "flags".
        assert_eq!(parse_tsc_flags("Features\t: fp asimd evtstrm\n"), None);
    }

    #[test]
    fn kernel_log_frequency() {
        // dmesg of the development VM (kernel 6.18): only the processor line, so TSC == CPU.
        let vm = "[    0.000080] tsc: Detected 2445.426 MHz processor\n[0.1] TSC deadline timer available\n";
        let r = parse_kernel_tsc(vm).expect("detected");
        assert!((r.hz - 2_445_426_000.0).abs() < 1.0, "{r:?}");
        assert!(r.source.contains("Detected 2445.426 MHz processor"), "{}", r.source);
        // Bare metal: a refined calibration wins over the boot-time guess.
        let metal = "tsc: Detected 2100.000 MHz processor\n\
                     tsc: Refined TSC clocksource calibration: 2099.999 MHz\n";
        assert!((parse_kernel_tsc(metal).expect("refined").hz - 2_099_999_000.0).abs() < 1.0);
        // CPU and TSC differ: the processor line is not the TSC's frequency.
        let split = "tsc: Detected 3000.000 MHz processor\ntsc: Detected 2500.000 MHz TSC\n";
        assert!((parse_kernel_tsc(split).expect("tsc line").hz - 2.5e9).abs() < 1.0);
        assert_eq!(parse_kernel_tsc("clocksource: Switched to clocksource tsc\n"), None);
    }
}
