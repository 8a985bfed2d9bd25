//! `platscope report`: the machine's characterisation, step by step. Each step's budget (sizes,
//! durations, delays) depends on the mode; each finished step is recorded at once, so an
//! interruption or a later failure loses nothing already measured.

use std::time::Duration;

use experiment::Globals;
use measure::metric::Step;
use measure::progress::{hidden, Steps};
use measure::stop;
use membench::bandwidth::{self, BandwidthOptions, ThreadSpec};
use membench::c2c::{self, C2cMode, C2cOptions};
use membench::kernels::bandwidth::{Isa, Kernel};
use membench::latency::{self, LatencyOptions};
use membench::loaded::{self, LoadMix, LoadedOptions};
use membench::scenarios::{self, scale_counts, shared_scenarios, NotRun, SlbWork};
use membench::slb_shared::{self, LockKind, SharedSlbPlan};
use place::{MemPolicy, PageSize, PlacementRequest};
use report::html::{Note, ReportData, Section as PageSection};
use results::Recorder;
use topo::Topology;

use crate::sections::{self, Section};
use crate::SuiteError;

/// The command name the whole report's data is recorded under (see [`crate::from_db`]).
pub const REPORT_COMMAND: &str = "report";

/// How thorough the report is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// About two minutes on a small machine.
    Quick,
    /// Longer and more precise: sweep to 1 GiB, more samples per figure.
    Full,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Quick => "quick",
            Mode::Full => "full",
        }
    }
}

/// How long and how large each step is, by mode.
#[derive(Debug, Clone)]
pub struct Budget {
    pub sweep_to: u64,
    pub sweep: Duration,
    pub matrix_bytes: u64,
    pub matrix: Duration,
    pub bandwidth: Duration,
    pub bandwidth_rounds: u32,
    pub loaded_delays: Vec<u64>,
    pub loaded: Duration,
    pub slb_pages: u64,
    pub slb_loops: u64,
    /// Sampling time per CPU pair of the core-to-core step.
    pub c2c_pair: Duration,
}

impl Budget {
    pub fn new(mode: Mode, topology: &Topology) -> Self {
        let dram = latency::default_dram_bytes(topology);
        match mode {
            Mode::Full => Budget {
                sweep_to: 1 << 30,
                sweep: Duration::from_millis(300),
                matrix_bytes: dram.max(1 << 30),
                matrix: Duration::from_millis(500),
                bandwidth: Duration::from_millis(2000),
                bandwidth_rounds: bandwidth::DEFAULT_ROUNDS,
                loaded_delays: loaded::DEFAULT_DELAYS.to_vec(),
                loaded: Duration::from_millis(500),
                slb_pages: 262_144,
                slb_loops: 100,
                c2c_pair: Duration::from_millis(500),
            },
            Mode::Quick => Budget {
                sweep_to: dram,
                sweep: Duration::from_millis(100),
                matrix_bytes: dram,
                matrix: Duration::from_millis(150),
                bandwidth: Duration::from_millis(500),
                bandwidth_rounds: bandwidth::DEFAULT_ROUNDS,
                loaded_delays: vec![0, 200, 800, 3200, 12800, 51200],
                loaded: Duration::from_millis(150),
                slb_pages: 65_536,
                slb_loops: 60,
                c2c_pair: Duration::from_millis(150),
            },
        }
    }
}

/// Runs every step of the chosen `sections` and returns the page's data.
pub fn run(
    mode: Mode,
    sections: &[Section],
    topology: &Topology,
    rec: &mut Recorder,
    globals: &Globals,
) -> Result<ReportData, SuiteError> {
    let version = globals.version;
    let memory = sections.contains(&Section::Memory);
    let budget = Budget::new(mode, topology);
    let cpus =
        PlacementRequest { cpus: None, policy: MemPolicy::Inherit }.allowed_cpus(topology)?;
    let first_cpu = cpus.first().copied();
    let nodes = topology.nodes_with_memory().len() as f64;
    let cpu_nodes = topology.nodes.iter().filter(|n| !n.cpus.is_empty()).count() as f64;
    let n = cpus.len() as f64;
    let factor = if mode == Mode::Full { 3.0 } else { 1.0 };
    let memory_weights = vec![
        ("latency by working-set size", 12.0 * factor),
        ("prefetch self-check", 2.0 * factor),
        ("node×node latency", 1.5 * nodes * cpu_nodes * factor),
        ("node×node bandwidth", 1.5 * nodes * cpu_nodes * factor),
        ("bandwidth by thread count", 1.5 * n * factor),
        ("copy bandwidth, ordinary and non-temporal stores", 2.0 * factor),
        ("loaded latency", (budget.loaded_delays.len() as f64 + 1.0) * 0.5 * factor),
        ("SLB by worker count", 2.0 * n * factor),
        ("SLB under local, interleaved and remote memory", 6.0 * factor),
    ];
    // The memory steps keep their indices (0..9) when memory is chosen; every other step is
    // begun by name.
    let mut steps = if memory { memory_weights } else { Vec::new() };
    for section in sections {
        steps.extend(section.steps(mode, cpus.len()));
    }
    let progress = Steps::new(&steps);

    let mut data = ReportData::new(mode.name(), version, topology.clone(), rec.database());
    data.sweep_cpu = first_cpu;
    if memory {
        // Measure the core clock first: it also wakes the core from any idle state before the
        // smallest (cache-resident) sizes, which would otherwise absorb the ramp-up.
        measure::core_clock::core_ghz();
        memory_steps(&budget, &cpus, topology, rec, &progress, &mut data)?;
    }
    if sections.contains(&Section::Contention) {
        contention(&budget, &cpus, topology, rec, &progress, &mut data)?;
    }
    let mut run = sections::Run {
        mode,
        topology,
        globals,
        rec,
        progress: &progress,
        data: &mut data,
        cpus: cpus.len(),
    };
    for &section in sections {
        run.section(section);
    }
    progress.finish();
    if stop::requested() {
        data.notes.push(Note::new(
            PageSection::Run,
            format!(
                "interrupted with {}: the sections after the interruption were not measured",
                stop::cause()
            ),
        ));
    }
    // The page's own data is recorded by the caller (`commands::report`), after anything it
    // adds (a comparison with a baseline), so `report --from-db` rebuilds all of it.
    Ok(data)
}

/// The memory steps (1–9): latency by size and the prefetch check, node×node latency and
/// bandwidth, bandwidth by threads, copy, loaded latency, the SLB by workers and by placement;
/// each recorded as it finishes, a failing one noted on the page.
fn memory_steps(
    budget: &Budget,
    cpus: &[u32],
    topology: &Topology,
    rec: &mut Recorder,
    progress: &Steps,
    data: &mut ReportData,
) -> Result<(), SuiteError> {
    let first_cpu = cpus.first().copied();
    let note =
        |data: &mut ReportData, section: PageSection, step: &str, err: &dyn std::fmt::Display| {
            data.notes.push(Note::new(section, format!("{step}: not measured ({err})")));
        };
    let latency_opts = LatencyOptions { duration: budget.sweep, ..LatencyOptions::default() };
    // 1. Latency by size.
    progress.begin(0);
    let sizes = latency::sweep_sizes(16 << 10, budget.sweep_to);
    let swept = scenarios::latency_sweep(first_cpu, &sizes, &latency_opts, topology, |_| {
        Ok::<(), SuiteError>(())
    })?;
    data.latency_sweep = swept.done;
    if let Some((bytes, e)) = swept.failed {
        note(data, PageSection::LatencySize, &format!("latency at {bytes} bytes"), &e);
    }
    if !data.latency_sweep.is_empty() {
        let sweep = &data.latency_sweep;
        if let Some(id) = rec.record("report: latency by size", sweep, sweep, stop::requested())? {
            data.stored_runs.push(("latency by size".into(), id));
        }
    }

    // 2. Prefetch self-check on the largest size.
    if !stop::requested() {
        progress.begin(1);
        if let Some(last) = data.latency_sweep.last() {
            match latency::prefetch_check(first_cpu, last, &latency_opts, topology) {
                Ok(c) => data.prefetch_check = Some(c),
                Err(e) => note(data, PageSection::LatencySize, "prefetch self-check", &e),
            }
        }
    }

    // 3. Node×node latency.
    if !stop::requested() {
        progress.begin(2);
        let opts = LatencyOptions { duration: budget.matrix, ..LatencyOptions::default() };
        match latency::matrix(budget.matrix_bytes, &opts, topology) {
            Ok(m) => {
                if let Some(id) = rec.record("report: latency matrix", &m, &m, false)? {
                    data.stored_runs.push(("node×node latency".into(), id));
                }
                data.latency_matrix = Some(m);
            }
            Err(e) => note(data, PageSection::LatencyMatrix, "node×node latency", &e),
        }
    }

    let bw_opts = |threads: usize| BandwidthOptions {
        kernel: Kernel::Read,
        isa: None,
        walk: None,
        bytes_per_thread: bandwidth::default_bytes_per_thread(topology, threads),
        page: PageSize::Base,
        duration: budget.bandwidth,
        rounds: budget.bandwidth_rounds,
    };

    // 4. Node×node bandwidth, all of a node's CPUs reading.
    if !stop::requested() {
        progress.begin(3);
        let per_node = topology.nodes.iter().map(|n| n.cpus.len()).max().unwrap_or(1);
        match bandwidth::matrix(per_node, &bw_opts(per_node), topology, &hidden()) {
            Ok(m) => {
                let interrupted = m.interrupted;
                if let Some(id) = rec.record("report: bandwidth matrix", &m, &m, interrupted)? {
                    data.stored_runs.push(("node×node bandwidth".into(), id));
                }
                data.bandwidth_matrix = Some(m);
            }
            Err(e) => note(data, PageSection::BandwidthMatrix, "node×node bandwidth", &e),
        }
    }

    // 5. Bandwidth by thread count.
    if !stop::requested() {
        progress.begin(4);
        match bandwidth::scale(cpus, &MemPolicy::Inherit, &bw_opts(cpus.len()), topology, &hidden())
        {
            Ok(s) => {
                if let Some(id) =
                    rec.record("report: bandwidth scaling", &s, &s, stop::requested())?
                {
                    data.stored_runs.push(("bandwidth by threads".into(), id));
                }
                data.bandwidth_scaling = Some(s);
            }
            Err(e) => note(data, PageSection::BandwidthThreads, "bandwidth by thread count", &e),
        }
    }

    // 6. Copy with ordinary and with non-temporal stores, every CPU: the headline copy figure
    // is the better of the two, as MLC and STREAM users read it.
    for kernel in [Kernel::Copy, Kernel::CopyNt] {
        if stop::requested() {
            break;
        }
        progress.begin(5);
        let threads: Vec<ThreadSpec> = cpus
            .iter()
            .map(|&cpu| ThreadSpec { cpu: Some(cpu), policy: MemPolicy::Inherit })
            .collect();
        let opts = BandwidthOptions { kernel, ..bw_opts(cpus.len()) };
        match bandwidth::run(&threads, &opts, topology) {
            Ok(r) => data.copy_bandwidth.push(r),
            Err(e) => note(data, PageSection::BandwidthThreads, kernel.info().name, &e),
        }
    }
    if !data.copy_bandwidth.is_empty() {
        let interrupted = data.copy_bandwidth.iter().any(|r| r.interrupted);
        let runs = &data.copy_bandwidth;
        if let Some(id) = rec.record("report: copy bandwidth", runs, runs, interrupted)? {
            data.stored_runs.push(("copy bandwidth".into(), id));
        }
    }

    // 7. Loaded latency.
    if !stop::requested() {
        progress.begin(6);
        match first_cpu {
            Some(chase_cpu) if cpus.len() >= 2 => {
                let load_cpus: Vec<u32> =
                    cpus.iter().copied().filter(|&c| c != chase_cpu).collect();
                let opts = LoadedOptions {
                    chase: LatencyOptions::default(),
                    chase_bytes: budget.matrix_bytes,
                    mix: LoadMix::Reads,
                    isa: Isa::best(),
                    load_bytes_per_thread: bandwidth::default_bytes_per_thread(
                        topology,
                        load_cpus.len(),
                    ),
                    load_policy: MemPolicy::Inherit,
                    delays: budget.loaded_delays.clone(),
                    point_duration: budget.loaded,
                };
                match loaded::run(chase_cpu, &load_cpus, &opts, topology, &hidden()) {
                    Ok(c) => {
                        if let Some(id) =
                            rec.record("report: loaded latency", &c, &c, c.interrupted)?
                        {
                            data.stored_runs.push(("loaded latency".into(), id));
                        }
                        data.loaded_latency = Some(c);
                    }
                    Err(e) => note(data, PageSection::LoadedLatency, "loaded latency", &e),
                }
            }
            _ => data.notes.push(Note::new(
                PageSection::LoadedLatency,
                "loaded latency: not measured (needs at least two CPUs: one chases, the others \
                 load)",
            )),
        }
    }

    // 8. SLB by worker count.
    let work = SlbWork { pages: budget.slb_pages, loops: budget.slb_loops, page: PageSize::Base };
    if !stop::requested() {
        progress.begin(7);
        let counts = scale_counts(cpus.len());
        let scaled =
            scenarios::slb_scale(&work, &counts, cpus, &MemPolicy::Inherit, topology, |_| {
                Ok::<(), SuiteError>(())
            })?;
        data.slb_scaling = scaled.done;
        if let Some((count, e)) = scaled.failed {
            note(data, PageSection::Slb, &format!("SLB with {count} workers"), &e);
        }
        let steps: Vec<Step<'_, _>> =
            data.slb_scaling.iter().map(|r| Step::new("workers", r.workers.len(), r)).collect();
        if !steps.is_empty() {
            let scaling = &data.slb_scaling;
            if let Some(id) =
                rec.record("report: SLB scaling", scaling, &steps, stop::requested())?
            {
                data.stored_runs.push(("SLB by workers".into(), id));
            }
        }
    }

    // 9. SLB under each placement policy, one worker per CPU.
    if !stop::requested() {
        progress.begin(8);
        scenarios::slb_policies(&work, cpus.len() as u64, topology, |name, outcome| {
            let outcome = outcome.map_err(|why| match why {
                NotRun::Skipped(why) => why.to_string(),
                NotRun::Failed(e) => e.to_string(),
            });
            data.slb_policies.push((name.to_string(), outcome));
            Ok::<bool, SuiteError>(true)
        })?;
        let steps: Vec<Step<'_, _>> = data
            .slb_policies
            .iter()
            .filter_map(|(name, outcome)| {
                outcome.as_ref().ok().map(|r| Step::new("policy", name, r))
            })
            .collect();
        if !steps.is_empty() {
            let policies = &data.slb_policies;
            if let Some(id) =
                rec.record("report: SLB placement", policies, &steps, stop::requested())?
            {
                data.stored_runs.push(("SLB by placement".into(), id));
            }
        }
    }
    Ok(())
}

/// Shared-SLB work per worker in the lock contention step: 4096 pages × 50 loops.
const CONTENTION_PAGES: u64 = 4096;
const CONTENTION_LOOPS: u64 = 50;

/// The contention steps: core to core (every CPU pair) and lock contention (the
/// shared-memory SLB with each lock at 1, 2, 4 … workers).
fn contention(
    budget: &Budget,
    cpus: &[u32],
    topology: &Topology,
    rec: &mut Recorder,
    progress: &Steps,
    data: &mut ReportData,
) -> Result<(), SuiteError> {
    // 11. Core to core.
    if !stop::requested() {
        progress.begin_named(sections::C2C);
        let options = C2cOptions {
            cpus: cpus.to_vec(),
            mode: C2cMode::Read,
            line_on: None,
            duration: budget.c2c_pair,
            lines: c2c::DEFAULT_LINES,
        };
        match c2c::run(&options, topology, |_, _| {}) {
            Ok(r) => {
                if let Some(id) = rec.record("report: core to core", &r, &r, r.interrupted)? {
                    data.stored_runs.push(("core to core".into(), id));
                }
                data.c2c = Some(r);
            }
            Err(e) => data
                .notes
                .push(Note::new(PageSection::C2c, format!("core to core: not measured ({e})"))),
        }
    }
    // 12. Lock contention.
    if !stop::requested() {
        progress.begin_named(sections::LOCKS);
        'locks: for lock in [LockKind::Spin, LockKind::Ticket, LockKind::Mutex, LockKind::None] {
            for count in scale_counts(cpus.len()) {
                let plan = SharedSlbPlan {
                    pages: CONTENTION_PAGES,
                    loops: CONTENTION_LOOPS,
                    counters: 1,
                    lock,
                    cpus: cpus.iter().take(count as usize).map(|&c| Some(c)).collect(),
                    policy: MemPolicy::Inherit,
                    seed: 0x51B,
                };
                match slb_shared::run(&plan, cpus.len(), topology) {
                    Ok(r) => data.contention.push(r),
                    Err(e) => {
                        data.notes.push(Note::new(
                            PageSection::Contention,
                            format!(
                                "lock contention ({} lock, {count} workers): not measured ({e})",
                                lock.name()
                            ),
                        ));
                        break 'locks;
                    }
                }
                if stop::requested() {
                    break 'locks;
                }
            }
        }
        // The seed's placement scenarios with the spinlock, one worker per CPU.
        let no_remote = "skipped: one node, so no remote or interleaved placement and no \
                         other node to spread the workers over";
        for (name, scenario) in shared_scenarios(cpus.len(), topology) {
            if stop::requested() {
                break;
            }
            let outcome = match scenario {
                Some((workers, policy)) => {
                    let plan = SharedSlbPlan {
                        pages: CONTENTION_PAGES,
                        loops: CONTENTION_LOOPS,
                        counters: 1,
                        lock: LockKind::Spin,
                        cpus: workers,
                        policy,
                        seed: 0x51B,
                    };
                    slb_shared::run(&plan, cpus.len(), topology).map_err(|e| e.to_string())
                }
                None => Err(no_remote.to_string()),
            };
            data.lock_placement.push((name.to_string(), outcome));
        }
        let placed: Vec<Step<'_, _>> = data
            .lock_placement
            .iter()
            .filter_map(|(name, r)| r.as_ref().ok().map(|r| Step::new("scenario", name, r)))
            .collect();
        if !placed.is_empty() {
            let runs = &data.lock_placement;
            if let Some(id) =
                rec.record("report: lock placement", runs, &placed, stop::requested())?
            {
                data.stored_runs.push(("lock placement".into(), id));
            }
        }
        let steps: Vec<Step<'_, _>> = data
            .contention
            .iter()
            .map(|r| Step::new("run", format!("{} x{}", r.plan.lock.name(), r.workers.len()), r))
            .collect();
        if !steps.is_empty() {
            let runs = &data.contention;
            if let Some(id) =
                rec.record("report: lock contention", runs, &steps, stop::requested())?
            {
                data.stored_runs.push(("lock contention".into(), id));
            }
        }
    }
    Ok(())
}
