//! What each memory benchmark measured, as labelled metrics ([`measure::ToMetrics`]) with the
//! placement of every worker — the form the results store, comparisons and exporters use.
//!
//! Names and labels are stable: a comparison across platscope versions matches on them.
//! `results` maps runs recorded before labelled metrics onto the same names and labels.

use measure::{Metric, ToMetrics, Unit, WorkerPlacement};
use topo::units::format_bytes;

use crate::bandwidth::{BandwidthMatrix, BandwidthResult, Scaling};
use crate::c2c::C2cResult;
use crate::latency::{LatencyMatrix, LatencyPoint};
use crate::loaded::LoadedCurve;
use crate::slb::SlbResult;
use crate::slb_shared::SharedSlbResult;
use crate::timers::TimerReport;

// The names the exporter reads too: defined in `measure`, so it needs no benchmark to name them.
pub use measure::names::{BANDWIDTH, LATENCY, LOADED_LATENCY, LOAD_BANDWIDTH, SLB_NS_PER_OP};

/// One thread's bandwidth.
pub const THREAD_BANDWIDTH: &str = "mem_bandwidth_thread";
/// Round trip of a cache line between two CPUs, per pair.
pub const C2C_ROUND_TRIP: &str = "c2c_round_trip";
/// Round trip folded by topology class (median of pair medians).
pub const C2C_CLASS_ROUND_TRIP: &str = "c2c_class_round_trip";
/// One shared-SLB worker's nanoseconds per locked store.
pub const SLB_SHARED_NS_PER_OP: &str = "slb_shared_ns_per_op";
/// Lock hand-offs per second in a shared SLB run.
pub const SLB_LOCK_HANDOFFS: &str = "slb_lock_handoffs_per_second";
/// Jain's fairness index of lock acquisitions.
pub const SLB_LOCK_FAIRNESS: &str = "slb_lock_fairness_jain";
/// Fewest over most acquisitions.
pub const SLB_LOCK_MIN_MAX: &str = "slb_lock_fairness_min_max";
/// What one call of a timer costs.
pub const TIMER_COST: &str = "timer_cost";

fn cpu_label(cpu: Option<u32>) -> String {
    cpu.map_or("?".to_string(), |c| c.to_string())
}

impl ToMetrics for LatencyPoint {
    fn to_metrics(&self) -> Vec<Metric> {
        vec![Metric::new(LATENCY, Unit::Nanoseconds, self.ns.values.clone())
            .label("size", format_bytes(self.bytes))]
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        let worker = format!("cpu {}", cpu_label(self.cpu));
        vec![WorkerPlacement::new(worker, &self.placement.requested, &self.placement)]
    }
}

impl LatencyMatrix {
    fn cells(&self) -> impl Iterator<Item = (u32, u32, &LatencyPoint)> {
        self.cpu_nodes.iter().zip(&self.cells).flat_map(|(&from, row)| {
            self.memory_nodes.iter().zip(row).map(move |(&to, cell)| (from, to, cell))
        })
    }
}

impl ToMetrics for LatencyMatrix {
    fn to_metrics(&self) -> Vec<Metric> {
        self.cells()
            .map(|(from, to, cell)| {
                Metric::new(LATENCY, Unit::Nanoseconds, cell.ns.values.clone())
                    .label("cpu_node", from)
                    .label("mem_node", to)
            })
            .collect()
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        self.cells()
            .map(|(from, to, cell)| {
                let worker = format!("node {from} to node {to}");
                WorkerPlacement::new(worker, &cell.placement.requested, &cell.placement)
            })
            .collect()
    }
}

impl BandwidthResult {
    /// The aggregate figure alone, labelled by kernel and ISA.
    fn aggregate_metric(&self) -> Metric {
        Metric::new(BANDWIDTH, Unit::GigabytesPerSecond, self.aggregate_gbs.values.clone())
            .label("kernel", self.kernel)
            .label("isa", self.isa)
    }

    fn thread_placements(&self, prefix: &str) -> Vec<WorkerPlacement> {
        self.threads
            .iter()
            .map(|t| {
                let requested = t.placements.first().map(|p| &p.requested);
                let worker = format!("{prefix}cpu {}", cpu_label(t.cpu));
                WorkerPlacement::new(worker, &requested, &t.placements)
            })
            .collect()
    }
}

impl ToMetrics for BandwidthResult {
    fn to_metrics(&self) -> Vec<Metric> {
        let threads = self.threads.iter().map(|t| {
            Metric::new(THREAD_BANDWIDTH, Unit::GigabytesPerSecond, t.gbs.values.clone())
                .label("kernel", self.kernel)
                .label("cpu", cpu_label(t.cpu))
        });
        std::iter::once(self.aggregate_metric()).chain(threads).collect()
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        self.thread_placements("")
    }
}

impl ToMetrics for BandwidthMatrix {
    fn to_metrics(&self) -> Vec<Metric> {
        let mut out = Vec::new();
        for (from, row) in self.cpu_nodes.iter().zip(&self.cells) {
            for (to, cell) in self.memory_nodes.iter().zip(row) {
                out.push(cell.aggregate_metric().label("cpu_node", from).label("mem_node", to));
            }
        }
        out
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        let mut out = Vec::new();
        for (from, row) in self.cpu_nodes.iter().zip(&self.cells) {
            for (to, cell) in self.memory_nodes.iter().zip(row) {
                out.extend(cell.thread_placements(&format!("node {from} to node {to}: ")));
            }
        }
        out
    }
}

impl ToMetrics for Scaling {
    fn to_metrics(&self) -> Vec<Metric> {
        self.steps.iter().map(|s| s.aggregate_metric().label("threads", s.threads.len())).collect()
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        let prefix = |s: &BandwidthResult| format!("{} threads: ", s.threads.len());
        self.steps.iter().flat_map(|s| s.thread_placements(&prefix(s))).collect()
    }
}

impl ToMetrics for LoadedCurve {
    fn to_metrics(&self) -> Vec<Metric> {
        let mut out = Vec::new();
        for p in &self.points {
            let delay = p.delay_cycles.map_or("idle".to_string(), |d| d.to_string());
            out.push(
                Metric::new(LOADED_LATENCY, Unit::Nanoseconds, p.latency_ns.values.clone())
                    .label("delay", &delay),
            );
            out.push(
                Metric::new(LOAD_BANDWIDTH, Unit::GigabytesPerSecond, vec![p.load_gbs])
                    .label("delay", &delay),
            );
        }
        out
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        let chase = WorkerPlacement::new(
            format!("chase cpu {}", self.chase_cpu),
            &self.chase_placement.requested,
            &self.chase_placement,
        );
        let loads = self.load_cpus.iter().zip(&self.load_placements).map(|(cpu, p)| {
            WorkerPlacement::new(format!("load cpu {cpu}"), &p.first().map(|p| &p.requested), p)
        });
        std::iter::once(chase).chain(loads).collect()
    }
}

impl ToMetrics for SlbResult {
    fn to_metrics(&self) -> Vec<Metric> {
        self.workers
            .iter()
            .map(|w| {
                let values =
                    w.batches.as_ref().map_or_else(|| vec![w.ns_per_op()], |b| b.values.clone());
                Metric::new(SLB_NS_PER_OP, Unit::Nanoseconds, values).label("worker", w.worker)
            })
            .collect()
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        self.workers
            .iter()
            .map(|w| {
                let worker = format!("worker {} cpu {}", w.worker, cpu_label(w.cpu));
                WorkerPlacement::new(worker, &w.placement.requested, &w.placement)
            })
            .collect()
    }
}

impl ToMetrics for TimerReport {
    fn to_metrics(&self) -> Vec<Metric> {
        self.timers
            .iter()
            .map(|t| {
                Metric::new(TIMER_COST, Unit::Nanoseconds, t.ns.values.clone())
                    .label("timer", &t.name)
            })
            .collect()
    }
}

impl ToMetrics for C2cResult {
    fn to_metrics(&self) -> Vec<Metric> {
        let pairs = self.pairs.iter().map(|p| {
            Metric::new(C2C_ROUND_TRIP, Unit::Nanoseconds, p.round_trip_ns.values.clone())
                .label("mode", self.mode.name())
                .label("cpu_a", p.a)
                .label("cpu_b", p.b)
                .label("class", p.class.label())
        });
        let classes = self.classes.iter().map(|c| {
            Metric::new(C2C_CLASS_ROUND_TRIP, Unit::Nanoseconds, vec![c.median_ns])
                .label("mode", self.mode.name())
                .label("class", c.class.label())
        });
        pairs.chain(classes).collect()
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        vec![WorkerPlacement::new("line", &self.line.requested, &self.line)]
    }
}

impl ToMetrics for SharedSlbResult {
    fn to_metrics(&self) -> Vec<Metric> {
        let lock = self.plan.lock.name();
        let mut out: Vec<Metric> = self
            .workers
            .iter()
            .map(|w| {
                let values =
                    w.batches.as_ref().map_or_else(|| vec![w.ns_per_op()], |b| b.values.clone());
                Metric::new(SLB_SHARED_NS_PER_OP, Unit::Nanoseconds, values)
                    .label("lock", lock)
                    .label("worker", w.worker)
            })
            .collect();
        if let Some(h) = self.handoffs_per_sec() {
            out.push(Metric::new(SLB_LOCK_HANDOFFS, Unit::PerSecond, vec![h]).label("lock", lock));
        }
        if let Some(f) = &self.fairness {
            out.push(Metric::new(SLB_LOCK_FAIRNESS, Unit::Ratio, vec![f.jain]).label("lock", lock));
            out.push(
                Metric::new(SLB_LOCK_MIN_MAX, Unit::Ratio, vec![f.min_max_ratio])
                    .label("lock", lock),
            );
        }
        out
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        vec![WorkerPlacement::new("shared region", &self.region.requested, &self.region)]
    }
}
