//! The Silly Little Benchmark, done precisely: each worker owns PAGES × 4 KiB placed by the
//! `place` library and initialized in full, all workers start together at the gate, and each
//! performs PAGES × LOOPS random 8-byte stores, timed from the release to its last store.

use std::time::Instant;

use place::{pin, Arena, ArenaSpec, MemPolicy, PageSize, Placement};
use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::gate::StartGate;
use crate::kernels::slb::{slb_writes, SLB_PAGE};
use crate::stats::{quantile, summarize, Summary};
use crate::{interrupt, BenchError};

/// Stores per timed batch: long enough that reading the clock is noise (~20 ms at DRAM
/// speed), short enough to answer Ctrl-C quickly and give many samples.
const BATCH_OPS: u64 = 1 << 18;

/// One worker: where it runs and where its memory comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlbWorkerSpec {
    pub cpu: Option<u32>,
    pub policy: MemPolicy,
}

/// A whole SLB run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlbPlan {
    pub pages: u64,
    pub loops: u64,
    pub page: PageSize,
    pub workers: Vec<SlbWorkerSpec>,
    pub seed: u64,
}

impl SlbPlan {
    /// Total stores per worker, or an error when PAGES × LOOPS overflows.
    pub fn ops_per_worker(&self) -> Result<u64, BenchError> {
        if self.pages == 0 || self.loops == 0 {
            return Err(BenchError::Usage("PAGES and LOOPS must both be at least 1".into()));
        }
        if self.pages >= 1 << 32 {
            return Err(BenchError::Usage(format!(
                "PAGES {} is too large (at most 2^32 - 1)",
                self.pages
            )));
        }
        self.pages.checked_mul(self.loops).ok_or_else(|| {
            BenchError::Usage(format!("PAGES × LOOPS ({} × {}) overflows", self.pages, self.loops))
        })
    }

    /// Refuses, before anything is allocated, a run whose workers together need more memory
    /// than their nodes can give.
    pub fn check_fits(&self, topology: &Topology) -> Result<(), BenchError> {
        let bytes_each = self
            .pages
            .checked_mul(SLB_PAGE as u64)
            .ok_or_else(|| BenchError::Usage(format!("PAGES {} is too large", self.pages)))?;
        let mut policies: Vec<&MemPolicy> = self.workers.iter().map(|w| &w.policy).collect();
        policies.dedup();
        for policy in policies {
            let count = self.workers.iter().filter(|w| &w.policy == policy).count() as u64;
            let bytes =
                bytes_each.checked_mul(count).ok_or(place::PlaceError::TooLarge(u64::MAX))?;
            Arena::check_fits(
                &ArenaSpec { bytes, policy: policy.clone(), page: self.page },
                topology,
            )?;
        }
        Ok(())
    }
}

/// What one worker did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlbWorkerResult {
    pub worker: usize,
    pub cpu: Option<u32>,
    /// Stores performed (fewer than planned when interrupted).
    pub ops: u64,
    pub planned_ops: u64,
    /// From the release to the last store.
    pub elapsed_ns: u64,
    /// ns per store of each timed batch of [`BATCH_OPS`].
    pub batches: Option<Summary>,
    pub placement: Placement,
}

impl SlbWorkerResult {
    pub fn ns_per_op(&self) -> f64 {
        self.elapsed_ns as f64 / self.ops.max(1) as f64
    }

    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / (self.elapsed_ns.max(1) as f64 / 1e9)
    }

    /// memhammer's line, same fields and arithmetic. The `gettimeofday usec` field carries the
    /// elapsed time in µs, measured here with the monotonic clock.
    pub fn seed_line(&self) -> String {
        let usec = self.elapsed_ns / 1000;
        format!(
            "Total ops {} Avg nsec/op {:.1} gettimeofday usec {} TPUT ops/sec {:.1}",
            self.ops,
            usec as f64 * 1000.0 / self.ops.max(1) as f64,
            usec,
            self.ops as f64 / (usec.max(1) as f64 / 1e6)
        )
    }
}

/// Across workers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SlbSummary {
    pub min_ns: f64,
    pub median_ns: f64,
    pub max_ns: f64,
    /// (max − min) / min, in percent: the seed's "latency variation between workers".
    pub spread_pct: f64,
    pub aggregate_ops_per_sec: f64,
}

/// A finished (or interrupted) run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlbResult {
    pub plan: SlbPlan,
    pub workers: Vec<SlbWorkerResult>,
    pub interrupted: bool,
}

impl SlbResult {
    pub fn summary(&self) -> SlbSummary {
        let mut ns: Vec<f64> = self.workers.iter().map(SlbWorkerResult::ns_per_op).collect();
        ns.sort_by(f64::total_cmp);
        let (min, max) = (ns.first().copied().unwrap_or(0.0), ns.last().copied().unwrap_or(0.0));
        SlbSummary {
            min_ns: min,
            median_ns: quantile(&ns, 0.5),
            max_ns: max,
            spread_pct: if min > 0.0 { (max - min) / min * 100.0 } else { 0.0 },
            aggregate_ops_per_sec: self.workers.iter().map(SlbWorkerResult::ops_per_sec).sum(),
        }
    }
}

/// One worker's life: pin, allocate and initialize, verify, wait at the gate, hammer.
fn worker(
    index: usize,
    spec: &SlbWorkerSpec,
    plan: &SlbPlan,
    planned_ops: u64,
    gate: &StartGate,
    topology: &Topology,
) -> Result<Option<SlbWorkerResult>, BenchError> {
    let setup = || -> Result<(Arena, Placement), BenchError> {
        if let Some(cpu) = spec.cpu {
            pin::pin_current_thread(&[cpu])?;
        }
        let bytes = plan.pages * SLB_PAGE as u64;
        let mut arena = Arena::new(
            ArenaSpec { bytes, policy: spec.policy.clone(), page: plan.page },
            topology,
        )?;
        arena.as_mut_slice().fill(0); // memhammer memset its whole buffer before waiting
        let placement = arena.placement()?;
        Ok((arena, placement))
    };
    let (arena, placement) = match setup() {
        Ok(ready) => ready,
        Err(e) => {
            gate.fail();
            return Err(e);
        }
    };
    if !gate.ready_and_wait() {
        return Ok(None);
    }
    let mut state = plan.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut done = 0u64;
    let mut batches = Vec::new();
    let start = Instant::now();
    while done < planned_ops && !interrupt::requested() {
        let n = BATCH_OPS.min(planned_ops - done);
        let t = Instant::now();
        // SAFETY: the arena holds plan.pages 4 KiB pages (checked ≥ 1 and < 2^32) and lives
        // until this function returns.
        unsafe { slb_writes(arena.as_ptr(), plan.pages, n, &mut state) };
        if n == BATCH_OPS {
            batches.push(t.elapsed().as_nanos() as f64 / n as f64);
        }
        done += n;
    }
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    Ok(Some(SlbWorkerResult {
        worker: index,
        cpu: spec.cpu.or_else(pin::current_cpu),
        ops: done,
        planned_ops,
        elapsed_ns,
        batches: summarize(&batches),
        placement,
    }))
}

/// Runs the plan with one thread per worker.
pub fn run(plan: &SlbPlan, topology: &Topology) -> Result<SlbResult, BenchError> {
    let planned_ops = plan.ops_per_worker()?;
    if plan.workers.is_empty() {
        return Err(BenchError::Usage("at least one worker is needed".into()));
    }
    plan.check_fits(topology)?;
    let gate = StartGate::new(plan.workers.len());
    let outcomes: Vec<Result<Option<SlbWorkerResult>, BenchError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = plan
            .workers
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let gate = &gate;
                scope.spawn(move || worker(i, spec, plan, planned_ops, gate, topology))
            })
            .collect();
        gate.release_when_ready();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| Err(BenchError::Worker("SLB worker panicked".into())))
            })
            .collect()
    });
    let mut workers = Vec::new();
    for outcome in outcomes {
        if let Some(result) = outcome? {
            workers.push(result);
        }
    }
    let interrupted = workers.iter().any(|w| w.ops < w.planned_ops);
    if workers.iter().all(|w| w.ops == 0) {
        return Err(BenchError::Interrupted);
    }
    Ok(SlbResult { plan: plan.clone(), workers, interrupted })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(ops: u64, elapsed_ns: u64) -> SlbWorkerResult {
        SlbWorkerResult {
            worker: 0,
            cpu: Some(7),
            ops,
            planned_ops: ops,
            elapsed_ns,
            batches: None,
            placement: Placement {
                requested: MemPolicy::Inherit,
                page: PageSize::Base,
                bytes: 4096,
                page_bytes: 4096,
                per_node: vec![],
                not_present: 0,
                thp_bytes: None,
            },
        }
    }

    #[test]
    fn seed_line_matches_memhammer_arithmetic() {
        // The seed's first line: 262144 pages × 6000 loops in 108281130 µs.
        let line = result(1_572_864_000, 108_281_130_000).seed_line();
        assert_eq!(
            line,
            "Total ops 1572864000 Avg nsec/op 68.8 gettimeofday usec 108281130 TPUT ops/sec 14525744.2"
        );
    }

    #[test]
    fn bad_plans_are_usage_errors() {
        let plan =
            |pages, loops| SlbPlan { pages, loops, page: PageSize::Base, workers: vec![], seed: 1 };
        assert!(plan(0, 1).ops_per_worker().is_err_and(|e| e.is_usage()));
        assert!(plan(1, 0).ops_per_worker().is_err_and(|e| e.is_usage()));
        assert!(plan(1 << 33, 1).ops_per_worker().is_err_and(|e| e.is_usage()));
        assert!(plan(1 << 31, 1 << 40).ops_per_worker().is_err_and(|e| e.is_usage()));
        assert_eq!(plan(262_144, 6000).ops_per_worker().ok(), Some(1_572_864_000));
    }

    #[test]
    fn summary_spread() {
        let r = SlbResult {
            plan: SlbPlan { pages: 1, loops: 1, page: PageSize::Base, workers: vec![], seed: 1 },
            workers: vec![result(1000, 100_000), result(1000, 110_000)],
            interrupted: false,
        };
        let s = r.summary();
        assert_eq!((s.min_ns, s.max_ns), (100.0, 110.0));
        assert!((s.spread_pct - 10.0).abs() < 1e-9);
    }
}
