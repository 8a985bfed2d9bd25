//! The Silly Little Benchmark's commands: `mem slb` (threads, `--processes`, `--shared` with a
//! lock), `mem scale` (1, 2, 4 … workers, "times slower"), `mem compare-policies` (local,
//! interleaved, remote memory) and the hidden `mem slb-worker` that `--processes` starts.

use chart::Part;
use experiment::{Context, Experiment, Globals, Outcome, Tool};
use measure::args::parse_count;
use measure::metric::Step;
use measure::{Classified, Metric, ToMetrics, UsageError, WorkerPlacement};
use place::{lists, parse_page, PageSize, PlacementArgs, PlacementRequest};
use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::chart::{contention, headlines, slb as slb_chart, CONTENTION, SLB, SLB_POLICIES};
use crate::render::{c2c as render_c2c, mem as render};
use crate::scenarios::{self, scale_counts, spread_workers, NotRun, SlbWork, NO_REMOTE};
use crate::slb::{self, SlbChildRequest, SlbResult, SlbWorkerSpec};
use crate::slb_shared::{self, LockKind, SharedSlbPlan, SharedSlbResult};
use crate::BenchError;

// PAGES, LOOPS and page size: the work every SLB worker does (`mem compare-policies`' own
// arguments; a doc comment here would replace its ABOUT).
#[derive(Debug, clap::Args)]
pub struct SlbWorkArgs {
    /// 4 KiB pages each worker allocates and initializes.
    #[arg(long, value_parser = parse_count, allow_hyphen_values = true)]
    pub pages: u64,
    /// Passes: each worker does PAGES × LOOPS random stores.
    #[arg(long, value_parser = parse_count, allow_hyphen_values = true)]
    pub loops: u64,
    /// Number of workers, pinned one per CPU over the allowed CPUs (default 1).
    #[arg(long, value_parser = parse_count, allow_hyphen_values = true)]
    pub workers: Option<u64>,
    /// Page size backing each worker's memory.
    #[arg(long, default_value = "4k", value_parser = parse_page)]
    pub page: PageSize,
}

impl SlbWorkArgs {
    fn work(&self) -> SlbWork {
        SlbWork { pages: self.pages, loops: self.loops, page: self.page }
    }
}

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
                super::several_cpus(Some(&args.placement), topology, count)
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

// The request a `mem slb --processes` parent gives each worker process.
#[derive(Debug, clap::Args)]
pub struct SlbWorkerArgs {
    /// The worker's request, as JSON (`membench::slb::SlbChildRequest`).
    pub request: String,
}

/// `platscope mem slb-worker REQUEST` (hidden): one worker process of `mem slb --processes`;
/// prints its result as one JSON line for the parent, which stores the run.
#[derive(Debug)]
pub struct SlbWorker;

impl Tool for SlbWorker {
    const PATH: &'static [&'static str] = &["mem", "slb-worker"];
    const ABOUT: &'static str = "Internal: one worker process of `mem slb --processes`, started \
                                 by the parent";
    const HIDDEN: bool = true;
    type Args = SlbWorkerArgs;

    fn run(args: &SlbWorkerArgs, _globals: &Globals) -> Result<(), Classified> {
        let request: SlbChildRequest = serde_json::from_str(&args.request)
            .map_err(|e| UsageError::Message(format!("slb-worker: unreadable request ({e})")))?;
        let topology = Topology::detect()
            .map_err(|e| Classified::runtime(format!("reading the topology: {e}")))?;
        measure::stop::install();
        let result = slb::run_child(&request, &topology)?;
        experiment::output::emit(&format!("{}\n", serde_json::to_string(&result)?))?;
        Ok(())
    }
}

// The arguments of `mem scale`.
#[derive(Debug, clap::Args)]
pub struct ScaleArgs {
    /// 4 KiB pages each worker allocates and initializes.
    #[arg(long, value_parser = parse_count, allow_hyphen_values = true)]
    pub pages: u64,
    /// Passes: each worker does PAGES × LOOPS random stores.
    #[arg(long, value_parser = parse_count, allow_hyphen_values = true)]
    pub loops: u64,
    /// Worker counts to run (default 1, 2, 4 … up to the allowed CPUs).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_count)]
    pub workers: Option<Vec<u64>>,
    #[arg(long, default_value = "4k", value_parser = parse_page)]
    pub page: PageSize,
    #[command(flatten)]
    pub placement: PlacementArgs,
}

/// `platscope mem scale`.
#[derive(Debug)]
pub struct Scale;

/// The SLB at each worker count, fewest first (stored as the list of runs).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ScaleOutcome {
    pub runs: Vec<SlbResult>,
    /// Ctrl-C ended the run early.
    #[serde(skip)]
    pub interrupted: bool,
}

impl Experiment for Scale {
    const PATH: &'static [&'static str] = &["mem", "scale"];
    const ABOUT: &'static str =
        "The SLB at 1, 2, 4 … workers with the \"times slower\" column against one worker";
    const TINY: &'static [&'static str] = &["--pages", "256", "--loops", "4", "--workers", "1,2"];
    type Args = ScaleArgs;
    type Outcome = ScaleOutcome;

    /// Its counts above one worker share caches and memory controllers.
    fn placement_cpus(args: &ScaleArgs, topology: &Topology) -> Option<Vec<u32>> {
        let most = args.workers.as_ref().and_then(|w| w.iter().max().copied());
        let count = most.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
        super::several_cpus(Some(&args.placement), topology, count)
    }

    fn run(args: &ScaleArgs, ctx: &mut Context<'_>) -> Result<ScaleOutcome, Classified> {
        let topology = ctx.topology;
        let request = PlacementRequest::resolve(&args.placement, topology)?;
        let cpus = request.allowed_cpus(topology)?;
        let counts: Vec<u64> = args.workers.clone().unwrap_or_else(|| scale_counts(cpus.len()));
        let work = SlbWork { pages: args.pages, loops: args.loops, page: args.page };
        ctx.live(&render::scale_header())?;
        let bar = ctx.progress(counts.len() as u64, "worker counts");
        let mut one_worker = None;
        let scaled =
            scenarios::slb_scale(&work, &counts, &cpus, &request.policy, topology, |result| {
                bar.inc(1);
                let s = result.summary();
                let baseline = *one_worker.get_or_insert(s.median_ns);
                let row = render::scale_row(result.workers.len(), &s, baseline);
                bar.suspend(|| ctx.live(&row))?;
                Ok::<(), Classified>(())
            })?;
        bar.finish_and_clear();
        let runs = scaled.done;
        match scaled.failed {
            // Stopped while the next count was preparing: the rows above stand.
            Some((_, BenchError::Interrupted)) if !runs.is_empty() => {
                ctx.live("interrupted: only the rows above were measured\n")?;
            }
            Some((_, e)) => return Err(e.into()),
            None if runs.last().is_some_and(|r| r.interrupted) => {
                ctx.live("interrupted: the last row covers the stores done so far\n")?;
            }
            None if ctx.stopped() => {
                ctx.live("interrupted: only the rows above were measured\n")?;
            }
            None => {}
        }
        Ok(ScaleOutcome { runs, interrupted: ctx.stopped() })
    }
}

impl ToMetrics for ScaleOutcome {
    fn to_metrics(&self) -> Vec<Metric> {
        let steps: Vec<Step<'_, SlbResult>> =
            self.runs.iter().map(|r| Step::new("workers", r.workers.len(), r)).collect();
        steps.to_metrics()
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        let steps: Vec<Step<'_, SlbResult>> =
            self.runs.iter().map(|r| Step::new("workers", r.workers.len(), r)).collect();
        steps.placements()
    }
}

impl Outcome for ScaleOutcome {
    /// The last is read only: the step of reports stored by earlier versions.
    const KINDS: &'static [&'static str] = &["mem scale", "report: SLB scaling"];

    fn interrupted(&self) -> bool {
        self.interrupted
    }

    fn worth_storing(&self) -> bool {
        !self.runs.is_empty()
    }

    fn text(&self) -> String {
        let mut text = render::scale_header();
        let baseline = self.runs.first().map_or(0.0, |r| r.summary().median_ns);
        for r in &self.runs {
            text.push_str(&render::scale_row(r.workers.len(), &r.summary(), baseline));
        }
        if self.interrupted {
            text.push_str("interrupted: only the rows above were measured\n");
        }
        text
    }

    fn parts(&self, _topology: &Topology) -> Vec<Part> {
        let mut part = SLB.part(slb_chart(SLB.id, &self.runs, &[]));
        (part.headlines, part.compared) = headlines::slb_scaling(&self.runs);
        vec![part]
    }
}

/// `platscope mem compare-policies`.
#[derive(Debug)]
pub struct ComparePolicies;

/// One placement of `mem compare-policies`: its run, or why it was skipped.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PolicyRow {
    pub policy: String,
    pub result: Option<SlbResult>,
    pub skipped: Option<String>,
}

/// Every placement in order (stored as the list of rows).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PoliciesOutcome {
    pub rows: Vec<PolicyRow>,
    /// Ctrl-C ended the run early.
    #[serde(skip)]
    pub interrupted: bool,
}

impl PoliciesOutcome {
    /// (policy, its run or why there is none), as the SLB chart's placement panel takes them.
    pub fn policies(&self) -> Vec<(String, Result<SlbResult, String>)> {
        self.rows
            .iter()
            .map(|r| {
                let skipped = r.skipped.clone().unwrap_or_else(|| "not measured".into());
                (r.policy.clone(), r.result.clone().ok_or(skipped))
            })
            .collect()
    }

    fn steps(&self) -> Vec<Step<'_, SlbResult>> {
        self.rows
            .iter()
            .filter_map(|row| row.result.as_ref().map(|r| Step::new("policy", &row.policy, r)))
            .collect()
    }
}

impl Experiment for ComparePolicies {
    const PATH: &'static [&'static str] = &["mem", "compare-policies"];
    const ABOUT: &'static str =
        "The same SLB scenario under local, interleaved and remote memory, side by side";
    const TINY: &'static [&'static str] = &["--pages", "256", "--loops", "4"];
    type Args = SlbWorkArgs;
    type Outcome = PoliciesOutcome;

    /// Several workers share caches and memory controllers.
    fn placement_cpus(work: &SlbWorkArgs, topology: &Topology) -> Option<Vec<u32>> {
        let count = usize::try_from(work.workers.unwrap_or(1)).unwrap_or(usize::MAX);
        super::several_cpus(None, topology, count)
    }

    fn run(work: &SlbWorkArgs, ctx: &mut Context<'_>) -> Result<PoliciesOutcome, Classified> {
        let topology = ctx.topology;
        ctx.live(&render::compare_header())?;
        let bar = ctx.progress(3, "placements");
        let mut rows: Vec<PolicyRow> = Vec::new();
        let count = work.workers.unwrap_or(1);
        scenarios::slb_policies(&work.work(), count, topology, |name, outcome| {
            let (result, skipped) = match outcome {
                Ok(r) => (Some(r), None),
                Err(NotRun::Skipped(why)) => (None, Some(why.to_string())),
                // Stopped while the next policy was preparing: the rows above stand.
                Err(NotRun::Failed(BenchError::Interrupted)) if !rows.is_empty() => {
                    ctx.live("interrupted: only the rows above were measured\n")?;
                    return Ok(false);
                }
                Err(NotRun::Failed(e)) => return Err(Classified::from(e)),
            };
            bar.inc(1);
            bar.suspend(|| ctx.live(&render::compare_row(name, result.as_ref(), NO_REMOTE)))?;
            rows.push(PolicyRow { policy: name.to_string(), result, skipped });
            Ok(true)
        })?;
        bar.finish_and_clear();
        Ok(PoliciesOutcome { rows, interrupted: ctx.stopped() })
    }
}

impl ToMetrics for PoliciesOutcome {
    fn to_metrics(&self) -> Vec<Metric> {
        self.steps().to_metrics()
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        self.steps().placements()
    }
}

impl Outcome for PoliciesOutcome {
    /// The last is read only: the step of reports stored by earlier versions, a list of
    /// (policy, run or why it was skipped).
    const KINDS: &'static [&'static str] = &["mem compare-policies", LEGACY_POLICIES];

    fn interrupted(&self) -> bool {
        self.interrupted
    }

    fn text(&self) -> String {
        let mut text = render::compare_header();
        for row in &self.rows {
            text.push_str(&render::compare_row(&row.policy, row.result.as_ref(), NO_REMOTE));
        }
        text
    }

    fn parts(&self, _topology: &Topology) -> Vec<Part> {
        let policies = self.policies();
        let mut part = SLB_POLICIES.part(slb_chart(SLB_POLICIES.id, &[], &policies));
        part.headlines = headlines::slb_policies(&policies);
        vec![part]
    }

    fn from_stored(kind: &str, result: serde_json::Value) -> Result<Self, serde_json::Error> {
        if kind != LEGACY_POLICIES {
            return serde_json::from_value(result);
        }
        let listed: Vec<(String, Result<SlbResult, String>)> = serde_json::from_value(result)?;
        let rows = listed
            .into_iter()
            .map(|(policy, outcome)| match outcome {
                Ok(r) => PolicyRow { policy, result: Some(r), skipped: None },
                Err(why) => PolicyRow { policy, result: None, skipped: Some(why) },
            })
            .collect();
        Ok(PoliciesOutcome { rows, interrupted: false })
    }
}

/// The SLB by placement as earlier versions' reports stored it (read back, never written).
const LEGACY_POLICIES: &str = "report: SLB placement";

// The arguments of `mem locks`.
#[derive(Debug, clap::Args)]
pub struct LocksArgs {
    /// Pages of the shared region each worker stores into.
    #[arg(long, default_value_t = 4096, value_parser = parse_count, allow_hyphen_values = true)]
    pub pages: u64,
    /// Passes over the pages per worker.
    #[arg(long, default_value_t = 50, value_parser = parse_count, allow_hyphen_values = true)]
    pub loops: u64,
    /// Worker counts (default 1, 2, 4 … up to every allowed CPU).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_count)]
    pub workers: Option<Vec<u64>>,
    /// Locks to run, in order: spin, ticket, mutex, none.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = LockKind::parse,
          default_value = "spin,ticket,mutex,none")]
    pub locks: Vec<LockKind>,
    /// Leave out the spinlock's placement scenarios (lock word local, remote, interleaved,
    /// workers spread over nodes).
    #[arg(long)]
    pub no_placement: bool,
    #[command(flatten)]
    pub placement: PlacementArgs,
}

/// `platscope mem locks`: the shared-memory SLB with each lock at 1, 2, 4 … workers, then the
/// spinlock with its shared region placed local, remote, interleaved and with the workers
/// spread over nodes.
#[derive(Debug)]
pub struct Locks;

/// Every run of `mem locks`, and the first failure that ended it early.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LocksOutcome {
    /// Lock by worker count, in the order run.
    #[serde(default)]
    pub runs: Vec<SharedSlbResult>,
    /// (scenario, the spinlock's run or why it did not run).
    #[serde(default)]
    pub placement: Vec<(String, Result<SharedSlbResult, String>)>,
    /// What stopped the runs early (the runs before it stand).
    #[serde(default)]
    pub failed: Option<String>,
    #[serde(default)]
    pub interrupted: bool,
}

/// The lock steps of reports stored by earlier versions, each half of this outcome (read
/// back, never written).
const LEGACY_LOCKS: &str = "report: lock contention";
const LEGACY_LOCK_PLACEMENT: &str = "report: lock placement";

/// Every placement scenario's shared region and workers, with the spinlock.
const LOCK_SEED: u64 = 0x51B;

impl Experiment for Locks {
    const PATH: &'static [&'static str] = &["mem", "locks"];
    const ABOUT: &'static str = "Lock contention in shared memory: the SLB with a spin, ticket \
                                 or mutex lock (or none) around every store at 1, 2, 4 … \
                                 workers, then the spinlock's region local, remote, \
                                 interleaved and its workers spread over nodes";
    const TINY: &'static [&'static str] =
        &["--pages", "64", "--loops", "2", "--locks", "spin,none"];
    type Args = LocksArgs;
    type Outcome = LocksOutcome;

    /// The lock word and the region move between the workers' CPUs.
    fn placement_cpus(args: &LocksArgs, topology: &Topology) -> Option<Vec<u32>> {
        let most = args.workers.as_ref().and_then(|w| w.iter().max().copied());
        let count = most.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
        super::several_cpus(Some(&args.placement), topology, count)
    }

    fn run(args: &LocksArgs, ctx: &mut Context<'_>) -> Result<LocksOutcome, Classified> {
        let topology = ctx.topology;
        let request = PlacementRequest::resolve(&args.placement, topology)?;
        let cpus = request.allowed_cpus(topology)?;
        let counts = args.workers.clone().unwrap_or_else(|| scale_counts(cpus.len()));
        if let Some(&n) = counts.iter().find(|&&n| n == 0 || n > cpus.len() as u64) {
            return Err(BenchError::Usage(format!(
                "--workers {n}: give 1 to {} workers (one per allowed CPU; workers sharing a CPU \
                 would measure the scheduler, not the lock)",
                cpus.len()
            ))
            .into());
        }
        let plan = |lock, cpus: Vec<Option<u32>>, policy| SharedSlbPlan {
            pages: args.pages,
            loops: args.loops,
            counters: 1,
            lock,
            cpus,
            policy,
            seed: LOCK_SEED,
        };
        let mut out = LocksOutcome::default();
        let bar = ctx.progress((args.locks.len() * counts.len()) as u64, "lock runs");
        'locks: for &lock in &args.locks {
            for &count in &counts {
                let workers = cpus.iter().take(count as usize).map(|&c| Some(c)).collect();
                match slb_shared::run(
                    &plan(lock, workers, request.policy.clone()),
                    cpus.len(),
                    topology,
                ) {
                    Ok(r) => {
                        let first = out.runs.iter().find(|b| b.plan.lock == lock);
                        let mut rows = String::new();
                        if first.is_none() {
                            rows.push_str(&lock_heading(lock));
                        }
                        let baseline = first.map_or(r.median_ns(), SharedSlbResult::median_ns);
                        rows.push_str(&render_c2c::contention_row(&r, baseline));
                        bar.suspend(|| ctx.live(&rows))?;
                        out.runs.push(r);
                    }
                    Err(BenchError::Interrupted) if !out.runs.is_empty() => break 'locks,
                    Err(e) if out.runs.is_empty() => return Err(e.into()),
                    Err(e) => {
                        out.failed =
                            Some(format!("{} lock with {count} workers: {e}", lock.name()));
                        break 'locks;
                    }
                }
                bar.inc(1);
                if ctx.stopped() {
                    break 'locks;
                }
            }
        }
        bar.finish_and_clear();
        if !args.no_placement && out.failed.is_none() {
            let one_node = "skipped: one node, so no remote or interleaved placement and no \
                            other node to spread the workers over";
            for (name, scenario) in scenarios::shared_scenarios(cpus.len(), topology) {
                if ctx.stopped() {
                    break;
                }
                let outcome = match scenario {
                    Some((workers, policy)) => slb_shared::run(
                        &plan(LockKind::Spin, workers, policy),
                        cpus.len(),
                        topology,
                    )
                    .map_err(|e| e.to_string()),
                    None => Err(one_node.to_string()),
                };
                out.placement.push((name.to_string(), outcome));
            }
        }
        out.interrupted = ctx.stopped();
        Ok(out)
    }
}

/// The lines above a lock's rows: its name and the table's header.
fn lock_heading(lock: LockKind) -> String {
    format!("{} lock\n{}", lock.name(), render_c2c::contention_header())
}

impl LocksOutcome {
    fn steps(&self) -> (Vec<Step<'_, SharedSlbResult>>, Vec<Step<'_, SharedSlbResult>>) {
        let runs = self
            .runs
            .iter()
            .map(|r| Step::new("run", format!("{} x{}", r.plan.lock.name(), r.workers.len()), r))
            .collect();
        let placed = self
            .placement
            .iter()
            .filter_map(|(name, r)| r.as_ref().ok().map(|r| Step::new("scenario", name, r)))
            .collect();
        (runs, placed)
    }
}

impl ToMetrics for LocksOutcome {
    fn to_metrics(&self) -> Vec<Metric> {
        let (runs, placed) = self.steps();
        let mut out = runs.to_metrics();
        out.extend(placed.to_metrics());
        out
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        let (runs, placed) = self.steps();
        let mut out = runs.placements();
        out.extend(placed.placements());
        out
    }
}

impl Outcome for LocksOutcome {
    /// The last two are read only: reports stored by earlier versions kept each half as a step.
    const KINDS: &'static [&'static str] = &["mem locks", LEGACY_LOCKS, LEGACY_LOCK_PLACEMENT];

    fn interrupted(&self) -> bool {
        self.interrupted
    }

    fn worth_storing(&self) -> bool {
        !self.runs.is_empty() || self.placement.iter().any(|(_, r)| r.is_ok())
    }

    fn failure(&self) -> Option<Classified> {
        self.failed.as_ref().map(|why| Classified::runtime(format!("mem locks: {why}")))
    }

    fn text(&self) -> String {
        let mut text = String::new();
        for (i, r) in self.runs.iter().enumerate() {
            let first = self.runs[..i].iter().find(|b| b.plan.lock == r.plan.lock);
            if first.is_none() {
                text.push_str(&lock_heading(r.plan.lock));
            }
            let baseline = first.map_or(r.median_ns(), SharedSlbResult::median_ns);
            text.push_str(&render_c2c::contention_row(r, baseline));
        }
        for (name, outcome) in &self.placement {
            match outcome {
                Ok(r) => text.push_str(&format!(
                    "spinlock, {name}: {:.1} ns/op with {} worker(s)\n",
                    r.median_ns(),
                    r.workers.len()
                )),
                Err(why) => text.push_str(&format!("spinlock, {name}: {why}\n")),
            }
        }
        if let Some(why) = &self.failed {
            text.push_str(&format!("not measured: {why}\n"));
        }
        if self.interrupted {
            text.push_str("interrupted: only the rows above were measured\n");
        }
        text
    }

    fn parts(&self, _topology: &Topology) -> Vec<Part> {
        let mut part = CONTENTION.part(contention(&self.runs, &self.placement));
        part.headlines = headlines::locks(&self.runs);
        if part.figure.is_none() {
            part.notes.extend(self.failed.iter().cloned());
        }
        vec![part]
    }

    fn from_stored(kind: &str, result: serde_json::Value) -> Result<Self, serde_json::Error> {
        Ok(match kind {
            LEGACY_LOCKS => {
                LocksOutcome { runs: serde_json::from_value(result)?, ..Self::default() }
            }
            LEGACY_LOCK_PLACEMENT => {
                LocksOutcome { placement: serde_json::from_value(result)?, ..Self::default() }
            }
            _ => serde_json::from_value(result)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Reports of earlier versions stored the placement step as a list of (policy, run or
    /// why not), and the lock step as two lists: each reads back as today's outcome.
    #[test]
    fn earlier_reports_placement_and_lock_steps_read_back() {
        let stored = json!([["local", { "Err": "skipped: no memory" }], ["remote", { "Err": "skipped: one node" }]]);
        let read = PoliciesOutcome::from_stored("report: SLB placement", stored).unwrap();
        assert_eq!(read.rows.len(), 2);
        assert_eq!(read.rows[1].policy, "remote");
        assert_eq!(read.rows[1].skipped.as_deref(), Some("skipped: one node"));
        assert!(read.rows.iter().all(|r| r.result.is_none()));

        let placed = json!([["line remote", { "Err": "skipped: one node" }]]);
        let locks = LocksOutcome::from_stored("report: lock placement", placed).unwrap();
        assert!(locks.runs.is_empty() && locks.placement.len() == 1);
        let runs = LocksOutcome::from_stored("report: lock contention", json!([])).unwrap();
        assert!(runs.runs.is_empty() && runs.placement.is_empty());
        // Today's kind is the outcome as stored.
        let again = LocksOutcome::from_stored("mem locks", serde_json::to_value(&locks).unwrap());
        assert_eq!(again.unwrap().placement[0].0, "line remote");
        assert!(LocksOutcome::KINDS.contains(&"report: lock placement"));
        assert_eq!(LocksOutcome::default().kind(), "mem locks", "never written under an old kind");
    }
}
