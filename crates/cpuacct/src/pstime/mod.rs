//! pstime: CPU time per process over an interval — exact, with the user/system split the
//! kernel's tick sampling gives — for listed processes or every process.
//!
//! - [`Sampler`] takes [`Snapshot`]s through an [`FsRoot`]: per process one read of
//!   `/proc/PID/stat` (name, parent, state, tick-sampled user/system time, start time, thread
//!   count) and its exact CPU time. On a live system the exact time is the process's CPU-time
//!   clock ([`measure::time::process_cpu_ns`]): one system call, all threads including those that
//!   exited, running ones brought up to date. Elsewhere (a fixture tree, another PID namespace)
//!   it is the sum of `/proc/PID/task/TID/schedstat` over the threads
//!   ([`CpuSource::Schedstat`]). Each process's reading carries its own timestamp, so its
//!   percentage is over its own interval. Files are read with one `read` into a reused buffer,
//!   names kept inline: a snapshot allocates only its two vectors.
//! - [`compare`] turns two snapshots into a [`Report`]: processes are matched by PID *and start
//!   time* (a reused PID is a new process). A process that appeared counts from zero; one that
//!   vanished is listed as exited, its CPU after the first snapshot unknown unless exit records
//!   ([`ExitedTask`], from a `sched_process_exit` tracer) are given, which also bring in
//!   processes that started and exited inside the interval. Without them the report says so.
//! - [`render`] prints the seed's layout (`UID PID %USR %SYS COMMAND`, four significant digits)
//!   or that layout with the exact `%CPU` and `CPU-ms` columns.
//!
//! Percentages are of the whole machine (all online CPUs), as the seed's pstime reports them:
//! one busy CPU of four is 25 %.

pub mod render;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write as _};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use crate::task::{parse_schedstat, parse_stat, Comm, SchedStat};
use measure::counter::CounterDelta;
use measure::time::{boottime_ns, process_cpu_ns, ClockTicks};
use measure::FsRoot;
use measure::{Error, ParseError, UsageError};

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
    threads_from: u32,
    threads_len: u32,
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

/// Reads snapshots; keeps its buffers between them.
#[derive(Debug)]
pub struct Sampler {
    root: FsRoot,
    opts: Options,
    basis: Basis,
    epoch: Instant,
    /// `ROOT/proc`, opened at each snapshot: files are opened relative to it, which spares the
    /// kernel walking the path from `/` for each of them.
    proc_dir: OwnedFd,
    /// The file being read, relative to `proc_dir` (`1234/stat`).
    path: Vec<u8>,
    buf: Vec<u8>,
    last_len: (usize, usize),
    /// The previous snapshot's processes (process-clock source, no thread listing): one whose
    /// clock has not moved since is carried over without reading its `stat` again.
    last: Vec<ProcSample>,
}

/// A file read: gone (the process or thread exited), refused, or failed.
enum ReadError {
    Gone,
    Denied,
    Other(io::Error),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::ESRCH) => ReadError::Gone,
            Some(libc::EACCES) | Some(libc::EPERM) => ReadError::Denied,
            _ => ReadError::Other(e),
        }
    }
}

/// What sampling one process came to.
enum Outcome {
    Sampled,
    Gone,
    Denied,
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a live local the kernel (or vDSO) writes one timespec into.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// Reads a small file (`path` relative to `dir`) with (usually) one `read` into `buf`, growing
/// it only for a larger file. With `want_uid`, also the file's owner.
fn read_small(
    dir: &OwnedFd,
    path: &mut Vec<u8>,
    buf: &mut Vec<u8>,
    want_uid: bool,
) -> Result<(usize, Option<u32>), ReadError> {
    path.push(0);
    // SAFETY: `path` is NUL-terminated (pushed above) and lives across the call; `dir` is an
    // open directory descriptor. openat(2) only reads the string.
    let fd = unsafe {
        libc::openat(dir.as_raw_fd(), path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC)
    };
    path.pop();
    if fd < 0 {
        return Err(io::Error::last_os_error().into());
    }
    // SAFETY: `fd` was just opened above and is owned by nothing else.
    let mut file = unsafe { File::from_raw_fd(fd) };
    let uid = if want_uid { Some(file.metadata()?.uid()) } else { None };
    if buf.len() < 4096 {
        buf.resize(4096, 0);
    }
    let mut n = 0;
    loop {
        let space = buf.len() - n;
        let got = file.read(&mut buf[n..])?;
        n += got;
        // procfs hands over a whole record per read and regular files read fully: a read that
        // left room is the end.
        if got < space {
            break;
        }
        buf.resize(buf.len() * 2, 0);
    }
    Ok((n, uid))
}

/// Opens `ROOT/proc`.
fn open_dir(root: &FsRoot) -> Result<OwnedFd, Error> {
    let dir = root.path("proc");
    File::open(&dir).map(OwnedFd::from).map_err(|source| Error::Io { path: dir, source })
}

/// Parses a list like `0-3,8` (sysfs CPU lists) into its count.
fn count_cpu_list(text: &str) -> Option<u32> {
    let mut count = 0u32;
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let v = part.parse::<u32>().ok()?;
                (v, v)
            }
        };
        count += b.checked_sub(a)? + 1;
    }
    (count > 0).then_some(count)
}

impl Sampler {
    /// Checks the requested PIDs (one that does not exist, or names a thread rather than a
    /// process, is a usage error) and chooses the exact-time source.
    pub fn new(root: FsRoot, opts: Options, ticks: ClockTicks) -> Result<Self, Error> {
        let proc_dir = open_dir(&root)?;
        let mut sampler = Self {
            root,
            opts,
            basis: Basis { ticks, source: CpuSource::Schedstat },
            epoch: Instant::now(),
            proc_dir,
            path: Vec::with_capacity(64),
            buf: vec![0; 4096],
            last_len: (256, 256),
            last: Vec::new(),
        };
        sampler.opts.pids.sort_unstable();
        sampler.opts.pids.dedup();
        for pid in sampler.opts.pids.clone() {
            sampler.check_pid(pid)?;
        }
        sampler.basis.source = sampler.choose_source();
        Ok(sampler)
    }

    pub fn basis(&self) -> Basis {
        self.basis
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    fn check_pid(&mut self, pid: u32) -> Result<(), Error> {
        self.set_path(pid, None, "stat");
        match self.read_current(false) {
            Ok(_) => {}
            Err(ReadError::Gone) => return Err(UsageError::NoSuchProcess { pid }.into()),
            Err(ReadError::Denied) => {}
            Err(ReadError::Other(source)) => {
                return Err(Error::Io { path: self.current_path(), source })
            }
        }
        // /proc/TID exists for every thread, though readdir lists only processes.
        self.set_path(pid, None, "status");
        if let Ok((n, _)) = self.read_current(false) {
            let text = String::from_utf8_lossy(&self.buf[..n]);
            let tgid = text
                .lines()
                .find_map(|l| l.strip_prefix("Tgid:"))
                .and_then(|v| v.trim().parse::<u32>().ok());
            if let Some(tgid) = tgid.filter(|&t| t != pid) {
                return Err(UsageError::NotAProcess { tid: pid, tgid }.into());
            }
        }
        Ok(())
    }

    /// The process clock on a live system whose `/proc` is of our PID namespace; else
    /// schedstat, or stat ticks where the kernel keeps no schedstat.
    fn choose_source(&mut self) -> CpuSource {
        if !self.root.is_live() {
            return CpuSource::Schedstat;
        }
        let me = std::process::id();
        let same_ns = std::fs::read_link(self.root.path("proc/self"))
            .ok()
            .and_then(|p| p.to_str().and_then(|s| s.parse::<u32>().ok()))
            == Some(me);
        if same_ns && process_cpu_ns(me).is_ok() {
            return CpuSource::ProcessClock;
        }
        let kept = std::fs::read(self.root.path("proc/self/schedstat"))
            .ok()
            .and_then(|b| parse_schedstat(&b).ok())
            .is_some_and(|s| s.is_kept());
        if kept {
            CpuSource::Schedstat
        } else {
            CpuSource::StatTicks
        }
    }

    fn set_path(&mut self, pid: u32, tid: Option<u32>, file: &str) {
        self.path.clear();
        let _ = write!(self.path, "{pid}");
        if let Some(tid) = tid {
            let _ = write!(self.path, "/task/{tid}");
        }
        self.path.push(b'/');
        self.path.extend_from_slice(file.as_bytes());
    }

    /// Reads the file at the current path into the buffer.
    fn read_current(&mut self, want_uid: bool) -> Result<(usize, Option<u32>), ReadError> {
        read_small(&self.proc_dir, &mut self.path, &mut self.buf, want_uid)
    }

    /// The current file's full path (for error messages).
    fn current_path(&self) -> PathBuf {
        self.root.path("proc").join(OsStr::from_bytes(&self.path))
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn io_error(&self, source: io::Error) -> Error {
        Error::Io { path: self.current_path(), source }
    }

    fn parse_error(&self, source: ParseError) -> Error {
        Error::Parse { path: self.current_path(), source }
    }

    fn online_cpus(&self) -> u32 {
        std::fs::read_to_string(self.root.path("sys/devices/system/cpu/online"))
            .ok()
            .and_then(|t| count_cpu_list(&t))
            .or_else(|| {
                // SAFETY: sysconf has no preconditions.
                let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
                u32::try_from(n).ok().filter(|&n| n > 0)
            })
            .unwrap_or(1)
    }

    /// Reads every selected process.
    pub fn snapshot(&mut self) -> Result<Snapshot, Error> {
        let cost_from = thread_cpu_ns();
        self.proc_dir = open_dir(&self.root)?;
        let mut snap = Snapshot {
            processes: Vec::with_capacity(self.last_len.0 + self.last_len.0 / 8),
            threads: Vec::with_capacity(self.last_len.1 + self.last_len.1 / 8),
            begin_ns: self.now_ns(),
            begin_boottime_ns: boottime_ns(),
            online_cpus: self.online_cpus(),
            ..Snapshot::default()
        };
        if self.opts.pids.is_empty() {
            let dir = self.root.path("proc");
            let entries = std::fs::read_dir(&dir)
                .map_err(|source| Error::Io { path: dir.clone(), source })?;
            for entry in entries {
                let entry = entry.map_err(|source| Error::Io { path: dir.clone(), source })?;
                let name = entry.file_name();
                let Some(pid) =
                    std::str::from_utf8(name.as_bytes()).ok().and_then(|s| s.parse::<u32>().ok())
                else {
                    continue;
                };
                self.sample_counted(pid, &mut snap)?;
            }
            // The kernel lists PIDs in order; a fixture tree may not.
            if !snap.processes.is_sorted_by_key(|p| p.pid) {
                snap.processes.sort_by_key(|p| p.pid);
            }
        } else {
            for i in 0..self.opts.pids.len() {
                let pid = self.opts.pids[i];
                self.sample_counted(pid, &mut snap)?;
            }
        }
        snap.end_ns = self.now_ns();
        snap.end_boottime_ns = boottime_ns();
        self.last_len = (snap.processes.len(), snap.threads.len());
        if self.carries_over() {
            self.last.clone_from(&snap.processes);
        }
        snap.cost_ns = thread_cpu_ns().saturating_sub(cost_from);
        Ok(snap)
    }

    /// Whether a snapshot can be built from per-thread kernel records instead of `/proc`:
    /// every process, without the per-thread listing, on the process-clock basis.
    pub fn can_use_task_records(&self) -> bool {
        self.opts.pids.is_empty()
            && !self.opts.threads
            && self.basis.source == CpuSource::ProcessClock
    }

    /// A snapshot of every process from one pass over the kernel's tasks (a BPF task
    /// iterator; see [`TaskRecord`]), instead of one `/proc/PID/stat` per process. A
    /// process's CPU is its exited threads' plus its live threads' runtime, which for a thread
    /// running at that moment is as of its last update; those few processes (state `R`) have
    /// their CPU clock read, so every figure is as exact as the `/proc` path's.
    pub fn snapshot_from_tasks(&mut self, tasks: &[TaskRecord]) -> Result<Snapshot, Error> {
        let cost_from = thread_cpu_ns();
        let mut snap = Snapshot {
            begin_ns: self.now_ns(),
            begin_boottime_ns: boottime_ns(),
            online_cpus: self.online_cpus(),
            ..Snapshot::default()
        };
        let ticks = self.basis.ticks;
        // tgid → (sample, runtime, utime, stime, a thread running)
        let mut by_process: BTreeMap<u32, (ProcSample, u64, u64, u64, bool)> = BTreeMap::new();
        let at = self.now_ns();
        for t in tasks {
            let entry = by_process.entry(t.tgid).or_insert_with(|| {
                let sample = ProcSample {
                    pid: t.tgid,
                    ppid: 0,
                    state: b'S',
                    comm: Comm::new(t.comm.as_bytes()),
                    start_ticks: ticks.from_ns(t.start_boottime_ns),
                    utime_ticks: 0,
                    stime_ticks: 0,
                    children_ticks: ticks.from_ns(t.children_utime_ns)
                        + ticks.from_ns(t.children_stime_ns),
                    num_threads: t.nr_threads,
                    clock_ns: None,
                    at_ns: at,
                    threads_from: 0,
                    threads_len: 0,
                };
                (sample, t.dead_runtime_ns, t.dead_utime_ns, t.dead_stime_ns, false)
            });
            let (sample, runtime, utime, stime, running) = entry;
            if t.tid == t.tgid {
                sample.ppid = t.ppid;
                sample.state = t.state;
                sample.comm = Comm::new(t.comm.as_bytes());
            }
            *runtime += t.runtime_ns;
            *utime += t.utime_ns;
            *stime += t.stime_ns;
            *running |= t.state == b'R';
        }
        for (_, (mut sample, runtime, utime, stime, running)) in by_process {
            sample.utime_ticks = ticks.from_ns(utime);
            sample.stime_ticks = ticks.from_ns(stime);
            sample.clock_ns = Some(runtime);
            if running {
                match process_cpu_ns(sample.pid) {
                    Ok(ns) => {
                        sample.clock_ns = Some(ns);
                        sample.at_ns = self.now_ns();
                    }
                    // Exited since the pass: it is not in this snapshot.
                    Err(_) => continue,
                }
            }
            snap.processes.push(sample);
        }
        // Any process /proc lists that the pass did not (one that started meanwhile; and the
        // task iterator here skips PID 1) is read the /proc way.
        let listed: std::collections::HashSet<u32> = snap.processes.iter().map(|p| p.pid).collect();
        let dir = self.root.path("proc");
        let pids: Vec<u32> = std::fs::read_dir(&dir)
            .map_err(|source| Error::Io { path: dir.clone(), source })?
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter(|pid| !listed.contains(pid))
            .collect();
        if !pids.is_empty() {
            self.proc_dir = open_dir(&self.root)?;
            for pid in pids {
                self.sample_counted(pid, &mut snap)?;
            }
            snap.processes.sort_by_key(|p| p.pid);
        }
        snap.end_ns = self.now_ns();
        snap.end_boottime_ns = boottime_ns();
        snap.cost_ns = thread_cpu_ns().saturating_sub(cost_from);
        Ok(snap)
    }

    fn sample_counted(&mut self, pid: u32, snap: &mut Snapshot) -> Result<(), Error> {
        match self.sample_process(pid, snap)? {
            Outcome::Sampled | Outcome::Gone => {}
            Outcome::Denied => snap.unreadable += 1,
        }
        Ok(())
    }

    /// Whether unchanged processes can be carried over from the previous snapshot: only the
    /// process clock proves cheaply that a process did not run, and a thread listing needs
    /// every thread's figures anyway.
    fn carries_over(&self) -> bool {
        self.basis.source == CpuSource::ProcessClock && !self.opts.threads
    }

    /// A process that has not run since the previous snapshot: its CPU clock reads exactly as
    /// then. Nothing in `stat` that is used here moves without the process running — times,
    /// children's times, threads, state — except the parent (reparenting), which stays as first
    /// read. A new process under a reused PID cannot show the old one's clock to the
    /// nanosecond (it ran to exist), so identity holds too.
    fn carry_over(&mut self, pid: u32, snap: &mut Snapshot) -> Option<Outcome> {
        let at = self.last.binary_search_by_key(&pid, |p| p.pid).ok()?;
        let before = self.last[at];
        match process_cpu_ns(pid) {
            Ok(ns) if Some(ns) == before.clock_ns => {
                snap.processes.push(ProcSample {
                    at_ns: self.now_ns(),
                    threads_from: u32::try_from(snap.threads.len()).unwrap_or(u32::MAX),
                    threads_len: 0,
                    ..before
                });
                snap.carried_over += 1;
                Some(Outcome::Sampled)
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ESRCH)) => {
                Some(Outcome::Gone)
            }
            _ => None,
        }
    }

    fn sample_process(&mut self, pid: u32, snap: &mut Snapshot) -> Result<Outcome, Error> {
        if self.carries_over() {
            if let Some(outcome) = self.carry_over(pid, snap) {
                return Ok(outcome);
            }
        }
        self.set_path(pid, None, "stat");
        let n = match self.read_current(false) {
            Ok((n, _)) => n,
            Err(ReadError::Gone) => return Ok(Outcome::Gone),
            Err(ReadError::Denied) => return Ok(Outcome::Denied),
            Err(ReadError::Other(e)) => return Err(self.io_error(e)),
        };
        let stat = parse_stat(&self.buf[..n]).map_err(|e| self.parse_error(e))?;
        let mut sample = ProcSample {
            pid,
            ppid: stat.ppid,
            state: stat.state,
            comm: Comm::new(stat.comm),
            start_ticks: stat.start_ticks,
            utime_ticks: stat.utime_ticks,
            stime_ticks: stat.stime_ticks,
            children_ticks: stat.cutime_ticks.saturating_add(stat.cstime_ticks),
            num_threads: stat.num_threads,
            clock_ns: None,
            at_ns: 0,
            threads_from: u32::try_from(snap.threads.len()).unwrap_or(u32::MAX),
            threads_len: 0,
        };
        if self.basis.source == CpuSource::ProcessClock {
            match process_cpu_ns(pid) {
                Ok(ns) => sample.clock_ns = Some(ns),
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ESRCH)) => {
                    return Ok(Outcome::Gone)
                }
                Err(_) => {}
            }
            sample.at_ns = self.now_ns();
        }
        let need_threads = self.opts.threads
            || (sample.clock_ns.is_none() && self.basis.source != CpuSource::StatTicks);
        if need_threads {
            let from = snap.threads.len();
            let read = if sample.num_threads <= 1 {
                self.sample_single_thread(&sample, snap)
            } else {
                self.sample_threads(pid, snap)
            };
            match read {
                Ok(true) => {}
                Ok(false) => {
                    snap.threads.truncate(from);
                    return Ok(Outcome::Gone);
                }
                Err(e) => {
                    snap.threads.truncate(from);
                    return Err(e);
                }
            }
            let threads = &mut snap.threads[from..];
            if !threads.is_sorted_by_key(|t| t.tid) {
                threads.sort_by_key(|t| t.tid);
            }
            sample.threads_len = u32::try_from(snap.threads.len() - from).unwrap_or(0);
        }
        if sample.clock_ns.is_none() {
            sample.at_ns = self.now_ns();
        }
        snap.processes.push(sample);
        Ok(Outcome::Sampled)
    }

    /// `/proc/PID/schedstat` for a one-thread process (its figures are the thread's). False when
    /// the process is gone.
    fn sample_single_thread(&mut self, p: &ProcSample, snap: &mut Snapshot) -> Result<bool, Error> {
        self.set_path(p.pid, None, "schedstat");
        let sched = match self.read_current(false) {
            Ok((n, _)) => parse_schedstat(&self.buf[..n]).map_err(|e| self.parse_error(e))?,
            Err(ReadError::Gone) => return Ok(false),
            Err(ReadError::Denied) => SchedStat::default(),
            Err(ReadError::Other(e)) => return Err(self.io_error(e)),
        };
        let stat = self.opts.threads.then_some(ThreadStat {
            comm: p.comm,
            utime_ticks: p.utime_ticks,
            stime_ticks: p.stime_ticks,
        });
        snap.threads.push(ThreadSample { tid: p.pid, sched, stat });
        Ok(true)
    }

    /// Every thread under `/proc/PID/task`. False when the process is gone.
    fn sample_threads(&mut self, pid: u32, snap: &mut Snapshot) -> Result<bool, Error> {
        self.set_path(pid, None, "task");
        let entries = match std::fs::read_dir(self.current_path()) {
            Ok(e) => e,
            Err(e) => {
                return match ReadError::from(e) {
                    ReadError::Gone | ReadError::Denied => Ok(false),
                    ReadError::Other(e) => Err(self.io_error(e)),
                }
            }
        };
        for entry in entries {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name();
            let Some(tid) =
                std::str::from_utf8(name.as_bytes()).ok().and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            self.set_path(pid, Some(tid), "schedstat");
            let sched = match self.read_current(false) {
                Ok((n, _)) => parse_schedstat(&self.buf[..n]).map_err(|e| self.parse_error(e))?,
                Err(ReadError::Gone) => continue,
                Err(ReadError::Denied) => SchedStat::default(),
                Err(ReadError::Other(e)) => return Err(self.io_error(e)),
            };
            let mut stat = None;
            if self.opts.threads {
                self.set_path(pid, Some(tid), "stat");
                match self.read_current(false) {
                    Ok((n, _)) => {
                        let s = parse_stat(&self.buf[..n]).map_err(|e| self.parse_error(e))?;
                        stat = Some(ThreadStat {
                            comm: Comm::new(s.comm),
                            utime_ticks: s.utime_ticks,
                            stime_ticks: s.stime_ticks,
                        });
                    }
                    Err(ReadError::Gone) => continue,
                    Err(ReadError::Denied) => {}
                    Err(ReadError::Other(e)) => return Err(self.io_error(e)),
                }
            }
            snap.threads.push(ThreadSample { tid, sched, stat });
        }
        Ok(true)
    }

    /// Fills [`ProcessCpu::command`] and [`ProcessCpu::uid`] for the processes still there: the
    /// command line, or `[comm]` for a process without one (kernel threads, zombies), and the
    /// owner. Kept out of the snapshots, which are what must be cheap.
    pub fn describe(&mut self, report: &mut Report) {
        for p in &mut report.processes {
            if !matches!(p.lifetime, Lifetime::Whole | Lifetime::Started) {
                continue;
            }
            self.set_path(p.pid, None, "cmdline");
            let (n, uid) = self.read_current(true).unwrap_or((0, None));
            p.uid = p.uid.or(uid);
            let command = match n {
                n if n > 0 => {
                    let raw = &self.buf[..n];
                    let raw = raw.strip_suffix(b"\0").unwrap_or(raw);
                    let text: Vec<u8> =
                        raw.iter().map(|&b| if b == 0 || b == b'\n' { b' ' } else { b }).collect();
                    String::from_utf8_lossy(&text).into_owned()
                }
                _ => format!("[{}]", p.comm),
            };
            p.command = Some(command);
        }
    }
}

/// The user/system split of `cpu_ns` by tick counts: the interval's ticks, else the lifetime's.
fn split(
    cpu_ns: u64,
    interval: (u64, u64),
    lifetime: (u64, u64),
) -> (Option<u64>, Option<u64>, Split) {
    let (ratio, how) = if cpu_ns == 0 {
        (0.0, Split::Interval)
    } else if interval.0 + interval.1 > 0 {
        (interval.0 as f64 / (interval.0 + interval.1) as f64, Split::Interval)
    } else if lifetime.0 + lifetime.1 > 0 {
        (lifetime.0 as f64 / (lifetime.0 + lifetime.1) as f64, Split::Lifetime)
    } else {
        return (None, None, Split::Unknown);
    };
    let user = ((cpu_ns as f64) * ratio).round() as u64;
    let user = user.min(cpu_ns);
    (Some(user), Some(cpu_ns - user), how)
}

/// Percentage of `cpus` CPUs over `elapsed_ns`.
fn pct(ns: u64, elapsed_ns: u64, cpus: u32) -> f64 {
    let capacity = elapsed_ns as f64 * f64::from(cpus.max(1));
    if capacity > 0.0 {
        ns as f64 / capacity * 100.0
    } else {
        0.0
    }
}

/// Exit records of one process, matched by TGID and start time.
struct Exits<'a> {
    records: Vec<&'a ExitedTask>,
}

impl Exits<'_> {
    fn for_thread(&self, tid: u32) -> Option<&ExitedTask> {
        self.records.iter().find(|r| r.tid == tid).copied()
    }

    fn group_cpu_ns(&self) -> Option<u64> {
        self.records.iter().find_map(|r| r.group_cpu_ns)
    }

    fn sampled(&self) -> (u64, u64) {
        self.records.iter().fold((0, 0), |(u, s), r| (u + r.utime_ns, s + r.stime_ns))
    }
}

struct Builder<'a> {
    prev: &'a Snapshot,
    cur: &'a Snapshot,
    basis: Basis,
    exits: Option<BTreeMap<u32, Vec<&'a ExitedTask>>>,
    counts: Counts,
}

impl<'a> Builder<'a> {
    /// Takes the exit records of process `pid` started at `start_ticks` out of the pool.
    fn take_exits(&mut self, pid: u32, start_ticks: u64) -> Option<Exits<'a>> {
        let ticks = self.basis.ticks;
        let pool = self.exits.as_mut()?;
        let records = pool.get_mut(&pid).map(|list| {
            let (mine, rest): (Vec<_>, Vec<_>) = list
                .drain(..)
                .partition(|r| ticks.from_ns(r.group_start_boottime_ns).abs_diff(start_ticks) <= 1);
            *list = rest;
            mine
        });
        Some(Exits { records: records.unwrap_or_default() })
    }

    fn row(&self, p: &ProcSample, lifetime: Lifetime, elapsed_ns: u64) -> ProcessCpu {
        ProcessCpu {
            pid: p.pid,
            ppid: p.ppid,
            uid: None,
            comm: p.comm,
            command: None,
            lifetime,
            elapsed_s: elapsed_ns as f64 / 1e9,
            cpu_ns: None,
            cpu_lower_bound: false,
            cpu_pct: None,
            user_ns: None,
            system_ns: None,
            usr_pct: None,
            sys_pct: None,
            split: Split::Unknown,
            utime_ticks: 0,
            stime_ticks: 0,
            children_ticks: 0,
            threads_started: None,
            threads_exited: None,
            run_delay_ns: None,
            timeslices: None,
            threads: Vec::new(),
        }
    }

    /// Sets the CPU figures of a row from its exact time and tick counts.
    fn finish(
        &self,
        row: &mut ProcessCpu,
        cpu_ns: Option<u64>,
        interval: (u64, u64),
        lifetime: (u64, u64),
        elapsed_ns: u64,
    ) {
        let cpus = self.cur.online_cpus;
        row.cpu_ns = cpu_ns;
        let Some(ns) = cpu_ns else { return };
        row.cpu_pct = Some(pct(ns, elapsed_ns, cpus));
        let (user, system, how) = split(ns, interval, lifetime);
        row.user_ns = user;
        row.system_ns = system;
        row.split = how;
        row.usr_pct = user.map(|u| pct(u, elapsed_ns, cpus));
        row.sys_pct = system.map(|s| pct(s, elapsed_ns, cpus));
    }

    /// Threads of a process present at both snapshots (or started: `prev` empty), matched by
    /// TID. Returns on-CPU ns, whether some is missing, and the per-thread rows.
    fn threads(
        &self,
        prev: &[ThreadSample],
        cur: &[ThreadSample],
        exits: Option<&Exits<'_>>,
        elapsed_ns: u64,
        started_ns: u64,
        row: &mut ProcessCpu,
    ) -> (u64, bool) {
        let cpus = self.cur.online_cpus;
        let (mut total, mut missing) = (0u64, false);
        let (mut started, mut exited) = (0u32, 0u32);
        let (mut delay, mut slices) = (0u64, 0u64);
        let mut rows = Vec::new();
        let mut thread_row = |tid: u32,
                              comm: Comm,
                              lifetime: Lifetime,
                              cpu: Option<u64>,
                              ticks: (u64, u64),
                              lifetime_ticks: (u64, u64),
                              sched: Option<(u64, u64)>| {
            let (user, system, _) = match cpu {
                Some(ns) => split(ns, ticks, lifetime_ticks),
                None => (None, None, Split::Unknown),
            };
            rows.push(ThreadCpu {
                tid,
                comm,
                lifetime,
                cpu_ns: cpu,
                cpu_pct: cpu.map(|ns| pct(ns, elapsed_ns, cpus)),
                usr_pct: user.map(|u| pct(u, elapsed_ns, cpus)),
                sys_pct: system.map(|s| pct(s, elapsed_ns, cpus)),
                utime_ticks: ticks.0,
                stime_ticks: ticks.1,
                run_delay_ns: sched.map(|s| s.0),
                timeslices: sched.map(|s| s.1),
            });
        };
        let own_comm = row.comm;
        let stat_ticks = |t: &ThreadSample| t.stat.map(|s| (s.utime_ticks, s.stime_ticks));
        let comm_of = |t: &ThreadSample| t.stat.map(|s| s.comm).unwrap_or(own_comm);
        let (mut i, mut j) = (0, 0);
        while i < prev.len() || j < cur.len() {
            let order = match (prev.get(i), cur.get(j)) {
                (Some(a), Some(b)) => a.tid.cmp(&b.tid),
                (Some(_), None) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            match order {
                std::cmp::Ordering::Equal => {
                    let (a, b) = (&prev[i], &cur[j]);
                    let d = |f: fn(&SchedStat) -> u64| {
                        CounterDelta::time_between(f(&a.sched), f(&b.sched)).value
                    };
                    let cpu = d(|s| s.cpu_ns);
                    let sched = (d(|s| s.run_delay_ns), d(|s| s.timeslices));
                    total += cpu;
                    delay += sched.0;
                    slices += sched.1;
                    let ticks = match (stat_ticks(a), stat_ticks(b)) {
                        (Some(x), Some(y)) => (y.0.saturating_sub(x.0), y.1.saturating_sub(x.1)),
                        _ => (0, 0),
                    };
                    let lifetime = stat_ticks(b).unwrap_or((0, 0));
                    thread_row(
                        b.tid,
                        comm_of(b),
                        Lifetime::Whole,
                        Some(cpu),
                        ticks,
                        lifetime,
                        Some(sched),
                    );
                    i += 1;
                    j += 1;
                }
                std::cmp::Ordering::Greater => {
                    let b = &cur[j];
                    total += b.sched.cpu_ns;
                    delay += b.sched.run_delay_ns;
                    slices += b.sched.timeslices;
                    started += 1;
                    thread_row(
                        b.tid,
                        comm_of(b),
                        Lifetime::Started,
                        Some(b.sched.cpu_ns),
                        stat_ticks(b).unwrap_or((0, 0)),
                        stat_ticks(b).unwrap_or((0, 0)),
                        Some((b.sched.run_delay_ns, b.sched.timeslices)),
                    );
                    j += 1;
                }
                std::cmp::Ordering::Less => {
                    let a = &prev[i];
                    exited += 1;
                    let cpu = exits
                        .and_then(|e| e.for_thread(a.tid))
                        .map(|r| r.cpu_ns.saturating_sub(a.sched.cpu_ns));
                    match cpu {
                        Some(ns) => total += ns,
                        None => missing = true,
                    }
                    let lifetime = stat_ticks(a).unwrap_or((0, 0));
                    thread_row(a.tid, comm_of(a), Lifetime::Exited, cpu, (0, 0), lifetime, None);
                    i += 1;
                }
            }
        }
        // Threads that started and exited in between, known only from exit records.
        if let Some(exits) = exits {
            for r in &exits.records {
                let seen = prev.iter().chain(cur).any(|t| t.tid == r.tid);
                if seen || r.start_boottime_ns < started_ns {
                    continue;
                }
                total += r.cpu_ns;
                started += 1;
                exited += 1;
                // The record's sampled times (ns) give the ratio.
                let ratio = (r.utime_ns, r.stime_ns);
                thread_row(
                    r.tid,
                    r.comm,
                    Lifetime::StartedAndExited,
                    Some(r.cpu_ns),
                    (0, 0),
                    ratio,
                    None,
                );
            }
        }
        row.threads_started = Some(started);
        row.threads_exited = Some(exited);
        row.run_delay_ns = Some(delay);
        row.timeslices = Some(slices);
        rows.sort_by_key(|t| t.tid);
        row.threads = rows;
        (total, missing)
    }

    fn whole(&mut self, a: &ProcSample, b: &ProcSample, threads: bool) -> ProcessCpu {
        let elapsed = b.at_ns.saturating_sub(a.at_ns);
        let mut row = self.row(b, Lifetime::Whole, elapsed);
        let exits = self.take_exits(b.pid, b.start_ticks);
        let (ta, tb) = (self.prev.threads_of(a), self.cur.threads_of(b));
        let read_threads = !ta.is_empty() || !tb.is_empty();
        let (thread_ns, missing) = if read_threads {
            self.threads(ta, tb, exits.as_ref(), elapsed, self.prev.begin_boottime_ns, &mut row)
        } else {
            (0, false)
        };
        let interval = (
            CounterDelta::time_between(a.utime_ticks, b.utime_ticks).value,
            CounterDelta::time_between(a.stime_ticks, b.stime_ticks).value,
        );
        let cpu = match (a.clock_ns, b.clock_ns) {
            (Some(x), Some(y)) => CounterDelta::time_between(x, y).value,
            (None, None) if self.basis.source != CpuSource::StatTicks => {
                row.cpu_lower_bound = missing;
                thread_ns
            }
            // No exact source at both ends (or the clock answered only once): `utime + stime`,
            // which the kernel scales to the exact runtime, in ticks.
            _ => self.basis.ticks.to_ns(interval.0 + interval.1),
        };
        if !threads {
            row.threads.clear();
        }
        row.utime_ticks = interval.0;
        row.stime_ticks = interval.1;
        row.children_ticks = CounterDelta::time_between(a.children_ticks, b.children_ticks).value;
        self.finish(&mut row, Some(cpu), interval, (b.utime_ticks, b.stime_ticks), elapsed);
        row
    }

    fn started(&mut self, b: &ProcSample, threads: bool) -> ProcessCpu {
        let elapsed = b.at_ns.saturating_sub(self.prev.begin_ns);
        let mut row = self.row(b, Lifetime::Started, elapsed);
        let exits = self.take_exits(b.pid, b.start_ticks);
        let tb = self.cur.threads_of(b);
        let (thread_ns, _) = if tb.is_empty() {
            (0, false)
        } else {
            self.threads(&[], tb, exits.as_ref(), elapsed, self.prev.begin_boottime_ns, &mut row)
        };
        let interval = (b.utime_ticks, b.stime_ticks);
        let cpu = match b.clock_ns {
            Some(ns) => ns,
            None if self.basis.source == CpuSource::StatTicks => {
                self.basis.ticks.to_ns(interval.0 + interval.1)
            }
            None => thread_ns,
        };
        if !threads {
            row.threads.clear();
        }
        row.utime_ticks = interval.0;
        row.stime_ticks = interval.1;
        row.children_ticks = b.children_ticks;
        self.finish(&mut row, Some(cpu), interval, interval, elapsed);
        row
    }

    fn exited(&mut self, a: &ProcSample, threads: bool) -> ProcessCpu {
        let elapsed = self.cur.end_ns.saturating_sub(a.at_ns);
        let mut row = self.row(a, Lifetime::Exited, elapsed);
        let lifetime_ticks = (a.utime_ticks, a.stime_ticks);
        if a.state == b'Z' || a.state == b'X' {
            // Already dead at the first scan: nothing ran after it.
            self.finish(&mut row, Some(0), (0, 0), lifetime_ticks, elapsed);
            return row;
        }
        let exits = match self.take_exits(a.pid, a.start_ticks) {
            Some(e) if !e.records.is_empty() => e,
            _ => {
                self.counts.exited_unmeasured += 1;
                return row;
            }
        };
        row.uid = exits.records.first().map(|r| r.uid);
        let ta = self.prev.threads_of(a);
        let cpu = match (a.clock_ns, exits.group_cpu_ns()) {
            (Some(before), Some(at_exit)) => Some(at_exit.saturating_sub(before)),
            _ if !ta.is_empty() => {
                let (ns, missing) = self.threads(
                    ta,
                    &[],
                    Some(&exits),
                    elapsed,
                    self.prev.begin_boottime_ns,
                    &mut row,
                );
                row.cpu_lower_bound = missing;
                Some(ns)
            }
            _ => None,
        };
        if !threads {
            row.threads.clear();
        }
        if cpu.is_none() {
            self.counts.exited_unmeasured += 1;
        }
        self.finish(&mut row, cpu, exits.sampled(), lifetime_ticks, elapsed);
        row
    }

    /// Processes known only from exit records: started after the first scan began, gone
    /// before the second.
    fn short_lived(
        &mut self,
        rows: &mut Vec<ProcessCpu>,
        threads: bool,
        selected: &dyn Fn(u32) -> bool,
    ) {
        let Some(pool) = self.exits.take() else { return };
        let elapsed = self.cur.end_ns.saturating_sub(self.prev.begin_ns);
        for (tgid, records) in pool {
            if records.is_empty() || !selected(tgid) {
                continue;
            }
            // Group by process start (a PID may have been used twice in the interval).
            let mut groups: BTreeMap<u64, Vec<&ExitedTask>> = BTreeMap::new();
            for r in records {
                groups.entry(r.group_start_boottime_ns).or_default().push(r);
            }
            for (start, records) in groups {
                if start < self.prev.begin_boottime_ns {
                    continue; // began before the first scan: not a process this interval saw start
                }
                let Some(first) =
                    records.iter().find(|r| r.tid == tgid).or(records.first()).copied()
                else {
                    continue;
                };
                let exits = Exits { records };
                let cpu = exits
                    .group_cpu_ns()
                    .unwrap_or_else(|| exits.records.iter().map(|r| r.cpu_ns).sum());
                let mut row = ProcessCpu {
                    uid: Some(first.uid),
                    ..self.row(
                        &ProcSample {
                            pid: tgid,
                            ppid: first.ppid,
                            state: b'X',
                            comm: first.comm,
                            start_ticks: 0,
                            utime_ticks: 0,
                            stime_ticks: 0,
                            children_ticks: 0,
                            num_threads: 0,
                            clock_ns: None,
                            at_ns: 0,
                            threads_from: 0,
                            threads_len: 0,
                        },
                        Lifetime::StartedAndExited,
                        elapsed,
                    )
                };
                let n = u32::try_from(exits.records.len()).unwrap_or(u32::MAX);
                row.threads_started = Some(n);
                row.threads_exited = Some(n);
                if threads {
                    let cpus = self.cur.online_cpus;
                    row.threads = exits
                        .records
                        .iter()
                        .map(|r| ThreadCpu {
                            tid: r.tid,
                            comm: r.comm,
                            lifetime: Lifetime::StartedAndExited,
                            cpu_ns: Some(r.cpu_ns),
                            cpu_pct: Some(pct(r.cpu_ns, elapsed, cpus)),
                            usr_pct: None,
                            sys_pct: None,
                            utime_ticks: 0,
                            stime_ticks: 0,
                            run_delay_ns: None,
                            timeslices: None,
                        })
                        .collect();
                }
                self.finish(&mut row, Some(cpu), exits.sampled(), (0, 0), elapsed);
                self.counts.short_lived += 1;
                rows.push(row);
            }
        }
    }
}

/// Compares two snapshots. `exited` holds the exit records a tracer collected between them
/// (`None`: no exit tracing — processes that start and exit in between are not seen, and the
/// report says so). With `threads`, each process lists its threads.
pub fn compare(
    prev: &Snapshot,
    cur: &Snapshot,
    exited: Option<&[ExitedTask]>,
    basis: Basis,
    opts: &Options,
) -> Report {
    let window = (prev.begin_boottime_ns, cur.end_boottime_ns);
    let exits = exited.map(|records| {
        let mut by_tgid: BTreeMap<u32, Vec<&ExitedTask>> = BTreeMap::new();
        for r in records
            .iter()
            .filter(|r| r.exit_boottime_ns >= window.0 && r.exit_boottime_ns <= window.1)
        {
            by_tgid.entry(r.tgid).or_default().push(r);
        }
        by_tgid
    });
    let mut b = Builder { prev, cur, basis, exits, counts: Counts::default() };
    let mut rows = Vec::with_capacity(cur.processes.len());
    let (mut i, mut j) = (0, 0);
    let (pa, pb) = (&prev.processes, &cur.processes);
    while i < pa.len() || j < pb.len() {
        match (pa.get(i), pb.get(j)) {
            (Some(a), Some(c)) if a.pid == c.pid && a.start_ticks == c.start_ticks => {
                rows.push(b.whole(a, c, opts.threads));
                b.counts.whole += 1;
                i += 1;
                j += 1;
            }
            (Some(a), Some(c)) if a.pid <= c.pid => {
                // Gone, or its PID now belongs to a newer process (handled next round).
                rows.push(b.exited(a, opts.threads));
                b.counts.exited += 1;
                i += 1;
            }
            (Some(_), Some(c)) | (None, Some(c)) => {
                rows.push(b.started(c, opts.threads));
                b.counts.started += 1;
                j += 1;
            }
            (Some(a), None) => {
                rows.push(b.exited(a, opts.threads));
                b.counts.exited += 1;
                i += 1;
            }
            (None, None) => break,
        }
    }
    let selected = |pid: u32| opts.pids.is_empty() || opts.pids.binary_search(&pid).is_ok();
    b.short_lived(&mut rows, opts.threads, &selected);
    rows.sort_by(|x, y| match (x.cpu_ns, y.cpu_ns) {
        (Some(p), Some(q)) => q.cmp(&p).then(x.pid.cmp(&y.pid)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => x.pid.cmp(&y.pid),
    });
    let mut counts = b.counts;
    counts.unreadable = prev.unreadable.max(cur.unreadable);
    let mid = |s: &Snapshot| s.begin_ns / 2 + s.end_ns / 2;
    Report {
        elapsed_s: mid(cur).saturating_sub(mid(prev)) as f64 / 1e9,
        online_cpus: cur.online_cpus,
        ticks_per_s: basis.ticks.per_second(),
        source: basis.source,
        exits_traced: exited.is_some(),
        exit_tracing_unavailable: None,
        processes: rows,
        counts,
        scan_cpu_ms: [prev.cost_ns as f64 / 1e6, cur.cost_ns as f64 / 1e6],
    }
}
