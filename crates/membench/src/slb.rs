//! The Silly Little Benchmark, done precisely: each worker owns PAGES × 4 KiB placed by the
//! `place` library and initialized in full, all workers start together at the gate, and each
//! performs PAGES × LOOPS random 8-byte stores, timed from the release to its last store.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use place::{pin, Arena, ArenaSpec, MemPolicy, PageSize, Placement};
use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::kernels::slb::{slb_writes, SLB_PAGE};
use crate::kit::{PrivateGate, SlbSemaphore};
use crate::timers::cheapest_trustworthy_clock;
use crate::together::Crew;
use crate::BenchError;
use measure::progress::ProgressBar;
use measure::stop;
use measure::summary::{quantile, summarize, Summary};

/// Stores per timed batch: long enough that reading the clock is noise (~20 ms at DRAM
/// speed), short enough to answer Ctrl-C quickly and give many samples.
pub const BATCH_OPS: u64 = 1 << 18;

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

    /// memhammer's line, same fields and arithmetic: see [`memhammer_line`].
    pub fn memhammer_line(&self) -> String {
        memhammer_line(self.ops, self.elapsed_ns)
    }
}

/// memhammer's line for `ops` stores in `elapsed_ns`, same fields and arithmetic. The
/// `gettimeofday usec` field carries the elapsed time in µs, measured here with the monotonic
/// clock.
pub fn memhammer_line(ops: u64, elapsed_ns: u64) -> String {
    let usec = elapsed_ns / 1000;
    format!(
        "Total ops {} Avg nsec/op {:.1} gettimeofday usec {} TPUT ops/sec {:.1}",
        ops,
        usec as f64 * 1000.0 / ops.max(1) as f64,
        usec,
        ops as f64 / (usec.max(1) as f64 / 1e6)
    )
}

/// Across workers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SlbSummary {
    pub min_ns: f64,
    pub median_ns: f64,
    pub max_ns: f64,
    /// (max − min) / min, in percent: the SLB article's "latency variation between" workers.
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

/// One worker's memory, allocated under its policy and initialized in full (memhammer memset
/// its whole buffer before waiting), with where it is; on the worker's pinned thread.
fn prepare(
    spec: &SlbWorkerSpec,
    plan: &SlbPlan,
    topology: &Topology,
) -> Result<(Arena, Placement), BenchError> {
    let bytes = plan.pages * SLB_PAGE as u64;
    let mut arena =
        Arena::new(ArenaSpec { bytes, policy: spec.policy.clone(), page: plan.page }, topology)?;
    crate::fill_words(arena.as_mut_slice(), 0)?;
    let placement = arena.placement()?;
    Ok((arena, placement))
}

/// The generator's starting state for worker `index` of a run seeded with `seed`.
pub fn worker_seed(seed: u64, index: usize) -> u64 {
    seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// What [`hammer`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Hammered {
    /// Stores performed: `planned_ops`, or fewer when Ctrl-C stopped it.
    pub ops: u64,
    /// From the first store to the last.
    pub elapsed_ns: u64,
    /// ns per store of each full timed batch of [`BATCH_OPS`].
    pub batches: Option<Summary>,
}

impl Hammered {
    /// Worker `worker`'s result (run as `spec`, its memory at `placement`), from the calling
    /// thread: its CPU is the pinned one, else the one it is on.
    fn result(
        self,
        worker: usize,
        spec: &SlbWorkerSpec,
        planned_ops: u64,
        placement: Placement,
    ) -> SlbWorkerResult {
        SlbWorkerResult {
            worker,
            cpu: spec.cpu.or_else(pin::current_cpu),
            ops: self.ops,
            planned_ops,
            elapsed_ns: self.elapsed_ns,
            batches: self.batches,
            placement,
        }
    }
}

/// The timed SLB loop shared by thread workers, worker processes and `memhammer`:
/// `planned_ops` random 8-byte stores into the first `pages` 4 KiB pages of `arena`, in
/// batches timed from outside the kernel, stopping early between batches on Ctrl-C (see
/// [`measure::stop`]). `seed` starts the generator. `progress` is advanced by each batch's
/// stores after the batch's clock reads, so it costs the timed stores nothing.
pub fn hammer(
    arena: &mut Arena,
    pages: u64,
    planned_ops: u64,
    seed: u64,
    progress: &ProgressBar,
) -> Result<Hammered, BenchError> {
    let fits = pages.checked_mul(SLB_PAGE as u64).is_some_and(|b| b <= arena.len() as u64);
    if pages == 0 || pages >= 1 << 32 || !fits {
        return Err(BenchError::Usage(format!(
            "{pages} pages of 4 KiB do not fit the {} byte arena (or are not 1 to 2^32 - 1)",
            arena.len()
        )));
    }
    let mut state = seed;
    let mut done = 0u64;
    let mut batches = Vec::new();
    let clock = cheapest_trustworthy_clock();
    let start = clock.read();
    while done < planned_ops && !stop::requested() {
        let n = BATCH_OPS.min(planned_ops - done);
        let t = clock.read();
        // SAFETY: the arena holds at least `pages` 4 KiB pages (1 ≤ pages < 2^32, checked
        // above) and outlives this call.
        unsafe { slb_writes(arena.as_mut_ptr(), pages, n, &mut state) };
        if n == BATCH_OPS {
            batches.push(clock.ticks_to_ns(clock.read().wrapping_sub(t)) / n as f64);
        }
        done += n;
        progress.inc(n);
    }
    let elapsed_ns = clock.ticks_to_ns(clock.read().wrapping_sub(start)) as u64;
    Ok(Hammered { ops: done, elapsed_ns, batches: summarize(&batches) })
}

/// Runs the plan with one thread per worker; `progress` counts every worker's stores.
pub fn run(
    plan: &SlbPlan,
    topology: &Topology,
    progress: &ProgressBar,
) -> Result<SlbResult, BenchError> {
    // Calibrate the measuring clock now, not after the workers' release.
    cheapest_trustworthy_clock();
    let planned_ops = plan.ops_per_worker()?;
    if plan.workers.is_empty() {
        return Err(BenchError::Usage("at least one worker is needed".into()));
    }
    plan.check_fits(topology)?;
    progress.set_length(planned_ops * plan.workers.len() as u64);
    let crew = Crew {
        what: "SLB worker",
        workers: &plan.workers,
        cpu: &|spec: &SlbWorkerSpec| spec.cpu,
        prepare: &|_, spec| prepare(spec, plan, topology),
        work: &|i, spec, (mut arena, placement): (Arena, Placement)| {
            let seed = worker_seed(plan.seed, i);
            let done = hammer(&mut arena, plan.pages, planned_ops, seed, progress)?;
            Ok(done.result(i, spec, planned_ops, placement))
        },
    };
    let ((), outcomes) = crew.run(drop);
    let mut workers = Vec::new();
    for outcome in outcomes {
        if let Some(result) = outcome? {
            workers.push(result);
        }
    }
    finish(plan, workers)
}

fn finish(plan: &SlbPlan, workers: Vec<SlbWorkerResult>) -> Result<SlbResult, BenchError> {
    let interrupted = workers.iter().any(|w| w.ops < w.planned_ops);
    if workers.iter().all(|w| w.ops == 0) {
        return Err(BenchError::Interrupted);
    }
    Ok(SlbResult { plan: plan.clone(), workers, interrupted })
}

/// What one worker process of [`run_processes`] is to do; the parent passes it to the child
/// (the binary serializes it as one JSON argument).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlbChildRequest {
    /// The parent's private gate ([`PrivateGate::id`]).
    pub gate: i32,
    pub worker: usize,
    pub spec: SlbWorkerSpec,
    pub pages: u64,
    pub loops: u64,
    pub page: PageSize,
    /// The run's seed; the worker mixes in its index as thread workers do.
    pub seed: u64,
}

/// A worker process's life, as memhammer's: pin itself, set its memory policy, allocate,
/// initialize and verify its memory, wait at the parent's gate, hammer. Ctrl-C during the
/// stores ends them early and the result covers what was done.
pub fn run_child(
    request: &SlbChildRequest,
    topology: &Topology,
) -> Result<SlbWorkerResult, BenchError> {
    // Calibrate the measuring clock now, not after the workers' release.
    cheapest_trustworthy_clock();
    let spec = &request.spec;
    let plan = SlbPlan {
        pages: request.pages,
        loops: request.loops,
        page: request.page,
        workers: vec![spec.clone()],
        seed: request.seed,
    };
    let planned_ops = plan.ops_per_worker()?;
    if let Some(cpu) = spec.cpu {
        pin::pin_current_thread(&[cpu])?;
    }
    spec.policy.apply_to_thread()?;
    let (mut arena, placement) = prepare(spec, &plan, topology)?;
    SlbSemaphore::attach(request.gate).wait_open()?;
    let seed = worker_seed(plan.seed, request.worker);
    // A worker process has no terminal of its own to draw on: the parent shows the run.
    let done = hammer(&mut arena, plan.pages, planned_ops, seed, &measure::progress::hidden())?;
    Ok(done.result(request.worker, spec, planned_ops, placement))
}

/// A running worker process.
#[derive(Debug)]
struct ChildWorker {
    worker: usize,
    cpu: Option<u32>,
    child: Child,
    status: Option<std::process::ExitStatus>,
}

impl ChildWorker {
    fn name(&self) -> String {
        match self.cpu {
            Some(cpu) => format!("worker {} (CPU {cpu})", self.worker),
            None => format!("worker {}", self.worker),
        }
    }

    fn read(&mut self, stderr: bool) -> String {
        let mut text = String::new();
        let _ = if stderr {
            self.child.stderr.as_mut().map(|p| p.read_to_string(&mut text))
        } else {
            self.child.stdout.as_mut().map(|p| p.read_to_string(&mut text))
        };
        text
    }

    /// Why an exited worker failed: its last line on stderr, without the program's prefix.
    fn failure(&mut self) -> BenchError {
        let stderr = self.read(true);
        let line = stderr
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .map(|l| l.strip_prefix("platscope: ").unwrap_or(l).to_string());
        let why = match (line, self.status) {
            (Some(line), _) => line,
            (None, Some(status)) => format!("exited with {status} and printed nothing"),
            (None, None) => "failed".to_string(),
        };
        BenchError::Worker(format!("{} failed: {why}", self.name()))
    }
}

/// Worker processes; any still running when this is dropped are killed and reaped.
#[derive(Debug, Default)]
struct ChildWorkers(Vec<ChildWorker>);

impl ChildWorkers {
    /// Notes which have exited; the first that failed, if any.
    fn poll(&mut self) -> Result<Option<usize>, BenchError> {
        for (i, w) in self.0.iter_mut().enumerate() {
            if w.status.is_none() {
                w.status = w
                    .child
                    .try_wait()
                    .map_err(|e| BenchError::Worker(format!("waiting for {}: {e}", w.name())))?;
            }
            if w.status.is_some_and(|s| !s.success()) {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    fn running(&self) -> usize {
        self.0.iter().filter(|w| w.status.is_none()).count()
    }

    fn signal(&self, signal: libc::c_int) {
        for w in self.0.iter().filter(|w| w.status.is_none()) {
            if let Ok(pid) = libc::pid_t::try_from(w.child.id()) {
                // SAFETY: kill has no memory effects; the pid is our unreaped child, so it
                // cannot have been reused.
                unsafe { libc::kill(pid, signal) };
            }
        }
    }
}

impl Drop for ChildWorkers {
    fn drop(&mut self) {
        for w in self.0.iter_mut().filter(|w| w.status.is_none()) {
            let _ = w.child.kill();
            let _ = w.child.wait();
        }
    }
}

/// Runs the plan with one process per worker, as the original SLB did: `command` builds the
/// command line of a process that calls [`run_child`] with the request it is given and prints
/// the result on stdout; `decode` reads that result back from its last line. All workers get
/// ready (pinned, memory placed, touched, verified), wait on a private System V semaphore, and
/// are released together once every one of them is waiting. A worker that fails makes the run
/// fail with its error line; the others are killed.
///
/// Workers run in their own process group: Ctrl-C reaches this process, which passes it on to
/// them once, so they stop and report what they did.
///
/// `progress` counts finished workers: a worker process's stores are not visible from here,
/// so the bar shows that the run is alive and how long it has taken, not an estimate.
pub fn run_processes(
    plan: &SlbPlan,
    topology: &Topology,
    mut command: impl FnMut(&SlbChildRequest) -> std::io::Result<Command>,
    decode: impl Fn(&str) -> Result<SlbWorkerResult, String>,
    progress: &ProgressBar,
) -> Result<SlbResult, BenchError> {
    use std::os::unix::process::CommandExt;

    plan.ops_per_worker()?;
    if plan.workers.is_empty() {
        return Err(BenchError::Usage("at least one worker is needed".into()));
    }
    plan.check_fits(topology)?;
    let gate = PrivateGate::create()?;
    let mut children = ChildWorkers::default();
    for (worker, spec) in plan.workers.iter().enumerate() {
        let request = SlbChildRequest {
            gate: gate.id(),
            worker,
            spec: spec.clone(),
            pages: plan.pages,
            loops: plan.loops,
            page: plan.page,
            seed: plan.seed,
        };
        let spawn_error =
            |e: std::io::Error| BenchError::Worker(format!("starting worker {worker}: {e}"));
        let mut cmd = command(&request).map_err(spawn_error)?;
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
        // SAFETY: the closure runs in the child between fork and exec and only calls prctl,
        // which is async-signal-safe. It makes the kernel kill the worker if this process dies
        // first, so no worker is left waiting on a gate nobody will open.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        };
        let child = cmd.spawn().map_err(spawn_error)?;
        children.0.push(ChildWorker { worker, cpu: spec.cpu, child, status: None });
    }

    // Release only when every worker is ready and waiting.
    loop {
        if stop::requested() {
            return Err(BenchError::Interrupted);
        }
        if let Some(i) = children.poll()? {
            return Err(children.0[i].failure());
        }
        if children.running() < children.0.len() {
            let w = children.0.iter_mut().find(|w| w.status.is_some());
            return Err(w.map_or(BenchError::Interrupted, |w| {
                BenchError::Worker(format!("{} exited before the start", w.name()))
            }));
        }
        if gate.waiting()? as usize == children.0.len() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    gate.release()?;
    progress.set_length(children.0.len() as u64);

    let mut passed_on = false;
    while children.running() > 0 {
        progress.set_position((children.0.len() - children.running()) as u64);
        if stop::requested() && !passed_on {
            children.signal(libc::SIGINT);
            passed_on = true;
        }
        if let Some(i) = children.poll()? {
            return Err(children.0[i].failure());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if let Some(i) = children.poll()? {
        return Err(children.0[i].failure());
    }
    let mut workers = Vec::with_capacity(children.0.len());
    for w in &mut children.0 {
        let stdout = w.read(false);
        let line = stdout.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("");
        let result = decode(line).map_err(|e| {
            BenchError::Worker(format!("{} printed an unreadable result ({e}): {line:?}", w.name()))
        })?;
        workers.push(result);
    }
    finish(plan, workers)
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
            placement: Placement::base_pages(4096, vec![]),
        }
    }

    #[test]
    fn memhammer_line_matches_the_original_arithmetic() {
        // The SLB article's first line: 262144 pages × 6000 loops in 108281130 µs.
        let line = result(1_572_864_000, 108_281_130_000).memhammer_line();
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
    fn hammer_does_the_planned_stores_inside_its_arena() {
        let topology = Topology::detect().expect("topology");
        let spec = ArenaSpec { bytes: 16 * 4096, policy: MemPolicy::Inherit, page: PageSize::Base };
        let mut arena = Arena::new(spec, &topology).expect("arena");
        let done = hammer(&mut arena, 16, 1000, worker_seed(1, 0), &measure::progress::hidden())
            .expect("hammer");
        assert_eq!(done.ops, 1000);
        assert!(done.elapsed_ns > 0);
        assert!(done.batches.is_none(), "no full batch in 1000 stores");
        let written = arena.as_slice().chunks(4096).filter(|p| p.iter().any(|&b| b != 0));
        assert_eq!(written.count(), 16, "1000 random stores reach all 16 pages");
        for pages in [0, 17, 1 << 32] {
            let err =
                hammer(&mut arena, pages, 1, 1, &measure::progress::hidden()).expect_err("refused");
            assert!(err.is_usage(), "{pages}: {err}");
        }
        assert_ne!(worker_seed(1, 0), worker_seed(1, 1));
    }

    #[test]
    fn a_failing_worker_process_ends_the_run_with_its_error_line() {
        let topology = Topology::detect().expect("topology");
        let worker = SlbWorkerSpec { cpu: None, policy: MemPolicy::Inherit };
        let plan = SlbPlan {
            pages: 16,
            loops: 1,
            page: PageSize::Base,
            workers: vec![worker; 2],
            seed: 1,
        };
        let started = std::time::Instant::now();
        let err = run_processes(
            &plan,
            &topology,
            |request| {
                // Worker 0 never gets ready; worker 1 fails as a real worker reports errors.
                let script = match request.worker {
                    0 => "exec sleep 60",
                    _ => "sleep 0.2; echo 'platscope: no memory today' >&2; exit 1",
                };
                let mut command = Command::new("sh");
                command.args(["-c", script]);
                Ok(command)
            },
            |_| Err("no result expected".into()),
            &measure::progress::hidden(),
        )
        .expect_err("the run fails");
        assert_eq!(err.to_string(), "worker 1 failed: no memory today");
        assert!(!err.is_usage());
        assert!(started.elapsed() < Duration::from_secs(30), "worker 0 was killed, not awaited");
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
