//! How much a figure moves from one run to the next on a host that did not change: the
//! minimum effect of an outlier and the smallest shift worth calling, calibrated from the
//! hosts' own histories, never a fixed percentage.
//!
//! `report --baseline` takes the largest difference of a figure between two earlier reports of
//! one host. A fleet has many hosts and long histories, where the largest difference is a
//! shift as often as it is noise, so here each host's consecutive runs are compared (a shift
//! makes one such difference, noise makes all of them) and the differences of all hosts of a
//! class are pooled:
//!
//! - the **minimum effect** is the 95th percentile of those relative differences: as large a
//!   difference as two runs of one unchanged host show, leaving out the rare shift;
//! - the **noise** is their median scaled to one run's standard deviation (the median of
//!   |a − b| for two normal draws is 0.954 σ): a shift smaller than that is not called.
//!
//! A class with too few consecutive runs borrows the figure's pool over the whole fleet; with
//! none at all, the figure is not calibrated and its outliers are not tested.

use crate::series::Fleet;

/// The fewest consecutive differences a calibration rests on.
pub const MIN_DIFFERENCES: usize = 10;

/// The median of |a − b| over σ for a and b drawn from one normal distribution (√2 · 0.6745).
const MEDIAN_ABS_DIFFERENCE_PER_SIGMA: f64 = 0.953_872;

/// A figure's run-to-run noise, as relative differences.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// The 95th percentile of |ratio − 1| between consecutive runs.
    pub min_effect: f64,
    /// One run's relative standard deviation.
    pub sigma: f64,
    /// How many consecutive differences it rests on.
    pub differences: usize,
    /// Borrowed from the whole fleet (the class had too few).
    pub fleet_wide: bool,
}

/// |ln(b / a)| of each pair of consecutive values.
pub fn log_differences(values: &[f64]) -> impl Iterator<Item = f64> + '_ {
    values.windows(2).map(|w| (w[1] / w[0]).ln().abs()).filter(|d| d.is_finite())
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    measure::summary::quantile(sorted, q)
}

impl Noise {
    /// From pooled |log ratio| differences; `None` with fewer than [`MIN_DIFFERENCES`].
    pub fn from_differences(mut d: Vec<f64>, fleet_wide: bool) -> Option<Self> {
        if d.len() < MIN_DIFFERENCES {
            return None;
        }
        d.sort_by(f64::total_cmp);
        let p95 = quantile(&d, 0.95);
        let median = quantile(&d, 0.5);
        Some(Self {
            min_effect: p95.exp() - 1.0,
            sigma: (median / MEDIAN_ABS_DIFFERENCE_PER_SIGMA).exp() - 1.0,
            differences: d.len(),
            fleet_wide,
        })
    }
}

/// The noise of every figure in every class.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NoiseTable {
    /// `[class][figure]`.
    by_class: Vec<Vec<Option<Noise>>>,
}

impl NoiseTable {
    pub fn calibrate(fleet: &Fleet) -> Self {
        let (classes, figures) = (fleet.classes.len(), fleet.figures.len());
        let mut pools: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); figures]; classes];
        for s in &fleet.series {
            let class = fleet.hosts[s.host].class;
            pools[class][s.figure].extend(log_differences(&s.values));
        }
        let fleet_wide: Vec<Option<Noise>> = (0..figures)
            .map(|f| {
                let all: Vec<f64> = pools.iter().flat_map(|c| c[f].iter().copied()).collect();
                Noise::from_differences(all, true)
            })
            .collect();
        let by_class = pools
            .into_iter()
            .map(|class| {
                class
                    .into_iter()
                    .enumerate()
                    .map(|(f, d)| Noise::from_differences(d, false).or(fleet_wide[f]))
                    .collect()
            })
            .collect();
        Self { by_class }
    }

    /// The noise of `figure` in `class`.
    pub fn get(&self, class: usize, figure: usize) -> Option<Noise> {
        self.by_class.get(class)?.get(figure).copied().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shift_moves_the_calibration_little_and_noise_sets_it() {
        // ±1 % alternation: every difference about 2 %.
        let quiet: Vec<f64> = (0..40).map(|i| if i % 2 == 0 { 100.0 } else { 102.0 }).collect();
        let d: Vec<f64> = log_differences(&quiet).collect();
        let noise = Noise::from_differences(d, false).expect("enough");
        assert!((noise.min_effect - 0.02).abs() < 1e-9, "{noise:?}");
        // One 30 % step among them is one difference in 40: the 95th percentile stays.
        let mut shifted = quiet.clone();
        for v in &mut shifted[20..] {
            *v *= 1.3;
        }
        let d: Vec<f64> = log_differences(&shifted).collect();
        let with_shift = Noise::from_differences(d, false).expect("enough");
        assert!(with_shift.min_effect < 0.05, "{with_shift:?}");
        assert!(Noise::from_differences(vec![0.1; MIN_DIFFERENCES - 1], false).is_none());
    }
}
