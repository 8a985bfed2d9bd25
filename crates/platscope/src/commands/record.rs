//! Recording measuring runs into the results database, and turning each result type into the
//! store's metrics (every raw sample) and placements (requested and verified).

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use membench::bandwidth::{BandwidthMatrix, BandwidthResult, Scaling};
use membench::latency::{LatencyMatrix, LatencyPoint};
use membench::loaded::LoadedCurve;
use membench::slb::SlbResult;
use results::{Metric, NewRun, Store, WorkerPlacement};
use serde::Serialize;
use serde_json::{json, Value};
use topo::units::format_bytes;
use topo::Topology;

/// Where results go: `--db PATH`, the default XDG path, or nowhere (`--no-store`).
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    pub db: Option<PathBuf>,
    pub no_store: bool,
}

/// An open results database (or none), with the machine facts every run carries.
#[derive(Debug)]
pub struct Recorder {
    store: Option<Store>,
    topology: Value,
    environment: Value,
    argv: Vec<String>,
}

impl Recorder {
    /// Opens the database before anything is measured, so a bad `--db` fails fast. Without
    /// `--db`, a default location that cannot be used is a warning, not a failure.
    pub fn open(options: &StoreOptions, topology: &Topology) -> anyhow::Result<Self> {
        let store = if options.no_store {
            None
        } else if let Some(path) = &options.db {
            Some(Store::open(path)?)
        } else {
            match results::default_path().map(|p| Store::open(&p)) {
                Some(Ok(store)) => Some(store),
                Some(Err(e)) => {
                    eprintln!("platscope: warning: results not stored: {e}");
                    None
                }
                None => {
                    eprintln!("platscope: warning: results not stored: no HOME or XDG_DATA_HOME; use --db PATH");
                    None
                }
            }
        };
        Ok(Self {
            store,
            topology: serde_json::to_value(topology).context("serializing the topology")?,
            environment: serde_json::to_value(&topology.environment)
                .context("serializing the environment")?,
            argv: std::env::args().collect(),
        })
    }

    pub fn database(&self) -> Option<String> {
        self.store.as_ref().map(|s| s.path().display().to_string())
    }

    /// Records one run; returns its id when stored.
    pub fn record(
        &mut self,
        command: &str,
        result: &impl Serialize,
        metrics: Vec<Metric>,
        placements: Vec<WorkerPlacement>,
        interrupted: bool,
    ) -> anyhow::Result<Option<i64>> {
        let Some(store) = self.store.as_mut() else { return Ok(None) };
        let run = NewRun {
            command: command.to_string(),
            parameters: json!({
                "argv": self.argv,
                // The clock every batch in this run was timed with, and why it was trusted
                // (null for runs that timed nothing with it, e.g. `pagecache`).
                "clock": membench::timers::clock_in_use(),
            }),
            version: crate::cli::VERSION.to_string(),
            environment: self.environment.clone(),
            topology: self.topology.clone(),
            metrics,
            placements,
            result: serde_json::to_value(result).context("serializing the result")?,
            interrupted,
        };
        let id = store.record(&run)?;
        if std::io::stderr().is_terminal() {
            eprintln!("platscope: stored as run {id} (platscope results show {id})");
        }
        Ok(Some(id))
    }
}

fn placement(worker: String, requested: Value, verified: &impl Serialize) -> WorkerPlacement {
    WorkerPlacement {
        worker,
        requested,
        verified: serde_json::to_value(verified).unwrap_or(Value::Null),
    }
}

/// A latency figure: its samples, and where its memory was.
pub fn latency_point(point: &LatencyPoint) -> (Vec<Metric>, Vec<WorkerPlacement>) {
    let name = format!("latency {}", format_bytes(point.bytes));
    let cpu = point.cpu.map_or("cpu ?".to_string(), |c| format!("cpu {c}"));
    (
        vec![Metric::new(name, "ns", point.ns.values.clone())],
        vec![placement(cpu, json!(point.placement.requested), &point.placement)],
    )
}

/// Every point of a sweep.
pub fn latency_sweep(points: &[LatencyPoint]) -> (Vec<Metric>, Vec<WorkerPlacement>) {
    let mut metrics = Vec::new();
    let mut placements = Vec::new();
    for p in points {
        let (m, w) = latency_point(p);
        metrics.extend(m);
        placements.extend(w);
    }
    (metrics, placements)
}

/// Every cell of a latency matrix.
pub fn latency_matrix(m: &LatencyMatrix) -> (Vec<Metric>, Vec<WorkerPlacement>) {
    let mut metrics = Vec::new();
    let mut placements = Vec::new();
    for (from, row) in m.cpu_nodes.iter().zip(&m.cells) {
        for (to, cell) in m.memory_nodes.iter().zip(row) {
            metrics.push(Metric::new(
                format!("latency node {from} to node {to}"),
                "ns",
                cell.ns.values.clone(),
            ));
            placements.push(placement(
                format!("node {from} to node {to}"),
                json!(cell.placement.requested),
                &cell.placement,
            ));
        }
    }
    (metrics, placements)
}

/// One bandwidth figure: aggregate and per-thread rounds, placements per thread.
pub fn bandwidth(r: &BandwidthResult, label: &str) -> (Vec<Metric>, Vec<WorkerPlacement>) {
    let mut metrics = vec![Metric::new(
        format!("{label}{} {} GB/s", r.kernel, r.isa),
        "GB/s",
        r.aggregate_gbs.values.clone(),
    )];
    let mut placements = Vec::new();
    for t in &r.threads {
        let cpu = t.cpu.map_or("cpu ?".to_string(), |c| format!("cpu {c}"));
        metrics.push(Metric::new(
            format!("{label}{} {cpu}", r.kernel),
            "GB/s",
            t.gbs.values.clone(),
        ));
        let requested = t.placements.first().map_or(Value::Null, |p| json!(p.requested));
        placements.push(placement(format!("{label}{cpu}"), requested, &t.placements));
    }
    (metrics, placements)
}

pub fn bandwidth_matrix(m: &BandwidthMatrix) -> (Vec<Metric>, Vec<WorkerPlacement>) {
    let mut out = (Vec::new(), Vec::new());
    for (from, row) in m.cpu_nodes.iter().zip(&m.cells) {
        for (to, cell) in m.memory_nodes.iter().zip(row) {
            let (metrics, placements) = bandwidth(cell, &format!("node {from} to node {to}: "));
            out.0.extend(metrics.into_iter().take(1));
            out.1.extend(placements);
        }
    }
    out
}

pub fn bandwidth_scaling(s: &Scaling) -> (Vec<Metric>, Vec<WorkerPlacement>) {
    let mut out = (Vec::new(), Vec::new());
    for step in &s.steps {
        let (metrics, placements) = bandwidth(step, &format!("{} threads: ", step.threads.len()));
        out.0.extend(metrics.into_iter().take(1));
        out.1.extend(placements);
    }
    out
}

pub fn loaded(c: &LoadedCurve) -> (Vec<Metric>, Vec<WorkerPlacement>) {
    let mut metrics = Vec::new();
    for p in &c.points {
        let level = p.delay_cycles.map_or("idle".to_string(), |d| format!("delay {d}"));
        metrics.push(Metric::new(
            format!("loaded latency {level}"),
            "ns",
            p.latency_ns.values.clone(),
        ));
        metrics.push(Metric::new(format!("load bandwidth {level}"), "GB/s", vec![p.load_gbs]));
    }
    let mut placements = vec![placement(
        format!("chase cpu {}", c.chase_cpu),
        json!(c.chase_placement.requested),
        &c.chase_placement,
    )];
    for (cpu, p) in c.load_cpus.iter().zip(&c.load_placements) {
        let requested = p.first().map_or(Value::Null, |p| json!(p.requested));
        placements.push(placement(format!("load cpu {cpu}"), requested, p));
    }
    (metrics, placements)
}

/// An SLB run: each worker's ns/op per batch, and its memory.
pub fn slb(r: &SlbResult, label: &str) -> (Vec<Metric>, Vec<WorkerPlacement>) {
    let mut metrics = Vec::new();
    let mut placements = Vec::new();
    for w in &r.workers {
        let values = w.batches.as_ref().map_or_else(|| vec![w.ns_per_op()], |b| b.values.clone());
        metrics.push(Metric::new(format!("{label}slb worker {} ns/op", w.worker), "ns", values));
        let cpu = w.cpu.map_or("?".to_string(), |c| c.to_string());
        placements.push(placement(
            format!("{label}worker {} cpu {cpu}", w.worker),
            json!(w.placement.requested),
            &w.placement,
        ));
    }
    (metrics, placements)
}

/// Page-cache runs: read rates per file and node, and where each file's cached pages were.
pub fn pagecache<'a>(
    reports: impl Iterator<Item = &'a place::pagecache::FileReport>,
) -> (Vec<Metric>, Vec<WorkerPlacement>) {
    let mut metrics = Vec::new();
    let mut placements = Vec::new();
    for r in reports {
        for read in &r.reads {
            let passes = read.read.passes.iter().map(|p| p.gbps).collect();
            metrics.push(Metric::new(
                format!("read {} from node {}", r.path, read.node),
                "GB/s",
                passes,
            ));
        }
        let requested = r.load.as_ref().map_or(Value::Null, |l| json!(l));
        placements.push(placement(format!("page cache of {}", r.path), requested, &r.residency));
    }
    (metrics, placements)
}
