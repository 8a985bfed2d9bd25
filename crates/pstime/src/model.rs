//! pstime's data: what to sample, the samples a snapshot holds (processes, threads, exit
//! records, task records) and the per-interval figures a comparison reports.

use serde::Serialize;

use crate::task::{Comm, SchedStat};
use measure::time::ClockTicks;

#[cfg(doc)]
use super::Sampler;

/// What to sample.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Only these processes (empty: every process).
    pub pids: Vec<u32>,
    /// Read every thread's figures and list them under their process.
    pub threads: bool,
}

/// Where a report's exact CPU times come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuSource {
    /// The process's CPU-time clock: exact, threads that exited included.
    ProcessClock,
    /// `/proc/PID/task/*/schedstat` summed over live threads: exact per thread; threads that
    /// exit inside the interval take their last part with them unless exit records say it.
    Schedstat,
    /// `utime + stime` from `/proc/PID/stat`, in clock ticks: the kernel scales these to the
    /// exact runtime, so only the resolution is lost (kernels without `CONFIG_SCHED_INFO`).
    StatTicks,
}

/// A task that exited, as a `sched_process_exit` tracer saw it (the BPF side fills these; this
/// crate only matches them to what it sampled). One record per exiting *thread*.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ExitedTask {
    /// The thread's ID (the kernel's `pid`).
    pub tid: u32,
    /// Its process (`tgid`).
    pub tgid: u32,
    /// The process's parent (`real_parent->tgid`).
    pub ppid: u32,
    /// Effective UID.
    pub uid: u32,
    pub comm: Comm,
    /// The thread's on-CPU time over its whole life, ns (`se.sum_exec_runtime` at exit).
    pub cpu_ns: u64,
    /// On the exit of a process's last thread: the whole process's on-CPU time over its life,
    /// ns (`signal->sum_sched_runtime` plus this thread's `cpu_ns`); `None` otherwise.
    pub group_cpu_ns: Option<u64>,
    /// The thread's tick-sampled user and system time, ns (`utime`, `stime`): used only for
    /// the user/system split.
    pub utime_ns: u64,
    pub stime_ns: u64,
    /// `start_boottime` of the thread and of its process's leader, ns of `CLOCK_BOOTTIME`: with
    /// the IDs they tell a record from one of an earlier holder of the same PID.
    pub start_boottime_ns: u64,
    pub group_start_boottime_ns: u64,
    /// When it exited, ns of `CLOCK_BOOTTIME` (`bpf_ktime_get_boot_ns()`).
    pub exit_boottime_ns: u64,
}

/// One thread as the kernel keeps it, from a pass over every task (a BPF task iterator):
/// what [`Sampler::snapshot_from_tasks`] builds a snapshot from. Times in ns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    pub tid: u32,
    pub tgid: u32,
    pub ppid: u32,
    pub nr_threads: u32,
    /// The letter `/proc/PID/stat` shows.
    pub state: u8,
    pub comm: String,
    /// This thread's `se.sum_exec_runtime` and tick-sampled split.
    pub runtime_ns: u64,
    pub utime_ns: u64,
    pub stime_ns: u64,
    /// The process leader's start, `CLOCK_BOOTTIME`.
    pub start_boottime_ns: u64,
    /// The process's exited threads (`signal->sum_sched_runtime`, `utime`, `stime`).
    pub dead_runtime_ns: u64,
    pub dead_utime_ns: u64,
    pub dead_stime_ns: u64,
    /// Reaped children (`signal->cutime`, `cstime`).
    pub children_utime_ns: u64,
    pub children_stime_ns: u64,
}

/// One thread at one snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadSample {
    pub tid: u32,
    pub sched: SchedStat,
    /// With [`Options::threads`]: the thread's own name and tick-sampled times.
    pub stat: Option<ThreadStat>,
}

/// A thread's own `stat` figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadStat {
    pub comm: Comm,
    pub utime_ticks: u64,
    pub stime_ticks: u64,
}

/// One process at one snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcSample {
    pub pid: u32,
    pub ppid: u32,
    pub state: u8,
    pub comm: Comm,
    pub start_ticks: u64,
    /// Whole process, threads that exited included (tick-sampled split).
    pub utime_ticks: u64,
    pub stime_ticks: u64,
    /// CPU of reaped children (`cutime + cstime`).
    pub children_ticks: u64,
    pub num_threads: u32,
    /// The process CPU-time clock, ns ([`CpuSource::ProcessClock`]).
    pub clock_ns: Option<u64>,
    /// When its CPU time was read: ns since the sampler was made (monotonic).
    pub at_ns: u64,
    /// Where its threads sit in [`Snapshot::threads`].
    pub(super) threads_from: u32,
    pub(super) threads_len: u32,
}

/// Every sampled process at one moment (well, over the milliseconds a scan takes).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Ordered by PID.
    pub processes: Vec<ProcSample>,
    pub threads: Vec<ThreadSample>,
    /// Scan start and end, ns since the sampler was made (monotonic).
    pub begin_ns: u64,
    pub end_ns: u64,
    /// Scan start and end on `CLOCK_BOOTTIME` (the clock of start times and exit records).
    pub begin_boottime_ns: u64,
    pub end_boottime_ns: u64,
    pub online_cpus: u32,
    /// Processes whose files could not be read (`hidepid`, permissions).
    pub unreadable: u32,
    /// CPU time the scan itself took (this thread's CPU clock), ns.
    pub cost_ns: u64,
    /// Processes whose CPU clock had not moved since the previous snapshot, carried over from
    /// it without reading their files again.
    pub carried_over: u32,
}

impl Snapshot {
    /// The threads read for `p` (empty when only the process clock was read).
    pub fn threads_of(&self, p: &ProcSample) -> &[ThreadSample] {
        let from = p.threads_from as usize;
        self.threads.get(from..from + p.threads_len as usize).unwrap_or(&[])
    }
}

/// How much of a process's life the interval saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lifetime {
    /// Present at both snapshots.
    Whole,
    /// Appeared after the first: counted from zero.
    Started,
    /// Gone by the second.
    Exited,
    /// Started and exited between the snapshots: known only from exit records.
    StartedAndExited,
}

/// What the user/system split of a figure rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// The ticks charged in the interval.
    Interval,
    /// No tick fell in the interval: the process's lifetime ratio.
    Lifetime,
    /// No tick ever: the split is unknown.
    Unknown,
}

/// One thread over the interval (with [`Options::threads`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadCpu {
    pub tid: u32,
    pub comm: Comm,
    pub lifetime: Lifetime,
    /// On-CPU ns in the interval (schedstat); `None` for a thread that exited without a record.
    pub cpu_ns: Option<u64>,
    pub cpu_pct: Option<f64>,
    pub usr_pct: Option<f64>,
    pub sys_pct: Option<f64>,
    pub utime_ticks: u64,
    pub stime_ticks: u64,
    /// Time waiting on a run queue, ns.
    pub run_delay_ns: Option<u64>,
    pub timeslices: Option<u64>,
}

/// One process over the interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessCpu {
    pub pid: u32,
    pub ppid: u32,
    /// The owner of `/proc/PID` (the effective UID, or root for a process that made itself
    /// non-dumpable), filled by [`Sampler::describe`] for processes still there; from the exit
    /// record for those that exited.
    pub uid: Option<u32>,
    pub comm: Comm,
    /// The command line (`/proc/PID/cmdline`, `[comm]` for kernel threads), filled by
    /// [`Sampler::describe`] for processes still there.
    pub command: Option<String>,
    pub lifetime: Lifetime,
    /// The interval its figures cover, s.
    pub elapsed_s: f64,
    /// Exact on-CPU time in the interval, ns; `None` when it exited and no exit record says.
    pub cpu_ns: Option<u64>,
    /// `cpu_ns` misses the last part of threads that exited without an exit record.
    pub cpu_lower_bound: bool,
    /// `cpu_ns` as a percentage of all online CPUs over `elapsed_s`.
    pub cpu_pct: Option<f64>,
    /// `cpu_ns` split by the tick-sampled user/system ratio (see `split`).
    pub user_ns: Option<u64>,
    pub system_ns: Option<u64>,
    pub usr_pct: Option<f64>,
    pub sys_pct: Option<f64>,
    pub split: Split,
    /// Tick-sampled user and system ticks charged in the interval.
    pub utime_ticks: u64,
    pub stime_ticks: u64,
    /// CPU of children it reaped in the interval (`cutime + cstime`, ticks): where short-lived
    /// children's time shows up without exit tracing.
    pub children_ticks: u64,
    /// Threads seen at the second sample but not the first, and at the first but not the
    /// second, plus those exit records show starting and ending in between; `None` when threads
    /// were not read. Without exit records, threads that came and went between the samples are
    /// not counted here (their CPU time is in `cpu_ns` all the same with the process clock).
    pub threads_started: Option<u32>,
    pub threads_exited: Option<u32>,
    /// Run-queue wait and timeslices summed over threads (when threads were read).
    pub run_delay_ns: Option<u64>,
    pub timeslices: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadCpu>,
}

/// How many processes the report saw, and how.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Present at both snapshots.
    pub whole: u32,
    pub started: u32,
    pub exited: u32,
    /// Exited, CPU after the first snapshot unknown.
    pub exited_unmeasured: u32,
    /// Started and exited inside the interval (from exit records).
    pub short_lived: u32,
    /// Could not be read.
    pub unreadable: u32,
}

/// Everything measured over one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// From the middle of the first scan to the middle of the second, s.
    pub elapsed_s: f64,
    pub online_cpus: u32,
    pub ticks_per_s: u64,
    pub source: CpuSource,
    /// Whether exit records were given (processes that started and exited are counted).
    pub exits_traced: bool,
    /// Why not, as the caller put it.
    pub exit_tracing_unavailable: Option<String>,
    /// Ordered by CPU time, highest first (unknown last), then PID.
    pub processes: Vec<ProcessCpu>,
    pub counts: Counts,
    /// CPU time each scan took, ms.
    pub scan_cpu_ms: [f64; 2],
}

/// The constants a comparison needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Basis {
    pub ticks: ClockTicks,
    pub source: CpuSource,
}
