//! The order of the runs and when the interval is looked at.
//!
//! **Randomized multiple interleaved trials** (Abedi and Brecht, "Conducting Repeatable
//! Experiments in Highly Variable Cloud Computing Environments", ICPE 2017): each round runs A
//! once and B once, in an order drawn at random for that round, so a drift of the machine
//! (another tenant, the host's clock, a neighbour's cache) falls on both sides alike and the
//! rounds are the replicates. The A/A phase before it runs A twice a round, the two halves
//! labelled at random.
//!
//! **Looks.** Stopping when the interval is narrow enough is a data-dependent stop: looked at
//! after every round, a quiet pair would be called different far more often than α. So the
//! interval is looked at only at rounds fixed before the first run — 5, 10, 20, 40, … and the
//! last — and each look tests at α divided by the number of looks (Bonferroni across looks),
//! so the chance of any false call over all of them stays at most α whichever look stops the
//! run. Without `--precision` there is one look, at the end, and α is not divided.

use measure::rng::SplitMix64;
use serde::{Deserialize, Serialize};

/// The earliest look: fewer rounds leave too few degrees of freedom for an interval worth
/// stopping on.
pub const FIRST_LOOK: usize = 5;

/// Which side a run belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Side {
    /// A, in the A/B rounds.
    #[serde(rename = "A")]
    A,
    #[serde(rename = "B")]
    B,
    /// A, in the A/A phase, the half labelled first.
    #[serde(rename = "A1")]
    A1,
    /// A, in the A/A phase, the other half.
    #[serde(rename = "A2")]
    A2,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::A => "A",
            Side::B => "B",
            Side::A1 => "A1",
            Side::A2 => "A2",
        }
    }

    /// Whether the run is taken with A's settings.
    pub fn is_a(self) -> bool {
        self != Side::B
    }
}

/// The order of `rounds` rounds of `first` and `second`, each round's two runs in an order
/// drawn from `rng`.
pub fn interleaved(
    rng: &mut SplitMix64,
    rounds: usize,
    first: Side,
    second: Side,
) -> Vec<[Side; 2]> {
    (0..rounds)
        .map(|_| {
            let mut pair = [first, second];
            rng.shuffle(&mut pair);
            pair
        })
        .collect()
}

/// The rounds after which the interval is looked at: the last only without `early`, else
/// [`FIRST_LOOK`], twice that, … below `rounds`, and `rounds`.
pub fn looks(rounds: usize, early: bool) -> Vec<usize> {
    let mut out = Vec::new();
    if early {
        let mut at = FIRST_LOOK;
        while at < rounds {
            out.push(at);
            at *= 2;
        }
    }
    out.push(rounds);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_round_runs_both_sides_once_in_a_random_order() {
        let mut rng = SplitMix64::new(42);
        let order = interleaved(&mut rng, 200, Side::A, Side::B);
        assert_eq!(order.len(), 200);
        assert!(order.iter().all(|r| r.contains(&Side::A) && r.contains(&Side::B)));
        // Neither order dominates: about half the rounds start with B.
        let b_first = order.iter().filter(|r| r[0] == Side::B).count();
        assert!((70..=130).contains(&b_first), "{b_first} of 200 start with B");
        // The same seed gives the same order.
        assert_eq!(interleaved(&mut SplitMix64::new(42), 200, Side::A, Side::B), order);
        assert_ne!(interleaved(&mut SplitMix64::new(43), 200, Side::A, Side::B), order);
    }

    #[test]
    fn looks_are_fixed_before_the_first_run() {
        assert_eq!(looks(10, false), [10]);
        assert_eq!(looks(10, true), [5, 10]);
        assert_eq!(looks(30, true), [5, 10, 20, 30]);
        assert_eq!(looks(40, true), [5, 10, 20, 40]);
        assert_eq!(looks(4, true), [4]);
        assert_eq!(looks(5, true), [5]);
    }

    #[test]
    fn sides_read_as_their_names() {
        assert_eq!(serde_json::to_value(Side::A1).ok(), Some(serde_json::json!("A1")));
        assert!(Side::A2.is_a() && !Side::B.is_a());
    }
}
