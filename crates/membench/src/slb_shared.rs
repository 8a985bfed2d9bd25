//! The SLB with what its article said it left out ("Shared Memory; Mutual Exclusion (e.g.,
//! spinlocks in shared memory)"): every worker stores into one shared region, and with a lock takes
//! a lock word in that region around every store and bumps a shared counter under it. Reports ns/op
//! per worker in memhammer's line, lock hand-offs per second, and **fairness**: each worker's share
//! of the acquisitions made while all of them were still contending.
//!
//! Region layout: one 128-byte lock slot (lock words and the last owner's id), `counters`
//! 128-byte counter slots, padding to 4 KiB, then PAGES × 4 KiB for the SLB's stores.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use measure::stop;
use measure::summary::{summarize, Summary};
use place::{pin, MemPolicy, Placement};
use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::kernels::lock::{
    locked_writes_mutex, locked_writes_none, locked_writes_spin, locked_writes_ticket, SharedWork,
    COUNTER_SLOT, LOCK_SLOT,
};
use crate::kernels::slb::SLB_PAGE;
use crate::shared::SharedRegion;
use crate::slb::worker_seed;
use crate::timers::cheapest_trustworthy_clock;
use crate::together::Crew;
use crate::BenchError;

/// Operations per timed batch: short, so fairness is read at a fine grain and Ctrl-C is
/// answered at once; two clock reads per batch are noise beside 1024 locked operations.
pub const SHARED_BATCH_OPS: u64 = 1024;
/// The most shared counters.
pub const MAX_COUNTERS: u64 = 4096;

/// The lock around every store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LockKind {
    /// No lock: stores race and counter increments can be lost.
    None,
    /// Test-and-test-and-set spinlock.
    Spin,
    /// Ticket lock (first come, first served).
    Ticket,
    /// Futex mutex: sleeps in the kernel when contended.
    Mutex,
}

impl LockKind {
    pub const ALL: [LockKind; 4] =
        [LockKind::None, LockKind::Spin, LockKind::Ticket, LockKind::Mutex];

    pub fn name(self) -> &'static str {
        match self {
            LockKind::None => "none",
            LockKind::Spin => "spin",
            LockKind::Ticket => "ticket",
            LockKind::Mutex => "mutex",
        }
    }

    /// Parses `spin`, `ticket`, `mutex` or `none`.
    pub fn parse(text: &str) -> Result<Self, BenchError> {
        Self::ALL.into_iter().find(|k| k.name() == text).ok_or_else(|| {
            BenchError::Usage(format!("unknown lock {text:?}: give spin, ticket, mutex or none"))
        })
    }
}

/// Where the parts of the shared region are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedLayout {
    pub pages: u64,
    pub counters: u64,
}

impl SharedLayout {
    /// Checks PAGES and the counter count.
    pub fn new(pages: u64, counters: u64) -> Result<Self, BenchError> {
        if pages == 0 || pages >= 1 << 32 {
            return Err(BenchError::Usage(format!("PAGES {pages} must be 1 to 2^32 - 1")));
        }
        if counters == 0 || counters > MAX_COUNTERS {
            return Err(BenchError::Usage(format!(
                "--counters {counters}: give 1 to {MAX_COUNTERS}"
            )));
        }
        Ok(SharedLayout { pages, counters })
    }

    /// Bytes before the pages: lock slot and counter slots, rounded up to a page.
    pub fn control_bytes(&self) -> u64 {
        (LOCK_SLOT as u64 + self.counters * COUNTER_SLOT as u64).next_multiple_of(SLB_PAGE as u64)
    }

    pub fn bytes(&self) -> u64 {
        self.control_bytes() + self.pages * SLB_PAGE as u64
    }

    /// The kernel's view of `region`, which must be at least [`Self::bytes`] long.
    pub fn work(&self, region: &SharedRegion) -> Result<SharedWork, BenchError> {
        if (region.len() as u64) < self.bytes() {
            return Err(BenchError::Usage(format!(
                "the shared region holds {} bytes, the layout needs {}",
                region.len(),
                self.bytes()
            )));
        }
        let base = region.as_ptr();
        Ok(SharedWork {
            lock: base,
            counters: base.wrapping_add(LOCK_SLOT),
            ncounters: self.counters,
            pages: base.wrapping_add(self.control_bytes() as usize),
            npages: self.pages,
        })
    }

    /// The sum of the shared counters.
    ///
    /// # Safety
    /// `work` comes from [`Self::work`] on a region still attached, and nobody is writing the
    /// counters.
    pub unsafe fn counters_total(&self, work: &SharedWork) -> u64 {
        (0..self.counters)
            .map(|i| {
                // SAFETY: i < ncounters, inside the counter slots; 8-byte aligned.
                unsafe {
                    work.counters.add(i as usize * COUNTER_SLOT).cast::<u64>().read_volatile()
                }
            })
            .sum()
    }
}

/// What [`hammer_shared`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedHammered {
    pub ops: u64,
    pub elapsed_ns: u64,
    /// ns per operation of each full batch of [`SHARED_BATCH_OPS`].
    pub batches: Option<Summary>,
    /// Acquisitions that took the lock from another worker.
    pub handoffs: u64,
}

/// One worker's timed loop on the shared region, in batches timed from outside the kernel;
/// `me` (≥ 1) names the worker in the lock's owner word. After each batch the operations done
/// so far go to `progress`, and `finished` is called once when all planned operations are done.
/// Ctrl-C stops it between batches.
pub fn hammer_shared(
    work: &SharedWork,
    lock: LockKind,
    me: u64,
    planned_ops: u64,
    seed: u64,
    progress: &AtomicU64,
    mut finished: impl FnMut(),
) -> SharedHammered {
    let clock = cheapest_trustworthy_clock();
    let (mut state, mut done, mut handoffs) = (seed, 0u64, 0u64);
    let mut batches = Vec::new();
    let start = clock.read();
    while done < planned_ops && !stop::requested() {
        let n = SHARED_BATCH_OPS.min(planned_ops - done);
        let t = clock.read();
        // SAFETY: `work` describes a live shared region laid out by SharedLayout (1 ≤ counters
        // ≤ 4096, 1 ≤ pages < 2^32), and every worker of the run uses the same lock kind.
        handoffs += unsafe {
            match lock {
                LockKind::None => locked_writes_none(work, me, n, &mut state),
                LockKind::Spin => locked_writes_spin(work, me, n, &mut state),
                LockKind::Ticket => locked_writes_ticket(work, me, n, &mut state),
                LockKind::Mutex => locked_writes_mutex(work, me, n, &mut state),
            }
        };
        if n == SHARED_BATCH_OPS {
            batches.push(clock.ticks_to_ns(clock.read().wrapping_sub(t)) / n as f64);
        }
        done += n;
        progress.store(done, Ordering::Relaxed);
        if done == planned_ops {
            finished();
        }
    }
    let elapsed_ns = clock.ticks_to_ns(clock.read().wrapping_sub(start)) as u64;
    SharedHammered { ops: done, elapsed_ns, batches: summarize(&batches), handoffs }
}

/// How evenly acquisitions were shared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fairness {
    /// Each worker's share of the acquisitions (sums to 1).
    pub shares: Vec<f64>,
    /// Fewest over most acquisitions: 1 is even, near 0 means a worker starved.
    pub min_max_ratio: f64,
    /// Jain's index (Σx)² / (n·Σx²): 1 is even, 1/n means one worker took everything.
    pub jain: f64,
}

/// Fairness of per-worker acquisition counts; `None` without workers or acquisitions.
pub fn fairness(counts: &[u64]) -> Option<Fairness> {
    let total: f64 = counts.iter().map(|&c| c as f64).sum();
    if counts.is_empty() || total == 0.0 {
        return None;
    }
    let squares: f64 = counts.iter().map(|&c| (c as f64).powi(2)).sum();
    let (min, max) = (counts.iter().min()?, counts.iter().max()?);
    Some(Fairness {
        shares: counts.iter().map(|&c| c as f64 / total).collect(),
        min_max_ratio: *min as f64 / *max as f64,
        jain: total * total / (counts.len() as f64 * squares),
    })
}

/// A shared-memory SLB run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedSlbPlan {
    pub pages: u64,
    pub loops: u64,
    pub counters: u64,
    pub lock: LockKind,
    /// One worker per entry, pinned to that CPU when given.
    pub cpus: Vec<Option<u32>>,
    /// Where the shared region goes.
    pub policy: MemPolicy,
    pub seed: u64,
}

impl SharedSlbPlan {
    /// Operations per worker; checks the plan and that there are no more workers than
    /// `allowed` CPUs (spinning workers sharing a CPU would wait for the scheduler, not the
    /// lock).
    pub fn check(&self, allowed: usize) -> Result<u64, BenchError> {
        SharedLayout::new(self.pages, self.counters)?;
        if self.cpus.is_empty() {
            return Err(BenchError::Usage("at least one worker is needed".into()));
        }
        if self.cpus.len() > allowed {
            return Err(BenchError::Usage(format!(
                "{} workers but only {allowed} CPUs allowed: give at most {allowed} workers \
                 (workers sharing a CPU would measure the scheduler, not the lock)",
                self.cpus.len()
            )));
        }
        if self.loops == 0 {
            return Err(BenchError::Usage("LOOPS must be at least 1".into()));
        }
        self.pages.checked_mul(self.loops).ok_or_else(|| {
            BenchError::Usage(format!("PAGES × LOOPS ({} × {}) overflows", self.pages, self.loops))
        })
    }
}

/// One worker of a shared run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedWorkerResult {
    pub worker: usize,
    pub cpu: Option<u32>,
    pub ops: u64,
    pub planned_ops: u64,
    pub elapsed_ns: u64,
    pub batches: Option<Summary>,
    pub handoffs: u64,
    /// Acquisitions while every worker was still running (up to when the first finished).
    pub contended_ops: u64,
}

impl SharedWorkerResult {
    pub fn ns_per_op(&self) -> f64 {
        self.elapsed_ns as f64 / self.ops.max(1) as f64
    }

    /// memhammer's line.
    pub fn memhammer_line(&self) -> String {
        crate::slb::memhammer_line(self.ops, self.elapsed_ns)
    }
}

/// A finished (or interrupted) shared run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedSlbResult {
    pub plan: SharedSlbPlan,
    pub workers: Vec<SharedWorkerResult>,
    /// Where the shared region's pages were, verified after the run.
    pub region: Placement,
    /// The shared counters' sum at the end, and the operations done: equal under a lock,
    /// short by the lost updates without one.
    pub counters_total: u64,
    pub ops_total: u64,
    /// From the release to the last worker's end.
    pub wall_ns: u64,
    /// Of the acquisitions made while all workers were contending.
    pub fairness: Option<Fairness>,
    pub interrupted: bool,
}

impl SharedSlbResult {
    /// Lock hand-offs (acquisitions from another worker) per second of the run; `None`
    /// without a lock.
    pub fn handoffs_per_sec(&self) -> Option<f64> {
        (self.plan.lock != LockKind::None).then(|| {
            self.workers.iter().map(|w| w.handoffs).sum::<u64>() as f64
                / (self.wall_ns.max(1) as f64 / 1e9)
        })
    }

    /// Operations per second, all workers together.
    pub fn ops_per_sec(&self) -> f64 {
        self.ops_total as f64 / (self.wall_ns.max(1) as f64 / 1e9)
    }

    /// Counter increments lost to races (0 under a lock).
    pub fn lost_updates(&self) -> u64 {
        self.ops_total.saturating_sub(self.counters_total)
    }

    /// Median ns/op across workers.
    pub fn median_ns(&self) -> f64 {
        let ns: Vec<f64> = self.workers.iter().map(SharedWorkerResult::ns_per_op).collect();
        measure::stats::median(&ns)
    }
}

#[repr(align(128))]
#[derive(Debug, Default)]
struct Progress(AtomicU64);

/// Runs the plan with one thread per worker on a private shared segment placed under
/// `plan.policy`. `allowed` is how many CPUs the run may use.
pub fn run(
    plan: &SharedSlbPlan,
    allowed: usize,
    topology: &Topology,
) -> Result<SharedSlbResult, BenchError> {
    let planned_ops = plan.check(allowed)?;
    let layout = SharedLayout::new(plan.pages, plan.counters)?;
    cheapest_trustworthy_clock();
    let region = SharedRegion::private(layout.bytes(), &plan.policy, topology)?;
    let work = layout.work(&region)?;
    let n = plan.cpus.len();
    let progress: Vec<Progress> = (0..n).map(|_| Progress::default()).collect();
    let first_done = AtomicBool::new(false);
    let snapshot: Mutex<Option<Vec<u64>>> = Mutex::new(None);
    let clock = cheapest_trustworthy_clock();
    let crew = Crew {
        what: "shared SLB worker",
        workers: &plan.cpus,
        cpu: &|&cpu: &Option<u32>| cpu,
        prepare: &|_, _| Ok(()),
        work: &|i, &cpu, ()| {
            let done = hammer_shared(
                &work,
                plan.lock,
                i as u64 + 1,
                planned_ops,
                worker_seed(plan.seed, i),
                &progress[i].0,
                || {
                    if !first_done.swap(true, Ordering::AcqRel) {
                        let counts = progress.iter().map(|p| p.0.load(Ordering::Relaxed));
                        let mut snap = snapshot.lock().unwrap_or_else(|e| e.into_inner());
                        *snap = Some(counts.collect());
                    }
                },
            );
            Ok(SharedWorkerResult {
                worker: i,
                cpu: cpu.or_else(pin::current_cpu),
                ops: done.ops,
                planned_ops,
                elapsed_ns: done.elapsed_ns,
                batches: done.batches,
                handoffs: done.handoffs,
                contended_ops: 0,
            })
        },
    };
    let (started, outcomes) = crew.run(|_| clock.read());
    let wall_ns = clock.ticks_to_ns(clock.read().wrapping_sub(started)) as u64;
    let mut workers = Vec::with_capacity(n);
    for outcome in outcomes {
        if let Some(w) = outcome? {
            workers.push(w);
        }
    }
    // Interrupted before anyone finished: the counts at the end are the contended window.
    let window = snapshot
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .unwrap_or_else(|| workers.iter().map(|w| w.ops).collect());
    for (w, &c) in workers.iter_mut().zip(&window) {
        w.contended_ops = c;
    }
    let ops_total = workers.iter().map(|w| w.ops).sum();
    if ops_total == 0 {
        return Err(BenchError::Interrupted);
    }
    // SAFETY: the workers have ended; the region is still attached.
    let counters_total = unsafe { layout.counters_total(&work) };
    Ok(SharedSlbResult {
        plan: plan.clone(),
        interrupted: workers.iter().any(|w| w.ops < w.planned_ops),
        region: region.placement()?,
        fairness: fairness(&window),
        workers,
        counters_total,
        ops_total,
        wall_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_tier::live;

    #[test]
    fn fairness_of_even_and_starved_counts() {
        let even = fairness(&[100, 100, 100, 100]).expect("even");
        assert_eq!((even.min_max_ratio, even.jain), (1.0, 1.0));
        let starved = fairness(&[400, 0, 0, 0]).expect("starved");
        assert_eq!(starved.min_max_ratio, 0.0);
        assert!((starved.jain - 0.25).abs() < 1e-12);
        let skewed = fairness(&[300, 100]).expect("skewed");
        assert!((skewed.shares[0] - 0.75).abs() < 1e-12);
        assert!((skewed.min_max_ratio - 1.0 / 3.0).abs() < 1e-12);
        assert!((skewed.jain - 0.8).abs() < 1e-12, "{}", skewed.jain);
        assert!(fairness(&[]).is_none());
        assert!(fairness(&[0, 0]).is_none());
    }

    #[test]
    fn layout_and_plan_checks() {
        let l = SharedLayout::new(10, 3).expect("layout");
        assert_eq!(l.control_bytes(), 4096);
        assert_eq!(l.bytes(), 11 * 4096);
        assert_eq!(SharedLayout::new(1, 64).expect("layout").control_bytes(), 3 * 4096);
        assert!(SharedLayout::new(0, 1).is_err_and(|e| e.is_usage()));
        assert!(SharedLayout::new(1, 0).is_err_and(|e| e.is_usage()));
        assert!(SharedLayout::new(1, MAX_COUNTERS + 1).is_err_and(|e| e.is_usage()));
        let plan = SharedSlbPlan {
            pages: 16,
            loops: 2,
            counters: 1,
            lock: LockKind::Spin,
            cpus: vec![None; 3],
            policy: MemPolicy::Inherit,
            seed: 1,
        };
        assert_eq!(plan.check(4).ok(), Some(32));
        let err = plan.check(2).expect_err("too many workers");
        assert!(err.is_usage() && err.to_string().contains("only 2 CPUs"), "{err}");
        assert!(LockKind::parse("ticket").is_ok_and(|k| k == LockKind::Ticket));
        assert!(LockKind::parse("rw").is_err_and(|e| e.is_usage()));
    }

    fn plan(lock: LockKind, workers: usize, loops: u64) -> SharedSlbPlan {
        SharedSlbPlan {
            pages: 64,
            loops,
            counters: 1,
            lock,
            cpus: vec![None; workers],
            policy: MemPolicy::Inherit,
            seed: 7,
        }
    }

    #[test]
    fn one_worker_counts_exactly_with_or_without_a_lock() {
        let t = Topology::detect().expect("topology");
        for lock in LockKind::ALL {
            let r = run(&plan(lock, 1, 100), 1, &t).expect("run");
            assert_eq!(r.ops_total, 6400, "{lock:?}");
            assert_eq!(r.counters_total, 6400, "{lock:?}");
            let f = r.fairness.expect("fairness");
            assert_eq!(f.shares, [1.0]);
            // One worker: the first acquisition is its only hand-off.
            let want = if lock == LockKind::None { 0 } else { 1 };
            assert_eq!(r.workers[0].handoffs, want, "{lock:?}");
        }
    }

    #[live]
    fn live_locks_make_shared_counters_exact() {
        let t = Topology::detect().expect("topology");
        let cpus = place::PlacementRequest { cpus: None, policy: MemPolicy::Inherit }
            .allowed_cpus(&t)
            .expect("cpus");
        if cpus.len() < 2 {
            eprintln!("skipped: one CPU allowed");
            return;
        }
        let n = cpus.len();
        for lock in [LockKind::Spin, LockKind::Ticket, LockKind::Mutex] {
            let mut p = plan(lock, n, 2000);
            p.cpus = cpus.iter().map(|&c| Some(c)).collect();
            let r = run(&p, n, &t).expect("run");
            assert_eq!(r.ops_total, n as u64 * 64 * 2000, "{lock:?}");
            assert_eq!(r.counters_total, r.ops_total, "{lock:?}: the lock lost no update");
            let f = r.fairness.as_ref().expect("fairness");
            // Fairness comes from the real counts: shares match the contended operations.
            let contended: u64 = r.workers.iter().map(|w| w.contended_ops).sum();
            for (w, share) in r.workers.iter().zip(&f.shares) {
                assert!((w.contended_ops as f64 / contended as f64 - share).abs() < 1e-12);
            }
            assert!(r.workers.iter().any(|w| w.contended_ops == w.planned_ops));
            assert!(f.jain > 0.0 && f.jain <= 1.0 + 1e-12);
            assert!(r.handoffs_per_sec().is_some_and(|h| h > 0.0), "{lock:?}");
        }
        // Without a lock the plain increments race; lost updates are likely but not certain,
        // so only the bound is checked.
        let mut p = plan(LockKind::None, n, 2000);
        p.cpus = cpus.iter().map(|&c| Some(c)).collect();
        let r = run(&p, n, &t).expect("run");
        assert!(r.counters_total <= r.ops_total);
        eprintln!("no lock: {} of {} increments lost", r.lost_updates(), r.ops_total);
    }
}
