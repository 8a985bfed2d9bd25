//! The verdicts: B against A on each headline figure, with the ratio's interval, by the one
//! engine every comparison of platscope uses ([`measure::verdict`]). Each run of the workload
//! is a fresh process, so the replicates are runs ([`Level::Runs`]) and no run-to-run noise is
//! assumed on top; the figures of one A/B are one family (Holm across them). When the interval
//! is looked at more than once ([`crate::plan::looks`]), each look tests at α / looks and its
//! interval has coverage 1 − 0.05 / looks, so stopping early keeps the error rate.

use measure::stats::{finite_median, mean_and_variance, t_quantile};
use measure::verdict::{
    assess, judge_family, Judgement, Level, RunNoise, Verdict, ALPHA, CONFIDENCE,
};
use serde::{Deserialize, Serialize};

/// A figure of the workload: what it is called, the stored metric behind it and its unit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FigureInfo {
    /// As the workload's page names it (`Idle DRAM latency`), or the metric's key when the
    /// workload names no headline figures.
    pub figure: String,
    /// The stored metric's key (`mem_latency{size=1.0 GiB}`).
    pub metric: String,
    /// The unit's symbol (`ns`, `GB/s`, `s`).
    pub unit: String,
}

impl FigureInfo {
    /// Whether a smaller value is better (latency, time) by its unit.
    pub fn lower_is_better(&self) -> bool {
        measure::Unit::from_symbol(&self.unit).is_some_and(measure::Unit::lower_is_better)
    }
}

/// One figure's verdict: B against A.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureVerdict {
    pub figure: String,
    pub metric: String,
    pub unit: String,
    /// Median over A's runs, and over B's.
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub a: f64,
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub b: f64,
    /// B's geometric mean over A's, and its interval.
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub ratio: f64,
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub ratio_low: f64,
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub ratio_high: f64,
    /// `faster`, `slower`, `same` or `untested`: B against A.
    pub verdict: Verdict,
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub p_value: f64,
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub adjusted_p: f64,
    /// The smallest change this spread would have let the verdict call (0.05: 5%).
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub detectable: f64,
    pub a_runs: usize,
    pub b_runs: usize,
    /// "10 runs each".
    pub rests_on: String,
    /// The interval's coverage (0.95 with one look, higher with more).
    pub coverage: f64,
}

/// Widens a judgement to one of `looks` looks: its p-value times the looks (Bonferroni), its
/// interval at coverage 1 − (1 − [`CONFIDENCE`]) / looks.
fn at_one_of(j: &mut Judgement, looks: usize) {
    if looks <= 1 || !j.tested() || j.log_se <= 0.0 {
        return;
    }
    let looks = looks as f64;
    j.p_value = (j.p_value * looks).min(1.0);
    let half = t_quantile(1.0 - (1.0 - CONFIDENCE) / (2.0 * looks), j.df) * j.log_se;
    let d = j.ratio.ln();
    j.ratio_low = (d - half).exp();
    j.ratio_high = (d + half).exp();
}

/// Judges every figure, B's values (`b`) against A's (`a`), one family, at one of `looks`
/// looks.
pub fn judge(figures: &[(FigureInfo, Vec<f64>, Vec<f64>)], looks: usize) -> Vec<FigureVerdict> {
    let looks = looks.max(1);
    let mut judged: Vec<Judgement> = figures
        .iter()
        .map(|(_, a, b)| {
            let mut j = assess(b, a, Level::Runs, RunNoise::none());
            at_one_of(&mut j, looks);
            j
        })
        .collect();
    {
        let mut family: Vec<(&mut Judgement, bool)> = judged
            .iter_mut()
            .zip(figures)
            .map(|(j, (info, _, _))| (j, info.lower_is_better()))
            .collect();
        judge_family(&mut family);
    }
    let tested = judged.iter().filter(|j| j.tested()).count().max(1);
    figures
        .iter()
        .zip(judged)
        .map(|((info, a, b), j)| {
            // The family's strictest step, at one of the looks.
            let critical = t_quantile(1.0 - ALPHA / (2.0 * tested as f64 * looks as f64), j.df);
            let detectable = if j.tested() { (critical * j.log_se).exp() - 1.0 } else { f64::NAN };
            FigureVerdict {
                figure: info.figure.clone(),
                metric: info.metric.clone(),
                unit: info.unit.clone(),
                a: finite_median(a),
                b: finite_median(b),
                ratio: j.ratio,
                ratio_low: j.ratio_low,
                ratio_high: j.ratio_high,
                verdict: j.verdict,
                p_value: j.p_value,
                adjusted_p: j.adjusted_p,
                detectable,
                a_runs: j.baseline_replicates,
                b_runs: j.this_replicates,
                rests_on: j.rests_on(),
                coverage: 1.0 - (1.0 - CONFIDENCE) / looks as f64,
            }
        })
        .collect()
}

/// Whether every figure's interval is within ×/÷ (1 + `precision`) of its ratio: the run may
/// stop at this look.
pub fn precise_enough(verdicts: &[FigureVerdict], precision: f64) -> bool {
    !verdicts.is_empty()
        && verdicts.iter().all(|v| {
            v.ratio_low.is_finite()
                && v.ratio_high.is_finite()
                && v.ratio_high / v.ratio - 1.0 <= precision
                && v.ratio / v.ratio_low - 1.0 <= precision
        })
}

/// What the A/A phase found for one figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibratedFigure {
    pub figure: String,
    pub unit: String,
    /// Run-to-run spread: the standard deviation of the runs' logs (0.02: about 2%).
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub spread: f64,
    /// A's second half against its first: ideally 1, with an interval holding 1.
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub ratio: f64,
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub ratio_low: f64,
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub ratio_high: f64,
    /// Should be `same`: A differing from itself says the machine is not steady.
    pub verdict: Verdict,
    /// The smallest change the planned A/B rounds could tell at this spread.
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub expected_detectable: f64,
}

/// The A/A phase: `figures` with the values of A's first and second halves, and the rounds
/// the A/B will run (for what it could tell) at `looks` looks.
pub fn calibrate(
    figures: &[(FigureInfo, Vec<f64>, Vec<f64>)],
    rounds: usize,
    looks: usize,
) -> Vec<CalibratedFigure> {
    let verdicts = judge(figures, 1);
    let tested = figures.len().max(1) as f64;
    figures
        .iter()
        .zip(verdicts)
        .map(|((info, first, second), v)| {
            let logs: Vec<f64> = first
                .iter()
                .chain(second)
                .filter(|x| x.is_finite() && **x > 0.0)
                .map(|x| x.ln())
                .collect();
            let (_, variance) = mean_and_variance(&logs);
            let spread = variance.sqrt();
            let n = rounds.max(2) as f64;
            let critical =
                t_quantile(1.0 - ALPHA / (2.0 * tested * looks.max(1) as f64), 2.0 * n - 2.0);
            CalibratedFigure {
                figure: info.figure.clone(),
                unit: info.unit.clone(),
                spread,
                ratio: v.ratio,
                ratio_low: v.ratio_low,
                ratio_high: v.ratio_high,
                verdict: v.verdict,
                expected_detectable: (critical * spread * (2.0 / n).sqrt()).exp() - 1.0,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use measure::rng::SplitMix64;

    fn info(name: &str, unit: &str) -> FigureInfo {
        FigureInfo { figure: name.into(), metric: name.into(), unit: unit.into() }
    }

    /// Log-normal noise around `centre` with relative spread `sd`.
    fn runs(rng: &mut SplitMix64, centre: f64, sd: f64, n: usize) -> Vec<f64> {
        (0..n).map(|_| centre * (sd * measure::stats::normal(rng)).exp()).collect()
    }

    #[test]
    fn huge_pages_halving_latency_are_faster_and_bandwidth_up_is_faster() {
        let mut rng = SplitMix64::new(7);
        let a = runs(&mut rng, 282.0, 0.03, 6);
        let b = runs(&mut rng, 175.0, 0.03, 6);
        let up_a = runs(&mut rng, 10.0, 0.02, 6);
        let up_b = runs(&mut rng, 12.0, 0.02, 6);
        let v = judge(&[(info("latency", "ns"), a, b), (info("bandwidth", "GB/s"), up_a, up_b)], 1);
        assert_eq!(v[0].verdict, Verdict::Faster, "{:?}", v[0]);
        assert!(v[0].ratio_low < 175.0 / 282.0 && 175.0 / 282.0 < v[0].ratio_high, "{:?}", v[0]);
        assert_eq!(v[1].verdict, Verdict::Faster, "{:?}", v[1]);
        assert_eq!(v[0].rests_on, "6 runs each");
        assert!((v[0].coverage - 0.95).abs() < 1e-12);
    }

    #[test]
    fn more_looks_widen_the_interval_and_raise_the_p_value() {
        let mut rng = SplitMix64::new(3);
        let a = runs(&mut rng, 100.0, 0.05, 10);
        let b = runs(&mut rng, 96.0, 0.05, 10);
        let figures = [(info("x", "ns"), a, b)];
        let one = &judge(&figures, 1)[0];
        let four = &judge(&figures, 4)[0];
        assert!(four.ratio_low < one.ratio_low && four.ratio_high > one.ratio_high);
        assert!((four.p_value - (one.p_value * 4.0).min(1.0)).abs() < 1e-12);
        assert!(four.detectable > one.detectable);
        assert!((four.coverage - 0.9875).abs() < 1e-12);
        assert!((one.ratio - four.ratio).abs() < 1e-12);
    }

    /// The error rate of the early stop, measured: A/A pairs (no true difference) run to 40
    /// rounds with looks at 5, 10, 20 and 40 and a precision most of them reach early; the
    /// share of pairs with any figure called faster or slower stays under α. The same pairs
    /// judged at every round instead (the naive rule) call far more.
    #[test]
    fn stopping_at_the_looks_keeps_the_error_rate() {
        let mut rng = SplitMix64::new(2017);
        let looks = crate::plan::looks(40, true);
        let trials = 400;
        let (mut called, mut naive_called, mut stopped_early) = (0, 0, 0);
        for _ in 0..trials {
            let a = runs(&mut rng, 100.0, 0.04, 40);
            let b = runs(&mut rng, 100.0, 0.04, 40);
            let c = runs(&mut rng, 50.0, 0.02, 40);
            let d = runs(&mut rng, 50.0, 0.02, 40);
            let at = |n: usize, k: usize| {
                judge(
                    &[
                        (info("x", "ns"), a[..n].to_vec(), b[..n].to_vec()),
                        (info("y", "GB/s"), c[..n].to_vec(), d[..n].to_vec()),
                    ],
                    k,
                )
            };
            let call = |v: &[FigureVerdict]| {
                v.iter().any(|f| matches!(f.verdict, Verdict::Faster | Verdict::Slower))
            };
            for &n in &looks {
                let v = at(n, looks.len());
                if precise_enough(&v, 0.05) || n == 40 {
                    called += usize::from(call(&v));
                    stopped_early += usize::from(n < 40);
                    break;
                }
            }
            naive_called += usize::from((3..=40).any(|n| call(&at(n, 1))));
        }
        println!(
            "called {called}, naively {naive_called}, early stops {stopped_early} of {trials}"
        );
        assert!(stopped_early > trials / 2, "the precision is reached early in most pairs");
        assert!((called as f64) <= ALPHA * trials as f64, "{called} of {trials}");
        assert!(naive_called > 2 * called.max(10), "{naive_called} against {called}");
    }

    #[test]
    fn precision_is_the_interval_around_the_ratio() {
        let v = |low: f64, high: f64| FigureVerdict {
            figure: "x".into(),
            metric: "x".into(),
            unit: "ns".into(),
            a: 1.0,
            b: 1.0,
            ratio: 1.0,
            ratio_low: low,
            ratio_high: high,
            verdict: Verdict::Same,
            p_value: 1.0,
            adjusted_p: 1.0,
            detectable: 0.0,
            a_runs: 5,
            b_runs: 5,
            rests_on: String::new(),
            coverage: 0.95,
        };
        assert!(precise_enough(&[v(0.99, 1.01)], 0.02));
        assert!(!precise_enough(&[v(0.99, 1.01), v(0.9, 1.1)], 0.02));
        assert!(!precise_enough(&[v(f64::NAN, f64::NAN)], 0.5));
        assert!(!precise_enough(&[], 0.5));
    }

    #[test]
    fn the_a_a_phase_measures_the_spread() {
        let mut rng = SplitMix64::new(9);
        let first = runs(&mut rng, 100.0, 0.03, 20);
        let second = runs(&mut rng, 100.0, 0.03, 20);
        let c = calibrate(&[(info("x", "ns"), first, second)], 10, 1);
        assert!(c[0].spread > 0.02 && c[0].spread < 0.04, "{:?}", c[0]);
        assert_eq!(c[0].verdict, Verdict::Same);
        // 10 rounds of 3% noise: a change of a few per cent is visible, 1% is not.
        assert!(c[0].expected_detectable > 0.01 && c[0].expected_detectable < 0.06, "{:?}", c[0]);
    }
}
