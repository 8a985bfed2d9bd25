//! The SLB's comparisons in rounds (`mem scale`: each worker count against the first;
//! `mem compare-policies`: each placement against local): every step runs once a round, the
//! order rotating from round to round, and each step is judged against the first by the
//! verdict engine every comparison uses ([`measure::verdict`]) on its rounds — never on the
//! workers or the batches inside one run, which share that run's pages and minute.
//!
//! A round is the step done again from a fresh start (new memory, placed and filled again, new
//! workers), so the rounds are the replicates ([`Level::Rounds`]). No run-to-run noise is added
//! ([`RunNoise::none`]): both sides are measured in the same run, their rounds interleaved, so
//! what moves from one run to the next (the host's clock, a neighbour, a boot's pages) moves
//! both alike and leaves their ratio. All the comparisons of one command are one family (Holm).
//!
//! ```
//! use membench::slb_rounds::judge_steps;
//! use measure::verdict::Verdict;
//!
//! // ns per store, one value a round: 2 workers take about twice the time of one.
//! let steps = vec![
//!     ("1 worker".to_string(), vec![10.0, 10.4, 9.8]),
//!     ("2 workers".to_string(), vec![20.5, 19.6, 21.0]),
//! ];
//! let judged = judge_steps(&steps);
//! assert_eq!(judged.len(), 1);
//! assert_eq!(judged[0].judgement.verdict, Verdict::Slower);
//! assert_eq!(judged[0].rests_on, "3 rounds each");
//! ```

use measure::verdict::{assess, judge_family, Judgement, Level, RunNoise, Verdict, CONFIDENCE};
use measure::Metric;
use serde::{Deserialize, Serialize};

use crate::slb::SlbResult;

/// Rounds of `mem scale` and `mem compare-policies` unless `--rounds` says otherwise: three is
/// the fewest with an interval worth reading (2 degrees of freedom a side).
pub const DEFAULT_ROUNDS: u32 = 3;

/// One step against the first, judged on the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepVerdict {
    /// The step ("2 workers", "remote") and the one it is judged against ("1 worker",
    /// "local").
    pub step: String,
    pub baseline: String,
    /// The ratio of the step's time per store to the baseline's (geometric means of the
    /// rounds), its interval and p-values, the verdict (`slower`: more time per store).
    pub judgement: Judgement,
    /// What it rests on: "3 rounds each".
    pub rests_on: String,
}

impl StepVerdict {
    /// "2.31× (95% interval 2.10–2.55), slower; 3 rounds each, adjusted p < 0.001", or
    /// "2.31×, untested (1 round each)" with too few rounds.
    pub fn words(&self) -> String {
        let j = &self.judgement;
        let ratio = if j.ratio.is_finite() { format!("{:.2}×", j.ratio) } else { "–".into() };
        if j.verdict == Verdict::Untested {
            return format!("{ratio}, untested ({})", self.rests_on);
        }
        format!(
            "{ratio} ({:.0}% interval {:.2}–{:.2}), {}; {}, {}",
            CONFIDENCE * 100.0,
            j.ratio_low,
            j.ratio_high,
            j.verdict.name(),
            self.rests_on,
            j.adjusted_p_words()
        )
    }

    /// Whether the rounds gave an interval at all.
    pub fn tested(&self) -> bool {
        self.judgement.verdict != Verdict::Untested
    }
}

/// A step's value in each round that did all its stores: the median over its workers of the
/// time per store.
pub fn round_values(runs: &[&SlbResult]) -> Vec<f64> {
    runs.iter().filter(|r| !r.interrupted).map(|r| r.summary().median_ns).collect()
}

/// The round of the median value (the lower of the two middle ones), the rounds that did all
/// their stores first: what a table row or a chart shows of the step.
pub fn median_round<'a>(runs: &[&'a SlbResult]) -> Option<&'a SlbResult> {
    let whole: Vec<&SlbResult> = runs.iter().copied().filter(|r| !r.interrupted).collect();
    let pool = if whole.is_empty() { runs.to_vec() } else { whole };
    let mut by_value: Vec<(f64, &SlbResult)> =
        pool.into_iter().map(|r| (r.summary().median_ns, r)).collect();
    by_value.sort_by(|a, b| a.0.total_cmp(&b.0));
    by_value.get(by_value.len().saturating_sub(1) / 2).map(|(_, r)| *r)
}

/// Each step after the first judged against the first on its rounds' values (`steps`: name
/// and values, in order), all one family; time per store, so lower is better.
pub fn judge_steps(steps: &[(String, Vec<f64>)]) -> Vec<StepVerdict> {
    let Some((baseline, base_values)) = steps.first() else { return Vec::new() };
    let mut judged: Vec<(String, Judgement)> = steps[1..]
        .iter()
        .map(|(name, values)| {
            (name.clone(), assess(values, base_values, Level::Rounds, RunNoise::none()))
        })
        .collect();
    let mut family: Vec<(&mut Judgement, bool)> =
        judged.iter_mut().map(|(_, j)| (j, true)).collect();
    judge_family(&mut family);
    judged
        .into_iter()
        .map(|(step, judgement)| StepVerdict {
            step,
            baseline: baseline.clone(),
            rests_on: judgement.rests_on(),
            judgement,
        })
        .collect()
}

/// Which round each item is in, from 0: how many items of the same step (`key`) came before
/// it. Items are stored in the order run, each step once a round.
pub fn round_of<T, K: PartialEq>(items: &[T], key: impl Fn(&T) -> K) -> Vec<usize> {
    (0..items.len())
        .map(|i| items[..i].iter().filter(|other| key(other) == key(&items[i])).count())
        .collect()
}

/// The rounds a list of steps holds: the most times one step occurs.
pub fn rounds_in<T, K: PartialEq>(items: &[T], key: impl Fn(&T) -> K) -> usize {
    round_of(items, key).into_iter().max().map_or(0, |r| r + 1)
}

/// `steps` in the order round `round` runs them: rotated by one place a round, so no step is
/// always first (memory fresh from the allocator) or always last.
pub fn rotated<T: Clone>(steps: &[T], round: usize) -> Vec<T> {
    let mut out = steps.to_vec();
    if !out.is_empty() {
        let shift = round % out.len();
        out.rotate_left(shift);
    }
    out
}

/// The metrics of every round as one metric a key, their samples in round order: a worker's
/// batches from every round.
pub fn merge_rounds(metrics: Vec<Metric>) -> Vec<Metric> {
    let mut merged: Vec<Metric> = Vec::new();
    for m in metrics {
        let key = m.key();
        match merged.iter_mut().find(|x| x.key() == key) {
            Some(existing) => existing.samples.extend(m.samples),
            None => merged.push(m),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use measure::Unit;

    #[test]
    fn rounds_are_counted_and_rotated() {
        let order = ["a", "b", "c", "b", "c", "a", "c"];
        assert_eq!(round_of(&order, |s| *s), vec![0, 0, 0, 1, 1, 1, 2]);
        assert_eq!(rounds_in(&order, |s| *s), 3);
        assert_eq!(rounds_in::<&str, &str>(&[], |s| *s), 0);
        assert_eq!(rotated(&[1, 2, 3], 0), vec![1, 2, 3]);
        assert_eq!(rotated(&[1, 2, 3], 1), vec![2, 3, 1]);
        assert_eq!(rotated(&[1, 2, 3], 4), vec![2, 3, 1]);
        assert!(rotated::<u8>(&[], 2).is_empty());
    }

    #[test]
    fn the_same_key_from_every_round_is_one_metric() {
        let m = |v: f64, w: u32| Metric::new("slb", Unit::Nanoseconds, vec![v]).label("worker", w);
        let merged = merge_rounds(vec![m(1.0, 0), m(2.0, 1), m(3.0, 0)]);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].samples, vec![1.0, 3.0]);
        assert_eq!(merged[1].samples, vec![2.0]);
    }

    /// Steps within their rounds' noise are the same, a step far off is called, and one round
    /// a side is never a verdict; every comparison of a command is one family.
    #[test]
    fn steps_are_judged_on_their_rounds_in_one_family() {
        let steps = vec![
            ("local".to_string(), vec![100.0, 103.0, 98.0]),
            ("interleave".to_string(), vec![101.0, 99.0, 102.0]),
            ("remote".to_string(), vec![160.0, 150.0, 170.0]),
        ];
        let judged = judge_steps(&steps);
        assert_eq!(judged.len(), 2);
        assert_eq!(judged[0].judgement.verdict, Verdict::Same);
        assert_eq!(judged[0].baseline, "local");
        let j = &judged[0].judgement;
        assert!(j.ratio_low < 1.0 && j.ratio_high > 1.0, "{j:?}");
        assert_eq!(judged[1].judgement.verdict, Verdict::Slower, "{:?}", judged[1]);
        assert!(judged[1].judgement.adjusted_p >= judged[1].judgement.p_value);
        let words = judged[1].words();
        assert!(words.contains("), slower; 3 rounds each, adjusted p 0.0"), "{words}");
        let one = judge_steps(&[("1".into(), vec![10.0]), ("2".into(), vec![20.0])]);
        assert!(!one[0].tested());
        assert_eq!(one[0].words(), "2.00×, untested (1 round each)");
        assert!(judge_steps(&[]).is_empty());
    }
}
