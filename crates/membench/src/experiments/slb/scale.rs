//! `mem scale`: the SLB at 1, 2, 4 … workers, each against one worker ("times slower"), in
//! rounds: every worker count once a round, each judged against the first on its rounds
//! ([`crate::slb_rounds`]).

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
use crate::slb_rounds::{self, StepVerdict, DEFAULT_ROUNDS};
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
    /// Rounds: every worker count once in each, the order rotating; each count is judged
    /// against the first on its rounds (1: no verdict).
    #[arg(long, default_value_t = DEFAULT_ROUNDS, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    #[command(flatten)]
    pub placement: PlacementArgs,
}

/// `platscope mem scale`.
#[derive(Debug)]
pub struct Scale;

/// The SLB at each worker count, every run in the order run: each count once a round. Stored
/// as `{"runs": […], "verdicts": […]}` (the verdicts for the reader: they are worked out again
/// from the runs); a stored list of runs (one round, earlier versions) reads back too.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "StoredScale", from = "ReadScale")]
pub struct ScaleOutcome {
    pub runs: Vec<SlbResult>,
    /// Ctrl-C ended the run early.
    pub interrupted: bool,
}

#[derive(Serialize)]
struct StoredScale {
    runs: Vec<SlbResult>,
    verdicts: Vec<StepVerdict>,
}

impl From<ScaleOutcome> for StoredScale {
    fn from(o: ScaleOutcome) -> Self {
        let verdicts = o.verdicts();
        StoredScale { runs: o.runs, verdicts }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ReadScale {
    Runs(Vec<SlbResult>),
    Stored { runs: Vec<SlbResult> },
}

impl From<ReadScale> for ScaleOutcome {
    fn from(read: ReadScale) -> Self {
        let (ReadScale::Runs(runs) | ReadScale::Stored { runs }) = read;
        ScaleOutcome { runs, interrupted: false }
    }
}

/// "1 worker", "4 workers".
fn workers_name(n: usize) -> String {
    format!("{n} worker{}", if n == 1 { "" } else { "s" })
}

impl ScaleOutcome {
    /// The worker counts in the order of the first round.
    pub fn counts(&self) -> Vec<usize> {
        let mut counts: Vec<usize> = Vec::new();
        for n in self.runs.iter().map(|r| r.workers.len()) {
            if !counts.contains(&n) {
                counts.push(n);
            }
        }
        counts
    }

    fn rounds_of(&self, count: usize) -> Vec<&SlbResult> {
        self.runs.iter().filter(|r| r.workers.len() == count).collect()
    }

    /// Each worker count's median round, fewest-first order kept: what the chart draws and
    /// the headlines read.
    pub fn typical(&self) -> Vec<SlbResult> {
        self.counts()
            .into_iter()
            .filter_map(|n| slb_rounds::median_round(&self.rounds_of(n)).cloned())
            .collect()
    }

    /// Each worker count against the first on its rounds, one family.
    pub fn verdicts(&self) -> Vec<StepVerdict> {
        let steps: Vec<(String, Vec<f64>)> = self
            .counts()
            .into_iter()
            .map(|n| (workers_name(n), slb_rounds::round_values(&self.rounds_of(n))))
            .collect();
        slb_rounds::judge_steps(&steps)
    }

    /// The verdicts in words, under the table.
    pub fn verdict_text(&self) -> String {
        let rounds = slb_rounds::rounds_in(&self.runs, |r| r.workers.len());
        render::verdicts_text(&self.verdicts(), rounds)
    }
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
        let bar = ctx.progress(counts.len() as u64 * u64::from(args.rounds), "SLB runs");
        // Every row against the first run: the first count of the first round.
        let mut first = None;
        let mut runs: Vec<SlbResult> = Vec::new();
        for round in 0..args.rounds {
            if args.rounds > 1 {
                bar.suspend(|| ctx.live(&render::round_line(round, args.rounds)))?;
            }
            let order = slb_rounds::rotated(&counts, round as usize);
            let scaled =
                scenarios::slb_scale(&work, &order, &cpus, &request.policy, topology, |result| {
                    bar.inc(1);
                    let s = result.summary();
                    let baseline = *first.get_or_insert(s.median_ns);
                    let row = render::scale_row(result.workers.len(), &s, baseline);
                    bar.suspend(|| ctx.live(&row))?;
                    Ok::<(), Classified>(())
                })?;
            runs.extend(scaled.done);
            match scaled.failed {
                // Stopped while the next count was preparing: the rows above stand.
                Some((_, BenchError::Interrupted)) if !runs.is_empty() => {
                    bar.suspend(|| ctx.live("interrupted: only the rows above were measured\n"))?;
                    break;
                }
                Some((_, e)) => return Err(e.into()),
                None if runs.last().is_some_and(|r| r.interrupted) => {
                    bar.suspend(|| {
                        ctx.live("interrupted: the last row covers the stores done so far\n")
                    })?;
                    break;
                }
                None if ctx.stopped() => {
                    bar.suspend(|| ctx.live("interrupted: only the rows above were measured\n"))?;
                    break;
                }
                None => {}
            }
        }
        bar.finish_and_clear();
        let outcome = ScaleOutcome { runs, interrupted: ctx.stopped() };
        ctx.live(&outcome.verdict_text())?;
        Ok(outcome)
    }
}

impl ScaleOutcome {
    /// Each run as a step of its worker count; from the second round on, its workers' names
    /// say the round.
    fn steps(&self) -> Vec<Step<'_, SlbResult>> {
        let rounds = slb_rounds::round_of(&self.runs, |r| r.workers.len());
        self.runs
            .iter()
            .zip(rounds)
            .map(|(r, round)| match round {
                0 => Step::new("workers", r.workers.len(), r),
                _ => Step::new("workers", format!("{} round {}", r.workers.len(), round + 1), r),
            })
            .collect()
    }
}

impl ToMetrics for ScaleOutcome {
    /// Every round's worker `w` at count `n` is one metric, its batches from every round.
    fn to_metrics(&self) -> Vec<Metric> {
        let steps: Vec<Step<'_, SlbResult>> =
            self.runs.iter().map(|r| Step::new("workers", r.workers.len(), r)).collect();
        slb_rounds::merge_rounds(steps.to_metrics())
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        self.steps().placements()
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
        let rounds = slb_rounds::round_of(&self.runs, |r| r.workers.len());
        let total = rounds.iter().max().map_or(1, |r| r + 1) as u32;
        let mut shown = None;
        for (r, round) in self.runs.iter().zip(rounds) {
            // Each count once a round, in order: a round starts where the index moves on.
            let round = round as u32;
            if total > 1 && shown != Some(round) {
                text.push_str(&render::round_line(round, total));
                shown = Some(round);
            }
            text.push_str(&render::scale_row(r.workers.len(), &r.summary(), baseline));
        }
        if self.interrupted {
            text.push_str("interrupted: only the rows above were measured\n");
        }
        text.push_str(&self.verdict_text());
        text
    }

    fn parts(&self, _topology: &Topology) -> Vec<Part> {
        let typical = self.typical();
        let mut part = SLB.part(slb_chart(SLB.id, &typical, &[]));
        (part.headlines, part.compared) = headlines::slb_scaling(&typical, &self.verdicts());
        vec![part]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slb::made_up;
    use measure::verdict::Verdict;

    /// Three rounds of 1 and 2 workers, the second round's order rotated, as `mem scale
    /// --rounds 3` runs them: two workers about twice one's time.
    fn three_rounds() -> ScaleOutcome {
        let runs = vec![
            made_up(&[10.0]),
            made_up(&[20.0, 21.0]),
            made_up(&[19.0, 20.5]),
            made_up(&[10.4]),
            made_up(&[9.8]),
            made_up(&[21.0, 22.0]),
        ];
        ScaleOutcome { runs, interrupted: false }
    }

    #[test]
    fn each_count_is_judged_against_the_first_on_its_rounds() {
        let o = three_rounds();
        assert_eq!(o.counts(), vec![1, 2]);
        let v = o.verdicts();
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].step.as_str(), v[0].baseline.as_str()), ("2 workers", "1 worker"));
        assert_eq!(v[0].judgement.verdict, Verdict::Slower, "{:?}", v[0]);
        assert_eq!(v[0].rests_on, "3 rounds each");
        // The table shows the median round of each count, the chart draws it.
        let typical = o.typical();
        assert_eq!(typical.iter().map(|r| r.summary().median_ns).collect::<Vec<_>>(), [10.0, 20.5]);
        let text = o.text();
        assert!(text.contains("round 2 of 3\n"), "{text}");
        assert!(
            text.contains(
                "each against 1 worker on its rounds (a round's value: its median worker"
            ),
            "{text}"
        );
        assert!(text.contains("  2 workers: 2.0"), "{text}");
        assert!(text.contains("), slower; 3 rounds each, adjusted p "), "{text}");
        // One metric a worker and count, its samples from every round.
        let metrics = o.to_metrics();
        assert_eq!(metrics.len(), 3);
        assert!(metrics.iter().all(|m| m.samples.len() == 3), "{metrics:?}");
        // Each round's placements kept apart.
        let names: Vec<String> = o.placements().into_iter().map(|p| p.worker).collect();
        assert!(names.contains(&"2 round 3: worker 1 cpu 1".to_string()), "{names:?}");
    }

    /// A stored list of runs (one round, as earlier versions stored it) reads back; today's
    /// stored object carries the verdicts and reads back to the same runs.
    #[test]
    fn stored_lists_and_objects_read_back() {
        let one = vec![made_up(&[10.0]), made_up(&[20.0, 21.0])];
        let old: ScaleOutcome =
            serde_json::from_value(serde_json::to_value(&one).unwrap()).unwrap();
        assert_eq!(old.runs.len(), 2);
        let v = old.verdicts();
        assert_eq!(v[0].judgement.verdict, Verdict::Untested);
        assert!(old.text().contains("2.0"), "{}", old.text());
        assert!(old.text().contains("untested (1 round each)"), "{}", old.text());
        let stored = serde_json::to_value(three_rounds()).unwrap();
        assert_eq!(stored["verdicts"][0]["judgement"]["verdict"], "slower");
        let back: ScaleOutcome = serde_json::from_value(stored).unwrap();
        assert_eq!(back.runs.len(), 6);
        assert_eq!(back.verdicts(), three_rounds().verdicts());
    }
}
