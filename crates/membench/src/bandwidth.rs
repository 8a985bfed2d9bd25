//! Memory bandwidth: pinned threads, each streaming through its own buffers (first-touched by
//! itself, placed by the `place` library and verified), all released together and sampled in
//! rounds so every figure has a distribution.

use std::sync::{Barrier, Mutex, PoisonError};
use std::time::{Duration, Instant};

use place::{pin, Arena, ArenaSpec, MemPolicy, PageSize, Placement};
use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::kernels::bandwidth::{pass, Isa, Kernel, Walk, BLOCK};
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
    /// The vector ISA; `None`: the faster of the two widest this CPU has, chosen by a trial on
    /// the run's own buffers ([`isa_candidates`]). The widest is not always the fastest: on a
    /// Skylake-SP core, AVX-512 copies to DRAM ran about a sixth slower than AVX2 ones.
    pub isa: Option<Isa>,
    /// The order each pass walks the buffers in; `None`: chosen in the same trial as the ISA.
    /// Four pages at a time is faster on some memory systems, not on every one.
    #[serde(default)]
    pub walk: Option<Walk>,
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
    /// The ISA the rounds ran with.
    pub isa: Isa,
    /// The order the rounds walked the buffers in (results stored before walks were chosen
    /// walked sequentially).
    #[serde(default)]
    pub walk: Walk,
    /// How the ISA and the walk were chosen when not asked for: each candidate's GB/s in the
    /// trial, all threads together (empty when both were given, or there was nothing to
    /// choose).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub isa_trial: Vec<IsaTrial>,
    /// What the byte count includes (e.g. that write-allocate traffic is not counted).
    pub accounting: String,
    pub bytes_per_thread: u64,
    /// All threads together, GB/s per round.
    pub aggregate_gbs: Summary,
    pub threads: Vec<ThreadResult>,
    pub interrupted: bool,
    /// The buffer-size self-check when the size was chosen, not given ([`run_checked`]; absent
    /// with `--size` and in runs stored before the check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_check: Option<SizeCheck>,
}

impl BandwidthResult {
    /// How the rounds ran, for a heading: the ISA, and the walk when it was not sequential.
    pub fn how(&self) -> String {
        match self.walk {
            Walk::Sequential => self.isa.to_string(),
            walk => format!("{}, {walk} walk", self.isa),
        }
    }
}

/// One candidate's figure in a run's trial: an ISA and a walk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IsaTrial {
    pub isa: Isa,
    #[serde(default)]
    pub walk: Walk,
    /// The median of its trial slots, summed over the threads.
    pub gbs: f64,
}

/// Slots per candidate in a trial; the candidates take turns, so slow drifts hit all alike.
const TRIAL_SLOTS: usize = 3;

/// How much faster a later candidate (a narrower ISA, or the four-page walk) must be in the
/// trial to be chosen over an earlier one.
pub const TRIAL_MARGIN: f64 = 0.03;

/// The ISAs a run with no `--isa` tries for `kernel`, widest first: the two widest vector ISAs
/// (one or none: nothing to choose, and no trial). read-line's loads are scalar whatever the ISA.
pub fn isa_candidates(kernel: Kernel) -> Vec<Isa> {
    if kernel == Kernel::ReadLine {
        return Vec::new();
    }
    let mut isas: Vec<Isa> = Isa::available().into_iter().filter(|&i| i != Isa::Scalar).collect();
    isas.reverse();
    isas.truncate(2);
    isas
}

/// What a run with neither `--isa` nor `--walk` tries, in order of preference: each of
/// [`isa_candidates`] (or the widest ISA where there is nothing to choose) walking
/// sequentially, then each walking four pages at a time. A given ISA or walk is the only one
/// tried of its kind; one candidate means no trial.
pub fn trial_candidates(kernel: Kernel, isa: Option<Isa>, walk: Option<Walk>) -> Vec<(Isa, Walk)> {
    let isas = match isa {
        Some(isa) => vec![isa],
        None => Some(isa_candidates(kernel)).filter(|c| !c.is_empty()).unwrap_or(vec![Isa::best()]),
    };
    let walks = walk.map_or(Walk::ALL.to_vec(), |w| vec![w]);
    walks.iter().flat_map(|&w| isas.iter().map(move |&i| (i, w))).collect()
}

/// The candidate a trial's figures (in the candidates' order) choose: a later one wins only by
/// more than [`TRIAL_MARGIN`] over the best before it; closer than that, the trial cannot tell
/// them apart and the earlier (the wider ISA, the sequential walk) stays. `None` when there are
/// no figures.
pub fn trial_winner(figures: &[IsaTrial]) -> Option<(Isa, Walk)> {
    figures
        .iter()
        .fold(None::<&IsaTrial>, |best, f| match best {
            Some(b) if f.gbs <= b.gbs * (1.0 + TRIAL_MARGIN) => Some(b),
            _ => Some(f),
        })
        .map(|f| (f.isa, f.walk))
}

/// A trial the threads of one run take together: each runs every candidate in turn on its own
/// buffers, adds its medians, and all pick the same winner once every thread has added.
struct Trial {
    candidates: Vec<(Isa, Walk)>,
    all_added: Barrier,
    totals: Mutex<Vec<f64>>,
}

impl Trial {
    fn new(candidates: Vec<(Isa, Walk)>, threads: usize) -> Self {
        let totals = Mutex::new(vec![0.0; candidates.len()]);
        Self { candidates, all_added: Barrier::new(threads), totals }
    }

    /// This thread's part: `slot(isa, walk)` measures GB/s for one slot. Returns the winner.
    fn take(&self, mut slot: impl FnMut(Isa, Walk) -> f64) -> (Isa, Walk) {
        let mut rates = vec![Vec::with_capacity(TRIAL_SLOTS); self.candidates.len()];
        for _ in 0..TRIAL_SLOTS {
            for (rates, &(isa, walk)) in rates.iter_mut().zip(&self.candidates) {
                rates.push(slot(isa, walk));
            }
        }
        {
            let mut totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
            for (total, rates) in totals.iter_mut().zip(&rates) {
                *total += summarize(rates).map_or(0.0, |s| s.median);
            }
        }
        self.all_added.wait();
        self.winner().0
    }

    /// The winner ([`trial_winner`]), and every candidate's figure.
    fn winner(&self) -> ((Isa, Walk), Vec<IsaTrial>) {
        let totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let figures: Vec<IsaTrial> = self
            .candidates
            .iter()
            .zip(totals)
            .map(|(&(isa, walk), gbs)| IsaTrial { isa, walk, gbs })
            .collect();
        let best = trial_winner(&figures).unwrap_or((Isa::best(), Walk::Sequential));
        (best, figures)
    }
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

/// One thread's rounds over its buffers, once released (after its part of the trial, when there
/// is one): GB/s per round.
fn stream(opts: &BandwidthOptions, trial: Option<&Trial>, buffers: &mut Buffers) -> Vec<f64> {
    let bytes = opts.bytes_per_thread.next_multiple_of(BLOCK as u64) as usize;
    let per_pass = pass_bytes(opts);
    let ptrs = buffers.pointers();
    let round = opts.duration / opts.rounds.max(1);
    let clock = cheapest_trustworthy_clock();
    let mut checksum = 0u64;
    // Passes for at least `time` (at least one); GB/s.
    let mut passes = |isa: Isa, walk: Walk, time: Duration, seed: u64| {
        let until = Instant::now() + time;
        let t0 = clock.read();
        let mut moved = 0u64;
        loop {
            // SAFETY: the buffers are this thread's arenas of `bytes` (a multiple of BLOCK),
            // page-aligned, distinct; every ISA here is in Isa::available.
            checksum ^= unsafe { pass(opts.kernel, isa, walk, ptrs, bytes, seed) };
            moved += per_pass;
            if Instant::now() >= until || stop::requested() {
                break;
            }
        }
        // bytes/ns = GB/s
        moved as f64 / clock.ticks_to_ns(clock.read().wrapping_sub(t0)).max(1.0)
    };
    let (isa, walk) = match trial {
        Some(trial) => {
            // One untimed pass first: the first after the fill pays for cold TLBs.
            let (isa, walk) = trial.candidates[0];
            passes(isa, walk, Duration::ZERO, 0);
            let slot = round / TRIAL_SLOTS as u32;
            trial.take(|isa, walk| passes(isa, walk, slot, 0))
        }
        None => (opts.isa.unwrap_or_else(Isa::best), opts.walk.unwrap_or_default()),
    };
    let start = Instant::now();
    let mut samples = Vec::new();
    for r in 1..=opts.rounds + 1 {
        let left = (start + round * r).saturating_duration_since(Instant::now());
        samples.push(passes(isa, walk, left, r as u64));
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
    if let Some(isa) = opts.isa.filter(|isa| !Isa::available().contains(isa)) {
        return Err(BenchError::Usage(format!("this CPU cannot run {isa}")));
    }
    let candidates = trial_candidates(opts.kernel, opts.isa, opts.walk);
    let trial = (candidates.len() > 1).then(|| Trial::new(candidates, threads.len()));
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
            Ok((stream(opts, trial.as_ref(), &mut buffers), placements))
        },
    };
    let ((), outcomes) = crew.run(drop);
    let mut per_thread = Vec::new();
    for (spec, outcome) in threads.iter().zip(outcomes) {
        if let Some((samples, placements)) = outcome? {
            per_thread.push((spec.cpu, samples, placements));
        }
    }
    // Every thread ran the winner of the same totals.
    let ((isa, walk), isa_trial) = match trial {
        Some(trial) => trial.winner(),
        None => ((opts.isa.unwrap_or_else(Isa::best), opts.walk.unwrap_or_default()), Vec::new()),
    };
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
        isa,
        walk,
        isa_trial,
        accounting: opts.kernel.info().accounting.to_string(),
        bytes_per_thread: opts.bytes_per_thread,
        aggregate_gbs,
        threads,
        interrupted,
        size_check: None,
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
///
/// With [`Sizing::Checked`] the first cell (threads and memory on the first node) is measured
/// again at twice the buffer ([`run_checked`]), and every later cell uses the size that
/// agreed: the cache that serves one cell serves them all alike.
pub fn matrix(
    threads: usize,
    opts: &BandwidthOptions,
    sizing: Sizing,
    topology: &Topology,
    progress: &ProgressBar,
) -> Result<BandwidthMatrix, BenchError> {
    let mut opts = opts.clone();
    let mut sizing = sizing;
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
            let measured = match sizing {
                Sizing::Fixed => run(&specs, &opts, topology),
                Sizing::Checked => run_checked(&specs, &opts, topology).map(|(cell, _)| cell),
            };
            let cell = match measured {
                Ok(cell) => {
                    if sizing == Sizing::Checked {
                        opts.bytes_per_thread = cell.bytes_per_thread;
                        sizing = Sizing::Fixed;
                    }
                    cell
                }
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

/// How a scaling run sizes each step's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sizing {
    /// Every step uses the options' bytes per thread (`--size`).
    Fixed,
    /// Each step's threads together stream at least 4× the last-level cache
    /// ([`default_bytes_per_thread`] for that many threads, so one thread gets the whole 4×),
    /// and each step is measured again with twice the buffer: when the larger buffer reads
    /// more than [`SIZE_CHECK_TOLERANCE`] slower, the cache was still serving part of the
    /// smaller one, and the step keeps the larger buffer's figure (growing up to
    /// [`SIZE_CHECK_GROWTH`] times).
    Checked,
}

/// How far apart the figures at a buffer and at twice that buffer may be and still agree.
pub const SIZE_CHECK_TOLERANCE: f64 = 0.05;
/// How many times a step's buffer may double before the check gives up (the last size is
/// kept, and the disagreement said).
pub const SIZE_CHECK_GROWTH: u32 = 2;

/// One step's buffer-size self-check: the median at each size tried, smallest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeCheck {
    pub threads: usize,
    /// (bytes per thread, median GB/s), in the order measured.
    pub tried: Vec<(u64, f64)>,
    /// The last two sizes agreed within [`SIZE_CHECK_TOLERANCE`].
    pub agreed: bool,
}

impl SizeCheck {
    /// The buffer grew beyond the first size.
    pub fn grew(&self) -> bool {
        self.tried.len() > 2
    }

    /// One sentence for the page and the terminal.
    pub fn sentence(&self) -> String {
        let sizes: Vec<String> = self
            .tried
            .iter()
            .map(|(b, g)| format!("{:.1} GB/s at {}", g, topo::units::format_bytes(*b)))
            .collect();
        format!(
            "{} thread(s), buffer per thread checked at twice its size: {} — {}",
            self.threads,
            sizes.join(", "),
            self.verdict()
        )
    }

    /// What the check concluded, in a few words.
    pub fn verdict(&self) -> &'static str {
        match (self.agreed, self.grew()) {
            (true, false) => "agreeing with twice the buffer",
            (true, true) => "the cache served the smaller buffers: grown until twice agreed",
            (false, _) => "DISAGREEING with twice the buffer at the largest (cache hits?)",
        }
    }
}

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
    /// Each step's buffer-size self-check ([`Sizing::Checked`]; empty for runs with a fixed
    /// `--size` and for runs stored before the check).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub size_checks: Vec<SizeCheck>,
}

/// `specs` with the buffer sized for them and checked at twice that size ([`Sizing::Checked`]):
/// the result at the size that agrees with its double, and the check.
pub fn run_checked(
    specs: &[ThreadSpec],
    opts: &BandwidthOptions,
    topology: &Topology,
) -> Result<(BandwidthResult, SizeCheck), BenchError> {
    let bytes = default_bytes_per_thread(topology, specs.len());
    let mut kept =
        run(specs, &BandwidthOptions { bytes_per_thread: bytes, ..opts.clone() }, topology)?;
    let mut check = SizeCheck {
        threads: specs.len(),
        tried: vec![(bytes, kept.aggregate_gbs.median)],
        agreed: false,
    };
    let mut size = bytes;
    // The larger buffers run the ISA and walk the first size's trial picked: the check
    // compares sizes, not methods, and skips a trial per size.
    let picked = BandwidthOptions { isa: Some(kept.isa), walk: Some(kept.walk), ..opts.clone() };
    for _ in 0..SIZE_CHECK_GROWTH {
        if stop::requested() || kept.interrupted {
            break;
        }
        size *= 2;
        let larger = match run(
            specs,
            &BandwidthOptions { bytes_per_thread: size, ..picked.clone() },
            topology,
        ) {
            Ok(r) => r,
            // No room for a larger buffer (or stopped while preparing it): the last figure
            // stands, and the check says it did not agree.
            Err(_) => break,
        };
        let (small, large) = (kept.aggregate_gbs.median, larger.aggregate_gbs.median);
        check.tried.push((size, large));
        let slower = large < small * (1.0 - SIZE_CHECK_TOLERANCE);
        if !slower {
            // The two agree (or the larger is faster, which no cache explains): the smaller
            // buffer's figure stands.
            check.agreed = true;
            break;
        }
        // The trial that picked the method stays with the figure.
        let trial = std::mem::take(&mut kept.isa_trial);
        kept = BandwidthResult { isa_trial: trial, ..larger };
    }
    kept.size_check = Some(check.clone());
    Ok((kept, check))
}

/// Runs with 1, 2, … `cpus.len()` threads on `cpus` in order; `progress` counts thread counts.
pub fn scale(
    cpus: &[u32],
    policy: &MemPolicy,
    opts: &BandwidthOptions,
    sizing: Sizing,
    topology: &Topology,
    progress: &ProgressBar,
) -> Result<Scaling, BenchError> {
    let mut steps: Vec<BandwidthResult> = Vec::new();
    let mut size_checks = Vec::new();
    progress.set_length(cpus.len() as u64);
    for n in 1..=cpus.len() {
        let specs: Vec<ThreadSpec> = cpus[..n]
            .iter()
            .map(|&cpu| ThreadSpec { cpu: Some(cpu), policy: policy.clone() })
            .collect();
        let measured = match sizing {
            Sizing::Fixed => run(&specs, opts, topology),
            Sizing::Checked => run_checked(&specs, opts, topology).map(|(step, check)| {
                size_checks.push(check);
                step
            }),
        };
        match measured {
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
    Ok(Scaling { saturated_at: saturation_point(&complete), steps, interrupted, size_checks })
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

#[cfg(test)]
mod tests {
    use super::*;

    const SEQ: Walk = Walk::Sequential;
    const PAGES: Walk = Walk::FourPages;

    #[test]
    fn every_thread_of_a_trial_picks_the_same_winner_from_the_sum() {
        // Thread 0 sees the narrower ISA faster, thread 1 the wider by more: the sum decides,
        // and both threads leave with it.
        let trial = Trial::new(vec![(Isa::Avx512, SEQ), (Isa::Sse2, SEQ)], 2);
        let picks: Vec<(Isa, Walk)> = std::thread::scope(|s| {
            let t = &trial;
            let a = s.spawn(move || t.take(|isa, _| if isa == Isa::Sse2 { 6.0 } else { 5.0 }));
            let b = s.spawn(move || t.take(|isa, _| if isa == Isa::Sse2 { 4.0 } else { 9.0 }));
            [a, b].into_iter().map(|h| h.join().unwrap_or((Isa::Scalar, PAGES))).collect()
        });
        assert_eq!(picks, [(Isa::Avx512, SEQ), (Isa::Avx512, SEQ)]);
        let (winner, figures) = trial.winner();
        assert_eq!(winner, (Isa::Avx512, SEQ));
        assert_eq!(
            figures,
            [
                IsaTrial { isa: Isa::Avx512, walk: SEQ, gbs: 14.0 },
                IsaTrial { isa: Isa::Sse2, walk: SEQ, gbs: 10.0 }
            ]
        );
    }

    #[test]
    fn a_later_candidate_must_win_by_the_margin() {
        for (narrower, expected) in [(7.0, Isa::Avx2), (7.14, Isa::Avx2), (7.3, Isa::Sse2)] {
            let trial = Trial::new(vec![(Isa::Avx2, SEQ), (Isa::Sse2, SEQ)], 1);
            let pick = trial.take(|isa, _| if isa == Isa::Sse2 { narrower } else { 7.0 });
            assert_eq!(pick, (expected, SEQ), "sse2 at {narrower} against avx2 at 7.0");
        }
        // The four-page walk against the sequential one of the same ISA, and against a
        // narrower ISA that had already won.
        for (pages, expected) in [(7.2, (Isa::Avx2, SEQ)), (7.3, (Isa::Avx2, PAGES))] {
            let trial = Trial::new(vec![(Isa::Avx2, SEQ), (Isa::Avx2, PAGES)], 1);
            let pick = trial.take(|_, walk| if walk == PAGES { pages } else { 7.0 });
            assert_eq!(pick, expected, "four pages at {pages} against sequential at 7.0");
        }
        let trial = Trial::new(
            vec![(Isa::Avx2, SEQ), (Isa::Sse2, SEQ), (Isa::Avx2, PAGES), (Isa::Sse2, PAGES)],
            1,
        );
        let gbs = |isa, walk| match (isa, walk) {
            (Isa::Sse2, SEQ) => 8.0,
            (Isa::Avx2, PAGES) => 8.2,
            _ => 7.0,
        };
        assert_eq!(trial.take(gbs), (Isa::Sse2, SEQ), "8.2 is not 3% above 8.0");
    }

    #[test]
    fn the_candidates_are_the_widest_isas_sequential_first_unless_one_is_given() {
        let copy = isa_candidates(Kernel::Copy);
        assert!(copy.len() <= 2 && !copy.contains(&Isa::Scalar), "{copy:?}");
        assert!(copy.windows(2).all(|w| w[0] > w[1]), "widest first: {copy:?}");
        let all = trial_candidates(Kernel::Copy, None, None);
        assert_eq!(all.len(), 2 * copy.len().max(1));
        assert!(all[..all.len() / 2].iter().all(|&(_, w)| w == SEQ), "{all:?}");
        assert!(all[all.len() / 2..].iter().all(|&(_, w)| w == PAGES), "{all:?}");
        // read-line's loads are scalar whatever the ISA: only the walk is tried.
        assert!(isa_candidates(Kernel::ReadLine).is_empty());
        assert_eq!(
            trial_candidates(Kernel::ReadLine, None, None),
            [(Isa::best(), SEQ), (Isa::best(), PAGES)]
        );
        assert_eq!(
            trial_candidates(Kernel::Copy, Some(Isa::Sse2), Some(PAGES)),
            [(Isa::Sse2, PAGES)]
        );
        let walks = trial_candidates(Kernel::Read, Some(Isa::Scalar), None);
        assert_eq!(walks, [(Isa::Scalar, SEQ), (Isa::Scalar, PAGES)]);
        let isas = trial_candidates(Kernel::Read, None, Some(SEQ));
        assert_eq!(isas.iter().map(|&(i, _)| i).collect::<Vec<_>>(), {
            let c = isa_candidates(Kernel::Read);
            if c.is_empty() {
                vec![Isa::best()]
            } else {
                c
            }
        });
    }
}
