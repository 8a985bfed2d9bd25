//! The pure part of core to core: pairs classed by topology, one pair's visits folded into
//! its lines and their spread, and pairs folded into classes and node×node cells.

use measure::summary::{quantile, summarize, Summary};
use serde::{Deserialize, Serialize};
use topo::Topology;

use super::{line_address, ADDRESS_FACTOR, PASSES};

/// How the two CPUs of a pair are related, closest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PairClass {
    /// Hardware threads of one core.
    SmtSibling,
    /// Different cores sharing a last-level (L3) cache.
    SameL3,
    /// Same NUMA node, different L3 (or no L3 known).
    SameNode,
    /// Different NUMA nodes.
    OtherNode,
}

impl PairClass {
    pub fn name(self) -> &'static str {
        match self {
            PairClass::SmtSibling => "SMT sibling",
            PairClass::SameL3 => "same L3",
            PairClass::SameNode => "same node, other L3",
            PairClass::OtherNode => "other node",
        }
    }

    /// Stable label for metrics.
    pub fn label(self) -> &'static str {
        match self {
            PairClass::SmtSibling => "smt",
            PairClass::SameL3 => "same-l3",
            PairClass::SameNode => "same-node",
            PairClass::OtherNode => "other-node",
        }
    }
}

/// The class of the pair (`a`, `b`) on `topology`.
pub fn pair_class(topology: &Topology, a: u32, b: u32) -> PairClass {
    if topology.node_of_cpu(a) != topology.node_of_cpu(b) {
        return PairClass::OtherNode;
    }
    if topology.cpu(a).is_some_and(|c| c.smt_siblings.contains(&b)) {
        return PairClass::SmtSibling;
    }
    let shared_l3 =
        topology.caches.iter().any(|c| c.level == 3 && c.cpus.contains(&a) && c.cpus.contains(&b));
    if shared_l3 {
        PairClass::SameL3
    } else {
        PairClass::SameNode
    }
}

/// One measured pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cPair {
    /// The pinger's CPU (it also times).
    pub a: u32,
    /// The ponger's CPU.
    pub b: u32,
    pub class: PairClass,
    /// ns per round trip (two hand-offs) of each timed batch, over all lines.
    pub round_trip_ns: Summary,
    /// Round trips per timed batch.
    pub batch_rounds: u64,
    /// Each line the pair was measured on (empty in results stored before lines existed).
    #[serde(default)]
    pub lines: Vec<C2cLine>,
    /// The lines' medians against each other and against one line's move between passes;
    /// `None` with fewer than two lines.
    #[serde(default)]
    pub line_spread: Option<LineSpread>,
}

impl C2cPair {
    /// One hand-off: half the median round trip (multichase prints this figure).
    pub fn one_way_ns(&self) -> f64 {
        self.round_trip_ns.median / 2.0
    }
}

/// One line of a pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cLine {
    /// Its page, counted from the run's first page (see [`line_address`]).
    pub page: usize,
    /// The word's byte offset inside that page.
    pub offset: usize,
    /// Median ns per round trip over this line's batches.
    pub median_ns: f64,
    /// The median of each pass over this line, in order.
    pub pass_medians_ns: Vec<f64>,
    /// Batches timed on this line.
    pub batches: usize,
}

/// How far a pair's lines are apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineSpread {
    /// Lines with a figure.
    pub lines: usize,
    /// Median of the lines' medians.
    pub median_ns: f64,
    /// The fastest and the slowest line's median.
    pub min_ns: f64,
    pub max_ns: f64,
    /// The within-line noise: the largest difference between two passes' medians of one line;
    /// `None` when no line was measured in two passes.
    pub noise_ns: Option<f64>,
    /// The spread (`max_ns − min_ns`) exceeds [`ADDRESS_FACTOR`] × `noise_ns`: the line's
    /// address changes the round trip.
    pub wider_than_noise: bool,
}

impl LineSpread {
    /// Slowest minus fastest line.
    pub fn range_ns(&self) -> f64 {
        self.max_ns - self.min_ns
    }
}

/// The spread of `lines` (pure); `None` with fewer than two lines.
pub fn line_spread(lines: &[C2cLine]) -> Option<LineSpread> {
    let mut medians: Vec<f64> =
        lines.iter().map(|l| l.median_ns).filter(|m| m.is_finite()).collect();
    if medians.len() < 2 {
        return None;
    }
    medians.sort_by(f64::total_cmp);
    let noise_ns = lines
        .iter()
        .filter(|l| l.pass_medians_ns.len() >= 2)
        .map(|l| {
            let (lo, hi) = l
                .pass_medians_ns
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &m| (lo.min(m), hi.max(m)));
            hi - lo
        })
        .filter(|d| d.is_finite())
        .reduce(f64::max);
    let (min_ns, max_ns) = (medians[0], medians[medians.len() - 1]);
    let wider_than_noise = noise_ns.is_some_and(|n| max_ns - min_ns > ADDRESS_FACTOR * n);
    Some(LineSpread {
        lines: medians.len(),
        median_ns: quantile(&medians, 0.5),
        min_ns,
        max_ns,
        noise_ns,
        wider_than_noise,
    })
}

/// The order the lines are visited in, as line indices: every line once per pass, and
/// [`PASSES`] passes when there are several lines (two visits in a row never share a line).
pub fn visits(lines: usize) -> Vec<usize> {
    let passes = if lines > 1 { PASSES } else { 1 };
    (0..passes).flat_map(|_| 0..lines).collect()
}

/// What one pair's visits measured: the batches of each visit (in [`visits`] order) and the
/// round trips per batch.
#[derive(Debug, Clone, PartialEq)]
pub struct PairSamples {
    pub per_visit: Vec<Vec<f64>>,
    pub batch_rounds: u64,
}

/// Folds one pair's visits into its summary over all lines and its lines (pure). `None` when
/// no batch was measured.
pub fn fold_pair_lines(
    samples: &PairSamples,
    lines: usize,
) -> Option<(Summary, Vec<C2cLine>, Option<LineSpread>)> {
    let order = visits(lines);
    let all: Vec<f64> = samples.per_visit.iter().flatten().copied().collect();
    let round_trip_ns = summarize(&all)?;
    let out: Vec<C2cLine> = (0..lines)
        .filter_map(|index| {
            let mine: Vec<&Vec<f64>> = order
                .iter()
                .zip(&samples.per_visit)
                .filter(|(&line, _)| line == index)
                .map(|(_, s)| s)
                .collect();
            let pooled: Vec<f64> = mine.iter().flat_map(|s| s.iter().copied()).collect();
            let summary = summarize(&pooled)?;
            let (page, offset) = line_address(index);
            Some(C2cLine {
                page,
                offset,
                median_ns: summary.median,
                pass_medians_ns: mine
                    .iter()
                    .filter_map(|s| summarize(s).map(|s| s.median))
                    .collect(),
                batches: summary.samples,
            })
        })
        .collect();
    let spread = line_spread(&out);
    Some((round_trip_ns, out, spread))
}

/// Pairs of one class folded together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassSummary {
    pub class: PairClass,
    pub pairs: usize,
    /// Median of the pairs' median round trips.
    pub median_ns: f64,
    /// The worst pair's p99 round trip.
    pub p99_ns: f64,
    /// Fastest and slowest pair medians.
    pub min_ns: f64,
    pub max_ns: f64,
}

/// Pairs between two nodes folded together (node `from` holds the pinger).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeCell {
    pub from: u32,
    pub to: u32,
    pub pairs: usize,
    pub median_ns: f64,
    pub p99_ns: f64,
}

fn fold<'a>(pairs: impl Iterator<Item = &'a C2cPair>) -> Option<(usize, f64, f64, f64, f64)> {
    let mut medians = Vec::new();
    let mut p99 = f64::NAN;
    for p in pairs {
        medians.push(p.round_trip_ns.median);
        p99 = p99.max(p.round_trip_ns.p99);
    }
    medians.sort_by(f64::total_cmp);
    let (&min, &max) = (medians.first()?, medians.last()?);
    Some((medians.len(), quantile(&medians, 0.5), p99, min, max))
}

/// The pairs folded by class, closest class first; classes without pairs are left out.
pub fn fold_classes(pairs: &[C2cPair]) -> Vec<ClassSummary> {
    let mut classes: Vec<PairClass> = pairs.iter().map(|p| p.class).collect();
    classes.sort();
    classes.dedup();
    classes
        .into_iter()
        .filter_map(|class| {
            let (n, median_ns, p99_ns, min_ns, max_ns) =
                fold(pairs.iter().filter(|p| p.class == class))?;
            Some(ClassSummary { class, pairs: n, median_ns, p99_ns, min_ns, max_ns })
        })
        .collect()
}

/// The pairs folded node×node; a pair counts for both (from, to) and (to, from), since the
/// round trip is symmetric. Nodes without measured CPUs are left out.
pub fn fold_nodes(pairs: &[C2cPair], topology: &Topology) -> Vec<NodeCell> {
    let node = |cpu: u32| topology.node_of_cpu(cpu);
    let mut nodes: Vec<u32> = pairs.iter().flat_map(|p| [node(p.a), node(p.b)]).flatten().collect();
    nodes.sort_unstable();
    nodes.dedup();
    let mut out = Vec::new();
    for &from in &nodes {
        for &to in &nodes {
            let between = pairs.iter().filter(|p| {
                let (na, nb) = (node(p.a), node(p.b));
                (na == Some(from) && nb == Some(to)) || (na == Some(to) && nb == Some(from))
            });
            if let Some((n, median_ns, p99_ns, _, _)) = fold(between) {
                out.push(NodeCell { from, to, pairs: n, median_ns, p99_ns });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::c2c::MAX_LINES;

    fn pair(topology: &Topology, a: u32, b: u32, median: f64) -> C2cPair {
        let round_trip_ns =
            summarize(&[median * 0.98, median * 0.99, median, median * 1.01, median * 1.5])
                .expect("samples");
        C2cPair {
            a,
            b,
            class: pair_class(topology, a, b),
            round_trip_ns,
            batch_rounds: 1000,
            lines: Vec::new(),
            line_spread: None,
        }
    }

    fn all_pairs(topology: &Topology, ns: impl Fn(PairClass) -> f64) -> Vec<C2cPair> {
        let cpus = topology.online_cpu_ids();
        let mut out = Vec::new();
        for (i, &a) in cpus.iter().enumerate() {
            for &b in &cpus[i + 1..] {
                out.push(pair(topology, a, b, ns(pair_class(topology, a, b))));
            }
        }
        out
    }

    fn ns(class: PairClass) -> f64 {
        match class {
            PairClass::SmtSibling => 40.0,
            PairClass::SameL3 => 100.0,
            PairClass::SameNode => 180.0,
            PairClass::OtherNode => 300.0,
        }
    }

    #[test]
    fn smt_and_one_l3_on_one_node() {
        // 1 node, 1 L3, 2 cores × 2 threads: CPUs 0,1 are one core, 2,3 the other.
        let t = Topology::from_synthetic("pack:1 [numa(memory=1GiB)] l3:1 core:2 pu:2")
            .expect("topology");
        assert_eq!(pair_class(&t, 0, 1), PairClass::SmtSibling);
        assert_eq!(pair_class(&t, 0, 2), PairClass::SameL3);
        let pairs = all_pairs(&t, ns);
        assert_eq!(pairs.len(), 6, "4 CPUs, 6 pairs, no diagonal");
        let classes = fold_classes(&pairs);
        let got: Vec<(PairClass, usize)> = classes.iter().map(|c| (c.class, c.pairs)).collect();
        assert_eq!(got, [(PairClass::SmtSibling, 2), (PairClass::SameL3, 4)]);
        assert_eq!(classes[0].median_ns, 40.0);
        assert!((classes[1].p99_ns - 100.0 * 1.5).abs() < 10.0, "{}", classes[1].p99_ns);
        let nodes = fold_nodes(&pairs, &t);
        assert_eq!(nodes.len(), 1);
        assert_eq!((nodes[0].from, nodes[0].to, nodes[0].pairs), (0, 0, 6));
    }

    #[test]
    fn two_l3s_in_a_node_are_told_apart() {
        let t = Topology::from_synthetic("pack:1 [numa(memory=1GiB)] l3:2 core:2 pu:1")
            .expect("topology");
        assert_eq!(pair_class(&t, 0, 1), PairClass::SameL3);
        assert_eq!(pair_class(&t, 0, 2), PairClass::SameNode);
        assert_eq!(pair_class(&t, 1, 3), PairClass::SameNode);
        let classes = fold_classes(&all_pairs(&t, ns));
        let got: Vec<(PairClass, usize, f64)> =
            classes.iter().map(|c| (c.class, c.pairs, c.median_ns)).collect();
        assert_eq!(got, [(PairClass::SameL3, 2, 100.0), (PairClass::SameNode, 4, 180.0)]);
    }

    #[test]
    fn two_nodes_fold_to_a_symmetric_node_matrix() {
        let t = Topology::from_synthetic("pack:2 [numa(memory=1GiB)] l3:1 core:2 pu:2")
            .expect("topology");
        assert_eq!(pair_class(&t, 0, 4), PairClass::OtherNode);
        assert_eq!(pair_class(&t, 4, 5), PairClass::SmtSibling);
        let pairs = all_pairs(&t, ns);
        assert_eq!(pairs.len(), 28);
        let cells = fold_nodes(&pairs, &t);
        let cell = |f, to| cells.iter().find(|c| (c.from, c.to) == (f, to)).expect("cell");
        assert_eq!(cells.len(), 4);
        assert_eq!(cell(0, 1).pairs, 16);
        assert_eq!(cell(1, 0).pairs, 16);
        assert_eq!(cell(0, 1).median_ns, 300.0);
        assert_eq!(cell(0, 0).pairs, 6);
        // Inside a node: 2 SMT pairs at 40 and 4 cross-core at 100; the median is 100.
        assert_eq!(cell(1, 1).median_ns, 100.0);
        let classes = fold_classes(&pairs);
        assert_eq!(classes.last().map(|c| (c.class, c.pairs)), Some((PairClass::OtherNode, 16)));
    }

    #[test]
    fn four_nodes_have_sixteen_cells() {
        let t =
            Topology::from_synthetic("pack:4 [numa(memory=1GiB)] core:2 pu:1").expect("topology");
        let pairs = all_pairs(&t, ns);
        let cells = fold_nodes(&pairs, &t);
        assert_eq!(cells.len(), 16);
        for c in &cells {
            let want = if c.from == c.to { (1, 180.0) } else { (4, 300.0) };
            assert_eq!((c.pairs, c.median_ns), want, "{c:?}");
        }
    }

    #[test]
    fn visits_pass_twice_over_several_lines_never_twice_in_a_row() {
        assert_eq!(visits(1), [0], "one line: one visit, nothing to compare it with");
        assert_eq!(visits(3), [0, 1, 2, 0, 1, 2]);
        for n in 2..=MAX_LINES {
            let v = visits(n);
            assert_eq!(v.len(), n * PASSES);
            assert!(v.windows(2).all(|w| w[0] != w[1]), "{n}: {v:?}");
            for line in 0..n {
                assert_eq!(v.iter().filter(|&&x| x == line).count(), PASSES, "{n}");
            }
        }
    }

    /// Batches of one visit around `ns`, ±`jitter`.
    fn batches(ns: f64, jitter: f64) -> Vec<f64> {
        vec![ns - jitter, ns, ns + jitter, ns, ns - jitter / 2.0]
    }

    /// Samples for lines at `ns`, pass 2 moved by `drift`.
    fn samples(ns: &[f64], drift: f64) -> PairSamples {
        let mut per_visit: Vec<Vec<f64>> = ns.iter().map(|&n| batches(n, 0.5)).collect();
        per_visit.extend(ns.iter().map(|&n| batches(n + drift, 0.5)));
        PairSamples { per_visit, batch_rounds: 5000 }
    }

    // A spread seen on a real pair of CPUs: 57–80 ns across lines for one pair, each line steady.
    #[test]
    fn lines_whose_address_matters_are_told_from_noise() {
        let ns = [57.0, 62.0, 80.0, 60.0];
        let (all, lines, spread) = fold_pair_lines(&samples(&ns, 0.8), ns.len()).expect("folded");
        assert_eq!(all.samples, 40, "every batch of every line and pass");
        assert_eq!(lines.len(), 4);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        let medians: Vec<f64> = lines.iter().map(|l| l.median_ns).collect();
        for (got, want) in medians.iter().zip([57.4, 62.4, 80.4, 60.4]) {
            assert!(close(*got, want), "{medians:?}");
        }
        let passes = &lines[2].pass_medians_ns;
        assert!(
            passes.len() == 2 && close(passes[0], 80.0) && close(passes[1], 80.8),
            "{passes:?}"
        );
        assert_eq!((lines[2].page, lines[2].offset, lines[2].batches), (2, 640, 10));
        let s = spread.expect("spread");
        assert_eq!(s.lines, 4);
        assert!(close(s.min_ns, 57.4) && close(s.max_ns, 80.4), "{s:?}");
        assert!((s.median_ns - 61.4).abs() < 1e-9, "{s:?}");
        assert!((s.noise_ns.expect("noise") - 0.8).abs() < 1e-9, "{s:?}");
        assert!(s.wider_than_noise, "{s:?}");
        assert!((s.range_ns() - 23.0).abs() < 1e-9);

        // The same lines, but each moves 15 ns between passes: the spread is not the address.
        let (_, _, spread) = fold_pair_lines(&samples(&ns, 15.0), ns.len()).expect("folded");
        let s = spread.expect("spread");
        assert!(!s.wider_than_noise, "{s:?}");
        // Just over and just under the factor.
        let ns = [60.0, 60.0 + 2.0 * ADDRESS_FACTOR + 0.1];
        let s = fold_pair_lines(&samples(&ns, 2.0), 2).and_then(|f| f.2).expect("spread");
        assert!(s.wider_than_noise, "{s:?}");
        let ns = [60.0, 60.0 + 2.0 * ADDRESS_FACTOR - 0.1];
        let s = fold_pair_lines(&samples(&ns, 2.0), 2).and_then(|f| f.2).expect("spread");
        assert!(!s.wider_than_noise, "{s:?}");
    }

    #[test]
    fn one_line_or_one_pass_makes_no_verdict() {
        let one = PairSamples { per_visit: vec![batches(70.0, 1.0)], batch_rounds: 100 };
        let (all, lines, spread) = fold_pair_lines(&one, 1).expect("folded");
        assert_eq!((all.median, lines.len(), spread), (70.0, 1, None));
        assert_eq!(lines[0].pass_medians_ns, [70.0]);
        // Interrupted in the first pass: lines without a second pass have no noise figure.
        let cut = PairSamples {
            per_visit: vec![batches(57.0, 0.1), batches(80.0, 0.1), Vec::new()],
            batch_rounds: 100,
        };
        let (_, lines, spread) = fold_pair_lines(&cut, 3).expect("folded");
        assert_eq!(lines.len(), 2, "the unvisited line is left out");
        let s = spread.expect("two lines");
        assert_eq!((s.noise_ns, s.wider_than_noise), (None, false));
        // Nothing measured at all.
        let none = PairSamples { per_visit: vec![Vec::new(), Vec::new()], batch_rounds: 100 };
        assert_eq!(fold_pair_lines(&none, 1), None);
    }

    #[test]
    fn pairs_json_keeps_the_summary_and_adds_each_line() {
        let t =
            Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1").expect("topology");
        let ns = [57.0, 80.0];
        let (round_trip_ns, lines, line_spread) =
            fold_pair_lines(&samples(&ns, 0.5), 2).expect("folded");
        let p = C2cPair {
            a: 0,
            b: 1,
            class: pair_class(&t, 0, 1),
            round_trip_ns,
            batch_rounds: 5000,
            lines,
            line_spread,
        };
        let v = serde_json::to_value(&p).expect("json");
        assert!(v["round_trip_ns"]["median"].is_f64(), "{v}");
        assert_eq!(v["round_trip_ns"]["samples"], 20, "the summary is over all lines: {v}");
        let lines = v["lines"].as_array().expect("lines");
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1]["page"], 1, "{v}");
        assert_eq!(lines[1]["offset"], 320, "{v}");
        assert!(lines[1]["median_ns"].is_f64() && lines[1]["pass_medians_ns"].is_array());
        assert_eq!(v["line_spread"]["wider_than_noise"], true, "{v}");
        let back: C2cPair = serde_json::from_value(v.clone()).expect("round trip");
        assert_eq!(back, p);
        // A pair stored before lines existed still reads, with no lines.
        let mut old = v;
        let o = old.as_object_mut().expect("object");
        o.remove("lines");
        o.remove("line_spread");
        let back: C2cPair = serde_json::from_value(old).expect("old pair");
        assert!(back.lines.is_empty() && back.line_spread.is_none());
    }
}
