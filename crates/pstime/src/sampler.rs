//! [`Sampler`]: takes [`Snapshot`]s of every selected process (and its threads) from `/proc`,
//! or from one pass over the kernel's tasks; fills in command lines and owners afterwards.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{self, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Instant;

use super::read::{count_cpu_list, open_dir, read_small, thread_cpu_ns, ReadError};
use super::{
    Basis, CpuSource, Lifetime, Options, ProcSample, Report, Snapshot, TaskRecord, ThreadSample,
    ThreadStat,
};
use crate::task::{parse_schedstat, parse_stat, Comm, SchedStat};
use measure::time::{boottime_ns, process_cpu_ns, ClockTicks};
use measure::FsRoot;
use measure::{Error, ParseError, UsageError};

#[cfg(doc)]
use super::ProcessCpu;

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

/// What sampling one process came to.
enum Outcome {
    Sampled,
    Gone,
    Denied,
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
