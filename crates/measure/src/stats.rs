//! The statistics the verdicts and the fleet share: Student's t distribution (through
//! `statrs`, a maintained crate), Welch's interval on log ratios, Holm's step-down adjustment,
//! the Mann–Whitney U rank test, and the workspace's one median, quantiles, MAD and normal
//! draw.
//!
//! The rank test is written here, not taken from a crate. `statrs` 0.19 (a dependency already,
//! for Student's t) has `stats_tests::mannwhitneyu`, but its exact p-value enumerates every
//! choice of ranks, and its automatic method takes that path whenever one side has 8 samples or
//! fewer: a host's 5 recent runs against a class's 1,000 would be C(1005, 5) ≈ 8·10¹² subsets,
//! where the recurrence here fills an n × m × nm table. It also refuses the exact method on
//! ties and compares every pair of values before ranking. The fleet's and the older verdicts'
//! small samples (5 against 5) need the exact distribution and its smallest reachable p-value
//! ([`smallest_p`]).

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use crate::rng::SplitMix64;
use crate::summary::quantile;

/// Degrees of freedom above which Student's t is taken as the normal distribution.
const NORMAL_DF: f64 = 1e6;

/// P(T > t) for Student's t with `df` degrees of freedom (the normal when `df` is infinite or
/// very large). NaN when `df` is not positive.
pub fn t_upper_tail(t: f64, df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 || t.is_nan() {
        return f64::NAN;
    }
    if df > NORMAL_DF {
        return Normal::standard().sf(t);
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => dist.sf(t),
        Err(_) => f64::NAN,
    }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (the normal's when `df` is
/// infinite or very large).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if df > NORMAL_DF {
        return Normal::standard().inverse_cdf(p);
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => dist.inverse_cdf(p),
        Err(_) => f64::NAN,
    }
}

/// Holm's step-down adjustment of `p_values` (one family of tests): each adjusted p-value is
/// the largest over the smaller ones of `(k − rank) · p`, capped at 1, so rejecting those below
/// α keeps the chance of any false rejection in the family at most α. NaN stays NaN and does
/// not count in `k`.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p_values.len()).filter(|&i| !p_values[i].is_nan()).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let k = order.len();
    let mut adjusted = vec![f64::NAN; p_values.len()];
    let mut running = 0.0_f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((k - rank) as f64 * p_values[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// Mean and sample variance (n − 1) of `values`; variance NaN with fewer than two.
pub fn mean_and_variance(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    if values.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, f64::NAN);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var)
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

/// The significance level the rank test is used at (the fleet's outliers).
pub const RANK_ALPHA: f64 = 0.01;

/// Whether `n` samples against `m` can be tested at [`RANK_ALPHA`] at all: [`smallest_p`] is below
/// it. At p < 0.01 that needs, on the smaller side of the two, at least 5 samples against 5,
/// 4 against 6, 3 against 9, or 2 against exactly 19 or 20 (the exact distribution; beyond 20
/// the normal approximation never gets below 0.014 with 2); a single sample is never enough.
pub fn testable(n: usize, m: usize) -> bool {
    smallest_p(n, m) < RANK_ALPHA
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

/// The median of `values` (a copy is sorted); NaN when there are none.
pub fn median(values: &[f64]) -> f64 {
    median_in_place(&mut values.to_vec())
}

/// The median of the finite values of `values` (a failed round's NaN is no figure); NaN when
/// there are none.
pub fn finite_median(values: &[f64]) -> f64 {
    median_in_place(&mut values.iter().copied().filter(|v| v.is_finite()).collect::<Vec<_>>())
}

/// The median of `values`, sorting them in place; NaN when there are none.
pub fn median_in_place(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    quantile(values, 0.5)
}

/// The values at quantiles `qs` (each 0..=1) of `values`, sorted once, interpolating between
/// neighbours as [`crate::summary::quantile`] does; NaN each when there are none.
pub fn quantiles<const N: usize>(values: &[f64], qs: [f64; N]) -> [f64; N] {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    qs.map(|q| quantile(&sorted, q))
}

/// 1 / Φ⁻¹(3/4): the median absolute deviation times this estimates a normal distribution's
/// standard deviation, and one odd value does not sway it.
pub const MAD_TO_SIGMA: f64 = 1.4826;

/// The median absolute deviation of `values` from `center` (unscaled; times [`MAD_TO_SIGMA`]
/// for a standard deviation); NaN when there are none.
pub fn mad(values: &[f64], center: f64) -> f64 {
    let mut deviations: Vec<f64> = values.iter().map(|v| (v - center).abs()).collect();
    median_in_place(&mut deviations)
}

/// One draw of a standard normal variable from `rng` (Box–Muller, its cosine half).
pub fn normal(rng: &mut SplitMix64) -> f64 {
    let u = rng.unit().max(f64::MIN_POSITIVE);
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * rng.unit()).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_quantiles_and_mad() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        // A failed round's NaN is left out, not sorted to an end.
        assert_eq!(finite_median(&[3.0, 1.0, 2.0, f64::NAN]), 2.0);
        assert!(finite_median(&[f64::NAN, f64::INFINITY]).is_nan());
        assert_eq!(quantiles(&[4.0, 1.0, 3.0, 2.0, 5.0], [0.0, 0.5, 1.0]), [1.0, 3.0, 5.0]);
        assert_eq!(mad(&[1.0, 2.0, 3.0, 4.0, 100.0], 3.0), 1.0);
    }

    #[test]
    fn student_t_matches_the_tables() {
        // Two-sided 95%: 12.706 at 1 df, 2.776 at 4, 2.228 at 10, 1.960 for the normal.
        for (df, t) in [(1.0, 12.706), (4.0, 2.776), (10.0, 2.228), (f64::INFINITY, 1.960)] {
            assert!((t_quantile(0.975, df) - t).abs() < 2e-3, "{df}: {}", t_quantile(0.975, df));
            assert!((t_upper_tail(t, df) - 0.025).abs() < 1e-4, "{df}");
        }
        assert!(t_quantile(0.5, 3.0).abs() < 1e-9);
        assert!(t_upper_tail(1.0, 0.0).is_nan());
    }

    #[test]
    fn holm_adjusts_step_down() {
        // k = 4: 0.01·4, 0.02·3, 0.03·2 (monotone: max with the one before), 0.5·1.
        let adjusted = holm(&[0.03, 0.5, 0.01, 0.02]);
        let expected = [0.06, 0.5, 0.04, 0.06];
        for (a, e) in adjusted.iter().zip(expected) {
            assert!((a - e).abs() < 1e-12, "{adjusted:?}");
        }
        // NaN is left out of the family.
        let adjusted = holm(&[0.01, f64::NAN]);
        assert!((adjusted[0] - 0.01).abs() < 1e-12 && adjusted[1].is_nan());
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn mean_and_variance_are_the_sample_ones() {
        let (m, v) = mean_and_variance(&[1.0, 2.0, 3.0, 4.0]);
        assert!((m - 2.5).abs() < 1e-12 && (v - 5.0 / 3.0).abs() < 1e-12);
        assert!(mean_and_variance(&[1.0]).1.is_nan());
    }

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
}
