//! The open-loop schedule: when each transaction *should* start, whatever happened to the ones
//! before it.
//!
//! Transaction `i` of the whole run is due at `t0 + i / rate`; with `N` connections, connection
//! `c` takes `i = c, c + N, c + 2N, …`, so each connection's period is `N / rate` and together
//! they offer exactly `rate`. [`Arrivals::Jitter`] moves each start by up to ± the jitter
//! (sysbench's `--tx-jitter`, from the same patch as `--tx-rate`: each connection's period
//! varies, the mean rate does not, since the displacement is not carried to the next start).
//! [`Arrivals::Poisson`] gives each connection independent exponential gaps with mean
//! `N / rate`: their sum is a Poisson stream at `rate`. A connection that falls behind starts its
//! next transaction at once; the schedule itself never moves.

use serde::{Deserialize, Serialize};

use measure::rng::SplitMix64;

/// How start times are spread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Arrivals {
    /// Evenly spaced: `t0 + i / rate`.
    Fixed,
    /// Evenly spaced, each start moved by a uniform amount in `[-us, +us]` µs; `us == 0`
    /// means 10 % of the connection's period (the default of sysbench's `--tx-jitter`).
    Jitter { us: u64 },
    /// Exponential gaps (a Poisson process at `rate`).
    Poisson,
}

impl Arrivals {
    /// Its name in text output.
    pub fn describe(&self) -> String {
        match self {
            Arrivals::Fixed => "fixed".to_string(),
            Arrivals::Jitter { us: 0 } => "fixed, jitter ±10% of the period".to_string(),
            Arrivals::Jitter { us } => format!("fixed, jitter ±{us} µs"),
            Arrivals::Poisson => "poisson".to_string(),
        }
    }
}

/// One connection's intended start times, ns after `t0`.
#[derive(Debug, Clone)]
pub struct Schedule {
    period_ns: f64,
    first_ns: f64,
    jitter_ns: f64,
    arrivals: Arrivals,
    k: u64,
    poisson_ns: f64,
    rng: SplitMix64,
}

impl Schedule {
    /// The schedule of connection `index` of `connections` at `rate` transactions per second
    /// in all. `seed` fixes the jitter and Poisson draws.
    pub fn new(rate: f64, connections: u32, index: u32, arrivals: Arrivals, seed: u64) -> Self {
        let connections = f64::from(connections.max(1));
        let period_ns = 1e9 * connections / rate;
        let jitter_ns = match arrivals {
            Arrivals::Jitter { us: 0 } => period_ns / 10.0,
            Arrivals::Jitter { us } => us as f64 * 1e3,
            _ => 0.0,
        };
        Schedule {
            period_ns,
            first_ns: 1e9 * f64::from(index) / rate,
            jitter_ns,
            arrivals,
            k: 0,
            poisson_ns: 0.0,
            rng: SplitMix64::new(seed ^ (u64::from(index) << 32) ^ 0x5EED),
        }
    }

    /// The connection's period, ns (mean gap for Poisson).
    pub fn period_ns(&self) -> f64 {
        self.period_ns
    }

    /// The next intended start, ns after `t0` (never negative).
    pub fn next_ns(&mut self) -> u64 {
        let t = match self.arrivals {
            Arrivals::Fixed => self.first_ns + self.k as f64 * self.period_ns,
            Arrivals::Jitter { .. } => {
                let base = self.first_ns + self.k as f64 * self.period_ns;
                base + (self.rng.unit() * 2.0 - 1.0) * self.jitter_ns
            }
            Arrivals::Poisson => {
                // 1 - U is in (0, 1]: the logarithm is finite.
                self.poisson_ns += -(1.0 - self.rng.unit()).ln() * self.period_ns;
                self.poisson_ns
            }
        };
        self.k += 1;
        t.max(0.0) as u64
    }
}

/// How many of `total` transactions connection `index` of `connections` runs.
pub fn share(total: u64, connections: u32, index: u32) -> u64 {
    let n = u64::from(connections.max(1));
    total / n + u64::from(u64::from(index) < total % n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn starts(rate: f64, conns: u32, arrivals: Arrivals, until_ns: u64) -> Vec<u64> {
        let mut all = Vec::new();
        for c in 0..conns {
            let mut s = Schedule::new(rate, conns, c, arrivals, 42);
            loop {
                let t = s.next_ns();
                if t >= until_ns {
                    break;
                }
                all.push(t);
            }
        }
        all.sort_unstable();
        all
    }

    #[test]
    fn fixed_rate_interleaves_connections_exactly() {
        let all = starts(200.0, 4, Arrivals::Fixed, 5_000_000_000);
        assert_eq!(all.len(), 1000);
        for (i, t) in all.iter().enumerate() {
            let want = i as u64 * 5_000_000;
            assert!(t.abs_diff(want) <= 1, "start {i}: {t} vs {want}");
        }
    }

    #[test]
    fn jitter_moves_starts_but_keeps_the_rate() {
        let mut s = Schedule::new(100.0, 2, 0, Arrivals::Jitter { us: 0 }, 9);
        let period = 20_000_000.0;
        let mut moved = 0;
        for k in 0..10_000u64 {
            let t = s.next_ns() as f64;
            let base = k as f64 * period;
            assert!((t - base).abs() <= period / 10.0 + 1.0, "start {k} moved too far");
            if (t - base).abs() > 1.0 {
                moved += 1;
            }
        }
        assert!(moved > 9_000);
        // An explicit jitter in µs.
        let mut s = Schedule::new(10.0, 1, 0, Arrivals::Jitter { us: 500 }, 3);
        for k in 0..1000u64 {
            let t = s.next_ns() as f64;
            assert!((t - k as f64 * 1e8).abs() <= 500_000.0 + 1.0);
        }
        let all = starts(100.0, 2, Arrivals::Jitter { us: 0 }, 100_000_000_000);
        assert!((all.len() as i64 - 10_000).abs() <= 2, "{}", all.len());
    }

    #[test]
    fn poisson_has_the_rate_and_exponential_gaps() {
        let mut s = Schedule::new(1000.0, 1, 0, Arrivals::Poisson, 1);
        let mut prev = 0u64;
        let mut gaps = Vec::new();
        for _ in 0..100_000 {
            let t = s.next_ns();
            gaps.push((t - prev) as f64);
            prev = t;
        }
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!((mean - 1e6).abs() < 0.02e6, "mean gap {mean}");
        // Exponential: the coefficient of variation is 1, and P(gap > mean) = 1/e.
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!((var.sqrt() / mean - 1.0).abs() < 0.03);
        let above = gaps.iter().filter(|&&g| g > mean).count() as f64 / gaps.len() as f64;
        assert!((above - (-1f64).exp()).abs() < 0.01, "{above}");
        // Four connections together: the same rate.
        let all = starts(1000.0, 4, Arrivals::Poisson, 20_000_000_000);
        assert!((all.len() as f64 - 20_000.0).abs() < 600.0, "{}", all.len());
    }

    #[test]
    fn shares_add_up() {
        for total in [0u64, 1, 7, 1000, 1001] {
            for conns in [1u32, 3, 8] {
                let sum: u64 = (0..conns).map(|c| share(total, conns, c)).sum();
                assert_eq!(sum, total);
            }
        }
        assert_eq!(share(10, 4, 0), 3);
        assert_eq!(share(10, 4, 3), 2);
    }
}
