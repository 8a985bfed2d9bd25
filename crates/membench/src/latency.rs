//! Idle load-to-use latency: one pinned thread chases pointers through an arena placed where
//! asked. Sizes from L1 to DRAM, page sizes that show the page-walk cost, and node×node
//! matrices.

use std::time::{Duration, Instant};

use place::{pin, Arena, ArenaSpec, MemPolicy, PageSize, Placement};
use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::kernels::chase::chase;
use crate::layout::{build_chase, Access, ChaseLayout};
use crate::timers::cheapest_trustworthy_clock;
use crate::BenchError;
use measure::core_clock::core_ghz;
use measure::stop;
use measure::summary::{summarize, Summary};

/// How to measure one latency figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyOptions {
    pub layout: ChaseLayout,
    pub page: PageSize,
    pub policy: MemPolicy,
    /// Time spent sampling each figure (after building and warming the chain).
    pub duration: Duration,
    /// Target time per sample; each sample is one timed batch of loads.
    pub batch: Duration,
}

impl Default for LatencyOptions {
    fn default() -> Self {
        Self {
            layout: ChaseLayout::default(),
            page: PageSize::Base,
            policy: MemPolicy::Inherit,
            duration: Duration::from_millis(500),
            batch: Duration::from_millis(2),
        }
    }
}

/// A working set that is surely beyond the caches: 4× the last-level cache, at least 256 MiB —
/// the default for DRAM latency everywhere.
pub fn default_dram_bytes(topology: &Topology) -> u64 {
    (4 * topology.last_level_cache_bytes()).max(256 << 20)
}

/// One measured latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyPoint {
    pub bytes: u64,
    /// Nanoseconds per load, over the samples (first one dropped as warm-up).
    pub ns: Summary,
    /// Median in core cycles, from the measured core clock.
    pub cycles: Option<f64>,
    pub cpu: Option<u32>,
    pub placement: Placement,
    pub loads: u64,
}

/// A built chain in its arena, ready to be sampled again and again (the loaded-latency sweep
/// samples one chain under each load level).
#[derive(Debug)]
pub struct Chase {
    arena: Arena,
    position: *const usize,
    batch: u64,
    bytes: u64,
    placement: Placement,
}

impl Chase {
    /// Allocates `bytes` under the options' policy and page size, builds the chain, warms it up
    /// and sizes a batch to about `opts.batch`. Runs on (and first-touches from) the calling
    /// thread, which the caller pins first.
    pub fn new(bytes: u64, opts: &LatencyOptions, topology: &Topology) -> Result<Self, BenchError> {
        // Calibrate the measuring clock now, not after the workers' release.
        cheapest_trustworthy_clock();
        let spec = ArenaSpec { bytes, policy: opts.policy.clone(), page: opts.page };
        let mut arena = Arena::new(spec, topology)?;
        let placement = arena.placement()?;
        // The arena may be rounded up to whole (huge) pages; the chase covers exactly the request.
        let len = usize::try_from(bytes).map_err(|_| place::PlaceError::TooLarge(bytes))?;
        let slots = len / opts.layout.stride;
        if slots < 16 {
            return Err(BenchError::Usage(format!(
                "a size of {bytes} B holds {slots} slot(s) of {} bytes, fewer than the 16 a \
                 chase needs; use at least {} bytes",
                opts.layout.stride,
                16 * opts.layout.stride
            )));
        }
        let start = build_chase(&mut arena.as_mut_slice()[..len], &opts.layout)?;
        let mut chase = Chase { arena, position: start, batch: 1 << 10, bytes, placement };
        // Warm up: one full lap brings the chain into whatever level of cache can hold it;
        // over gigabytes that takes seconds, so in parts, between looks at the stop flag.
        let mut lap = (slots as u64).next_multiple_of(16);
        while lap > 0 {
            stop::check("warming up the chase")?;
            let part = lap.min(1 << 20);
            chase.run(part);
            lap -= part;
        }
        // Calibrate a batch to last about opts.batch.
        loop {
            let t = Instant::now();
            chase.run(chase.batch);
            let elapsed = t.elapsed();
            if elapsed >= opts.batch / 4 || chase.batch >= 1 << 32 {
                let scale = opts.batch.as_secs_f64() / elapsed.as_secs_f64().max(1e-9);
                chase.batch = ((chase.batch as f64 * scale) as u64)
                    .clamp(1 << 10, 1 << 32)
                    .next_multiple_of(16);
                break;
            }
            chase.batch *= 4;
        }
        Ok(chase)
    }

    fn run(&mut self, loads: u64) {
        // SAFETY: the chain was built over self.arena, which lives as long as self, and
        // position always points at one of its slots.
        self.position = unsafe { chase(self.position, loads) };
    }

    /// Times batches for `duration` (at least 11 of them) and summarizes ns per load, the
    /// first batch dropped as warm-up. `None` when interrupted before any sample.
    pub fn sample(&mut self, duration: Duration) -> Option<(Summary, u64)> {
        let mut samples = Vec::new();
        let clock = cheapest_trustworthy_clock();
        let began = Instant::now();
        while (began.elapsed() < duration || samples.len() < 11) && !stop::requested() {
            let t = clock.read();
            self.run(self.batch);
            samples.push(clock.ticks_to_ns(clock.read().wrapping_sub(t)) / self.batch as f64);
        }
        std::hint::black_box(self.position);
        if samples.len() > 1 {
            samples.remove(0);
        }
        Some((summarize(&samples)?, self.batch * samples.len() as u64))
    }

    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The arena's length (the request rounded up to whole pages).
    pub fn arena_len(&self) -> usize {
        self.arena.len()
    }
}

/// Chases through `bytes` on the calling thread. The caller pins the thread first.
pub fn measure(
    bytes: u64,
    opts: &LatencyOptions,
    topology: &Topology,
) -> Result<LatencyPoint, BenchError> {
    let mut chase = Chase::new(bytes, opts, topology)?;
    let (ns, loads) = chase.sample(opts.duration).ok_or(BenchError::Interrupted)?;
    Ok(LatencyPoint {
        bytes: chase.bytes,
        cycles: core_ghz().map(|ghz| ns.median * ghz),
        ns,
        cpu: pin::current_cpu(),
        placement: chase.placement.clone(),
        loads,
    })
}

/// Runs `measure` on a thread pinned to `cpu`.
pub fn measure_on(
    cpu: Option<u32>,
    bytes: u64,
    opts: &LatencyOptions,
    topology: &Topology,
) -> Result<LatencyPoint, BenchError> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                if let Some(cpu) = cpu {
                    pin::pin_current_thread(&[cpu])?;
                }
                measure(bytes, opts, topology)
            })
            .join()
            .map_err(|_| BenchError::Worker("latency thread panicked".into()))?
    })
}

/// Sizes for a sweep: powers of two from `from` to `to` with a midpoint (×1.5) between each,
/// so cache boundaries show up as steps.
pub fn sweep_sizes(from: u64, to: u64) -> Vec<u64> {
    let mut sizes = Vec::new();
    let mut size = from.next_power_of_two().max(4096);
    while size <= to {
        sizes.push(size);
        let mid = size + size / 2;
        if mid <= to {
            sizes.push(mid);
        }
        size *= 2;
    }
    sizes
}

/// The prefetch self-check: the same size chased in address order must be clearly faster than
/// in random order, or the random chain is being prefetched (or the size fits in cache).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrefetchCheck {
    pub bytes: u64,
    pub random_ns: f64,
    pub sequential_ns: f64,
    /// random / sequential; well above 1 when prefetchers help the sequential chase only.
    pub ratio: f64,
    pub defeated: bool,
}

/// Sequential must be at least this many times faster for the random chase to count as
/// unprefetched.
pub const PREFETCH_RATIO: f64 = 1.5;

pub fn prefetch_check(
    cpu: Option<u32>,
    random: &LatencyPoint,
    opts: &LatencyOptions,
    topology: &Topology,
) -> Result<PrefetchCheck, BenchError> {
    let sequential_opts = LatencyOptions {
        layout: ChaseLayout { access: Access::Sequential, ..opts.layout },
        ..opts.clone()
    };
    let sequential = measure_on(cpu, random.bytes, &sequential_opts, topology)?;
    let ratio = random.ns.median / sequential.ns.median;
    Ok(PrefetchCheck {
        bytes: random.bytes,
        random_ns: random.ns.median,
        sequential_ns: sequential.ns.median,
        ratio,
        defeated: ratio >= PREFETCH_RATIO,
    })
}

/// Latency from each node's CPUs to each node's memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyMatrix {
    pub bytes: u64,
    /// Nodes that ran the chase (nodes with CPUs).
    pub cpu_nodes: Vec<u32>,
    /// Nodes whose memory was chased (nodes with memory).
    pub memory_nodes: Vec<u32>,
    /// `cells[i][j]`: from `cpu_nodes[i]` to `memory_nodes[j]`.
    pub cells: Vec<Vec<LatencyPoint>>,
}

impl LatencyMatrix {
    /// A CPU node's chase of its own memory: (node, cell), `None` when the node has none.
    pub fn local(&self, node: u32) -> Option<&LatencyPoint> {
        let i = self.cpu_nodes.iter().position(|&n| n == node)?;
        let j = self.memory_nodes.iter().position(|&n| n == node)?;
        self.cells.get(i)?.get(j)
    }

    /// The first CPU node's chase of its own memory: the idle DRAM latency.
    pub fn first_local(&self) -> Option<(u32, &LatencyPoint)> {
        self.cpu_nodes.iter().find_map(|&n| Some((n, self.local(n)?)))
    }
}

/// Measures every (CPU node, memory node) pair: the chase runs on the first CPU of the CPU node
/// with its arena bound to the memory node.
pub fn matrix(
    bytes: u64,
    opts: &LatencyOptions,
    topology: &Topology,
) -> Result<LatencyMatrix, BenchError> {
    let cpu_nodes: Vec<u32> =
        topology.nodes.iter().filter(|n| !n.cpus.is_empty()).map(|n| n.id).collect();
    let memory_nodes = topology.nodes_with_memory();
    let mut cells = Vec::new();
    for &from in &cpu_nodes {
        let cpu = topology.node(from).and_then(|n| n.cpus.first().copied());
        let mut row = Vec::new();
        for &to in &memory_nodes {
            let cell_opts = LatencyOptions { policy: MemPolicy::Bind(vec![to]), ..opts.clone() };
            row.push(measure_on(cpu, bytes, &cell_opts, topology)?);
            if stop::requested() {
                return Err(BenchError::Interrupted);
            }
        }
        cells.push(row);
    }
    Ok(LatencyMatrix { bytes, cpu_nodes, memory_nodes, cells })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_has_midpoints() {
        assert_eq!(
            sweep_sizes(16 << 10, 64 << 10),
            vec![16 << 10, 24 << 10, 32 << 10, 48 << 10, 64 << 10]
        );
        assert_eq!(sweep_sizes(16 << 10, 1 << 30).last(), Some(&(1 << 30)));
    }
}
