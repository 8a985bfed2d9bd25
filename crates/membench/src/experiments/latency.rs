//! `platscope mem latency`: idle load-to-use latency by pointer chasing — one size (with the
//! prefetch self-check), a size sweep printed row by row as it is measured, or a node×node
//! matrix.

use std::time::Duration;

use chart::Part;
use experiment::{Context, Experiment, Outcome};
use measure::{Classified, Metric, ToMetrics, WorkerPlacement};
use place::{parse_page, pin, PageSize, PlacementArgs, PlacementRequest};
use serde::{Deserialize, Serialize};
use topo::units::parse_bytes;
use topo::{Cache, Distances, Topology};

use crate::chart::{headlines, latency_matrix, latency_size, LATENCY_MATRIX, LATENCY_SIZE};
use crate::latency::{self, LatencyMatrix, LatencyOptions, LatencyPoint, PrefetchCheck};
use crate::layout::ChaseLayout;
use crate::render::mem as render;
use crate::{scenarios, BenchError};

// The arguments of `mem latency` (a doc comment here would replace `Latency::ABOUT`).
#[derive(Debug, clap::Args)]
pub struct LatencyArgs {
    /// Buffer to chase through (default: 4× the last-level cache, at least 256 MiB).
    #[arg(long, value_parser = parse_bytes, allow_hyphen_values = true, conflicts_with = "sweep")]
    pub size: Option<u64>,
    /// Sweep sizes from --from to --to (powers of two and midpoints) to show each cache level.
    #[arg(long)]
    pub sweep: bool,
    #[arg(long, value_parser = parse_bytes, default_value = "16KiB", requires = "sweep")]
    pub from: u64,
    #[arg(long, value_parser = parse_bytes, default_value = "1GiB", requires = "sweep")]
    pub to: u64,
    /// With --sweep: also run the prefetch self-check on the largest size (when it is beyond
    /// the caches), as a single size does.
    #[arg(long, requires = "sweep")]
    pub prefetch_check: bool,
    /// Every (CPU node, memory node) pair, as a node×node table.
    #[arg(long, conflicts_with = "sweep")]
    pub matrix: bool,
    /// Page size: 4k (THP kept out), thp, 2m or 1g; larger pages remove page-walk cost.
    #[arg(long, default_value = "4k", value_parser = parse_page)]
    pub page: PageSize,
    /// Bytes between chased slots (a multiple of 8; 64 = one per cache line; wider slots keep
    /// their pointer in a cache line picked at random within the slot, so every cache set is used).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(8..=1 << 20))]
    pub stride: u64,
    /// TLB-locality window in pages: the chase stays within a random group of this many pages
    /// before moving on; 0 = fully random over the whole buffer (every load may miss the TLB).
    #[arg(long, default_value_t = 64)]
    pub tlb_group: u64,
    /// Sampling time per figure, in milliseconds.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub duration_ms: u64,
    #[command(flatten)]
    pub placement: PlacementArgs,
}

/// `platscope mem latency`.
#[derive(Debug)]
pub struct Latency;

/// One size, with the prefetch self-check when the buffer is beyond the caches.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OneLatency {
    pub point: LatencyPoint,
    pub prefetch_check: Option<PrefetchCheck>,
}

/// A sweep's points, smallest first (stored as the list of points; with the prefetch
/// self-check, as `{points, prefetch_check}`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "StoredSweep", into = "StoredSweep")]
pub struct LatencySweep {
    pub points: Vec<LatencyPoint>,
    /// `--prefetch-check`: the check on the largest size.
    pub prefetch_check: Option<PrefetchCheck>,
    /// Ctrl-C ended the sweep early.
    #[serde(skip)]
    pub interrupted: bool,
    /// The caches each row says the size fits in (not stored: the run's topology has them).
    #[serde(skip)]
    pub caches: Vec<Cache>,
}

/// How a sweep is stored: the bare list of points, as every sweep was before the prefetch
/// check could be asked for, or the points with the check.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum StoredSweep {
    Points(Vec<LatencyPoint>),
    Checked { points: Vec<LatencyPoint>, prefetch_check: Option<PrefetchCheck> },
}

impl From<StoredSweep> for LatencySweep {
    fn from(stored: StoredSweep) -> Self {
        let (points, prefetch_check) = match stored {
            StoredSweep::Points(points) => (points, None),
            StoredSweep::Checked { points, prefetch_check } => (points, prefetch_check),
        };
        Self { points, prefetch_check, interrupted: false, caches: Vec::new() }
    }
}

impl From<LatencySweep> for StoredSweep {
    fn from(sweep: LatencySweep) -> Self {
        match sweep.prefetch_check {
            None => StoredSweep::Points(sweep.points),
            Some(check) => {
                StoredSweep::Checked { points: sweep.points, prefetch_check: Some(check) }
            }
        }
    }
}

/// A node×node matrix (stored as the matrix).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LatencyMatrixRun {
    pub matrix: LatencyMatrix,
    /// The firmware's distances, for the text's SLIT ratios (not stored: the topology has them).
    #[serde(skip)]
    pub distances: Option<Distances>,
}

/// What `mem latency` measured; stored as `mem latency`, `mem latency --sweep` or
/// `mem latency --matrix`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LatencyOutcome {
    One(OneLatency),
    Sweep(LatencySweep),
    Matrix(LatencyMatrixRun),
}

/// The report's latency steps as earlier versions stored them (read back, never written).
const LEGACY_SWEEP: &str = "report: latency by size";
const LEGACY_MATRIX: &str = "report: latency matrix";

fn usage(message: impl Into<String>) -> Classified {
    BenchError::Usage(message.into()).into()
}

impl Experiment for Latency {
    const PATH: &'static [&'static str] = &["mem", "latency"];
    const ABOUT: &'static str = "Idle load-to-use latency by pointer chasing: one size, a size \
                                 sweep, or a node×node matrix";
    const TINY: &'static [&'static str] =
        &["--sweep", "--from", "16KiB", "--to", "64KiB", "--duration-ms", "10"];
    type Args = LatencyArgs;
    type Outcome = LatencyOutcome;

    fn run(args: &LatencyArgs, ctx: &mut Context<'_>) -> Result<LatencyOutcome, Classified> {
        let topology = ctx.topology;
        if !args.stride.is_multiple_of(8) {
            return Err(usage(format!("--stride {} is not a multiple of 8", args.stride)));
        }
        let request = PlacementRequest::resolve(&args.placement, topology)?;
        let group_bytes = match args.tlb_group {
            0 => usize::MAX,
            pages => usize::try_from(pages.saturating_mul(4096)).unwrap_or(usize::MAX),
        };
        let opts = LatencyOptions {
            layout: ChaseLayout {
                stride: args.stride as usize,
                group_bytes,
                ..ChaseLayout::default()
            },
            page: args.page,
            policy: request.policy.clone(),
            duration: Duration::from_millis(args.duration_ms),
            ..LatencyOptions::default()
        };
        // The chase runs on one CPU: the first requested, else the one we are on now.
        let cpu = request.allowed_cpus(topology)?.first().copied().or_else(pin::current_cpu);
        let size = args.size.unwrap_or_else(|| latency::default_dram_bytes(topology));
        if args.matrix {
            let matrix = latency::matrix(size, &opts, topology)?;
            let distances = topology.distances.clone();
            return Ok(LatencyOutcome::Matrix(LatencyMatrixRun { matrix, distances }));
        }
        if args.sweep {
            return sweep(args, cpu, &opts, ctx).map(LatencyOutcome::Sweep);
        }
        let point = latency::measure_on(cpu, size, &opts, topology)?;
        // Chasing in address order is only clearly faster once the buffer is beyond the caches.
        let prefetch_check =
            if point.bytes > 2 * topology.last_level_cache_bytes() && !ctx.stopped() {
                Some(latency::prefetch_check(cpu, &point, &opts, topology)?)
            } else {
                None
            };
        Ok(LatencyOutcome::One(OneLatency { point, prefetch_check }))
    }
}

/// `--sweep`: every size in turn, each row printed as it is measured.
fn sweep(
    args: &LatencyArgs,
    cpu: Option<u32>,
    opts: &LatencyOptions,
    ctx: &mut Context<'_>,
) -> Result<LatencySweep, Classified> {
    if args.from > args.to {
        return Err(usage("--from must not be larger than --to"));
    }
    let topology = ctx.topology;
    let caches = topology.caches.clone();
    ctx.live(&render::sweep_header())?;
    let sizes = latency::sweep_sizes(args.from, args.to);
    // On a terminal, a bar on stderr counts the sizes; rows are printed around it.
    let bar = ctx.progress(sizes.len() as u64, "working-set sizes");
    let swept = scenarios::latency_sweep(cpu, &sizes, opts, topology, |point| {
        bar.suspend(|| ctx.live(&render::sweep_row(point, &caches)))?;
        bar.inc(1);
        Ok::<(), Classified>(())
    })?;
    bar.finish_and_clear();
    ctx.live(render::cycles_note(&swept.done))?;
    if let Some((_, e)) = swept.failed {
        return Err(e.into());
    }
    let interrupted = ctx.stopped();
    if interrupted {
        ctx.live("interrupted: the sizes above were measured\n")?;
    }
    // Chasing in address order is only clearly faster once the buffer is beyond the caches.
    let largest = swept.done.last().filter(|p| p.bytes > 2 * topology.last_level_cache_bytes());
    let prefetch_check = match largest {
        Some(point) if args.prefetch_check && !interrupted => {
            let check = latency::prefetch_check(cpu, point, opts, topology)?;
            ctx.live(&render::prefetch_line(&check))?;
            ctx.live("\n")?;
            Some(check)
        }
        _ => None,
    };
    Ok(LatencySweep { points: swept.done, prefetch_check, interrupted, caches })
}

impl ToMetrics for LatencyOutcome {
    fn to_metrics(&self) -> Vec<Metric> {
        match self {
            LatencyOutcome::One(one) => one.point.to_metrics(),
            LatencyOutcome::Sweep(sweep) => sweep.points.to_metrics(),
            LatencyOutcome::Matrix(run) => run.matrix.to_metrics(),
        }
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        match self {
            LatencyOutcome::One(one) => one.point.placements(),
            LatencyOutcome::Sweep(sweep) => sweep.points.placements(),
            LatencyOutcome::Matrix(run) => run.matrix.placements(),
        }
    }
}

impl Outcome for LatencyOutcome {
    /// The last two are read only: the steps of reports stored by earlier versions.
    const KINDS: &'static [&'static str] = &[
        "mem latency",
        "mem latency --sweep",
        "mem latency --matrix",
        LEGACY_SWEEP,
        LEGACY_MATRIX,
    ];

    fn kind(&self) -> &'static str {
        match self {
            LatencyOutcome::One(_) => Self::KINDS[0],
            LatencyOutcome::Sweep(_) => Self::KINDS[1],
            LatencyOutcome::Matrix(_) => Self::KINDS[2],
        }
    }

    fn interrupted(&self) -> bool {
        matches!(self, LatencyOutcome::Sweep(s) if s.interrupted)
    }

    fn worth_storing(&self) -> bool {
        !matches!(self, LatencyOutcome::Sweep(s) if s.points.is_empty())
    }

    fn text(&self) -> String {
        match self {
            LatencyOutcome::One(one) => {
                let mut text = render::latency_line(&one.point);
                text.push('\n');
                match &one.prefetch_check {
                    Some(c) => text.push_str(&render::prefetch_line(c)),
                    None => text.push_str("prefetch check skipped: the buffer fits in the caches"),
                }
                text.push('\n');
                text
            }
            LatencyOutcome::Sweep(sweep) => {
                let mut text = render::sweep_header();
                for point in &sweep.points {
                    text.push_str(&render::sweep_row(point, &sweep.caches));
                }
                text.push_str(render::cycles_note(&sweep.points));
                if sweep.interrupted {
                    text.push_str("interrupted: the sizes above were measured\n");
                }
                if let Some(check) = &sweep.prefetch_check {
                    text.push_str(&render::prefetch_line(check));
                    text.push('\n');
                }
                text
            }
            LatencyOutcome::Matrix(run) => {
                render::latency_matrix(&run.matrix, run.distances.as_ref())
            }
        }
    }

    fn parts(&self, topology: &Topology) -> Vec<Part> {
        vec![match self {
            LatencyOutcome::One(one) => LATENCY_SIZE.part(latency_size(
                std::slice::from_ref(&one.point),
                None,
                one.prefetch_check.as_ref(),
                topology,
            )),
            LatencyOutcome::Sweep(sweep) => {
                let cpu = sweep.points.first().and_then(|p| p.cpu);
                let check = sweep.prefetch_check.as_ref();
                let mut part = LATENCY_SIZE.part(latency_size(&sweep.points, cpu, check, topology));
                part.headlines = headlines::latency_sweep(&sweep.points, check, topology);
                part
            }
            LatencyOutcome::Matrix(run) => {
                let mut part = LATENCY_MATRIX.part(latency_matrix(&run.matrix, topology));
                part.headlines = headlines::latency_matrix(&run.matrix);
                part
            }
        }]
    }

    fn from_stored(kind: &str, result: serde_json::Value) -> Result<Self, serde_json::Error> {
        Ok(match kind {
            "mem latency --sweep" | LEGACY_SWEEP => {
                LatencyOutcome::Sweep(serde_json::from_value(result)?)
            }
            "mem latency --matrix" | LEGACY_MATRIX => {
                LatencyOutcome::Matrix(serde_json::from_value(result)?)
            }
            _ => LatencyOutcome::One(serde_json::from_value(result)?),
        })
    }
}
