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
//!
//! [`probe`] is the same measurement made short, as the placement probe around runs whose
//! figures depend on where their CPUs sit.

mod fold;
mod measure;
pub mod probe;

use std::time::Duration;

use place::Placement;
use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::kernels::c2c::{self as k, PingFn, PongFn};
use crate::{BenchError, PAGE};

pub use fold::{
    fold_classes, fold_nodes, fold_pair_lines, line_spread, pair_class, visits, C2cLine, C2cPair,
    ClassSummary, LineSpread, NodeCell, PairClass, PairSamples,
};
pub use measure::{run, run_timed};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
