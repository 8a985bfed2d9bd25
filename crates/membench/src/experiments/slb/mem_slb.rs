//! `mem slb`: the SLB with one thread per worker, one process per worker (`--processes`), or
//! all workers storing into one shared region with a lock (`--shared`).

use chart::Part;
use experiment::{Context, Experiment, Outcome, Tool};
use measure::args::parse_count;
use measure::{Classified, Metric, ToMetrics, WorkerPlacement};
use place::{lists, PageSize, PlacementArgs, PlacementRequest};
use serde::{Deserialize, Serialize};
use topo::Topology;

use super::{SlbWorkArgs, SlbWorker};
use crate::chart::{contention, slb as slb_chart, CONTENTION, SLB};
use crate::render::{c2c as render_c2c, mem as render};
use crate::scenarios::spread_workers;
use crate::slb::{self, SlbChildRequest, SlbResult, SlbWorkerSpec};
use crate::slb_shared::{self, LockKind, SharedSlbPlan, SharedSlbResult};
use crate::BenchError;

// The arguments of `mem slb`.
#[derive(Debug, clap::Args)]
pub struct SlbArgs {
    #[command(flatten)]
    pub work: SlbWorkArgs,
    /// One worker per listed CPU (numactl list syntax), instead of --workers.
    #[arg(long, value_name = "LIST", conflicts_with = "workers")]
    pub cpus: Option<String>,
    /// One process per worker, as the original memhammer runs were, instead of one thread
    /// each; released together by a private System V semaphore.
    #[arg(long, conflicts_with = "shared")]
    pub processes: bool,
    /// All workers store into one shared memory region (System V, placed with the placement
    /// options and verified) instead of their own: the shared memory the Silly Little
    /// Benchmark's article said it left out.
    #[arg(long)]
    pub shared: bool,
    /// With --shared: the lock taken in shared memory around every store (and the shared
    /// counter bumped under it): spin, ticket, mutex (futex) or none.
    #[arg(long, requires = "shared", default_value = "none", value_parser = LockKind::parse)]
    pub lock: LockKind,
    /// With --shared: hot counters in the shared region, each alone on its cache line; every
    /// operation adds one to a pseudo-random one of them.
    #[arg(long, requires = "shared", default_value_t = 1, value_parser = parse_count)]
    pub counters: u64,
    #[command(flatten)]
    pub placement: PlacementArgs,
}

/// `platscope mem slb`.
#[derive(Debug)]
pub struct Slb;

/// What `mem slb` measured: stored as `mem slb`, `mem slb --processes` or
/// `mem slb --shared --lock KIND`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SlbOutcome {
    Threads(SlbResult),
    Processes(SlbResult),
    Shared(Box<SharedSlbResult>),
}

impl Experiment for Slb {
    const PATH: &'static [&'static str] = &["mem", "slb"];
    const ABOUT: &'static str = "The Silly Little Benchmark: random 8-byte stores to 4 KiB pages, \
                                 workers released together; prints memhammer's line per worker";
    const TINY: &'static [&'static str] = &["--pages", "256", "--loops", "4"];
    type Args = SlbArgs;
    type Outcome = SlbOutcome;

    /// Workers on several CPUs share caches and memory controllers (and, with `--shared`, one
    /// region and its lock).
    fn placement_cpus(args: &SlbArgs, topology: &Topology) -> Option<Vec<u32>> {
        match &args.cpus {
            Some(list) => lists::parse_cpus(list, topology).ok().filter(|c| c.len() >= 2),
            None => {
                let workers = args.work.workers.unwrap_or(1);
                let count = usize::try_from(workers).unwrap_or(usize::MAX);
                crate::experiments::several_cpus(Some(&args.placement), topology, count)
            }
        }
    }

    fn run(args: &SlbArgs, ctx: &mut Context<'_>) -> Result<SlbOutcome, Classified> {
        let topology = ctx.topology;
        if args.shared {
            return shared(args, topology).map(|r| SlbOutcome::Shared(Box::new(r)));
        }
        let request = PlacementRequest::resolve(&args.placement, topology)?;
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
        let plan = args.work.work().plan(workers);
        if args.processes {
            let bar = ctx.progress(0, "SLB worker processes finished");
            let result = slb::run_processes(
                &plan,
                topology,
                worker_process,
                |line| serde_json::from_str(line).map_err(|e| e.to_string()),
                &bar,
            );
            bar.finish_and_clear();
            Ok(SlbOutcome::Processes(result?))
        } else {
            let bar = ctx.progress(0, "SLB stores");
            let result = slb::run(&plan, topology, &bar);
            bar.finish_and_clear();
            Ok(SlbOutcome::Threads(result?))
        }
    }
}

/// `mem slb --shared`: one shared region, an optional lock around every store.
fn shared(args: &SlbArgs, topology: &Topology) -> Result<SharedSlbResult, Classified> {
    if args.work.page != PageSize::Base {
        return Err(BenchError::Usage(format!(
            "--shared uses 4 KiB pages (System V segment); drop --page {}",
            args.work.page
        ))
        .into());
    }
    let request = PlacementRequest::resolve(&args.placement, topology)?;
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
    Ok(slb_shared::run(&plan, allowed.len().max(plan.cpus.len()), topology)?)
}

/// The command line of one `mem slb --processes` worker: this binary's hidden
/// [`SlbWorker`] command.
fn worker_process(request: &SlbChildRequest) -> std::io::Result<std::process::Command> {
    let json = serde_json::to_string(request).map_err(std::io::Error::other)?;
    let mut command = std::process::Command::new(std::env::current_exe()?);
    command.args(SlbWorker::PATH).arg(json);
    Ok(command)
}

impl ToMetrics for SlbOutcome {
    fn to_metrics(&self) -> Vec<Metric> {
        match self {
            SlbOutcome::Threads(r) | SlbOutcome::Processes(r) => r.to_metrics(),
            SlbOutcome::Shared(r) => r.to_metrics(),
        }
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        match self {
            SlbOutcome::Threads(r) | SlbOutcome::Processes(r) => r.placements(),
            SlbOutcome::Shared(r) => r.placements(),
        }
    }
}

impl Outcome for SlbOutcome {
    const KINDS: &'static [&'static str] = &[
        "mem slb",
        "mem slb --processes",
        "mem slb --shared --lock none",
        "mem slb --shared --lock spin",
        "mem slb --shared --lock ticket",
        "mem slb --shared --lock mutex",
    ];

    fn kind(&self) -> &'static str {
        match self {
            SlbOutcome::Threads(_) => Self::KINDS[0],
            SlbOutcome::Processes(_) => Self::KINDS[1],
            SlbOutcome::Shared(r) => match r.plan.lock {
                LockKind::None => Self::KINDS[2],
                LockKind::Spin => Self::KINDS[3],
                LockKind::Ticket => Self::KINDS[4],
                LockKind::Mutex => Self::KINDS[5],
            },
        }
    }

    fn interrupted(&self) -> bool {
        match self {
            SlbOutcome::Threads(r) | SlbOutcome::Processes(r) => r.interrupted,
            SlbOutcome::Shared(r) => r.interrupted,
        }
    }

    fn text(&self) -> String {
        match self {
            SlbOutcome::Threads(r) | SlbOutcome::Processes(r) => render::slb_text(r),
            SlbOutcome::Shared(r) => render_c2c::shared_slb_text(r),
        }
    }

    fn parts(&self, _topology: &Topology) -> Vec<Part> {
        vec![match self {
            SlbOutcome::Threads(r) | SlbOutcome::Processes(r) => {
                SLB.part(slb_chart(SLB.id, std::slice::from_ref(r), &[]))
            }
            SlbOutcome::Shared(r) => CONTENTION.part(contention(std::slice::from_ref(&**r), &[])),
        }]
    }

    fn from_stored(kind: &str, result: serde_json::Value) -> Result<Self, serde_json::Error> {
        Ok(match kind {
            "mem slb" => SlbOutcome::Threads(serde_json::from_value(result)?),
            "mem slb --processes" => SlbOutcome::Processes(serde_json::from_value(result)?),
            _ => SlbOutcome::Shared(serde_json::from_value(result)?),
        })
    }
}
