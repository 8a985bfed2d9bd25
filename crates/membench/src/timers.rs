//! What reading the clock costs, whether each call enters the kernel, and which clock a
//! benchmark should use.
//!
//! - **Cost**: each timer is called in batches sized to last at least [`TimerOptions::batch`];
//!   a batch's wall time over its calls is one sample; the figure is the median of the samples
//!   ([`measure::summary::summarize`]). Cycles are that median times the measured core clock
//!   ([`measure::core_clock::core_ghz`]).
//! - **vDSO or kernel**: observed, not guessed. A short-lived thread installs a seccomp filter
//!   that makes the clock system calls (`clock_gettime`, `gettimeofday`, `time`) fail with a
//!   marker errno, then calls every timer through the C library. A call that returns normally
//!   never executed a system call (the vDSO answered it in user space); a call that fails with
//!   the marker entered the kernel — including a vDSO that fell back to the system call because
//!   the clocksource cannot be read from user space. A raw `syscall(SYS_clock_gettime)` is the
//!   control: it must fail, or the probe is not trusted. Where seccomp is unavailable the path
//!   is inferred from cost against that raw system call, and the report says so.
//! - **Counter frequency**: TSC (x86-64) or CNTVCT_EL0 (arm64) ticks counted against
//!   `CLOCK_MONOTONIC_RAW` over short sleeps; alongside, what the CPU (CPUID leaf 0x15), the
//!   hypervisor (leaf 0x4000_0010), the architecture (CNTFRQ_EL0) and the kernel log say.
//!
//! ```no_run
//! let choice = membench::timers::cheapest_trustworthy_clock();
//! let t0 = choice.read();
//! // … work …
//! let ns = choice.ticks_to_ns(choice.read().wrapping_sub(t0));
//! # let _ = ns;
//! ```

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use measure::core_clock::core_ghz;
use measure::stop;
use measure::summary::{summarize, Summary};

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

/// Whether a call went through the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallPath {
    /// Answered in user space by the vDSO: no system call.
    Vdso,
    /// A system call on every call.
    Kernel,
    /// Some calls entered the kernel, some did not.
    Mixed,
    /// A user-space instruction; no library, no kernel (a hypervisor may still trap it).
    Instruction,
    /// Not determined.
    Unknown,
}

/// How the path was determined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "method", content = "detail")]
pub enum PathMethod {
    /// Observed with the seccomp probe (see the module documentation).
    Seccomp,
    /// Inferred from cost against the raw system call, because the probe could not run.
    Cost(String),
}

/// One timer's measured cost and path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerResult {
    pub timer: TimerKind,
    pub name: String,
    /// Nanoseconds per call over the batches.
    pub ns: Summary,
    /// Core cycles per call: the median times the measured core clock.
    pub cycles: Option<f64>,
    pub path: CallPath,
    /// Calls of the seccomp probe that entered the kernel, of `probe_calls`.
    pub probe_kernel_calls: Option<u32>,
    pub probe_calls: Option<u32>,
    /// `clock_getres(2)`, for the POSIX clocks.
    pub resolution_ns: Option<u64>,
}

/// A timer that was not measured, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub name: String,
    pub reason: String,
}

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

/// The clock [`cheapest_trustworthy_clock`] picked.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "clock")]
pub enum ChosenClock {
    /// `rdtsc`, converted with the measured frequency.
    Tsc { hz: f64 },
    /// CNTVCT_EL0, converted with the measured frequency.
    Cntvct { hz: f64 },
    /// A POSIX clock through `clock_gettime`.
    Posix { id: Clock },
}

/// The pick and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockChoice {
    pub clock: ChosenClock,
    pub name: String,
    /// Its measured median cost.
    pub ns_per_call: f64,
    /// Why it is trusted.
    pub reason: String,
}

impl ClockChoice {
    /// Reads the clock: ticks for the counters, nanoseconds for the POSIX clocks.
    #[inline]
    pub fn read(&self) -> u64 {
        match self.clock {
            ChosenClock::Tsc { .. } => read_tsc(),
            ChosenClock::Cntvct { .. } => read_cntvct(),
            ChosenClock::Posix { id } => clock_ns(id.id()).unwrap_or(0),
        }
    }

    /// Converts a difference of two [`ClockChoice::read`]s to nanoseconds.
    pub fn ticks_to_ns(&self, ticks: u64) -> f64 {
        match self.clock {
            ChosenClock::Tsc { hz } | ChosenClock::Cntvct { hz } => ticks as f64 * 1e9 / hz,
            ChosenClock::Posix { .. } => ticks as f64,
        }
    }
}

/// Everything `platscope timer` reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerReport {
    pub timers: Vec<TimerResult>,
    pub skipped: Vec<Skipped>,
    /// How the paths were determined.
    pub path_method: PathMethod,
    /// Whether the kernel mapped a vDSO into this process (`getauxval(AT_SYSINFO_EHDR)`).
    pub vdso_mapped: bool,
    pub core_ghz: Option<f64>,
    pub clocksource: Option<String>,
    pub available_clocksources: Vec<String>,
    pub counter: Option<CounterInfo>,
    pub choice: Option<ClockChoice>,
    pub warnings: Vec<String>,
    /// Ctrl-C stopped the run; the timers listed were measured.
    pub interrupted: bool,
}

impl TimerReport {
    pub fn timer(&self, kind: TimerKind) -> Option<&TimerResult> {
        self.timers.iter().find(|t| t.timer == kind)
    }
}

/// How long and how often to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerOptions {
    /// Samples (batches) per timer.
    pub batches: usize,
    /// Least wall time of one batch: long enough that reading the time around it is noise.
    pub batch: Duration,
    /// Calls per timer in the seccomp probe.
    pub probe_calls: u32,
    /// Counter-frequency measurements and the sleep each spans.
    pub frequency_rounds: usize,
    pub frequency_span: Duration,
}

impl Default for TimerOptions {
    fn default() -> Self {
        TimerOptions {
            batches: 200,
            batch: Duration::from_micros(200),
            probe_calls: 1000,
            frequency_rounds: 3,
            frequency_span: Duration::from_millis(50),
        }
    }
}

// ---------------------------------------------------------------------------- the calls

fn clock_ns(id: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is valid for writes.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn read_tsc() -> u64 {
    // SAFETY: rdtsc exists on every x86-64 CPU; callers check first that the kernel has not
    // disabled it for this process (PR_SET_TSC), which would raise SIGSEGV.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn read_tsc() -> u64 {
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
fn read_cntvct() -> u64 {
    let v: u64;
    // SAFETY: reads the virtual counter register, which Linux lets EL0 read (or traps and
    // emulates); no memory is touched.
    unsafe { std::arch::asm!("mrs {v}, cntvct_el0", v = out(reg) v, options(nomem, nostack)) };
    v
}

#[cfg(not(target_arch = "aarch64"))]
#[inline]
fn read_cntvct() -> u64 {
    0
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

/// Whether this process may execute rdtsc (the kernel can make it fault: `PR_SET_TSC`).
fn tsc_allowed() -> bool {
    let mut state: libc::c_int = 0;
    // SAFETY: PR_GET_TSC writes one int through the pointer, which is valid.
    let rc = unsafe { libc::prctl(libc::PR_GET_TSC, &mut state as *mut libc::c_int, 0, 0, 0) };
    rc != 0 || state != libc::PR_TSC_SIGSEGV
}

#[cfg(target_arch = "x86_64")]
fn cpu_has_rdtscp() -> bool {
    use std::arch::x86_64::__cpuid;
    // Leaf 0x8000_0000 gives the highest extended leaf; rdtscp is bit 27 of 0x8000_0001 EDX.
    __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).edx & (1 << 27) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_has_rdtscp() -> bool {
    false
}

/// Why `kind` cannot be measured here, if it cannot.
fn unavailable(kind: TimerKind) -> Option<String> {
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
fn measure(kind: TimerKind, opts: &TimerOptions) -> Vec<f64> {
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

fn resolution_ns(kind: TimerKind) -> Option<u64> {
    let TimerKind::ClockGettime(c) = kind else { return None };
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is valid for writes.
    if unsafe { libc::clock_getres(c.id(), &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

// ---------------------------------------------------------------------------- the probe

/// The errno the probe's filter returns: unlikely from a clock call for any other reason.
const PROBE_ERRNO: i32 = libc::ENOTRECOVERABLE;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64

#[cfg(target_arch = "x86_64")]
const CLOCK_SYSCALLS: &[libc::c_long] =
    &[libc::SYS_clock_gettime, libc::SYS_gettimeofday, libc::SYS_time];
#[cfg(target_arch = "aarch64")]
const CLOCK_SYSCALLS: &[libc::c_long] = &[libc::SYS_clock_gettime, libc::SYS_gettimeofday];

/// A classic-BPF seccomp program: the clock system calls of this architecture fail with
/// [`PROBE_ERRNO`], everything else is allowed.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn probe_filter() -> Vec<libc::sock_filter> {
    let stmt = |code: u32, k: u32| libc::sock_filter { code: code as u16, jt: 0, jf: 0, k };
    let jeq = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let n = CLOCK_SYSCALLS.len() as u8;
    // seccomp_data: nr at offset 0, arch at offset 4.
    let mut prog = vec![
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 4),
        jeq(AUDIT_ARCH, 0, n + 1), // another ABI: allow
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
    ];
    for (i, &nr) in CLOCK_SYSCALLS.iter().enumerate() {
        prog.push(jeq(nr as u32, n - i as u8, 0));
    }
    prog.push(stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW));
    prog.push(stmt(
        libc::BPF_RET | libc::BPF_K,
        libc::SECCOMP_RET_ERRNO | (PROBE_ERRNO as u32 & libc::SECCOMP_RET_DATA),
    ));
    prog
}

/// Whether one call of `kind` failed with the probe's errno (so it made a system call).
fn entered_kernel(kind: TimerKind) -> bool {
    let failed = match kind {
        TimerKind::ClockGettime(c) => {
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: `ts` is valid for writes.
            unsafe { libc::clock_gettime(c.id(), &mut ts) != 0 }
        }
        TimerKind::Gettimeofday => {
            let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
            // SAFETY: `tv` is valid for writes.
            unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) != 0 }
        }
        TimerKind::Time => {
            // SAFETY: a null pointer asks only for the return value; -1 is the error value.
            let t = unsafe { libc::time(std::ptr::null_mut()) };
            t == -1
        }
        TimerKind::SyscallMonotonic => {
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: the raw system call writes one timespec to a valid pointer.
            unsafe { libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_MONOTONIC, &mut ts) != 0 }
        }
        _ => false,
    };
    failed && std::io::Error::last_os_error().raw_os_error() == Some(PROBE_ERRNO)
}

/// Runs the seccomp probe on a thread of its own (the filter and no_new_privs stay with that
/// thread and end with it). Returns, per timer, how many of `calls` entered the kernel.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn seccomp_probe(kinds: &[TimerKind], calls: u32) -> Result<Vec<u32>, String> {
    let filter = probe_filter();
    std::thread::scope(|s| {
        s.spawn(|| {
            let prog =
                libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr().cast_mut() };
            // SAFETY: sets a flag on the calling thread only; required to install a filter
            // without CAP_SYS_ADMIN.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(format!(
                    "prctl(PR_SET_NO_NEW_PRIVS): {}",
                    std::io::Error::last_os_error()
                ));
            }
            // SAFETY: `prog` points at a valid filter that outlives the call (the kernel copies
            // it); without SECCOMP_FILTER_FLAG_TSYNC it applies to this thread only.
            let rc = unsafe {
                libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                    &prog as *const libc::sock_fprog,
                    0,
                    0,
                )
            };
            if rc != 0 {
                return Err(format!(
                    "installing a seccomp filter: {}",
                    std::io::Error::last_os_error()
                ));
            }
            // The control: the raw system call must be caught, or nothing here is trusted.
            if !entered_kernel(TimerKind::SyscallMonotonic) {
                return Err(
                    "the seccomp filter did not catch a raw clock_gettime system call".into()
                );
            }
            Ok(kinds
                .iter()
                .map(|&k| {
                    if k.is_instruction() {
                        0
                    } else {
                        (0..calls).filter(|_| entered_kernel(k)).count() as u32
                    }
                })
                .collect())
        })
        .join()
        .map_err(|_| "the probe thread panicked".to_string())?
    })
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn seccomp_probe(_kinds: &[TimerKind], _calls: u32) -> Result<Vec<u32>, String> {
    Err("the probe knows only x86-64 and arm64 system call numbers".into())
}

/// The path from the probe's count.
pub fn path_from_probe(kind: TimerKind, kernel_calls: u32, calls: u32) -> CallPath {
    if kind.is_instruction() {
        CallPath::Instruction
    } else if kernel_calls == 0 {
        CallPath::Vdso
    } else if kernel_calls >= calls {
        CallPath::Kernel
    } else {
        CallPath::Mixed
    }
}

/// The path inferred from cost when the probe cannot run: a library call costing at least
/// 60% of the raw system call is taken to be one.
pub fn path_from_cost(kind: TimerKind, ns: f64, syscall_ns: Option<f64>) -> CallPath {
    match (kind, syscall_ns) {
        (k, _) if k.is_instruction() => CallPath::Instruction,
        (TimerKind::SyscallMonotonic, _) => CallPath::Kernel,
        (_, Some(sys)) if ns >= 0.6 * sys => CallPath::Kernel,
        (_, Some(_)) => CallPath::Vdso,
        _ => CallPath::Unknown,
    }
}

// ---------------------------------------------------------------------------- frequency

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

/// Frequencies the CPU and the hypervisor state through CPUID.
#[cfg(target_arch = "x86_64")]
fn cpuid_frequencies() -> Vec<ReportedHz> {
    use std::arch::x86_64::__cpuid;
    let mut out = Vec::new();
    if __cpuid(0).eax >= 0x15 {
        // Leaf 0x15: TSC = crystal (ECX, Hz) × EBX / EAX. ECX is 0 on CPUs that do not say.
        let l = __cpuid(0x15);
        if l.eax != 0 && l.ebx != 0 && l.ecx != 0 {
            out.push(ReportedHz {
                source: "CPUID leaf 0x15 (crystal × ratio)".into(),
                hz: l.ecx as f64 * l.ebx as f64 / l.eax as f64,
            });
        }
    }
    if __cpuid(1).ecx & (1 << 31) != 0 && __cpuid(0x4000_0000).eax >= 0x4000_0010 {
        // Hypervisor timing leaf (VMware convention, also KVM/QEMU): EAX = TSC kHz.
        let khz = __cpuid(0x4000_0010).eax;
        if khz != 0 {
            out.push(ReportedHz {
                source: "hypervisor CPUID leaf 0x40000010".into(),
                hz: khz as f64 * 1e3,
            });
        }
    }
    out
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_frequencies() -> Vec<ReportedHz> {
    Vec::new()
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

fn counter_info(opts: &TimerOptions) -> Option<CounterInfo> {
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

// ---------------------------------------------------------------------------- judgement

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
            if let (Some(mono), Some(cycles)) =
                (r.timer(TimerKind::ClockGettime(Clock::Monotonic)), t.cycles)
            {
                if t.ns.median > mono.ns.median && cycles > 100.0 {
                    w.push(format!(
                        "{} costs {:.0} ns ({cycles:.0} cycles), more than clock_gettime(CLOCK_MONOTONIC): the hypervisor probably traps it",
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

// ---------------------------------------------------------------------------- the run

/// Measures every timer and gathers the facts around them.
pub fn measure_all(opts: &TimerOptions) -> TimerReport {
    let env = topo::Environment::read(&topo::sysfs::SysRoot::live(), &[]);
    let kinds = all_timers();
    let ghz = core_ghz();
    let mut timers = Vec::new();
    let mut skipped = Vec::new();
    let mut interrupted = false;
    for &kind in &kinds {
        if stop::requested() {
            interrupted = true;
            break;
        }
        if let Some(reason) = unavailable(kind) {
            skipped.push(Skipped { name: kind.name(), reason });
            continue;
        }
        let samples = measure(kind, opts);
        let Some(ns) = summarize(&samples) else {
            skipped.push(Skipped { name: kind.name(), reason: "no valid samples".into() });
            continue;
        };
        timers.push(TimerResult {
            timer: kind,
            name: kind.name(),
            cycles: ghz.map(|g| ns.median * g),
            ns,
            path: CallPath::Unknown,
            probe_kernel_calls: None,
            probe_calls: None,
            resolution_ns: resolution_ns(kind),
        });
    }
    let measured: Vec<TimerKind> = timers.iter().map(|t| t.timer).collect();
    let path_method = match seccomp_probe(&measured, opts.probe_calls) {
        Ok(counts) => {
            for (t, k) in timers.iter_mut().zip(counts) {
                t.path = path_from_probe(t.timer, k, opts.probe_calls);
                if !t.timer.is_instruction() {
                    t.probe_kernel_calls = Some(k);
                    t.probe_calls = Some(opts.probe_calls);
                }
            }
            PathMethod::Seccomp
        }
        Err(why) => {
            let sys =
                timers.iter().find(|t| t.timer == TimerKind::SyscallMonotonic).map(|t| t.ns.median);
            for t in &mut timers {
                t.path = path_from_cost(t.timer, t.ns.median, sys);
            }
            PathMethod::Cost(format!("seccomp probe unavailable ({why}); paths inferred from cost against the raw system call"))
        }
    };
    // SAFETY: getauxval has no preconditions; 0 means the entry is absent.
    let vdso_mapped = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } != 0;
    let counter = if stop::requested() { None } else { counter_info(opts) };
    let mut report = TimerReport {
        timers,
        skipped,
        path_method,
        vdso_mapped,
        core_ghz: ghz,
        clocksource: env.clocksource,
        available_clocksources: env.available_clocksources,
        counter,
        choice: None,
        warnings: Vec::new(),
        interrupted: interrupted || stop::requested(),
    };
    report.choice = choose_clock(&report);
    report.warnings = warnings(&report);
    report
}

static CHOICE: OnceLock<ClockChoice> = OnceLock::new();

/// The clock [`cheapest_trustworthy_clock`] chose, if this process has timed anything with it
/// (so recording which clock a run used never calibrates one it did not use).
pub fn clock_in_use() -> Option<&'static ClockChoice> {
    CHOICE.get()
}

/// The cheapest trustworthy clock on this machine (see [`choose_clock`]), measured once per
/// process with short runs; `CLOCK_MONOTONIC` when nothing qualifies.
pub fn cheapest_trustworthy_clock() -> &'static ClockChoice {
    CHOICE.get_or_init(|| {
        let opts = TimerOptions {
            batches: 31,
            batch: Duration::from_micros(100),
            probe_calls: 10,
            frequency_rounds: 3,
            frequency_span: Duration::from_millis(20),
        };
        choose_clock(&measure_all(&opts)).unwrap_or(ClockChoice {
            clock: ChosenClock::Posix { id: Clock::Monotonic },
            name: TimerKind::ClockGettime(Clock::Monotonic).name(),
            ns_per_call: f64::NAN,
            reason: "no clock qualified; CLOCK_MONOTONIC is the portable default".into(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // The flags line of /proc/cpuinfo on the development VM (AMD EPYC under KVM, kernel 6.18),
    // trimmed to the TSC-related and neighbouring flags.
    const CPUINFO_KVM: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\n\
        flags\t\t: fpu vme de pse tsc msr pae rdtscp lm constant_tsc rep_good nopl nonstop_tsc \
        cpuid extd_apicid tsc_known_freq pni tsc_deadline_timer tsc_adjust\n\
        bugs\t\t: sysret_ss_attrs\n";

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

    #[test]
    fn probe_counts_become_paths() {
        let mono = TimerKind::ClockGettime(Clock::Monotonic);
        assert_eq!(path_from_probe(mono, 0, 1000), CallPath::Vdso);
        assert_eq!(path_from_probe(mono, 1000, 1000), CallPath::Kernel);
        assert_eq!(path_from_probe(mono, 3, 1000), CallPath::Mixed);
        assert_eq!(path_from_probe(TimerKind::Rdtsc, 0, 1000), CallPath::Instruction);
        assert_eq!(path_from_cost(mono, 25.0, Some(200.0)), CallPath::Vdso);
        assert_eq!(path_from_cost(mono, 190.0, Some(200.0)), CallPath::Kernel);
        assert_eq!(path_from_cost(mono, 25.0, None), CallPath::Unknown);
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
