//! The report's sections beyond memory: each runs registered experiments as quiet, stored
//! steps ([`experiment::run_step`]) and puts the sections their outcomes draw on the page. A
//! section that cannot run here (not root, no PostgreSQL, one CPU) says why in one line on the
//! page and in the terminal, and the report goes on.

use std::str::FromStr;

use chart::Area;
use experiment::{run_step, Context, Experiment, Globals, Outcome};
use measure::progress::Steps;
use measure::{stop, Classified};
use report::html::{ReportData, SkippedSection};
use results::Recorder;
use topo::Topology;

use crate::characterise::Mode;

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

    fn area(self) -> Area {
        match self {
            Section::Memory => Area::Memory,
            Section::Contention => Area::Contention,
            Section::Cpu => Area::Cpu,
            Section::Compression => Area::Compression,
            Section::Allocators => Area::Allocators,
            Section::Database => Area::Database,
            Section::Network => Area::Network,
        }
    }

    /// The steps this section runs, with their expected seconds on `cpus` CPUs (the progress
    /// bar's weights, and what the budgets are checked against).
    pub fn steps(self, mode: Mode, cpus: usize) -> Vec<(&'static str, f64)> {
        let full = if mode == Mode::Full { 4.0 } else { 1.0 };
        let n = cpus as f64;
        match self {
            // The memory steps are characterise's own.
            Section::Memory => Vec::new(),
            Section::Contention => vec![
                (C2C, (n * (n - 1.0) / 2.0) * 0.15 * full + 0.5),
                (LOCKS, 4.0 * (n.log2().ceil() + 1.0) * 0.3 * full),
            ],
            Section::Cpu => vec![(SCALE, 4.0 * full), (TIMER, 1.0)],
            Section::Compression => vec![(COMPRESS, 2.0 * full)],
            Section::Allocators => vec![(ALLOC, 8.0 * full)],
            Section::Database => vec![(DATABASE, 12.0 * full), (QUERIES, 5.0)],
            Section::Network => vec![(NETWORK, 1.0)],
        }
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

pub const C2C: &str = "core to core";
pub const LOCKS: &str = "lock contention";
pub const SCALE: &str = "throughput by threads and units";
const TIMER: &str = "the timer's cost";
const COMPRESS: &str = "lz4 and zstd -1 over every CPU";
const ALLOC: &str = "every installed allocator";
const DATABASE: &str = "a throwaway PostgreSQL 15: a rate sweep";
const QUERIES: &str = "query latency and pre-emption at the top rate";
const NETWORK: &str = "network links";

/// What a section step needs.
#[derive(Debug)]
pub struct Run<'a> {
    pub mode: Mode,
    pub topology: &'a Topology,
    pub globals: &'a Globals,
    pub rec: &'a mut Recorder,
    pub progress: &'a Steps,
    pub data: &'a mut ReportData,
    pub cpus: usize,
}

impl Run<'_> {
    /// Runs experiment `E` with `argv` as a stored step of the report: its sections go on the
    /// page, its run id into the report's list (so `--from-db` and `--baseline` find it).
    fn step<E: Experiment>(&mut self, label: &str, argv: &[&str]) -> Result<(), Classified> {
        let mut ctx = Context::new(self.topology, self.globals, self.rec);
        let (outcome, id) = run_step::<E>(&mut ctx, argv)?;
        self.data.parts.extend(outcome.parts(self.topology));
        if let Some(id) = id {
            self.data.stored_runs.push((label.to_string(), id));
        }
        Ok(())
    }

    /// A section that did not run (or only in part): one line on the page and in the terminal.
    fn skipped(&mut self, section: Section, step: &str, why: impl std::fmt::Display) {
        let why = format!("{step}: {why}");
        measure::say!("platscope: {} section not measured: {why}", section.name());
        self.data.skipped.push(SkippedSection {
            area: section.area(),
            id: format!("chart-{}-skipped-{}", section.name(), self.data.skipped.len()),
            title: section.area().title().to_string(),
            why,
        });
    }

    /// Runs `section`'s steps (memory and the c2c/lock steps are characterise's own).
    pub fn section(&mut self, section: Section) {
        match section {
            Section::Memory | Section::Contention => {}
            Section::Cpu => self.cpu(),
            Section::Compression => self.compression(),
            Section::Allocators => self.allocators(),
            Section::Database => self.database(),
            Section::Network => self.network(),
        }
    }

    fn cpu(&mut self) {
        if !stop::requested() {
            self.progress.begin_named(SCALE);
            let size = if self.mode == Mode::Full { "128MiB" } else { "16MiB" };
            if let Err(e) = self.step::<tamp::experiments::CpuScale>(SCALE, &["--size", size]) {
                self.skipped(Section::Cpu, SCALE, e);
            }
        }
        if !stop::requested() {
            self.progress.begin_named(TIMER);
            let batches = if self.mode == Mode::Full { "200" } else { "40" };
            if let Err(e) =
                self.step::<membench::experiments::timer::Timer>(TIMER, &["--batches", batches])
            {
                self.skipped(Section::Cpu, TIMER, e);
            }
        }
    }

    /// lz4 and zstd -1 with one worker per CPU on a generated corpus (written once to a temp
    /// file the compressor reads; the output is discarded).
    fn compression(&mut self) {
        if stop::requested() {
            return;
        }
        self.progress.begin_named(COMPRESS);
        let bytes: usize = if self.mode == Mode::Full { 256 << 20 } else { 32 << 20 };
        let dir = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => return self.skipped(Section::Compression, COMPRESS, e),
        };
        let path = dir.path().join("corpus.tsv");
        let input = tamp::corpus::generate(tamp::corpus::DEFAULT_SEED, bytes);
        if let Err(e) = std::fs::write(&path, &input) {
            return self.skipped(Section::Compression, COMPRESS, e);
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
                self.skipped(Section::Compression, &label, e);
            }
        }
    }

    fn allocators(&mut self) {
        if stop::requested() {
            return;
        }
        self.progress.begin_named(ALLOC);
        let threads = if self.cpus > 1 { format!("1,{}", self.cpus) } else { "1".into() };
        let (repeat, ops) =
            if self.mode == Mode::Full { ("3", "2000000") } else { ("1", "300000") };
        let argv = ["--threads", &threads, "--repeat", repeat, "--ops", ops];
        if let Err(e) = self.step::<allocbench::experiments::Alloc>(ALLOC, &argv) {
            self.skipped(Section::Allocators, ALLOC, e);
        }
    }

    /// A throwaway PostgreSQL 15 (Debian's, started as `postgres` in a temp dir on a private
    /// socket, stopped by PID when dropped): the sysbench-style tables, then a short sweep of
    /// steady rates with latency from the schedule and the server's CPU per transaction.
    fn database(&mut self) {
        if stop::requested() {
            return;
        }
        self.progress.begin_named(DATABASE);
        let pg = match scratchdb::Postgres::start(&scratchdb::PgOptions::default()) {
            Ok(pg) => pg,
            Err(e) => return self.skipped(Section::Database, DATABASE, e),
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
            return self.skipped(Section::Database, DATABASE, e);
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
            return self.skipped(Section::Database, DATABASE, e);
        }
        if !stop::requested() {
            self.queries_at(&target, pg.pid(), rates.rsplit(',').next().unwrap_or("100"));
        }
        drop(pg);
    }

    /// `db querystat` on the server while a steady load runs at `rate` beside it: each
    /// query's latency histogram and who pre-empted the server's processes.
    fn queries_at(&mut self, target: &loadgen::Target, server_pid: u32, rate: &str) {
        self.progress.begin_named(QUERIES);
        let plan = match loadgen::experiments::plan_from_argv(&["--rate", rate, "--duration", "6"])
        {
            Ok(plan) => plan,
            Err(e) => return self.skipped(Section::Database, QUERIES, e),
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
            (Err(e), _) => self.skipped(Section::Database, QUERIES, e),
            (Ok(()), Ok(Err(e))) => self.skipped(Section::Database, QUERIES, e),
            (Ok(()), Err(_)) => {
                self.skipped(Section::Database, QUERIES, "the load thread panicked")
            }
            (Ok(()), Ok(Ok(_))) => {}
        }
    }

    fn network(&mut self) {
        if stop::requested() {
            return;
        }
        self.progress.begin_named(NETWORK);
        if let Err(e) = self.step::<nicstat::links::Links>(NETWORK, &["--seconds", "1"]) {
            self.skipped(Section::Network, NETWORK, e);
        }
    }
}
