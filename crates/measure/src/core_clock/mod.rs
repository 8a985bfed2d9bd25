//! The core clock, measured without performance counters (which virtual machines usually lack),
//! by two methods that must agree.
//!
//! Each method times a chain of dependent instructions whose latency is known, best of many
//! short trials: cycles = instructions × latency, clock = cycles / time.
//!
//! - **add chain**: `x += y; y += x; …`, register-register adds, 1 cycle each on every x86-64 and
//!   arm64 core. Both operands change at every step, so no renamer can know a value in advance,
//!   and there is no move (move elimination), no immediate (Golden Cove and later Intel cores fold
//!   dependent `add reg, imm` at rename and run such a chain at ~5.3 adds per cycle: 22.3 "GHz"
//!   on a 4.19 GHz core) and no zero idiom (`xor r, r`, `sub r, r`).
//! - **multiply chain**: `x *= y; y *= x; …`, on another execution unit with another latency
//!   ([`MUL_LATENCY`]): 64-bit `imul r64, r64` on x86-64 (3 cycles on Intel since Sandy Bridge
//!   and AMD since Zen), 32-bit `mul w, w, w` on arm64 (2 cycles on Arm's Cortex-A76 and later
//!   and on Neoverse N1, N2, V1, V2, per Arm's software optimization guides). The operands stay
//!   odd, so they never become zero or small.
//!
//! The two figures must agree within [`AGREEMENT`]; then the clock is their mean. Where they do
//! not, one of the assumed latencies is wrong on this core and the clock is unknown
//! ([`CoreClock::why_unknown`]) rather than a wrong figure. Frequencies the platform states —
//! CPUID leaf 0x16 (Intel) and cpufreq's `cpuinfo_max_freq` — are a plausibility bound on the
//! agreed figure, never the answer.
//!
//! ```no_run
//! let clock = measure::core_clock::core_clock();
//! match clock.ghz {
//!     Some(ghz) => println!("{ghz:.2} GHz"),
//!     None => println!("cycles unknown: {}", clock.why_unknown.as_deref().unwrap_or("")),
//! }
//! ```

mod chains;
mod stated;

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::FsRoot;

pub use chains::busy_cycles;
use chains::measure_chains;
pub use stated::{parse_khz, Stated};

/// Largest relative difference between the two methods that still counts as agreement.
pub const AGREEMENT: f64 = 0.03;

/// How far above a stated maximum frequency an agreed figure may be before it is rejected
/// (stated figures are rounded to whole MHz or bus-clock steps; measurements have noise).
pub const CEILING_SLACK: f64 = 0.10;

/// Cycles one multiply of the multiply chain takes, as assumed: `imul r64, r64` on x86-64.
#[cfg(not(target_arch = "aarch64"))]
pub const MUL_LATENCY: u32 = 3;
/// Cycles one multiply of the multiply chain takes, as assumed: `mul w, w, w` on arm64.
#[cfg(target_arch = "aarch64")]
pub const MUL_LATENCY: u32 = 2;

/// The ceiling the core clock is held against when cpufreq states it, by driver: these put the
/// highest frequency the core can reach (boost included) in `cpuinfo_max_freq`. Others
/// (`acpi-cpufreq` on AMD, device-tree tables) may state a base frequency the core boosts above.
const CEILING_DRIVERS: &[&str] =
    &["intel_pstate", "intel_cpufreq", "amd-pstate", "amd-pstate-epp", "cppc_cpufreq"];

/// The core clock and how it was found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoreClock {
    /// The clock to compute cycles with: both methods agree and no stated maximum contradicts
    /// them. `None`: cycles are unknown, and `why_unknown` says why.
    pub ghz: Option<f64>,
    /// From the dependent register-register add chain (1 cycle per add).
    pub add_ghz: Option<f64>,
    /// From the dependent multiply chain (`mul_latency_cycles` per multiply).
    pub mul_ghz: Option<f64>,
    /// The latency assumed for one multiply.
    pub mul_latency_cycles: u32,
    /// CPUID leaf 0x16 (Intel): the base frequency, MHz.
    pub cpuid_base_mhz: Option<f64>,
    /// CPUID leaf 0x16: the maximum frequency (turbo included), MHz.
    pub cpuid_max_mhz: Option<f64>,
    /// cpufreq `cpuinfo_max_freq`, the highest over the CPUs, MHz.
    pub cpufreq_max_mhz: Option<f64>,
    /// The cpufreq driver (`scaling_driver`) of that CPU.
    pub cpufreq_driver: Option<String>,
    /// cpufreq `scaling_cur_freq` of the CPU the chains ran on, read just after them, MHz: the
    /// kernel's estimate (an APERF/MPERF average over its last tick on x86, the last requested
    /// frequency with some drivers), shown beside the measured figure, never a bound.
    #[serde(default)]
    pub cpufreq_cur_mhz: Option<f64>,
    /// The CPU `cpufreq_cur_mhz` was read for.
    #[serde(default)]
    pub cpufreq_cur_cpu: Option<u32>,
    /// Sources of a stated frequency that were absent, and why.
    pub notes: Vec<String>,
    /// Why `ghz` is `None`.
    pub why_unknown: Option<String>,
}

impl CoreClock {
    /// Two measured figures and what the platform states, not yet judged.
    pub fn new(add_ghz: Option<f64>, mul_ghz: Option<f64>, stated: Stated) -> Self {
        CoreClock {
            ghz: None,
            add_ghz,
            mul_ghz,
            mul_latency_cycles: MUL_LATENCY,
            cpuid_base_mhz: stated.cpuid_base_mhz,
            cpuid_max_mhz: stated.cpuid_max_mhz,
            cpufreq_max_mhz: stated.cpufreq_max_mhz,
            cpufreq_driver: stated.cpufreq_driver,
            cpufreq_cur_mhz: stated.cpufreq_cur_mhz,
            cpufreq_cur_cpu: stated.cpufreq_cur_cpu,
            notes: stated.notes,
            why_unknown: None,
        }
        .judged()
    }

    /// Stated maxima the clock cannot exceed: (source, MHz).
    pub fn ceilings(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Some(mhz) = self.cpuid_max_mhz {
            out.push(("CPUID leaf 0x16".to_string(), mhz));
        }
        if let (Some(mhz), Some(driver)) = (self.cpufreq_max_mhz, &self.cpufreq_driver) {
            if CEILING_DRIVERS.contains(&driver.as_str()) {
                out.push((format!("cpufreq ({driver}) cpuinfo_max_freq"), mhz));
            }
        }
        out
    }

    /// The rule, pure: sets `ghz` and `why_unknown` from the measured and stated figures.
    fn judged(mut self) -> Self {
        self.ghz = None;
        self.why_unknown = None;
        let ceilings = self.ceilings();
        let (add, mul) = match (self.add_ghz, self.mul_ghz) {
            (Some(a), Some(m)) if a > 0.0 && m > 0.0 => (a, m),
            (None, None) => {
                self.why_unknown = Some(
                    "no calibration chain for this architecture (x86-64 and arm64 only)".into(),
                );
                return self;
            }
            _ => {
                self.why_unknown = Some(format!(
                    "only one method gave a figure (add chain {}, multiply chain {}); one cannot check itself",
                    ghz_text(self.add_ghz),
                    ghz_text(self.mul_ghz)
                ));
                return self;
            }
        };
        let apart = add.max(mul) / add.min(mul) - 1.0;
        if apart > AGREEMENT {
            let mut why = format!(
                "the add chain says {add:.2} GHz and the multiply chain {mul:.2} GHz, {:.0}% apart \
                 (more than {:.0}%): on this core one of them does not run at its assumed latency \
                 (1 cycle per add, {} per multiply)",
                apart * 100.0,
                AGREEMENT * 100.0,
                self.mul_latency_cycles
            );
            for (source, mhz) in &ceilings {
                let under = |g: f64| g * 1000.0 <= mhz * (1.0 + CEILING_SLACK);
                let which = match (under(add), under(mul)) {
                    (true, true) => "both are under it",
                    (true, false) => "only the add chain is under it",
                    (false, true) => "only the multiply chain is under it",
                    (false, false) => "neither is under it",
                };
                why.push_str(&format!("; {source} states at most {mhz:.0} MHz: {which}"));
            }
            self.why_unknown = Some(why);
            return self;
        }
        let ghz = (add + mul) / 2.0;
        for (source, mhz) in &ceilings {
            if ghz * 1000.0 > mhz * (1.0 + CEILING_SLACK) {
                self.why_unknown = Some(format!(
                    "both chains say {ghz:.2} GHz, more than {:.0}% above the {mhz:.0} MHz maximum {source} states",
                    CEILING_SLACK * 100.0
                ));
                return self;
            }
        }
        self.ghz = Some(ghz);
        self
    }

    /// The clock [`busy_cycles`] converts cycles to time with when the core clock is unknown:
    /// the highest stated maximum, else 1 GHz (a cycle taken as a nanosecond).
    pub fn busy_ghz(&self) -> f64 {
        if let Some(g) = self.ghz {
            return g;
        }
        [self.cpuid_max_mhz, self.cpufreq_max_mhz]
            .into_iter()
            .flatten()
            .fold(None, |best: Option<f64>, mhz| Some(best.map_or(mhz, |b| b.max(mhz))))
            .map_or(1.0, |mhz| mhz / 1000.0)
    }

    /// What a figure in "busy cycles" means when the core clock is unknown; `None` when it is
    /// known (then a busy cycle is a core cycle).
    pub fn busy_caveat(&self) -> Option<String> {
        if self.ghz.is_some() {
            return None;
        }
        let basis = if self.cpuid_max_mhz.is_some() || self.cpufreq_max_mhz.is_some() {
            "the highest frequency the platform states"
        } else {
            "a nominal 1 GHz: no frequency is stated"
        };
        Some(format!(
            "core clock unknown ({}); busy cycles are timed on the monotonic clock at {:.2} GHz, {basis}",
            self.why_unknown.as_deref().unwrap_or("not measured"),
            self.busy_ghz()
        ))
    }

    /// What each method measured: "add chain 4.19 GHz, multiply chain 4.18 GHz at 3 cycles per
    /// multiply".
    pub fn methods(&self) -> String {
        format!(
            "add chain {}, multiply chain {} at {} cycles per multiply",
            ghz_text(self.add_ghz),
            ghz_text(self.mul_ghz),
            self.mul_latency_cycles
        )
    }

    /// How far the measured clock is from cpufreq's current frequency, as a fraction (+0.05:
    /// measured 5% above); `None` when either is missing.
    pub fn cur_freq_gap(&self) -> Option<f64> {
        let (ghz, cur) = (self.ghz?, self.cpufreq_cur_mhz?);
        (cur > 0.0).then(|| ghz * 1000.0 / cur - 1.0)
    }

    /// One line for reports: the figure and both methods, or why cycles are unknown.
    pub fn summary(&self) -> String {
        let methods = self.methods();
        match self.ghz {
            Some(g) => format!("{g:.2} GHz ({methods}, within {:.0}%)", AGREEMENT * 100.0),
            None => format!("unknown: {}", self.why_unknown.as_deref().unwrap_or("not measured")),
        }
    }
}

fn ghz_text(g: Option<f64>) -> String {
    g.map_or("none".into(), |g| format!("{g:.2} GHz"))
}

/// The measured core clock (once per process, about a tenth of a second; up to half a second
/// when the methods disagree): both methods, the stated frequencies and the verdict.
pub fn core_clock() -> &'static CoreClock {
    static CLOCK: OnceLock<CoreClock> = OnceLock::new();
    CLOCK.get_or_init(measure_now)
}

/// The core clock measured again now, not the process's first measurement ([`core_clock`]):
/// for a long run whose rounds each record the clock they ran at (a VM's host can change it
/// between minutes).
pub fn measure_now() -> CoreClock {
    let (add, mul) = measure_chains();
    CoreClock::new(add, mul, Stated::read(&FsRoot::live()))
}

/// The core clock in GHz when both methods agree (see [`core_clock`]); `None` when cycles are
/// unknown.
pub fn core_ghz() -> Option<f64> {
    core_clock().ghz
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stated(cpuid_max: Option<f64>, cpufreq: Option<(f64, &str)>) -> Stated {
        Stated {
            cpuid_base_mhz: cpuid_max.map(|m| m / 2.0),
            cpuid_max_mhz: cpuid_max,
            cpufreq_max_mhz: cpufreq.map(|c| c.0),
            cpufreq_driver: cpufreq.map(|c| c.1.to_string()),
            cpufreq_cur_mhz: None,
            cpufreq_cur_cpu: None,
            notes: Vec::new(),
        }
    }

    #[test]
    fn agreeing_methods_give_their_mean() {
        let c = CoreClock::new(Some(4.19), Some(4.15), Stated::default());
        let g = c.ghz.expect("agreed");
        assert!((g - 4.17).abs() < 1e-9, "{g}");
        assert_eq!(c.why_unknown, None);
        assert_eq!(c.busy_caveat(), None);
        assert_eq!(c.busy_ghz(), g);
        assert!(c.summary().starts_with("4.17 GHz (add chain 4.19 GHz, multiply chain 4.15 GHz"));
    }

    #[test]
    fn the_agreement_edge_is_three_percent_either_way() {
        assert!(CoreClock::new(Some(3.08), Some(3.0), Stated::default()).ghz.is_some());
        assert!(CoreClock::new(Some(3.0), Some(3.08), Stated::default()).ghz.is_some());
        assert!(CoreClock::new(Some(3.1), Some(3.0), Stated::default()).ghz.is_none());
        assert!(CoreClock::new(Some(3.0), Some(3.1), Stated::default()).ghz.is_none());
    }

    // The Golden Cove trap: an add chain the renamer folds says 22.3 GHz, the multiply chain
    // the truth. Disagreement is unknown, whatever a stated maximum would favour.
    #[test]
    fn a_folded_add_chain_makes_the_clock_unknown() {
        let c = CoreClock::new(Some(22.3), Some(4.19), Stated::default());
        assert_eq!(c.ghz, None);
        let why = c.why_unknown.as_deref().expect("reason");
        assert!(why.contains("22.30 GHz") && why.contains("4.19 GHz"), "{why}");
        assert!(why.contains("432% apart"), "{why}");

        let c = CoreClock::new(Some(22.3), Some(4.19), stated(Some(4200.0), None));
        assert_eq!(c.ghz, None);
        let why = c.why_unknown.as_deref().expect("reason");
        assert!(
            why.ends_with(
                "CPUID leaf 0x16 states at most 4200 MHz: only the multiply chain is under it"
            ),
            "{why}"
        );
    }

    // A renamer that folds the add chain makes it read ~5.3× the clock, whatever the clock is;
    // the multiply chain cannot follow it there, so the figure is refused at any speed.
    #[test]
    fn a_chain_folded_at_any_clock_is_refused() {
        for ghz in [0.8, 1.5, 2.45, 3.08, 4.19, 5.7] {
            for (add, mul) in [(5.3 * ghz, ghz), (ghz, 5.3 * ghz), (1.05 * ghz, ghz)] {
                let c = CoreClock::new(Some(add), Some(mul), Stated::default());
                assert_eq!(c.ghz, None, "add {add} mul {mul}");
                assert!(c.why_unknown.as_deref().is_some_and(|w| w.contains("apart")));
                assert_eq!(c.busy_ghz(), 1.0, "busy work falls back to time");
                assert!(c.busy_caveat().is_some());
            }
            let c = CoreClock::new(Some(1.02 * ghz), Some(ghz), Stated::default());
            assert!(c.ghz.is_some_and(|g| (g - 1.01 * ghz).abs() < 1e-9), "{ghz}: {c:?}");
        }
    }

    #[test]
    fn a_wrong_multiply_latency_makes_the_clock_unknown() {
        // A core whose multiply takes 4 cycles where 3 were assumed reads 3/4 of the clock.
        let c = CoreClock::new(Some(3.0), Some(2.25), stated(None, Some((3500.0, "intel_pstate"))));
        assert_eq!(c.ghz, None);
        let why = c.why_unknown.expect("reason");
        assert!(why.contains("both are under it"), "{why}");
    }

    #[test]
    fn agreeing_methods_above_a_stated_ceiling_are_rejected() {
        let c = CoreClock::new(Some(8.0), Some(8.1), stated(Some(4200.0), None));
        assert_eq!(c.ghz, None);
        let why = c.why_unknown.expect("reason");
        assert!(why.contains("above the 4200 MHz maximum CPUID leaf 0x16 states"), "{why}");
        // Within the slack: a stated maximum is rounded, a measurement noisy.
        assert!(CoreClock::new(Some(4.5), Some(4.5), stated(Some(4200.0), None)).ghz.is_some());
        // cpufreq from a driver that includes boost in its maximum is a ceiling too.
        let c = CoreClock::new(Some(5.0), Some(5.0), stated(None, Some((3000.0, "amd-pstate"))));
        assert!(c.why_unknown.expect("reason").contains("cpufreq (amd-pstate)"));
    }

    #[test]
    fn a_maximum_that_may_leave_out_boost_is_not_a_ceiling() {
        // acpi-cpufreq on AMD states the base frequency; the core boosts above it.
        let c = CoreClock::new(Some(3.5), Some(3.5), stated(None, Some((2450.0, "acpi-cpufreq"))));
        assert_eq!(c.ghz, Some(3.5));
        assert!(c.ceilings().is_empty());
    }

    #[test]
    fn one_method_alone_is_not_trusted() {
        let c = CoreClock::new(Some(3.0), None, Stated::default());
        assert_eq!(c.ghz, None);
        assert!(c.why_unknown.expect("reason").contains("only one method"));
        let c = CoreClock::new(None, None, Stated::default());
        assert!(c.why_unknown.expect("reason").contains("no calibration chain"));
        // Nonsense figures are no figures.
        assert_eq!(CoreClock::new(Some(0.0), Some(0.0), Stated::default()).ghz, None);
    }

    #[test]
    fn busy_work_without_a_clock_uses_the_highest_stated_maximum_or_1_ghz() {
        let c = CoreClock::new(Some(22.3), Some(4.19), stated(Some(4200.0), Some((4300.0, "x"))));
        assert_eq!(c.busy_ghz(), 4.3);
        let caveat = c.busy_caveat().expect("caveat");
        assert!(caveat.starts_with("core clock unknown (the add chain says 22.30 GHz"), "{caveat}");
        assert!(caveat.ends_with("at 4.30 GHz, the highest frequency the platform states"));
        let c = CoreClock::new(Some(22.3), Some(4.19), Stated::default());
        assert_eq!(c.busy_ghz(), 1.0);
        assert!(c
            .busy_caveat()
            .expect("caveat")
            .ends_with("a nominal 1 GHz: no frequency is stated"));
    }

    #[test]
    fn the_current_frequency_is_shown_beside_the_clock_never_judges_it() {
        let mut s = stated(None, None);
        s.cpufreq_cur_mhz = Some(2000.0);
        s.cpufreq_cur_cpu = Some(3);
        // A stale current frequency (read while the core idled) does not make cycles unknown.
        let c = CoreClock::new(Some(3.0), Some(3.0), s.clone());
        assert_eq!(c.ghz, Some(3.0));
        let gap = c.cur_freq_gap().expect("gap");
        assert!((gap - 0.5).abs() < 1e-9, "{gap}");
        // No clock, no gap.
        let c = CoreClock::new(Some(22.3), Some(4.19), s);
        assert_eq!((c.ghz, c.cur_freq_gap()), (None, None));
        assert_eq!(c.cpufreq_cur_cpu, Some(3));
    }
}
