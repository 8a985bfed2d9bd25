//! Change points per host and figure, each with the configuration that changed around it, and
//! the configuration changes that moved no figure.
//!
//! A split found by [`crate::edivisive`] is a change when the medians of the runs on either
//! side (to the neighbouring splits) differ by more than the figure's run-to-run noise
//! ([`crate::noise`]): a difference that small is real but within what one run varies by. Its
//! configuration is every fact that differs between the run two before the split and the run
//! one after it: the split itself may sit one run off the true day when the runs are noisy.
//! A host's change of facts from one run to the next that no change of any figure sits on is a
//! configuration change without a shift.

use std::sync::atomic::{AtomicUsize, Ordering};

use measure::stats::median;

use crate::edivisive::{change_points, EDivisive, Split};
use crate::facts::{diff, FactChange};
use crate::noise::{Noise, NoiseTable};
use crate::series::{Fleet, Series};

/// A change of one host's figure, as found.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundChange {
    /// Index into [`Fleet::series`].
    pub series: usize,
    /// Index of the first value after the change in the series.
    pub point: usize,
    /// Index in the host's runs of that value.
    pub run: usize,
    /// Medians of the runs before (from the previous split) and after (to the next).
    pub before: f64,
    pub after: f64,
    pub p_value: f64,
    /// The facts that differ around it.
    pub config: Vec<FactChange>,
    /// The host's runs whose facts are compared: those of `config_from` against `config_to`.
    pub config_from: usize,
    pub config_to: usize,
}

/// A host's facts changing from one run to the next.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigTransition {
    pub host: usize,
    /// The first run with the new facts.
    pub run: usize,
    pub config: Vec<FactChange>,
}

/// A 64-bit FNV-1a hash: each series' permutations are seeded from its host and figure, so
/// results do not depend on the order or the threads series are analysed on.
fn seed(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// The splits of every series (of the logarithms of its values), on `threads` threads (each
/// series is independent).
pub fn all_splits(fleet: &Fleet, settings: &EDivisive, threads: usize) -> Vec<Vec<Split>> {
    let one = |s: &Series| {
        let host = &fleet.hosts[s.host].name;
        let figure = &fleet.figures[s.figure];
        // On the logarithms: a shift is a ratio, and a figure's noise grows with its level
        // (a halved bandwidth also halves its spread), so a split is weighed the same at any
        // level. Series hold positive values only.
        let logs: Vec<f64> = s.values.iter().map(|v| v.ln()).collect();
        change_points(&logs, settings, seed(&[host, &figure.name, &figure.unit]))
    };
    let threads = threads.clamp(1, fleet.series.len().max(1));
    if threads == 1 {
        return fleet.series.iter().map(one).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, Vec<Split>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(s) = fleet.series.get(i) else { break };
                        mine.push((i, one(s)));
                    }
                    mine
                })
            })
            .collect();
        // A worker that panicked has lost its series; they are analysed again below.
        workers.into_iter().flat_map(|w| w.join().unwrap_or_default()).collect()
    });
    done.sort_by_key(|(i, _)| *i);
    let mut out: Vec<Vec<Split>> = Vec::with_capacity(fleet.series.len());
    let mut done = done.into_iter().peekable();
    for (i, s) in fleet.series.iter().enumerate() {
        match done.next_if(|(j, _)| *j == i) {
            Some((_, splits)) => out.push(splits),
            None => out.push(one(s)),
        }
    }
    out
}

/// The noise a change of `series` must exceed: its class's, else its own history's.
fn noise_of(fleet: &Fleet, noise: &NoiseTable, s: &Series) -> Option<Noise> {
    noise.get(fleet.hosts[s.host].class, s.figure).or_else(|| Noise::of_series(&s.values))
}

/// The changes of every series from its splits: medians either side, the noise test, and the
/// facts that changed around each.
pub fn changes(fleet: &Fleet, splits: &[Vec<Split>], noise: &NoiseTable) -> Vec<FoundChange> {
    let mut out = Vec::new();
    for (index, (s, found)) in fleet.series.iter().zip(splits).enumerate() {
        if found.is_empty() {
            continue;
        }
        let floor = noise_of(fleet, noise, s).map_or(0.0, |n| n.sigma);
        let mut bounds: Vec<usize> = found.iter().map(|f| f.index).collect();
        bounds.insert(0, 0);
        bounds.push(s.values.len());
        let host = &fleet.hosts[s.host];
        for (k, split) in found.iter().enumerate() {
            let before = median(&s.values[bounds[k]..bounds[k + 1]]);
            let after = median(&s.values[bounds[k + 1]..bounds[k + 2]]);
            let ratio = after / before;
            if !ratio.is_finite() || (ratio - 1.0).abs() <= floor {
                continue;
            }
            let point = split.index;
            let config_from = s.runs[point.saturating_sub(2)];
            let config_to = s.runs[(point + 1).min(s.values.len() - 1)];
            let (a, b) = (&host.runs[config_from], &host.runs[config_to]);
            out.push(FoundChange {
                series: index,
                point,
                run: s.runs[point],
                before,
                after,
                p_value: split.p_value,
                config: diff((&a.facts, &a.version), (&b.facts, &b.version)),
                config_from,
                config_to,
            });
        }
    }
    out
}

/// Every change of facts from one run of a host to its next.
pub fn transitions(fleet: &Fleet) -> Vec<ConfigTransition> {
    let mut out = Vec::new();
    for (h, host) in fleet.hosts.iter().enumerate() {
        for (i, pair) in host.runs.windows(2).enumerate() {
            let config =
                diff((&pair[0].facts, &pair[0].version), (&pair[1].facts, &pair[1].version));
            if !config.is_empty() {
                out.push(ConfigTransition { host: h, run: i + 1, config });
            }
        }
    }
    out
}

/// The transitions no change sits on: none of the host's changes compares facts across them.
pub fn without_shift<'t>(
    fleet: &Fleet,
    transitions: &'t [ConfigTransition],
    changes: &[FoundChange],
) -> Vec<&'t ConfigTransition> {
    transitions
        .iter()
        .filter(|t| {
            !changes.iter().any(|c| {
                fleet.series[c.series].host == t.host
                    && c.config_from < t.run
                    && t.run <= c.config_to
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_differ_by_series_and_not_by_run() {
        assert_eq!(seed(&["db1", "DRAM", "ns"]), seed(&["db1", "DRAM", "ns"]));
        assert_ne!(seed(&["db1", "DRAM", "ns"]), seed(&["db1", "DRAMns", ""]));
        assert_ne!(seed(&["db1", "DRAM", "ns"]), seed(&["db2", "DRAM", "ns"]));
    }
}
