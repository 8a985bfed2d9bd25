//! `platscope mem bandwidth` (one figure, `--matrix`, `--scale`) and
//! `platscope mem loaded-latency`.

use std::time::Duration;

use chart::Part;
use experiment::{Context, Experiment, Outcome};
use measure::args::parse_count;
use measure::{Classified, Metric, ToMetrics, WorkerPlacement};
use place::{lists, parse_page, MemPolicy, PageSize, PlacementArgs, PlacementRequest};
use serde::{Deserialize, Serialize};
use topo::units::parse_bytes;
use topo::Topology;

use crate::bandwidth::{
    self, BandwidthMatrix, BandwidthOptions, BandwidthResult, Scaling, Sizing, ThreadSpec,
};
use crate::chart::{
    bandwidth_kernels, bandwidth_matrix, bandwidth_run, bandwidth_threads, headlines,
    loaded_latency, BANDWIDTH, BANDWIDTH_KERNELS, BANDWIDTH_MATRIX, BANDWIDTH_THREADS,
    LOADED_LATENCY,
};
use crate::kernels::bandwidth::{Isa, Kernel, Walk};
use crate::latency::LatencyOptions;
use crate::loaded::{self, LoadMix, LoadedCurve, LoadedOptions};
use crate::render::bandwidth as render;
use crate::BenchError;

// The arguments of `mem bandwidth`.
#[derive(Debug, clap::Args)]
pub struct BandwidthArgs {
    /// Kernel: read, read-line, write, write-nt, copy, copy-nt, triad, triad-nt (-nt: non-temporal
    /// stores, no write-allocate reads; glibc memcpy uses them for large copies). Several,
    /// comma-separated, run one after the other on the same threads.
    #[arg(long, default_value = "read", value_parser = Kernel::parse, value_delimiter = ',')]
    pub kernel: Vec<Kernel>,
    /// Vector instruction set: avx512, avx2, sse2, neon, scalar (default: the faster of the two
    /// widest this CPU has, in a short trial on the run's buffers).
    #[arg(long, value_parser = |s: &str| s.parse::<Isa>())]
    pub isa: Option<Isa>,
    /// The order each pass walks the buffers in: sequential, or four-pages (four 4 KiB pages at
    /// a time, a step in each in turn, as glibc's memcpy copies; default: chosen in the same
    /// trial, a four-page walk only when more than 3% faster).
    #[arg(long, value_parser = |s: &str| s.parse::<Walk>())]
    pub walk: Option<Walk>,
    /// Threads, pinned one per CPU over the allowed CPUs (default: all of them).
    #[arg(long, value_parser = parse_count, allow_hyphen_values = true)]
    pub threads: Option<u64>,
    /// Size of each thread's buffer(s) (default: together 4× the last-level cache, ≥ 32 MiB each).
    #[arg(long, value_parser = parse_bytes, allow_hyphen_values = true)]
    pub size: Option<u64>,
    /// A node×node GB/s table: threads on node i (down), memory bound to node j (across).
    #[arg(long, conflicts_with = "scale")]
    pub matrix: bool,
    /// Run 1 … N threads and say where bandwidth stops growing.
    #[arg(long)]
    pub scale: bool,
    /// Theoretical peak in GB/s, when the firmware does not say (SMBIOS memory devices).
    #[arg(long, value_name = "GB/s")]
    pub peak_gbs: Option<f64>,
    #[arg(long, default_value = "4k", value_parser = parse_page)]
    pub page: PageSize,
    /// Measuring time per figure, in milliseconds (split into 10 rounds).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub duration_ms: u64,
    #[command(flatten)]
    pub placement: PlacementArgs,
}

/// `platscope mem bandwidth`.
#[derive(Debug)]
pub struct Bandwidth;

/// One figure (stored as the result), with the peak the text compares it to.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OneBandwidth {
    pub result: BandwidthResult,
    /// GB/s from `--peak-gbs` or SMBIOS; not stored.
    #[serde(skip)]
    pub peak: Option<f64>,
}

/// `--scale` (stored as the scaling), with the peak the text compares it to.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BandwidthScale {
    pub scaling: Scaling,
    /// GB/s from `--peak-gbs` or SMBIOS; not stored.
    #[serde(skip)]
    pub peak: Option<f64>,
    /// Ctrl-C ended the run early.
    #[serde(skip)]
    pub interrupted: bool,
}

/// What `mem bandwidth` measured: stored as `mem bandwidth`, `mem bandwidth --matrix`,
/// `mem bandwidth --scale` or, with several kernels, `mem bandwidth --kernels` (the list of
/// their runs).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum BandwidthOutcome {
    One(OneBandwidth),
    Matrix(BandwidthMatrix),
    Scale(BandwidthScale),
    Kernels(Vec<BandwidthResult>),
}

/// The report's bandwidth steps as earlier versions stored them (read back, never written).
const LEGACY_MATRIX: &str = "report: bandwidth matrix";
const LEGACY_SCALE: &str = "report: bandwidth scaling";
const LEGACY_COPY: &str = "report: copy bandwidth";

/// The peak to compare with: `--peak-gbs`, else SMBIOS memory devices, else unknown.
fn peak(given: Option<f64>) -> Option<f64> {
    given.or_else(|| topo::smbios::peak_gbs(&topo::smbios::read_memory_devices()))
}

impl Experiment for Bandwidth {
    const PATH: &'static [&'static str] = &["mem", "bandwidth"];
    const ABOUT: &'static str = "Bandwidth: read, read-line, write, write-nt, copy, triad; per \
                                 node pair (--matrix) or by thread count (--scale)";
    const TINY: &'static [&'static str] = &["--scale", "--size", "4MiB", "--duration-ms", "20"];
    type Args = BandwidthArgs;
    type Outcome = BandwidthOutcome;

    /// Several threads share the caches and memory controllers: their bandwidth depends on
    /// where their CPUs sit (a node×node table's cells run their threads on one node each).
    fn placement_cpus(args: &BandwidthArgs, topology: &Topology) -> Option<Vec<u32>> {
        let threads = args.threads.map_or(usize::MAX, |t| usize::try_from(t).unwrap_or(usize::MAX));
        if threads < 2 {
            return None;
        }
        let count = if args.matrix { usize::MAX } else { threads };
        super::several_cpus(Some(&args.placement), topology, count)
    }

    fn run(args: &BandwidthArgs, ctx: &mut Context<'_>) -> Result<BandwidthOutcome, Classified> {
        let topology = ctx.topology;
        let request = PlacementRequest::resolve(&args.placement, topology)?;
        let cpus = request.allowed_cpus(topology)?;
        let threads = args.threads.unwrap_or(cpus.len() as u64) as usize;
        if threads > cpus.len() {
            return Err(BenchError::Usage(format!(
                "--threads {threads} is more than the {} CPUs allowed ({}); one thread per CPU",
                cpus.len(),
                topo::idlist::format(&cpus)
            ))
            .into());
        }
        if let Some(p) = args.peak_gbs.filter(|p| !(p.is_finite() && *p > 0.0)) {
            return Err(
                BenchError::Usage(format!("--peak-gbs {p} must be a positive number")).into()
            );
        }
        let kernel =
            match args.kernel.as_slice() {
                [] => Kernel::Read,
                [one] => *one,
                [first, ..] if !args.matrix && !args.scale => *first,
                _ => return Err(BenchError::Usage(
                    "--matrix and --scale take one --kernel; several run only as one figure each"
                        .into(),
                )
                .into()),
            };
        let opts = BandwidthOptions {
            kernel,
            isa: args.isa,
            walk: args.walk,
            bytes_per_thread: args
                .size
                .unwrap_or_else(|| bandwidth::default_bytes_per_thread(topology, threads)),
            page: args.page,
            duration: Duration::from_millis(args.duration_ms),
            rounds: bandwidth::DEFAULT_ROUNDS,
        };
        let peak = peak(args.peak_gbs);
        // Without --size the buffers are sized from the last-level cache and checked at twice
        // that size.
        let sizing = if args.size.is_some() { Sizing::Fixed } else { Sizing::Checked };
        let measure = |specs: &[ThreadSpec], opts: &BandwidthOptions| match sizing {
            Sizing::Fixed => bandwidth::run(specs, opts, topology),
            Sizing::Checked => bandwidth::run_checked(specs, opts, topology).map(|(r, _)| r),
        };
        if args.matrix {
            let bar = ctx.progress(0, "node pairs");
            let m = bandwidth::matrix(threads, &opts, sizing, topology, &bar);
            bar.finish_and_clear();
            return Ok(BandwidthOutcome::Matrix(m?));
        }
        if args.scale {
            let bar = ctx.progress(0, "thread counts");
            // Each step's buffers are sized for its own threads.
            let s =
                bandwidth::scale(&cpus[..threads], &request.policy, &opts, sizing, topology, &bar);
            bar.finish_and_clear();
            let interrupted = ctx.stopped();
            return Ok(BandwidthOutcome::Scale(BandwidthScale { scaling: s?, peak, interrupted }));
        }
        let specs: Vec<ThreadSpec> = cpus[..threads]
            .iter()
            .map(|&cpu| ThreadSpec { cpu: Some(cpu), policy: request.policy.clone() })
            .collect();
        if args.kernel.len() > 1 {
            let mut runs = Vec::new();
            for &kernel in &args.kernel {
                if ctx.stopped() {
                    break;
                }
                runs.push(measure(&specs, &BandwidthOptions { kernel, ..opts.clone() })?);
            }
            return Ok(BandwidthOutcome::Kernels(runs));
        }
        let result = measure(&specs, &opts)?;
        Ok(BandwidthOutcome::One(OneBandwidth { result, peak }))
    }
}

impl ToMetrics for BandwidthOutcome {
    fn to_metrics(&self) -> Vec<Metric> {
        match self {
            BandwidthOutcome::One(one) => one.result.to_metrics(),
            BandwidthOutcome::Matrix(m) => m.to_metrics(),
            BandwidthOutcome::Scale(s) => s.scaling.to_metrics(),
            BandwidthOutcome::Kernels(runs) => runs.to_metrics(),
        }
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        match self {
            BandwidthOutcome::One(one) => one.result.placements(),
            BandwidthOutcome::Matrix(m) => m.placements(),
            BandwidthOutcome::Scale(s) => s.scaling.placements(),
            BandwidthOutcome::Kernels(runs) => runs.placements(),
        }
    }
}

impl Outcome for BandwidthOutcome {
    /// The last three are read only: the steps of reports stored by earlier versions.
    const KINDS: &'static [&'static str] = &[
        "mem bandwidth",
        "mem bandwidth --matrix",
        "mem bandwidth --scale",
        "mem bandwidth --kernels",
        LEGACY_MATRIX,
        LEGACY_SCALE,
        LEGACY_COPY,
    ];

    fn kind(&self) -> &'static str {
        match self {
            BandwidthOutcome::One(_) => Self::KINDS[0],
            BandwidthOutcome::Matrix(_) => Self::KINDS[1],
            BandwidthOutcome::Scale(_) => Self::KINDS[2],
            BandwidthOutcome::Kernels(_) => Self::KINDS[3],
        }
    }

    fn interrupted(&self) -> bool {
        match self {
            BandwidthOutcome::One(one) => one.result.interrupted,
            BandwidthOutcome::Matrix(m) => m.interrupted,
            BandwidthOutcome::Scale(s) => s.interrupted,
            BandwidthOutcome::Kernels(runs) => runs.iter().any(|r| r.interrupted),
        }
    }

    fn worth_storing(&self) -> bool {
        !matches!(self, BandwidthOutcome::Kernels(runs) if runs.is_empty())
    }

    fn text(&self) -> String {
        match self {
            BandwidthOutcome::One(one) => {
                let mut text = render::bandwidth_text(&one.result, one.peak);
                if one.peak.is_none() {
                    text.push_str(
                        "  theoretical peak unknown: no SMBIOS memory devices readable here \
                         (pass --peak-gbs)\n",
                    );
                }
                text
            }
            BandwidthOutcome::Matrix(m) => {
                let mut text = render::bandwidth_matrix(m);
                if m.interrupted {
                    text.push_str("interrupted: only the cells above were measured\n");
                }
                text
            }
            BandwidthOutcome::Scale(s) => render::bandwidth_scaling(&s.scaling, s.peak),
            BandwidthOutcome::Kernels(runs) => {
                runs.iter().map(|r| render::bandwidth_text(r, None)).collect()
            }
        }
    }

    fn parts(&self, _topology: &Topology) -> Vec<Part> {
        vec![match self {
            BandwidthOutcome::One(one) => BANDWIDTH.part(bandwidth_run(&one.result)),
            BandwidthOutcome::Matrix(m) => {
                let mut part = BANDWIDTH_MATRIX.part(bandwidth_matrix(m));
                part.headlines = headlines::bandwidth_matrix(m);
                part
            }
            BandwidthOutcome::Scale(s) => {
                let mut part = BANDWIDTH_THREADS.part(bandwidth_threads(&s.scaling));
                (part.headlines, part.compared) = headlines::bandwidth_scaling(&s.scaling);
                part
            }
            BandwidthOutcome::Kernels(runs) => {
                let mut part = BANDWIDTH_KERNELS.part(bandwidth_kernels(runs));
                (part.headlines, part.compared) = headlines::copies(runs);
                part
            }
        }]
    }

    fn from_stored(kind: &str, result: serde_json::Value) -> Result<Self, serde_json::Error> {
        Ok(match kind {
            "mem bandwidth --matrix" | LEGACY_MATRIX => {
                BandwidthOutcome::Matrix(serde_json::from_value(result)?)
            }
            "mem bandwidth --scale" | LEGACY_SCALE => {
                BandwidthOutcome::Scale(serde_json::from_value(result)?)
            }
            "mem bandwidth --kernels" | LEGACY_COPY => {
                BandwidthOutcome::Kernels(serde_json::from_value(result)?)
            }
            _ => BandwidthOutcome::One(serde_json::from_value(result)?),
        })
    }
}

// The arguments of `mem loaded-latency`.
#[derive(Debug, clap::Args)]
pub struct LoadedLatencyArgs {
    /// Load mix: reads, 2:1 (reads:writes), 1:1, nt-writes.
    #[arg(long, default_value = "reads", value_parser = LoadMix::parse)]
    pub mix: LoadMix,
    /// Delays to sweep, in busy cycles per 4 KiB a load thread moves (default 0 … 51200).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub delays: Option<Vec<u64>>,
    /// The CPU that chases (default: the first allowed); the other allowed CPUs load.
    #[arg(long)]
    pub chase_cpu: Option<String>,
    /// Node whose memory the chase reads (default: the chase CPU's policy / local).
    #[arg(long, value_name = "NODE")]
    pub chase_node: Option<String>,
    /// Nodes the load threads' memory is bound to (default: local to each).
    #[arg(long, value_name = "NODES")]
    pub load_nodes: Option<String>,
    /// Buffer the chase walks (default: 4× the last-level cache, at least 256 MiB).
    #[arg(long, value_parser = parse_bytes, allow_hyphen_values = true)]
    pub chase_size: Option<u64>,
    #[arg(long, value_parser = |s: &str| s.parse::<Isa>())]
    pub isa: Option<Isa>,
    /// Sampling time per point, in milliseconds.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub duration_ms: u64,
    #[command(flatten)]
    pub placement: PlacementArgs,
}

/// `platscope mem loaded-latency`.
#[derive(Debug)]
pub struct LoadedLatency;

impl Experiment for LoadedLatency {
    const PATH: &'static [&'static str] = &["mem", "loaded-latency"];
    const ABOUT: &'static str = "Latency under load: one chasing CPU, the others streaming with \
                                 a delay swept from none to idle — the latency-versus-bandwidth \
                                 curve";
    const TINY: &'static [&'static str] = &["--delays", "0", "--duration-ms", "10"];
    type Args = LoadedLatencyArgs;
    type Outcome = LoadedCurve;

    /// The chase shares the memory controllers (and an L3) with the load threads.
    fn placement_cpus(args: &LoadedLatencyArgs, topology: &Topology) -> Option<Vec<u32>> {
        super::several_cpus(Some(&args.placement), topology, usize::MAX)
    }

    fn run(args: &LoadedLatencyArgs, ctx: &mut Context<'_>) -> Result<LoadedCurve, Classified> {
        let topology = ctx.topology;
        let request = PlacementRequest::resolve(&args.placement, topology)?;
        let cpus = request.allowed_cpus(topology)?;
        let chase_cpu = match &args.chase_cpu {
            Some(text) => match lists::parse_cpus(text, topology)?.as_slice() {
                [cpu] => *cpu,
                _ => return Err(BenchError::Usage("--chase-cpu takes one CPU".into()).into()),
            },
            None => *cpus.first().ok_or_else(|| Classified::runtime("no CPU allowed"))?,
        };
        let load_cpus: Vec<u32> = cpus.iter().copied().filter(|&c| c != chase_cpu).collect();
        let chase_policy = match &args.chase_node {
            Some(text) => MemPolicy::Bind(lists::parse_memory_nodes(text, topology)?),
            None => request.policy.clone(),
        };
        let load_policy = match &args.load_nodes {
            Some(text) => MemPolicy::Bind(lists::parse_memory_nodes(text, topology)?),
            None => request.policy.clone(),
        };
        let opts = LoadedOptions {
            chase: LatencyOptions { policy: chase_policy, ..LatencyOptions::default() },
            chase_bytes: args
                .chase_size
                .unwrap_or_else(|| crate::latency::default_dram_bytes(topology)),
            mix: args.mix,
            isa: args.isa.unwrap_or_else(Isa::best),
            load_bytes_per_thread: bandwidth::default_bytes_per_thread(topology, load_cpus.len()),
            load_policy,
            delays: args.delays.clone().unwrap_or_else(|| loaded::DEFAULT_DELAYS.to_vec()),
            point_duration: Duration::from_millis(args.duration_ms),
        };
        let bar = ctx.progress(0, "load levels");
        let curve = loaded::run(chase_cpu, &load_cpus, &opts, topology, &bar);
        bar.finish_and_clear();
        Ok(curve?)
    }
}

impl Outcome for LoadedCurve {
    /// The last is read only: the step of reports stored by earlier versions.
    const KINDS: &'static [&'static str] = &["mem loaded-latency", "report: loaded latency"];

    fn interrupted(&self) -> bool {
        self.interrupted
    }

    fn text(&self) -> String {
        render::loaded_latency(self)
    }

    fn parts(&self, _topology: &Topology) -> Vec<Part> {
        let mut part = LOADED_LATENCY.part(loaded_latency(self));
        part.headlines = headlines::loaded_latency(self);
        vec![part]
    }
}
