//! Memory bandwidth: pinned threads, each streaming through its own buffers (first-touched by
//! itself, placed by the `place` library and verified), all released together and sampled in
//! rounds so every figure has a distribution.

use std::time::{Duration, Instant};

use place::{pin, Arena, ArenaSpec, MemPolicy, PageSize, Placement};
use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::kernels::bandwidth::{pass, Isa, Kernel, BLOCK};
use crate::timers::cheapest_trustworthy_clock;
use crate::together::Crew;
use crate::BenchError;
use measure::progress::ProgressBar;
use measure::stop;
use measure::summary::{summarize, Summary};

/// How to measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthOptions {
    pub kernel: Kernel,
    pub isa: Isa,
    /// Size of each of a thread's buffers.
    pub bytes_per_thread: u64,
    pub page: PageSize,
    /// Total measuring time, split into `rounds` samples (plus one warm-up round).
    pub duration: Duration,
    pub rounds: u32,
}

/// Samples per bandwidth figure unless asked otherwise.
pub const DEFAULT_ROUNDS: u32 = 10;

/// Per-thread buffer size so all threads together stream through at least 4× the last-level
/// cache (and never less than 32 MiB each), rounded to whole blocks.
pub fn default_bytes_per_thread(topology: &Topology, threads: usize) -> u64 {
    let total = 4 * topology.last_level_cache_bytes();
    (total / threads.max(1) as u64).max(32 << 20).next_multiple_of(4096)
}

/// Where one thread runs and where its memory comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadSpec {
    pub cpu: Option<u32>,
    pub policy: MemPolicy,
}

/// One thread's share.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadResult {
    pub cpu: Option<u32>,
    /// GB/s (10^9 bytes/s) per round.
    pub gbs: Summary,
    /// Where each of its buffers was.
    pub placements: Vec<Placement>,
}

/// A bandwidth figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthResult {
    pub kernel: Kernel,
    pub isa: Isa,
    /// What the byte count includes (e.g. that write-allocate traffic is not counted).
    pub accounting: String,
    pub bytes_per_thread: u64,
    /// All threads together, GB/s per round.
    pub aggregate_gbs: Summary,
    pub threads: Vec<ThreadResult>,
    pub interrupted: bool,
}

/// A thread's private buffers for one kernel.
pub(crate) struct Buffers {
    arenas: Vec<Arena>,
}

impl Buffers {
    pub(crate) fn new(
        spec: &ThreadSpec,
        opts: &BandwidthOptions,
        topology: &Topology,
    ) -> Result<Self, BenchError> {
        let bytes = opts.bytes_per_thread.next_multiple_of(BLOCK as u64);
        let mut arenas = Vec::new();
        for i in 0..opts.kernel.info().buffers {
            let mut arena = Arena::new(
                ArenaSpec { bytes, policy: spec.policy.clone(), page: opts.page },
                topology,
            )?;
            // Real data in every buffer (1.0 as doubles for triad), written by this thread.
            let fill = if i == 0 { 0 } else { 1.0f64.to_bits() };
            crate::fill_words(arena.as_mut_slice(), fill)?;
            arenas.push(arena);
        }
        Ok(Self { arenas })
    }

    pub(crate) fn placements(&self) -> Result<Vec<Placement>, BenchError> {
        Ok(self.arenas.iter().map(Arena::placement).collect::<Result<_, _>>()?)
    }

    /// The kernels' three streams (unused ones repeat the first buffer); `&mut self`: the
    /// kernels write through them.
    pub(crate) fn pointers(&mut self) -> [*mut u8; 3] {
        let mut ptrs: Vec<*mut u8> = self.arenas.iter_mut().map(Arena::as_mut_ptr).collect();
        let first = ptrs.first().copied().unwrap_or(std::ptr::null_mut());
        ptrs.resize(3, first);
        [ptrs[0], ptrs[1], ptrs[2]]
    }
}

/// Bytes one pass counts.
fn pass_bytes(opts: &BandwidthOptions) -> u64 {
    opts.bytes_per_thread.next_multiple_of(BLOCK as u64) * opts.kernel.info().counted_streams
}

/// One thread's rounds over its buffers, once released: GB/s per round.
fn stream(opts: &BandwidthOptions, buffers: &mut Buffers) -> Vec<f64> {
    let bytes = opts.bytes_per_thread.next_multiple_of(BLOCK as u64) as usize;
    let per_pass = pass_bytes(opts);
    let ptrs = buffers.pointers();
    let round = opts.duration / opts.rounds.max(1);
    let clock = cheapest_trustworthy_clock();
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut checksum = 0u64;
    for r in 1..=opts.rounds + 1 {
        let deadline = start + round * r;
        let t0 = clock.read();
        let mut moved = 0u64;
        loop {
            // SAFETY: the buffers are this thread's arenas of `bytes` (a multiple of BLOCK),
            // page-aligned, distinct; opts.isa was validated against Isa::available.
            checksum ^= unsafe { pass(opts.kernel, opts.isa, ptrs, bytes, r as u64) };
            moved += per_pass;
            if Instant::now() >= deadline || stop::requested() {
                break;
            }
        }
        samples.push(moved as f64 / clock.ticks_to_ns(clock.read().wrapping_sub(t0)).max(1.0)); // bytes/ns = GB/s
        if stop::requested() {
            break;
        }
    }
    std::hint::black_box(checksum);
    samples
}

/// Runs one kernel on every thread at once.
pub fn run(
    threads: &[ThreadSpec],
    opts: &BandwidthOptions,
    topology: &Topology,
) -> Result<BandwidthResult, BenchError> {
    // Calibrate the measuring clock now, not after the workers' release.
    cheapest_trustworthy_clock();
    if threads.is_empty() {
        return Err(BenchError::Usage("at least one thread is needed".into()));
    }
    if !Isa::available().contains(&opts.isa) {
        return Err(BenchError::Usage(format!("this CPU cannot run {}", opts.isa)));
    }
    let mut policies: Vec<&MemPolicy> = threads.iter().map(|t| &t.policy).collect();
    policies.dedup();
    for policy in policies {
        let n = threads.iter().filter(|t| &t.policy == policy).count() as u64;
        let bytes = opts.bytes_per_thread.saturating_mul(n * opts.kernel.info().buffers as u64);
        Arena::check_fits(&ArenaSpec { bytes, policy: policy.clone(), page: opts.page }, topology)?;
    }
    let crew = Crew {
        what: "bandwidth thread",
        workers: threads,
        cpu: &|spec: &ThreadSpec| spec.cpu,
        prepare: &|_, spec| {
            let buffers = Buffers::new(spec, opts, topology)?;
            let placements = buffers.placements()?;
            Ok((buffers, placements))
        },
        work: &|_, _, (mut buffers, placements): (Buffers, Vec<Placement>)| {
            Ok((stream(opts, &mut buffers), placements))
        },
    };
    let ((), outcomes) = crew.run(drop);
    let mut per_thread = Vec::new();
    for (spec, outcome) in threads.iter().zip(outcomes) {
        if let Some((samples, placements)) = outcome? {
            per_thread.push((spec.cpu, samples, placements));
        }
    }
    // Round 0 is warm-up; a round counts only if every thread finished it.
    let rounds = per_thread.iter().map(|(_, s, _)| s.len()).min().unwrap_or(0);
    let interrupted = rounds < opts.rounds as usize + 1;
    let first = usize::from(rounds > 1);
    let aggregate: Vec<f64> =
        (first..rounds).map(|r| per_thread.iter().map(|(_, s, _)| s[r]).sum()).collect();
    let aggregate_gbs = summarize(&aggregate).ok_or(BenchError::Interrupted)?;
    let threads = per_thread
        .into_iter()
        .map(|(cpu, samples, placements)| {
            let gbs = summarize(&samples[first..rounds]).ok_or(BenchError::Interrupted)?;
            Ok(ThreadResult { cpu: cpu.or_else(pin::current_cpu), gbs, placements })
        })
        .collect::<Result<Vec<_>, BenchError>>()?;
    Ok(BandwidthResult {
        kernel: opts.kernel,
        isa: opts.isa,
        accounting: opts.kernel.info().accounting.to_string(),
        bytes_per_thread: opts.bytes_per_thread,
        aggregate_gbs,
        threads,
        interrupted,
    })
}

/// GB/s with threads on each CPU node and memory on each memory node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthMatrix {
    pub cpu_nodes: Vec<u32>,
    pub memory_nodes: Vec<u32>,
    pub threads_per_cell: usize,
    /// `cells[i][j]`: threads on `cpu_nodes[i]`, memory bound to `memory_nodes[j]`. After an
    /// interruption the last row may be short and later rows missing.
    pub cells: Vec<Vec<BandwidthResult>>,
    /// Ctrl-C stopped it: the cells present were measured, the rest were not.
    #[serde(default)]
    pub interrupted: bool,
}

/// Every (CPU node, memory node) pair with `threads` threads (≤ the node's CPUs) per cell.
/// `progress` counts cells.
pub fn matrix(
    threads: usize,
    opts: &BandwidthOptions,
    topology: &Topology,
    progress: &ProgressBar,
) -> Result<BandwidthMatrix, BenchError> {
    let cpu_nodes: Vec<u32> =
        topology.nodes.iter().filter(|n| !n.cpus.is_empty()).map(|n| n.id).collect();
    let memory_nodes = topology.nodes_with_memory();
    progress.set_length((cpu_nodes.len() * memory_nodes.len()) as u64);
    let mut cells = Vec::new();
    let mut used = usize::MAX;
    for &from in &cpu_nodes {
        let cpus = topology.node(from).map(|n| n.cpus.clone()).unwrap_or_default();
        let count = threads.min(cpus.len()).max(1);
        used = used.min(count);
        let mut row = Vec::new();
        for &to in &memory_nodes {
            let specs: Vec<ThreadSpec> = cpus
                .iter()
                .take(count)
                .map(|&cpu| ThreadSpec { cpu: Some(cpu), policy: MemPolicy::Bind(vec![to]) })
                .collect();
            let cell = match run(&specs, opts, topology) {
                Ok(cell) => cell,
                Err(BenchError::Interrupted) => break,
                Err(e) => return Err(e),
            };
            row.push(cell);
            progress.inc(1);
            if stop::requested() {
                break;
            }
        }
        if !row.is_empty() {
            cells.push(row);
        }
        if stop::requested() {
            break;
        }
    }
    if cells.is_empty() {
        return Err(BenchError::Interrupted);
    }
    // Finished cells are kept; rows never reached are left out with their node.
    let interrupted = stop::requested();
    let cpu_nodes = cpu_nodes.into_iter().take(cells.len()).collect();
    Ok(BandwidthMatrix { cpu_nodes, memory_nodes, threads_per_cell: used, cells, interrupted })
}

/// Threshold under which one more thread "adds nothing": less than this relative gain.
pub const SATURATION_GAIN: f64 = 0.05;

/// 1 … N threads, and where bandwidth stopped growing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scaling {
    pub steps: Vec<BandwidthResult>,
    /// Thread count after which adding threads gained less than [`SATURATION_GAIN`], if seen
    /// among the steps that ran to the end.
    pub saturated_at: Option<usize>,
    /// Stopped (Ctrl-C, SIGTERM) before every thread count ran: no conclusion is drawn from
    /// the steps that did not (false in runs stored before this field existed).
    #[serde(default)]
    pub interrupted: bool,
}

/// Runs with 1, 2, … `cpus.len()` threads on `cpus` in order; `progress` counts thread counts.
pub fn scale(
    cpus: &[u32],
    policy: &MemPolicy,
    opts: &BandwidthOptions,
    topology: &Topology,
    progress: &ProgressBar,
) -> Result<Scaling, BenchError> {
    let mut steps: Vec<BandwidthResult> = Vec::new();
    progress.set_length(cpus.len() as u64);
    for n in 1..=cpus.len() {
        let specs: Vec<ThreadSpec> = cpus[..n]
            .iter()
            .map(|&cpu| ThreadSpec { cpu: Some(cpu), policy: policy.clone() })
            .collect();
        match run(&specs, opts, topology) {
            Ok(step) => {
                steps.push(step);
                progress.inc(1);
            }
            // Stopped while preparing a step: the finished steps are kept.
            Err(BenchError::Interrupted) if !steps.is_empty() => break,
            Err(e) => return Err(e),
        }
        if stop::requested() {
            break;
        }
    }
    let interrupted = steps.len() < cpus.len() || steps.iter().any(|s| s.interrupted);
    let complete: Vec<BandwidthResult> =
        steps.iter().take_while(|s| !s.interrupted).cloned().collect();
    Ok(Scaling { saturated_at: saturation_point(&complete), steps, interrupted })
}

/// The first thread count whose successor gained less than [`SATURATION_GAIN`].
pub fn saturation_point(steps: &[BandwidthResult]) -> Option<usize> {
    steps
        .windows(2)
        .position(|w| {
            w[1].aggregate_gbs.median < w[0].aggregate_gbs.median * (1.0 + SATURATION_GAIN)
        })
        .map(|i| steps[i].threads.len())
}
