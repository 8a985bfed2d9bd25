//! Latency histograms: HdrHistograms of ns (3 significant digits, 1 ns to 100 s; longer values
//! count as 100 s) per interval and for the whole run, and their percentiles.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::Error;

/// The largest value kept exactly, ns (100 s).
pub const MAX_NS: u64 = 100_000_000_000;

/// An empty histogram with the crate's bounds.
pub fn histogram() -> Result<Histogram<u64>, Error> {
    Histogram::new_with_bounds(1, MAX_NS, 3).map_err(|e| Error::Histogram(format!("{e:?}")))
}

/// The figures printed for a histogram, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl Percentiles {
    /// From a histogram (all zero when it is empty).
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            count: h.len(),
            mean_ns: h.mean(),
            p50_ns: h.value_at_quantile(0.50),
            p90_ns: h.value_at_quantile(0.90),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }

    /// `(label, value)` pairs in printing order.
    pub fn labelled(&self) -> [(&'static str, u64); 5] {
        [
            ("p50", self.p50_ns),
            ("p90", self.p90_ns),
            ("p99", self.p99_ns),
            ("p99.9", self.p999_ns),
            ("max", self.max_ns),
        ]
    }
}

/// Three histograms of the same transactions: latency from the intended start, service time
/// from the actual start, and the schedule lag between the two.
#[derive(Debug, Clone)]
pub struct Hists {
    pub latency: Histogram<u64>,
    pub service: Histogram<u64>,
    pub lag: Histogram<u64>,
}

impl Hists {
    pub fn new() -> Result<Self, Error> {
        Ok(Hists { latency: histogram()?, service: histogram()?, lag: histogram()? })
    }

    /// Counts one transaction.
    pub fn record(&mut self, latency_ns: u64, service_ns: u64, lag_ns: u64) {
        self.latency.saturating_record(latency_ns.clamp(1, MAX_NS));
        self.service.saturating_record(service_ns.clamp(1, MAX_NS));
        self.lag.saturating_record(lag_ns.clamp(1, MAX_NS));
    }

    /// Adds another's counts (same bounds: cannot fail).
    pub fn add(&mut self, other: &Hists) {
        let _ = self.latency.add(&other.latency);
        let _ = self.service.add(&other.service);
        let _ = self.lag.add(&other.lag);
    }

    pub fn reset(&mut self) {
        self.latency.reset();
        self.service.reset();
        self.lag.reset();
    }
}

/// ns as ms text with three significant digits or so.
pub fn ms(ns: u64) -> String {
    let v = ns as f64 / 1e6;
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = Hists::new().unwrap();
        for i in 1..=1000u64 {
            h.record(i * 1_000, i, 0);
        }
        h.record(MAX_NS * 10, 1, 1);
        let p = Percentiles::of(&h.latency);
        assert_eq!(p.count, 1001);
        assert!((p.p50_ns as f64 - 501_000.0).abs() / 501_000.0 < 0.002, "{p:?}");
        assert!((p.p99_ns as f64 - 991_000.0).abs() / 991_000.0 < 0.002, "{p:?}");
        assert!(p.max_ns >= MAX_NS && p.max_ns <= MAX_NS + MAX_NS / 500, "clamped: {p:?}");
        assert_eq!(Percentiles::of(&h.lag).p50_ns, 1, "zero lag counts as 1 ns");
        assert_eq!(Percentiles::of(&histogram().unwrap()), Percentiles::default());
        assert_eq!(ms(1_234_567), "1.23");
        assert_eq!(ms(250_000_000), "250");
    }
}
