//! `platscope report`: the main job. Runs the characterisation steps in order, records each in
//! the results database, writes a self-contained report.html and prints a short summary that
//! ends with the report's path. A failing step is noted and the others still run; Ctrl-C stops
//! measuring and writes what was measured.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use measure::stop;
use membench::bandwidth::{self, BandwidthOptions};
use membench::kernels::bandwidth::{Isa, Kernel};
use membench::latency::{self, LatencyOptions};
use membench::loaded::{self, LoadMix, LoadedOptions};
use membench::slb::{self, SlbPlan};
use membench::BenchError;
use place::{MemPolicy, PageSize, PlacementRequest};
use report::html::ReportData;
use topo::Topology;

use super::mem::{policy_scenarios, scale_counts, spread_workers, NO_REMOTE};
use super::record::{self, Recorder, StoreOptions};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Finish within about two minutes on a small machine (the default).
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,
    /// Longer and more precise: sweep to 1 GiB, more samples per figure.
    #[arg(long)]
    pub full: bool,
    /// Directory for report.html (created if missing).
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub out: PathBuf,
}

/// How long and how large each step is, by mode.
struct Budget {
    sweep_to: u64,
    sweep: Duration,
    matrix_bytes: u64,
    matrix: Duration,
    bandwidth: Duration,
    loaded_delays: Vec<u64>,
    loaded: Duration,
    slb_pages: u64,
    slb_loops: u64,
}

impl Budget {
    fn new(full: bool, topology: &Topology) -> Self {
        let dram = (4 * topology.last_level_cache_bytes()).max(256 << 20);
        if full {
            Budget {
                sweep_to: 1 << 30,
                sweep: Duration::from_millis(300),
                matrix_bytes: dram.max(1 << 30),
                matrix: Duration::from_millis(500),
                bandwidth: Duration::from_millis(2000),
                loaded_delays: loaded::DEFAULT_DELAYS.to_vec(),
                loaded: Duration::from_millis(500),
                slb_pages: 262_144,
                slb_loops: 100,
            }
        } else {
            Budget {
                sweep_to: dram,
                sweep: Duration::from_millis(100),
                matrix_bytes: dram,
                matrix: Duration::from_millis(150),
                bandwidth: Duration::from_millis(500),
                loaded_delays: vec![0, 200, 800, 3200, 12800, 51200],
                loaded: Duration::from_millis(150),
                slb_pages: 65_536,
                slb_loops: 60,
            }
        }
    }
}

/// Progress on stderr when it is a terminal: the step, elapsed time and an estimate of what is
/// left, scaled by how fast the steps so far went against their planned weights.
struct Progress {
    names: Vec<&'static str>,
    weights: Vec<f64>,
    done: usize,
    started: Instant,
    show: bool,
}

impl Progress {
    fn new(steps: &[(&'static str, f64)]) -> Self {
        Self {
            names: steps.iter().map(|s| s.0).collect(),
            weights: steps.iter().map(|s| s.1).collect(),
            done: 0,
            started: Instant::now(),
            show: std::io::stderr().is_terminal(),
        }
    }

    fn begin(&self, step: usize) {
        if !self.show {
            return;
        }
        let elapsed = self.started.elapsed().as_secs_f64();
        let done: f64 = self.weights[..step].iter().sum();
        let left: f64 = self.weights[step..].iter().sum();
        let eta = if done > 0.0 { left * elapsed / done } else { left };
        eprint!(
            "\r\x1b[K[{}/{}] {} … {:.0} s elapsed, about {:.0} s left",
            step + 1,
            self.names.len(),
            self.names[step],
            elapsed,
            eta
        );
        let _ = std::io::stderr().flush();
    }

    fn finish(&mut self) {
        self.done = self.names.len();
        if self.show {
            eprint!("\r\x1b[K");
        }
    }
}

/// Creates the output directory and proves it writable before anything is measured.
fn prepare_out(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create --out {}", dir.display()))?;
    let probe = dir.join(format!(".platscope-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("cannot write to --out {}", dir.display()))?;
    std::fs::remove_file(&probe).ok();
    Ok(dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()))
}

/// Writes the file next to its final name and renames it over, so a crash or a full disk never
/// leaves a half-written report.
fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = path.with_extension(format!("html.tmp-{}", std::process::id()));
    let result = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        std::fs::remove_file(&tmp).ok();
    }
    result.with_context(|| format!("writing {}", path.display()))
}

pub fn run(args: &ReportArgs, store: &StoreOptions) -> anyhow::Result<()> {
    let out_dir = prepare_out(&args.out)?;
    let topology = Topology::detect().context("reading the topology")?;
    stop::install();
    let mut rec = Recorder::open(store, &topology)?;
    let full = args.full;
    let budget = Budget::new(full, &topology);
    let cpus =
        PlacementRequest { cpus: None, policy: MemPolicy::Inherit }.allowed_cpus(&topology)?;
    let first_cpu = cpus.first().copied();
    let nodes = topology.nodes_with_memory().len() as f64;
    let cpu_nodes = topology.nodes.iter().filter(|n| !n.cpus.is_empty()).count() as f64;
    let n = cpus.len() as f64;
    let quick_factor = if full { 3.0 } else { 1.0 };
    let mut progress = Progress::new(&[
        ("latency by working-set size", 12.0 * quick_factor),
        ("prefetch self-check", 2.0 * quick_factor),
        ("node×node latency", 1.5 * nodes * cpu_nodes * quick_factor),
        ("node×node bandwidth", 1.5 * nodes * cpu_nodes * quick_factor),
        ("bandwidth by thread count", 1.5 * n * quick_factor),
        ("loaded latency", (budget.loaded_delays.len() as f64 + 1.0) * 0.5 * quick_factor),
        ("SLB by worker count", 2.0 * n * quick_factor),
        ("SLB under local, interleaved and remote memory", 6.0 * quick_factor),
    ]);

    let mut data = ReportData {
        mode: if full { "full".into() } else { "quick".into() },
        generated_at: utc_now(),
        version: crate::cli::VERSION.to_string(),
        topology: topology.clone(),
        latency_sweep: Vec::new(),
        sweep_cpu: first_cpu,
        prefetch_check: None,
        latency_matrix: None,
        bandwidth_matrix: None,
        bandwidth_scaling: None,
        loaded_latency: None,
        slb_scaling: Vec::new(),
        slb_policies: Vec::new(),
        stored_runs: Vec::new(),
        database: rec.database(),
        notes: Vec::new(),
    };
    let note = |data: &mut ReportData, step: &str, err: &dyn std::fmt::Display| {
        data.notes.push(format!("{step}: not measured ({err})"));
    };
    let latency_opts = LatencyOptions { duration: budget.sweep, ..LatencyOptions::default() };
    // Measure the core clock first: it also wakes the core from any idle state before the
    // smallest (cache-resident) sizes, which would otherwise absorb the ramp-up.
    measure::core_clock::core_ghz();

    // 1. Latency by size.
    progress.begin(0);
    for bytes in latency::sweep_sizes(16 << 10, budget.sweep_to) {
        match latency::measure_on(first_cpu, bytes, &latency_opts, &topology) {
            Ok(p) => data.latency_sweep.push(p),
            Err(BenchError::Interrupted) => break,
            Err(e) => {
                note(&mut data, &format!("latency at {bytes} bytes"), &e);
                break;
            }
        }
        if stop::requested() {
            break;
        }
    }
    if !data.latency_sweep.is_empty() {
        let (m, p) = record::latency_sweep(&data.latency_sweep);
        if let Some(id) =
            rec.record("report: latency by size", &data.latency_sweep, m, p, stop::requested())?
        {
            data.stored_runs.push(("latency by size".into(), id));
        }
    }

    // 2. Prefetch self-check on the largest size.
    if !stop::requested() {
        progress.begin(1);
        if let Some(last) = data.latency_sweep.last() {
            match latency::prefetch_check(first_cpu, last, &latency_opts, &topology) {
                Ok(c) => data.prefetch_check = Some(c),
                Err(e) => note(&mut data, "prefetch self-check", &e),
            }
        }
    }

    // 3. Node×node latency.
    if !stop::requested() {
        progress.begin(2);
        let opts = LatencyOptions { duration: budget.matrix, ..LatencyOptions::default() };
        match latency::matrix(budget.matrix_bytes, &opts, &topology) {
            Ok(m) => {
                let (metrics, placements) = record::latency_matrix(&m);
                if let Some(id) =
                    rec.record("report: latency matrix", &m, metrics, placements, false)?
                {
                    data.stored_runs.push(("node×node latency".into(), id));
                }
                data.latency_matrix = Some(m);
            }
            Err(e) => note(&mut data, "node×node latency", &e),
        }
    }

    let bw_opts = |threads: usize| BandwidthOptions {
        kernel: Kernel::Read,
        isa: Isa::best(),
        bytes_per_thread: bandwidth::default_bytes_per_thread(&topology, threads),
        page: PageSize::Base,
        duration: budget.bandwidth,
        rounds: 10,
    };

    // 4. Node×node bandwidth, all of a node's CPUs reading.
    if !stop::requested() {
        progress.begin(3);
        let per_node = topology.nodes.iter().map(|n| n.cpus.len()).max().unwrap_or(1);
        match bandwidth::matrix(per_node, &bw_opts(per_node), &topology) {
            Ok(m) => {
                let (metrics, placements) = record::bandwidth_matrix(&m);
                if let Some(id) =
                    rec.record("report: bandwidth matrix", &m, metrics, placements, false)?
                {
                    data.stored_runs.push(("node×node bandwidth".into(), id));
                }
                data.bandwidth_matrix = Some(m);
            }
            Err(e) => note(&mut data, "node×node bandwidth", &e),
        }
    }

    // 5. Bandwidth by thread count.
    if !stop::requested() {
        progress.begin(4);
        match bandwidth::scale(&cpus, &MemPolicy::Inherit, &bw_opts(cpus.len()), &topology) {
            Ok(s) => {
                let (metrics, placements) = record::bandwidth_scaling(&s);
                if let Some(id) = rec.record(
                    "report: bandwidth scaling",
                    &s,
                    metrics,
                    placements,
                    stop::requested(),
                )? {
                    data.stored_runs.push(("bandwidth by threads".into(), id));
                }
                data.bandwidth_scaling = Some(s);
            }
            Err(e) => note(&mut data, "bandwidth by thread count", &e),
        }
    }

    // 6. Loaded latency.
    if !stop::requested() {
        progress.begin(5);
        match first_cpu {
            Some(chase_cpu) if cpus.len() >= 2 => {
                let load_cpus: Vec<u32> = cpus.iter().copied().filter(|&c| c != chase_cpu).collect();
                let opts = LoadedOptions {
                    chase: LatencyOptions::default(),
                    chase_bytes: budget.matrix_bytes,
                    mix: LoadMix::Reads,
                    isa: Isa::best(),
                    load_bytes_per_thread: bandwidth::default_bytes_per_thread(&topology, load_cpus.len()),
                    load_policy: MemPolicy::Inherit,
                    delays: budget.loaded_delays.clone(),
                    point_duration: budget.loaded,
                };
                match loaded::run(chase_cpu, &load_cpus, &opts, &topology) {
                    Ok(c) => {
                        let (metrics, placements) = record::loaded(&c);
                        if let Some(id) = rec.record("report: loaded latency", &c, metrics, placements, c.interrupted)? {
                            data.stored_runs.push(("loaded latency".into(), id));
                        }
                        data.loaded_latency = Some(c);
                    }
                    Err(e) => note(&mut data, "loaded latency", &e),
                }
            }
            _ => data.notes.push("loaded latency: not measured (needs at least two CPUs: one chases, the others load)".into()),
        }
    }

    // 7. SLB by worker count.
    let slb_plan = |workers| SlbPlan {
        pages: budget.slb_pages,
        loops: budget.slb_loops,
        page: PageSize::Base,
        workers,
        seed: 0x51B,
    };
    if !stop::requested() {
        progress.begin(6);
        for count in scale_counts(cpus.len()) {
            match slb::run(&slb_plan(spread_workers(count, &cpus, &MemPolicy::Inherit)), &topology)
            {
                Ok(r) => data.slb_scaling.push(r),
                Err(e) => {
                    note(&mut data, &format!("SLB with {count} workers"), &e);
                    break;
                }
            }
            if stop::requested() {
                break;
            }
        }
        let (mut metrics, mut placements) = (Vec::new(), Vec::new());
        for r in &data.slb_scaling {
            let (m, p) = record::slb(r, &format!("{} workers: ", r.workers.len()));
            metrics.extend(m);
            placements.extend(p);
        }
        if !data.slb_scaling.is_empty() {
            if let Some(id) = rec.record(
                "report: SLB scaling",
                &data.slb_scaling,
                metrics,
                placements,
                stop::requested(),
            )? {
                data.stored_runs.push(("SLB by workers".into(), id));
            }
        }
    }

    // 8. SLB under each placement policy, one worker per CPU.
    if !stop::requested() {
        progress.begin(7);
        for (name, workers) in policy_scenarios(cpus.len() as u64, &topology)? {
            if stop::requested() {
                break;
            }
            let outcome = match workers {
                Some(w) => slb::run(&slb_plan(w), &topology).map_err(|e| e.to_string()),
                None => Err(NO_REMOTE.to_string()),
            };
            data.slb_policies.push((name.to_string(), outcome));
        }
        let (mut metrics, mut placements) = (Vec::new(), Vec::new());
        for (name, outcome) in &data.slb_policies {
            if let Ok(r) = outcome {
                let (m, p) = record::slb(r, &format!("{name}: "));
                metrics.extend(m);
                placements.extend(p);
            }
        }
        if !metrics.is_empty() {
            if let Some(id) = rec.record(
                "report: SLB placement",
                &data.slb_policies,
                metrics,
                placements,
                stop::requested(),
            )? {
                data.stored_runs.push(("SLB by placement".into(), id));
            }
        }
    }
    progress.finish();
    if stop::requested() {
        data.notes.push(
            "interrupted with Ctrl-C: the sections after the interruption were not measured".into(),
        );
    }

    let path = out_dir.join("report.html");
    write_atomically(&path, &report::html::render_html(&data))?;
    let mut summary = report::summary::summary_text(&data);
    summary.push_str(&format!("report: {}\n", path.display()));
    Ok(crate::output::emit(&summary)?)
}

/// The current time as RFC 3339 UTC, from the system clock (no time-zone database needed).
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
