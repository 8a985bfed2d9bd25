//! The report's steps: what `platscope report` runs, in page order, as a list ([`plan`]) —
//! each a registered experiment with its arguments as on its command line, its expected
//! seconds, and the page section it draws. Adding a section to the report is its experiment
//! and one line here.

use std::str::FromStr;
use std::time::Duration;

use chart::Area;
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

/// How long and how large each memory and contention step is, by mode.
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
                sweep: Duration::from_millis(300),
                matrix_bytes: dram.max(1 << 30),
                matrix: Duration::from_millis(500),
                bandwidth: Duration::from_millis(2000),
                loaded_delays: membench::loaded::DEFAULT_DELAYS.to_vec(),
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
                loaded_delays: vec![0, 200, 800, 3200, 12800, 51200],
                loaded: Duration::from_millis(150),
                slb_pages: 65_536,
                slb_loops: 60,
                c2c_pair: Duration::from_millis(150),
            },
        }
    }
}

/// The fewest samples a compared figure needs on each side: 5 against 5 fully separated
/// samples are the fewest the report's test can call different at p < 0.01
/// (`measure::verdict::testable`; 2 of the 252 orderings).
pub const MIN_SAMPLES: u32 = 5;

/// How the compression, CPU-scaling, allocator and database steps sample the figures a
/// comparison tests, by mode. The first three run in **rounds**: each round repeats the
/// step's whole work from a fresh start (new pipeline threads and buffers; a new allocator
/// process) and is one independent sample of each figure, as the memory steps' rounds are. The
/// database's figures are one sample per interval of one run (one server, one cache). Each
/// takes at least [`MIN_SAMPLES`]; the work of a round is cut so the report grows little (the
/// quick compression, CPU and allocator sections by about 0.5 s together on a 2-vCPU VM;
/// docs/comparing.md has the measurement).
#[derive(Debug, Clone)]
pub struct Rounds {
    /// Rounds of the compression and CPU-scaling steps.
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
            // Nine short rounds rather than five long ones, for less work: on this project's
            // 2-vCPU Xeon VM at load average 10–11 (other builds), `compress -t 2` of zstd -1
            // with a spinner on CPU 1 against without gave p = 0.0008 and 0.0001 in 9 rounds of
            // 8 MiB, 0.0079 twice in 5 of 16 MiB (the least 5 rounds can give: every round
            // apart, so one stray round would have made it `same`).
            Mode::Quick => Rounds {
                rounds: 9,
                alloc_rounds: MIN_SAMPLES,
                corpus_bytes: 8 << 20,
                scale_bytes: 2 << 20,
                alloc_ops: 60_000,
                db_rates: "100,400,1600",
                db_step: Duration::from_secs(2),
                db_interval: Duration::from_millis(250),
                db_intervals: 8,
            },
            Mode::Full => Rounds {
                rounds: 9,
                alloc_rounds: 9,
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
    pub section: Section,
    /// What it measures, in words (the progress bar and the page's list of stored runs).
    pub label: &'static str,
    /// Expected seconds (the progress bar's weight).
    pub seconds: f64,
    /// The page section it draws: where it says why when it cannot run.
    pub draws: (Area, &'static str, &'static str),
    pub action: Action,
}

fn experiment<E: Experiment>(argv: Vec<String>) -> Action {
    Action::Experiment { experiment: StepExperiment::of::<E>(), argv }
}

fn ms(d: Duration) -> String {
    d.as_millis().to_string()
}

fn on_page(s: mem::Section) -> (Area, &'static str, &'static str) {
    (Area::Memory, s.id, s.title)
}

fn on_contention(s: mem::Section) -> (Area, &'static str, &'static str) {
    (Area::Contention, s.id, s.title)
}

/// Every step of `sections`, in page order, on the CPUs `cpus` of `topology`.
pub fn plan(mode: Mode, sections: &[Section], topology: &Topology, cpus: &[u32]) -> Vec<Step> {
    let budget = Budget::new(mode, topology);
    let n = cpus.len();
    let nf = n as f64;
    let factor = if mode == Mode::Full { 3.0 } else { 1.0 };
    let nodes = topology.nodes_with_memory().len() as f64;
    let cpu_nodes = topology.nodes.iter().filter(|n| !n.cpus.is_empty()).count() as f64;
    let per_node = topology.nodes.iter().map(|n| n.cpus.len()).max().unwrap_or(1).max(1);
    let bw = ms(budget.bandwidth);
    let mut steps = Vec::new();
    for &section in sections {
        let mut add = |label, seconds, draws, action| {
            steps.push(Step { section, label, seconds, draws, action });
        };
        match section {
            Section::Memory => {
                let argv = vec![
                    "--sweep".into(),
                    "--from".into(),
                    "16KiB".into(),
                    "--to".into(),
                    budget.sweep_to.to_string(),
                    "--duration-ms".into(),
                    ms(budget.sweep),
                    "--prefetch-check".into(),
                ];
                add(
                    "latency by working-set size, prefetch self-check",
                    14.0 * factor,
                    on_page(mem::LATENCY_SIZE),
                    experiment::<latency::Latency>(argv),
                );
                let argv = vec![
                    "--matrix".into(),
                    "--size".into(),
                    budget.matrix_bytes.to_string(),
                    "--duration-ms".into(),
                    ms(budget.matrix),
                ];
                add(
                    "node×node latency",
                    1.5 * nodes * cpu_nodes * factor,
                    on_page(mem::LATENCY_MATRIX),
                    experiment::<latency::Latency>(argv),
                );
                let argv = vec![
                    "--matrix".into(),
                    "--threads".into(),
                    per_node.to_string(),
                    "--duration-ms".into(),
                    bw.clone(),
                ];
                add(
                    "node×node bandwidth",
                    1.5 * nodes * cpu_nodes * factor,
                    on_page(mem::BANDWIDTH_MATRIX),
                    experiment::<bandwidth::Bandwidth>(argv),
                );
                add(
                    "bandwidth by thread count",
                    1.5 * nf * factor,
                    on_page(mem::BANDWIDTH_THREADS),
                    experiment::<bandwidth::Bandwidth>(vec![
                        "--scale".into(),
                        "--duration-ms".into(),
                        bw.clone(),
                    ]),
                );
                // Ordinary and non-temporal stores: the headline copy figure is the better of
                // the two, as MLC and STREAM users read it.
                add(
                    "copy bandwidth, ordinary and non-temporal stores",
                    2.0 * factor,
                    on_page(mem::BANDWIDTH_KERNELS),
                    experiment::<bandwidth::Bandwidth>(vec![
                        "--kernel".into(),
                        "copy,copy-nt".into(),
                        "--duration-ms".into(),
                        bw.clone(),
                    ]),
                );
                let delays: Vec<String> = budget.loaded_delays.iter().map(u64::to_string).collect();
                let action = if n >= 2 {
                    experiment::<bandwidth::LoadedLatency>(vec![
                        "--delays".into(),
                        delays.join(","),
                        "--duration-ms".into(),
                        ms(budget.loaded),
                        "--chase-size".into(),
                        budget.matrix_bytes.to_string(),
                    ])
                } else {
                    Action::Skip("needs at least two CPUs: one chases, the others load".into())
                };
                add(
                    "loaded latency",
                    (budget.loaded_delays.len() as f64 + 1.0) * 0.5 * factor,
                    on_page(mem::LOADED_LATENCY),
                    action,
                );
                let work = vec![
                    "--pages".to_string(),
                    budget.slb_pages.to_string(),
                    "--loops".into(),
                    budget.slb_loops.to_string(),
                ];
                add(
                    "SLB by worker count",
                    2.0 * nf * factor,
                    on_page(mem::SLB),
                    experiment::<slb::Scale>(work.clone()),
                );
                let mut policies = work;
                policies.extend(["--workers".to_string(), n.to_string()]);
                add(
                    "SLB under local, interleaved and remote memory",
                    6.0 * factor,
                    on_page(mem::SLB_POLICIES),
                    experiment::<slb::ComparePolicies>(policies),
                );
            }
            Section::Contention => {
                let full = if mode == Mode::Full { 4.0 } else { 1.0 };
                add(
                    "core to core",
                    (nf * (nf - 1.0) / 2.0) * 0.15 * full + 0.5,
                    on_contention(mem::C2C),
                    experiment::<c2c::C2c>(vec!["--duration-ms".into(), ms(budget.c2c_pair)]),
                );
                add(
                    "lock contention",
                    4.0 * (nf.log2().ceil() + 1.0) * 0.3 * full,
                    on_contention(mem::CONTENTION),
                    experiment::<slb::Locks>(Vec::new()),
                );
            }
            other => steps.extend(section_steps(other, mode, n)),
        }
    }
    steps
}

/// Runs every step of the chosen `sections` and returns the page's data.
/// A part of the report `--sections` can pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Section {
    Memory,
    Contention,
    Cpu,
    Compression,
    Allocators,
    Database,
    Network,
}

impl Section {
    /// Every section, in page order.
    pub const ALL: [Section; 7] = [
        Section::Memory,
        Section::Contention,
        Section::Cpu,
        Section::Compression,
        Section::Allocators,
        Section::Database,
        Section::Network,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Section::Memory => "memory",
            Section::Contention => "contention",
            Section::Cpu => "cpu",
            Section::Compression => "compression",
            Section::Allocators => "allocators",
            Section::Database => "database",
            Section::Network => "network",
        }
    }

    /// The steps of a section beyond memory and contention (those are in
    /// [`plan`]), with their expected seconds on `cpus` CPUs.
    pub fn steps(self, mode: Mode, cpus: usize) -> Vec<Step> {
        section_steps(self, mode, cpus)
    }
}

/// The steps of `section` beyond memory and contention, in page order.
pub fn section_steps(section: Section, mode: Mode, cpus: usize) -> Vec<Step> {
    let full = mode == Mode::Full;
    let weight = if full { 4.0 } else { 1.0 };
    let sampling = Rounds::new(mode);
    let rounds = sampling.rounds.to_string();
    let step = |label, seconds, draws, action| Step { section, label, seconds, draws, action };
    let experiment = |experiment, argv: &[&str]| Action::Experiment {
        experiment,
        argv: argv.iter().map(|a| a.to_string()).collect(),
    };
    match section {
        Section::Memory | Section::Contention => Vec::new(),
        Section::Cpu => vec![
            step(
                SCALE,
                4.0 * weight,
                (Area::Cpu, "chart-cpu-scale", "CPU scaling"),
                experiment(
                    StepExperiment::of::<tamp::experiments::CpuScale>(),
                    &["--size", &sampling.scale_bytes.to_string(), "--rounds", &rounds],
                ),
            ),
            step(
                TIMER,
                1.0,
                (Area::Cpu, "chart-timer", "Reading the clock"),
                experiment(
                    StepExperiment::of::<membench::experiments::timer::Timer>(),
                    &["--batches", if full { "200" } else { "40" }],
                ),
            ),
        ],
        Section::Compression => vec![step(
            COMPRESS,
            2.0 * weight,
            (Area::Compression, "chart-compress", "Compression"),
            Action::Compression,
        )],
        Section::Allocators => {
            let threads = if cpus > 1 { format!("1,{cpus}") } else { "1".into() };
            let ops = sampling.alloc_ops.to_string();
            let rounds = sampling.alloc_rounds.to_string();
            vec![step(
                ALLOC,
                8.0 * weight,
                (Area::Allocators, "chart-alloc-relative", "Allocators"),
                experiment(
                    StepExperiment::of::<allocbench::experiments::Alloc>(),
                    &["--threads", &threads, "--repeat", &rounds, "--ops", &ops],
                ),
            )]
        }
        Section::Database => vec![step(
            DATABASE,
            12.0 * weight + 5.0,
            (Area::Database, "chart-load-throughput", "Database"),
            Action::Database,
        )],
        Section::Network => vec![step(
            NETWORK,
            1.0,
            (Area::Network, "chart-network", "Network links"),
            experiment(StepExperiment::of::<nicstat::links::Links>(), &["--seconds", "1"]),
        )],
    }
}

impl FromStr for Section {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Section::ALL.into_iter().find(|s| s.name() == text.trim()).ok_or_else(|| {
            let known: Vec<&str> = Section::ALL.iter().map(|s| s.name()).collect();
            format!("unknown section {text:?}; known: {}", known.join(", "))
        })
    }
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
                let steps = plan(mode, &Section::ALL, &t, &cpus);
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

    #[test]
    fn steps_follow_the_sections_asked_for_in_page_order() {
        let t = topology("pack:1 [numa(memory=1GiB)] core:2 pu:1");
        let cpus = t.online_cpu_ids();
        let steps = plan(Mode::Quick, &[Section::Contention, Section::Cpu], &t, &cpus);
        let sections: Vec<Section> = steps.iter().map(|s| s.section).collect();
        assert!(sections.windows(2).all(|w| w[0] <= w[1]), "{sections:?}");
        assert!(!sections.contains(&Section::Memory));
        assert_eq!(steps.first().map(|s| s.label), Some("core to core"));
    }

    /// The value after `flag` in a step's arguments.
    fn arg<'a>(step: &'a Step, flag: &str) -> Option<&'a str> {
        let Action::Experiment { argv, .. } = &step.action else { return None };
        let at = argv.iter().position(|a| a == flag)?;
        argv.get(at + 1).map(String::as_str)
    }

    /// Every figure the compression, CPU-scaling, allocator and database steps offer for
    /// comparison has enough samples on each side for the test to reach p < 0.01, in both
    /// modes: the rounds the steps are given, and the whole intervals of a database step.
    #[test]
    fn the_compared_steps_take_enough_samples_to_be_tested() {
        use measure::verdict::testable;
        assert!(testable(MIN_SAMPLES as usize, MIN_SAMPLES as usize));
        assert!(!testable(MIN_SAMPLES as usize - 1, MIN_SAMPLES as usize - 1));
        for mode in [Mode::Quick, Mode::Full] {
            let r = Rounds::new(mode);
            for n in [r.rounds as usize, r.alloc_rounds as usize] {
                assert!(n >= MIN_SAMPLES as usize && testable(n, n), "{mode:?}: {n} rounds");
            }
            let db = r.db_samples() as usize;
            assert!(testable(db, db), "{mode:?}: {db} intervals a sweep step");
            let traced = r.db_intervals as usize;
            assert!(testable(traced, traced), "{mode:?}: {traced} traced intervals");
            // Whole intervals: the last is not a stub.
            assert_eq!(r.db_step.as_millis() % r.db_interval.as_millis(), 0, "{mode:?}");
            let scale = section_steps(Section::Cpu, mode, 2);
            let scale = scale.iter().find(|s| s.label == SCALE).unwrap();
            assert_eq!(arg(scale, "--rounds"), Some(r.rounds.to_string().as_str()));
            let alloc = section_steps(Section::Allocators, mode, 2);
            assert_eq!(arg(&alloc[0], "--repeat"), Some(r.alloc_rounds.to_string().as_str()));
            assert_eq!(r.db_interval_arg().parse::<f64>().unwrap(), r.db_interval.as_secs_f64());
        }
        assert_eq!(Rounds::new(Mode::Quick).db_interval_arg(), "0.25");
    }

    #[test]
    fn one_cpu_skips_loaded_latency_with_its_reason() {
        let t = topology("pack:1 [numa(memory=1GiB)] core:1 pu:1");
        let steps = plan(Mode::Quick, &[Section::Memory], &t, &t.online_cpu_ids());
        let loaded = steps.iter().find(|s| s.label == "loaded latency").unwrap();
        assert!(
            matches!(&loaded.action, Action::Skip(why) if why.contains("at least two CPUs")),
            "{:?}",
            loaded.action
        );
    }
}
