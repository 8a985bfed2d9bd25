//! `platscope mem …`: resolve placement, build plans, run membench, render.

use anyhow::Context;
use measure::metric::Step;
use measure::UsageError;
use measure::{progress, stop};
use membench::c2c::{self, C2cOptions};
use membench::latency::{self, LatencyOptions, LatencyPoint};
use membench::layout::ChaseLayout;
use membench::render::c2c as render_c2c;
use membench::render::mem as render;
use membench::scenarios::{policy_scenarios, scale_counts, slb_plan, spread_workers, NO_REMOTE};
use membench::slb::{self, SlbChildRequest, SlbPlan, SlbResult, SlbWorkerSpec};
use membench::slb_shared::{self, SharedSlbPlan};
use membench::BenchError;
use place::{lists, pin, PageSize, PlacementRequest};
use results::{Recorder, StoreOptions};
use serde::Serialize;
use topo::Topology;

use crate::cli::{
    C2cArgs, LatencyArgs, MemCommand, PlacementOptions, ScaleArgs, SlbArgs, SlbWorkArgs,
    SlbWorkerArgs,
};
use crate::output::{emit, emit_json};

pub fn run(command: &MemCommand, json: bool, store: &StoreOptions) -> anyhow::Result<()> {
    let topology = Topology::detect().context("reading the topology")?;
    stop::install();
    if let MemCommand::SlbWorker(args) = command {
        return slb_worker(args, &topology); // a child of `mem slb --processes`: the parent records
    }
    let mut rec = super::record::recorder(store, &topology)?;
    let rec = &mut rec;
    match command {
        MemCommand::Latency(args) => latency(args, json, &topology, rec),
        MemCommand::Slb(args) => slb(args, json, &topology, rec),
        MemCommand::Scale(args) => scale(args, json, &topology, rec),
        MemCommand::C2c(args) => c2c(args, json, &topology, rec),
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
    let default_size = latency::default_dram_bytes(topology);

    if args.matrix {
        let matrix = latency::matrix(args.size.unwrap_or(default_size), &opts, topology)?;
        if json {
            emit_json(&matrix)?;
        } else {
            emit(&render::latency_matrix(&matrix, topology.distances.as_ref()))?;
        }
        rec.record("mem latency --matrix", &matrix, &matrix, false)?;
        return Ok(());
    }

    if args.sweep {
        if args.from > args.to {
            return Err(BenchError::Usage("--from must not be larger than --to".into()).into());
        }
        let mut points: Vec<LatencyPoint> = Vec::new();
        if !json {
            emit(&render::sweep_header())?;
        }
        let sizes = latency::sweep_sizes(args.from, args.to);
        // On a terminal, a bar on stderr counts the sizes; rows are printed around it.
        let bar = progress::counter(sizes.len() as u64, "working-set sizes");
        for bytes in sizes {
            match latency::measure_on(cpu, bytes, &opts, topology) {
                Ok(point) => {
                    if !json {
                        bar.suspend(|| emit(&render::sweep_row(&point, &topology.caches)))?;
                    }
                    points.push(point);
                }
                Err(BenchError::Interrupted) => break,
                Err(e) => return Err(e.into()),
            }
            bar.inc(1);
            if stop::requested() {
                break;
            }
        }
        bar.finish_and_clear();
        if stop::requested() && !json {
            emit("interrupted: the sizes above were measured\n")?;
        }
        if json {
            emit_json(&points)?;
        }
        if !points.is_empty() {
            rec.record("mem latency --sweep", &points, &points, stop::requested())?;
        }
        return Ok(());
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
    if json {
        emit_json(&out)?;
    } else {
        let mut text = render::latency_line(&point);
        text.push('\n');
        match check {
            Some(c) => text.push_str(&render::prefetch_line(&c)),
            None => text.push_str("prefetch check skipped: the buffer fits in the caches"),
        }
        text.push('\n');
        emit(&text)?;
    }
    rec.record("mem latency", &out, &point, false)?;
    Ok(())
}

fn plan(work: &SlbWorkArgs, page: PageSize, workers: Vec<SlbWorkerSpec>) -> SlbPlan {
    slb_plan(work.pages, work.loops, page, workers)
}

fn slb(args: &SlbArgs, json: bool, topology: &Topology, rec: &mut Recorder) -> anyhow::Result<()> {
    if args.shared {
        return slb_shared(args, json, topology, rec);
    }
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
        let bar = progress::counter(0, "SLB worker processes finished");
        let result = slb::run_processes(
            &plan,
            topology,
            worker_process,
            |line| serde_json::from_str(line).map_err(|e| e.to_string()),
            &bar,
        );
        bar.finish_and_clear();
        result?
    } else {
        let bar = progress::counter(0, "SLB stores");
        let result = slb::run(&plan, topology, &bar);
        bar.finish_and_clear();
        result?
    };
    if json {
        emit_json(&result)?;
    } else {
        emit(&render::slb_text(&result))?;
    }
    let name = if args.processes { "mem slb --processes" } else { "mem slb" };
    rec.record(name, &result, &result, result.interrupted)?;
    Ok(())
}

/// `mem slb --shared`: one shared region, an optional lock around every store.
fn slb_shared(
    args: &SlbArgs,
    json: bool,
    topology: &Topology,
    rec: &mut Recorder,
) -> anyhow::Result<()> {
    if args.work.page != PageSize::Base {
        return Err(BenchError::Usage(format!(
            "--shared uses 4 KiB pages (System V segment); drop --page {}",
            args.work.page
        ))
        .into());
    }
    let request = resolve(&args.placement, topology)?;
    let allowed = request.allowed_cpus(topology)?;
    let cpus: Vec<Option<u32>> = match &args.cpus {
        Some(list) => lists::parse_cpus(list, topology)?.into_iter().map(Some).collect(),
        None => {
            let n = args.work.workers.unwrap_or(1);
            if n > allowed.len() as u64 {
                return Err(BenchError::Usage(format!(
                    "--workers {n} but only {} CPUs allowed: give at most {} workers (workers \
                     sharing a CPU would measure the scheduler, not the lock)",
                    allowed.len(),
                    allowed.len()
                ))
                .into());
            }
            allowed.iter().take(n as usize).map(|&c| Some(c)).collect()
        }
    };
    let plan = SharedSlbPlan {
        pages: args.work.pages,
        loops: args.work.loops,
        counters: args.counters,
        lock: args.lock,
        cpus,
        policy: request.policy.clone(),
        seed: 0x51B,
    };
    let result = slb_shared::run(&plan, allowed.len().max(plan.cpus.len()), topology)?;
    if json {
        emit_json(&result)?;
    } else {
        emit(&render_c2c::shared_slb_text(&result))?;
    }
    let name = format!("mem slb --shared --lock {}", args.lock.name());
    rec.record(&name, &result, &result, result.interrupted)?;
    Ok(())
}

/// `mem c2c`: every pair of CPUs, the line placed and verified.
fn c2c(args: &C2cArgs, json: bool, topology: &Topology, rec: &mut Recorder) -> anyhow::Result<()> {
    let cpus = match &args.cpus {
        Some(list) => lists::parse_cpus(list, topology)?,
        None => PlacementRequest { cpus: None, policy: place::MemPolicy::Inherit }
            .allowed_cpus(topology)?,
    };
    let options = C2cOptions {
        cpus,
        mode: args.mode,
        line_on: args.line_on,
        duration: std::time::Duration::from_millis(args.duration_ms),
    };
    c2c::check(&options, topology)?;
    let n = options.cpus.len() as u64;
    let bar = progress::counter(n * (n - 1) / 2, "CPU pairs");
    let result = c2c::run(&options, topology, |done, _| bar.set_position(done as u64))?;
    bar.finish_and_clear();
    if json {
        emit_json(&result)?;
    } else {
        emit(&render_c2c::c2c_text(&result))?;
    }
    rec.record("mem c2c", &result, &result, result.interrupted)?;
    Ok(())
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
        .map_err(|e| UsageError::Message(format!("slb-worker: unreadable request ({e})")))?;
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
        emit(&render::scale_header())?;
    }
    let bar = progress::counter(counts.len() as u64, "worker counts");
    for count in counts {
        bar.inc(1);
        let result = match slb::run(
            &plan(&work, args.page, spread_workers(count, &cpus, &request.policy)),
            topology,
            &progress::hidden(),
        ) {
            Ok(r) => r,
            // Stopped while the next count was preparing: the rows above stand.
            Err(BenchError::Interrupted) if !results.is_empty() => {
                if !json {
                    emit("interrupted: only the rows above were measured\n")?;
                }
                break;
            }
            Err(e) => return Err(e.into()),
        };
        let baseline = results.first().unwrap_or(&result).summary().median_ns;
        if !json {
            let row = render::scale_row(result.workers.len(), &result.summary(), baseline);
            bar.suspend(|| emit(&row))?;
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
    bar.finish_and_clear();
    if json {
        emit_json(&results)?;
    }
    let steps: Vec<Step<'_, SlbResult>> =
        results.iter().map(|r| Step::new("workers", r.workers.len(), r)).collect();
    rec.record("mem scale", &results, &steps, stop::requested())?;
    Ok(())
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
        emit(&render::compare_header())?;
    }
    let bar = progress::counter(scenarios.len() as u64, "placements");
    for (name, workers) in scenarios {
        if stop::requested() {
            break;
        }
        let why_not = NO_REMOTE.to_string();
        let result = match workers
            .map(|w| slb::run(&plan(work, work.page, w), topology, &progress::hidden()))
        {
            Some(Ok(r)) => Some(r),
            // Stopped while the next policy was preparing: the rows above stand.
            Some(Err(BenchError::Interrupted)) if !rows.is_empty() => {
                if !json {
                    emit("interrupted: only the rows above were measured\n")?;
                }
                break;
            }
            Some(Err(e)) => return Err(e.into()),
            None => None,
        };
        bar.inc(1);
        if !json {
            bar.suspend(|| emit(&render::compare_row(name, result.as_ref(), &why_not)))?;
        }
        let skipped = result.is_none().then_some(why_not);
        rows.push(Row { policy: name, result, skipped });
    }
    bar.finish_and_clear();
    if json {
        emit_json(&rows)?;
    }
    let steps: Vec<Step<'_, SlbResult>> = rows
        .iter()
        .filter_map(|row| row.result.as_ref().map(|r| Step::new("policy", row.policy, r)))
        .collect();
    rec.record("mem compare-policies", &rows, &steps, stop::requested())?;
    Ok(())
}
