//! Hosts whose figure is off their class's, now.
//!
//! A host's recent runs of a figure are its latest — at most [`LATEST_RUNS`], none from before
//! its last change of that figure — and its value is their median, so one odd run does not
//! make an outlier and a host that changed is judged as it is now. Against its class (the
//! median of its hosts' values, and their recent runs) a host is an outlier when all hold:
//!
//! - its value is off the class median by more than the figure's minimum effect (how far a
//!   host's value comes from itself when nothing changed, [`crate::noise`]);
//! - it is off by more than [`MODIFIED_Z`] times the class's own spread (the median absolute
//!   deviation of the hosts' values scaled to a standard deviation; Iglewicz and Hoaglin's
//!   modified z-score): a class whose hosts differ a lot by themselves needs a larger
//!   difference;
//! - its recent runs and the other hosts' recent runs differ by a two-sided Mann–Whitney U test
//!   at p < [`ALPHA`]: a host whose value is off only because its few recent runs met the odd
//!   runs every host of the class has now and then is not an outlier.
//!
//! Each outlier also carries what [`measure::verdict`] — the engine every A/B comparison of
//! platscope uses — says of the same runs ([`Level::Runs`]): the interval of the ratio of the
//! host's recent runs to the other hosts' (geometric means) and what it rests on ("5 vs 35
//! runs"), so the output reads as the other comparisons' do.
//!
//! The decision stays with the rank test, on runs as the engine's would be (a report is a
//! process of its own, on its own day; no sample inside one run is a replicate here). The
//! question is one host against the pooled runs of many, where the rank test has what the
//! engine's Welch interval lacks: it is exact and free of the noise's shape, and its power
//! grows with the class (5 runs above 95 others give p ≈ 3e-8), where Welch's is capped by the
//! host's own 2–5 runs (1–4 degrees of freedom) and assumes a shape the noise need not have. On
//! the synthetic fleets of the fleet's tests (noise drawn from four real reports of one VM,
//! several figures of which moved 2–6× between them), the engine as the decision — Holm over
//! the hosts that passed the two tests above, α 0.05 — called 13 hosts with nothing injected
//! outliers over ten 40-host fleets where the rank test called 4, and found 125 of the 156
//! injected outliers of six 200-host fleets where the rank test found 146; the engine's
//! p-value at the rank test's 0.001 instead of Holm missed 4 of the 60 injected on the small
//! fleets and still called 9 hosts with nothing injected.
//!
//! A class of fewer than [`MIN_HOSTS`] hosts has no median to stand against; a figure without
//! a calibrated noise is not tested (both said in the summary's notes).

use measure::stats::{mad, mann_whitney_p, median, median_in_place, MAD_TO_SIGMA};
use measure::verdict::{assess, Level, RunNoise};

use crate::edivisive::Split;
use crate::noise::NoiseTable;
pub use crate::noise::LATEST_RUNS;
use crate::series::Fleet;

/// The fewest hosts of a class with a value for the figure.
pub const MIN_HOSTS: usize = 3;
/// The modified z-score beyond which a value is off its class (Iglewicz and Hoaglin's 3.5).
pub const MODIFIED_Z: f64 = 3.5;
/// The Mann–Whitney test's level for a host's recent runs against its class's.
pub const ALPHA: f64 = 0.001;

/// An outlier as found.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundOutlier {
    pub host: usize,
    pub figure: usize,
    pub value: f64,
    pub class_median: f64,
    pub min_effect: f64,
    /// The rank test's two-sided p-value (below [`ALPHA`]).
    pub p_value: f64,
    /// The interval (95%) of the host's recent runs over the other hosts' of its class
    /// (geometric means), from [`measure::verdict::assess`]; NaN when it has none.
    pub ratio_low: f64,
    pub ratio_high: f64,
    /// What that interval rests on: "5 vs 35 runs".
    pub rests_on: String,
}

/// What could not be tested, for the notes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Untested {
    /// (class, figure) pairs with fewer than [`MIN_HOSTS`] hosts.
    pub small_classes: Vec<(usize, usize)>,
    /// (class, figure) pairs without calibrated noise.
    pub uncalibrated: Vec<(usize, usize)>,
}

/// Where each series' recent runs start: at most [`LATEST_RUNS`] from its end, none before
/// its last split.
pub fn recent_start(values: &[f64], found: &[Split]) -> usize {
    let since = found.last().map_or(0, |f| f.index);
    since.max(values.len().saturating_sub(LATEST_RUNS))
}

/// Each series' current value: the median of its recent runs.
pub fn current_values(fleet: &Fleet, splits: &[Vec<Split>]) -> Vec<f64> {
    fleet
        .series
        .iter()
        .zip(splits)
        .map(|(s, found)| median(&s.values[recent_start(&s.values, found)..]))
        .collect()
}

/// The outliers of every class and figure, with what could not be tested.
pub fn outliers(
    fleet: &Fleet,
    splits: &[Vec<Split>],
    current: &[f64],
    noise: &NoiseTable,
) -> (Vec<FoundOutlier>, Untested) {
    let recent = |series: usize| {
        let s = &fleet.series[series];
        &s.values[recent_start(&s.values, &splits[series])..]
    };
    let mut found = Vec::new();
    let mut untested = Untested::default();
    for class in 0..fleet.classes.len() {
        for figure in 0..fleet.figures.len() {
            // (series, host, value)
            let members: Vec<(usize, usize, f64)> = fleet
                .series
                .iter()
                .zip(current)
                .enumerate()
                .filter(|(_, (s, _))| s.figure == figure && fleet.hosts[s.host].class == class)
                .map(|(i, (s, &v))| (i, s.host, v))
                .collect();
            if members.is_empty() {
                continue;
            }
            if members.len() < MIN_HOSTS {
                untested.small_classes.push((class, figure));
                continue;
            }
            let Some(n) = noise.get(class, figure) else {
                untested.uncalibrated.push((class, figure));
                continue;
            };
            let mut values: Vec<f64> = members.iter().map(|m| m.2).collect();
            let class_median = median_in_place(&mut values);
            let spread = mad(&values, class_median) * MAD_TO_SIGMA;
            for &(series, host, value) in &members {
                let off = (value - class_median).abs();
                let beyond_noise = (value / class_median - 1.0).abs() > n.min_effect;
                let beyond_spread = off > MODIFIED_Z * spread;
                if !(beyond_noise && beyond_spread) {
                    continue;
                }
                let others: Vec<f64> = members
                    .iter()
                    .filter(|m| m.0 != series)
                    .flat_map(|m| recent(m.0).iter().copied())
                    .collect();
                let p_value = mann_whitney_p(recent(series), &others);
                if p_value < ALPHA {
                    let grounds = assess(recent(series), &others, Level::Runs, RunNoise::none());
                    found.push(FoundOutlier {
                        host,
                        figure,
                        value,
                        class_median,
                        min_effect: n.min_effect,
                        p_value,
                        ratio_low: grounds.ratio_low,
                        ratio_high: grounds.ratio_high,
                        rests_on: grounds.rests_on(),
                    });
                }
            }
        }
    }
    (found, untested)
}
