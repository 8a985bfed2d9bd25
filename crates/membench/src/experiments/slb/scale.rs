//! `mem scale`: the SLB at 1, 2, 4 … workers, each against one worker ("times slower").

use chart::Part;
use experiment::{Context, Experiment, Outcome};
use measure::args::parse_count;
use measure::metric::Step;
use measure::{Classified, Metric, ToMetrics, WorkerPlacement};
use place::{parse_page, PageSize, PlacementArgs, PlacementRequest};
use serde::{Deserialize, Serialize};
use topo::Topology;

use super::legacy::LEGACY_SCALE;
use crate::chart::{headlines, slb as slb_chart, SLB};
use crate::render::mem as render;
use crate::scenarios::{self, scale_counts, SlbWork};
use crate::slb::SlbResult;
use crate::BenchError;

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
        crate::experiments::several_cpus(Some(&args.placement), topology, count)
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
    const KINDS: &'static [&'static str] = &["mem scale", LEGACY_SCALE];

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
