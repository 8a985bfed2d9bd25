//! The run: [`measure_all`] measures every timer, probes its path, reads the counter and the
//! clocksource, and gathers it all with the choice and the warnings in a [`TimerReport`].

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::calls::{measure, resolution_ns, unavailable};
use super::frequency::counter_info;
use super::probe::seccomp_probe;
use super::{
    all_timers, choose_clock, path_from_cost, path_from_probe, warnings, CallPath, ClockChoice,
    CounterInfo, PathMethod, TimerKind,
};
use measure::core_clock::{core_clock, CoreClock};
use measure::stop;
use measure::summary::{summarize, Summary};

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

/// Everything `platscope timer` reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerReport {
    pub timers: Vec<TimerResult>,
    pub skipped: Vec<Skipped>,
    /// How the paths were determined.
    pub path_method: PathMethod,
    /// Whether the kernel mapped a vDSO into this process (`getauxval(AT_SYSINFO_EHDR)`).
    pub vdso_mapped: bool,
    /// The core clock cycles are computed with: `core_clock.ghz`, `None` when its two methods
    /// disagree (see `core_clock.why_unknown`).
    pub core_ghz: Option<f64>,
    /// How the core clock was measured: both methods, the stated frequencies, the verdict.
    /// Absent from reports stored before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_clock: Option<CoreClock>,
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

/// Measures every timer and gathers the facts around them.
pub fn measure_all(opts: &TimerOptions) -> TimerReport {
    let env = topo::Environment::read(&topo::sysfs::SysRoot::live(), &[]);
    let kinds = all_timers();
    let clock = core_clock();
    let ghz = clock.ghz;
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
        core_clock: Some(clock.clone()),
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
