//! How the report's steps run: a registered experiment as a quiet, stored step
//! ([`experiment::run_step`]) whose sections go on the page, or one of the two steps that need
//! something first (a corpus file for compression, a throwaway PostgreSQL for the database). A
//! step that cannot run here (not root, no PostgreSQL, one CPU) says why in one line on the
//! page and in the terminal, and the report goes on.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

use experiment::{Context, Experiment, Globals, Shown};
use measure::{stop, Classified};
use report::html::{ReportData, SkippedSection};
use results::Recorder;
use topo::Topology;

use crate::placement::ProbedStep;
use crate::plan::{Mode, Rounds, Step, StepExperiment, DATABASE, QUERIES};

/// What a step needs.
#[derive(Debug)]
pub struct Run<'a> {
    pub mode: Mode,
    pub topology: &'a Topology,
    pub globals: &'a Globals,
    pub rec: &'a mut Recorder,
    pub data: &'a mut ReportData,
    pub cpus: usize,
    /// The steps probed for placement so far, with the parts each drew.
    pub probed: Vec<ProbedStep>,
    /// The report's round (from 1): later rounds store their runs as the step's rounds and
    /// draw nothing on the page.
    pub round: u32,
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
        let placement = ctx.take_placement();
        if self.round > 1 {
            if let Some(id) = id {
                self.data.rounds.push(report::html::RoundRun {
                    label: label.to_string(),
                    round: self.round,
                    id,
                });
            }
            return Ok(outcome);
        }
        let mut parts = outcome.parts(self.topology);
        crate::placement::label_sections(&mut parts, placement.as_ref());
        let start = self.data.parts.len();
        self.data.parts.extend(parts);
        if let Some(placement) = placement {
            let parts = start..self.data.parts.len();
            self.probed.push(ProbedStep { label: label.to_string(), placement, parts });
        }
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
        measure::say!("platscope: {} section not measured: {}", step.area.name(), section.why);
        // A step may be skipped after drawing its first section, or two steps in one place
        // (the database's two): each keeps its own id.
        let taken = |id: &str| self.data.parts.iter().any(|p| p.id == id);
        if taken(&section.id) || self.data.skipped.iter().any(|s| s.id == section.id) {
            section.id = format!("{}-skipped-{}", section.id, self.data.skipped.len());
        }
        self.data.skipped.push(section);
    }

    /// lz4 and zstd -1 with one worker per CPU on a generated corpus (written once to a temp
    /// file the compressor reads; the output is discarded), in rounds ([`Rounds`]): each
    /// round compresses the whole corpus with a fresh pipeline, one sample of each figure.
    pub fn compression(&mut self, step: &Step) {
        let sampling = Rounds::new(self.mode);
        let bytes = sampling.corpus_bytes;
        let rounds = sampling.rounds.to_string();
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
                "--rounds",
                &rounds,
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
        // Each rate's figures one sample per interval ([`Rounds::db_interval`]).
        let sampling = Rounds::new(self.mode);
        let rates = sampling.db_rates;
        let seconds = sampling.db_step.as_secs_f64().to_string();
        let interval = sampling.db_interval_arg();
        let argv = [
            "--server",
            "postgres",
            "--url",
            &conninfo,
            "--sweep-rate",
            rates,
            "--duration",
            &seconds,
            "--interval",
            &interval,
        ];
        if let Err(e) = self.step::<loadgen::experiments::Load>(DATABASE, &argv) {
            return self.skipped(step, e);
        }
        if !stop::requested() {
            let top = rates.rsplit(',').next().unwrap_or("100");
            self.queries_at(step, &target, pg.pid(), top, &sampling);
        }
        drop(pg);
    }

    /// `db querystat` on the server while a steady load runs at `rate` beside it: each
    /// query's latency histogram and who pre-empted the server's processes.
    fn queries_at(
        &mut self,
        step: &Step,
        target: &loadgen::Target,
        server_pid: u32,
        rate: &str,
        sampling: &Rounds,
    ) {
        // The load runs until querystat is done (at most a minute): however long the probes
        // take to attach on a busy machine, queries are still arriving while they trace.
        let plan = match loadgen::experiments::plan_from_argv(&["--rate", rate, "--duration", "60"])
        {
            Ok(plan) => plan,
            Err(e) => return self.skipped(step, format!("{QUERIES}: {e}")),
        };
        let pid = server_pid.to_string();
        let traced = AtomicBool::new(false);
        let measured = std::thread::scope(|scope| {
            let (running, first_interval) = std::sync::mpsc::channel();
            let traced = &traced;
            let load = scope.spawn(move || {
                loadgen::run(target, &plan, stop::flag(), &mut |_| {
                    let _ = running.send(());
                    if traced.load(Ordering::Relaxed) {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                })
            });
            // The probes attach once the load has run a whole interval at its rate (a fixed
            // pause was too short on a busy machine: querystat then saw no query complete). A
            // load that fails to start ends the wait early; its error is reported below.
            let _ = first_interval.recv_timeout(std::time::Duration::from_secs(10));
            // The mean latency one sample an interval ([`Rounds::db_intervals`] of them).
            let (interval, count) = (sampling.db_interval_arg(), sampling.db_intervals.to_string());
            let measured = self.step::<querystat::experiments::Querystat>(
                QUERIES,
                &[&interval, &count, "--pid", &pid],
            );
            traced.store(true, Ordering::Relaxed);
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

/// A step that could not run: one line on the page (in the place of the section it draws)
/// and in the terminal.
pub(crate) fn skipped_section(step: &Step, why: impl std::fmt::Display) -> SkippedSection {
    SkippedSection {
        area: step.draws.area,
        id: step.draws.id.to_string(),
        title: step.draws.title.to_string(),
        why: format!("{}: {why}", step.label),
    }
}
