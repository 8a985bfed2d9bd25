//! The bake-off: allocators interleaved round-robin for `repeat` rounds at each thread count,
//! then medians with spread, throughput relative to glibc, and each allocator's verdict against
//! glibc from [`measure::verdict`], the engine every comparison uses: each run is a process of
//! its own and the rounds rotate, so the runs are the replicates ([`Level::Runs`]), and every
//! allocator at every thread count of one bake-off is one family (Holm).

use std::sync::atomic::{AtomicBool, Ordering};

use measure::verdict::{self as engine, assess, judge_family, Judgement, Level, RunNoise};
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
}

/// How an allocator's throughput compares with the baseline's at one thread count: the
/// engine's verdict in the bake-off's words (stored and printed as they were).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// This is the baseline.
    Baseline,
    /// The ratio's interval holds 1: no difference the runs can tell (`same`).
    NoSignificantDifference,
    /// More (or less) throughput than the baseline, the Holm-adjusted p-value across the
    /// bake-off below [`engine::ALPHA`].
    Faster,
    Slower,
    /// Fewer than two runs on a side, or no spread between runs to judge by (`untested`).
    NotJudged,
}

impl Verdict {
    /// The bake-off's word for the engine's verdict.
    pub fn of(j: &Judgement) -> Self {
        match j.verdict {
            engine::Verdict::Faster => Verdict::Faster,
            engine::Verdict::Slower => Verdict::Slower,
            engine::Verdict::Same => Verdict::NoSignificantDifference,
            engine::Verdict::Untested | engine::Verdict::PlacementDiffers => Verdict::NotJudged,
        }
    }
}

/// One allocator at one thread count over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub allocator: String,
    pub threads: u32,
    pub throughput: Figure,
    /// Median throughput ÷ the baseline's median.
    pub relative: Option<f64>,
    pub verdict: Verdict,
    /// What the verdict was decided on: the throughput's ratio to the baseline's (geometric
    /// means of the runs) with its interval, the p-values, how many runs each side had. `None`
    /// for the baseline, without one, and in bake-offs stored before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judgement: Option<Judgement>,
    /// The judgement's grounds in words ("5 runs each").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rests_on: String,
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

impl Group {
    /// What the verdict rests on, in words: "1.52× (95% interval 1.47–1.58), 5 runs each" (the
    /// ratio of geometric means, not the table's ratio of medians); empty without a judgement.
    pub fn grounds(&self) -> String {
        let Some(j) = &self.judgement else { return String::new() };
        let ratio = if j.ratio.is_finite() { format!("{:.2}×", j.ratio) } else { "–".into() };
        if j.ratio_low.is_finite() && j.ratio_high.is_finite() {
            format!(
                "{ratio} ({:.0}% interval {:.2}–{:.2}), {}",
                engine::CONFIDENCE * 100.0,
                j.ratio_low,
                j.ratio_high,
                self.rests_on
            )
        } else {
            format!("{ratio}, {}", self.rests_on)
        }
    }
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
                judgement: None,
                rests_on: String::new(),
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
            g.judgement = Some(assess(
                &g.throughput.samples,
                &base.throughput.samples,
                Level::Runs,
                RunNoise::none(),
            ));
        }
        groups.extend(here);
    }
    judge(&mut groups);
    groups
}

/// Decides every assessed group of one bake-off together: all allocators at all thread counts
/// are one family, so the more there are, the stronger each difference must be to be called.
/// Throughput: higher is better.
pub fn judge(groups: &mut [Group]) {
    let mut family: Vec<(&mut Judgement, bool)> =
        groups.iter_mut().filter_map(|g| g.judgement.as_mut()).map(|j| (j, false)).collect();
    judge_family(&mut family);
    for g in groups.iter_mut() {
        if let Some(j) = &g.judgement {
            g.verdict = Verdict::of(j);
            g.rests_on = j.rests_on();
        }
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
    use crate::allocator::parse_glibc;
    use crate::procfs::{AddressSpace, Memory};
    use crate::run::CpuUse;

    fn record(allocator: &str, threads: u32, round: u32, throughput: f64) -> RunRecord {
        RunRecord {
            allocator: allocator.into(),
            threads,
            round,
            pid: 1,
            verified: "x".into(),
            ops: 1000.0,
            seconds: 1000.0 / throughput,
            throughput,
            cpu: CpuUse::default(),
            cpu_per_op_us: 1.0,
            machine_cpu_per_op_us: 1.0,
            memory: Memory::default(),
            space_start: AddressSpace::default(),
            space_end: AddressSpace::default(),
            minor_faults: 0,
        }
    }

    /// glibc and a tuned glibc at one and two threads, each round's throughput given.
    fn groups(glibc: &[f64], tuned: &[f64]) -> Vec<Group> {
        let allocators =
            vec![Allocator::glibc(), parse_glibc("glibc:arena_max=1").unwrap().unwrap()];
        let mut runs = Vec::new();
        for threads in [1, 2] {
            for (round, (g, t)) in glibc.iter().zip(tuned).enumerate() {
                runs.push(record("glibc", threads, round as u32, *g));
                runs.push(record("glibc:arena_max=1", threads, round as u32, *t));
            }
        }
        summarize_runs(&allocators, &[1, 2], &runs, Some("glibc"))
    }

    fn tuned(groups: &[Group]) -> Vec<&Group> {
        groups.iter().filter(|g| g.allocator != "glibc").collect()
    }

    /// The runs are the replicates: ranges that overlap can still differ when every run of
    /// one is well above the other's on average, and ranges apart on two noisy runs a side
    /// are not enough once the whole bake-off is one family.
    #[test]
    fn the_engine_judges_runs_as_replicates_across_the_whole_bake_off() {
        let glibc = [100.0, 104.0, 98.0, 101.0, 103.0];
        // About 12% more, the lowest run inside glibc's range: the old rule said no
        // significant difference.
        let g = groups(&glibc, &[112.0, 116.0, 103.5, 114.0, 115.0]);
        for t in tuned(&g) {
            assert_eq!(t.verdict, Verdict::Faster, "{t:?}");
            let j = t.judgement.unwrap();
            assert_eq!((j.level, j.this_replicates, j.baseline_replicates), (Level::Runs, 5, 5));
            assert!(j.ratio_low > 1.0 && j.ratio_low < j.ratio && j.ratio < j.ratio_high, "{j:?}");
            // One family of two (one and two threads): Holm doubles the smaller p-value.
            assert!(j.adjusted_p > j.p_value, "{j:?}");
            assert_eq!(t.rests_on, "5 runs each");
            assert!(
                t.grounds() == "1.11× (95% interval 1.05–1.17), 5 runs each",
                "{}",
                t.grounds()
            );
        }
        assert!(g.iter().any(|g| g.verdict == Verdict::Baseline && g.judgement.is_none()));
        // The same throughput as glibc's, shuffled: the interval holds 1.
        let same = groups(&glibc, &[101.0, 98.0, 104.0, 103.0, 100.0]);
        for t in tuned(&same) {
            assert_eq!(t.verdict, Verdict::NoSignificantDifference, "{t:?}");
            let j = t.judgement.unwrap();
            assert!(j.ratio_low < 1.0 && j.ratio_high > 1.0, "{j:?}");
        }
        // Halved: slower.
        let halved: Vec<f64> = glibc.iter().map(|v| v / 2.0 + 1.0).collect();
        assert!(tuned(&groups(&glibc, &halved)).iter().all(|t| t.verdict == Verdict::Slower));
        // One round: nothing to judge by, never a verdict.
        let one = groups(&[100.0], &[500.0]);
        for t in tuned(&one) {
            assert_eq!(t.verdict, Verdict::NotJudged, "{t:?}");
            assert_eq!(t.rests_on, "1 run each");
            assert_eq!(t.grounds(), "5.00×, 1 run each");
        }
    }

    /// Bake-offs stored before the verdicts were the engine's read back (no judgement), and a
    /// judged one reads back whole, the interval of an untested group included.
    #[test]
    fn stored_groups_read_back() {
        let judged = groups(&[100.0], &[500.0]);
        let text = serde_json::to_string(&judged).unwrap();
        let back: Vec<Group> = serde_json::from_str(&text).unwrap();
        assert_eq!(back.len(), judged.len());
        assert!(back[1].judgement.unwrap().ratio_low.is_nan());
        assert_eq!(back[1].verdict, Verdict::NotJudged);
        let mut old = serde_json::to_value(&judged[1]).unwrap();
        let fields = old.as_object_mut().unwrap();
        fields.remove("judgement");
        fields.remove("rests_on");
        fields.insert(
            "verdict".into(),
            serde_json::json!({ "verdict": "no_significant_difference" }),
        );
        let old: Group = serde_json::from_value(old).unwrap();
        assert_eq!(old.grounds(), "");
        assert_eq!((old.verdict, old.judgement), (Verdict::NoSignificantDifference, None));
    }
}
