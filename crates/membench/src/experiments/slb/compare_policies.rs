//! `mem compare-policies`: one SLB scenario under local, interleaved and remote memory, in
//! rounds: every placement once a round, each judged against local on its rounds
//! ([`crate::slb_rounds`]).

use chart::Part;
use experiment::{Context, Experiment, Outcome};
use measure::metric::Step;
use measure::{Classified, Metric, ToMetrics, WorkerPlacement};
use serde::{Deserialize, Serialize};
use topo::Topology;

use super::legacy::{self, LEGACY_POLICIES};
use super::SlbWorkArgs;
use crate::chart::{headlines, slb as slb_chart, SLB_POLICIES};
use crate::render::mem as render;
use crate::scenarios::{self, NotRun, NO_REMOTE};
use crate::slb::SlbResult;
use crate::slb_rounds::{self, StepVerdict};
use crate::BenchError;

// The arguments of `mem compare-policies`: the work of every worker, and the rounds (a doc
// comment here would replace its ABOUT).
#[derive(Debug, clap::Args)]
pub struct PoliciesArgs {
    #[command(flatten)]
    pub work: SlbWorkArgs,
    /// Rounds: every placement once in each, the order rotating; each is judged against
    /// local on its rounds (1: no verdict).
    #[arg(long, default_value_t = slb_rounds::DEFAULT_ROUNDS, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
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

/// Every placement's runs in the order run: each placement once a round (one the machine
/// cannot do, once). Stored as `{"rows": […], "verdicts": […]}` (the verdicts for the reader:
/// they are worked out again from the rows); a stored list of rows (one round, earlier
/// versions) reads back too.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "StoredPolicies", from = "ReadPolicies")]
pub struct PoliciesOutcome {
    pub rows: Vec<PolicyRow>,
    /// Ctrl-C ended the run early.
    pub interrupted: bool,
}

#[derive(Serialize)]
struct StoredPolicies {
    rows: Vec<PolicyRow>,
    verdicts: Vec<StepVerdict>,
}

impl From<PoliciesOutcome> for StoredPolicies {
    fn from(o: PoliciesOutcome) -> Self {
        let verdicts = o.verdicts();
        StoredPolicies { rows: o.rows, verdicts }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ReadPolicies {
    Rows(Vec<PolicyRow>),
    Stored { rows: Vec<PolicyRow> },
}

impl From<ReadPolicies> for PoliciesOutcome {
    fn from(read: ReadPolicies) -> Self {
        let (ReadPolicies::Rows(rows) | ReadPolicies::Stored { rows }) = read;
        PoliciesOutcome { rows, interrupted: false }
    }
}

impl PoliciesOutcome {
    /// The placements in the order of the first round.
    fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for row in &self.rows {
            if !names.contains(&row.policy.as_str()) {
                names.push(&row.policy);
            }
        }
        names
    }

    fn rounds_of(&self, policy: &str) -> Vec<&SlbResult> {
        self.rows.iter().filter(|r| r.policy == policy).filter_map(|r| r.result.as_ref()).collect()
    }

    /// (policy, its median round or why there is none), as the SLB chart's placement panel
    /// takes them.
    pub fn policies(&self) -> Vec<(String, Result<SlbResult, String>)> {
        self.names()
            .into_iter()
            .map(|name| {
                let skipped = self
                    .rows
                    .iter()
                    .find_map(|r| (r.policy == name).then(|| r.skipped.clone()).flatten())
                    .unwrap_or_else(|| "not measured".into());
                let typical = slb_rounds::median_round(&self.rounds_of(name)).cloned();
                (name.to_string(), typical.ok_or(skipped))
            })
            .collect()
    }

    /// Each measured placement against the first (local) on its rounds, one family.
    pub fn verdicts(&self) -> Vec<StepVerdict> {
        let steps: Vec<(String, Vec<f64>)> = self
            .names()
            .into_iter()
            .map(|name| (name.to_string(), slb_rounds::round_values(&self.rounds_of(name))))
            .filter(|(_, values)| !values.is_empty())
            .collect();
        slb_rounds::judge_steps(&steps)
    }

    /// The verdicts in words, under the table.
    pub fn verdict_text(&self) -> String {
        let measured: Vec<&PolicyRow> = self.rows.iter().filter(|r| r.result.is_some()).collect();
        let rounds = slb_rounds::rounds_in(&measured, |r| r.policy.clone());
        render::verdicts_text(&self.verdicts(), rounds)
    }

    /// Each run as a step of its placement; from the second round on, its workers' names say
    /// the round.
    fn steps(&self) -> Vec<Step<'_, SlbResult>> {
        let rounds = slb_rounds::round_of(&self.rows, |r| r.policy.clone());
        self.rows
            .iter()
            .zip(rounds)
            .filter_map(|(row, round)| {
                let r = row.result.as_ref()?;
                Some(match round {
                    0 => Step::new("policy", &row.policy, r),
                    _ => Step::new("policy", format!("{} round {}", row.policy, round + 1), r),
                })
            })
            .collect()
    }
}

impl Experiment for ComparePolicies {
    const PATH: &'static [&'static str] = &["mem", "compare-policies"];
    const ABOUT: &'static str =
        "The same SLB scenario under local, interleaved and remote memory, side by side";
    const TINY: &'static [&'static str] = &["--pages", "256", "--loops", "4"];
    type Args = PoliciesArgs;
    type Outcome = PoliciesOutcome;

    /// Several workers share caches and memory controllers.
    fn placement_cpus(args: &PoliciesArgs, topology: &Topology) -> Option<Vec<u32>> {
        let count = usize::try_from(args.work.workers.unwrap_or(1)).unwrap_or(usize::MAX);
        crate::experiments::several_cpus(None, topology, count)
    }

    fn run(args: &PoliciesArgs, ctx: &mut Context<'_>) -> Result<PoliciesOutcome, Classified> {
        let (work, rounds) = (&args.work, args.rounds);
        let topology = ctx.topology;
        ctx.live(&render::compare_header())?;
        let bar = ctx.progress(3 * u64::from(rounds), "placements");
        let mut rows: Vec<PolicyRow> = Vec::new();
        let count = work.workers.unwrap_or(1);
        let mut stopped = false;
        for round in 0..rounds {
            if rounds > 1 {
                bar.suspend(|| ctx.live(&render::round_line(round, rounds)))?;
            }
            scenarios::slb_policies(
                &work.work(),
                count,
                round as usize,
                topology,
                |name, outcome| {
                    let (result, skipped) = match outcome {
                        Ok(r) => (Some(r), None),
                        // A placement the machine cannot do is said once.
                        Err(NotRun::Skipped(_)) if round > 0 => {
                            bar.inc(1);
                            return Ok(true);
                        }
                        Err(NotRun::Skipped(why)) => (None, Some(why.to_string())),
                        // Stopped while the next policy was preparing: the rows above stand.
                        Err(NotRun::Failed(BenchError::Interrupted)) if !rows.is_empty() => {
                            ctx.live("interrupted: only the rows above were measured\n")?;
                            stopped = true;
                            return Ok(false);
                        }
                        Err(NotRun::Failed(e)) => return Err(Classified::from(e)),
                    };
                    bar.inc(1);
                    bar.suspend(|| {
                        ctx.live(&render::compare_row(name, result.as_ref(), NO_REMOTE))
                    })?;
                    rows.push(PolicyRow { policy: name.to_string(), result, skipped });
                    Ok(true)
                },
            )?;
            if stopped || ctx.stopped() {
                break;
            }
        }
        bar.finish_and_clear();
        let outcome = PoliciesOutcome { rows, interrupted: ctx.stopped() };
        ctx.live(&outcome.verdict_text())?;
        Ok(outcome)
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
        let rounds = slb_rounds::round_of(&self.rows, |r| r.policy.clone());
        let total = rounds.iter().max().map_or(1, |r| r + 1) as u32;
        let mut shown = None;
        for (row, round) in self.rows.iter().zip(rounds) {
            let round = round as u32;
            if total > 1 && shown != Some(round) {
                text.push_str(&render::round_line(round, total));
                shown = Some(round);
            }
            text.push_str(&render::compare_row(&row.policy, row.result.as_ref(), NO_REMOTE));
        }
        if self.interrupted {
            text.push_str("interrupted: only the rows above were measured\n");
        }
        text.push_str(&self.verdict_text());
        text
    }

    fn parts(&self, _topology: &Topology) -> Vec<Part> {
        let policies = self.policies();
        let mut part = SLB_POLICIES.part(slb_chart(SLB_POLICIES.id, &[], &policies));
        part.headlines = headlines::slb_policies(&policies, &self.verdicts());
        vec![part]
    }

    fn from_stored(kind: &str, result: serde_json::Value) -> Result<Self, serde_json::Error> {
        if kind != LEGACY_POLICIES {
            return serde_json::from_value(result);
        }
        legacy::policies(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slb::made_up;
    use measure::verdict::Verdict;

    fn row(policy: &str, ns: &[f64]) -> PolicyRow {
        PolicyRow { policy: policy.into(), result: Some(made_up(ns)), skipped: None }
    }

    /// Two rounds on a one-node machine: local and interleave alike, remote said once.
    #[test]
    fn placements_are_judged_against_local_on_their_rounds() {
        let rows = vec![
            row("local", &[60.0, 61.0]),
            row("interleave", &[62.0, 60.5]),
            PolicyRow { policy: "remote".into(), result: None, skipped: Some(NO_REMOTE.into()) },
            row("interleave", &[61.0, 59.0]),
            row("local", &[61.5, 62.0]),
            row("local", &[60.5, 60.0]),
            row("interleave", &[60.0, 62.5]),
        ];
        let o = PoliciesOutcome { rows, interrupted: false };
        let v = o.verdicts();
        assert_eq!(v.len(), 1, "remote has no runs: {v:?}");
        assert_eq!((v[0].step.as_str(), v[0].baseline.as_str()), ("interleave", "local"));
        assert_eq!(v[0].judgement.verdict, Verdict::Same, "{:?}", v[0]);
        let policies = o.policies();
        assert_eq!(
            policies.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
            ["local", "interleave", "remote"]
        );
        assert_eq!(policies[2].1.as_ref().err().map(String::as_str), Some(NO_REMOTE));
        let text = o.text();
        assert!(text.contains("round 3 of 3\n"), "{text}");
        assert!(text.contains("  interleave: 1.0"), "{text}");
        assert!(text.contains("), same; 3 rounds each"), "{text}");
        // The page says what the rounds say, never that the workers' ranges overlap.
        let part = &o.parts(
            &topo::Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1").unwrap(),
        )[0];
        let detail = &part.headlines[1].detail;
        assert!(detail.contains("local's time per store (95% interval"), "{detail}");
        assert!(!part.headlines.iter().any(|h| h.detail.contains("overlap")));
        // Stored and read back, from today's object and from the list earlier versions stored.
        let stored = serde_json::to_value(&o).unwrap();
        assert_eq!(stored["verdicts"][0]["step"], "interleave");
        let back: PoliciesOutcome = serde_json::from_value(stored).unwrap();
        assert_eq!(back.rows.len(), 7);
        let list = serde_json::to_value(&o.rows[..3]).unwrap();
        let old: PoliciesOutcome = serde_json::from_value(list).unwrap();
        assert_eq!(old.verdicts()[0].judgement.verdict, Verdict::Untested);
    }
}
