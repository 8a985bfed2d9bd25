//! The one way counters are subtracted.
//!
//! Kernel counters only grow, but a reader sees three other things: a 32-bit counter (a driver's
//! hardware register, `/proc/net/softnet_stat`, every counter on a 32-bit kernel) wrapping past
//! 2^32; in theory a 64-bit one wrapping past 2^64; and a counter that starts again from zero
//! because what it counted was replaced — an interface removed and re-added under the same name,
//! a driver that resets its statistics. Subtracting raw integers turns the last two into
//! negative or absurd rates; [`CounterDelta::between`] turns them into a count that is at worst a
//! lower bound, and says which case it was.

use serde::Serialize;

/// How a counter moved between two readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// It grew: the difference is exact.
    Counted,
    /// It passed 2^32 and started again: the difference is exact.
    Wrapped32,
    /// It passed 2^64 and started again: the difference is exact.
    Wrapped64,
    /// It restarted from zero (source replaced, or a wrap too large to be believed): the value is
    /// what was counted since the restart, a lower bound for the interval.
    Reset,
    /// A time counter read lower than before ([`CounterDelta::time_between`]): counted as 0.
    WentBack,
}

/// A counter's increase over one interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CounterDelta {
    pub value: u64,
    pub step: Step,
}

/// The largest wrap believed when the caller gives no bound: one full turn of a 32-bit counter.
const DEFAULT_WRAP_LIMIT: u64 = 1 << 32;

impl CounterDelta {
    /// The increase from `prev` to `cur`.
    ///
    /// `same_source` is false when the counted thing is known to have been replaced (e.g. the
    /// interface's ifindex changed): the counter restarted, so the increase is `cur`.
    /// `max_plausible` bounds what the interval could have counted (from the link speed, say); a
    /// wrap that would imply more is taken as a reset. Without a bound, a 32-bit wrap is believed
    /// when the previous value fitted in 32 bits, and a 64-bit wrap only within 2^32 of the top.
    pub fn between(prev: u64, cur: u64, same_source: bool, max_plausible: Option<u64>) -> Self {
        if !same_source {
            return Self { value: cur, step: Step::Reset };
        }
        if cur >= prev {
            return Self { value: cur - prev, step: Step::Counted };
        }
        let limit = max_plausible.unwrap_or(DEFAULT_WRAP_LIMIT);
        let (wrapped, step) = if prev <= u64::from(u32::MAX) {
            ((1u64 << 32) - prev + cur, Step::Wrapped32)
        } else {
            (cur.wrapping_sub(prev), Step::Wrapped64)
        };
        if wrapped <= limit {
            Self { value: wrapped, step }
        } else {
            Self { value: cur, step: Step::Reset }
        }
    }

    /// The increase of an accumulated *time* (CPU ticks, ns): such counters are 64-bit and never
    /// wrap, but a few step back a little — `/proc/stat`'s per-CPU idle and iowait on tickless
    /// kernels (proc(5)), or a CPU's figures across offline/online. A step back counts 0 and says
    /// so, never a wrap.
    pub fn time_between(prev: u64, cur: u64) -> Self {
        if cur >= prev {
            Self { value: cur - prev, step: Step::Counted }
        } else {
            Self { value: 0, step: Step::WentBack }
        }
    }

    /// A counter seen for the first time, counted from zero (since boot, or since it appeared).
    pub fn from_zero(cur: u64) -> Self {
        Self { value: cur, step: Step::Counted }
    }

    /// Per second over `elapsed_s` seconds; 0 for an empty interval.
    pub fn rate(&self, elapsed_s: f64) -> f64 {
        if elapsed_s > 0.0 {
            self.value as f64 / elapsed_s
        } else {
            0.0
        }
    }

    pub fn is_reset(&self) -> bool {
        self.step == Step::Reset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_exact() {
        assert_eq!(
            CounterDelta::between(10, 25, true, None),
            CounterDelta { value: 15, step: Step::Counted }
        );
    }

    #[test]
    fn a_32_bit_wrap_counts_across_the_top() {
        let d = CounterDelta::between(u64::from(u32::MAX) - 9, 5, true, None);
        assert_eq!(d, CounterDelta { value: 15, step: Step::Wrapped32 });
    }

    #[test]
    fn a_64_bit_wrap_counts_across_the_top() {
        let d = CounterDelta::between(u64::MAX - 1, 3, true, None);
        assert_eq!(d, CounterDelta { value: 5, step: Step::Wrapped64 });
    }

    #[test]
    fn a_large_counter_going_back_is_a_reset() {
        // 2^40 bytes then 1000: a 64-bit wrap would mean ~16 EiB in one interval.
        let d = CounterDelta::between(1 << 40, 1000, true, None);
        assert_eq!(d, CounterDelta { value: 1000, step: Step::Reset });
    }

    #[test]
    fn an_implausible_32_bit_wrap_is_a_reset() {
        // 1 s on a 1 Gbit/s link moves at most 125 MB: a wrap implying ~4 GB is a restart.
        let d = CounterDelta::between(1_000_000, 2_000, true, Some(250_000_000));
        assert_eq!(d, CounterDelta { value: 2_000, step: Step::Reset });
    }

    #[test]
    fn a_replaced_source_restarts_even_when_the_counter_grew() {
        let d = CounterDelta::between(100, 5000, false, None);
        assert_eq!(d, CounterDelta { value: 5000, step: Step::Reset });
    }

    #[test]
    fn a_time_going_back_counts_nothing() {
        assert_eq!(
            CounterDelta::time_between(100, 90),
            CounterDelta { value: 0, step: Step::WentBack }
        );
        assert_eq!(CounterDelta::time_between(90, 100).value, 10);
    }

    #[test]
    fn rate_of_an_empty_interval_is_zero() {
        assert_eq!(CounterDelta::from_zero(10).rate(0.0), 0.0);
        assert_eq!(CounterDelta::from_zero(10).rate(2.0), 5.0);
    }
}
