//! Core to core: what handing one modified cache line between two CPUs costs. For every pair
//! of CPUs, two pinned threads ping-pong one 8-byte word alone on its page
//! ([`crate::kernels::c2c`]); batches of round trips are timed from outside the loop with the
//! cheapest trustworthy clock. The line's pages are placed (`--line-on NODE`) and verified, so
//! the home node's part is visible. Pairs fold to topology classes (SMT siblings, same L3,
//! same node, other node) and to a node×node matrix — pure functions, tested on synthetic
//! topologies.
//!
//! A round trip's cost depends on the line's address as well as on the two CPUs (which L3
//! slice or home agent owns it, which directory entry tracks it): one pair measured on one
//! line can read 57 or 80 ns depending on the line. So each pair is measured on several lines
//! ([`C2cOptions::lines`]), each on its own page at its own offset ([`line_address`]), in two
//! passes over them; a pair's figure is the summary over all lines, and [`LineSpread`] says
//! how far the lines are apart against how far one line moves between passes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use measure::stop;
use measure::summary::{quantile, summarize, Summary};
use place::{pin, Arena, ArenaSpec, MemPolicy, PageSize, Placement};
use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::kernels::c2c::{self as k, PingFn, PongFn, STOP};
use crate::timers::cheapest_trustworthy_clock;
use crate::{BenchError, PAGE};

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
    /// Sampling time per pair, shared among its lines and passes (at least one batch each).
    pub duration: Duration,
    /// How many lines each pair is measured on, each on its own page (1..=[`MAX_LINES`]).
    pub lines: usize,
}

/// Lines per pair unless asked otherwise.
pub const DEFAULT_LINES: usize = 8;
/// The most lines per pair (`--lines`).
pub const MAX_LINES: usize = 64;
/// Passes over the lines when there are several: a line measured in two passes shows how far
/// its own figure moves with time, the yardstick for the spread between lines.
pub const PASSES: usize = 2;
/// The spread between lines' medians must exceed this many times the largest move of one
/// line between passes to count as the address's doing, not noise (with 8 lines the range of
/// 8 noisy medians is about as large as the largest of 8 pass-to-pass differences; twice that
/// is rarely reached by noise alone).
pub const ADDRESS_FACTOR: f64 = 2.0;

const LINE: usize = 64;

/// Where line `index` of a run sits: (page index, byte offset inside that page). Each line has
/// its own page, and the offsets step through the page's 64 lines five at a time (5 is prime
/// to 64, so up to [`MAX_LINES`] lines never share an offset): the address bits below the
/// page (cache set, and on Intel part of the L3 slice hash) vary too, not only the frame.
pub fn line_address(index: usize) -> (usize, usize) {
    (index, (index * 5 % (PAGE / LINE)) * LINE)
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

/// A whole `mem c2c` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cResult {
    pub mode: C2cMode,
    pub cpus: Vec<u32>,
    pub line_on: Option<u32>,
    /// Where the lines' pages really were, as the kernel reported it (one page per line).
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

/// Checks the request against the machine: 1..=[`MAX_LINES`] lines, at least two distinct
/// CPUs, a line node that exists, has memory and has CPUs.
pub fn check(options: &C2cOptions, topology: &Topology) -> Result<(), BenchError> {
    if !(1..=MAX_LINES).contains(&options.lines) {
        return Err(BenchError::Usage(format!(
            "--lines {}: give 1 to {MAX_LINES} lines per pair (default {DEFAULT_LINES})",
            options.lines
        )));
    }
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

/// Warm-up sizes the batches to about this long (shorter when a visit is short).
const BATCH_TARGET: Duration = Duration::from_micros(500);
const WARMUP_ROUNDS: u64 = 2000;

/// Measures one pair on `lines`, visiting them in [`visits`] order: a pinger thread pinned to
/// `a` times batches, a ponger thread pinned to `b` answers. Each visit warms the line up
/// (2000 round trips), then times batches for its share of `duration` (at least one batch).
/// `Ok(None)` when Ctrl-C came before a batch was measured.
fn measure_pair(
    mode: C2cMode,
    lines: &[&AtomicU64],
    a: u32,
    b: u32,
    duration: Duration,
) -> Result<Option<PairSamples>, BenchError> {
    let (ping, pong) = mode.loops();
    let order = visits(lines.len());
    if order.is_empty() {
        return Ok(None);
    }
    let per_visit = duration / order.len() as u32;
    // Every line starts at turn 0; a line visited again is reset by the pinger before the
    // ponger can arrive at it (below).
    for line in lines {
        line.store(0, Ordering::Release);
    }
    let ready = Padded(AtomicBool::new(false));
    let failed = Padded(AtomicBool::new(false));
    let clock = cheapest_trustworthy_clock();
    let stop_all = || {
        for line in lines {
            line.store(STOP, Ordering::Release);
        }
    };
    std::thread::scope(|s| {
        let ponger = s.spawn(|| {
            let pinned = pin::pin_current_thread(&[b]);
            if pinned.is_err() {
                failed.0.store(true, Ordering::Release);
            }
            ready.0.store(true, Ordering::Release);
            if pinned.is_ok() {
                // One visit per line in the pinger's order; STOP on a line ends its visit.
                for &v in &order {
                    pong(lines[v], 1);
                }
            }
            pinned
        });
        let pinger = s.spawn(|| -> Result<Option<PairSamples>, BenchError> {
            let pinned = pin::pin_current_thread(&[a]);
            while !ready.0.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            let mut per_visit_samples = Vec::with_capacity(order.len());
            let mut rounds = 0;
            if pinned.is_ok() && !failed.0.load(Ordering::Acquire) {
                for (k, &v) in order.iter().enumerate() {
                    let line = lines[v];
                    // Warm-up: both threads spinning, the line in their caches; the first
                    // visit's sizes the batches of all.
                    let t = clock.read();
                    let mut turn = ping(line, 0, WARMUP_ROUNDS);
                    let warm =
                        clock.ticks_to_ns(clock.read().wrapping_sub(t)) / WARMUP_ROUNDS as f64;
                    if rounds == 0 {
                        let target = BATCH_TARGET.min(per_visit / 4).as_nanos() as f64;
                        rounds = ((target / warm.max(1.0)) as u64).max(100);
                    }
                    let mut samples = Vec::new();
                    let end = Instant::now() + per_visit;
                    while !stop::requested() {
                        let t = clock.read();
                        turn = ping(line, turn, rounds);
                        samples
                            .push(clock.ticks_to_ns(clock.read().wrapping_sub(t)) / rounds as f64);
                        if Instant::now() >= end {
                            break;
                        }
                    }
                    // The ponger's answer to the last round, then move it on.
                    while line.load(Ordering::Acquire) != turn {
                        std::hint::spin_loop();
                    }
                    per_visit_samples.push(samples);
                    match order.get(k + 1) {
                        Some(&next) if !stop::requested() => {
                            // The next line is reset before the ponger can see this one's STOP
                            // (release), so it never reads a STOP left by an earlier pass.
                            lines[next].store(0, Ordering::Release);
                            line.store(STOP, Ordering::Release);
                        }
                        _ => break,
                    }
                }
            }
            // Ends the ponger's current visit and every visit left.
            stop_all();
            pinned?;
            let any = per_visit_samples.iter().any(|s| !s.is_empty());
            Ok(any.then_some(PairSamples { per_visit: per_visit_samples, batch_rounds: rounds }))
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
    // The lines' pages: made (and first touched) on the first CPU unless bound elsewhere.
    let first = cpus[0];
    let arena = std::thread::scope(|s| {
        s.spawn(|| -> Result<Arena, BenchError> {
            pin::pin_current_thread(&[first])?;
            let bytes = (options.lines * PAGE) as u64;
            let spec = ArenaSpec { bytes, policy: policy.clone(), page: PageSize::Base };
            Ok(Arena::new(spec, topology)?)
        })
        .join()
        .unwrap_or_else(|_| Err(BenchError::Worker("c2c line allocation panicked".into())))
    })?;
    let line_placement = arena.placement()?;
    let lines: Vec<&AtomicU64> = (0..options.lines)
        .map(|i| {
            let (page, offset) = line_address(i);
            debug_assert!(page * PAGE + offset + 8 <= arena.len());
            // SAFETY: the arena is page-aligned and `options.lines` pages long (check() bounds
            // the count), the offset is a multiple of 64 below 4096, so the word is 8-byte
            // aligned and inside the mapping; the mapping is zero-filled, lives until the end
            // of this function, and each word is only ever accessed through this atomic.
            unsafe { &*arena.as_ptr().add(page * PAGE + offset).cast::<AtomicU64>() }
        })
        .collect();
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
        let measured = measure_pair(options.mode, &lines, a, b, options.duration)?;
        if let Some(samples) = measured {
            if let Some((round_trip_ns, lines, line_spread)) =
                fold_pair_lines(&samples, options.lines)
            {
                let class = pair_class(topology, a, b);
                let batch_rounds = samples.batch_rounds;
                pairs.push(C2cPair {
                    a,
                    b,
                    class,
                    round_trip_ns,
                    batch_rounds,
                    lines,
                    line_spread,
                });
            }
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
    fn bad_requests_are_usage_errors() {
        let t =
            Topology::from_synthetic("pack:2 [numa(memory=1GiB)] core:2 pu:1").expect("topology");
        let opts = |cpus: Vec<u32>, line_on| C2cOptions {
            cpus,
            mode: C2cMode::Read,
            line_on,
            duration: Duration::from_millis(10),
            lines: DEFAULT_LINES,
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
    fn every_line_has_its_own_page_and_offset() {
        let addresses: Vec<(usize, usize)> = (0..MAX_LINES).map(line_address).collect();
        let mut offsets = std::collections::BTreeSet::new();
        for (i, &(page, offset)) in addresses.iter().enumerate() {
            assert_eq!(page, i, "one page per line");
            assert_eq!(offset % LINE, 0, "line-aligned: {offset}");
            assert!(offset + 8 <= PAGE, "inside its page: {offset}");
            offsets.insert(offset);
        }
        assert_eq!(offsets.len(), MAX_LINES, "no two lines share an offset");
        assert_eq!(line_address(0), (0, 0));
        assert_eq!(line_address(1), (1, 320));
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

    #[test]
    fn lines_outside_1_to_64_are_usage_errors() {
        let t =
            Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1").expect("topology");
        let opts = |lines| C2cOptions {
            cpus: vec![0, 1],
            mode: C2cMode::Read,
            line_on: None,
            duration: Duration::from_millis(10),
            lines,
        };
        for bad in [0, MAX_LINES + 1, usize::MAX] {
            let err = check(&opts(bad), &t).expect_err("refused");
            assert!(err.is_usage(), "{err}");
            assert!(err.to_string().contains("give 1 to 64 lines"), "{err}");
        }
        for good in [1, DEFAULT_LINES, MAX_LINES] {
            assert!(check(&opts(good), &t).is_ok(), "{good}");
        }
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
                lines: DEFAULT_LINES,
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
            assert_eq!(r.line.total_pages(), DEFAULT_LINES as u64, "one page per line");
            for p in &r.pairs {
                assert_eq!(p.lines.len(), DEFAULT_LINES, "{mode:?}: every line measured");
                for l in &p.lines {
                    assert_eq!(l.pass_medians_ns.len(), PASSES, "{mode:?}: {l:?}");
                    assert!(l.median_ns > 5.0 && l.median_ns < 1e6, "{mode:?}: {l:?}");
                }
                let spread = p.line_spread.as_ref().expect("spread over 8 lines");
                assert!(spread.min_ns <= spread.median_ns && spread.median_ns <= spread.max_ns);
                assert!(spread.noise_ns.is_some());
            }
        }
    }
}
