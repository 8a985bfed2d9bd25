//! The bake-off: allocators interleaved round-robin for `repeat` rounds at each thread count,
//! then medians with spread, throughput relative to glibc, and verdicts that refuse to rank
//! allocators whose ranges overlap.

use std::sync::atomic::{AtomicBool, Ordering};

use measure::{summarize, Metric, Summary, ToMetrics, Unit};
use serde::{Deserialize, Serialize};

use crate::allocator::{Allocator, CacheEntry, Missing};
use crate::run::{self, CommandSpec, Outcome, Refusal, RunRecord, Subject, WorkerCommand};
use crate::workload::BuiltinParams;
use crate::Error;

/// What is measured under each allocator.
#[derive(Debug, Clone)]
pub enum Workload {
    /// The built-in allocation workload, `params.threads` replaced by each thread count.
    Builtin { worker: WorkerCommand, params: BuiltinParams },
    /// Any command.
    Command(CommandSpec),
    /// A database server started per allocator and driven by a load generator.
    Server(crate::server::ServerSpec),
}

impl Workload {
    /// A short description for headers and the store.
    pub fn describe(&self) -> String {
        match self {
            Workload::Builtin { params: p, .. } => format!(
                "built-in: {} allocations per thread, sizes {}–{} B log-uniform, working set {} \
                 objects per thread, {:.0}% freed by another thread",
                p.ops_per_thread,
                p.min_size,
                p.max_size,
                p.working_set,
                p.cross_share * 100.0
            ),
            Workload::Command(c) => format!("command: {}", c.argv.join(" ")),
            Workload::Server(s) => s.describe(),
        }
    }
}

/// A bake-off to run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub allocators: Vec<Allocator>,
    pub missing: Vec<Missing>,
    pub threads: Vec<u32>,
    pub repeat: u32,
    pub workload: Workload,
    /// For command and server workloads, which cannot be asked where their `malloc` resolves:
    /// the built-in workload's worker, started once under each preloaded library before the
    /// first run, whose own `malloc`, `free`, `realloc`, `calloc` and `posix_memalign` must
    /// resolve to the library ([`run::probe`]); a library that fails is refused there. The
    /// built-in workload checks in its measured worker itself, so this is unused for it.
    pub probe: Option<run::WorkerCommand>,
}

impl Plan {
    pub fn validate(&self) -> Result<(), Error> {
        if self.repeat == 0 {
            return Err(Error::usage("--repeat must be at least 1"));
        }
        if self.threads.is_empty() || self.threads.contains(&0) {
            return Err(Error::usage("--threads takes counts of 1 or more (e.g. 1,2,4)"));
        }
        if let Workload::Command(c) = &self.workload {
            if c.argv.is_empty() {
                return Err(Error::usage("no command given after --"));
            }
            if self.threads.len() > 1 && !c.takes_threads() {
                return Err(Error::usage(
                    "several --threads but the command has no {threads} to put them in \
                     (e.g. -- sysbench ... --threads={threads}); give one thread count",
                ));
            }
        }
        Ok(())
    }
}

/// Order statistics of one figure over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub median: f64,
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub min: f64,
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub max: f64,
    pub samples: Vec<f64>,
}

impl Figure {
    fn of(samples: Vec<f64>) -> Option<Self> {
        let s: Summary = summarize(&samples)?;
        Some(Figure { median: s.median, min: s.min, max: s.max, samples })
    }

    /// Whether two figures' ranges (min…max) overlap.
    pub fn overlaps(&self, other: &Figure) -> bool {
        self.min <= other.max && other.min <= self.max
    }
}

/// How an allocator's throughput compares with the baseline's at one thread count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// This is the baseline.
    Baseline,
    /// Ranges overlap: the difference is within the noise.
    NoSignificantDifference,
    /// Every round faster (or slower) than every baseline round.
    Faster,
    Slower,
    /// Fewer than [`MIN_ROUNDS_TO_RANK`] rounds: no spread to judge by.
    NotJudged,
}

/// Rounds needed before allocators are ranked.
pub const MIN_ROUNDS_TO_RANK: usize = 3;

/// One allocator at one thread count over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub allocator: String,
    pub threads: u32,
    pub throughput: Figure,
    /// Median throughput ÷ the baseline's median.
    pub relative: Option<f64>,
    pub verdict: Verdict,
    pub cpu_per_op_us: Figure,
    pub machine_cpu_per_op_us: Figure,
    pub hwm_bytes: Option<Figure>,
    pub rss_bytes: Option<Figure>,
    pub pss_bytes: Option<Figure>,
    /// Address-space growth, PROT_NONE excluded.
    pub accessible_growth_bytes: Figure,
    /// Address-space growth, everything (VSZ).
    pub total_growth_bytes: Figure,
    pub minor_faults: Figure,
}

/// A finished (or interrupted) bake-off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BakeOff {
    pub workload: String,
    pub allocators: Vec<Allocator>,
    pub missing: Vec<Missing>,
    pub threads: Vec<u32>,
    pub repeat: u32,
    /// The allocator relative figures are against (`glibc` when it ran).
    pub baseline: Option<String>,
    pub runs: Vec<RunRecord>,
    pub refused: Vec<Refusal>,
    pub groups: Vec<Group>,
    /// Notes on how the workload was driven (e.g. which load generator).
    pub notes: Vec<String>,
    pub interrupted: bool,
}

/// Runs the plan. `on_outcome` sees every run as it ends (progress lines). An allocator refused
/// once is not run again; the others continue.
pub fn run(
    plan: &Plan,
    cache: &[CacheEntry],
    stop: &AtomicBool,
    on_outcome: &mut dyn FnMut(&Outcome),
) -> Result<BakeOff, Error> {
    plan.validate()?;
    let subjects: Vec<Subject> = plan.allocators.iter().map(|a| Subject::new(a, cache)).collect();
    let mut runs = Vec::new();
    let mut refused: Vec<Refusal> = Vec::new();
    let mut interrupted = false;
    let mut notes = Vec::new();
    if let (Some(worker), Workload::Command(_) | Workload::Server(_)) =
        (&plan.probe, &plan.workload)
    {
        for subject in &subjects {
            if !matches!(subject.allocator.kind, crate::allocator::Kind::Preload { .. }) {
                continue;
            }
            if let crate::procfs::Verdict::Refused(reason) = run::probe(worker, subject)? {
                let refusal = Refusal {
                    allocator: subject.allocator.name.clone(),
                    threads: plan.threads.first().copied().unwrap_or(1),
                    round: 0,
                    reason: format!("in a program started under it, {reason}"),
                };
                on_outcome(&Outcome::Refused(refusal.clone()));
                refused.push(refusal);
            }
        }
    }
    'rounds: for round in 0..plan.repeat {
        for &threads in &plan.threads {
            // Round-robin with a rotating start: no allocator always runs first (cold caches)
            // or last (a warmed-up machine).
            let n = subjects.len();
            for i in 0..n {
                let subject = &subjects[(i + round as usize) % n];
                if refused.iter().any(|r| r.allocator == subject.allocator.name) {
                    continue;
                }
                if stop.load(Ordering::Relaxed) {
                    interrupted = true;
                    break 'rounds;
                }
                let outcome = match &plan.workload {
                    Workload::Builtin { worker, params } => {
                        let p = BuiltinParams { threads, ..*params };
                        run::run_builtin(worker, &p, subject, round, stop)?
                    }
                    Workload::Command(spec) => {
                        run::run_command(spec, threads, subject, round, stop)?
                    }
                    Workload::Server(spec) => {
                        let (outcome, note) =
                            crate::server::run_server(spec, threads, subject, round, stop)?;
                        if let Some(note) = note {
                            if !notes.contains(&note) {
                                notes.push(note);
                            }
                        }
                        outcome
                    }
                };
                on_outcome(&outcome);
                match outcome {
                    Outcome::Measured(r) => runs.push(r),
                    Outcome::Refused(r) => refused.push(r),
                    Outcome::Interrupted => {
                        interrupted = true;
                        break 'rounds;
                    }
                }
            }
        }
    }
    let baseline = plan
        .allocators
        .iter()
        .find(|a| a.is_baseline() && runs.iter().any(|r| r.allocator == a.name))
        .map(|a| a.name.clone());
    let groups = summarize_runs(&plan.allocators, &plan.threads, &runs, baseline.as_deref());
    Ok(BakeOff {
        workload: plan.workload.describe(),
        allocators: plan.allocators.clone(),
        missing: plan.missing.clone(),
        threads: plan.threads.clone(),
        repeat: plan.repeat,
        baseline,
        runs,
        refused,
        groups,
        notes,
        interrupted,
    })
}

fn optional(samples: Vec<Option<u64>>) -> Option<Figure> {
    let v: Option<Vec<f64>> = samples.into_iter().map(|s| s.map(|b| b as f64)).collect();
    v.and_then(Figure::of)
}

/// Groups runs by (thread count, allocator) and judges each against the baseline.
pub fn summarize_runs(
    allocators: &[Allocator],
    threads: &[u32],
    runs: &[RunRecord],
    baseline: Option<&str>,
) -> Vec<Group> {
    let mut groups = Vec::new();
    for &t in threads {
        let mut here = Vec::new();
        for a in allocators {
            let rs: Vec<&RunRecord> =
                runs.iter().filter(|r| r.threads == t && r.allocator == a.name).collect();
            let Some(throughput) = Figure::of(rs.iter().map(|r| r.throughput).collect()) else {
                continue;
            };
            let fig = |f: &dyn Fn(&RunRecord) -> f64| {
                Figure::of(rs.iter().map(|r| f(r)).collect()).unwrap_or(Figure {
                    median: f64::NAN,
                    min: f64::NAN,
                    max: f64::NAN,
                    samples: Vec::new(),
                })
            };
            here.push(Group {
                allocator: a.name.clone(),
                threads: t,
                relative: None,
                verdict: Verdict::NotJudged,
                cpu_per_op_us: fig(&|r| r.cpu_per_op_us),
                machine_cpu_per_op_us: fig(&|r| r.machine_cpu_per_op_us),
                hwm_bytes: optional(rs.iter().map(|r| r.memory.hwm_bytes).collect()),
                rss_bytes: optional(rs.iter().map(|r| r.memory.rss_bytes).collect()),
                pss_bytes: optional(rs.iter().map(|r| r.memory.pss_bytes).collect()),
                accessible_growth_bytes: fig(&|r| r.accessible_growth() as f64),
                total_growth_bytes: fig(&|r| r.total_growth() as f64),
                minor_faults: fig(&|r| r.minor_faults as f64),
                throughput,
            });
        }
        let base = baseline.and_then(|b| here.iter().find(|g| g.allocator == b)).cloned();
        for g in &mut here {
            let Some(base) = &base else { continue };
            if g.allocator == base.allocator {
                g.relative = Some(1.0);
                g.verdict = Verdict::Baseline;
                continue;
            }
            g.relative = Some(g.throughput.median / base.throughput.median);
            g.verdict = judge(&g.throughput, &base.throughput);
        }
        groups.extend(here);
    }
    groups
}

/// Compares a throughput figure with the baseline's: overlapping ranges are no significant
/// difference; too few rounds are not judged.
pub fn judge(this: &Figure, base: &Figure) -> Verdict {
    if this.samples.len() < MIN_ROUNDS_TO_RANK || base.samples.len() < MIN_ROUNDS_TO_RANK {
        Verdict::NotJudged
    } else if this.overlaps(base) {
        Verdict::NoSignificantDifference
    } else if this.median > base.median {
        Verdict::Faster
    } else {
        Verdict::Slower
    }
}

impl BakeOff {
    /// Group `g`'s throughput relative to the baseline, one sample a round: each round's
    /// throughput over the baseline's median at the same thread count (what the relative
    /// chart draws), so their median is [`Group::relative`] and a comparison of two bake-offs
    /// can test it. `None` without a baseline.
    pub fn relative_samples(&self, g: &Group) -> Option<Vec<f64>> {
        let relative = g.relative?;
        let base = self
            .baseline
            .as_deref()
            .and_then(|b| self.groups.iter().find(|x| x.threads == g.threads && x.allocator == b));
        let Some(base) = base.map(|b| b.throughput.median).filter(|m| *m > 0.0) else {
            return Some(vec![relative]);
        };
        Some(g.throughput.samples.iter().map(|t| t / base).collect())
    }
}

impl ToMetrics for BakeOff {
    fn to_metrics(&self) -> Vec<Metric> {
        let mut out = Vec::new();
        for g in &self.groups {
            let rs: Vec<&RunRecord> = self
                .runs
                .iter()
                .filter(|r| r.threads == g.threads && r.allocator == g.allocator)
                .collect();
            let metric = |name: &str, unit: Unit, samples: Vec<f64>| {
                Metric::new(name, unit, samples)
                    .label("allocator", &g.allocator)
                    .label("threads", g.threads)
            };
            out.push(metric(
                "alloc_throughput",
                Unit::PerSecond,
                rs.iter().map(|r| r.throughput).collect(),
            ));
            out.push(metric(
                "alloc_cpu_per_op",
                Unit::Nanoseconds,
                rs.iter().map(|r| r.cpu_per_op_us * 1e3).collect(),
            ));
            out.push(metric(
                "alloc_machine_cpu_per_op",
                Unit::Nanoseconds,
                rs.iter().map(|r| r.machine_cpu_per_op_us * 1e3).collect(),
            ));
            let bytes = |f: &dyn Fn(&RunRecord) -> Option<u64>| -> Option<Vec<f64>> {
                rs.iter().map(|r| f(r).map(|b| b as f64)).collect()
            };
            if let Some(s) = bytes(&|r| r.memory.hwm_bytes) {
                out.push(metric("alloc_peak_rss", Unit::Bytes, s));
            }
            if let Some(s) = bytes(&|r| r.memory.rss_bytes) {
                out.push(metric("alloc_rss", Unit::Bytes, s));
            }
            if let Some(s) = bytes(&|r| r.memory.pss_bytes) {
                out.push(metric("alloc_pss", Unit::Bytes, s));
            }
            out.push(metric(
                "alloc_address_space_growth",
                Unit::Bytes,
                rs.iter().map(|r| r.accessible_growth() as f64).collect(),
            ));
            out.push(metric(
                "alloc_vsz_growth",
                Unit::Bytes,
                rs.iter().map(|r| r.total_growth() as f64).collect(),
            ));
            out.push(metric(
                "alloc_minor_faults",
                Unit::Count,
                rs.iter().map(|r| r.minor_faults as f64).collect(),
            ));
            if let Some(samples) = self.relative_samples(g) {
                out.push(metric("alloc_relative_throughput", Unit::Ratio, samples));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(s: &[f64]) -> Figure {
        Figure::of(s.to_vec()).unwrap()
    }

    #[test]
    fn overlapping_ranges_are_not_ranked() {
        let base = fig(&[100.0, 110.0, 105.0]);
        assert_eq!(judge(&fig(&[108.0, 120.0, 125.0]), &base), Verdict::NoSignificantDifference);
        assert_eq!(judge(&fig(&[111.0, 120.0, 125.0]), &base), Verdict::Faster);
        assert_eq!(judge(&fig(&[50.0, 60.0, 99.0]), &base), Verdict::Slower);
        assert_eq!(judge(&fig(&[500.0]), &base), Verdict::NotJudged);
    }
}
