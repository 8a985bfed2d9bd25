//! Summaries of repeated samples: a figure is a distribution, not one number.

use serde::{Deserialize, Serialize};

/// Relative interquartile range above which a run is flagged noisy.
pub const NOISY_IQR: f64 = 0.05;

/// Order statistics of a set of samples, and the samples themselves (in the order they were
/// taken) so a stored result can be re-analysed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub samples: usize,
    pub min: f64,
    pub median: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
    /// (p75 − p25) / median: the spread of the middle half.
    pub iqr_ratio: f64,
    /// Whether the spread exceeds [`NOISY_IQR`]: something else disturbed the run.
    pub noisy: bool,
    /// Every sample, in order (empty when read back from a store, which keeps samples once,
    /// in its metrics).
    #[serde(default)]
    pub values: Vec<f64>,
}

/// The value at quantile `q` (0..=1) of sorted samples, interpolating between neighbours.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
        }
    }
}

/// Summarizes samples; `None` when there are none or any is not finite.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() || samples.iter().any(|s| !s.is_finite()) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = quantile(&sorted, 0.5);
    let iqr = quantile(&sorted, 0.75) - quantile(&sorted, 0.25);
    let iqr_ratio = if median > 0.0 { iqr / median } else { 0.0 };
    Some(Summary {
        samples: sorted.len(),
        min: sorted[0],
        median,
        p99: quantile(&sorted, 0.99),
        max: sorted[sorted.len() - 1],
        mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
        iqr_ratio,
        noisy: iqr_ratio > NOISY_IQR,
        values: samples.to_vec(),
    })
}

/// Whether two figures differ by more than their own spread: the medians are further apart
/// than the larger of the two interquartile ranges. Two measurements of the same thing that do
/// not differ beyond noise must not be drawn as if they did.
pub fn differs_beyond_noise(a: &Summary, b: &Summary) -> bool {
    let iqr = |s: &Summary| s.iqr_ratio * s.median.abs();
    (a.median - b.median).abs() > iqr(a).max(iqr(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&s, 0.0), 1.0);
        assert_eq!(quantile(&s, 1.0), 4.0);
        assert_eq!(quantile(&s, 0.5), 2.5);
        assert_eq!(quantile(&[7.0], 0.99), 7.0);
    }

    #[test]
    fn summary_flags_noise() {
        let steady: Vec<f64> = (0..100).map(|i| 100.0 + (i % 3) as f64 * 0.1).collect();
        let s = summarize(&steady).expect("samples");
        assert!(!s.noisy);
        assert_eq!(s.min, 100.0);
        assert!((s.median - 100.1).abs() < 1e-9);
        let noisy: Vec<f64> = (0..100).map(|i| if i % 2 == 0 { 100.0 } else { 130.0 }).collect();
        assert!(summarize(&noisy).expect("samples").noisy);
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn noise_decides_whether_two_figures_differ() {
        let around = |m: f64, spread: f64| {
            let v: Vec<f64> = (0..40).map(|i| m + spread * ((i % 5) as f64 - 2.0)).collect();
            summarize(&v).expect("samples")
        };
        assert!(!differs_beyond_noise(&around(100.0, 5.0), &around(104.0, 5.0)));
        assert!(differs_beyond_noise(&around(100.0, 1.0), &around(120.0, 1.0)));
    }
}
