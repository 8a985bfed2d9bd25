//! The timers: which calls and instructions are measured ([`TimerKind`], [`Clock`]), how each
//! is read, whether it can be here, and its cost per call over batches.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::TimerOptions;

/// How a timer is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "clock")]
pub enum TimerKind {
    /// `clock_gettime(2)` through the C library (vDSO when it can).
    ClockGettime(Clock),
    /// `gettimeofday(2)` through the C library.
    Gettimeofday,
    /// `time(2)` through the C library.
    Time,
    /// `syscall(SYS_clock_gettime, CLOCK_MONOTONIC)`: always the kernel; the baseline.
    SyscallMonotonic,
    /// The x86 `rdtsc` instruction.
    Rdtsc,
    /// The x86 `rdtscp` instruction (waits for earlier instructions; also returns the CPU).
    Rdtscp,
    /// The arm64 virtual counter, `mrs cntvct_el0`.
    Cntvct,
}

/// The POSIX clocks measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Clock {
    Monotonic,
    MonotonicRaw,
    Realtime,
    Boottime,
    MonotonicCoarse,
    RealtimeCoarse,
}

impl Clock {
    pub fn id(self) -> libc::clockid_t {
        match self {
            Clock::Monotonic => libc::CLOCK_MONOTONIC,
            Clock::MonotonicRaw => libc::CLOCK_MONOTONIC_RAW,
            Clock::Realtime => libc::CLOCK_REALTIME,
            Clock::Boottime => libc::CLOCK_BOOTTIME,
            Clock::MonotonicCoarse => libc::CLOCK_MONOTONIC_COARSE,
            Clock::RealtimeCoarse => libc::CLOCK_REALTIME_COARSE,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Clock::Monotonic => "CLOCK_MONOTONIC",
            Clock::MonotonicRaw => "CLOCK_MONOTONIC_RAW",
            Clock::Realtime => "CLOCK_REALTIME",
            Clock::Boottime => "CLOCK_BOOTTIME",
            Clock::MonotonicCoarse => "CLOCK_MONOTONIC_COARSE",
            Clock::RealtimeCoarse => "CLOCK_REALTIME_COARSE",
        }
    }

    /// Coarse clocks advance once per kernel tick: cheap, but milliseconds apart.
    pub fn is_coarse(self) -> bool {
        matches!(self, Clock::MonotonicCoarse | Clock::RealtimeCoarse)
    }
}

impl TimerKind {
    /// The call as a C programmer would write it.
    pub fn name(self) -> String {
        match self {
            TimerKind::ClockGettime(c) => format!("clock_gettime({})", c.name()),
            TimerKind::Gettimeofday => "gettimeofday".into(),
            TimerKind::Time => "time".into(),
            TimerKind::SyscallMonotonic => "syscall(SYS_clock_gettime, CLOCK_MONOTONIC)".into(),
            TimerKind::Rdtsc => "rdtsc".into(),
            TimerKind::Rdtscp => "rdtscp".into(),
            TimerKind::Cntvct => "cntvct_el0".into(),
        }
    }

    /// Whether the call is a C library call that may or may not reach the kernel.
    pub fn is_libc_call(self) -> bool {
        matches!(self, TimerKind::ClockGettime(_) | TimerKind::Gettimeofday | TimerKind::Time)
    }

    /// A clock read from a CPU register by one instruction.
    pub fn is_instruction(self) -> bool {
        matches!(self, TimerKind::Rdtsc | TimerKind::Rdtscp | TimerKind::Cntvct)
    }
}

/// Every timer, in report order. Instructions of the other architecture are left out.
pub fn all_timers() -> Vec<TimerKind> {
    let mut t: Vec<TimerKind> = [
        Clock::Monotonic,
        Clock::MonotonicRaw,
        Clock::Realtime,
        Clock::Boottime,
        Clock::MonotonicCoarse,
        Clock::RealtimeCoarse,
    ]
    .into_iter()
    .map(TimerKind::ClockGettime)
    .collect();
    t.extend([TimerKind::Gettimeofday, TimerKind::Time, TimerKind::SyscallMonotonic]);
    if cfg!(target_arch = "x86_64") {
        t.extend([TimerKind::Rdtsc, TimerKind::Rdtscp]);
    }
    if cfg!(target_arch = "aarch64") {
        t.push(TimerKind::Cntvct);
    }
    t
}

pub(super) fn clock_ns(id: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is valid for writes.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(target_arch = "x86_64")]
#[inline]
pub(super) fn read_tsc() -> u64 {
    // SAFETY: rdtsc exists on every x86-64 CPU; callers check first that the kernel has not
    // disabled it for this process (PR_SET_TSC), which would raise SIGSEGV.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
pub(super) fn read_tsc() -> u64 {
    0
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn read_tscp() -> u64 {
    let mut aux = 0u32;
    // SAFETY: callers check CPUID for rdtscp first; `aux` is valid for writes.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::__rdtscp(&mut aux)
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn read_tscp() -> u64 {
    0
}

#[cfg(target_arch = "aarch64")]
#[inline]
pub(super) fn read_cntvct() -> u64 {
    let v: u64;
    // SAFETY: reads the virtual counter register, which Linux lets EL0 read (or traps and
    // emulates); no memory is touched.
    unsafe { std::arch::asm!("mrs {v}, cntvct_el0", v = out(reg) v, options(nomem, nostack)) };
    v
}

#[cfg(not(target_arch = "aarch64"))]
#[inline]
pub(super) fn read_cntvct() -> u64 {
    0
}

/// Whether this process may execute rdtsc (the kernel can make it fault: `PR_SET_TSC`).
pub(super) fn tsc_allowed() -> bool {
    let mut state: libc::c_int = 0;
    // SAFETY: PR_GET_TSC writes one int through the pointer, which is valid.
    let rc = unsafe { libc::prctl(libc::PR_GET_TSC, &mut state as *mut libc::c_int, 0, 0, 0) };
    rc != 0 || state != libc::PR_TSC_SIGSEGV
}

/// Whether CPUID says the CPU has rdtscp (never off x86-64).
fn cpu_has_rdtscp() -> bool {
    use topo::cpuid::query;
    // Leaf 0x8000_0000 gives the highest extended leaf; rdtscp is bit 27 of 0x8000_0001 EDX.
    query(0x8000_0000, 0).is_some_and(|l| l.eax >= 0x8000_0001)
        && query(0x8000_0001, 0).is_some_and(|l| l.edx & (1 << 27) != 0)
}

/// Why `kind` cannot be measured here, if it cannot.
pub(super) fn unavailable(kind: TimerKind) -> Option<String> {
    match kind {
        TimerKind::Rdtsc | TimerKind::Rdtscp if !tsc_allowed() => {
            Some("the kernel makes rdtsc fault for this process (prctl PR_SET_TSC)".into())
        }
        TimerKind::Rdtscp if !cpu_has_rdtscp() => Some("the CPU has no rdtscp (CPUID)".into()),
        TimerKind::ClockGettime(c) if clock_ns(c.id()).is_none() => {
            Some(format!("the kernel does not support {}", c.name()))
        }
        _ => None,
    }
}

/// Runs `f` `n` times; returns a value that depends on every call.
#[inline(never)]
fn run_batch(kind: TimerKind, n: u64) -> u64 {
    let mut acc = 0u64;
    match kind {
        TimerKind::ClockGettime(c) => {
            let id = c.id();
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            for _ in 0..n {
                // SAFETY: `ts` is valid for writes.
                unsafe { libc::clock_gettime(id, &mut ts) };
                acc = acc.wrapping_add(ts.tv_nsec as u64);
            }
        }
        TimerKind::Gettimeofday => {
            let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
            for _ in 0..n {
                // SAFETY: `tv` is valid for writes; no timezone is asked for.
                unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
                acc = acc.wrapping_add(tv.tv_usec as u64);
            }
        }
        TimerKind::Time => {
            for _ in 0..n {
                // SAFETY: a null pointer asks only for the return value.
                acc = acc.wrapping_add(unsafe { libc::time(std::ptr::null_mut()) } as u64);
            }
        }
        TimerKind::SyscallMonotonic => {
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            for _ in 0..n {
                // SAFETY: the raw system call writes one timespec to a valid pointer.
                unsafe { libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_MONOTONIC, &mut ts) };
                acc = acc.wrapping_add(ts.tv_nsec as u64);
            }
        }
        TimerKind::Rdtsc => {
            for _ in 0..n {
                acc = acc.wrapping_add(read_tsc());
            }
        }
        TimerKind::Rdtscp => {
            for _ in 0..n {
                acc = acc.wrapping_add(read_tscp());
            }
        }
        TimerKind::Cntvct => {
            for _ in 0..n {
                acc = acc.wrapping_add(read_cntvct());
            }
        }
    }
    std::hint::black_box(acc)
}

/// Nanoseconds per call, one sample per batch.
pub(super) fn measure(kind: TimerKind, opts: &TimerOptions) -> Vec<f64> {
    // Size the batch: double until one lasts at least opts.batch.
    let mut n = 16u64;
    run_batch(kind, n); // warm up: resolve lazy bindings, fault in the vDSO data page
    loop {
        let t = Instant::now();
        run_batch(kind, n);
        if t.elapsed() >= opts.batch || n >= 1 << 24 {
            break;
        }
        n *= 2;
    }
    (0..opts.batches.max(1))
        .map(|_| {
            let t = Instant::now();
            run_batch(kind, n);
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .collect()
}

pub(super) fn resolution_ns(kind: TimerKind) -> Option<u64> {
    let TimerKind::ClockGettime(c) = kind else { return None };
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is valid for writes.
    if unsafe { libc::clock_getres(c.id(), &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_give_positive_costs() {
        let opts = TimerOptions { batches: 5, ..TimerOptions::default() };
        for kind in all_timers() {
            if unavailable(kind).is_some() {
                continue;
            }
            let s = measure(kind, &opts);
            assert_eq!(s.len(), 5);
            assert!(s.iter().all(|&ns| ns > 0.0 && ns < 1e6), "{kind:?}: {s:?}");
        }
    }
}
