//! Comparing two runs metric by metric, matched on name and labels. Each change gets the verdict
//! of [`measure::verdict`] (`faster`, `slower` or `same`: a minimum effect and a Mann–Whitney U
//! test on the stored samples; `untested` when too few samples to test), the same verdicts the
//! report's `--baseline` gives; `real` keeps the older, looser rule (larger than both runs'
//! interquartile ranges). Two runs whose placement probes disagree
//! ([`measure::placement::differs`]) get no verdict on a figure that depends on where the CPUs
//! sit: `placement differs`.

use serde::{Deserialize, Serialize};

use measure::placement::{depends_on_placement, differs, RunPlacement};
use measure::verdict::{judge, Verdict, MIN_EFFECT};

use crate::StoredRun;

/// One metric's change from run A to run B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDelta {
    /// `name{labels}`.
    pub name: String,
    pub unit: String,
    pub a_median: f64,
    pub b_median: f64,
    pub delta: f64,
    /// Relative to A, in percent.
    pub delta_pct: f64,
    /// |delta| exceeds both runs' interquartile range.
    pub real: bool,
    /// For a real change: whether B is better than A (lower latency, higher bandwidth).
    pub better: Option<bool>,
    /// B's median over A's.
    #[serde(default)]
    pub ratio: f64,
    /// B against A: `faster`, `slower` or `same` (for units without a better direction:
    /// `same`), `untested` when the samples are too few for the test, or `placement differs`
    /// when the figure depends on where the CPUs sit and the two runs sat differently.
    #[serde(default = "same")]
    pub verdict: Verdict,
    /// The Mann–Whitney U test's two-sided p-value on the two runs' samples.
    #[serde(default)]
    pub p_value: f64,
    /// How many samples each run has of this metric.
    #[serde(default)]
    pub a_samples: usize,
    #[serde(default)]
    pub b_samples: usize,
}

fn same() -> Verdict {
    Verdict::Same
}

/// A against B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub a: i64,
    pub b: i64,
    pub deltas: Vec<MetricDelta>,
    /// Metrics present in only one of the runs.
    pub unmatched: Vec<String>,
    /// Why the two runs' placements differ (`CPUs 0↔1 handed a cache line over in …`), when
    /// they do: their placement-dependent figures have no verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
}

/// Whether a larger or smaller value is better for this unit (counts and ratios: neither).
fn better_has_a_direction(unit: &str) -> bool {
    !matches!(
        measure::Unit::from_symbol(unit),
        None | Some(measure::Unit::Count | measure::Unit::Ratio | measure::Unit::Bytes)
    )
}

/// Compares metrics with the same name and labels.
pub fn compare(a: &StoredRun, b: &StoredRun) -> Comparison {
    let mut deltas = Vec::new();
    let mut unmatched = Vec::new();
    let placement = match (
        RunPlacement::from_parameters(&a.parameters),
        RunPlacement::from_parameters(&b.parameters),
    ) {
        (Some(pa), Some(pb)) => differs(&pb, &pa),
        _ => None,
    };
    for ma in &a.metrics {
        let key = ma.key();
        match b.metrics.iter().find(|mb| mb.key() == key) {
            Some(mb) => {
                let delta = mb.median - ma.median;
                let spread_a = ma.p75 - ma.p25;
                let spread_b = mb.p75 - mb.p25;
                let real = delta.abs() > spread_a && delta.abs() > spread_b;
                let lower_is_better =
                    measure::Unit::from_symbol(&ma.unit).map(measure::Unit::lower_is_better);
                let judged =
                    judge(&mb.samples, &ma.samples, lower_is_better.unwrap_or(false), MIN_EFFECT);
                // A unit without a better direction is `same` when tested: there is no faster.
                let verdict = match judged.verdict {
                    _ if placement.is_some() && depends_on_placement(&ma.labels) => {
                        Verdict::PlacementDiffers
                    }
                    Verdict::Faster | Verdict::Slower if !better_has_a_direction(&ma.unit) => {
                        Verdict::Same
                    }
                    v => v,
                };
                deltas.push(MetricDelta {
                    ratio: judged.ratio,
                    verdict,
                    p_value: judged.p_value,
                    a_samples: judged.baseline_samples,
                    b_samples: judged.this_samples,
                    name: key,
                    unit: ma.unit.clone(),
                    a_median: ma.median,
                    b_median: mb.median,
                    delta,
                    delta_pct: if ma.median != 0.0 { 100.0 * delta / ma.median } else { f64::NAN },
                    real,
                    better: lower_is_better.filter(|_| real).map(|lower| (delta < 0.0) == lower),
                });
            }
            None => unmatched.push(key),
        }
    }
    unmatched.extend(
        b.metrics
            .iter()
            .map(super::StoredMetric::key)
            .filter(|kb| !a.metrics.iter().any(|ma| &ma.key() == kb)),
    );
    Comparison { a: a.id, b: b.id, deltas, unmatched, placement }
}
