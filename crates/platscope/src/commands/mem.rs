//! `platscope mem …`: resolve placement, build plans, run membench, render.

use anyhow::Context;
use measure::stop;
use membench::latency::{self, LatencyOptions, LatencyPoint};
use membench::layout::ChaseLayout;
use membench::slb::{self, SlbChildRequest, SlbPlan, SlbResult, SlbWorkerSpec};
use membench::BenchError;
use place::{lists, pin, MemPolicy, PageSize, PlacementRequest};
use serde::Serialize;
use topo::Topology;

use super::compat::UsageError;
use super::record::{self, Recorder, StoreOptions};
use crate::cli::{
    LatencyArgs, MemCommand, PlacementOptions, ScaleArgs, SlbArgs, SlbWorkArgs, SlbWorkerArgs,
};
use crate::output::{emit, emit_json};

pub fn run(command: &MemCommand, json: bool, store: &StoreOptions) -> anyhow::Result<()> {
    let topology = Topology::detect().context("reading the topology")?;
    stop::install();
    if let MemCommand::SlbWorker(args) = command {
        return slb_worker(args, &topology); // a child of `mem slb --processes`: the parent records
    }
    let mut rec = Recorder::open(store, &topology)?;
    let rec = &mut rec;
    match command {
        MemCommand::Latency(args) => latency(args, json, &topology, rec),
        MemCommand::Slb(args) => slb(args, json, &topology, rec),
        MemCommand::Scale(args) => scale(args, json, &topology, rec),
        MemCommand::ComparePolicies(args) => compare_policies(args, json, &topology, rec),
        MemCommand::Bandwidth(args) => super::bandwidth::run_bandwidth(args, json, &topology, rec),
        MemCommand::LoadedLatency(args) => super::bandwidth::run_loaded(args, json, &topology, rec),
        MemCommand::SlbWorker(args) => slb_worker(args, &topology),
    }
}

fn resolve(options: &PlacementOptions, topology: &Topology) -> anyhow::Result<PlacementRequest> {
    Ok(PlacementRequest::resolve(&options.to_args(), topology)?)
}

fn latency(
    args: &LatencyArgs,
    json: bool,
    topology: &Topology,
    rec: &mut Recorder,
) -> anyhow::Result<()> {
    if !args.stride.is_multiple_of(8) {
        return Err(
            BenchError::Usage(format!("--stride {} is not a multiple of 8", args.stride)).into()
        );
    }
    let request = resolve(&args.placement, topology)?;
    let stride = args.stride as usize;
    let group_bytes = match args.tlb_group {
        0 => usize::MAX,
        pages => usize::try_from(pages.saturating_mul(4096)).unwrap_or(usize::MAX),
    };
    let opts = LatencyOptions {
        layout: ChaseLayout { stride, group_bytes, ..ChaseLayout::default() },
        page: args.page,
        policy: request.policy.clone(),
        duration: std::time::Duration::from_millis(args.duration_ms),
        ..LatencyOptions::default()
    };
    // The chase runs on one CPU: the first requested, else the one we are on now.
    let cpu = request.allowed_cpus(topology)?.first().copied().or_else(pin::current_cpu);
    let default_size = (4 * topology.last_level_cache_bytes()).max(256 << 20);

    if args.matrix {
        let matrix = latency::matrix(args.size.unwrap_or(default_size), &opts, topology)?;
        let (metrics, placements) = record::latency_matrix(&matrix);
        rec.record("mem latency --matrix", &matrix, metrics, placements, false)?;
        return if json {
            emit_json(&matrix)
        } else {
            Ok(emit(&report::mem::latency_matrix(&matrix, topology.distances.as_ref()))?)
        };
    }

    if args.sweep {
        if args.from > args.to {
            return Err(BenchError::Usage("--from must not be larger than --to".into()).into());
        }
        let mut points: Vec<LatencyPoint> = Vec::new();
        if !json {
            emit(&report::mem::sweep_header())?;
        }
        for bytes in latency::sweep_sizes(args.from, args.to) {
            match latency::measure_on(cpu, bytes, &opts, topology) {
                Ok(point) => {
                    if !json {
                        emit(&report::mem::sweep_row(&point, &topology.caches))?;
                    }
                    points.push(point);
                }
                Err(BenchError::Interrupted) => break,
                Err(e) => return Err(e.into()),
            }
            if stop::requested() {
                break;
            }
        }
        if stop::requested() && !json {
            emit("interrupted: the sizes above were measured\n")?;
        }
        if !points.is_empty() {
            let (metrics, placements) = record::latency_sweep(&points);
            rec.record("mem latency --sweep", &points, metrics, placements, stop::requested())?;
        }
        return if json { emit_json(&points) } else { Ok(()) };
    }

    let point = latency::measure_on(cpu, args.size.unwrap_or(default_size), &opts, topology)?;
    // Chasing in address order is only clearly faster once the buffer is beyond the caches.
    let check = if point.bytes > 2 * topology.last_level_cache_bytes() && !stop::requested() {
        Some(latency::prefetch_check(cpu, &point, &opts, topology)?)
    } else {
        None
    };
    #[derive(Serialize)]
    struct Out<'a> {
        point: &'a LatencyPoint,
        prefetch_check: Option<latency::PrefetchCheck>,
    }
    let out = Out { point: &point, prefetch_check: check };
    let (metrics, placements) = record::latency_point(&point);
    rec.record("mem latency", &out, metrics, placements, false)?;
    if json {
        return emit_json(&out);
    }
    let mut text = report::mem::latency_line(&point);
    text.push('\n');
    match check {
        Some(c) => text.push_str(&report::mem::prefetch_line(&c)),
        None => text.push_str("prefetch check skipped: the buffer fits in the caches"),
    }
    text.push('\n');
    Ok(emit(&text)?)
}

/// `count` workers pinned round-robin over `cpus`, all with `policy`.
pub(crate) fn spread_workers(count: u64, cpus: &[u32], policy: &MemPolicy) -> Vec<SlbWorkerSpec> {
    (0..count as usize)
        .map(|i| SlbWorkerSpec {
            cpu: cpus.get(i % cpus.len().max(1)).copied(),
            policy: policy.clone(),
        })
        .collect()
}

fn plan(work: &SlbWorkArgs, page: PageSize, workers: Vec<SlbWorkerSpec>) -> SlbPlan {
    SlbPlan { pages: work.pages, loops: work.loops, page, workers, seed: 0x51B }
}

fn slb(args: &SlbArgs, json: bool, topology: &Topology, rec: &mut Recorder) -> anyhow::Result<()> {
    let request = resolve(&args.placement, topology)?;
    let workers = match &args.cpus {
        Some(list) => lists::parse_cpus(list, topology)?
            .into_iter()
            .map(|cpu| SlbWorkerSpec { cpu: Some(cpu), policy: request.policy.clone() })
            .collect(),
        None => spread_workers(
            args.work.workers.unwrap_or(1),
            &request.allowed_cpus(topology)?,
            &request.policy,
        ),
    };
    let plan = plan(&args.work, args.work.page, workers);
    let result = if args.processes {
        slb::run_processes(&plan, topology, worker_process, |line| {
            serde_json::from_str(line).map_err(|e| e.to_string())
        })?
    } else {
        slb::run(&plan, topology)?
    };
    let (metrics, placements) = record::slb(&result, "");
    let name = if args.processes { "mem slb --processes" } else { "mem slb" };
    rec.record(name, &result, metrics, placements, result.interrupted)?;
    if json {
        emit_json(&result)
    } else {
        Ok(emit(&report::mem::slb_text(&result))?)
    }
}

/// The command line of one `mem slb --processes` worker: this binary's hidden `mem slb-worker`.
fn worker_process(request: &SlbChildRequest) -> std::io::Result<std::process::Command> {
    let json = serde_json::to_string(request).map_err(std::io::Error::other)?;
    let mut command = std::process::Command::new(std::env::current_exe()?);
    command.args(["mem", "slb-worker", &json]);
    Ok(command)
}

/// `mem slb-worker REQUEST`: a worker process; prints its result as one JSON line.
fn slb_worker(args: &SlbWorkerArgs, topology: &Topology) -> anyhow::Result<()> {
    let request: SlbChildRequest = serde_json::from_str(&args.request)
        .map_err(|e| UsageError(format!("slb-worker: unreadable request ({e})")))?;
    let result = slb::run_child(&request, topology)?;
    Ok(emit(&format!("{}\n", serde_json::to_string(&result)?))?)
}

fn scale(
    args: &ScaleArgs,
    json: bool,
    topology: &Topology,
    rec: &mut Recorder,
) -> anyhow::Result<()> {
    let request = resolve(&args.placement, topology)?;
    let cpus = request.allowed_cpus(topology)?;
    let counts: Vec<u64> = args.workers.clone().unwrap_or_else(|| scale_counts(cpus.len()));
    let work = SlbWorkArgs { pages: args.pages, loops: args.loops, workers: None, page: args.page };
    let mut results: Vec<SlbResult> = Vec::new();
    if !json {
        emit(&report::mem::scale_header())?;
    }
    for count in counts {
        let result = match slb::run(
            &plan(&work, args.page, spread_workers(count, &cpus, &request.policy)),
            topology,
        ) {
            Ok(r) => r,
            Err(BenchError::Interrupted) => break,
            Err(e) => return Err(e.into()),
        };
        let baseline = results.first().unwrap_or(&result).summary().median_ns;
        if !json {
            emit(&report::mem::scale_row(result.workers.len(), &result.summary(), baseline))?;
        }
        let stop = result.interrupted;
        results.push(result);
        if stop {
            if !json {
                emit("interrupted: the last row covers the stores done so far\n")?;
            }
            break;
        }
    }
    let mut metrics = Vec::new();
    let mut placements = Vec::new();
    for r in &results {
        let (m, p) = record::slb(r, &format!("{} workers: ", r.workers.len()));
        metrics.extend(m);
        placements.extend(p);
    }
    rec.record("mem scale", &results, metrics, placements, stop::requested())?;
    if json {
        emit_json(&results)?;
    }
    Ok(())
}

/// Worker counts for a scaling run: 1, 2, 4 … and the CPU count itself.
pub(crate) fn scale_counts(cpus: usize) -> Vec<u64> {
    std::iter::successors(Some(1u64), |n| Some(n * 2))
        .take_while(|&n| n <= cpus as u64)
        .chain((!cpus.is_power_of_two() && cpus > 0).then_some(cpus as u64))
        .collect()
}

/// The node farthest from `node` by SLIT distance (another node), if there is one.
fn farthest_node(node: u32, memory_nodes: &[u32], topology: &Topology) -> Option<u32> {
    memory_nodes
        .iter()
        .copied()
        .filter(|&m| m != node)
        .max_by_key(|&m| topology.distances.as_ref().and_then(|d| d.get(node, m)).unwrap_or(0))
}

/// Why the remote scenario cannot run on a machine whose only memory is local.
pub(crate) const NO_REMOTE: &str = "skipped: every worker's node is the only node with memory";

/// A named placement scenario's workers, `None` where the machine cannot do it.
pub(crate) type Scenario = (&'static str, Option<Vec<SlbWorkerSpec>>);

/// The SLB placement scenarios: local, interleave over all memory nodes, and remote (each
/// worker's memory on the node farthest from it), `None` where impossible.
pub(crate) fn policy_scenarios(count: u64, topology: &Topology) -> anyhow::Result<Vec<Scenario>> {
    let cpus =
        PlacementRequest { cpus: None, policy: MemPolicy::Inherit }.allowed_cpus(topology)?;
    let memory_nodes = topology.nodes_with_memory();
    let local = spread_workers(count, &cpus, &MemPolicy::Local);
    let interleave = spread_workers(count, &cpus, &MemPolicy::Interleave(memory_nodes.clone()));
    let remote: Option<Vec<SlbWorkerSpec>> = local
        .iter()
        .map(|w| {
            let node = w.cpu.and_then(|c| topology.node_of_cpu(c))?;
            let far = farthest_node(node, &memory_nodes, topology)?;
            Some(SlbWorkerSpec { cpu: w.cpu, policy: MemPolicy::Bind(vec![far]) })
        })
        .collect();
    Ok(vec![("local", Some(local)), ("interleave", Some(interleave)), ("remote", remote)])
}

fn compare_policies(
    work: &SlbWorkArgs,
    json: bool,
    topology: &Topology,
    rec: &mut Recorder,
) -> anyhow::Result<()> {
    let scenarios = policy_scenarios(work.workers.unwrap_or(1), topology)?;

    #[derive(Serialize)]
    struct Row {
        policy: &'static str,
        result: Option<SlbResult>,
        skipped: Option<String>,
    }
    let mut rows = Vec::new();
    if !json {
        emit(&report::mem::compare_header())?;
    }
    for (name, workers) in scenarios {
        if stop::requested() {
            break;
        }
        let why_not = NO_REMOTE.to_string();
        let result = match workers {
            Some(w) => Some(slb::run(&plan(work, work.page, w), topology)?),
            None => None,
        };
        if !json {
            emit(&report::mem::compare_row(name, result.as_ref(), &why_not))?;
        }
        let skipped = result.is_none().then_some(why_not);
        rows.push(Row { policy: name, result, skipped });
    }
    let mut metrics = Vec::new();
    let mut placements = Vec::new();
    for row in &rows {
        if let Some(r) = &row.result {
            let (m, p) = record::slb(r, &format!("{}: ", row.policy));
            metrics.extend(m);
            placements.extend(p);
        }
    }
    rec.record("mem compare-policies", &rows, metrics, placements, stop::requested())?;
    if json {
        emit_json(&rows)?;
    }
    Ok(())
}
