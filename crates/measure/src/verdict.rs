//! Whether one machine (or run) is faster than another on a figure, said only when the stored
//! samples support it: `faster`, `slower` or `same` — or `untested` when there are too few
//! samples for the test to say anything, or `placement differs` when the two runs were taken
//! with the CPUs in different places ([`crate::placement::differs`]), where a difference says
//! nothing about the machine.
//!
//! The method (docs/comparing.md says why):
//!
//! 1. **Minimum effect.** The ratio of medians must differ from 1 by more than a minimum
//!    effect. Samples taken inside one run share one buffer's physical pages, one placement and
//!    one boot, so their spread is far smaller than the difference between two runs of the same
//!    machine minutes apart; a test on them alone would call that difference real. The minimum
//!    effect is the run-to-run noise, calibrated from repeated quiet runs of the same host
//!    ([`MIN_EFFECT`]) — a difference below it is `same` whatever the test says.
//! 2. **Mann–Whitney U.** Beyond the minimum effect, the two sample sets must also differ by a
//!    two-sided Mann–Whitney U test at [`ALPHA`] (exact distribution up to 20 samples a side,
//!    the normal approximation with tie correction above), so a large but noisy difference on a
//!    few samples stays `same`.
//! 3. **Enough samples.** With few samples the test cannot reach [`ALPHA`] however far apart
//!    they are: 3 against 3 fully separated samples give p = 0.1 at best, one against one
//!    p = 1. Such a figure is `untested`, never `same` ([`testable`] decides from the two
//!    sample counts alone, [`smallest_p`] says why).
//!
//! ```
//! use measure::verdict::{judge, Verdict};
//!
//! let this = [80.0, 81.0, 79.5, 80.2, 80.8];
//! let baseline = [100.0, 101.0, 99.0, 100.5, 99.8];
//! // Latency: lower is better, 20% lower beyond noise.
//! let j = judge(&this, &baseline, true, 0.10);
//! assert_eq!(j.verdict, Verdict::Faster);
//! assert!((j.ratio - 0.80).abs() < 0.01);
//! ```

use serde::{Deserialize, Serialize};

use crate::summary::quantile;

/// Significance level of the Mann–Whitney U test (two-sided).
pub const ALPHA: f64 = 0.01;

/// The default minimum effect (relative difference of medians): the largest run-to-run
/// difference seen between repeated quiet runs of the memory figures on one host, rounded up
/// (docs/comparing.md has the runs).
pub const MIN_EFFECT: f64 = 0.10;

/// The answer for one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Faster,
    Slower,
    Same,
    /// Too few samples on one side or both for the test to reach [`ALPHA`]: nothing was said.
    Untested,
    /// The figure depends on where the CPUs sit and the two runs were taken in different
    /// placements ([`crate::placement::differs`]): nothing was said.
    #[serde(rename = "placement-differs")]
    PlacementDiffers,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Same => "same",
            Verdict::Untested => "untested",
            Verdict::PlacementDiffers => "placement differs",
        }
    }

    /// The name as one token (`placement-differs`), for a CSS class or a JSON value.
    pub fn slug(self) -> &'static str {
        match self {
            Verdict::PlacementDiffers => "placement-differs",
            other => other.name(),
        }
    }

    /// The verdict in words with, for `untested`, how many samples each side had:
    /// `untested (1 vs 1 samples)`, `first` being the side named first where it is shown.
    pub fn words(self, first: usize, second: usize) -> String {
        match self {
            Verdict::Untested => format!("untested ({first} vs {second} samples)"),
            other => other.name().to_string(),
        }
    }
}

/// A verdict with what it rests on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    /// Median of this run over median of the baseline.
    pub ratio: f64,
    /// Two-sided p-value of the Mann–Whitney U test (1 when it could not run).
    pub p_value: f64,
    pub verdict: Verdict,
    /// How many samples (finite ones) each side had.
    #[serde(default)]
    pub this_samples: usize,
    #[serde(default)]
    pub baseline_samples: usize,
}

fn median(values: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        f64::NAN
    } else {
        quantile(&sorted, 0.5)
    }
}

/// The median of `this` over the median of `baseline` (finite samples only; NaN when either
/// has none).
pub fn ratio_of_medians(this: &[f64], baseline: &[f64]) -> f64 {
    median(this) / median(baseline)
}

fn finite_count(values: &[f64]) -> usize {
    values.iter().filter(|v| v.is_finite()).count()
}

/// Judges `this` against `baseline` for a figure where smaller is better (`lower_is_better`,
/// e.g. latency) or larger is (bandwidth), with the minimum relative effect `min_effect`.
/// `untested` when the sample counts cannot reach [`ALPHA`] ([`testable`]), whatever the
/// ratio.
pub fn judge(this: &[f64], baseline: &[f64], lower_is_better: bool, min_effect: f64) -> Judgement {
    let ratio = ratio_of_medians(this, baseline);
    let p_value = mann_whitney_p(this, baseline);
    let (this_samples, baseline_samples) = (finite_count(this), finite_count(baseline));
    let beyond_effect = ratio.is_finite() && (ratio - 1.0).abs() > min_effect;
    let verdict = if !testable(this_samples, baseline_samples) {
        Verdict::Untested
    } else if beyond_effect && p_value < ALPHA {
        let this_is_smaller = ratio < 1.0;
        if this_is_smaller == lower_is_better {
            Verdict::Faster
        } else {
            Verdict::Slower
        }
    } else {
        Verdict::Same
    };
    Judgement { ratio, p_value, verdict, this_samples, baseline_samples }
}

/// The smallest two-sided p-value [`mann_whitney_p`] can give for `n` samples against `m`, all
/// distinct: that of two fully separated sets (U = 0), through the same branch the test takes
/// (exact up to 20 a side: 2 / C(n + m, n); the normal approximation above). 1 when either side
/// is empty.
///
/// Ties can take the normal approximation a little lower on the same counts (a set of equal
/// values has a smaller variance); [`testable`] goes by this tie-free bound, so a figure's ties
/// never turn too few samples into a verdict.
pub fn smallest_p(n: usize, m: usize) -> f64 {
    if n == 0 || m == 0 {
        return 1.0;
    }
    p_of_u(0.0, n, m, 0.0)
}

/// Whether `n` samples against `m` can be tested at [`ALPHA`] at all: [`smallest_p`] is below
/// it. At p < 0.01 that needs, on the smaller side of the two, at least 5 samples against 5,
/// 4 against 6, 3 against 9, or 2 against exactly 19 or 20 (the exact distribution; beyond 20
/// the normal approximation never gets below 0.014 with 2); a single sample is never enough.
pub fn testable(n: usize, m: usize) -> bool {
    smallest_p(n, m) < ALPHA
}

/// Two-sided p-value of the Mann–Whitney U test of `a` against `b` (1 when either is empty).
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let a: Vec<f64> = a.iter().copied().filter(|v| v.is_finite()).collect();
    let b: Vec<f64> = b.iter().copied().filter(|v| v.is_finite()).collect();
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 {
        return 1.0;
    }
    // Ranks over the pooled samples, ties given their average rank.
    let mut pooled: Vec<(f64, bool)> =
        a.iter().map(|&v| (v, true)).chain(b.iter().map(|&v| (v, false))).collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i;
        while j + 1 < pooled.len() && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        rank_sum_a += rank * pooled[i..=j].iter().filter(|p| p.1).count() as f64;
        i = j + 1;
    }
    let nf = n as f64;
    let u = rank_sum_a - nf * (nf + 1.0) / 2.0;
    p_of_u(u, n, m, tie_term)
}

/// The two-sided p-value of the statistic `u` for `n` samples against `m` with the ties' term
/// `tie_term` (the sum of t³ − t over groups of t equal values): exact up to 20 a side without
/// ties, the normal approximation otherwise.
fn p_of_u(u: f64, n: usize, m: usize, tie_term: f64) -> f64 {
    let (nf, mf) = (n as f64, m as f64);
    if n <= 20 && m <= 20 && tie_term == 0.0 {
        return exact_p(u.round() as usize, n, m);
    }
    let mean = nf * mf / 2.0;
    let total = nf + mf;
    let var = nf * mf / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    // Continuity correction towards the mean.
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_upper_tail(z)).min(1.0)
}

/// Exact two-sided p-value: the share of rank arrangements whose U is at least as far from the
/// mean as `u`, counted by the recurrence on (n, m).
fn exact_p(u: usize, n: usize, m: usize) -> f64 {
    // table[i][j][u]: orderings of i values of A and j of B whose statistic is u, by
    // f(i, j, u) = f(i-1, j, u-j) + f(i, j-1, u) (the largest value is from A or from B).
    let max_u = n * m;
    let mut table = vec![vec![vec![0f64; max_u + 1]; m + 1]; n + 1];
    for row in &mut table[0] {
        row[0] = 1.0;
    }
    for i in 1..=n {
        table[i][0][0] = 1.0;
        for j in 1..=m {
            for uu in 0..=i * j {
                let from_a = if uu >= j { table[i - 1][j][uu - j] } else { 0.0 };
                let from_b = if uu <= i * (j - 1) { table[i][j - 1][uu] } else { 0.0 };
                table[i][j][uu] = from_a + from_b;
            }
        }
    }
    let dist = &table[n][m];
    let total: f64 = dist.iter().sum();
    let mean = max_u as f64 / 2.0;
    let distance = (u as f64 - mean).abs();
    let tail: f64 = dist
        .iter()
        .enumerate()
        .filter(|(k, _)| (*k as f64 - mean).abs() >= distance - 1e-9)
        .map(|(_, c)| c)
        .sum();
    (tail / total).min(1.0)
}

/// P(Z > z) for a standard normal Z (Abramowitz and Stegun 7.1.26 through erfc).
fn normal_upper_tail(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    // Numerical Recipes' erfcc: fractional error below 1.2e-7 everywhere.
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_p_matches_the_tables() {
        // n = m = 5, complete separation: U = 0, two-sided p = 2/252.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        assert!((mann_whitney_p(&a, &b) - 2.0 / 252.0).abs() < 1e-12);
        // n = m = 3 fully separated: 2/20.
        assert!((mann_whitney_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]) - 0.1).abs() < 1e-12);
        // Interleaved samples: no evidence.
        assert!(mann_whitney_p(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0]) > 0.5);
    }

    #[test]
    fn normal_approximation_agrees_with_known_values() {
        assert!((normal_upper_tail(1.959_963_985) - 0.025).abs() < 1e-6);
        assert!((normal_upper_tail(0.0) - 0.5).abs() < 1e-7);
        // 30 against 30, fully separated: p is tiny; the same distribution: p is large.
        let a: Vec<f64> = (0..30).map(f64::from).collect();
        let b: Vec<f64> = (100..130).map(f64::from).collect();
        assert!(mann_whitney_p(&a, &b) < 1e-9);
        let c: Vec<f64> = (0..30).map(|i| f64::from(i) + 0.5).collect();
        assert!(mann_whitney_p(&a, &c) > 0.5);
    }

    #[test]
    fn ties_are_handled() {
        let a = [5.0; 25];
        let b = [5.0; 25];
        assert_eq!(mann_whitney_p(&a, &b), 1.0);
        let mut c = vec![5.0; 25];
        c.extend([9.0; 25]);
        assert!(mann_whitney_p(&[5.0; 50], &c) < 1e-6);
    }

    /// A deterministic "noisy" series around `centre` with relative spread `spread`.
    fn around(centre: f64, spread: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let u = (x >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
                centre * (1.0 + spread * (2.0 * u - 1.0))
            })
            .collect()
    }

    #[test]
    fn known_answers() {
        // Bandwidth halved (a burner on the other CPU): slower, ratio 0.5.
        let quiet = around(27.0, 0.03, 20, 1);
        let loaded = around(13.5, 0.05, 20, 2);
        let j = judge(&loaded, &quiet, false, MIN_EFFECT);
        assert_eq!(j.verdict, Verdict::Slower);
        assert!((j.ratio - 0.5).abs() < 0.03, "{j:?}");
        // The other way round: faster.
        assert_eq!(judge(&quiet, &loaded, false, MIN_EFFECT).verdict, Verdict::Faster);
        // Latency 6% apart with tight within-run samples (two quiet runs of one machine):
        // the test alone would call it, the minimum effect keeps it `same`.
        let run1 = around(96.4, 0.005, 40, 3);
        let run2 = around(102.0, 0.005, 40, 4);
        assert!(mann_whitney_p(&run1, &run2) < ALPHA);
        assert_eq!(judge(&run1, &run2, true, MIN_EFFECT).verdict, Verdict::Same);
        // A large difference on three noisy samples each: too few samples for the test to say
        // anything (3 against 3 give p = 0.1 at best), `untested`.
        let j = judge(&[50.0, 150.0, 90.0], &[100.0, 160.0, 140.0], true, MIN_EFFECT);
        assert_eq!(j.verdict, Verdict::Untested);
        // The same on enough samples but noisy: not enough evidence, `same`.
        let j = judge(
            &[50.0, 150.0, 90.0, 120.0, 135.0, 60.0],
            &[100.0, 160.0, 140.0, 80.0, 155.0, 110.0],
            true,
            MIN_EFFECT,
        );
        assert!(j.p_value >= ALPHA, "{j:?}");
        assert_eq!(j.verdict, Verdict::Same);
        // Identical samples: same, ratio 1.
        let j = judge(&quiet, &quiet, false, MIN_EFFECT);
        assert_eq!((j.verdict, j.ratio), (Verdict::Same, 1.0));
        // Nothing to compare: untested, ratio not a number.
        let j = judge(&[], &quiet, false, MIN_EFFECT);
        assert_eq!(j.verdict, Verdict::Untested);
        assert_eq!((j.this_samples, j.baseline_samples), (0, 20));
        assert!(j.ratio.is_nan());
    }

    /// Every way of interleaving `n` distinct values of A with `m` of B (A's ranks as a bit
    /// mask over the pooled order), the smallest p-value the test gives.
    fn smallest_over_every_arrangement(n: usize, m: usize) -> f64 {
        let total = n + m;
        let mut smallest = f64::INFINITY;
        for mask in 0u64..(1 << total) {
            if mask.count_ones() as usize != n {
                continue;
            }
            let (a, b): (Vec<usize>, Vec<usize>) = (0..total).partition(|i| mask >> i & 1 == 1);
            let as_f64 = |v: Vec<usize>| v.into_iter().map(|i| i as f64).collect::<Vec<f64>>();
            smallest = smallest.min(mann_whitney_p(&as_f64(a), &as_f64(b)));
        }
        smallest
    }

    fn binomial(n: usize, k: usize) -> f64 {
        (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
    }

    #[test]
    fn smallest_p_is_the_smallest_the_test_gives() {
        // Through every arrangement of distinct samples, exact branch and normal branch.
        let mut sizes: Vec<(usize, usize)> =
            (1..=7).flat_map(|n| (1..=7).map(move |m| (n, m))).collect();
        sizes.extend([(1, 21), (2, 21), (3, 21), (21, 2)]);
        for (n, m) in sizes {
            let seen = smallest_over_every_arrangement(n, m);
            assert!((seen - smallest_p(n, m)).abs() < 1e-12, "{n} vs {m}: {seen}");
        }
        // The exact branch in closed form: two of C(n + m, n) orderings are as extreme.
        for n in 1..=20 {
            for m in 1..=20 {
                let closed = (2.0 / binomial(n + m, n)).min(1.0);
                assert!((smallest_p(n, m) - closed).abs() < 1e-12, "{n} vs {m}");
            }
        }
        assert_eq!(smallest_p(0, 5), 1.0);
        assert_eq!(smallest_p(1, 1), 1.0);
        assert!((smallest_p(5, 5) - 2.0 / 252.0).abs() < 1e-15);
        assert!((smallest_p(4, 4) - 2.0 / 70.0).abs() < 1e-15);
    }

    #[test]
    fn the_fewest_samples_that_can_be_tested() {
        // At p < 0.01, by the smaller of the two counts: 1 never; 2 only against 19 or 20 (2 of
        // 210 and 231 orderings; beyond 20 the normal approximation, which never goes below
        // 2·P(Z > √6) ≈ 0.014 with 2); 3 against at least 9 (2/220; 2/165 at 8); 4 against at
        // least 6 (2/210; 2/126 at 5); 5 and more always (2/252 at 5 against 5).
        let expected = |n: usize, m: usize| {
            let (small, large) = (n.min(m), n.max(m));
            match small {
                0 | 1 => false,
                2 => (19..=20).contains(&large),
                3 => large >= 9,
                4 => large >= 6,
                _ => true,
            }
        };
        for n in 0..=80 {
            for m in 0..=80 {
                assert_eq!(testable(n, m), expected(n, m), "{n} vs {m}: {}", smallest_p(n, m));
            }
        }
        for large in [100, 1_000, 100_000] {
            assert!(!testable(1, large) && !testable(2, large), "{large}");
            assert!(smallest_p(2, large) > 0.0143, "{}", smallest_p(2, large));
            assert!(testable(3, large) && testable(4, large), "{large}");
        }
    }

    #[test]
    fn too_few_samples_are_untested_never_same() {
        // One sample a side, twice as fast: untested, with the counts.
        let j = judge(&[50.0], &[100.0], true, MIN_EFFECT);
        assert_eq!((j.verdict, j.this_samples, j.baseline_samples), (Verdict::Untested, 1, 1));
        assert_eq!(
            j.verdict.words(j.this_samples, j.baseline_samples),
            "untested (1 vs 1 samples)"
        );
        // The same figure on one sample each: untested too, not `same`.
        assert_eq!(judge(&[100.0], &[100.0], true, MIN_EFFECT).verdict, Verdict::Untested);
        // Four against four, fully separated and 2x apart: p = 2/70 at best, untested.
        let fast = [50.0, 51.0, 52.0, 53.0, 54.0];
        let slow = [100.0, 101.0, 102.0, 103.0, 104.0];
        assert_eq!(judge(&fast[..4], &slow[..4], true, MIN_EFFECT).verdict, Verdict::Untested);
        // Five against five: p = 2/252 < 0.01, faster.
        assert_eq!(judge(&fast, &slow, true, MIN_EFFECT).verdict, Verdict::Faster);
        // Non-finite samples do not count: five values, one of them NaN, are four.
        let with_nan = [50.0, 51.0, 52.0, 53.0, f64::NAN];
        let j = judge(&with_nan, &slow, true, MIN_EFFECT);
        assert_eq!((j.verdict, j.this_samples), (Verdict::Untested, 4));
        // Ties take the normal approximation below 0.01 on four against five equal values; the
        // counts still decide: untested.
        let (a, b) = ([10.0; 4], [20.0; 5]);
        assert!(mann_whitney_p(&a, &b) < ALPHA);
        assert_eq!(judge(&a, &b, true, MIN_EFFECT).verdict, Verdict::Untested);
        // The other verdicts read as their names.
        assert_eq!(Verdict::Same.words(9, 9), "same");
        assert_eq!(Verdict::PlacementDiffers.words(20, 20), "placement differs");
        assert_eq!(
            serde_json::to_value(Verdict::PlacementDiffers).ok(),
            Some(serde_json::json!("placement-differs"))
        );
        assert_eq!(Verdict::PlacementDiffers.slug(), "placement-differs");
    }
}
