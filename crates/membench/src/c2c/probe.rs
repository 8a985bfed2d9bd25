//! The placement probe: a short core-to-core hand-off between the CPUs a run uses, taken before
//! and after each run whose figures depend on where those CPUs sit (the experiment seam runs
//! it; `measure::placement` says what it means).
//!
//! From the first of the run's CPUs to the first other CPU of each topology class (SMT sibling,
//! same L3, same node, other node): at most four pairs, whatever the machine's size. Each pair
//! is measured as `mem c2c` measures it, briefly ([`PROBE_DURATION`] over [`PROBE_LINES`]
//! lines), and its figure is the **fastest line's median**: the line's address (which L3 slice
//! owns it) moves one line's figure by up to 1.4×, and a vCPU pre-empted during some lines by
//! far more; the fastest line is the pair's hand-off now, as near as the placement allows.
//!
//! `PLATSCOPE_PROBE_FAR_AFTER=N` is a fault-injection hook for tests: the probes after the
//! first N of this process report their pairs [`FAULT_FACTOR`] times slower, as if the
//! hypervisor had moved the vCPUs apart (a guest cannot force that move itself).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use measure::placement::{PairProbe, Probe};
use topo::Topology;

use super::{pair_class, C2cMode, C2cOptions, PairClass};

/// Sampling time of one pair in a probe, shared among its lines and two passes: long enough
/// for each line to be handed over thousands of times (a near pair's 55 ns round trip and a
/// far one's 400 read the same at 40 ms), short enough that the two probes around a one-off
/// command (`compress -t 2` of a small file) do not outlast it many times over.
pub const PROBE_DURATION: Duration = Duration::from_millis(10);
/// Lines per pair in a probe, each on its own page at its own offset.
pub const PROBE_LINES: usize = 8;
/// How much slower the injected far placement reads: the move seen on an AMD VM (80 to
/// 370 ns round trip).
pub const FAULT_FACTOR: f64 = 4.6;
/// The fault-injection variable (see the module overview).
pub const FAULT_VARIABLE: &str = "PLATSCOPE_PROBE_FAR_AFTER";

/// Probes taken by this process so far (for the fault hook).
static PROBES_TAKEN: AtomicUsize = AtomicUsize::new(0);

/// The pairs a probe measures among `cpus`: from the first (lowest) CPU to the first other
/// CPU of each class, closest class first. Empty with fewer than two distinct CPUs.
pub fn probe_pairs(cpus: &[u32], topology: &Topology) -> Vec<(u32, u32, PairClass)> {
    let mut cpus = cpus.to_vec();
    cpus.sort_unstable();
    cpus.dedup();
    let Some((&first, others)) = cpus.split_first() else { return Vec::new() };
    let mut out: Vec<(u32, u32, PairClass)> = Vec::new();
    for &b in others {
        let class = pair_class(topology, first, b);
        if !out.iter().any(|&(_, _, c)| c == class) {
            out.push((first, b, class));
        }
    }
    out.sort_by_key(|&(_, _, class)| class);
    out
}

/// Whether the fault hook makes probe number `index` (from 0) far: `far_after` is the
/// variable's value.
fn injected(far_after: Option<&str>, index: usize) -> bool {
    far_after.and_then(|v| v.trim().parse::<usize>().ok()).is_some_and(|n| index >= n)
}

/// One probe between `cpus` on `topology` (see the module's overview): `Err` in one line when
/// a pair cannot be measured (a CPU not allowed, Ctrl-C).
pub fn probe(cpus: &[u32], topology: &Topology) -> Result<Probe, String> {
    let pairs = probe_pairs(cpus, topology);
    if pairs.is_empty() {
        return Err("fewer than two CPUs to hand a line between".into());
    }
    let index = PROBES_TAKEN.fetch_add(1, Ordering::Relaxed);
    let far = injected(std::env::var(FAULT_VARIABLE).ok().as_deref(), index);
    // Batches of about 0.5 ms: CLOCK_MONOTONIC times them as well as any counter, without the
    // calibration of the cheapest clock, which would cost a one-off command (a `compress -t 2`)
    // more than both its probes.
    let clock = crate::timers::monotonic("a probe's batches are long enough for it");
    let mut out = Probe::default();
    for (a, b, class) in pairs {
        let options = C2cOptions {
            cpus: vec![a, b],
            mode: C2cMode::Read,
            line_on: None,
            duration: PROBE_DURATION,
            lines: PROBE_LINES,
        };
        let run = super::run_timed(&options, topology, &clock, |_, _| {})
            .map_err(|e| format!("CPUs {a}↔{b}: {e}"))?;
        let fastest = run
            .pairs
            .first()
            .map(|p| {
                p.lines
                    .iter()
                    .map(|l| l.median_ns)
                    .filter(|v| v.is_finite())
                    .fold(f64::INFINITY, f64::min)
            })
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("CPUs {a}↔{b}: no line measured"))?;
        let round_trip_ns = if far { fastest * FAULT_FACTOR } else { fastest };
        let shares_cache = matches!(class, PairClass::SmtSibling | PairClass::SameL3);
        out.pairs.push(PairProbe::new(a, b, class.name(), shares_cache, round_trip_ns));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_tier::live;

    fn topology(spec: &str) -> Topology {
        Topology::from_synthetic(spec).expect("topology")
    }

    #[test]
    fn a_probe_takes_one_pair_per_class_from_the_first_cpu() {
        // Two nodes, two L3s each of two cores with two threads.
        let t = topology("pack:2 [numa(memory=1GiB)] l3:2 core:2 pu:2");
        let cpus = t.online_cpu_ids();
        let pairs = probe_pairs(&cpus, &t);
        let classes: Vec<PairClass> = pairs.iter().map(|p| p.2).collect();
        assert_eq!(
            classes,
            [PairClass::SmtSibling, PairClass::SameL3, PairClass::SameNode, PairClass::OtherNode]
        );
        assert!(pairs.iter().all(|p| p.0 == cpus[0] && p.1 != cpus[0]), "{pairs:?}");
        for (a, b, class) in &pairs {
            assert_eq!(pair_class(&t, *a, *b), *class);
        }
        // However many CPUs: at most one pair per class.
        assert!(pairs.len() <= 4);
    }

    #[test]
    fn two_cpus_sharing_an_l3_make_one_pair() {
        let t = topology("pack:1 [numa(memory=1GiB)] l3:1 core:2 pu:1");
        let cpus = t.online_cpu_ids();
        assert_eq!(probe_pairs(&cpus, &t), vec![(cpus[0], cpus[1], PairClass::SameL3)]);
        // Given in any order, or twice: the same pair.
        let reversed: Vec<u32> = cpus.iter().rev().chain(cpus.iter()).copied().collect();
        assert_eq!(probe_pairs(&reversed, &t), probe_pairs(&cpus, &t));
        assert!(probe_pairs(&cpus[..1], &t).is_empty());
        assert!(probe_pairs(&[], &t).is_empty());
    }

    #[test]
    fn the_fault_hook_makes_later_probes_far() {
        assert!(!injected(None, 5));
        assert!(!injected(Some("2"), 0));
        assert!(!injected(Some("2"), 1));
        assert!(injected(Some("2"), 2));
        assert!(injected(Some(" 0 "), 0));
        assert!(!injected(Some("soon"), 9), "a value that is no count injects nothing");
    }

    #[live("two 10 ms hand-offs between the first two allowed CPUs (about 0.05 s)")]
    fn live_a_probe_measures_the_first_two_cpus() {
        let t = Topology::detect().expect("topology");
        let cpus = place::PlacementRequest { cpus: None, policy: place::MemPolicy::Inherit }
            .allowed_cpus(&t)
            .expect("cpus");
        if cpus.len() < 2 {
            eprintln!("skipped: one CPU allowed");
            return;
        }
        let p = probe(&cpus, &t).expect("probe");
        assert!(!p.pairs.is_empty());
        for pair in &p.pairs {
            // A hand-off across cores is tens of ns at least, and far below a millisecond.
            assert!(pair.round_trip_ns > 5.0 && pair.round_trip_ns < 1e6, "{pair:?}");
        }
    }
}
