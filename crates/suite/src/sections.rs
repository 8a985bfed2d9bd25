//! The parts of the report `--sections` picks, the steps of those beyond memory and contention,
//! and how a step runs: a registered experiment as a quiet, stored step
//! ([`experiment::run_step`]) whose sections go on the page, or one of the two steps that need
//! something first (a corpus file for compression, a throwaway PostgreSQL for the database). A
//! step that cannot run here (not root, no PostgreSQL, one CPU) says why in one line on the
//! page and in the terminal, and the report goes on.

use std::str::FromStr;

use chart::Area;
use experiment::{Context, Experiment, Globals, Shown};
use measure::{stop, Classified};
use report::html::ReportData;
use results::Recorder;
use topo::Topology;

use crate::characterise::{skipped_section, Action, Mode, Step, StepExperiment};

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
    /// [`crate::characterise::plan`]), with their expected seconds on `cpus` CPUs.
    pub fn steps(self, mode: Mode, cpus: usize) -> Vec<Step> {
        steps(self, mode, cpus)
    }
}

/// The steps of `section` beyond memory and contention, in page order.
pub fn steps(section: Section, mode: Mode, cpus: usize) -> Vec<Step> {
    let full = mode == Mode::Full;
    let weight = if full { 4.0 } else { 1.0 };
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
                    &["--size", if full { "128MiB" } else { "16MiB" }],
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
            let (repeat, ops) = if full { ("3", "2000000") } else { ("1", "300000") };
            vec![step(
                ALLOC,
                8.0 * weight,
                (Area::Allocators, "chart-alloc-relative", "Allocators"),
                experiment(
                    StepExperiment::of::<allocbench::experiments::Alloc>(),
                    &["--threads", &threads, "--repeat", repeat, "--ops", ops],
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
const DATABASE: &str =
    "a throwaway PostgreSQL 15: a rate sweep, then query latency and pre-emption";
const QUERIES: &str = "query latency and pre-emption at the top rate";
const NETWORK: &str = "network links";

/// What a step needs.
#[derive(Debug)]
pub struct Run<'a> {
    pub mode: Mode,
    pub topology: &'a Topology,
    pub globals: &'a Globals,
    pub rec: &'a mut Recorder,
    pub data: &'a mut ReportData,
    pub cpus: usize,
}

impl Run<'_> {
    /// Runs `experiment` with `argv` as a stored step of the report: its sections go on the
    /// page, its run id into the report's list (so `--from-db` and `--baseline` find it).
    pub fn experiment(
        &mut self,
        label: &str,
        experiment: &StepExperiment,
        argv: &[&str],
    ) -> Result<Box<dyn Shown>, Classified> {
        let mut ctx = Context::new(self.topology, self.globals, self.rec);
        let (outcome, id) = experiment.run(&mut ctx, argv)?;
        self.data.parts.extend(outcome.parts(self.topology));
        if let Some(id) = id {
            self.data.stored_runs.push((label.to_string(), id));
        }
        Ok(outcome)
    }

    /// Runs experiment `E` as [`Run::experiment`] does.
    fn step<E: Experiment>(&mut self, label: &str, argv: &[&str]) -> Result<(), Classified> {
        self.experiment(label, &StepExperiment::of::<E>(), argv).map(drop)
    }

    /// A step that did not run (or only in part): one line on the page and in the terminal.
    pub fn skipped(&mut self, step: &Step, why: impl std::fmt::Display) {
        let mut section = skipped_section(step, why);
        measure::say!("platscope: {} section not measured: {}", step.section.name(), section.why);
        // Two steps may draw the same place (the database's two): each keeps its own id.
        if self.data.skipped.iter().any(|s| s.id == section.id) {
            section.id = format!("{}-skipped-{}", section.id, self.data.skipped.len());
        }
        self.data.skipped.push(section);
    }

    /// lz4 and zstd -1 with one worker per CPU on a generated corpus (written once to a temp
    /// file the compressor reads; the output is discarded).
    pub fn compression(&mut self, step: &Step) {
        let bytes: usize = if self.mode == Mode::Full { 256 << 20 } else { 32 << 20 };
        let dir = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => return self.skipped(step, e),
        };
        let path = dir.path().join("corpus.tsv");
        let input = tamp::corpus::generate(tamp::corpus::DEFAULT_SEED, bytes);
        if let Err(e) = std::fs::write(&path, &input) {
            return self.skipped(step, e);
        }
        drop(input);
        let threads = self.cpus.to_string();
        let file = path.to_string_lossy().into_owned();
        let corpus = "the generated corpus (database-like TSV)";
        for format in ["lz4", "zstd"] {
            if stop::requested() {
                break;
            }
            let argv = [
                "--discard",
                "-t",
                &threads,
                "--format",
                format,
                "--level",
                "1",
                "--input-name",
                corpus,
                &file,
            ];
            let label = format!("compression ({format})");
            if let Err(e) = self.step::<tamp::experiments::Compress>(&label, &argv) {
                self.skipped(step, format!("{format}: {e}"));
            }
        }
    }

    /// A throwaway PostgreSQL 15 (Debian's, started as `postgres` in a temp dir on a private
    /// socket, stopped by PID when dropped): the sysbench-style tables, then a short sweep of
    /// steady rates with latency from the schedule and the server's CPU per transaction.
    pub fn database(&mut self, step: &Step) {
        let pg = match scratchdb::Postgres::start(&scratchdb::PgOptions::default()) {
            Ok(pg) => pg,
            Err(e) => return self.skipped(step, e),
        };
        let conninfo = pg.conninfo();
        let target = loadgen::Target {
            kind: measure::database::ServerKind::Postgres,
            url: Some(conninfo.clone()),
            socket: None,
            port: None,
            user: None,
            database: None,
        };
        let rows = if self.mode == Mode::Full { 100_000 } else { 10_000 };
        let opts = loadgen::PrepareOptions { tables: 1, rows, seed: 1 };
        if let Err(e) = loadgen::prepare(&target, &opts, &mut |_| {}) {
            return self.skipped(step, e);
        }
        let (rates, seconds) = if self.mode == Mode::Full {
            ("100,400,1600,6400", "5")
        } else {
            ("100,400,1600", "2")
        };
        let argv = [
            "--server",
            "postgres",
            "--url",
            &conninfo,
            "--sweep-rate",
            rates,
            "--duration",
            seconds,
        ];
        if let Err(e) = self.step::<loadgen::experiments::Load>(DATABASE, &argv) {
            return self.skipped(step, e);
        }
        if !stop::requested() {
            self.queries_at(step, &target, pg.pid(), rates.rsplit(',').next().unwrap_or("100"));
        }
        drop(pg);
    }

    /// `db querystat` on the server while a steady load runs at `rate` beside it: each
    /// query's latency histogram and who pre-empted the server's processes.
    fn queries_at(&mut self, step: &Step, target: &loadgen::Target, server_pid: u32, rate: &str) {
        let plan = match loadgen::experiments::plan_from_argv(&["--rate", rate, "--duration", "6"])
        {
            Ok(plan) => plan,
            Err(e) => return self.skipped(step, format!("{QUERIES}: {e}")),
        };
        let pid = server_pid.to_string();
        let measured = std::thread::scope(|scope| {
            let (running, first_interval) = std::sync::mpsc::channel();
            let load = scope.spawn(move || {
                loadgen::run(target, &plan, stop::flag(), &mut |_| {
                    let _ = running.send(());
                })
            });
            // The probes attach once the load has run a whole interval at its rate (a fixed
            // pause was too short on a busy machine: querystat then saw no query complete). A
            // load that fails to start ends the wait early; its error is reported below.
            let _ = first_interval.recv_timeout(std::time::Duration::from_secs(10));
            let measured =
                self.step::<querystat::experiments::Querystat>(QUERIES, &["1", "2", "--pid", &pid]);
            let load = load.join();
            (measured, load)
        });
        match measured {
            (Err(e), _) => self.skipped(step, format!("{QUERIES}: {e}")),
            (Ok(()), Ok(Err(e))) => self.skipped(step, format!("{QUERIES}: {e}")),
            (Ok(()), Err(_)) => self.skipped(step, format!("{QUERIES}: the load thread panicked")),
            (Ok(()), Ok(Ok(_))) => {}
        }
    }
}
