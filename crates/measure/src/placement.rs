//! Where the CPUs of a run sit, as a cheap probe sees it — and whether two runs, or two steps of
//! one run, were taken with the CPUs in the same place.
//!
//! A virtual machine's vCPUs are threads of the host: the hypervisor can move them between
//! cores that share a cache and cores on another die or socket within seconds, while the guest's
//! topology stays the same. Figures that depend on where the CPUs sit (several threads sharing
//! the memory controllers, a cache line handed between two CPUs, a lock) move with them: one
//! 2-vCPU VM read the same CPU pair's cache-line round trip as 75–90 ns and as 360–410 ns in
//! back-to-back runs, and its two-thread bandwidth halved with it.
//!
//! The probe is a short core-to-core hand-off between the CPUs a run uses (`membench` measures
//! it; this module only holds what it found and what that means): a [`Probe`] before and after
//! each run whose figures depend on placement, kept with the run as its [`RunPlacement`].
//!
//! - **Regimes** are told apart by the machine's own probes: two probes of one CPU pair whose
//!   round trips are [`FAR_FACTOR`] or more apart were taken in different placements.
//!   [`classify`] labels each step of a run `near` or `far` against the fastest probe of the
//!   same pair in that run, or `moved` when its own two probes differ. Only a pair presented
//!   as sharing a cache whose every probe is above [`SHARED_CACHE_CEILING_NS`] is `far` by a
//!   fixed figure: the run then has no near probe to compare with.
//! - **Contradictions**: a pair the topology presents as sharing a last-level cache whose
//!   hand-off is far (against a faster probe of the same pair), or above
//!   [`SHARED_CACHE_CEILING_NS`] when the run has no faster probe to compare with.
//! - **Comparisons** ([`differs`]): a figure is compared with another run's only when every
//!   pair probed in both runs stayed within [`FAR_FACTOR`] across all their probes.
//!
//! ```
//! use measure::placement::{differs, PairProbe, Probe, RunPlacement};
//!
//! let probe = |ns| Probe { pairs: vec![PairProbe::new(0, 1, "same L3", true, ns)] };
//! let near = RunPlacement::probed(vec![0, 1], Some(probe(82.0)), Some(probe(85.0)));
//! let far = RunPlacement::probed(vec![0, 1], Some(probe(380.0)), Some(probe(390.0)));
//! assert!(differs(&near, &far).is_some());
//! assert!(differs(&near, &near).is_none());
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Two probes of one CPU pair whose round trips are this many times apart were taken in
/// different placements. A probe's figure is the fastest of several lines' medians, which
/// leaves out both the line's address (one pair on one line can read 57 or 80 ns: 1.4×) and a
/// vCPU pre-empted during some of the lines; what remains moves by about ±6% on a busy 2-vCPU
/// VM (110–125 ns over twelve probes at load average 10). A move to another die or socket
/// costs 2× and more (4.5× on the AMD VM that showed it: 80 against 370 ns), so 2× sits well
/// above the noise and below the smallest such move.
pub const FAR_FACTOR: f64 = 2.0;

/// Above this round trip, in ns, a hand-off between two CPUs cannot be through a cache they
/// share: a whole round trip (two hand-offs) within one L3 costs 20–150 ns on current x86 and
/// Arm servers (the slowest, across a large Intel mesh, about 70 ns a hand-off), across dies
/// or sockets 160–400 ns. Used only when a run has no faster probe of the same pair to compare
/// with (see [`classify`]); the ratio decides otherwise.
pub const SHARED_CACHE_CEILING_NS: f64 = 250.0;

/// Where the placement of a run is kept in its stored parameters.
pub const PARAMETER: &str = "placement";

/// One CPU pair's hand-off, as one probe measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairProbe {
    pub a: u32,
    pub b: u32,
    /// How the topology presents the pair, in words (`same L3`, `SMT sibling`, `other node`).
    pub presented: String,
    /// The topology says the two share a last-level cache (SMT siblings or one L3).
    pub shares_cache: bool,
    /// ns per round trip (two hand-offs): the fastest of the probe's lines' medians.
    pub round_trip_ns: f64,
}

impl PairProbe {
    pub fn new(a: u32, b: u32, presented: &str, shares_cache: bool, round_trip_ns: f64) -> Self {
        Self { a, b, presented: presented.into(), shares_cache, round_trip_ns }
    }

    /// `0↔1`.
    pub fn pair(&self) -> String {
        format!("{}↔{}", self.a, self.b)
    }

    fn key(&self) -> (u32, u32) {
        (self.a.min(self.b), self.a.max(self.b))
    }
}

/// One probe: a few CPU pairs of the run's CPUs, each measured briefly.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub pairs: Vec<PairProbe>,
}

/// The placement a run was measured in: a probe just before it and one just after.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunPlacement {
    /// The CPUs the run's figures depend on the placement of.
    pub cpus: Vec<u32>,
    #[serde(default)]
    pub before: Option<Probe>,
    #[serde(default)]
    pub after: Option<Probe>,
    /// Why a probe did not run (the run itself goes on without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// A pair's round trips over several probes.
#[derive(Debug, Clone)]
struct PairSeries {
    probe: PairProbe,
    round_trips: Vec<f64>,
}

impl PairSeries {
    fn fastest(&self) -> f64 {
        self.round_trips.iter().copied().fold(f64::INFINITY, f64::min)
    }
    fn slowest(&self) -> f64 {
        self.round_trips.iter().copied().fold(0.0, f64::max)
    }
}

/// Every pair of `probes`, with all its finite round trips, in order of first appearance.
fn series<'a>(probes: impl IntoIterator<Item = &'a Probe>) -> Vec<PairSeries> {
    let mut out: Vec<PairSeries> = Vec::new();
    for pair in probes.into_iter().flat_map(|p| &p.pairs) {
        if !(pair.round_trip_ns.is_finite() && pair.round_trip_ns > 0.0) {
            continue;
        }
        match out.iter_mut().find(|s| s.probe.key() == pair.key()) {
            Some(s) => s.round_trips.push(pair.round_trip_ns),
            None => {
                out.push(PairSeries { probe: pair.clone(), round_trips: vec![pair.round_trip_ns] })
            }
        }
    }
    out
}

/// `82 ns`, `82–85 ns`.
fn range_ns(fastest: f64, slowest: f64) -> String {
    if (slowest - fastest).abs() < 0.5 {
        format!("{fastest:.0} ns")
    } else {
        format!("{fastest:.0}–{slowest:.0} ns")
    }
}

impl RunPlacement {
    /// A probed run.
    pub fn probed(cpus: Vec<u32>, before: Option<Probe>, after: Option<Probe>) -> Self {
        Self { cpus, before, after, failed: None }
    }

    /// The placement stored with a run (`parameters.placement`), if it has one: runs stored
    /// before probes existed, or of commands that do not depend on placement, have none.
    pub fn from_parameters(parameters: &Value) -> Option<Self> {
        let value = parameters.get(PARAMETER)?;
        serde_json::from_value(value.clone()).ok()
    }

    /// The probes taken, before first.
    pub fn probes(&self) -> impl Iterator<Item = &Probe> {
        self.before.iter().chain(self.after.iter())
    }

    /// Whether any probe measured anything.
    pub fn measured(&self) -> bool {
        !series(self.probes()).is_empty()
    }

    /// The largest move of one pair between this run's two probes, when it reaches
    /// [`FAR_FACTOR`]: (pair, before ns, after ns).
    pub fn moved(&self) -> Option<(String, f64, f64)> {
        let (before, after) = (self.before.as_ref()?, self.after.as_ref()?);
        before
            .pairs
            .iter()
            .filter_map(|b| {
                let a = after.pairs.iter().find(|a| a.key() == b.key())?;
                let ratio = ratio_apart(b.round_trip_ns, a.round_trip_ns)?;
                (ratio >= FAR_FACTOR).then(|| (ratio, b.pair(), b.round_trip_ns, a.round_trip_ns))
            })
            .max_by(|x, y| x.0.total_cmp(&y.0))
            .map(|(_, pair, b, a)| (pair, b, a))
    }

    /// The hand-offs in a few words, for a figure's label: `0↔1 82 ns`, `0↔1 82→380 ns` (the
    /// probe before, then after, when they differ), several pairs joined by commas.
    pub fn short(&self) -> String {
        let before = self.before.as_ref();
        let after = self.after.as_ref();
        let mut parts = Vec::new();
        for s in series(self.probes()) {
            let find = |p: Option<&Probe>| {
                p.and_then(|p| p.pairs.iter().find(|x| x.key() == s.probe.key()))
                    .map(|x| x.round_trip_ns)
                    .filter(|v| v.is_finite())
            };
            let text = match (find(before), find(after)) {
                (Some(b), Some(a)) if ratio_apart(b, a).is_some_and(|r| r >= FAR_FACTOR) => {
                    format!("{} {b:.0}→{a:.0} ns", s.probe.pair())
                }
                _ => format!("{} {}", s.probe.pair(), range_ns(s.fastest(), s.slowest())),
            };
            parts.push(text);
        }
        parts.join(", ")
    }

    /// One sentence on the run's section: what the probes measured, whether the placement
    /// moved during the run, and whether a hand-off contradicts the topology by the absolute
    /// ceiling (the only test one run alone allows beyond its own two probes).
    pub fn describe(&self) -> String {
        let all = series(self.probes());
        if all.is_empty() {
            return match &self.failed {
                Some(why) => format!("Placement not probed: {why}."),
                None => "Placement not probed.".to_string(),
            };
        }
        let pairs: Vec<String> = all
            .iter()
            .map(|s| {
                format!(
                    "{} ({}) {}",
                    s.probe.pair(),
                    s.probe.presented,
                    range_ns(s.fastest(), s.slowest())
                )
            })
            .collect();
        let mut text = format!(
            "Placement: a cache line's round trip between CPUs {}, probed before and after this \
             run.",
            pairs.join(", ")
        );
        if let Some((pair, before, after)) = self.moved() {
            let _ = write!(
                text,
                " The placement changed during the run (CPUs {pair}: {before:.0} ns before, \
                 {after:.0} ns after, {:.1}×): its figures mix two placements.",
                ratio_apart(before, after).unwrap_or(f64::NAN)
            );
        }
        for s in
            all.iter().filter(|s| s.probe.shares_cache && s.slowest() > SHARED_CACHE_CEILING_NS)
        {
            let _ = write!(text, " {}", contradiction(&s.probe, s.slowest(), None));
        }
        text
    }
}

/// The larger of `x / y` and `y / x`; `None` unless both are positive and finite.
fn ratio_apart(x: f64, y: f64) -> Option<f64> {
    (x.is_finite() && y.is_finite() && x > 0.0 && y > 0.0).then(|| x.max(y) / x.min(y))
}

/// The sentence for a pair presented as sharing a cache whose hand-off is `slow` ns: against
/// `faster` ns measured on the same pair, or against the absolute ceiling.
fn contradiction(pair: &PairProbe, slow: f64, faster: Option<f64>) -> String {
    let against = match faster {
        Some(fast) => {
            format!("{:.1}× the {fast:.0} ns the same pair took in another probe", slow / fast)
        }
        None => format!("above the {SHARED_CACHE_CEILING_NS:.0} ns a shared cache costs"),
    };
    format!(
        "CPUs {} are presented as {} but handed a cache line over in {slow:.0} ns, {against}: \
         what a crossing between dies or sockets costs, so the topology the guest sees is not \
         where its CPUs sit.",
        pair.pair(),
        presented_as(pair)
    )
}

fn presented_as(pair: &PairProbe) -> String {
    match pair.presented.as_str() {
        "same L3" => "sharing an L3".to_string(),
        "SMT sibling" => "SMT siblings of one core".to_string(),
        other => other.to_string(),
    }
}

/// Whether `this` and `baseline` were measured in different placements: some CPU pair probed
/// in both has round trips [`FAR_FACTOR`] or more apart across all their probes (a run whose
/// own two probes are that far apart differs from any other). `Some(why)`, one clause, when
/// they differ; `None` when they agree or cannot be told apart (no pair probed in both).
pub fn differs(this: &RunPlacement, baseline: &RunPlacement) -> Option<String> {
    differs_across(std::slice::from_ref(this), std::slice::from_ref(baseline))
}

/// [`differs`] over several runs a side (a figure's rounds): every probe of `this` against every
/// probe of `baseline`, so a side whose rounds sat in two placements differs from any other.
pub fn differs_across(this: &[RunPlacement], baseline: &[RunPlacement]) -> Option<String> {
    let mine = series(this.iter().flat_map(RunPlacement::probes));
    let theirs = series(baseline.iter().flat_map(RunPlacement::probes));
    mine.iter()
        .filter_map(|m| {
            let t = theirs.iter().find(|t| t.probe.key() == m.probe.key())?;
            let fastest = m.fastest().min(t.fastest());
            let slowest = m.slowest().max(t.slowest());
            let ratio = ratio_apart(fastest, slowest)?;
            (ratio >= FAR_FACTOR).then(|| {
                (
                    ratio,
                    format!(
                        "CPUs {} handed a cache line over in {} here, {} in the baseline",
                        m.probe.pair(),
                        range_ns(m.fastest(), m.slowest()),
                        range_ns(t.fastest(), t.slowest())
                    ),
                )
            })
        })
        .max_by(|x, y| x.0.total_cmp(&y.0))
        .map(|(_, why)| why)
}

/// Whether a figure with these metric labels depends on where the CPUs sit: not when it was
/// measured on one CPU (`threads=1` or `workers=1`, and one unit), even inside a run that also
/// measured several.
pub fn depends_on_placement(labels: &BTreeMap<String, String>) -> bool {
    let one = |key: &str| labels.get(key).is_some_and(|v| v == "1");
    let one_unit = labels.get("units").is_none_or(|v| v == "1");
    !((one("threads") || one("workers")) && one_unit)
}

/// A step's placement against the other steps of its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Regime {
    /// Every probe within [`FAR_FACTOR`] of the fastest probe of its pair in the run.
    Near,
    /// Every probe [`FAR_FACTOR`] or more above it — or, for a pair presented as sharing a
    /// cache that was never faster than [`SHARED_CACHE_CEILING_NS`] in the run, every probe.
    Far,
    /// The step's own probes disagree: the placement changed while it ran.
    Moved,
    /// No probe measured anything.
    Unprobed,
}

impl Regime {
    pub fn name(self) -> &'static str {
        match self {
            Regime::Near => "near",
            Regime::Far => "far",
            Regime::Moved => "moved",
            Regime::Unprobed => "not probed",
        }
    }
}

/// One probed step of a run, with its regime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRegime {
    /// What the step measured, as the page names it.
    pub step: String,
    pub regime: Regime,
    /// The hand-offs in a few words ([`RunPlacement::short`]).
    pub hand_off: String,
    pub placement: RunPlacement,
}

/// The placement over a whole run of steps (a report): each probed step's regime, whether the
/// placement changed, and what a reader must know, in sentences.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlacementSummary {
    pub steps: Vec<StepRegime>,
    /// More than one placement was seen: steps `near` and `far`, or a step that `moved`.
    pub changed: bool,
    /// Sentences: the change and which steps it touched, contradictions with the topology.
    pub notes: Vec<String>,
}

impl PlacementSummary {
    /// The regime of step `step`, if it was probed.
    pub fn regime_of(&self, step: &str) -> Option<Regime> {
        self.steps.iter().find(|s| s.step == step).map(|s| s.regime)
    }

    /// Every pair's round trips over the whole run, in a few words: `0↔1 110–125 ns`.
    pub fn hand_offs(&self) -> String {
        series(self.steps.iter().flat_map(|s| s.placement.probes()))
            .iter()
            .map(|s| format!("{} {}", s.probe.pair(), range_ns(s.fastest(), s.slowest())))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Classifies the probed steps of one run, in run order: each probe is near or far against the
/// fastest probe of the same pair anywhere in the run ([`FAR_FACTOR`]); a step is `near` or
/// `far` when all its probes are, `moved` when they are not all one. A pair presented as
/// sharing a cache contradicts the topology when one of its probes is far, or — with nothing
/// faster to compare — when even its fastest is above [`SHARED_CACHE_CEILING_NS`] (then all
/// its probes are far).
pub fn classify(steps: &[(String, RunPlacement)]) -> PlacementSummary {
    let all = series(steps.iter().flat_map(|(_, p)| p.probes()));
    let fastest: BTreeMap<(u32, u32), f64> =
        all.iter().map(|s| (s.probe.key(), s.fastest())).collect();
    let is_far = |pair: &PairProbe| {
        fastest.get(&pair.key()).is_some_and(|&f| {
            let ns = pair.round_trip_ns;
            ns.is_finite()
                && (ns >= FAR_FACTOR * f || (pair.shares_cache && f > SHARED_CACHE_CEILING_NS))
        })
    };
    let mut out = PlacementSummary::default();
    for (step, placement) in steps {
        let probes: Vec<bool> = placement
            .probes()
            .flat_map(|p| &p.pairs)
            .filter(|p| p.round_trip_ns.is_finite() && p.round_trip_ns > 0.0)
            .map(is_far)
            .collect();
        let regime = match (probes.iter().any(|&f| f), probes.iter().all(|&f| f)) {
            _ if probes.is_empty() => Regime::Unprobed,
            (false, _) => Regime::Near,
            (true, true) => Regime::Far,
            (true, false) => Regime::Moved,
        };
        out.steps.push(StepRegime {
            step: step.clone(),
            regime,
            hand_off: placement.short(),
            placement: placement.clone(),
        });
    }
    let seen = |regime: Regime| out.steps.iter().any(|s| s.regime == regime);
    out.changed = seen(Regime::Moved) || (seen(Regime::Near) && seen(Regime::Far));
    if out.changed {
        let named = |regime: Regime| {
            let steps: Vec<String> = out
                .steps
                .iter()
                .filter(|s| s.regime == regime)
                .map(|s| format!("{} ({})", s.step, s.hand_off))
                .collect();
            (!steps.is_empty()).then(|| format!("{}: {}", regime.name(), steps.join("; ")))
        };
        let groups: Vec<String> =
            [Regime::Near, Regime::Far, Regime::Moved].into_iter().filter_map(named).collect();
        out.notes.push(format!(
            "The placement of the CPUs changed during this run: a cache line's round trip \
             between the same CPUs moved by {FAR_FACTOR}× or more between probes (a \
             hypervisor moving vCPUs does this). Figures that depend on where the CPUs sit are \
             labelled with the placement they were taken in — {}. Compare each only with \
             figures taken in the same placement.",
            groups.join(" — ")
        ));
    }
    for s in all.iter().filter(|s| s.probe.shares_cache) {
        let (fast, slow) = (s.fastest(), s.slowest());
        if slow >= FAR_FACTOR * fast {
            out.notes.push(contradiction(&s.probe, slow, Some(fast)));
        } else if fast > SHARED_CACHE_CEILING_NS {
            out.notes.push(contradiction(&s.probe, fast, None));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(pairs: &[(u32, u32, &str, bool, f64)]) -> Probe {
        Probe {
            pairs: pairs
                .iter()
                .map(|&(a, b, presented, shares, ns)| PairProbe::new(a, b, presented, shares, ns))
                .collect(),
        }
    }

    fn same_l3(before: f64, after: f64) -> RunPlacement {
        RunPlacement::probed(
            vec![0, 1],
            Some(probe(&[(0, 1, "same L3", true, before)])),
            Some(probe(&[(0, 1, "same L3", true, after)])),
        )
    }

    #[test]
    fn one_placement_throughout_is_near_and_unchanged() {
        // Twelve probes on a 2-vCPU x86-64 KVM guest under load: 110–125 ns (the noise FAR_FACTOR clears).
        let steps: Vec<(String, RunPlacement)> = [(110.5, 118.4), (122.6, 116.8), (123.9, 115.9)]
            .iter()
            .enumerate()
            .map(|(i, &(b, a))| (format!("step {i}"), same_l3(b, a)))
            .collect();
        let s = classify(&steps);
        assert!(!s.changed, "{s:?}");
        assert!(s.notes.is_empty(), "{:?}", s.notes);
        assert!(s.steps.iter().all(|x| x.regime == Regime::Near), "{s:?}");
        assert_eq!(s.hand_offs(), "0↔1 110–124 ns");
    }

    #[test]
    fn a_jump_between_steps_labels_them_near_and_far() {
        // The AMD VM: 75–90 ns, then 360–410 ns for the same pair, presented as one L3.
        let steps = vec![
            ("bandwidth by thread count".to_string(), same_l3(80.0, 88.0)),
            ("loaded latency".to_string(), same_l3(90.0, 378.0)),
            ("core to core".to_string(), same_l3(365.0, 410.0)),
        ];
        let s = classify(&steps);
        assert!(s.changed);
        let regimes: Vec<Regime> = s.steps.iter().map(|x| x.regime).collect();
        assert_eq!(regimes, [Regime::Near, Regime::Moved, Regime::Far]);
        assert_eq!(s.regime_of("core to core"), Some(Regime::Far));
        assert_eq!(s.steps[1].hand_off, "0↔1 90→378 ns");
        assert_eq!(s.steps[2].hand_off, "0↔1 365–410 ns");
        let change = &s.notes[0];
        assert!(change.contains("changed during this run"), "{change}");
        assert!(change.contains("near: bandwidth by thread count (0↔1 80–88 ns)"), "{change}");
        assert!(change.contains("far: core to core"), "{change}");
        // The pair is presented as sharing an L3: its far probes contradict that.
        let contradiction = s.notes.iter().find(|n| n.contains("presented as sharing an L3"));
        let contradiction = contradiction.expect("a contradiction note");
        assert!(contradiction.contains("410 ns, 5.1× the 80 ns"), "{contradiction}");
    }

    #[test]
    fn one_far_placement_throughout_contradicts_a_shared_cache_by_the_ceiling() {
        // No faster probe in the run: the ratio cannot tell, the ceiling does.
        let s = classify(&[
            ("c2c".to_string(), same_l3(370.0, 380.0)),
            ("locks".to_string(), same_l3(375.0, 390.0)),
        ]);
        assert!(!s.changed, "one placement throughout");
        assert!(s.steps.iter().all(|x| x.regime == Regime::Far), "{s:?}");
        assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
        assert!(s.notes[0].contains("above the 250 ns a shared cache costs"), "{}", s.notes[0]);
        // The same figures between CPUs presented as on other nodes are no contradiction.
        let remote = RunPlacement::probed(
            vec![0, 8],
            Some(probe(&[(0, 8, "other node", false, 370.0)])),
            None,
        );
        let s = classify(&[("c2c".to_string(), remote)]);
        assert!(s.notes.is_empty());
        assert_eq!(s.steps[0].regime, Regime::Near);
        // Alone, the run's own sentence says it too.
        assert!(same_l3(370.0, 380.0).describe().contains("presented as sharing an L3"));
        assert!(!same_l3(110.0, 120.0).describe().contains("presented as"));
    }

    #[test]
    fn a_run_whose_own_probes_disagree_has_moved() {
        let moved = same_l3(82.0, 380.0);
        assert_eq!(moved.moved(), Some(("0↔1".to_string(), 82.0, 380.0)));
        let text = moved.describe();
        assert!(
            text.contains("changed during the run (CPUs 0↔1: 82 ns before, 380 ns after, 4.6×)"),
            "{text}"
        );
        assert_eq!(moved.short(), "0↔1 82→380 ns");
        // 1.9× apart is within one placement.
        assert_eq!(same_l3(100.0, 190.0).moved(), None);
        assert_eq!(same_l3(100.0, 190.0).short(), "0↔1 100–190 ns");
        // A run with one probe cannot have moved.
        let one =
            RunPlacement::probed(vec![0, 1], Some(probe(&[(0, 1, "same L3", true, 80.0)])), None);
        assert_eq!(one.moved(), None);
        assert_eq!(one.short(), "0↔1 80 ns");
    }

    #[test]
    fn comparisons_need_one_placement_on_both_sides() {
        let near = same_l3(80.0, 88.0);
        let near_again = same_l3(84.0, 90.0);
        let far = same_l3(360.0, 410.0);
        assert_eq!(differs(&near, &near_again), None);
        let why = differs(&near, &far).expect("differs");
        assert_eq!(
            why,
            "CPUs 0↔1 handed a cache line over in 80–88 ns here, 360–410 ns in the baseline"
        );
        assert!(differs(&far, &near).is_some(), "either way round");
        // A run that moved during itself differs even from a run of either placement.
        assert!(differs(&same_l3(80.0, 380.0), &near).is_some());
        assert!(differs(&same_l3(80.0, 380.0), &far).is_some());
        // No pair in common, or no probe on one side (an older run): nothing to tell.
        let other =
            RunPlacement::probed(vec![2, 3], Some(probe(&[(2, 3, "same L3", true, 400.0)])), None);
        assert_eq!(differs(&near, &other), None);
        assert_eq!(differs(&near, &RunPlacement::default()), None);
        // The pair matches either way round.
        let swapped =
            RunPlacement::probed(vec![0, 1], Some(probe(&[(1, 0, "same L3", true, 400.0)])), None);
        assert!(differs(&near, &swapped).is_some());
    }

    #[test]
    fn figures_of_one_cpu_do_not_depend_on_placement() {
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        assert!(!depends_on_placement(&labels(&[("threads", "1")])));
        assert!(!depends_on_placement(&labels(&[("workers", "1"), ("lock", "spin")])));
        assert!(!depends_on_placement(&labels(&[("units", "1"), ("threads", "1")])));
        assert!(depends_on_placement(&labels(&[("units", "2"), ("threads", "1")])));
        assert!(depends_on_placement(&labels(&[("threads", "2")])));
        assert!(depends_on_placement(&labels(&[("kernel", "copy")])));
        assert!(depends_on_placement(&labels(&[])));
    }

    #[test]
    fn stored_parameters_read_back_and_older_runs_have_none() {
        let p = same_l3(82.0, 85.0);
        let parameters = serde_json::json!({ "argv": ["platscope"], "placement": p });
        assert_eq!(RunPlacement::from_parameters(&parameters), Some(p));
        assert_eq!(RunPlacement::from_parameters(&serde_json::json!({ "argv": [] })), None);
        assert_eq!(RunPlacement::from_parameters(&Value::Null), None);
        // A damaged entry is no placement, never an error that hides the run.
        let bad = serde_json::json!({ "placement": { "cpus": "x" } });
        assert_eq!(RunPlacement::from_parameters(&bad), None);
        // A probe that failed says why.
        let failed =
            RunPlacement { failed: Some("CPU 1 is not allowed".into()), ..RunPlacement::default() };
        assert_eq!(failed.describe(), "Placement not probed: CPU 1 is not allowed.");
        assert!(!failed.measured());
    }

    #[test]
    fn non_finite_probes_are_left_out() {
        let s = classify(&[("x".to_string(), same_l3(f64::NAN, 80.0))]);
        assert_eq!(s.steps[0].regime, Regime::Near);
        let none = classify(&[("x".to_string(), same_l3(f64::NAN, f64::INFINITY))]);
        assert_eq!(none.steps[0].regime, Regime::Unprobed);
        assert!(!none.changed);
    }
}
