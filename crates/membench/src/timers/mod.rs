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

mod calls;
mod choice;
mod frequency;
mod judge;
mod probe;
mod report;

pub use calls::{all_timers, Clock, TimerKind};
pub use choice::{cheapest_trustworthy_clock, clock_in_use, monotonic, ChosenClock, ClockChoice};
pub use frequency::{parse_kernel_tsc, parse_tsc_flags, CounterInfo, ReportedHz, TscFlags};
pub use judge::{choose_clock, warnings, VDSO_CLOCKSOURCES};
pub use probe::{path_from_cost, path_from_probe, CallPath, PathMethod};
pub use report::{measure_all, Skipped, TimerOptions, TimerReport, TimerResult};
