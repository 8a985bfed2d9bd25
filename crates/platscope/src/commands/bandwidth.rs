//! `platscope mem bandwidth`, `platscope mem loaded-latency` and the `thread_read` compat tool.

use std::ffi::OsString;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser};
use measure::{progress, stop};
use membench::bandwidth::{self, BandwidthOptions, ThreadSpec};
use membench::kernels::bandwidth::{Isa, Kernel};
use membench::latency::LatencyOptions;
use membench::loaded::{self, LoadMix, LoadedOptions};
use membench::{thread_read, BenchError};
use place::{lists, MemPolicy, PageSize, PlacementRequest};
use topo::Topology;

use crate::cli::{parse_count, parse_page, parse_size, PlacementOptions};
use crate::output::{emit, emit_json};
use measure::UsageError;
use membench::render::bandwidth as render;
use results::Recorder;

#[derive(Debug, Args)]
pub struct BandwidthArgs {
    /// Kernel: read, read-line, write, write-nt, copy, copy-nt, triad, triad-nt (-nt: non-temporal
    /// stores, no write-allocate reads; glibc memcpy uses them for large copies).
    #[arg(long, default_value = "read", value_parser = Kernel::parse)]
    pub kernel: Kernel,
    /// Vector instruction set (default: the widest this CPU has): avx512, avx2, sse2, neon, scalar.
    #[arg(long, value_parser = |s: &str| s.parse::<Isa>())]
    pub isa: Option<Isa>,
    /// Threads, pinned one per CPU over the allowed CPUs (default: all of them).
    #[arg(long, value_parser = parse_count, allow_hyphen_values = true)]
    pub threads: Option<u64>,
    /// Size of each thread's buffer(s) (default: together 4× the last-level cache, ≥ 32 MiB each).
    #[arg(long, value_parser = parse_size, allow_hyphen_values = true)]
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
    pub placement: PlacementOptions,
}

#[derive(Debug, Args)]
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
    #[arg(long, value_parser = |s: &str| s.parse::<Isa>())]
    pub isa: Option<Isa>,
    /// Sampling time per point, in milliseconds.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub duration_ms: u64,
    #[command(flatten)]
    pub placement: PlacementOptions,
}

/// The peak to compare with: `--peak-gbs`, else SMBIOS memory devices, else unknown.
fn peak(given: Option<f64>) -> Option<f64> {
    given.or_else(|| topo::smbios::peak_gbs(&topo::smbios::read_memory_devices()))
}

pub fn run_bandwidth(
    args: &BandwidthArgs,
    json: bool,
    topology: &Topology,
    rec: &mut Recorder,
) -> anyhow::Result<()> {
    let request = PlacementRequest::resolve(&args.placement.to_args(), topology)?;
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
        return Err(BenchError::Usage(format!("--peak-gbs {p} must be a positive number")).into());
    }
    let opts = BandwidthOptions {
        kernel: args.kernel,
        isa: args.isa.unwrap_or_else(Isa::best),
        bytes_per_thread: args
            .size
            .unwrap_or_else(|| bandwidth::default_bytes_per_thread(topology, threads)),
        page: args.page,
        duration: Duration::from_millis(args.duration_ms),
        rounds: bandwidth::DEFAULT_ROUNDS,
    };
    let peak = peak(args.peak_gbs);
    if args.matrix {
        let bar = progress::counter(0, "node pairs");
        let m = bandwidth::matrix(threads, &opts, topology, &bar);
        bar.finish_and_clear();
        let m = m?;
        if json {
            emit_json(&m)?;
        } else {
            emit(&render::bandwidth_matrix(&m))?;
            if m.interrupted {
                emit("interrupted: only the cells above were measured\n")?;
            }
        }
        rec.record("mem bandwidth --matrix", &m, &m, m.interrupted)?;
        return Ok(());
    }
    if args.scale {
        let bar = progress::counter(0, "thread counts");
        let s = bandwidth::scale(&cpus[..threads], &request.policy, &opts, topology, &bar);
        bar.finish_and_clear();
        let s = s?;
        if json {
            emit_json(&s)?;
        } else {
            emit(&render::bandwidth_scaling(&s, peak))?;
        }
        rec.record("mem bandwidth --scale", &s, &s, stop::requested())?;
        return Ok(());
    }
    let specs: Vec<ThreadSpec> = cpus[..threads]
        .iter()
        .map(|&cpu| ThreadSpec { cpu: Some(cpu), policy: request.policy.clone() })
        .collect();
    let r = bandwidth::run(&specs, &opts, topology)?;
    if json {
        emit_json(&r)?;
    } else {
        let mut text = render::bandwidth_text(&r, peak);
        if peak.is_none() {
            text.push_str("  theoretical peak unknown: no SMBIOS memory devices readable here (pass --peak-gbs)\n");
        }
        emit(&text)?;
    }
    rec.record("mem bandwidth", &r, &r, r.interrupted)?;
    Ok(())
}

pub fn run_loaded(
    args: &LoadedLatencyArgs,
    json: bool,
    topology: &Topology,
    rec: &mut Recorder,
) -> anyhow::Result<()> {
    let request = PlacementRequest::resolve(&args.placement.to_args(), topology)?;
    let cpus = request.allowed_cpus(topology)?;
    let chase_cpu = match &args.chase_cpu {
        Some(text) => match lists::parse_cpus(text, topology)?.as_slice() {
            [cpu] => *cpu,
            _ => return Err(BenchError::Usage("--chase-cpu takes one CPU".into()).into()),
        },
        None => *cpus.first().context("no CPU allowed")?,
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
        chase_bytes: membench::latency::default_dram_bytes(topology),
        mix: args.mix,
        isa: args.isa.unwrap_or_else(Isa::best),
        load_bytes_per_thread: bandwidth::default_bytes_per_thread(topology, load_cpus.len()),
        load_policy,
        delays: args.delays.clone().unwrap_or_else(|| loaded::DEFAULT_DELAYS.to_vec()),
        point_duration: Duration::from_millis(args.duration_ms),
    };
    let bar = progress::counter(0, "load levels");
    let curve = loaded::run(chase_cpu, &load_cpus, &opts, topology, &bar);
    bar.finish_and_clear();
    let curve = curve?;
    if json {
        emit_json(&curve)?;
    } else {
        emit(&render::loaded_latency(&curve))?;
    }
    rec.record("mem loaded-latency", &curve, &curve, curve.interrupted)?;
    Ok(())
}

/// `thread_read TIMES FROM TO`, as seed 001's program.
#[derive(Debug, Parser)]
#[command(
    name = "thread_read",
    about = "Read 256 MiB first-touched by CPU FROM from CPU TO, TIMES passes"
)]
struct ThreadReadArgs {
    /// Passes over the 256 MiB buffer.
    #[arg(value_parser = parse_count, allow_hyphen_values = true)]
    times: u64,
    /// CPU that allocates and first-touches the buffer.
    from: String,
    /// CPU that reads it.
    to: String,
}

pub fn run_thread_read(args: &[OsString]) -> anyhow::Result<()> {
    let argv = std::iter::once(OsString::from("thread_read")).chain(args.iter().cloned());
    let args = match ThreadReadArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp) => {
            let _ = e.print();
            return Ok(());
        }
        Err(e) => {
            let text = e.render().to_string();
            let first =
                text.lines().next().unwrap_or("bad arguments").trim_start_matches("error: ");
            return Err(UsageError::Message(format!(
                "thread_read: {first}; usage: thread_read TIMES FROM TO"
            ))
            .into());
        }
    };
    let topology = Topology::detect().context("reading the topology")?;
    let one_cpu = |text: &str| -> anyhow::Result<u32> {
        match lists::parse_cpus(text, &topology)?.as_slice() {
            [cpu] => Ok(*cpu),
            _ => Err(UsageError::Message(format!("thread_read: {text:?} must be one CPU")).into()),
        }
    };
    let (from, to) = (one_cpu(&args.from)?, one_cpu(&args.to)?);
    stop::install();
    let result = thread_read::run(args.times, from, to, &topology, |address| {
        let _ = emit(&format!("The address of source data is {address:#x}\n"));
    })?;
    emit(&format!("{}\n", result.time_cost_line()))?;
    Ok(emit(&render::thread_read_summary(&result))?)
}
