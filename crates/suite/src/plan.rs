//! The report's steps: what `platscope report` runs, in page order, as a list ([`plan`]) —
//! each a registered experiment with its arguments as on its command line, its expected
//! seconds, and the page section it draws. Adding a section to the report is its experiment
//! and one line here.

use std::time::Duration;

use chart::{Area, Section};
use experiment::{run_step, Context, Experiment, Shown};
use measure::Classified;
use membench::chart as mem;
use membench::experiments::{bandwidth, c2c, latency, slb};
use topo::Topology;

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

/// How long and how large each memory and contention step is in one round of the report, by
/// mode (every step runs once a round: [`Rounds::report_rounds`]).
#[derive(Debug, Clone)]
pub struct Budget {
    pub sweep_to: u64,
    pub sweep: Duration,
    pub matrix_bytes: u64,
    pub matrix: Duration,
    pub bandwidth: Duration,
    pub loaded_delays: Vec<u64>,
    pub loaded: Duration,
    pub slb_pages: u64,
    pub slb_loops: u64,
    /// Sampling time per CPU pair of the core-to-core step.
    pub c2c_pair: Duration,
}

impl Budget {
    pub fn new(mode: Mode, topology: &Topology) -> Self {
        let dram = membench::latency::default_dram_bytes(topology);
        match mode {
            Mode::Full => Budget {
                sweep_to: 1 << 30,
                sweep: Duration::from_millis(150),
                matrix_bytes: dram.max(1 << 30),
                matrix: Duration::from_millis(250),
                bandwidth: Duration::from_millis(800),
                loaded_delays: membench::loaded::DEFAULT_DELAYS.to_vec(),
                loaded: Duration::from_millis(250),
                slb_pages: 262_144,
                slb_loops: 50,
                c2c_pair: Duration::from_millis(250),
            },
            Mode::Quick => Budget {
                sweep_to: dram,
                sweep: Duration::from_millis(60),
                matrix_bytes: dram,
                matrix: Duration::from_millis(100),
                bandwidth: Duration::from_millis(300),
                loaded_delays: vec![0, 200, 800, 3200, 12800, 51200],
                loaded: Duration::from_millis(100),
                slb_pages: 65_536,
                slb_loops: 40,
                c2c_pair: Duration::from_millis(100),
            },
        }
    }
}

/// How the report samples the figures a comparison tests, by mode. The report runs in
/// **rounds** ([`Rounds::report_rounds`]): round 1 of every step, then round 2 of every
/// repeated step, …, so each figure's rounds are spread through the run; each round's median is
/// one replicate of the figure (`measure::verdict`, [`Level::Rounds`]). Within a round the
/// compression and CPU-scaling steps repeat their work a few times from a fresh start (new
/// pipeline threads and buffers) and the allocator step runs each allocator as a process of
/// its own; the database runs once, its figures one sample per interval. How many report
/// rounds: Kalibera and Jones's rule of thumb — repeat at the level whose variance dominates —
/// here the rounds (a VM's clock and neighbours move between minutes, not between samples);
/// three is the fewest with an interval worth reading (a t-interval on 2 degrees of freedom a
/// side), five in the full report (docs/comparing.md).
///
/// [`Level::Rounds`]: measure::verdict::Level::Rounds
#[derive(Debug, Clone)]
pub struct Rounds {
    /// Rounds of the whole report: every repeated step once in each ([`Step::repeat`]); each
    /// round's median of a figure is one replicate of it in a comparison.
    pub report_rounds: u32,
    /// Rounds of the compression and CPU-scaling steps within one report round.
    pub rounds: u32,
    /// Rounds of the allocator step (each run of it is a process of its own, whose start
    /// costs more than its short work: fewer rounds).
    pub alloc_rounds: u32,
    /// Bytes of the compression step's corpus (every round compresses all of it).
    pub corpus_bytes: usize,
    /// Corpus bytes each unit of a CPU-scaling step compresses in one round.
    pub scale_bytes: u64,
    /// Allocations per thread in one allocator run (one run per allocator, thread count and
    /// round).
    pub alloc_ops: u64,
    /// The database's rates, comma-separated.
    pub db_rates: &'static str,
    /// Seconds of each rate of the database's sweep.
    pub db_step: Duration,
    /// Seconds each database figure's sample covers.
    pub db_interval: Duration,
    /// Intervals of query tracing at the top rate.
    pub db_intervals: u32,
}

impl Rounds {
    pub fn new(mode: Mode) -> Self {
        match mode {
            Mode::Quick => Rounds {
                report_rounds: 3,
                rounds: 3,
                alloc_rounds: 2,
                corpus_bytes: 8 << 20,
                scale_bytes: 2 << 20,
                alloc_ops: 60_000,
                db_rates: "100,400,1600",
                db_step: Duration::from_secs(2),
                db_interval: Duration::from_millis(250),
                db_intervals: 8,
            },
            Mode::Full => Rounds {
                report_rounds: 5,
                rounds: 3,
                alloc_rounds: 2,
                corpus_bytes: 32 << 20,
                scale_bytes: 16 << 20,
                alloc_ops: 700_000,
                db_rates: "100,400,1600,6400",
                db_step: Duration::from_secs(5),
                db_interval: Duration::from_millis(500),
                db_intervals: 8,
            },
        }
    }

    /// Samples of each database figure of a sweep step (whole intervals of one step).
    pub fn db_samples(&self) -> u32 {
        (self.db_step.as_millis() / self.db_interval.as_millis().max(1)) as u32
    }

    /// The interval in seconds, as `load --interval` and `db querystat` take it.
    pub fn db_interval_arg(&self) -> String {
        format!("{}", self.db_interval.as_secs_f64())
    }
}

/// An experiment run as a step: stored, and its outcome handed back (type erased).
type RunFn = fn(&mut Context<'_>, &[&str]) -> Result<(Box<dyn Shown>, Option<i64>), Classified>;
/// The step's arguments parsed as its command's, without running it.
type ParseFn = fn(&[&str]) -> Result<(), Classified>;

/// A registered experiment as a step of the report.
#[derive(Clone, Copy)]
pub struct StepExperiment {
    /// Its command (`["mem", "latency"]`).
    pub path: &'static [&'static str],
    run: RunFn,
    parse: ParseFn,
}

impl std::fmt::Debug for StepExperiment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.path.join(" "))
    }
}

impl StepExperiment {
    pub fn of<E: Experiment>() -> Self {
        fn run<E: Experiment>(
            ctx: &mut Context<'_>,
            argv: &[&str],
        ) -> Result<(Box<dyn Shown>, Option<i64>), Classified> {
            let (outcome, id) = run_step::<E>(ctx, argv)?;
            Ok((Box::new(outcome), id))
        }
        fn parse<E: Experiment>(argv: &[&str]) -> Result<(), Classified> {
            experiment::parse_step::<E>(argv).map(drop)
        }
        Self { path: E::PATH, run: run::<E>, parse: parse::<E> }
    }

    /// Whether `argv` parses as this experiment's arguments.
    pub fn check(&self, argv: &[&str]) -> Result<(), Classified> {
        (self.parse)(argv)
    }

    /// Runs it with `argv` as a quiet step and stores its outcome: (outcome, run id).
    pub fn run(
        &self,
        ctx: &mut Context<'_>,
        argv: &[&str],
    ) -> Result<(Box<dyn Shown>, Option<i64>), Classified> {
        (self.run)(ctx, argv)
    }
}

/// What a step does.
#[derive(Debug, Clone)]
pub enum Action {
    /// A registered experiment, with its arguments as on its command line.
    Experiment { experiment: StepExperiment, argv: Vec<String> },
    /// `compress` over a corpus the step writes first ([`crate::runner`]).
    Compression,
    /// A throwaway PostgreSQL: a rate sweep, then `db querystat` under load ([`crate::runner`]).
    Database,
    /// Cannot run on this machine: why, in one line.
    Skip(String),
}

/// One step of the report.
#[derive(Debug, Clone)]
pub struct Step {
    /// The area of the page it belongs to (what `report --sections` picks).
    pub area: Area,
    /// What it measures, in words (the progress bar and the page's list of stored runs).
    pub label: &'static str,
    /// Expected seconds (the progress bar's weight).
    pub seconds: f64,
    /// The page section it draws (its first, when it draws several), as the code that draws it
    /// declares it: where it says why when it cannot run.
    pub draws: Section,
    pub action: Action,
    /// Whether the step is done again in every round of the report ([`Rounds::report_rounds`]):
    /// its figures' rounds are their replicates in a comparison. The database and the network
    /// links run once.
    pub repeat: bool,
}

fn ms(d: Duration) -> String {
    d.as_millis().to_string()
}

/// Every step of the `areas` asked for, in page order, on the CPUs `cpus` of `topology`.
pub fn plan(mode: Mode, areas: &[Area], topology: &Topology, cpus: &[u32]) -> Vec<Step> {
    let mut areas = areas.to_vec();
    areas.sort();
    areas.dedup();
    areas.into_iter().flat_map(|area| section_steps(area, mode, topology, cpus)).collect()
}

/// The steps of one area of the page, in page order: one `add` line each — its label,
/// expected seconds, the section it draws (the drawing crate's [`Section`]) and what runs.
pub fn section_steps(area: Area, mode: Mode, topology: &Topology, cpus: &[u32]) -> Vec<Step> {
    let full = mode == Mode::Full;
    let budget = Budget::new(mode, topology);
    let sampling = Rounds::new(mode);
    let n = cpus.len();
    let nf = n as f64;
    let factor = if full { 3.0 } else { 1.0 };
    let weight = if full { 4.0 } else { 1.0 };
    let nodes = topology.nodes_with_memory().len() as f64;
    let cpu_nodes = topology.nodes.iter().filter(|n| !n.cpus.is_empty()).count() as f64;
    let per_node = topology.nodes.iter().map(|n| n.cpus.len()).max().unwrap_or(1).max(1);
    let bw = ms(budget.bandwidth);
    let rounds = sampling.rounds.to_string();
    let mut steps = Vec::new();
    // The database and the network links run once; every other step in each report round.
    let repeat = !matches!(area, Area::Database | Area::Network);
    let mut add = |label, seconds, draws, action| {
        steps.push(Step { area, label, seconds, draws, action, repeat });
    };
    match area {
        // Always on the page, measured by no step.
        Area::Machine => {}
        Area::Memory => {
            let argv = [
                "--sweep",
                "--from",
                "16KiB",
                "--to",
                &budget.sweep_to.to_string(),
                "--duration-ms",
                &ms(budget.sweep),
                "--prefetch-check",
            ];
            add(
                "latency by working-set size, prefetch self-check",
                14.0 * factor,
                mem::LATENCY_SIZE,
                experiment::<latency::Latency>(&argv),
            );
            let argv = [
                "--matrix",
                "--size",
                &budget.matrix_bytes.to_string(),
                "--duration-ms",
                &ms(budget.matrix),
            ];
            add(
                "node×node latency",
                1.5 * nodes * cpu_nodes * factor,
                mem::LATENCY_MATRIX,
                experiment::<latency::Latency>(&argv),
            );
            let argv = ["--matrix", "--threads", &per_node.to_string(), "--duration-ms", &bw];
            add(
                "node×node bandwidth",
                1.5 * nodes * cpu_nodes * factor,
                mem::BANDWIDTH_MATRIX,
                experiment::<bandwidth::Bandwidth>(&argv),
            );
            add(
                "bandwidth by thread count",
                1.5 * nf * factor,
                mem::BANDWIDTH_THREADS,
                experiment::<bandwidth::Bandwidth>(&["--scale", "--duration-ms", &bw]),
            );
            // Ordinary and non-temporal stores: the headline copy figure is the better of
            // the two, as MLC and STREAM users read it.
            add(
                "copy bandwidth, ordinary and non-temporal stores",
                2.0 * factor,
                mem::BANDWIDTH_KERNELS,
                experiment::<bandwidth::Bandwidth>(&[
                    "--kernel",
                    "copy,copy-nt",
                    "--duration-ms",
                    &bw,
                ]),
            );
            let delays: Vec<String> = budget.loaded_delays.iter().map(u64::to_string).collect();
            let action = if n >= 2 {
                experiment::<bandwidth::LoadedLatency>(&[
                    "--delays",
                    &delays.join(","),
                    "--duration-ms",
                    &ms(budget.loaded),
                    "--chase-size",
                    &budget.matrix_bytes.to_string(),
                ])
            } else {
                Action::Skip("needs at least two CPUs: one chases, the others load".into())
            };
            add(
                "loaded latency",
                (budget.loaded_delays.len() as f64 + 1.0) * 0.5 * factor,
                mem::LOADED_LATENCY,
                action,
            );
            let (pages, loops) = (budget.slb_pages.to_string(), budget.slb_loops.to_string());
            // One round a step: the report repeats the step in its own rounds.
            let work = ["--pages", &pages, "--loops", &loops, "--rounds", "1"];
            add(
                "SLB by worker count",
                2.0 * nf * factor,
                mem::SLB,
                experiment::<slb::Scale>(&work),
            );
            add(
                "SLB under local, interleaved and remote memory",
                6.0 * factor,
                mem::SLB_POLICIES,
                experiment::<slb::ComparePolicies>(
                    &[&work[..], &["--workers", &n.to_string()]].concat(),
                ),
            );
        }
        Area::Contention => {
            add(
                "core to core",
                (nf * (nf - 1.0) / 2.0) * 0.15 * weight + 0.5,
                mem::C2C,
                experiment::<c2c::C2c>(&["--duration-ms", &ms(budget.c2c_pair)]),
            );
            add(
                "lock contention",
                4.0 * (nf.log2().ceil() + 1.0) * 0.3 * weight,
                mem::CONTENTION,
                experiment::<slb::Locks>(&[]),
            );
        }
        Area::Cpu => {
            add(
                SCALE,
                4.0 * weight,
                tamp::chart::CPU_SCALE,
                experiment::<tamp::experiments::CpuScale>(&[
                    "--size",
                    &sampling.scale_bytes.to_string(),
                    "--rounds",
                    &rounds,
                ]),
            );
            add(
                TIMER,
                1.0,
                mem::TIMER,
                experiment::<membench::experiments::timer::Timer>(&[
                    "--batches",
                    if full { "200" } else { "40" },
                ]),
            );
        }
        Area::Compression => {
            add(COMPRESS, 2.0 * weight, tamp::chart::COMPRESS_LZ4, Action::Compression);
        }
        Area::Allocators => {
            let threads = if n > 1 { format!("1,{n}") } else { "1".into() };
            add(
                ALLOC,
                8.0 * weight,
                allocbench::chart::RELATIVE,
                experiment::<allocbench::experiments::Alloc>(&[
                    "--threads",
                    &threads,
                    "--repeat",
                    &sampling.alloc_rounds.to_string(),
                    "--ops",
                    &sampling.alloc_ops.to_string(),
                ]),
            );
        }
        Area::Database => {
            add(DATABASE, 12.0 * weight + 5.0, loadgen::chart::LOAD_THROUGHPUT, Action::Database);
        }
        Area::Network => {
            add(
                NETWORK,
                1.0,
                nicstat::links::NETWORK,
                experiment::<nicstat::links::Links>(&["--seconds", "1"]),
            );
        }
    }
    steps
}

/// A registered experiment as a step, with its arguments as on its command line.
fn experiment<E: Experiment>(argv: &[&str]) -> Action {
    Action::Experiment {
        experiment: StepExperiment::of::<E>(),
        argv: argv.iter().map(|a| a.to_string()).collect(),
    }
}

/// `report --sections`' values: every area but the machine's facts (always shown), by name,
/// listed in its help from [`Area`].
pub fn sections_parser() -> impl clap::builder::TypedValueParser<Value = Area> {
    let names: Vec<&'static str> = Area::sections().map(Area::name).collect();
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(names).try_map(|name| name.parse::<Area>())
}

const SCALE: &str = "throughput by threads and units";
const TIMER: &str = "the timer's cost";
const COMPRESS: &str = "lz4 and zstd -1 over every CPU";
const ALLOC: &str = "every installed allocator";
pub(crate) const DATABASE: &str =
    "a throwaway PostgreSQL 15: a rate sweep, then query latency and pre-emption";
pub(crate) const QUERIES: &str = "query latency and pre-emption at the top rate";
const NETWORK: &str = "network links";
#[cfg(test)]
mod tests {
    use super::*;

    fn topology(spec: &str) -> Topology {
        Topology::from_synthetic(spec).unwrap()
    }

    /// Every step of every section, quick and full, on one and on several nodes, is a
    /// registered experiment whose arguments parse as its command's (or a step of its own).
    #[test]
    fn every_step_parses_as_its_command() {
        for spec in
            ["pack:1 [numa(memory=1GiB)] core:2 pu:1", "pack:2 [numa(memory=1GiB)] core:2 pu:1"]
        {
            let t = topology(spec);
            let cpus = t.online_cpu_ids();
            for mode in [Mode::Quick, Mode::Full] {
                let steps = plan(mode, &Area::ALL, &t, &cpus);
                let experiments =
                    steps.iter().filter(|s| matches!(s.action, Action::Experiment { .. })).count();
                assert!(experiments >= 12, "{spec} {mode:?}: {experiments} experiment steps");
                for step in &steps {
                    if let Action::Experiment { experiment, argv } = &step.action {
                        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
                        experiment.check(&argv).unwrap_or_else(|e| {
                            panic!("{}: {experiment:?} {argv:?}: {e}", step.label)
                        });
                    }
                    assert!(step.seconds > 0.0, "{}: no weight", step.label);
                }
            }
        }
    }

    /// What `step`'s outcome draws, from a made-up outcome of the kind it stores (empty: what
    /// a section is called and where it goes does not depend on what was measured).
    fn drawn(step: &Step, t: &Topology) -> Vec<chart::Part> {
        use membench::experiments::bandwidth::{BandwidthOutcome, BandwidthScale};
        use membench::experiments::latency::{LatencyMatrixRun, LatencyOutcome, LatencySweep};
        let placement = || place::Placement::base_pages(0, Vec::new());
        let empty_sweep = || loadgen::experiments::LoadOutcome::Sweep {
            steps: Vec::new(),
            stopped_between_steps: false,
        };
        let (path, argv) = match &step.action {
            Action::Experiment { experiment, argv } => (experiment.path, argv),
            Action::Compression => {
                let run = tamp::RunResult {
                    operation: tamp::Operation::Compress,
                    format: "lz4".into(),
                    level: Some(1),
                    input: "corpus".into(),
                    output: None,
                    threads: 2,
                    block_size: 1 << 20,
                    blocks: 0,
                    bytes_in: 0,
                    bytes_out: 0,
                    ratio: 0.0,
                    wall_s: 0.0,
                    cpu_user_s: 0.0,
                    cpu_sys_s: 0.0,
                    mb_per_s: 0.0,
                    cpu_share: 0.0,
                    online_cpus: 2,
                    machine_cpu_share: None,
                    cpus_busy: None,
                    thread_busy: Vec::new(),
                    verdict: tamp::Verdict::CpuBound,
                    verdict_reason: String::new(),
                    parallel: true,
                    serial_reason: None,
                    interrupted: false,
                    rounds: Vec::new(),
                };
                return tamp::experiments::Compressed::Run(Box::new(run)).parts(t);
            }
            Action::Database => return empty_sweep().parts(t),
            Action::Skip(why) => panic!("{}: skipped on a two-CPU machine: {why}", step.label),
        };
        let has = |flag: &str| argv.iter().any(|a| a == flag);
        let several_kernels = argv
            .iter()
            .position(|a| a == "--kernel")
            .and_then(|at| argv.get(at + 1))
            .is_some_and(|k| k.contains(','));
        match path {
            p if p == latency::Latency::PATH && has("--matrix") => {
                let matrix = membench::latency::LatencyMatrix {
                    bytes: 0,
                    cpu_nodes: Vec::new(),
                    memory_nodes: Vec::new(),
                    cells: Vec::new(),
                };
                LatencyOutcome::Matrix(LatencyMatrixRun { matrix, distances: None }).parts(t)
            }
            p if p == latency::Latency::PATH => LatencyOutcome::Sweep(LatencySweep {
                points: Vec::new(),
                prefetch_check: None,
                interrupted: false,
                caches: Vec::new(),
            })
            .parts(t),
            p if p == bandwidth::Bandwidth::PATH && has("--matrix") => {
                BandwidthOutcome::Matrix(membench::bandwidth::BandwidthMatrix {
                    cpu_nodes: Vec::new(),
                    memory_nodes: Vec::new(),
                    threads_per_cell: 1,
                    cells: Vec::new(),
                    interrupted: false,
                })
                .parts(t)
            }
            p if p == bandwidth::Bandwidth::PATH && has("--scale") => {
                let scaling = membench::bandwidth::Scaling {
                    steps: Vec::new(),
                    saturated_at: None,
                    interrupted: false,
                    size_checks: Vec::new(),
                };
                BandwidthOutcome::Scale(BandwidthScale { scaling, peak: None, interrupted: false })
                    .parts(t)
            }
            p if p == bandwidth::Bandwidth::PATH && several_kernels => {
                BandwidthOutcome::Kernels(Vec::new()).parts(t)
            }
            p if p == bandwidth::LoadedLatency::PATH => membench::loaded::LoadedCurve {
                mix: membench::loaded::LoadMix::Reads,
                kernel: membench::kernels::bandwidth::Kernel::Read,
                isa: membench::kernels::bandwidth::Isa::Scalar,
                accounting: String::new(),
                chase_cpu: 0,
                load_cpus: vec![1],
                chase_placement: placement(),
                load_placements: Vec::new(),
                points: Vec::new(),
                interrupted: false,
                delay_caveat: None,
            }
            .parts(t),
            p if p == slb::Scale::PATH => {
                slb::ScaleOutcome { runs: Vec::new(), interrupted: false }.parts(t)
            }
            p if p == slb::ComparePolicies::PATH => {
                slb::PoliciesOutcome { rows: Vec::new(), interrupted: false }.parts(t)
            }
            p if p == slb::Locks::PATH => slb::LocksOutcome::default().parts(t),
            p if p == c2c::C2c::PATH => membench::c2c::C2cResult {
                mode: membench::c2c::C2cMode::Read,
                cpus: vec![0, 1],
                line_on: None,
                line: placement(),
                pairs: Vec::new(),
                classes: Vec::new(),
                nodes: Vec::new(),
                interrupted: false,
            }
            .parts(t),
            p if p == tamp::experiments::CpuScale::PATH => tamp::scale::ScaleReport {
                codec: "lz4".into(),
                level: Some(1),
                input_bytes: 0,
                block_size: 1 << 20,
                steps: Vec::new(),
                summary: tamp::scale::ScaleSummary {
                    single_thread_mb_s: None,
                    one_unit_best: None,
                    one_unit_stops_at: None,
                    one_unit_limit: None,
                    filled_best: None,
                    machine_limit: None,
                    text: String::new(),
                },
                interrupted: false,
            }
            .parts(t),
            p if p == membench::experiments::timer::Timer::PATH => membench::timers::TimerReport {
                timers: Vec::new(),
                skipped: Vec::new(),
                path_method: membench::timers::PathMethod::Seccomp,
                vdso_mapped: true,
                core_ghz: None,
                core_clock: None,
                clocksource: None,
                available_clocksources: Vec::new(),
                counter: None,
                choice: None,
                warnings: Vec::new(),
                interrupted: false,
            }
            .parts(t),
            p if p == allocbench::experiments::Alloc::PATH => allocbench::BakeOff {
                workload: "builtin".into(),
                allocators: Vec::new(),
                missing: Vec::new(),
                threads: vec![1],
                repeat: 1,
                baseline: None,
                runs: Vec::new(),
                refused: Vec::new(),
                groups: Vec::new(),
                notes: Vec::new(),
                interrupted: false,
            }
            .parts(t),
            p if p == nicstat::links::Links::PATH => nicstat::links::NetLinks {
                seconds: 1.0,
                links: Vec::new(),
                notes: Vec::new(),
                interrupted: false,
            }
            .parts(t),
            other => panic!("{}: no made-up outcome for `{}`", step.label, other.join(" ")),
        }
    }

    /// Each step declares the section it draws (where it says why when it cannot run): the
    /// outcome it stores draws that very section — area, id, heading and width.
    #[test]
    fn each_step_draws_the_section_it_declares() {
        let t = topology("pack:2 [numa(memory=1GiB)] core:1 pu:1");
        let cpus = t.online_cpu_ids();
        for mode in [Mode::Quick, Mode::Full] {
            let steps = plan(mode, &Area::ALL, &t, &cpus);
            let areas: std::collections::BTreeSet<Area> = steps.iter().map(|s| s.area).collect();
            assert_eq!(areas.len(), Area::ALL.len() - 1, "a step in every area but the machine's");
            for step in &steps {
                let d = step.draws;
                assert_eq!(d.area, step.area, "{}: drawn in another area", step.label);
                let parts = drawn(step, &t);
                let found = parts.iter().find(|p| p.id == d.id).unwrap_or_else(|| {
                    let ids: Vec<&str> = parts.iter().map(|p| p.id.as_str()).collect();
                    panic!("{}: declares {} but draws {ids:?}", step.label, d.id)
                });
                assert_eq!(
                    (found.area, found.title.as_str(), found.wide),
                    (d.area, d.title, d.wide),
                    "{}: {}",
                    step.label,
                    d.id
                );
            }
        }
    }

    #[test]
    fn steps_follow_the_sections_asked_for_in_page_order() {
        let t = topology("pack:1 [numa(memory=1GiB)] core:2 pu:1");
        let cpus = t.online_cpu_ids();
        let steps = plan(Mode::Quick, &[Area::Cpu, Area::Contention, Area::Cpu], &t, &cpus);
        let areas: Vec<Area> = steps.iter().map(|s| s.area).collect();
        assert!(areas.windows(2).all(|w| w[0] <= w[1]), "{areas:?}");
        assert!(!areas.contains(&Area::Memory));
        assert_eq!(steps.iter().filter(|s| s.label == TIMER).count(), 1, "each area once");
        assert_eq!(steps.first().map(|s| s.label), Some("core to core"));
    }

    /// The value after `flag` in a step's arguments.
    fn arg<'a>(step: &'a Step, flag: &str) -> Option<&'a str> {
        let Action::Experiment { argv, .. } = &step.action else { return None };
        let at = argv.iter().position(|a| a == flag)?;
        argv.get(at + 1).map(String::as_str)
    }

    /// Every repeated step runs in at least three report rounds (an interval on its rounds
    /// needs two a side; three give one worth reading), the steps' own arguments take the
    /// within-round counts, and the database's intervals are whole.
    #[test]
    fn the_report_takes_enough_rounds_to_be_judged() {
        use measure::verdict::{assess, Level, RunNoise};
        for mode in [Mode::Quick, Mode::Full] {
            let r = Rounds::new(mode);
            assert!(r.report_rounds >= 3, "{mode:?}");
            let n = r.report_rounds as usize;
            let values: Vec<f64> = (0..n).map(|i| 100.0 + i as f64).collect();
            assert!(assess(&values, &values, Level::Rounds, RunNoise::none()).p_value.is_finite());
            // Whole intervals: the last is not a stub.
            assert_eq!(r.db_step.as_millis() % r.db_interval.as_millis(), 0, "{mode:?}");
            let t = topology("pack:1 [numa(memory=1GiB)] core:2 pu:1");
            let cpus = t.online_cpu_ids();
            let scale = section_steps(Area::Cpu, mode, &t, &cpus);
            let scale = scale.iter().find(|s| s.label == SCALE).unwrap();
            assert!(scale.repeat);
            assert_eq!(arg(scale, "--rounds"), Some(r.rounds.to_string().as_str()));
            let alloc = section_steps(Area::Allocators, mode, &t, &cpus);
            assert_eq!(arg(&alloc[0], "--repeat"), Some(r.alloc_rounds.to_string().as_str()));
            assert_eq!(r.db_interval_arg().parse::<f64>().unwrap(), r.db_interval.as_secs_f64());
            assert!(!section_steps(Area::Database, mode, &t, &cpus)[0].repeat);
        }
        assert_eq!(Rounds::new(Mode::Quick).db_interval_arg(), "0.25");
    }

    #[test]
    fn one_cpu_skips_loaded_latency_with_its_reason() {
        let t = topology("pack:1 [numa(memory=1GiB)] core:1 pu:1");
        let steps = plan(Mode::Quick, &[Area::Memory], &t, &t.online_cpu_ids());
        let loaded = steps.iter().find(|s| s.label == "loaded latency").unwrap();
        assert!(
            matches!(&loaded.action, Action::Skip(why) if why.contains("at least two CPUs")),
            "{:?}",
            loaded.action
        );
    }
}
