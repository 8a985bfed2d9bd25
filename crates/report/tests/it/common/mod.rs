//! Shared by the HTML report tests: a hand-built report of a two-node machine (the outcomes of
//! the steps `platscope report` runs, each drawing its own sections), and a small tag scanner
//! to read data marks back from the page (ours, or the DOM Chromium built).
#![allow(dead_code)]

use experiment::Outcome as _;
use measure::summary::{summarize, Summary};
use membench::bandwidth::{BandwidthMatrix, BandwidthResult, Scaling, ThreadResult};
use membench::c2c::{fold_classes, fold_nodes, pair_class, C2cMode, C2cPair, C2cResult};
use membench::experiments::bandwidth::{BandwidthOutcome, BandwidthScale};
use membench::experiments::latency::{LatencyMatrixRun, LatencyOutcome, LatencySweep};
use membench::experiments::slb::{LocksOutcome, PoliciesOutcome, PolicyRow, ScaleOutcome};
use membench::kernels::bandwidth::{Isa, Kernel};
use membench::latency::{LatencyMatrix, LatencyPoint, PrefetchCheck};
use membench::loaded::{LoadMix, LoadedCurve, LoadedPoint};
use membench::slb::{SlbPlan, SlbResult, SlbWorkerResult, SlbWorkerSpec};
use membench::slb_shared::{
    fairness, LockKind, SharedSlbPlan, SharedSlbResult, SharedWorkerResult,
};
use place::{MemPolicy, NodePages, PageSize, Placement};
use report::html::{area_anchor, ReportData};
use tamp::scale::ScaleReport;
use topo::{Cache, CacheKind, Cpu, Distances, Environment, Governor, Machine, Node, Topology};

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * KIB;
pub const GIB: u64 = 1024 * MIB;

/// A CPU model that would break the page if it were not escaped.
pub const NASTY_MODEL: &str = "Xeon <Test> & \"Co\" 'quoted'";
/// A note that would run a script if it were not escaped.
pub const NASTY_NOTE: &str = "prefetch self-check: <script>alert(\"x\")</script> & more";
pub const REMOTE_SKIPPED: &str = "skipped: every worker's node is the only node with memory <&>";

/// A distribution around `median`: best 3% lower, p99 15% higher, max 20% higher.
pub fn spread(median: f64, noisy: bool) -> Summary {
    Summary {
        samples: 20,
        min: median * 0.97,
        median,
        p99: median * 1.15,
        max: median * 1.2,
        mean: median * 1.01,
        iqr_ratio: if noisy { 0.08 } else { 0.02 },
        noisy,
        values: vec![median * 0.97, median, median * 1.2],
    }
}

pub fn on_node(node: u32, bytes: u64) -> Placement {
    Placement {
        requested: MemPolicy::Bind(vec![node]),
        page: PageSize::Base,
        bytes,
        page_bytes: 4096,
        per_node: vec![NodePages { node, pages: bytes / 4096 }],
        not_present: 0,
        thp_bytes: None,
        thp_source: None,
        thp_mode: None,
    }
}
fn cache(level: u8, kind: CacheKind, size_bytes: u64, cpus: Vec<u32>) -> Cache {
    Cache {
        level,
        kind,
        size_bytes,
        line_bytes: Some(64),
        associativity: Some(12),
        cpus,
        sets: None,
    }
}

/// Two nodes of two CPUs each; L1d 48 KiB and L2 1.25 MiB per CPU, L3 24 MiB per node.
pub fn topology(model: &str) -> Topology {
    let mut caches = Vec::new();
    for cpu in 0..4 {
        caches.push(cache(1, CacheKind::Data, 48 * KIB, vec![cpu]));
    }
    for cpu in 0..4 {
        caches.push(cache(2, CacheKind::Unified, 1280 * KIB, vec![cpu]));
    }
    caches.push(cache(3, CacheKind::Unified, 24 * MIB, vec![0, 1]));
    caches.push(cache(3, CacheKind::Unified, 24 * MIB, vec![2, 3]));
    Topology {
        source: "live".into(),
        machine: Machine {
            architecture: Some("x86_64".into()),
            cpu_vendor: Some("GenuineIntel".into()),
            cpu_model: Some(model.into()),
            packages: 2,
            cores: 4,
            ..Machine::default()
        },
        nodes: (0..2)
            .map(|id| Node {
                id,
                cpus: vec![2 * id, 2 * id + 1],
                memory_only: false,
                total_bytes: 8 * GIB,
                memory: None,
                hugepages: Vec::new(),
            })
            .collect(),
        cpus: (0..4)
            .map(|id| Cpu {
                id,
                online: true,
                node: Some(id / 2),
                package: Some(id / 2),
                core: Some(id),
                smt_siblings: vec![id],
            })
            .collect(),
        caches,
        distances: Some(Distances { nodes: vec![0, 1], matrix: vec![vec![10, 21], vec![21, 10]] }),
        hmat: Vec::new(),
        environment: Some(Environment {
            kernel: Some("6.1.0-28-amd64".into()),
            page_bytes: 4096,
            thp_enabled: Some("madvise".into()),
            thp_defrag: Some("defer+madvise".into()),
            numa_balancing: Some("0".into()),
            zone_reclaim_mode: Some("0".into()),
            clocksource: Some("tsc".into()),
            available_clocksources: vec!["tsc".into(), "hpet".into(), "acpi_pm".into()],
            governors: vec![Governor { name: "performance".into(), cpus: vec![0, 1, 2, 3] }],
            smt_control: Some("notsupported".into()),
            hypervisor: Some("KVM".into()),
            system: Some("QEMU Standard PC (Q35 + ICH9, 2009)".into()),
            hugepages: Vec::new(),
            machine_memory_bytes: Some(16 * GIB),
            ..Environment::default()
        }),
    }
}

pub fn latency_point(bytes: u64, ns: f64, node: u32, cpu: u32, noisy: bool) -> LatencyPoint {
    LatencyPoint {
        bytes,
        ns: spread(ns, noisy),
        cycles: Some(ns * 3.1),
        cpu: Some(cpu),
        placement: on_node(node, bytes),
        loads: 1_000_000,
    }
}

/// The sweep: 10 sizes from 16 KiB to 512 MiB, L1 to DRAM; one noisy point.
pub const SWEEP: [(u64, f64); 10] = [
    (16 * KIB, 1.21),
    (32 * KIB, 1.29),
    (64 * KIB, 3.93),
    (256 * KIB, 4.18),
    (MIB, 11.52),
    (4 * MIB, 14.81),
    (16 * MIB, 38.3),
    (64 * MIB, 85.07),
    (256 * MIB, 96.4),
    (512 * MIB, 98.25),
];
pub const LATENCY_MATRIX: [[f64; 2]; 2] = [[92.5, 148.04], [151.2, 93.11]];
pub const BANDWIDTH_MATRIX: [[f64; 2]; 2] = [[18.4, 9.71], [9.52, 18.93]];
pub const SCALING: [f64; 4] = [9.8, 17.52, 21.03, 21.61];
/// (delay cycles, load GB/s, latency ns); `None` is the idle point.
pub const LOADED: [(Option<u64>, f64, f64); 5] = [
    (Some(0), 21.04, 241.3),
    (Some(400), 15.22, 160.7),
    (Some(1600), 6.13, 112.9),
    (Some(6400), 1.81, 101.2),
    (None, 0.02, 98.4),
];

pub fn bandwidth(gbs: f64, threads: &[u32], node: u32) -> BandwidthResult {
    let each = gbs / threads.len() as f64;
    BandwidthResult {
        kernel: Kernel::Read,
        isa: Isa::Avx2,
        walk: Default::default(),
        isa_trial: Vec::new(),
        accounting: "bytes read".into(),
        bytes_per_thread: 96 * MIB,
        aggregate_gbs: spread(gbs, false),
        threads: threads
            .iter()
            .map(|&cpu| ThreadResult {
                cpu: Some(cpu),
                gbs: spread(each, false),
                placements: vec![on_node(node, 96 * MIB)],
            })
            .collect(),
        interrupted: false,
        size_check: None,
    }
}

/// An SLB run whose worker `k` took `ns[k]` per store.
pub fn slb(ns: &[f64], policy: MemPolicy) -> SlbResult {
    let ops = 4096 * 64;
    SlbResult {
        plan: SlbPlan {
            pages: 4096,
            loops: 64,
            page: PageSize::Base,
            workers: (0..ns.len() as u32)
                .map(|cpu| SlbWorkerSpec { cpu: Some(cpu), policy: policy.clone() })
                .collect(),
            seed: 0x51B,
        },
        workers: ns
            .iter()
            .enumerate()
            .map(|(k, &ns)| SlbWorkerResult {
                worker: k,
                cpu: Some(k as u32),
                ops,
                planned_ops: ops,
                elapsed_ns: (ns * ops as f64).round() as u64,
                batches: Some(spread(ns, false)),
                placement: on_node(k as u32 / 2, 16 * MIB),
            })
            .collect(),
        interrupted: false,
    }
}

pub const SLB_SCALING: [&[f64]; 3] = [&[52.0], &[55.5, 57.25], &[61.0, 64.5, 60.25, 70.0]];
pub const SLB_LOCAL: [f64; 4] = [60.5, 62.0, 61.25, 63.0];
pub const SLB_INTERLEAVE: [f64; 4] = [88.0, 90.5, 87.25, 91.0];

/// What a two-node machine's `platscope report` could have measured: each step's outcome as
/// its experiment returns it, and the page around them (`data`, whose `parts` [`Sample::page`]
/// fills from the outcomes).
#[derive(Debug, Clone)]
pub struct Sample {
    /// The page without its sections: machine, notes, stored runs, skipped steps.
    pub data: ReportData,
    /// `mem latency --sweep --prefetch-check`: smallest size first (none: not run).
    pub latency_sweep: Vec<LatencyPoint>,
    pub prefetch_check: Option<PrefetchCheck>,
    /// `mem latency --matrix`.
    pub latency_matrix: Option<LatencyMatrix>,
    /// `mem bandwidth --matrix`.
    pub bandwidth_matrix: Option<BandwidthMatrix>,
    /// `mem bandwidth --scale`.
    pub bandwidth_scaling: Option<Scaling>,
    /// `mem bandwidth --kernel copy,copy-nt` (none: not run).
    pub copy_bandwidth: Vec<BandwidthResult>,
    /// `mem loaded-latency`.
    pub loaded_latency: Option<LoadedCurve>,
    /// `mem scale`: SLB at 1, 2, 4 … workers (none: not run).
    pub slb_scaling: Vec<SlbResult>,
    /// `mem compare-policies`: (policy, run or why it was skipped) (none: not run).
    pub slb_policies: Vec<(String, Result<SlbResult, String>)>,
    /// `mem c2c` (`report --full`).
    pub c2c: Option<C2cResult>,
    /// `mem locks` (`report --full`): lock by worker count, then the spinlock's placements
    /// (both empty: not run).
    pub contention: Vec<SharedSlbResult>,
    pub lock_placement: Vec<(String, Result<SharedSlbResult, String>)>,
    /// `cpu scale` (`report --full`).
    pub cpu_scale: Option<ScaleReport>,
}

impl Sample {
    /// The page: `data` with the sections every outcome draws (`Outcome::parts`), in the order
    /// `platscope report` runs the steps; a step not run draws nothing.
    pub fn page(&self) -> ReportData {
        let t = &self.data.topology;
        let mut parts = Vec::new();
        if !self.latency_sweep.is_empty() {
            parts.extend(
                LatencyOutcome::Sweep(LatencySweep {
                    points: self.latency_sweep.clone(),
                    prefetch_check: self.prefetch_check,
                    interrupted: false,
                    caches: t.caches.clone(),
                })
                .parts(t),
            );
        }
        if let Some(matrix) = &self.latency_matrix {
            let run = LatencyMatrixRun { matrix: matrix.clone(), distances: t.distances.clone() };
            parts.extend(LatencyOutcome::Matrix(run).parts(t));
        }
        if let Some(m) = &self.bandwidth_matrix {
            parts.extend(BandwidthOutcome::Matrix(m.clone()).parts(t));
        }
        if let Some(s) = &self.bandwidth_scaling {
            let scale =
                BandwidthScale { scaling: s.clone(), peak: None, interrupted: s.interrupted };
            parts.extend(BandwidthOutcome::Scale(scale).parts(t));
        }
        if !self.copy_bandwidth.is_empty() {
            parts.extend(BandwidthOutcome::Kernels(self.copy_bandwidth.clone()).parts(t));
        }
        if let Some(curve) = &self.loaded_latency {
            parts.extend(curve.parts(t));
        }
        if !self.slb_scaling.is_empty() {
            let scale = ScaleOutcome { runs: self.slb_scaling.clone(), interrupted: false };
            parts.extend(scale.parts(t));
        }
        if !self.slb_policies.is_empty() {
            parts.extend(policies(&self.slb_policies).parts(t));
        }
        if let Some(c2c) = &self.c2c {
            parts.extend(c2c.parts(t));
        }
        if !self.contention.is_empty() || !self.lock_placement.is_empty() {
            let locks = LocksOutcome {
                runs: self.contention.clone(),
                placement: self.lock_placement.clone(),
                failed: None,
                interrupted: false,
            };
            parts.extend(locks.parts(t));
        }
        if let Some(scale) = &self.cpu_scale {
            parts.extend(scale.parts(t));
        }
        let mut data = self.data.clone();
        data.parts = parts;
        data
    }
}

/// `mem compare-policies`' outcome from (policy, run or why it was skipped).
pub fn policies(list: &[(String, Result<SlbResult, String>)]) -> PoliciesOutcome {
    let rows = list
        .iter()
        .map(|(policy, outcome)| PolicyRow {
            policy: policy.clone(),
            result: outcome.as_ref().ok().cloned(),
            skipped: outcome.as_ref().err().cloned(),
        })
        .collect();
    PoliciesOutcome { rows, interrupted: false }
}

/// What a two-node machine's `platscope report --quick` could have measured.
pub fn sample() -> Sample {
    let sweep: Vec<LatencyPoint> = SWEEP
        .iter()
        .enumerate()
        .map(|(i, &(bytes, ns))| latency_point(bytes, ns, 0, 0, i == 6))
        .collect();
    let latency_matrix = LatencyMatrix {
        bytes: 256 * MIB,
        cpu_nodes: vec![0, 1],
        memory_nodes: vec![0, 1],
        cells: (0..2u32)
            .map(|i| {
                (0..2u32)
                    .map(|j| {
                        latency_point(
                            256 * MIB,
                            LATENCY_MATRIX[i as usize][j as usize],
                            j,
                            2 * i,
                            false,
                        )
                    })
                    .collect()
            })
            .collect(),
    };
    let bandwidth_matrix = BandwidthMatrix {
        cpu_nodes: vec![0, 1],
        memory_nodes: vec![0, 1],
        threads_per_cell: 2,
        cells: (0..2u32)
            .map(|i| {
                (0..2u32)
                    .map(|j| {
                        bandwidth(BANDWIDTH_MATRIX[i as usize][j as usize], &[2 * i, 2 * i + 1], j)
                    })
                    .collect()
            })
            .collect(),
        interrupted: false,
    };
    let cpus = [0, 2, 1, 3];
    let scaling = Scaling {
        steps: SCALING.iter().enumerate().map(|(i, &gbs)| bandwidth(gbs, &cpus[..=i], 0)).collect(),
        saturated_at: Some(3),
        interrupted: false,
        size_checks: Vec::new(),
    };
    let loaded = LoadedCurve {
        mix: LoadMix::Reads,
        kernel: Kernel::Read,
        isa: Isa::Avx2,
        accounting: "bytes read".into(),
        chase_cpu: 0,
        load_cpus: vec![1, 2, 3],
        chase_placement: on_node(0, 256 * MIB),
        load_placements: Vec::new(),
        points: LOADED
            .iter()
            .map(|&(delay_cycles, load_gbs, ns)| LoadedPoint {
                delay_cycles,
                load_gbs,
                latency_ns: spread(ns, false),
            })
            .collect(),
        interrupted: false,
        delay_caveat: None,
    };
    Sample {
        data: ReportData {
            mode: "quick".into(),
            generated_at: "2025-01-31T12:34:56Z".into(),
            version: "0.1.0 (abc1234)".into(),
            topology: topology(NASTY_MODEL),
            stored_runs: vec![
                ("latency by size".into(), 41),
                ("node×node latency".into(), 42),
                ("node×node bandwidth".into(), 43),
                ("bandwidth by threads".into(), 44),
                ("loaded latency".into(), 45),
                ("SLB by workers".into(), 46),
                ("SLB by placement".into(), 47),
            ],
            rounds: Vec::new(),
            clock_ghz: Vec::new(),
            database: Some("/home/dba/.local/share/platscope/results.sqlite".into()),
            notes: vec![report::html::Note::new(
                report::html::Section::of(membench::chart::LATENCY_SIZE),
                NASTY_NOTE,
            )],
            parts: Vec::new(),
            skipped: Vec::new(),
            comparison: None,
            placement: None,
        },
        latency_sweep: sweep,
        prefetch_check: Some(PrefetchCheck {
            bytes: 512 * MIB,
            random_ns: 98.25,
            sequential_ns: 6.1,
            ratio: 98.25 / 6.1,
            defeated: true,
        }),
        latency_matrix: Some(latency_matrix),
        bandwidth_matrix: Some(bandwidth_matrix),
        bandwidth_scaling: Some(scaling),
        copy_bandwidth: [(Kernel::Copy, 14.5), (Kernel::CopyNt, 19.5)]
            .into_iter()
            .map(|(kernel, gbs)| BandwidthResult { kernel, ..bandwidth(gbs, &cpus, 0) })
            .collect(),
        loaded_latency: Some(loaded),
        slb_scaling: SLB_SCALING.iter().map(|ns| slb(ns, MemPolicy::Inherit)).collect(),
        slb_policies: vec![
            ("local".into(), Ok(slb(&SLB_LOCAL, MemPolicy::Local))),
            ("interleave".into(), Ok(slb(&SLB_INTERLEAVE, MemPolicy::Interleave(vec![0, 1])))),
            ("remote".into(), Err(REMOTE_SKIPPED.into())),
        ],
        c2c: None,
        contention: Vec::new(),
        lock_placement: Vec::new(),
        cpu_scale: None,
    }
}

/// The cache-line round trip between every pair of the sample machine's four CPUs: pair
/// (a, b) takes 100 + 10a + b ns, its line on node 1.
pub fn c2c(t: &Topology) -> C2cResult {
    let mut pairs = Vec::new();
    for a in 0..4u32 {
        for b in a + 1..4 {
            let ns = 100.0 + 10.0 * f64::from(a) + f64::from(b);
            let round_trip_ns = summarize(&[ns * 0.99, ns, ns * 1.3]).expect("samples");
            pairs.push(C2cPair {
                a,
                b,
                class: pair_class(t, a, b),
                round_trip_ns,
                batch_rounds: 900,
                lines: Vec::new(),
                line_spread: None,
            });
        }
    }
    C2cResult {
        mode: C2cMode::Read,
        cpus: vec![0, 1, 2, 3],
        line_on: Some(1),
        line: on_node(1, 4096),
        classes: fold_classes(&pairs),
        nodes: fold_nodes(&pairs, t),
        pairs,
        interrupted: false,
    }
}

/// A shared-memory SLB run with `lock` whose `workers` each took `ns` per operation.
pub fn contention(lock: LockKind, workers: usize, ns: f64) -> SharedSlbResult {
    let w: Vec<SharedWorkerResult> = (0..workers)
        .map(|i| SharedWorkerResult {
            worker: i,
            cpu: Some(i as u32),
            ops: 1000,
            planned_ops: 1000,
            elapsed_ns: (ns * 1000.0) as u64,
            batches: None,
            handoffs: 10,
            contended_ops: 500 + 100 * i as u64,
        })
        .collect();
    let counts: Vec<u64> = w.iter().map(|w| w.contended_ops).collect();
    SharedSlbResult {
        plan: SharedSlbPlan {
            pages: 16,
            loops: 10,
            counters: 1,
            lock,
            cpus: (0..workers as u32).map(Some).collect(),
            policy: MemPolicy::Inherit,
            seed: 1,
        },
        ops_total: 1000 * workers as u64,
        counters_total: 1000 * workers as u64,
        workers: w,
        region: on_node(0, 20 * 4096),
        wall_ns: 1_000_000,
        fairness: fairness(&counts),
        interrupted: false,
    }
}

/// `cpu scale`: one step per (units, threads, MB/s, busy CPUs).
pub fn cpu_scale(steps: &[(usize, usize, f64, usize)]) -> ScaleReport {
    use tamp::procstat::MachineBusy;
    use tamp::scale::{ScaleStep, ScaleSummary};
    use tamp::Verdict;
    let step = |&(units, threads, mb_per_s, busy): &(usize, usize, f64, usize)| ScaleStep {
        units,
        threads,
        bytes: 1 << 26,
        wall_s: 0.5,
        mb_per_s,
        ratio: 0.5,
        reader_busy: 0.5,
        workers_busy: 0.9,
        writer_busy: 0.1,
        machine: Some(MachineBusy {
            per_cpu: vec![(0, 0.95), (1, 0.5)],
            machine_share: 0.72,
            cpus_busy: busy,
        }),
        online_cpus: 2,
        verdict: if busy == 2 { Verdict::CpuBound } else { Verdict::Scales },
        verdict_reason: "<why>".into(),
        rounds_mb_per_s: Vec::new(),
    };
    ScaleReport {
        codec: "lz4".into(),
        level: Some(1),
        input_bytes: 1 << 26,
        block_size: 256 << 10,
        steps: steps.iter().map(step).collect(),
        summary: ScaleSummary {
            single_thread_mb_s: Some(310.5),
            one_unit_best: Some((2, 402.25)),
            one_unit_stops_at: None,
            one_unit_limit: None,
            filled_best: Some((1, 2, 402.25)),
            machine_limit: None,
            text: "one thread 310 MB/s".into(),
        },
        interrupted: false,
    }
}

/// The sample as `platscope report --full` measures it: with core to core, lock contention
/// (and the spinlock's placements) and CPU scaling.
pub fn full_sample() -> Sample {
    let mut s = sample();
    s.data.mode = "full".into();
    s.c2c = Some(c2c(&s.data.topology));
    s.contention = vec![
        contention(LockKind::Spin, 1, 50.0),
        contention(LockKind::Spin, 2, 180.0),
        contention(LockKind::Ticket, 2, 220.0),
    ];
    s.lock_placement = vec![
        ("line local".into(), Ok(contention(LockKind::Spin, 2, 190.0))),
        ("line remote".into(), Err("skipped: one node <&>".into())),
    ];
    s.cpu_scale = Some(cpu_scale(&[(1, 1, 310.5, 1), (1, 2, 402.25, 2), (2, 1, 398.0, 2)]));
    s
}

/// The measured values each chart must carry, sorted.
pub fn expected(s: &Sample, chart: &str) -> Vec<f64> {
    let mut values: Vec<f64> = match chart {
        "chart-latency-size" => s.latency_sweep.iter().map(|p| p.ns.median).collect(),
        "chart-latency-matrix" => s
            .latency_matrix
            .iter()
            .flat_map(|m| m.cells.iter().flatten().map(|c| c.ns.median))
            .collect(),
        "chart-bandwidth-matrix" => s
            .bandwidth_matrix
            .iter()
            .flat_map(|m| m.cells.iter().flatten().map(|c| c.aggregate_gbs.median))
            .collect(),
        "chart-bandwidth-threads" => s
            .bandwidth_scaling
            .iter()
            .flat_map(|s| s.steps.iter().map(|r| r.aggregate_gbs.median))
            .collect(),
        "chart-bandwidth-kernels" => {
            s.copy_bandwidth.iter().map(|r| r.aggregate_gbs.median).collect()
        }
        "chart-loaded-latency" => s
            .loaded_latency
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.latency_ns.median))
            .collect(),
        "chart-slb" => {
            s.slb_scaling.iter().flat_map(|r| r.workers.iter().map(|w| w.ns_per_op())).collect()
        }
        "chart-slb-policies" => s
            .slb_policies
            .iter()
            .filter_map(|(_, r)| r.as_ref().ok())
            .flat_map(|r| r.workers.iter().map(|w| w.ns_per_op()))
            .collect(),
        other => panic!("unknown chart {other}"),
    };
    values.sort_by(f64::total_cmp);
    values
}

/// The sample's SVG charts, in page order (the copy kernels are a table:
/// `sec-bandwidth-kernels`, between the thread scaling and the loaded latency).
pub const CHARTS: [&str; 7] = [
    "chart-latency-size",
    "chart-latency-matrix",
    "chart-bandwidth-matrix",
    "chart-bandwidth-threads",
    "chart-loaded-latency",
    "chart-slb",
    "chart-slb-policies",
];

/// A headline card at the top of the page, unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    pub label: String,
    pub figure: String,
    pub how: String,
}

/// The text between the first `open` at or after `from` and the next `close`.
pub fn between<'a>(html: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = html.find(open)? + open.len();
    let end = html[start..].find(close)? + start;
    Some(&html[start..end])
}

/// The headline cards (`<section class="summary" id="headlines">`), in page order.
pub fn cards(html: &str) -> Vec<Card> {
    let summary = between(html, "<section class=\"summary\"", "</section>").expect("summary");
    summary
        .split("<div class=\"card\">")
        .skip(1)
        .map(|card| {
            let field = |class: &str| {
                let open = format!("<div class=\"{class}\">");
                unescape(between(card, &open, "</div>").expect("card field"))
            };
            Card { label: field("label"), figure: field("figure"), how: field("how") }
        })
        .collect()
}

/// The (name, value) of each headline figure under an area's heading, unescaped; `None` when
/// the page has no heading for the area.
pub fn area_figures(html: &str, area: chart::Area) -> Option<Vec<(String, String)>> {
    let open = format!("<div class=\"area-head\" id=\"{}\">", area_anchor(area));
    let head = between(html, &open, "</div>")?;
    Some(
        head.split("<li>")
            .skip(1)
            .map(|li| {
                let name = between(li, "<span class=\"label\">", "</span>").expect("name");
                let value = between(li, "<b>", "</b>").expect("value");
                (unescape(name), unescape(value))
            })
            .collect(),
    )
}

/// What the cards at the top show: each section's first headline figure, in page order.
pub fn expected_cards(data: &ReportData) -> Vec<Card> {
    data.sections()
        .into_iter()
        .filter_map(|p| p.headlines.into_iter().next())
        .map(|h| Card { label: h.name, figure: h.value, how: h.detail })
        .collect()
}

/// The HTML of the section with this id (`sec-…`), up to its end.
pub fn section<'a>(html: &'a str, id: &str) -> Option<&'a str> {
    let start = html.find(&format!("<section id=\"{id}\""))?;
    let end = html[start..].find("</section>")? + start;
    Some(&html[start..end])
}

/// A start or end tag.
#[derive(Debug, Clone, PartialEq)]
pub struct Tag {
    pub name: String,
    pub closing: bool,
    pub self_closing: bool,
    pub attrs: Vec<(String, String)>,
}

impl Tag {
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn has_class(&self, class: &str) -> bool {
        self.attr("class").is_some_and(|c| c.split_whitespace().any(|w| w == class))
    }
}

/// Every tag of an HTML document, in order, attributes unescaped for `&amp; &lt; &gt; &quot;`.
/// Enough HTML for our page and for Chromium's serialization of it: quoted attribute values
/// (which may hold `>`), comments and the doctype skipped, `<style>` content skipped.
pub fn tags(html: &str) -> Vec<Tag> {
    let bytes = html.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(offset) = html[i..].find('<') {
        i += offset;
        if html[i..].starts_with("<!--") {
            i = html[i..].find("-->").map_or(html.len(), |e| i + e + 3);
            continue;
        }
        if html[i..].starts_with("<!") {
            i = html[i..].find('>').map_or(html.len(), |e| i + e + 1);
            continue;
        }
        let mut j = i + 1;
        let closing = bytes.get(j) == Some(&b'/');
        if closing {
            j += 1;
        }
        let name_end = html[j..]
            .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
            .map_or(html.len(), |e| j + e);
        let name = html[j..name_end].to_ascii_lowercase();
        j = name_end;
        let mut attrs = Vec::new();
        let mut self_closing = false;
        loop {
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            match bytes.get(j) {
                None => break,
                Some(b'>') => {
                    j += 1;
                    break;
                }
                Some(b'/') => {
                    self_closing = true;
                    j += 1;
                }
                Some(_) => {
                    let key_end = html[j..]
                        .find(|c: char| c.is_whitespace() || c == '=' || c == '>' || c == '/')
                        .map_or(html.len(), |e| j + e);
                    let key = html[j..key_end].to_ascii_lowercase();
                    j = key_end;
                    let mut value = String::new();
                    if bytes.get(j) == Some(&b'=') {
                        j += 1;
                        let quote = bytes[j];
                        if quote == b'"' || quote == b'\'' {
                            let end =
                                html[j + 1..].find(quote as char).map_or(html.len(), |e| j + 1 + e);
                            value = html[j + 1..end].to_string();
                            j = end + 1;
                        } else {
                            let end = html[j..]
                                .find(|c: char| c.is_whitespace() || c == '>')
                                .map_or(html.len(), |e| j + e);
                            value = html[j..end].to_string();
                            j = end;
                        }
                    }
                    attrs.push((key, unescape(&value)));
                }
            }
        }
        let raw_text = !closing && (name == "style" || name == "script");
        out.push(Tag { name: name.clone(), closing, self_closing, attrs });
        i = j;
        if raw_text {
            let end_tag = format!("</{name}");
            i = html[i..].find(&end_tag).map_or(html.len(), |e| i + e);
        }
    }
    out
}

pub fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The tags inside the `<svg>` with this id (exclusive); `None` when there is no such chart.
pub fn chart_tags(all: &[Tag], id: &str) -> Option<Vec<Tag>> {
    let start =
        all.iter().position(|t| t.name == "svg" && !t.closing && t.attr("id") == Some(id))?;
    let end = all[start..].iter().position(|t| t.name == "svg" && t.closing)? + start;
    Some(all[start + 1..end].to_vec())
}

/// The data marks of a chart: elements of class `data`.
pub fn data_marks(chart: &[Tag]) -> Vec<Tag> {
    chart.iter().filter(|t| !t.closing && t.has_class("data")).cloned().collect()
}

/// The `data-value`s of marks, parsed and sorted; panics on a mark without a number.
pub fn mark_values(marks: &[Tag]) -> Vec<f64> {
    let mut values: Vec<f64> = marks
        .iter()
        .map(|t| {
            let text = t
                .attr("data-value")
                .unwrap_or_else(|| panic!("data mark without data-value: {t:?}"));
            text.parse().unwrap_or_else(|_| panic!("data-value {text:?} is not a number"))
        })
        .collect();
    values.sort_by(f64::total_cmp);
    values
}
