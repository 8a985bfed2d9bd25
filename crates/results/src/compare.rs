//! Comparing two runs metric by metric, matched on name and labels: a change is called real only
//! when it is larger than both runs' own sample spread (their interquartile ranges).

use serde::{Deserialize, Serialize};

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
}

/// A against B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub a: i64,
    pub b: i64,
    pub deltas: Vec<MetricDelta>,
    /// Metrics present in only one of the runs.
    pub unmatched: Vec<String>,
}

/// Compares metrics with the same name and labels.
pub fn compare(a: &StoredRun, b: &StoredRun) -> Comparison {
    let mut deltas = Vec::new();
    let mut unmatched = Vec::new();
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
                deltas.push(MetricDelta {
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
    Comparison { a: a.id, b: b.id, deltas, unmatched }
}
