//! The clock a benchmark times with: [`cheapest_trustworthy_clock`] measures once per process
//! and keeps the pick ([`ClockChoice`]), which reads the clock and converts its ticks.

use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::calls::{clock_ns, read_cntvct, read_tsc};
use super::{choose_clock, measure_all, Clock, TimerKind, TimerOptions};

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
        choose_clock(&measure_all(&opts)).unwrap_or_else(|| {
            monotonic("no clock qualified; CLOCK_MONOTONIC is the portable default")
        })
    })
}

/// `CLOCK_MONOTONIC`, chosen without measuring anything (`reason`: why it is enough): for a
/// caller timing batches long enough that a clock read's cost and resolution do not matter,
/// where the calibration [`cheapest_trustworthy_clock`] runs once per process (about 0.15 s)
/// would cost more than the measurement.
pub fn monotonic(reason: &str) -> ClockChoice {
    ClockChoice {
        clock: ChosenClock::Posix { id: Clock::Monotonic },
        name: TimerKind::ClockGettime(Clock::Monotonic).name(),
        ns_per_call: f64::NAN,
        reason: reason.into(),
    }
}
