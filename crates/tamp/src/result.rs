//! What a run reports, and the verdict on why it went no faster.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::pipeline::ThreadTimes;

/// Compress or decompress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    /// Input → compressed output.
    Compress,
    /// Compressed input → original bytes.
    Decompress,
}

/// Where one thread's time went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadBusy {
    /// "reader", "worker N", "writer" (or "serial" for a one-thread decode).
    pub role: String,
    /// The thread's lifetime, seconds.
    pub wall_s: f64,
    /// Time not spent waiting for the pipeline (reading, compressing, writing — including time
    /// the thread was runnable but had no CPU), seconds.
    pub busy_s: f64,
    /// CPU time of the thread (CLOCK_THREAD_CPUTIME_ID), seconds.
    pub cpu_s: f64,
    /// busy_s / wall_s.
    pub busy_share: f64,
    /// cpu_s / wall_s.
    pub cpu_share: f64,
}

impl ThreadBusy {
    pub(crate) fn from_times(t: &ThreadTimes) -> Self {
        let wall = t.wall.as_secs_f64();
        let busy = t.wall.saturating_sub(t.wait).as_secs_f64();
        let cpu = t.cpu.as_secs_f64();
        Self {
            role: t.role.clone(),
            wall_s: wall,
            busy_s: busy,
            cpu_s: cpu,
            busy_share: share(busy, wall),
            cpu_share: share(cpu, wall),
        }
    }
}

pub(crate) fn share(part: f64, whole: f64) -> f64 {
    if whole > 0.0 && part.is_finite() {
        (part / whole).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// Why a run went no faster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The one reader thread was busy nearly all the time while workers waited for it: more
    /// workers cannot help (the "12–14 threads" limit the Tamp article hit). Run more units at
    /// once instead.
    ReaderBound,
    /// The one writer thread was busy nearly all the time while workers waited for it.
    WriterBound,
    /// All CPUs were busy: more threads only share them.
    CpuBound,
    /// None of those: the workers were the limit and CPUs were left, so more workers should go
    /// faster.
    Scales,
    /// The input could only be decoded on one thread (see `serial_reason`).
    SingleThreaded,
}

impl Verdict {
    /// The name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::ReaderBound => "reader-bound",
            Verdict::WriterBound => "writer-bound",
            Verdict::CpuBound => "CPU-bound",
            Verdict::Scales => "scales",
            Verdict::SingleThreaded => "single-threaded",
        }
    }
}

/// What the verdict is decided from (all shares 0..=1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VerdictInputs {
    /// The reader thread's busy share.
    pub reader_busy: f64,
    /// The writer thread's busy share.
    pub writer_busy: f64,
    /// The workers' mean busy share.
    pub workers_busy: f64,
    /// CPU time used / (wall time × online CPUs): of the process for one run, of the whole machine
    /// (/proc/stat) for a scale step.
    pub cpu_busy: f64,
}

/// A thread at or above this busy share is "near 100% busy".
pub const BUSY: f64 = 0.90;
/// Workers below this busy share were waiting for the reader or the writer a good part of the time.
pub const WORKERS_STARVED: f64 = 0.80;
/// At or above this share of all CPUs, the machine is full.
pub const CPUS_FULL: f64 = 0.90;

/// Decides the verdict and says why, in one line. Pure: see the unit tests for the cases.
///
/// A saturated reader (or writer) with starved workers comes first: then the limit is that one
/// thread, whatever the CPUs do. Otherwise full CPUs are the limit; otherwise the run scales.
pub fn verdict(v: &VerdictInputs) -> (Verdict, String) {
    let pct = |x: f64| x * 100.0;
    if v.reader_busy >= BUSY && v.workers_busy < WORKERS_STARVED {
        (
            Verdict::ReaderBound,
            format!(
                "the reader was busy {:.0}% of the time while the workers were busy {:.0}%: one reader cannot feed more workers; run more units at once",
                pct(v.reader_busy),
                pct(v.workers_busy)
            ),
        )
    } else if v.writer_busy >= BUSY && v.workers_busy < WORKERS_STARVED {
        (
            Verdict::WriterBound,
            format!(
                "the writer was busy {:.0}% of the time while the workers were busy {:.0}%: the output cannot take more",
                pct(v.writer_busy),
                pct(v.workers_busy)
            ),
        )
    } else if v.cpu_busy >= CPUS_FULL {
        (
            Verdict::CpuBound,
            format!("the CPUs were {:.0}% busy: more threads only share them", pct(v.cpu_busy)),
        )
    } else {
        (
            Verdict::Scales,
            format!(
                "the workers were busy {:.0}% and the CPUs {:.0}%: more workers should go faster",
                pct(v.workers_busy),
                pct(v.cpu_busy)
            ),
        )
    }
}

/// Verdict inputs from the thread times of one pipeline (reader first, writer last).
pub(crate) fn inputs_from(threads: &[ThreadBusy], cpu_busy: f64) -> VerdictInputs {
    let role = |r: &str| threads.iter().find(|t| t.role == r).map_or(0.0, |t| t.busy_share);
    let workers: Vec<f64> =
        threads.iter().filter(|t| t.role.starts_with("worker")).map(|t| t.busy_share).collect();
    let workers_busy =
        if workers.is_empty() { 0.0 } else { workers.iter().sum::<f64>() / workers.len() as f64 };
    VerdictInputs {
        reader_busy: role("reader"),
        writer_busy: role("writer"),
        workers_busy,
        cpu_busy,
    }
}

/// The result of one compress or decompress run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Compress or decompress.
    pub operation: Operation,
    /// "lz4", "zstd" (or a test codec's name).
    pub format: String,
    /// The compression level, when the codec has one.
    pub level: Option<i32>,
    /// The input path (or a name given for a stream).
    pub input: String,
    /// The output path; `None` with `--discard`.
    pub output: Option<String>,
    /// Worker threads (besides the reader and the writer).
    pub threads: usize,
    /// Uncompressed bytes per block (compress), or the largest block/frame seen (decompress).
    pub block_size: usize,
    /// Blocks (frames, for zstd) through the pipeline.
    pub blocks: u64,
    /// Bytes read.
    pub bytes_in: u64,
    /// Bytes written (or that would have been, with `--discard`).
    pub bytes_out: u64,
    /// Compressed size / uncompressed size (0.40 = 60% smaller).
    pub ratio: f64,
    /// Wall time, seconds.
    pub wall_s: f64,
    /// User CPU time of the process during the run, seconds.
    pub cpu_user_s: f64,
    /// System CPU time of the process during the run, seconds.
    pub cpu_sys_s: f64,
    /// Uncompressed MB (10^6 bytes) per wall second, for both directions.
    pub mb_per_s: f64,
    /// This process's (user + sys) / (wall × online CPUs).
    pub cpu_share: f64,
    /// CPUs online.
    pub online_cpus: usize,
    /// Busy share of the whole machine during the run (/proc/stat; other processes included).
    pub machine_cpu_share: Option<f64>,
    /// CPUs at least 90% busy during the run (/proc/stat).
    pub cpus_busy: Option<usize>,
    /// Each thread's busy and CPU share.
    pub thread_busy: Vec<ThreadBusy>,
    /// Why it went no faster.
    pub verdict: Verdict,
    /// The verdict in a sentence, with its numbers.
    pub verdict_reason: String,
    /// False when the input had to be decoded on one thread.
    pub parallel: bool,
    /// Why it was decoded on one thread.
    pub serial_reason: Option<String>,
    /// A stop was asked for: the figures cover the part done, and no output file was left.
    pub interrupted: bool,
    /// A run repeated in rounds (`compress --rounds N`): every round's figures in the order
    /// run, one sample each for a comparison; the figures above are the median round's
    /// ([`RunResult::of_rounds`]). Empty for a single run, and in runs stored before rounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<Round>,
}

/// One round of a run repeated in rounds: a fresh pipeline (threads, buffers) over the whole
/// input, so each round is one independent sample of the run's speed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// Wall time, seconds.
    pub wall_s: f64,
    /// Uncompressed MB (10^6 bytes) per wall second.
    pub mb_per_s: f64,
    /// User + system CPU seconds of the process per uncompressed MB (`None` for no bytes).
    pub cpu_s_per_mb: Option<f64>,
}

impl Round {
    fn of(r: &RunResult) -> Self {
        Round { wall_s: r.wall_s, mb_per_s: r.mb_per_s, cpu_s_per_mb: r.cpu_s_per_mb() }
    }
}

/// The index of the median of `values` in `values` (the lower of the two middle ones for an
/// even count; NaN sorts last); `None` when it is empty.
pub(crate) fn median_index(values: &[f64]) -> Option<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    order.get(values.len().saturating_sub(1) / 2).copied()
}

/// Everything a result is built from.
pub(crate) struct Facts {
    pub operation: Operation,
    pub format: String,
    pub level: Option<i32>,
    pub input: String,
    pub output: Option<String>,
    pub threads: usize,
    pub block_size: usize,
    pub blocks: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub wall: Duration,
    pub cpu: (Duration, Duration),
    pub times: Vec<ThreadTimes>,
    pub parallel: bool,
    pub serial_reason: Option<String>,
    pub interrupted: bool,
    pub machine: Option<crate::procstat::MachineBusy>,
}

impl RunResult {
    pub(crate) fn build(f: Facts) -> Self {
        let cpus = crate::clock::online_cpus();
        let wall = f.wall.as_secs_f64();
        let (user, sys) = (f.cpu.0.as_secs_f64(), f.cpu.1.as_secs_f64());
        let cpu_share = share(user + sys, wall * cpus as f64);
        let machine_share = f.machine.as_ref().map(|m| m.machine_share);
        // The CPUs are full whether this process or another one fills them.
        let cpu_busy = machine_share.map_or(cpu_share, |m| m.max(cpu_share));
        let (plain, packed) = match f.operation {
            Operation::Compress => (f.bytes_in, f.bytes_out),
            Operation::Decompress => (f.bytes_out, f.bytes_in),
        };
        let thread_busy: Vec<ThreadBusy> = f.times.iter().map(ThreadBusy::from_times).collect();
        let (verdict, verdict_reason) = if f.parallel {
            verdict(&inputs_from(&thread_busy, cpu_busy))
        } else {
            (
                Verdict::SingleThreaded,
                "decoded on one thread (see serial_reason): that thread is the limit".to_string(),
            )
        };
        Self {
            operation: f.operation,
            format: f.format,
            level: f.level,
            input: f.input,
            output: f.output,
            threads: f.threads,
            block_size: f.block_size,
            blocks: f.blocks,
            bytes_in: f.bytes_in,
            bytes_out: f.bytes_out,
            ratio: if plain > 0 { packed as f64 / plain as f64 } else { 0.0 },
            wall_s: wall,
            cpu_user_s: user,
            cpu_sys_s: sys,
            mb_per_s: if wall > 0.0 { plain as f64 / 1e6 / wall } else { 0.0 },
            cpu_share,
            online_cpus: cpus,
            machine_cpu_share: machine_share,
            cpus_busy: f.machine.as_ref().map(|m| m.cpus_busy),
            thread_busy,
            verdict,
            verdict_reason,
            parallel: f.parallel,
            serial_reason: f.serial_reason,
            interrupted: f.interrupted,
            rounds: Vec::new(),
        }
    }

    /// User + system CPU seconds per uncompressed MB (`None` when nothing went through).
    pub fn cpu_s_per_mb(&self) -> Option<f64> {
        let mb = self.bytes_in.max(self.bytes_out) as f64 / 1e6;
        (mb > 0.0).then(|| (self.cpu_user_s + self.cpu_sys_s) / mb)
    }

    /// One result of the finished `rounds` of a run (in the order run): the median round's
    /// (by MB/s; of an even count the lower middle one) with every round's figures in
    /// [`RunResult::rounds`]. A single round is returned as it is; `None` for none.
    pub fn of_rounds(rounds: Vec<RunResult>) -> Option<RunResult> {
        if rounds.len() <= 1 {
            return rounds.into_iter().next();
        }
        let speeds: Vec<f64> = rounds.iter().map(|r| r.mb_per_s).collect();
        let figures: Vec<Round> = rounds.iter().map(Round::of).collect();
        let median = median_index(&speeds)?;
        let mut result = rounds.into_iter().nth(median)?;
        result.rounds = figures;
        Some(result)
    }

    /// Each round's MB/s (the run's own for a single run): the samples of its throughput.
    pub fn mb_per_s_samples(&self) -> Vec<f64> {
        if self.rounds.is_empty() {
            vec![self.mb_per_s]
        } else {
            self.rounds.iter().map(|r| r.mb_per_s).collect()
        }
    }

    /// Each round's CPU seconds per MB (the run's own for a single run); empty when nothing
    /// went through.
    pub fn cpu_s_per_mb_samples(&self) -> Vec<f64> {
        if self.rounds.is_empty() {
            self.cpu_s_per_mb().into_iter().collect()
        } else {
            self.rounds.iter().filter_map(|r| r.cpu_s_per_mb).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(reader: f64, writer: f64, workers: f64, cpu: f64) -> Verdict {
        verdict(&VerdictInputs {
            reader_busy: reader,
            writer_busy: writer,
            workers_busy: workers,
            cpu_busy: cpu,
        })
        .0
    }

    #[test]
    fn saturated_reader_with_waiting_workers_is_reader_bound() {
        assert_eq!(v(0.98, 0.05, 0.30, 0.20), Verdict::ReaderBound);
        // ... even when the CPUs are full: the reader is the one thread that cannot be split.
        assert_eq!(v(0.98, 0.05, 0.30, 0.95), Verdict::ReaderBound);
    }

    #[test]
    fn saturated_writer_is_writer_bound() {
        assert_eq!(v(0.20, 0.95, 0.40, 0.30), Verdict::WriterBound);
    }

    #[test]
    fn busy_reader_with_busy_workers_is_not_reader_bound() {
        // Everything busy on a full machine: the CPUs are the limit.
        assert_eq!(v(0.95, 0.20, 0.97, 0.99), Verdict::CpuBound);
        // Everything busy and CPUs left: more workers should help.
        assert_eq!(v(0.95, 0.20, 0.97, 0.50), Verdict::Scales);
    }

    #[test]
    fn full_cpus_are_cpu_bound() {
        assert_eq!(v(0.30, 0.10, 0.99, 0.93), Verdict::CpuBound);
    }

    #[test]
    fn busy_workers_with_cpus_left_scale() {
        assert_eq!(v(0.10, 0.05, 0.99, 0.55), Verdict::Scales);
    }

    #[test]
    fn thresholds_are_inclusive() {
        assert_eq!(v(BUSY, 0.0, WORKERS_STARVED - 0.01, 0.0), Verdict::ReaderBound);
        assert_eq!(v(BUSY - 0.01, 0.0, 0.5, 0.0), Verdict::Scales);
        assert_eq!(v(0.0, 0.0, 1.0, CPUS_FULL), Verdict::CpuBound);
    }

    #[test]
    fn shares_of_nothing_are_zero() {
        assert_eq!(share(1.0, 0.0), 0.0);
        assert_eq!(share(f64::NAN, 1.0), 0.0);
        assert_eq!(share(2.0, 1.0), 1.0);
    }
}
