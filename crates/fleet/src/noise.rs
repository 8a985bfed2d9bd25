//! How much a figure moves on a host that did not change: the minimum effect of an outlier
//! and the smallest shift worth calling, calibrated from the hosts' own histories, never a
//! fixed percentage.
//!
//! `report --baseline` takes the largest difference of a figure between two earlier reports of
//! one host: as far apart as two values of the kind compared come when nothing changed. A
//! fleet's histories are long, and their largest difference is a shift as often as noise, so
//! here each host's history is cut into what is compared and the differences of all hosts of a
//! class are pooled (a shift makes one difference, noise makes all of them):
//!
//! - the **minimum effect** of an outlier is the 95th percentile of the relative differences
//!   between a host's consecutive values as outliers are judged — medians of
//!   [`LATEST_RUNS`] runs, the history cut into such blocks from its newest run back — so as
//!   far apart as a host's value comes from itself a block earlier, leaving out the rare shift.
//!   Hosts with too short a history for two blocks give consecutive runs instead (larger
//!   differences: a stricter test);
//! - the **noise** is the median relative difference of consecutive runs scaled to one run's
//!   standard deviation (the median of |a − b| for two normal draws is 0.954 σ): a shift
//!   smaller than that is not called.
//!
//! Differences are taken between runs with no change found between them (each series is cut
//! at its change points first). A class with too few differences borrows the figure's pool over the whole fleet; with none
//! at all, the figure is not calibrated and its outliers are not tested.

use measure::stats::{median, median_in_place};

use crate::edivisive::Split;
use crate::series::Fleet;

/// How many of a host's latest runs its value is the median of ([`crate::outliers`] judges
/// that value, so the noise is calibrated on medians of as many runs).
pub const LATEST_RUNS: usize = 5;

/// The fewest differences a calibration rests on.
pub const MIN_DIFFERENCES: usize = 10;

/// The median of |a − b| over σ for a and b drawn from one normal distribution (√2 · 0.6745).
const MEDIAN_ABS_DIFFERENCE_PER_SIGMA: f64 = 0.953_872;

/// A figure's noise, as relative differences.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// The 95th percentile of |ratio − 1| between consecutive values as outliers are judged.
    pub min_effect: f64,
    /// One run's relative standard deviation.
    pub sigma: f64,
    /// How many differences the minimum effect rests on.
    pub differences: usize,
    /// Borrowed from the whole fleet (the class had too few).
    pub fleet_wide: bool,
}

/// |ln(b / a)| of each pair of consecutive values.
pub fn log_differences(values: &[f64]) -> impl Iterator<Item = f64> + '_ {
    values.windows(2).map(|w| (w[1] / w[0]).ln().abs()).filter(|d| d.is_finite())
}

/// |ln(b / a)| of consecutive medians of [`LATEST_RUNS`] runs, the blocks cut from the newest
/// run back (an incomplete oldest block is left out).
pub fn block_differences(values: &[f64]) -> Vec<f64> {
    let mut medians: Vec<f64> = values.rchunks_exact(LATEST_RUNS).map(median).collect();
    medians.reverse();
    log_differences(&medians).collect()
}

/// The differences of one (class, figure) or of a figure over the fleet.
#[derive(Debug, Clone, Default)]
struct Pool {
    runs: Vec<f64>,
    blocks: Vec<f64>,
}

impl Pool {
    fn noise(mut self, fleet_wide: bool) -> Option<Noise> {
        let sigma_of = |runs: &mut Vec<f64>| {
            (median_in_place(runs) / MEDIAN_ABS_DIFFERENCE_PER_SIGMA).exp() - 1.0
        };
        let p95 = |d: &mut Vec<f64>| {
            d.sort_by(f64::total_cmp);
            measure::summary::quantile(d, 0.95).exp() - 1.0
        };
        if self.runs.len() < MIN_DIFFERENCES {
            return None;
        }
        let sigma = sigma_of(&mut self.runs);
        let (min_effect, differences) = if self.blocks.len() >= MIN_DIFFERENCES {
            (p95(&mut self.blocks), self.blocks.len())
        } else {
            (p95(&mut self.runs), self.runs.len())
        };
        Some(Noise { min_effect, sigma, differences, fleet_wide })
    }
}

impl Noise {
    /// From one series alone (a host whose class and fleet have too little history); `None`
    /// with fewer than [`MIN_DIFFERENCES`] consecutive runs.
    pub fn of_series(values: &[f64]) -> Option<Self> {
        Pool { runs: log_differences(values).collect(), blocks: block_differences(values) }
            .noise(false)
    }
}

/// The noise of every figure in every class.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NoiseTable {
    /// `[class][figure]`.
    by_class: Vec<Vec<Option<Noise>>>,
}

impl NoiseTable {
    /// The noise of every (class, figure) from the series of `fleet`, each cut at its splits
    /// (`splits[i]` the first values after each change of series `i`): no difference spans a
    /// change the analysis found.
    pub fn calibrate(fleet: &Fleet, splits: &[Vec<Split>]) -> Self {
        let (classes, figures) = (fleet.classes.len(), fleet.figures.len());
        let mut pools: Vec<Vec<Pool>> = vec![vec![Pool::default(); figures]; classes];
        for (s, found) in fleet.series.iter().zip(splits) {
            let pool = &mut pools[fleet.hosts[s.host].class][s.figure];
            let mut start = 0;
            for end in found.iter().map(|f| f.index).chain([s.values.len()]) {
                let segment = &s.values[start..end];
                pool.runs.extend(log_differences(segment));
                pool.blocks.extend(block_differences(segment));
                start = end;
            }
        }
        let fleet_wide: Vec<Option<Noise>> = (0..figures)
            .map(|f| {
                let mut all = Pool::default();
                for class in &pools {
                    all.runs.extend_from_slice(&class[f].runs);
                    all.blocks.extend_from_slice(&class[f].blocks);
                }
                all.noise(true)
            })
            .collect();
        let by_class = pools
            .into_iter()
            .map(|class| {
                class
                    .into_iter()
                    .enumerate()
                    .map(|(f, pool)| pool.noise(false).or(fleet_wide[f]))
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
        // ±1 % alternation: every consecutive run about 2 % apart, every block median alike.
        let quiet: Vec<f64> = (0..40).map(|i| if i % 2 == 0 { 100.0 } else { 102.0 }).collect();
        let noise = Noise::of_series(&quiet).expect("enough");
        assert!(
            (noise.sigma - ((0.02f64.ln_1p() / 0.953_872).exp() - 1.0)).abs() < 1e-3,
            "{noise:?}"
        );
        // Eight blocks of five: fewer than ten differences, so consecutive runs set it.
        assert_eq!(noise.differences, 39);
        assert!((noise.min_effect - 0.02).abs() < 1e-9, "{noise:?}");
        // One 30 % step among 39 differences: the 95th percentile stays.
        let mut shifted = quiet.clone();
        for v in &mut shifted[20..] {
            *v *= 1.3;
        }
        let with_shift = Noise::of_series(&shifted).expect("enough");
        assert!(with_shift.min_effect < 0.05, "{with_shift:?}");
        assert!(Noise::of_series(&quiet[..MIN_DIFFERENCES]).is_none());
    }

    #[test]
    fn blocks_are_cut_from_the_newest_run_back() {
        let values: Vec<f64> = (1..=12).map(f64::from).collect();
        // Blocks 3..=7 and 8..=12 (1 and 2 left over): medians 5 and 10.
        let d = block_differences(&values);
        assert_eq!(d.len(), 1);
        assert!((d[0] - 2f64.ln()).abs() < 1e-12);
        // With long histories the blocks set the minimum effect: medians of five move less
        // than single runs.
        let mut rng = measure::rng::SplitMix64::new(9);
        let noisy: Vec<f64> = (0..200).map(|_| 100.0 * (1.0 + 0.05 * (rng.unit() - 0.5))).collect();
        let noise = Noise::of_series(&noisy).expect("enough");
        assert_eq!(noise.differences, 39);
        let runs_p95 = {
            let mut d: Vec<f64> = log_differences(&noisy).collect();
            d.sort_by(f64::total_cmp);
            measure::summary::quantile(&d, 0.95).exp() - 1.0
        };
        assert!(noise.min_effect < runs_p95, "{} vs {runs_p95}", noise.min_effect);
    }
}
