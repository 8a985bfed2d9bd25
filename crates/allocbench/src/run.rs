//! One measured run: a child process started under one allocator, verified, timed, and measured.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use measure::cpustat::MachineReading;
use measure::time::ClockTicks;
use serde::{Deserialize, Serialize};

use crate::allocator::{Allocator, Kind, KNOWN};
use crate::procfs::{self, AddressSpace, FileId, Memory, Verdict};
use crate::workload::{BuiltinParams, WorkerReport};
use crate::Error;

/// How to start the built-in workload's worker: a program and the arguments before the
/// workload's own (`platscope alloc-worker`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
}

/// CPU used during a run, seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUse {
    /// The measured process (and, for commands and servers, its children): user + system.
    pub process_s: f64,
    /// Its user-mode share (tick-sampled for the built-in workload: see docs/alloc.md).
    pub user_s: f64,
    pub system_s: f64,
    /// Every CPU's busy time from `/proc/stat` over the run (everything else on the machine
    /// included).
    pub machine_busy_s: f64,
}

/// CPU per operation, microseconds: the CPU delta divided by the operations counted.
pub fn cpu_per_op_us(cpu_s: f64, ops: f64) -> f64 {
    if ops > 0.0 {
        cpu_s / ops * 1e6
    } else {
        f64::NAN
    }
}

/// The figures of one verified run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub allocator: String,
    pub threads: u32,
    pub round: u32,
    pub pid: u32,
    /// What proved the allocator was in use (the mapping seen, or the tunables).
    pub verified: String,
    /// Operations done (for `--metric`, the rate read times the wall time).
    pub ops: f64,
    pub seconds: f64,
    /// Operations per second.
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub throughput: f64,
    pub cpu: CpuUse,
    /// `cpu.process_s / ops`, µs.
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub cpu_per_op_us: f64,
    /// `cpu.machine_busy_s / ops`, µs (system-wide, as the original bake-off measured CPU).
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub machine_cpu_per_op_us: f64,
    /// At the end: peak RSS, RSS, PSS.
    pub memory: Memory,
    pub space_start: AddressSpace,
    pub space_end: AddressSpace,
    pub minor_faults: u64,
}

impl RunRecord {
    /// Growth of the address space that can be backed by memory (PROT_NONE excluded), bytes.
    pub fn accessible_growth(&self) -> i64 {
        self.space_end.accessible_bytes() as i64 - self.space_start.accessible_bytes() as i64
    }

    /// Growth of the whole address space (VSZ), reservations included, bytes.
    pub fn total_growth(&self) -> i64 {
        self.space_end.total_bytes as i64 - self.space_start.total_bytes as i64
    }
}

/// A run that did not count, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub allocator: String,
    pub threads: u32,
    pub round: u32,
    pub reason: String,
}

/// What one run came to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Outcome {
    Measured(RunRecord),
    Refused(Refusal),
    /// Stopped by Ctrl-C or SIGTERM: nothing kept from this run.
    Interrupted,
}

/// How a command's throughput is known.
#[derive(Debug, Clone)]
pub enum Throughput {
    /// A rate printed by the command: the first capture group (or the whole match) of the last
    /// match in its stdout, then stderr.
    Metric(regex::Regex),
    /// Operations the command does; the rate is this over its wall time.
    Ops(u64),
}

/// A command workload. `{threads}` in an argument is replaced with the thread count.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    pub argv: Vec<String>,
    pub throughput: Throughput,
}

impl CommandSpec {
    pub fn takes_threads(&self) -> bool {
        self.argv.iter().any(|a| a.contains("{threads}"))
    }

    pub fn argv_for(&self, threads: u32) -> Vec<String> {
        self.argv.iter().map(|a| a.replace("{threads}", &threads.to_string())).collect()
    }
}

/// Everything a run is judged against: the allocator, its library's identity, and the identity
/// of every other known allocator library (mapped in a glibc run, it means a stray preload).
#[derive(Debug, Clone)]
pub struct Subject {
    pub allocator: Allocator,
    library: Option<FileId>,
    others: Vec<FileId>,
}

impl Subject {
    pub fn new(allocator: &Allocator, cache: &[crate::allocator::CacheEntry]) -> Self {
        let library = match &allocator.kind {
            Kind::Preload { library } => FileId::of(library).ok(),
            Kind::Glibc { .. } => None,
        };
        let others = cache
            .iter()
            .filter(|e| KNOWN.iter().any(|k| k.library == e.name))
            .filter_map(|e| FileId::of(&e.path).ok())
            .collect();
        Subject { allocator: allocator.clone(), library, others }
    }

    /// Verifies the process `pid` against this subject.
    pub fn verify(&self, pid: u32) -> Result<Verdict, Error> {
        let maps = read_maps(pid)?;
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        Ok(procfs::verify(&self.allocator, self.library, &maps, &environ, &self.others))
    }
}

impl Subject {
    /// Verifies where the process `pid` says its allocation functions resolve (`resolved`, from
    /// the process itself) against this subject and the process's maps.
    pub fn verify_symbols(
        &self,
        pid: u32,
        resolved: &[crate::workload::Resolved],
    ) -> Result<Verdict, Error> {
        let maps = read_maps(pid)?;
        Ok(procfs::verify_symbols(&self.allocator, self.library, &maps, resolved))
    }
}

fn read_maps(pid: u32) -> Result<Vec<procfs::Mapping>, Error> {
    let path = format!("/proc/{pid}/maps");
    let text = std::fs::read_to_string(&path).map_err(Error::io(format!("reading {path}")))?;
    procfs::parse_maps(&text).map_err(|e| Error::Worker(format!("{path}: {e}")))
}

/// Memory, address space and minor faults of a live process.
pub(crate) fn snapshot(pid: u32) -> Result<(Memory, AddressSpace, u64), Error> {
    let maps = read_maps(pid)?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let stat = std::fs::read(format!("/proc/{pid}/stat")).unwrap_or_default();
    let minflt = measure::procstat::parse_stat(&stat).map(|s| s.minflt).unwrap_or(0);
    Ok((procfs::parse_memory(&status, &rollup), AddressSpace::of(&maps), minflt))
}

/// A reading of the whole machine's CPU time, for [`busy_seconds`].
pub(crate) fn machine_busy() -> Result<MachineReading, Error> {
    MachineReading::now().map_err(|e| Error::Worker(e.to_string()))
}

/// Busy seconds of all CPUs between two readings (measured idle against the wall clock: the
/// tick-sampled busy columns miss work done in short bursts).
pub fn busy_seconds(before: &MachineReading, after: &MachineReading, ticks: ClockTicks) -> f64 {
    after.busy_ns_since(before, ticks) as f64 / 1e9
}

/// User and system ticks of a live process (its own and reaped children's).
fn process_ticks(pid: u32) -> (u64, u64) {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).unwrap_or_default();
    measure::procstat::parse_stat(&stat)
        .map(|s| (s.utime_ticks + s.cutime_ticks, s.stime_ticks + s.cstime_ticks))
        .unwrap_or((0, 0))
}

/// Waits for our own child `pid` and returns its wait status and resource usage (its
/// waited-for children included); with `nohang`, only looks: `None` while it runs.
pub fn wait_rusage(pid: u32, nohang: bool) -> Result<Option<(i32, libc::rusage)>, Error> {
    let mut status = 0;
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if nohang { libc::WNOHANG } else { 0 };
    loop {
        // SAFETY: `pid` is our own child (spawned by this module and not waited for elsewhere);
        // `status` and `usage` are valid for writes for the duration of the call.
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, flags, &mut usage) };
        if r == pid as libc::pid_t {
            return Ok(Some((status, usage)));
        }
        if r == 0 {
            return Ok(None);
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(Error::Io { what: format!("waiting for process {pid}"), source: err });
        }
    }
}

/// A `timeval` in seconds.
pub fn timeval_s(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 / 1e6
}

/// How a process ended, from its wait status: `exited with status 1`, `was killed by signal 9`.
pub fn describe_status(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("was killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("ended with wait status {status}")
    }
}

/// Sends `signal` to our own child and reaps it.
fn end_child(pid: u32, signal: i32) {
    // SAFETY: kill(2) with our own child's PID, which we have not reaped yet.
    unsafe { libc::kill(pid as libc::pid_t, signal) };
    let _ = wait_rusage(pid, false);
}

/// The last non-blank line of `text`, at most 200 characters, or `(nothing)`.
pub fn last_line(text: &str) -> String {
    let line = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    if line.is_empty() {
        "(nothing)".to_string()
    } else {
        line.chars().take(200).collect()
    }
}

/// The built-in workload's worker with `params`, under `subject`'s allocator, its standard
/// streams piped.
fn spawn_worker(
    worker: &WorkerCommand,
    params: &BuiltinParams,
    subject: &Subject,
) -> Result<std::process::Child, Error> {
    let mut cmd = Command::new(&worker.program);
    cmd.args(&worker.args).args(params.to_args());
    subject.allocator.apply(&mut cmd);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.spawn().map_err(Error::io(format!("starting the worker {}", worker.program.display())))
}

/// Runs the built-in workload once under `subject`.
pub fn run_builtin(
    worker: &WorkerCommand,
    params: &BuiltinParams,
    subject: &Subject,
    round: u32,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Outcome, Error> {
    let mut child = spawn_worker(worker, params, subject)?;
    let pid = child.id();
    let result = drive_builtin(&mut child, pid, params, subject, round, stop);
    if result.is_err() || matches!(result, Ok(Outcome::Refused(_) | Outcome::Interrupted)) {
        end_child(pid, libc::SIGKILL);
    }
    result
}

/// Starts the built-in workload's worker under `subject` only to ask it where its allocation
/// functions resolve, checks that against its maps (mapped, then serving), and ends it: the
/// check a command or server workload cannot run in its own process.
pub fn probe(worker: &WorkerCommand, subject: &Subject) -> Result<Verdict, Error> {
    let params =
        BuiltinParams { threads: 1, ops_per_thread: 1, working_set: 1, ..Default::default() };
    let mut child = spawn_worker(worker, &params, subject)?;
    let pid = child.id();
    let verdict = (|| {
        let stdout = child.stdout.take().ok_or_else(|| Error::Worker("no stdout".into()))?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(Error::io("reading from the worker"))?;
        let Some(resolved) = crate::workload::parse_ready(&line) else {
            return Err(worker_failed(&mut child, "it did not start"));
        };
        match subject.verify(pid)? {
            Verdict::Verified(_) => subject.verify_symbols(pid, &resolved),
            refused => Ok(refused),
        }
    })();
    // Its stdin is still open: it waits for a start that never comes.
    end_child(pid, libc::SIGKILL);
    verdict
}

fn worker_failed(child: &mut Child, what: &str) -> Error {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    Error::Worker(format!("{what}; its stderr: {}", last_line(&err)))
}

fn drive_builtin(
    child: &mut Child,
    pid: u32,
    params: &BuiltinParams,
    subject: &Subject,
    round: u32,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Outcome, Error> {
    let stdout = child.stdout.take().ok_or_else(|| Error::Worker("no stdout".into()))?;
    let mut lines = BufReader::new(stdout);
    let mut line = String::new();
    lines.read_line(&mut line).map_err(Error::io("reading from the worker"))?;
    let Some(resolved) = crate::workload::parse_ready(&line) else {
        return Err(worker_failed(child, "it did not start"));
    };
    let reject = |reason: String| {
        Outcome::Refused(Refusal {
            allocator: subject.allocator.name.clone(),
            threads: params.threads,
            round,
            reason,
        })
    };
    // Mapped (and, for glibc runs, no other allocator mapped, tunables in place), then serving:
    // the worker's own malloc, free, realloc, calloc and posix_memalign are the allocator's.
    let verified = match subject.verify(pid)? {
        Verdict::Verified(_) => match subject.verify_symbols(pid, &resolved)? {
            Verdict::Verified(v) => v,
            Verdict::Refused(r) => return Ok(reject(r)),
        },
        Verdict::Refused(r) => return Ok(reject(r)),
    };
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(Outcome::Interrupted);
    }
    let (_, space_start, minflt0) = snapshot(pid)?;
    let ticks = ClockTicks::system();
    let (u0, s0) = process_ticks(pid);
    let cpu0 =
        measure::time::process_cpu_ns(pid).map_err(Error::io("reading the worker's CPU clock"))?;
    let busy0 = machine_busy()?;
    let mut stdin = child.stdin.take().ok_or_else(|| Error::Worker("no stdin".into()))?;
    stdin.write_all(b"go\n").map_err(Error::io("starting the worker"))?;
    stdin.flush().map_err(Error::io("starting the worker"))?;
    line.clear();
    lines.read_line(&mut line).map_err(Error::io("reading from the worker"))?;
    let busy1 = machine_busy()?;
    if line.is_empty() {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(Outcome::Interrupted);
        }
        return Err(worker_failed(child, "it ended without a report"));
    }
    let cpu1 =
        measure::time::process_cpu_ns(pid).map_err(Error::io("reading the worker's CPU clock"))?;
    let (u1, s1) = process_ticks(pid);
    let report: WorkerReport = serde_json::from_str(line.trim())
        .map_err(|e| Error::Worker(format!("unreadable report '{}': {e}", line.trim())))?;
    // Its memory at the end, while everything it allocated is still mapped.
    let (memory, space_end, minflt1) = snapshot(pid)?;
    drop(stdin);
    let _ = wait_rusage(pid, false)?;
    let process_s = cpu1.saturating_sub(cpu0) as f64 / 1e9;
    // The split is tick-sampled; scale it to the exact total.
    let (du, ds) = (ticks.to_secs(u1.saturating_sub(u0)), ticks.to_secs(s1.saturating_sub(s0)));
    let user_share = if du + ds > 0.0 { du / (du + ds) } else { 1.0 };
    let cpu = CpuUse {
        process_s,
        user_s: process_s * user_share,
        system_s: process_s * (1.0 - user_share),
        machine_busy_s: busy_seconds(&busy0, &busy1, ticks),
    };
    let ops = report.ops as f64;
    Ok(Outcome::Measured(RunRecord {
        allocator: subject.allocator.name.clone(),
        threads: params.threads,
        round,
        pid,
        verified,
        ops,
        seconds: report.seconds,
        throughput: if report.seconds > 0.0 { ops / report.seconds } else { f64::NAN },
        cpu,
        cpu_per_op_us: cpu_per_op_us(cpu.process_s, ops),
        machine_cpu_per_op_us: cpu_per_op_us(cpu.machine_busy_s, ops),
        memory,
        space_start,
        space_end,
        minor_faults: minflt1.saturating_sub(minflt0),
    }))
}

/// Reads a pipe to the end on its own thread (a full pipe must never stall the child).
fn collect(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// The rate `regex` finds in a command's output: the last match, stdout before stderr; its
/// first capture group if it has one, else the whole match; commas and spaces in the number are
/// ignored (`12,345.6`).
pub fn metric_from_output(regex: &regex::Regex, stdout: &str, stderr: &str) -> Option<f64> {
    [stdout, stderr].iter().find_map(|text| {
        let caps = regex.captures_iter(text).last()?;
        let m = caps.get(1).or_else(|| caps.get(0))?;
        let cleaned: String = m.as_str().chars().filter(|c| *c != ',' && *c != ' ').collect();
        cleaned.parse::<f64>().ok().filter(|v| v.is_finite())
    })
}

/// Runs a command once under `subject`, sampling its maps and memory every 20 ms while it runs.
pub fn run_command(
    spec: &CommandSpec,
    threads: u32,
    subject: &Subject,
    round: u32,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Outcome, Error> {
    let argv = spec.argv_for(threads);
    let (program, args) =
        argv.split_first().ok_or_else(|| Error::usage("no command given after --"))?;
    let shown = argv.join(" ");
    let mut cmd = Command::new(program);
    cmd.args(args).env("PLATSCOPE_ALLOC_THREADS", threads.to_string());
    subject.allocator.apply(&mut cmd);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let busy0 = machine_busy()?;
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::usage(format!("{program}: command not found")),
        _ => Error::Io { what: format!("starting {program}"), source: e },
    })?;
    let pid = child.id();
    let out = collect(child.stdout.take());
    let err = collect(child.stderr.take());
    let mut verified: Option<String> = None;
    let mut refused: Option<String> = None;
    let mut first_space: Option<AddressSpace> = None;
    let mut last: Option<(Memory, AddressSpace)> = None;
    let mut interrupted = false;
    let (status, usage) = loop {
        if let Some(done) = wait_rusage(pid, true)? {
            break done;
        }
        if stop.load(std::sync::atomic::Ordering::Relaxed) && !interrupted {
            interrupted = true;
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        }
        if verified.is_none() {
            // The loader may still be mapping the preload right after exec: look until seen.
            match subject.verify(pid) {
                Ok(Verdict::Verified(v)) => verified = Some(v),
                Ok(Verdict::Refused(r)) => refused = Some(r),
                Err(_) => {}
            }
        }
        if let Ok((memory, space, _)) = snapshot(pid) {
            first_space.get_or_insert(space);
            last = Some((memory, space));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let seconds = start.elapsed().as_secs_f64();
    let busy1 = machine_busy()?;
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let reject = |reason: String| {
        Ok(Outcome::Refused(Refusal {
            allocator: subject.allocator.name.clone(),
            threads,
            round,
            reason,
        }))
    };
    if interrupted {
        return Ok(Outcome::Interrupted);
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        let tail = last_line(if stderr.trim().is_empty() { &stdout } else { &stderr });
        return Err(Error::CommandFailed {
            command: shown,
            allocator: subject.allocator.name.clone(),
            status: describe_status(status),
            tail: format!(": {tail}"),
        });
    }
    let Some(verified) = verified else {
        return reject(refused.unwrap_or_else(|| {
            "the command exited before its maps could be read (under 20 ms): give it more work"
                .to_string()
        }));
    };
    let (ops, throughput) = match &spec.throughput {
        Throughput::Ops(n) => (*n as f64, *n as f64 / seconds),
        Throughput::Metric(re) => match metric_from_output(re, &stdout, &stderr) {
            Some(rate) => (rate * seconds, rate),
            None => {
                return Err(Error::NoMetric {
                    command: shown,
                    allocator: subject.allocator.name.clone(),
                    regex: re.as_str().to_string(),
                    tail: last_line(&format!("{stdout}\n{stderr}")),
                })
            }
        },
    };
    let user_s = timeval_s(usage.ru_utime);
    let system_s = timeval_s(usage.ru_stime);
    let cpu = CpuUse {
        process_s: user_s + system_s,
        user_s,
        system_s,
        machine_busy_s: busy_seconds(&busy0, &busy1, ClockTicks::system()),
    };
    let (mut memory, space_end) = last.unwrap_or_default();
    // The kernel's own peak for the process and its waited-for children (ru_maxrss, KiB).
    memory.hwm_bytes = Some(u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024);
    Ok(Outcome::Measured(RunRecord {
        allocator: subject.allocator.name.clone(),
        threads,
        round,
        pid,
        verified,
        ops,
        seconds,
        throughput,
        cpu,
        cpu_per_op_us: cpu_per_op_us(cpu.process_s, ops),
        machine_cpu_per_op_us: cpu_per_op_us(cpu.machine_busy_s, ops),
        memory,
        space_start: first_space.unwrap_or_default(),
        space_end,
        minor_faults: u64::try_from(usage.ru_minflt).unwrap_or(0),
    }))
}

/// Whether `path` looks like something that can be run (for early usage errors).
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_per_op_is_the_cpu_delta_over_the_count() {
        assert_eq!(cpu_per_op_us(2.0, 1_000_000.0), 2.0);
        assert_eq!(cpu_per_op_us(0.5, 250.0), 2000.0);
        assert!(cpu_per_op_us(1.0, 0.0).is_nan());
        // Two CPUs for 1.5 s, 1 s of it idle: 2 busy seconds (the busy columns, sampled, say 1).
        let t = ClockTicks::new(100);
        let reading = |text: &str, at_ns| {
            MachineReading::of(&measure::cpustat::parse_proc_stat(text).unwrap(), at_ns)
        };
        let a = reading("cpu  100 0 50 1000 0 0 0\ncpu0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0\n", 0);
        let b = reading(
            "cpu  150 0 100 1100 0 0 0\ncpu0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0\n",
            1_500_000_000,
        );
        assert_eq!(busy_seconds(&a, &b, t), 2.0);
    }

    #[test]
    fn metrics_are_read_from_the_last_match() {
        // sysbench 1.0.20's summary line.
        let out = "    transactions:                        12345  (411.48 per sec.)\n";
        let re = regex::Regex::new(r"transactions:\s+\d+\s+\(([\d.]+) per sec").unwrap();
        assert_eq!(metric_from_output(&re, out, ""), Some(411.48));
        let re = regex::Regex::new(r"tps = ([\d.,]+)").unwrap();
        assert_eq!(metric_from_output(&re, "tps = 1,000.5\ntps = 2,000.5\n", ""), Some(2000.5));
        assert_eq!(metric_from_output(&re, "nothing here", "tps = 3"), Some(3.0));
        assert_eq!(metric_from_output(&re, "nothing", ""), None);
    }

    #[test]
    fn threads_substitute_into_the_command() {
        let spec = CommandSpec {
            argv: vec!["x".into(), "--threads={threads}".into()],
            throughput: Throughput::Ops(1),
        };
        assert!(spec.takes_threads());
        assert_eq!(spec.argv_for(4), ["x", "--threads=4"]);
    }
}
