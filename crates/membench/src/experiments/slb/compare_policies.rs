//! `mem compare-policies`: one SLB scenario under local, interleaved and remote memory.

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
use crate::BenchError;

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
        crate::experiments::several_cpus(None, topology, count)
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
        legacy::policies(result)
    }
}
