//! The Tamp article's experiment as one run: compress an in-memory input to nowhere with 1, 2, …
//! worker threads in one pipeline ("unit"), then with several units at once, and record for each
//! step the throughput, where each thread's time went, how busy every CPU was (/proc/stat) and the
//! verdict. [`summarise`] turns the steps into the three answers: single-thread speed, where one
//! instance stops scaling and why, and the machine's throughput when it is filled.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::codec::Codec;
use crate::procstat::{self, MachineBusy};
use crate::result::{inputs_from, verdict, Verdict};
use crate::{compress_reader, Output, RunResult, TampError};

/// Which steps to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePlan {
    /// Units (independent pipelines run at once) for each step series; 1 gives the one-instance
    /// curve.
    pub units: Vec<usize>,
    /// Worker threads per unit.
    pub threads: Vec<usize>,
    /// Uncompressed bytes per block.
    pub block_size: usize,
    /// How many times every step runs (at least 1): the steps one after the other in each
    /// round, so a passing disturbance touches one sample of each step rather than every sample
    /// of one. Each round of a step is one sample of its throughput. More than one round come
    /// after a warm-up run of the first step that is not counted.
    pub rounds: usize,
}

impl ScalePlan {
    /// The Tamp article's two charts for this machine: 1 unit × 1, 2, 4, … up to 2 × CPUs
    /// threads, then 2 and 4 units (or as many as CPUs, if fewer) with threads up to the CPU
    /// count.
    pub fn for_machine(cpus: usize) -> Self {
        let mut threads = vec![1];
        while threads.last().is_some_and(|&t| t < 2 * cpus) {
            let t = threads.last().copied().unwrap_or(1) * 2;
            threads.push(t.min(2 * cpus));
        }
        let mut units = vec![1];
        for u in [2, 4] {
            if u <= cpus.max(2) {
                units.push(u);
            }
        }
        Self { units, threads, block_size: crate::DEFAULT_BLOCK, rounds: 1 }
    }
}

/// One step: `units` pipelines with `threads` workers each, all at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaleStep {
    /// Pipelines run at once.
    pub units: usize,
    /// Workers per pipeline.
    pub threads: usize,
    /// Uncompressed bytes through all units.
    pub bytes: u64,
    /// Wall time of the step (until the last unit ended), seconds.
    pub wall_s: f64,
    /// Uncompressed MB (10^6) per second, all units together.
    pub mb_per_s: f64,
    /// Compressed / uncompressed.
    pub ratio: f64,
    /// Mean busy share of the units' readers.
    pub reader_busy: f64,
    /// Mean busy share of the units' workers.
    pub workers_busy: f64,
    /// Mean busy share of the units' writers.
    pub writer_busy: f64,
    /// How busy the CPUs were during the step (None if /proc/stat could not be read).
    pub machine: Option<MachineBusy>,
    /// CPUs online.
    pub online_cpus: usize,
    /// What limited this step.
    pub verdict: Verdict,
    /// The verdict in a sentence.
    pub verdict_reason: String,
    /// A plan run in rounds: each round's MB/s in the order run, one sample each for a
    /// comparison; the figures above are the median round's ([`combine_rounds`]). Empty for
    /// one round, and in runs stored before rounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds_mb_per_s: Vec<f64>,
}

impl ScaleStep {
    /// Each round's MB/s (the step's own for one round): the samples of its throughput.
    pub fn mb_per_s_samples(&self) -> Vec<f64> {
        if self.rounds_mb_per_s.is_empty() {
            vec![self.mb_per_s]
        } else {
            self.rounds_mb_per_s.clone()
        }
    }
}

/// One step of the rounds of that step (in the order run): the median round's (by MB/s; of an
/// even count the lower middle one) with every round's MB/s in
/// [`ScaleStep::rounds_mb_per_s`]. A single round is returned as it is; `None` for none.
pub fn combine_rounds(rounds: Vec<ScaleStep>) -> Option<ScaleStep> {
    if rounds.len() <= 1 {
        return rounds.into_iter().next();
    }
    let speeds: Vec<f64> = rounds.iter().map(|s| s.mb_per_s).collect();
    let median = crate::result::median_index(&speeds)?;
    let mut step = rounds.into_iter().nth(median)?;
    step.rounds_mb_per_s = speeds;
    Some(step)
}

/// The steps and what they say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaleReport {
    /// Codec name.
    pub codec: String,
    /// Codec level, if any.
    pub level: Option<i32>,
    /// Input bytes each unit compresses per step.
    pub input_bytes: u64,
    /// Block size.
    pub block_size: usize,
    /// Every step, in the order run.
    pub steps: Vec<ScaleStep>,
    /// The answers.
    pub summary: ScaleSummary,
    /// A stop was asked for: the steps are those that finished.
    pub interrupted: bool,
}

/// Where one instance stops scaling and why, and what the filled machine does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaleSummary {
    /// One unit, one worker: MB/s.
    pub single_thread_mb_s: Option<f64>,
    /// One unit: the best step's threads and MB/s.
    pub one_unit_best: Option<(usize, f64)>,
    /// One unit: the last thread count that still gained ≥ 10% over the one before; `None` if the
    /// curve never flattened (or there was one step).
    pub one_unit_stops_at: Option<usize>,
    /// Why it stopped: the verdict of the first step that did not gain.
    pub one_unit_limit: Option<Verdict>,
    /// The best step of all: units, threads, MB/s.
    pub filled_best: Option<(usize, usize, f64)>,
    /// What the machine itself gives independent jobs, and how close one instance came to it.
    /// `None` without the steps to tell (runs stored before it, too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_limit: Option<MachineLimit>,
    /// The summary in sentences.
    pub text: String,
}

/// More threads must give at least this much more throughput to count as scaling.
pub const GAIN: f64 = 1.10;

/// The machine's own limit for `jobs` jobs, measured in the same run as the pipeline: `jobs`
/// independent single-thread units against one. Two vCPUs may be two hyperthreads of one host
/// core, or share it with other guests: then no program gets 2× from them, and a pipeline's
/// scaling is judged against what they give, not against the count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MachineLimit {
    /// How many jobs ran at once.
    pub jobs: usize,
    /// Throughput of `jobs` independent single-thread units over one unit's.
    pub independent: f64,
    /// Throughput of one instance with `jobs` workers over one worker's, when that step ran.
    pub one_instance: Option<f64>,
}

/// Below this share of `jobs`×, independent jobs did not get a CPU each.
pub const WHOLE_CPUS: f64 = 0.80;
/// At or above this share of the machine's limit, one instance reached the machine's limit.
pub const AT_THE_LIMIT: f64 = 0.90;

impl MachineLimit {
    /// From the steps: the most units run with one worker each against one unit of one worker,
    /// and the one-unit step with as many workers. `None` without both.
    pub fn of(steps: &[ScaleStep]) -> Option<Self> {
        let single = steps.iter().find(|s| s.units == 1 && s.threads == 1)?.mb_per_s;
        let many =
            steps.iter().filter(|s| s.units > 1 && s.threads == 1).max_by_key(|s| s.units)?;
        if !(single > 0.0 && many.mb_per_s.is_finite()) {
            return None;
        }
        let one_instance = steps
            .iter()
            .find(|s| s.units == 1 && s.threads == many.units)
            .map(|s| s.mb_per_s / single)
            .filter(|r| r.is_finite());
        Some(Self { jobs: many.units, independent: many.mb_per_s / single, one_instance })
    }

    /// Which limit was hit, in sentences.
    pub fn text(&self) -> String {
        let n = self.jobs;
        let mut text = format!(
            "{n} independent single-thread units ran {:.2}× one ({:.0}% of {n}×): the machine's \
             own limit for {n} jobs",
            self.independent,
            self.independent / n as f64 * 100.0
        );
        if self.independent < WHOLE_CPUS * n as f64 {
            text += " — its CPUs are not whole cores to these jobs (hyperthreads of one core, or \
                     a host that shares them)";
        }
        text += ".";
        if let Some(one) = self.one_instance {
            let share = one / self.independent;
            text += &format!(
                " One instance with {n} workers: {one:.2}× one worker, {:.0}% of that limit: {}.",
                share * 100.0,
                if share >= AT_THE_LIMIT {
                    "the machine's limit, not the pipeline's"
                } else {
                    "the pipeline's own (its reader, writer or hand-offs), not the machine's"
                }
            );
        }
        text
    }
}

/// Summarises a step series (pure).
pub fn summarise(steps: &[ScaleStep]) -> ScaleSummary {
    let mut one: Vec<&ScaleStep> = steps.iter().filter(|s| s.units == 1).collect();
    one.sort_by_key(|s| s.threads);
    let single = one.iter().find(|s| s.threads == 1).map(|s| s.mb_per_s);
    let best_one = one
        .iter()
        .max_by(|a, b| a.mb_per_s.total_cmp(&b.mb_per_s))
        .map(|s| (s.threads, s.mb_per_s));
    let mut stops_at = None;
    let mut limit = None;
    for w in one.windows(2) {
        if w[1].mb_per_s < GAIN * w[0].mb_per_s {
            stops_at = Some(w[0].threads);
            limit = Some(w[1].verdict);
            break;
        }
    }
    let filled = steps
        .iter()
        .max_by(|a, b| a.mb_per_s.total_cmp(&b.mb_per_s))
        .map(|s| (s.units, s.threads, s.mb_per_s));
    let mut text = String::new();
    if let Some(s) = single {
        text += &format!("One thread: {s:.0} MB/s. ");
    }
    match (stops_at, limit, best_one) {
        (Some(t), Some(v), _) => {
            let why = one
                .iter()
                .find(|s| s.threads > t)
                .map_or(String::new(), |s| format!(" ({})", s.verdict_reason));
            text += &format!(
                "One instance stops scaling at {t} thread(s): more gave < {:.0}% more, {}{why}. ",
                (GAIN - 1.0) * 100.0,
                v.name()
            );
        }
        (None, _, Some((t, mb))) if one.len() > 1 => {
            text += &format!("One instance was still scaling at {t} threads ({mb:.0} MB/s). ");
        }
        _ => {}
    }
    if let Some((u, t, mb)) = filled {
        text += &format!("Best of all: {u} unit(s) × {t} thread(s), {mb:.0} MB/s");
        if let Some((_, b)) = best_one {
            if u > 1 && b > 0.0 {
                text += &format!(", {:.2}× one instance's best", mb / b);
            }
        }
        text += ".";
    }
    let machine_limit = MachineLimit::of(steps);
    if let Some(limit) = &machine_limit {
        text += " ";
        text += &limit.text();
    }
    ScaleSummary {
        single_thread_mb_s: single,
        one_unit_best: best_one,
        one_unit_stops_at: stops_at,
        one_unit_limit: limit,
        filled_best: filled,
        machine_limit,
        text,
    }
}

/// Runs the plan over `input` (every unit compresses all of it, reading from memory as the
/// original read from tmpfs) with `codec`, discarding the output. Units run for each value of
/// `plan.units`, threads for each of `plan.threads`.
pub fn run(
    input: &[u8],
    codec: &dyn Codec,
    plan: &ScalePlan,
    stop: &AtomicBool,
) -> Result<ScaleReport, TampError> {
    if plan.units.contains(&0) || plan.threads.contains(&0) || plan.rounds == 0 {
        return Err(TampError::Usage("units, threads and rounds must be at least 1".into()));
    }
    let order: Vec<(usize, usize)> =
        plan.units.iter().flat_map(|&u| plan.threads.iter().map(move |&t| (u, t))).collect();
    // Each step's finished rounds, in plan order.
    let mut rounds: Vec<Vec<ScaleStep>> = vec![Vec::new(); order.len()];
    let mut interrupted = false;
    // Several rounds come after a warm-up of the first step, not counted (as `compress
    // --rounds`).
    if let (true, Some(&(units, threads))) = (plan.rounds > 1, order.first()) {
        if stop.load(std::sync::atomic::Ordering::Relaxed)
            || run_step(input, codec, units, threads, plan.block_size, stop)?.is_none()
        {
            interrupted = true;
        }
    }
    'outer: for _ in 0..plan.rounds {
        if interrupted {
            break;
        }
        for (i, &(units, threads)) in order.iter().enumerate() {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                interrupted = true;
                break 'outer;
            }
            let step = run_step(input, codec, units, threads, plan.block_size, stop)?;
            match step {
                Some(s) => rounds[i].push(s),
                None => {
                    interrupted = true;
                    break 'outer;
                }
            }
        }
    }
    let steps: Vec<ScaleStep> = rounds.into_iter().filter_map(combine_rounds).collect();
    let summary = summarise(&steps);
    Ok(ScaleReport {
        codec: codec.name().to_string(),
        level: codec.level(),
        input_bytes: input.len() as u64,
        block_size: plan.block_size,
        steps,
        summary,
        interrupted,
    })
}

/// One step; `None` if it was interrupted.
fn run_step(
    input: &[u8],
    codec: &dyn Codec,
    units: usize,
    threads: usize,
    block: usize,
    stop: &AtomicBool,
) -> Result<Option<ScaleStep>, TampError> {
    let name = Path::new("(memory)");
    let stat0 = procstat::read().ok();
    let t0 = Instant::now();
    let results: Vec<Result<RunResult, TampError>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..units)
            .map(|_| {
                s.spawn(move || {
                    compress_reader(input, name, &Output::Discard, codec, threads, block, stop)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or(Err(TampError::Panicked("unit")))).collect()
    });
    let wall = t0.elapsed().as_secs_f64();
    let machine = stat0.zip(procstat::read().ok()).map(|(a, b)| procstat::delta(&a, &b));
    let mut runs = Vec::with_capacity(units);
    for r in results {
        runs.push(r?);
    }
    if runs.iter().any(|r| r.interrupted) {
        return Ok(None);
    }
    let n = runs.len().max(1) as f64;
    let mean = |f: &dyn Fn(&RunResult) -> f64| runs.iter().map(f).sum::<f64>() / n;
    let cpus = crate::online_cpus();
    let process_share = runs.first().map_or(0.0, |r| {
        // Every unit's getrusage saw the whole process: one of them is the step's CPU.
        (r.cpu_user_s + r.cpu_sys_s) / (r.wall_s.max(1e-9) * cpus as f64)
    });
    let cpu_busy = machine.as_ref().map_or(process_share, |m| m.machine_share.max(process_share));
    let per_unit: Vec<_> = runs.iter().map(|r| inputs_from(&r.thread_busy, cpu_busy)).collect();
    let m = |f: &dyn Fn(&crate::VerdictInputs) -> f64| per_unit.iter().map(f).sum::<f64>() / n;
    let inputs = crate::VerdictInputs {
        reader_busy: m(&|v| v.reader_busy),
        writer_busy: m(&|v| v.writer_busy),
        workers_busy: m(&|v| v.workers_busy),
        cpu_busy,
    };
    let (v, why) = verdict(&inputs);
    let bytes: u64 = runs.iter().map(|r| r.bytes_in).sum();
    Ok(Some(ScaleStep {
        units,
        threads,
        bytes,
        wall_s: wall,
        mb_per_s: if wall > 0.0 { bytes as f64 / 1e6 / wall } else { 0.0 },
        ratio: mean(&|r| r.ratio),
        reader_busy: inputs.reader_busy,
        workers_busy: inputs.workers_busy,
        writer_busy: inputs.writer_busy,
        machine,
        online_cpus: cpus,
        verdict: v,
        verdict_reason: why,
        rounds_mb_per_s: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(units: usize, threads: usize, mb: f64, v: Verdict) -> ScaleStep {
        ScaleStep {
            units,
            threads,
            bytes: 0,
            wall_s: 1.0,
            mb_per_s: mb,
            ratio: 0.5,
            reader_busy: 0.0,
            workers_busy: 0.0,
            writer_busy: 0.0,
            machine: None,
            online_cpus: 64,
            verdict: v,
            verdict_reason: format!("{} reason", v.name()),
            rounds_mb_per_s: Vec::new(),
        }
    }

    #[test]
    fn finds_where_one_instance_stops_and_why() {
        // The shape the Tamp article saw on a T5440: rising to 12 threads, then flat because of
        // the reader.
        let steps = vec![
            step(1, 1, 100.0, Verdict::Scales),
            step(1, 4, 390.0, Verdict::Scales),
            step(1, 12, 1150.0, Verdict::Scales),
            step(1, 16, 1180.0, Verdict::ReaderBound),
            step(1, 32, 1175.0, Verdict::ReaderBound),
            step(4, 16, 4300.0, Verdict::CpuBound),
        ];
        let s = summarise(&steps);
        assert_eq!(s.single_thread_mb_s, Some(100.0));
        assert_eq!(s.one_unit_stops_at, Some(12));
        assert_eq!(s.one_unit_limit, Some(Verdict::ReaderBound));
        assert_eq!(s.one_unit_best, Some((16, 1180.0)));
        assert_eq!(s.filled_best, Some((4, 16, 4300.0)));
        assert!(s.text.contains("stops scaling at 12"), "{}", s.text);
        assert!(s.text.contains("reader-bound"), "{}", s.text);
        assert!(s.text.contains("3.64×"), "{}", s.text);
    }

    #[test]
    fn scaling_is_judged_against_what_independent_jobs_get() {
        // Two vCPUs that are hyperthreads of one core: two independent jobs get 1.25×, and a
        // pipeline's 1.20× is the machine's limit, not the pipeline's.
        let shared = [
            step(1, 1, 100.0, Verdict::Scales),
            step(1, 2, 120.0, Verdict::CpuBound),
            step(2, 1, 125.0, Verdict::CpuBound),
        ];
        let limit = summarise(&shared).machine_limit.unwrap();
        assert_eq!(limit.jobs, 2);
        assert!((limit.independent - 1.25).abs() < 1e-9 && limit.one_instance == Some(1.2));
        let text = summarise(&shared).text;
        assert!(text.contains("1.25× one (62% of 2×)"), "{text}");
        assert!(text.contains("not whole cores"), "{text}");
        assert!(text.contains("96% of that limit: the machine's limit"), "{text}");
        // Whole cores, and a pipeline that stops short of them.
        let short = [
            step(1, 1, 100.0, Verdict::Scales),
            step(1, 2, 130.0, Verdict::ReaderBound),
            step(2, 1, 196.0, Verdict::CpuBound),
        ];
        let text = summarise(&short).text;
        assert!(!text.contains("not whole cores"), "{text}");
        assert!(text.contains("66% of that limit: the pipeline's own"), "{text}");
        // Without independent units there is nothing to judge against.
        assert_eq!(summarise(&shared[..2]).machine_limit, None);
    }

    #[test]
    fn still_scaling_and_empty() {
        let steps = vec![step(1, 1, 100.0, Verdict::Scales), step(1, 2, 195.0, Verdict::Scales)];
        let s = summarise(&steps);
        assert_eq!(s.one_unit_stops_at, None);
        assert!(s.text.contains("still scaling at 2"), "{}", s.text);
        let e = summarise(&[]);
        assert_eq!(e.filled_best, None);
        assert_eq!(e.text, "");
    }

    #[test]
    fn unordered_steps_are_sorted_by_threads() {
        let steps = vec![
            step(1, 4, 200.0, Verdict::CpuBound),
            step(1, 1, 100.0, Verdict::Scales),
            step(1, 2, 190.0, Verdict::Scales),
        ];
        let s = summarise(&steps);
        assert_eq!(s.one_unit_stops_at, Some(2));
        assert_eq!(s.one_unit_limit, Some(Verdict::CpuBound));
    }

    #[test]
    fn a_step_of_rounds_is_its_median_round_with_every_round_s_speed() {
        let rounds: Vec<ScaleStep> = [300.0, 100.0, 200.0]
            .iter()
            .map(|&mb| step(1, 2, mb, if mb > 250.0 { Verdict::CpuBound } else { Verdict::Scales }))
            .collect();
        let s = combine_rounds(rounds).unwrap();
        assert_eq!((s.mb_per_s, s.verdict), (200.0, Verdict::Scales), "the median round whole");
        assert_eq!(s.rounds_mb_per_s, [300.0, 100.0, 200.0]);
        assert_eq!(s.mb_per_s_samples(), [300.0, 100.0, 200.0]);
        // One round: as it was, and one sample.
        let one = combine_rounds(vec![step(1, 1, 90.0, Verdict::Scales)]).unwrap();
        assert!(one.rounds_mb_per_s.is_empty());
        assert_eq!(one.mb_per_s_samples(), [90.0]);
        assert!(combine_rounds(Vec::new()).is_none());
        // A step stored before rounds reads with one sample.
        let mut stored = serde_json::to_value(step(2, 2, 50.0, Verdict::Scales)).unwrap();
        assert!(stored.get("rounds_mb_per_s").is_none(), "{stored}");
        stored.as_object_mut().unwrap().remove("rounds_mb_per_s");
        let old: ScaleStep = serde_json::from_value(stored).unwrap();
        assert_eq!(old.mb_per_s_samples(), [50.0]);
    }

    #[test]
    fn every_step_runs_in_every_round() {
        let input = crate::corpus::generate(1, 128 << 10);
        let codec = crate::codec::codec_for(crate::Format::Lz4, 1).unwrap();
        let plan =
            ScalePlan { units: vec![1, 2], threads: vec![1, 2], block_size: 32 << 10, rounds: 3 };
        let stop = AtomicBool::new(false);
        let r = run(&input, codec.as_ref(), &plan, &stop).unwrap();
        let steps: Vec<(usize, usize)> = r.steps.iter().map(|s| (s.units, s.threads)).collect();
        assert_eq!(steps, [(1, 1), (1, 2), (2, 1), (2, 2)], "plan order, once each");
        for s in &r.steps {
            assert_eq!(s.rounds_mb_per_s.len(), 3, "{s:?}");
            assert!(s.rounds_mb_per_s.contains(&s.mb_per_s), "the median round's: {s:?}");
        }
        let metrics = measure::ToMetrics::to_metrics(&r);
        assert!(metrics.iter().all(|m| m.samples.len() == 3), "{metrics:?}");
        let zero = ScalePlan { rounds: 0, ..plan };
        assert!(matches!(run(&input, codec.as_ref(), &zero, &stop), Err(TampError::Usage(_))));
        // Stopped before it starts: nothing measured, said so.
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let plan = ScalePlan { rounds: 2, ..zero };
        let cut = run(&input, codec.as_ref(), &plan, &stop).unwrap();
        assert!(cut.interrupted && cut.steps.is_empty());
    }

    #[test]
    fn plan_for_two_cpus() {
        let p = ScalePlan::for_machine(2);
        assert_eq!(p.threads, vec![1, 2, 4]);
        assert_eq!(p.units, vec![1, 2]);
        let p = ScalePlan::for_machine(6);
        assert_eq!(p.threads, vec![1, 2, 4, 8, 12]);
        assert_eq!(p.units, vec![1, 2, 4]);
    }
}
