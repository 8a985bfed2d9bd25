//! `mem locks`: the shared-memory SLB with each lock at 1, 2, 4 … workers, then the spinlock
//! with its region placed local, remote, interleaved and its workers spread over nodes.

use chart::Part;
use experiment::{Context, Experiment, Outcome};
use measure::args::parse_count;
use measure::metric::Step;
use measure::{Classified, Metric, ToMetrics, WorkerPlacement};
use place::{PlacementArgs, PlacementRequest};
use serde::{Deserialize, Serialize};
use topo::Topology;

use super::legacy::{self, LEGACY_LOCKS, LEGACY_LOCK_PLACEMENT};
use crate::chart::{contention, headlines, CONTENTION};
use crate::render::c2c as render_c2c;
use crate::scenarios::{self, scale_counts};
use crate::slb_shared::{self, LockKind, SharedSlbPlan, SharedSlbResult};
use crate::BenchError;

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
        crate::experiments::several_cpus(Some(&args.placement), topology, count)
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
        match kind {
            LEGACY_LOCKS | LEGACY_LOCK_PLACEMENT => legacy::locks(kind, result),
            _ => serde_json::from_value(result),
        }
    }
}
