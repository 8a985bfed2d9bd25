//! Comparing two runs metric by metric, matched on name and labels. Each change gets the verdict
//! of [`measure::verdict`], the engine the report's `--baseline` uses: the two runs are one run
//! a side, so their stored samples (taken inside each run) are given the assumed run-to-run
//! noise ([`ASSUMED_RUN_NOISE`]) on top of their own spread, and every metric of the pair is
//! judged in one family (Holm); `untested` when a side has fewer than two samples. `real` keeps
//! the older, looser rule (larger than both runs' interquartile ranges). Two runs whose placement probes disagree
//! ([`measure::placement::differs`]) get no verdict on a figure that depends on where the CPUs
//! sit: `placement differs`.

use serde::{Deserialize, Serialize};

use measure::placement::{depends_on_placement, differs, RunPlacement};
use measure::verdict::{
    assess, judge_family, Judgement, Level, RunNoise, Verdict, ASSUMED_RUN_NOISE,
};

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
    /// The two-sided p-value of this metric alone, and adjusted across the pair's metrics
    /// (Holm): the verdict is decided on the adjusted one.
    #[serde(default)]
    pub p_value: f64,
    #[serde(default)]
    pub adjusted_p: f64,
    /// The interval of `ratio` (95%).
    #[serde(default)]
    pub ratio_low: f64,
    #[serde(default)]
    pub ratio_high: f64,
    /// What the verdict rests on ("20 samples each; run-to-run noise 10% assumed").
    #[serde(default)]
    pub rests_on: String,
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

/// The labels of `run`'s metric whose key is `key`.
fn labels_of(run: &StoredRun, key: &str) -> std::collections::BTreeMap<String, String> {
    run.metrics.iter().find(|m| m.key() == key).map(|m| m.labels.clone()).unwrap_or_default()
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
    let mut judged: Vec<(MetricDelta, Judgement, bool)> = Vec::new();
    for ma in &a.metrics {
        let key = ma.key();
        let Some(mb) = b.metrics.iter().find(|mb| mb.key() == key) else {
            unmatched.push(key);
            continue;
        };
        let delta = mb.median - ma.median;
        let spread_a = ma.p75 - ma.p25;
        let spread_b = mb.p75 - mb.p25;
        let real = delta.abs() > spread_a && delta.abs() > spread_b;
        let lower_is_better =
            measure::Unit::from_symbol(&ma.unit).map(measure::Unit::lower_is_better);
        let noise = RunNoise::assumed(ASSUMED_RUN_NOISE);
        let j = assess(&mb.samples, &ma.samples, Level::Samples, noise);
        let delta = MetricDelta {
            ratio: j.ratio,
            verdict: j.verdict,
            p_value: j.p_value,
            adjusted_p: j.adjusted_p,
            ratio_low: j.ratio_low,
            ratio_high: j.ratio_high,
            rests_on: String::new(),
            a_samples: j.baseline_replicates,
            b_samples: j.this_replicates,
            name: key,
            unit: ma.unit.clone(),
            a_median: ma.median,
            b_median: mb.median,
            delta,
            delta_pct: if ma.median != 0.0 { 100.0 * delta / ma.median } else { f64::NAN },
            real,
            better: lower_is_better.filter(|_| real).map(|lower| (delta < 0.0) == lower),
        };
        judged.push((delta, j, lower_is_better.unwrap_or(false)));
    }
    // One family: the pair's metrics together.
    let mut family: Vec<(&mut Judgement, bool)> =
        judged.iter_mut().map(|(_, j, lower)| (j, *lower)).collect();
    judge_family(&mut family);
    for (mut d, j, _) in judged {
        d.adjusted_p = j.adjusted_p;
        d.rests_on = j.rests_on();
        // A unit without a better direction is `same` when tested: there is no faster.
        d.verdict = match j.verdict {
            _ if placement.is_some() && depends_on_placement(&labels_of(a, &d.name)) => {
                Verdict::PlacementDiffers
            }
            Verdict::Faster | Verdict::Slower if !better_has_a_direction(&d.unit) => Verdict::Same,
            v => v,
        };
        deltas.push(d);
    }
    unmatched.extend(
        b.metrics
            .iter()
            .map(super::StoredMetric::key)
            .filter(|kb| !a.metrics.iter().any(|ma| &ma.key() == kb)),
    );
    Comparison { a: a.id, b: b.id, deltas, unmatched, placement }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoredMetric;
    use measure::placement::{PairProbe, Probe};
    use serde_json::json;

    /// A run of `mem bandwidth --scale` with 20 samples a figure around `gbs` for one and two
    /// threads, probed at `round_trip_ns` (or not at all).
    fn run(id: i64, gbs: [f64; 2], round_trip_ns: Option<f64>) -> StoredRun {
        let metric = |threads: &str, centre: f64| {
            let samples: Vec<f64> =
                (0..20).map(|i| centre * (1.0 + f64::from(i) / 1000.0)).collect();
            let mut m =
                StoredMetric::single("mem_bandwidth", "GB/s", &[("threads", threads)], centre);
            m.median = samples[10];
            m.samples = samples;
            m
        };
        let parameters = match round_trip_ns {
            Some(ns) => {
                let probe = Probe { pairs: vec![PairProbe::new(0, 1, "same L3", true, ns)] };
                let placement = RunPlacement::probed(vec![0, 1], Some(probe.clone()), Some(probe));
                json!({ "argv": [], "placement": placement })
            }
            None => json!({ "argv": [] }),
        };
        StoredRun {
            id,
            uuid: String::new(),
            host: "h".into(),
            recorded_at: String::new(),
            command: "mem bandwidth --scale".into(),
            parameters,
            version: String::new(),
            environment: json!(null),
            topology: json!(null),
            metrics: vec![metric("1", gbs[0]), metric("2", gbs[1])],
            placements: Vec::new(),
            result: json!(null),
            interrupted: false,
        }
    }

    fn verdicts(c: &Comparison) -> Vec<(String, Verdict)> {
        c.deltas.iter().map(|d| (d.name.clone(), d.verdict)).collect()
    }

    #[test]
    fn two_placements_give_no_verdict_on_what_depends_on_them() {
        // The AMD VM: two threads 114 GB/s near, 56 GB/s far; one thread 57 either way.
        let near = run(1, [57.0, 114.0], Some(82.0));
        let far = run(2, [57.0, 56.0], Some(380.0));
        let c = compare(&near, &far);
        assert_eq!(
            verdicts(&c),
            [
                ("mem_bandwidth{threads=1}".to_string(), Verdict::Same),
                ("mem_bandwidth{threads=2}".to_string(), Verdict::PlacementDiffers),
            ]
        );
        let why = c.placement.as_deref().expect("why");
        assert_eq!(why, "CPUs 0↔1 handed a cache line over in 380 ns here, 82 ns in the baseline");
        let text = crate::render::compare_text(&c);
        assert!(text.contains("placement differs: CPUs 0↔1"), "{text}");
        let line = text.lines().find(|l| l.starts_with("mem_bandwidth{threads=2}")).expect("line");
        assert!(line.ends_with("placement differs"), "{line}");
        let value = serde_json::to_value(&c).expect("JSON");
        assert_eq!(value["deltas"][1]["verdict"], "placement-differs");
        assert!(value["placement"].is_string());
        // One placement: the verdict as always (halved: slower).
        let c = compare(&near, &run(3, [57.0, 56.0], Some(90.0)));
        assert_eq!(c.deltas[1].verdict, Verdict::Slower);
        assert!(c.placement.is_none());
        assert!(serde_json::to_value(&c).expect("JSON").get("placement").is_none());
        // A run stored before probes existed: compared as always.
        assert_eq!(compare(&run(4, [57.0, 56.0], None), &near).deltas[1].verdict, Verdict::Faster);
    }
}
