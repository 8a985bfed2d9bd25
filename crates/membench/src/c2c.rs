//! Core to core: what handing one modified cache line between two CPUs costs. For every pair
//! of CPUs, two pinned threads ping-pong one 8-byte word alone on its page
//! ([`crate::kernels::c2c`]); batches of round trips are timed from outside the loop with the
//! cheapest trustworthy clock. The line's page is placed (`--line-on NODE`) and verified, so
//! the home node's part is visible. Pairs fold to topology classes (SMT siblings, same L3,
//! same node, other node) and to a node×node matrix — pure functions, tested on synthetic
//! topologies.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use measure::stop;
use measure::summary::{quantile, summarize, Summary};
use place::{pin, Arena, ArenaSpec, MemPolicy, PageSize, Placement};
use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::kernels::c2c::{self as k, PingFn, PongFn, STOP};
use crate::timers::cheapest_trustworthy_clock;
use crate::BenchError;

/// How the line is polled and handed over (see [`crate::kernels::c2c`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum C2cMode {
    /// Poll with loads, hand off with a store (multichase `pingpong -u`).
    Read,
    /// Poll with a locked read-modify-write, hand off with a store.
    Write,
    /// Compare-and-swap until it succeeds (multichase `pingpong -l`).
    Cas,
    /// Poll with loads, hand off with an atomic exchange.
    Xchg,
}

impl C2cMode {
    pub const ALL: [C2cMode; 4] = [C2cMode::Read, C2cMode::Write, C2cMode::Cas, C2cMode::Xchg];

    /// The mode's out-of-line pinger and ponger.
    fn loops(self) -> (PingFn, PongFn) {
        match self {
            C2cMode::Read => (k::ping_read, k::pong_read),
            C2cMode::Write => (k::ping_write, k::pong_write),
            C2cMode::Cas => (k::ping_cas, k::pong_cas),
            C2cMode::Xchg => (k::ping_xchg, k::pong_xchg),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            C2cMode::Read => "read",
            C2cMode::Write => "write",
            C2cMode::Cas => "cas",
            C2cMode::Xchg => "xchg",
        }
    }

    /// Parses `read`, `write`, `cas` or `xchg`.
    pub fn parse(text: &str) -> Result<Self, BenchError> {
        Self::ALL.into_iter().find(|m| m.name() == text).ok_or_else(|| {
            BenchError::Usage(format!("unknown mode {text:?}: give read, write, cas or xchg"))
        })
    }
}

/// What to measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cOptions {
    /// The CPUs whose every pair is measured (at least two).
    pub cpus: Vec<u32>,
    pub mode: C2cMode,
    /// The node the line's page is bound to; `None`: first touched by the first CPU's thread.
    pub line_on: Option<u32>,
    /// Sampling time per pair.
    pub duration: Duration,
}

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
    /// ns per round trip (two hand-offs) of each timed batch.
    pub round_trip_ns: Summary,
    /// Round trips per timed batch.
    pub batch_rounds: u64,
}

impl C2cPair {
    /// One hand-off: half the median round trip (multichase prints this figure).
    pub fn one_way_ns(&self) -> f64 {
        self.round_trip_ns.median / 2.0
    }
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

/// A whole `mem c2c` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cResult {
    pub mode: C2cMode,
    pub cpus: Vec<u32>,
    pub line_on: Option<u32>,
    /// Where the line's page really was, as the kernel reported it.
    pub line: Placement,
    /// Measured pairs (a < b), in order.
    pub pairs: Vec<C2cPair>,
    pub classes: Vec<ClassSummary>,
    pub nodes: Vec<NodeCell>,
    pub interrupted: bool,
}

impl C2cResult {
    /// The pair of two CPUs, either way round.
    pub fn pair(&self, a: u32, b: u32) -> Option<&C2cPair> {
        self.pairs.iter().find(|p| (p.a, p.b) == (a, b) || (p.a, p.b) == (b, a))
    }
}

/// Checks the request against the machine: at least two distinct CPUs, a line node that
/// exists, has memory and has CPUs.
pub fn check(options: &C2cOptions, topology: &Topology) -> Result<(), BenchError> {
    let mut cpus = options.cpus.clone();
    cpus.sort_unstable();
    cpus.dedup();
    if cpus.len() < 2 {
        return Err(BenchError::Usage(format!(
            "a cache line needs two CPUs to move between, got {} ({}): give --cpus with at \
             least two, or run where more than one CPU is allowed",
            cpus.len(),
            topo::idlist::format(&cpus)
        )));
    }
    if let Some(node) = options.line_on {
        let ids = topology.node_ids();
        let Some(n) = topology.node(node) else {
            return Err(place::PlaceError::NoSuchId {
                kind: "node",
                id: node,
                valid: topo::idlist::format(&ids),
            }
            .into());
        };
        if !topology.nodes_with_memory().contains(&node) {
            return Err(place::PlaceError::NodeWithoutMemory {
                node,
                with_memory: topo::idlist::format(&topology.nodes_with_memory()),
            }
            .into());
        }
        if n.memory_only || n.cpus.is_empty() {
            return Err(BenchError::Usage(format!(
                "--line-on {node}: node {node} is memory-only (no CPUs); give a node with CPUs \
                 and memory, whose cores the line is homed beside"
            )));
        }
    }
    Ok(())
}

/// Padding so each thread's flag sits alone on its lines.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Padded<T>(T);

/// The first batch is warm-up and sizes the others to about this long.
const BATCH_TARGET: Duration = Duration::from_micros(500);
const WARMUP_ROUNDS: u64 = 2000;

/// Measures one pair on the line: a pinger thread pinned to `a` times batches, a ponger
/// thread pinned to `b` answers. `Ok(None)` when Ctrl-C came before a batch was measured.
fn measure_pair(
    mode: C2cMode,
    line: &AtomicU64,
    a: u32,
    b: u32,
    duration: Duration,
) -> Result<Option<(Summary, u64)>, BenchError> {
    let (ping, pong) = mode.loops();
    line.store(0, Ordering::Release);
    let ready = Padded(AtomicBool::new(false));
    let failed = Padded(AtomicBool::new(false));
    let clock = cheapest_trustworthy_clock();
    std::thread::scope(|s| {
        let ponger = s.spawn(|| {
            let pinned = pin::pin_current_thread(&[b]);
            if pinned.is_err() {
                failed.0.store(true, Ordering::Release);
            }
            ready.0.store(true, Ordering::Release);
            if pinned.is_ok() {
                pong(line, 1);
            }
            pinned
        });
        let pinger = s.spawn(|| -> Result<Option<(Summary, u64)>, BenchError> {
            let pinned = pin::pin_current_thread(&[a]);
            while !ready.0.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            let mut turn = 0;
            let mut samples = Vec::new();
            let mut rounds = 0;
            if pinned.is_ok() && !failed.0.load(Ordering::Acquire) {
                // Warm-up: both threads spinning, the line in their caches; sizes the batches.
                let t = clock.read();
                turn = ping(line, turn, WARMUP_ROUNDS);
                let warm = clock.ticks_to_ns(clock.read().wrapping_sub(t)) / WARMUP_ROUNDS as f64;
                rounds = ((BATCH_TARGET.as_nanos() as f64 / warm.max(1.0)) as u64).max(100);
                let end = Instant::now() + duration;
                while Instant::now() < end && !stop::requested() {
                    let t = clock.read();
                    turn = ping(line, turn, rounds);
                    samples.push(clock.ticks_to_ns(clock.read().wrapping_sub(t)) / rounds as f64);
                }
                // The ponger's answer to the last round, then stop it.
                while line.load(Ordering::Acquire) != turn {
                    std::hint::spin_loop();
                }
            }
            line.store(STOP, Ordering::Release);
            pinned?;
            Ok(summarize(&samples).map(|s| (s, rounds)))
        });
        let measured =
            pinger.join().unwrap_or_else(|_| Err(BenchError::Worker("c2c pinger panicked".into())));
        let pinned = ponger
            .join()
            .unwrap_or_else(|_| Err(place::PlaceError::Conflict("c2c ponger panicked".into())));
        pinned?;
        measured
    })
}

/// Runs every pair of `options.cpus` (a < b) in order; `progress` is told after each pair.
/// Ctrl-C keeps the pairs measured so far.
pub fn run(
    options: &C2cOptions,
    topology: &Topology,
    mut progress: impl FnMut(usize, usize),
) -> Result<C2cResult, BenchError> {
    check(options, topology)?;
    cheapest_trustworthy_clock();
    let mut cpus = options.cpus.clone();
    cpus.sort_unstable();
    cpus.dedup();
    let policy = options.line_on.map_or(MemPolicy::Inherit, |n| MemPolicy::Bind(vec![n]));
    // The line's page: made (and first touched) on the first CPU unless bound elsewhere.
    let first = cpus[0];
    let arena = std::thread::scope(|s| {
        s.spawn(|| -> Result<Arena, BenchError> {
            pin::pin_current_thread(&[first])?;
            let spec = ArenaSpec { bytes: 4096, policy: policy.clone(), page: PageSize::Base };
            Ok(Arena::new(spec, topology)?)
        })
        .join()
        .unwrap_or_else(|_| Err(BenchError::Worker("c2c line allocation panicked".into())))
    })?;
    let line_placement = arena.placement()?;
    // SAFETY: the arena is page-aligned (so 8-byte aligned), zero-filled, at least 8 bytes,
    // lives until the end of this function, and is only ever accessed through this atomic.
    let line = unsafe { &*arena.as_ptr().cast::<AtomicU64>() };
    let all: Vec<(u32, u32)> = cpus
        .iter()
        .enumerate()
        .flat_map(|(i, &a)| cpus[i + 1..].iter().map(move |&b| (a, b)))
        .collect();
    let mut pairs = Vec::with_capacity(all.len());
    for (done, &(a, b)) in all.iter().enumerate() {
        if stop::requested() {
            break;
        }
        let measured = measure_pair(options.mode, line, a, b, options.duration)?;
        if let Some((round_trip_ns, batch_rounds)) = measured {
            let class = pair_class(topology, a, b);
            pairs.push(C2cPair { a, b, class, round_trip_ns, batch_rounds });
        }
        progress(done + 1, all.len());
    }
    if pairs.is_empty() {
        return Err(BenchError::Interrupted);
    }
    // A pair cut short by Ctrl-C keeps its batches but the run is marked interrupted.
    let interrupted = pairs.len() < all.len() || stop::requested();
    Ok(C2cResult {
        mode: options.mode,
        cpus,
        line_on: options.line_on,
        line: line_placement,
        classes: fold_classes(&pairs),
        nodes: fold_nodes(&pairs, topology),
        pairs,
        interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(topology: &Topology, a: u32, b: u32, median: f64) -> C2cPair {
        let round_trip_ns =
            summarize(&[median * 0.98, median * 0.99, median, median * 1.01, median * 1.5])
                .expect("samples");
        C2cPair { a, b, class: pair_class(topology, a, b), round_trip_ns, batch_rounds: 1000 }
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
    fn bad_requests_are_usage_errors() {
        let t =
            Topology::from_synthetic("pack:2 [numa(memory=1GiB)] core:2 pu:1").expect("topology");
        let opts = |cpus: Vec<u32>, line_on| C2cOptions {
            cpus,
            mode: C2cMode::Read,
            line_on,
            duration: Duration::from_millis(10),
        };
        for (o, needle) in [
            (opts(vec![0], None), "needs two CPUs"),
            (opts(vec![1, 1], None), "needs two CPUs"),
            (opts(vec![0, 1], Some(7)), "node 7 does not exist"),
        ] {
            let err = check(&o, &t).expect_err("refused");
            assert!(err.is_usage(), "{err}");
            assert!(err.to_string().contains(needle), "{err}");
        }
        assert!(check(&opts(vec![0, 2], Some(1)), &t).is_ok());
        assert!(C2cMode::parse("cas").is_ok_and(|m| m == C2cMode::Cas));
        assert!(C2cMode::parse("lock").is_err_and(|e| e.is_usage()));
    }

    #[test]
    #[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
    fn live_every_pair_is_measured_and_slower_than_an_l1_hit() {
        let t = Topology::detect().expect("topology");
        let cpus = place::PlacementRequest { cpus: None, policy: MemPolicy::Inherit }
            .allowed_cpus(&t)
            .expect("cpus");
        if cpus.len() < 2 {
            eprintln!("skipped: one CPU allowed");
            return;
        }
        for mode in C2cMode::ALL {
            let opts = C2cOptions {
                cpus: cpus.clone(),
                mode,
                line_on: None,
                duration: Duration::from_millis(50),
            };
            let r = run(&opts, &t, |_, _| {}).expect("c2c run");
            let n = cpus.len();
            assert_eq!(r.pairs.len(), n * (n - 1) / 2, "{mode:?}: every pair");
            assert!(r.pairs.iter().all(|p| p.a != p.b), "no diagonal");
            for p in &r.pairs {
                let s = &p.round_trip_ns;
                assert!(s.median.is_finite() && s.p99.is_finite());
                // An L1 hit is a few ns; a hand-off across cores is tens at least.
                assert!(s.median > 5.0, "{mode:?} {}-{}: {} ns", p.a, p.b, s.median);
                assert!(s.median < 1e6, "{mode:?} {}-{}: {} ns", p.a, p.b, s.median);
            }
            assert_eq!(r.line.total_pages(), 1);
        }
    }
}
