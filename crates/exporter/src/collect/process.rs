//! `process`: CPU seconds of process *groups*, never of single PIDs (per-PID series are the
//! cardinality explosion process exporters are known for).
//!
//! Groups are configured as `NAME=comm:COMM` (the process name exactly), `NAME=regex:RE` (a
//! regular expression searched in the process name) or `NAME=cgroup:PATH` (the process's
//! cgroup v2 path is PATH or below it), tried in the order given: a process belongs to the
//! first group it matches. With no groups configured, processes are grouped by their name.
//! Only the `top` groups with the most CPU time are reported by name (default 10); the rest,
//! and processes no group matches, are summed as `other`.
//!
//! Every scrape reads every thread in one pass with pstime's BPF task iterator (as root on a
//! live system), else `/proc/PID/stat` of each process with cpuacct's reader (user and system
//! time, the kernel's tick-sampled split either way). Each process's time is added to its group as it grows, so a group
//! keeps the time of processes that have exited and its counter never goes back.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;
use std::path::PathBuf;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use cpuacct::procsum::{CommName, ProcessSums, ProcessTotal};
use measure::procstat::parse_stat;
use measure::time::ClockTicks;
use measure::{FsRoot, UsageError};
use pstime::tasks::TaskIter;
use pstime::TaskRecord;
use regex::Regex;

use super::{CollectError, Collector, Config};
use crate::{Family, Kind, Unit};

/// The group every unmatched process, and every group beyond the top N, is summed into.
pub const OTHER: &str = "other";

/// Options for collectors that need more than a root and a database: what `serve`'s flags
/// (`--group NAME=KIND:PATTERN`, repeatable, and `--process-top N`) fill in.
#[derive(Debug, Clone)]
pub struct CollectorOptions {
    /// Process groups, in matching order; empty = one group per process name.
    pub groups: Vec<ProcessGroup>,
    /// How many groups are reported by name; the rest are summed as `other`.
    pub top: usize,
}

impl Default for CollectorOptions {
    fn default() -> Self {
        CollectorOptions { groups: Vec::new(), top: 10 }
    }
}

/// How a group picks its processes.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// The process name (`comm`, at most 15 bytes) exactly.
    Comm(String),
    /// A regular expression searched in the process name.
    Regex(Regex),
    /// The process's cgroup v2 path is this one or below it.
    Cgroup(String),
}

/// A named process group.
#[derive(Debug, Clone)]
pub struct ProcessGroup {
    /// The `group` label value.
    pub name: String,
    /// Which processes.
    pub matcher: Matcher,
}

impl ProcessGroup {
    /// Parses `NAME=comm:COMM`, `NAME=regex:RE` or `NAME=cgroup:PATH`.
    pub fn parse(spec: &str) -> Result<Self, UsageError> {
        let usage = |why: &str| {
            UsageError::Message(format!(
                "--group {spec:?}: {why} (write NAME=comm:COMM, NAME=regex:RE or NAME=cgroup:PATH)"
            ))
        };
        let (name, rule) = spec.split_once('=').ok_or_else(|| usage("no '='"))?;
        let name = name.trim();
        if name.is_empty() || name == OTHER {
            return Err(usage("the group needs a name other than \"other\""));
        }
        let (kind, pattern) = rule.split_once(':').ok_or_else(|| usage("no KIND: after '='"))?;
        if pattern.is_empty() {
            return Err(usage("the pattern is empty"));
        }
        let matcher = match kind {
            "comm" => Matcher::Comm(pattern.to_string()),
            "regex" => Matcher::Regex(
                Regex::new(pattern).map_err(|e| usage(&format!("bad regular expression: {e}")))?,
            ),
            "cgroup" => Matcher::Cgroup(pattern.trim_end_matches('/').to_string()),
            other => return Err(usage(&format!("unknown kind {other:?}"))),
        };
        Ok(ProcessGroup { name: name.to_string(), matcher })
    }

    fn matches(&self, comm: &str, cgroup: Option<&str>) -> bool {
        match &self.matcher {
            Matcher::Comm(c) => c == comm,
            Matcher::Regex(re) => re.is_match(comm),
            Matcher::Cgroup(path) => cgroup.is_some_and(|cg| {
                path.is_empty()
                    || cg == path
                    || cg.strip_prefix(path.as_str()).is_some_and(|rest| rest.starts_with('/'))
            }),
        }
    }
}

/// One process seen at a scrape. Times are in the reader's unit: clock ticks from
/// `/proc/PID/stat`, nanoseconds from the BPF task iterator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessReading {
    pub pid: u32,
    /// Start time after boot: with the PID, names the process across PID reuse.
    pub start: u64,
    pub comm: CommName,
    /// User time of all its threads, exited ones included.
    pub user: u64,
    /// System time, likewise.
    pub system: u64,
}

/// Cumulative time of one group, in the reader's unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Ticks {
    user: u64,
    system: u64,
}

/// What is kept between scrapes. Groups are numbered once, and the processes of the last
/// scrape are kept in the order it read them: the kernel's task list keeps its order between
/// scrapes (new processes at its end), so each reading is matched by comparing it with the
/// next one kept, walking both lists front to back. A hash lookup per process missed the cache
/// on almost every one (three quarters of this collector's user time at 10,000 processes).
#[derive(Debug, Default)]
struct State {
    /// The last scrape's processes, in its reading order.
    kept: Vec<Kept>,
    /// The buffer the next scrape's list is written into (swapped with `kept`, reused).
    spare: Vec<Kept>,
    /// The latest start time in `kept`: a reading that started later cannot be in it.
    newest_start: Option<u64>,
    /// Group names by number, and numbers by name.
    names: Vec<String>,
    numbers: HashMap<String, usize>,
    /// Every group's cumulative ticks, exited processes included, by number.
    sums: Vec<Ticks>,
}

/// One process of the last scrape.
#[derive(Debug, Clone, Copy)]
struct Kept {
    /// (pid, start): names the process across PID reuse.
    key: (u32, u64),
    group: usize,
    /// Ticks already added to the group.
    added: Ticks,
}

/// How far past the next kept process a reading is looked for before the whole list is
/// indexed: a run of processes that exited together is skipped without building an index.
const LOOKAHEAD: usize = 64;

impl State {
    /// The group's number, made on first sight.
    fn number(&mut self, name: String) -> usize {
        if let Some(&n) = self.numbers.get(&name) {
            return n;
        }
        self.names.push(name.clone());
        self.sums.push(Ticks::default());
        self.numbers.insert(name, self.names.len() - 1);
        self.names.len() - 1
    }

    /// Every group's cumulative ticks by name.
    fn totals(&self) -> BTreeMap<String, Ticks> {
        self.names.iter().cloned().zip(self.sums.iter().copied()).collect()
    }
}

/// Hashes a (pid, start) key with one multiply per word (the keys come from the kernel, not
/// from a client, so a keyed hash buys nothing and costs a third of the scrape).
#[derive(Debug, Default)]
struct PidStartHasher(u64);

impl std::hash::Hasher for PidStartHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// The `process` collector.
#[derive(Debug)]
pub struct Process {
    root: FsRoot,
    ticks: ClockTicks,
    options: CollectorOptions,
    state: Mutex<State>,
    /// The BPF task iterator (one pass over every thread), when it could be loaded; else
    /// one `/proc/PID/stat` per process.
    tasks: Option<mpsc::Sender<TaskReply>>,
}

/// Registry entry: the groups and top N from the configuration (`serve --group`,
/// `--process-top`).
pub(super) fn factory(config: &Config) -> Result<Box<dyn Collector>, UsageError> {
    let options = config.process.clone();
    Ok(Box::new(if config.root.is_live() {
        Process::with_task_iterator(config.root.clone(), options)
    } else {
        Process::new(config.root.clone(), options)
    }))
}

type TaskReply = mpsc::SyncSender<Result<Vec<ProcessReading>, String>>;

/// The thread that owns the BPF readers (libbpf's handles cannot move between threads): the
/// in-kernel process sums where the kernel has open-coded task iterators (6.7+), else the task
/// iterator's per-thread records summed here. The sums hold up to 65,536 processes; a scrape
/// that finds more reads the per-thread records instead.
fn start_task_reader() -> Result<mpsc::Sender<TaskReply>, String> {
    let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), String>>(1);
    let (tx, rx) = mpsc::channel::<TaskReply>();
    std::thread::Builder::new()
        .name("process-task-iter".into())
        .spawn(move || {
            let sums = match ProcessSums::load() {
                Ok(sums) => Some(sums),
                Err(e) => {
                    measure::say!(
                        "process collector: summing per thread in user space ({e}; the kernel sums need Linux 6.7 or later)"
                    );
                    None
                }
            };
            let mut iter: Option<TaskIter> = None;
            let load_iter = |iter: &mut Option<TaskIter>| -> Result<(), String> {
                if iter.is_none() {
                    *iter = Some(TaskIter::load().map_err(|e| e.to_string())?);
                }
                Ok(())
            };
            if sums.is_none() {
                if let Err(why) = load_iter(&mut iter) {
                    let _ = ready_tx.send(Err(why));
                    return;
                }
            }
            let _ = ready_tx.send(Ok(()));
            for reply in rx {
                let from_sums = sums.as_ref().map(|s| s.read().map_err(|e| e.to_string()));
                let readings = match from_sums {
                    Some(Ok(Some(totals))) => Ok(totals.into_iter().map(reading_of).collect()),
                    Some(Err(e)) => Err(e),
                    // No sums, or more processes than they hold: the per-thread records.
                    None | Some(Ok(None)) => load_iter(&mut iter).and_then(|()| match &iter {
                        Some(it) => it.read().map(|t| per_process(&t)).map_err(|e| e.to_string()),
                        None => Err("the task iterator is not loaded".into()),
                    }),
                };
                let _ = reply.send(readings);
            }
        })
        .map_err(|e| format!("starting its thread: {e}"))?;
    match ready_rx.recv_timeout(Duration::from_secs(30)) {
        Ok(Ok(())) => Ok(tx),
        Ok(Err(why)) => Err(why),
        Err(_) => Err("the task iterator did not load within 30 s".into()),
    }
}

fn reading_of(p: ProcessTotal) -> ProcessReading {
    ProcessReading {
        pid: p.tgid,
        start: p.start_boottime_ns,
        comm: p.comm,
        user: p.utime_ns,
        system: p.stime_ns,
    }
}

/// Threads summed into processes (ns): every live thread's user and system time plus the
/// process's exited threads'; the name is the leader's. Processes come out in the order of their first thread, the task list's order, which the
/// collector's walk over the last scrape's processes follows.
pub fn per_process(threads: &[TaskRecord]) -> Vec<ProcessReading> {
    let mut out: Vec<ProcessReading> = Vec::new();
    let mut by_tgid: HashMap<u32, usize> = HashMap::new();
    for t in threads {
        let at = *by_tgid.entry(t.tgid).or_insert_with(|| {
            out.push(ProcessReading {
                pid: t.tgid,
                start: t.start_boottime_ns,
                comm: CommName::new(t.comm.as_bytes()),
                user: t.dead_utime_ns,
                system: t.dead_stime_ns,
            });
            out.len() - 1
        });
        let p = &mut out[at];
        p.user += t.utime_ns;
        p.system += t.stime_ns;
        if t.tid == t.tgid {
            p.comm = CommName::new(t.comm.as_bytes());
        }
    }
    out
}

impl Process {
    /// Reads `/proc` under `root`.
    pub fn new(root: FsRoot, options: CollectorOptions) -> Self {
        Process { root, ticks: ClockTicks::system(), options, state: Mutex::default(), tasks: None }
    }

    /// Like [`Process::new`], but reads every thread in one pass with pstime's BPF task
    /// iterator (what `platscope cpu pstime` uses as root) instead of one `/proc/PID/stat` per
    /// process, when it can be loaded (live system, root); else says why on stderr and reads
    /// `/proc`.
    pub fn with_task_iterator(root: FsRoot, options: CollectorOptions) -> Self {
        let mut process = Process::new(root, options);
        match start_task_reader() {
            Ok(tasks) => process.tasks = Some(tasks),
            Err(why) => measure::say!("process collector: reading /proc instead of BPF ({why})"),
        }
        process
    }

    /// Whether the BPF task iterator is used.
    pub fn uses_task_iterator(&self) -> bool {
        self.tasks.is_some()
    }

    /// The group a process belongs to (before the top-N cut).
    fn group_of(&self, pid: u32, comm: &str) -> String {
        if self.options.groups.is_empty() {
            return comm.to_string();
        }
        let needs_cgroup =
            self.options.groups.iter().any(|g| matches!(g.matcher, Matcher::Cgroup(_)));
        let cgroup = needs_cgroup.then(|| self.cgroup_of(pid)).flatten();
        self.options
            .groups
            .iter()
            .find(|g| g.matches(comm, cgroup.as_deref()))
            .map_or_else(|| OTHER.to_string(), |g| g.name.clone())
    }

    /// The cgroup v2 path (`0::/system.slice/x.service`) of a process.
    fn cgroup_of(&self, pid: u32) -> Option<String> {
        let text = std::fs::read_to_string(self.root.path(&format!("proc/{pid}/cgroup"))).ok()?;
        text.lines().find_map(|l| l.strip_prefix("0::")).map(str::to_string)
    }

    /// Every process's reading now (processes that vanish while being read are skipped).
    fn read_all(&self) -> Result<Vec<ProcessReading>, std::io::Error> {
        let proc_dir: PathBuf = self.root.path("proc");
        let mut out = Vec::new();
        let mut buf = Vec::with_capacity(512);
        for entry in std::fs::read_dir(&proc_dir)? {
            let Ok(entry) = entry else { continue };
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            buf.clear();
            let Ok(mut file) = std::fs::File::open(entry.path().join("stat")) else { continue };
            if std::io::Read::read_to_end(&mut file, &mut buf).is_err() {
                continue;
            }
            let Ok(stat) = parse_stat(&buf) else { continue };
            out.push(ProcessReading {
                pid,
                start: stat.start_ticks,
                comm: CommName::new(stat.comm),
                user: stat.utime_ticks,
                system: stat.stime_ticks,
            });
        }
        Ok(out)
    }
}

impl Collector for Process {
    fn name(&self) -> &'static str {
        "process"
    }

    fn collect(&self, out: &mut Vec<Family>) -> Result<(), CollectError> {
        let fail = |message: String| CollectError { collector: "process", message };
        let (readings, seconds_per_unit) = match &self.tasks {
            Some(tasks) => {
                let (reply, answer) = mpsc::sync_channel(1);
                tasks
                    .send(reply)
                    .map_err(|_| fail("the task iterator thread has stopped".into()))?;
                let readings = answer
                    .recv_timeout(Duration::from_secs(5))
                    .map_err(|_| fail("the task iterator did not answer within 5 s".into()))?
                    .map_err(fail)?;
                (readings, 1e-9)
            }
            None => (
                self.read_all().map_err(|e| fail(format!("/proc: {e}")))?,
                1.0 / self.ticks.per_second() as f64,
            ),
        };
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let counts =
            update(&mut state, &readings, |r| self.group_of(r.pid, &r.comm.to_string_lossy()));
        out.extend(families(&state.totals(), &counts, self.options.top, seconds_per_unit));
        Ok(())
    }
}

/// Adds each process's growth since the last scrape to its group and forgets processes that
/// are gone; returns the number of live processes per group.
fn update(
    state: &mut State,
    readings: &[ProcessReading],
    mut group_of: impl FnMut(&ProcessReading) -> String,
) -> BTreeMap<String, u64> {
    let kept = std::mem::take(&mut state.kept);
    let mut next = std::mem::take(&mut state.spare);
    next.clear();
    next.reserve(readings.len());
    let mut counts = vec![0u64; state.names.len()];
    // Built only when a reading is neither near the walk's position nor newer than every
    // kept process (the order changed, or a long run of processes exited).
    let mut index: Option<HashMap<(u32, u64), usize, BuildHasherDefault<PidStartHasher>>> = None;
    let mut at = 0usize;
    let mut newest_start = None;
    for r in readings {
        let key = (r.pid, r.start);
        newest_start = newest_start.max(Some(r.start));
        let window = &kept[at.min(kept.len())..(at + LOOKAHEAD).min(kept.len())];
        let found = match window.iter().position(|k| k.key == key) {
            Some(offset) => Some(at + offset),
            None if state.newest_start.is_none_or(|newest| r.start > newest) => None,
            None => index
                .get_or_insert_with(|| kept.iter().enumerate().map(|(i, k)| (k.key, i)).collect())
                .get(&key)
                .copied(),
        };
        let (group, added) = match found {
            Some(i) => {
                at = i + 1;
                (kept[i].group, kept[i].added)
            }
            None => {
                let group = state.number(group_of(r));
                counts.resize(state.names.len(), 0);
                (group, Ticks::default())
            }
        };
        let now = Ticks { user: r.user, system: r.system };
        let sum = &mut state.sums[group];
        sum.user += now.user.saturating_sub(added.user);
        sum.system += now.system.saturating_sub(added.system);
        let added = Ticks { user: now.user.max(added.user), system: now.system.max(added.system) };
        next.push(Kept { key, group, added });
        counts[group] += 1;
    }
    // Processes not read this time are gone: their time stays in their group's sum.
    state.kept = next;
    state.spare = kept;
    state.newest_start = newest_start;
    state
        .names
        .iter()
        .zip(counts)
        .filter(|&(_, n)| n > 0)
        .map(|(name, n)| (name.clone(), n))
        .collect()
}

/// The two families: the `top` groups by CPU time by name, the rest as `other`.
fn families(
    totals: &BTreeMap<String, Ticks>,
    counts: &BTreeMap<String, u64>,
    top: usize,
    seconds_per_unit: f64,
) -> Vec<Family> {
    let mut ranked: Vec<(&String, &Ticks)> =
        totals.iter().filter(|(name, _)| name.as_str() != OTHER).collect();
    ranked.sort_by(|a, b| (b.1.user + b.1.system).cmp(&(a.1.user + a.1.system)).then(a.0.cmp(b.0)));
    let named: Vec<&String> = ranked.iter().take(top).map(|(name, _)| *name).collect();
    fn label<'a>(named: &[&String], name: &'a String) -> &'a str {
        if named.contains(&name) {
            name.as_str()
        } else {
            OTHER
        }
    }

    let mut cpu: BTreeMap<&str, Ticks> = BTreeMap::new();
    for (name, t) in totals {
        let sum = cpu.entry(label(&named, name)).or_default();
        sum.user += t.user;
        sum.system += t.system;
    }
    let mut procs: BTreeMap<&str, u64> = cpu.keys().map(|&k| (k, 0)).collect();
    for (name, n) in counts {
        *procs.entry(label(&named, name)).or_insert(0) += n;
    }

    let mut cpu_fam = Family::new(
        "platscope_process_group_cpu_seconds",
        Kind::Counter,
        Some(Unit::Seconds),
        "CPU time of the processes of each group (tick-sampled user/system split), exited ones included.",
    );
    for (group, t) in &cpu {
        cpu_fam.push(&[("group", group), ("mode", "user")], t.user as f64 * seconds_per_unit);
        cpu_fam.push(&[("group", group), ("mode", "system")], t.system as f64 * seconds_per_unit);
    }
    let mut count_fam = Family::new(
        "platscope_process_group_processes",
        Kind::Gauge,
        None,
        "Processes of each group alive at the scrape.",
    );
    for (group, n) in &procs {
        count_fam.push(&[("group", group)], *n as f64);
    }
    vec![cpu_fam, count_fam]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;
    use test_tier::live;

    fn reading(pid: u32, comm: &str, user: u64, system: u64) -> ProcessReading {
        ProcessReading {
            pid,
            start: u64::from(pid) * 10,
            comm: CommName::new(comm.as_bytes()),
            user,
            system,
        }
    }

    fn value(fams: &[Family], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let want = crate::Labels::new(labels);
        let fam = fams.iter().find(|f| f.name == name)?;
        fam.samples.iter().find(|s| s.labels == want).and_then(|s| match s.value {
            Value::Number(v) => Some(v),
            Value::Histogram { .. } => None,
        })
    }

    #[test]
    fn group_specs_parse_or_say_how_to_write_them() {
        let g = ProcessGroup::parse("db=comm:postgres").unwrap();
        assert!(g.matches("postgres", None) && !g.matches("postgres2", None));
        let g = ProcessGroup::parse("web=regex:^nginx").unwrap();
        assert!(g.matches("nginx: worker", None) && !g.matches("xnginx", None));
        let g = ProcessGroup::parse("x=cgroup:/system.slice/x.service/").unwrap();
        assert!(g.matches("any", Some("/system.slice/x.service")));
        assert!(g.matches("any", Some("/system.slice/x.service/sub")));
        assert!(!g.matches("any", Some("/system.slice/x.service2")));
        assert!(!g.matches("any", None));
        for bad in ["db", "=comm:x", "other=comm:x", "db=comm:", "db=pid:1", "db=regex:("] {
            let err = ProcessGroup::parse(bad).unwrap_err().to_string();
            assert!(err.contains("NAME=comm:COMM"), "{bad}: {err}");
        }
    }

    #[test]
    fn exited_processes_keep_their_time_and_counters_never_go_back() {
        let mut state = State::default();
        let by_comm = |r: &ProcessReading| r.comm.to_string_lossy().into_owned();
        update(&mut state, &[reading(1, "a", 100, 10), reading(2, "a", 50, 5)], by_comm);
        assert_eq!(state.totals()["a"], Ticks { user: 150, system: 15 });
        // pid 2 exited; pid 1 grew.
        let counts = update(&mut state, &[reading(1, "a", 120, 10)], by_comm);
        assert_eq!(state.totals()["a"], Ticks { user: 170, system: 15 });
        assert_eq!(counts["a"], 1);
        // PID 1 reused by a new process (other start time): counted from zero.
        let mut new = reading(1, "a", 7, 0);
        new.start = 999;
        update(&mut state, &[new], by_comm);
        assert_eq!(state.totals()["a"], Ticks { user: 177, system: 15 });
    }

    /// The ordered walk finds every kept process however the readings are ordered, whichever
    /// processes exit or start: the sums equal those of a plain map by (pid, start).
    #[test]
    fn sums_match_a_map_by_pid_and_start_in_any_order() {
        use test_support::fuzz::{self, proptest::prelude::*};
        // Per scrape: which of 300 possible processes live, their growth, and an order.
        let scrape = (
            prop::collection::vec(any::<bool>(), 300),
            prop::collection::vec(0u64..5, 300),
            any::<u64>(),
            0u8..4,
        );
        fuzz::check(fuzz::PURE, prop::collection::vec(scrape, 1..8), |scrapes| {
            let mut state = State::default();
            let mut model: HashMap<(u32, u64), (String, Ticks)> = HashMap::new();
            let mut model_sums: BTreeMap<String, Ticks> = BTreeMap::new();
            let mut times = vec![0u64; 300];
            for (alive, growth, seed, order) in scrapes {
                let mut readings = Vec::new();
                for i in (0..300).filter(|&i| alive[i]) {
                    times[i] += growth[i];
                    // Pids 0..99 are reused with a later start by processes 100..299.
                    let mut r = reading((i % 100) as u32, ["a", "b", "c"][i % 3], times[i], 1);
                    r.start = i as u64;
                    readings.push(r);
                }
                match order {
                    0 => {}
                    1 => readings.reverse(),
                    2 => {
                        let by = seed as usize % readings.len().max(1);
                        readings.rotate_left(by);
                    }
                    _ => {
                        // A deterministic shuffle.
                        let mut x = seed | 1;
                        for i in (1..readings.len()).rev() {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            readings.swap(i, (x % (i as u64 + 1)) as usize);
                        }
                    }
                }
                let by_comm = |r: &ProcessReading| r.comm.to_string_lossy().into_owned();
                let counts = update(&mut state, &readings, by_comm);
                let mut model_counts: BTreeMap<String, u64> = BTreeMap::new();
                let mut next = HashMap::new();
                for r in &readings {
                    let key = (r.pid, r.start);
                    let (group, added) =
                        model.get(&key).cloned().unwrap_or_else(|| (by_comm(r), Ticks::default()));
                    let sum = model_sums.entry(group.clone()).or_default();
                    sum.user += r.user - added.user;
                    sum.system += r.system - added.system;
                    *model_counts.entry(group.clone()).or_default() += 1;
                    next.insert(key, (group, Ticks { user: r.user, system: r.system }));
                }
                model = next;
                prop_assert_eq!(&counts, &model_counts);
                let totals: BTreeMap<String, Ticks> =
                    state.totals().into_iter().filter(|(_, t)| *t != Ticks::default()).collect();
                let want: BTreeMap<String, Ticks> = model_sums
                    .iter()
                    .filter(|(_, t)| **t != Ticks::default())
                    .map(|(k, v)| (k.clone(), *v))
                    .collect();
                prop_assert_eq!(totals, want);
            }
            Ok(())
        });
    }

    #[test]
    fn only_the_top_groups_by_name_the_rest_is_other() {
        let mut state = State::default();
        let readings = [
            reading(1, "big", 1000, 0),
            reading(2, "mid", 500, 0),
            reading(3, "small", 10, 0),
            reading(4, "tiny", 1, 0),
        ];
        let counts = update(&mut state, &readings, |r| r.comm.to_string_lossy().into_owned());
        let fams = families(&state.totals(), &counts, 2, 0.01);
        let cpu = "platscope_process_group_cpu_seconds";
        assert_eq!(value(&fams, cpu, &[("group", "big"), ("mode", "user")]), Some(10.0));
        assert_eq!(value(&fams, cpu, &[("group", "mid"), ("mode", "user")]), Some(5.0));
        assert_eq!(value(&fams, cpu, &[("group", "other"), ("mode", "user")]), Some(0.11));
        assert!(value(&fams, cpu, &[("group", "small"), ("mode", "user")]).is_none());
        let procs = "platscope_process_group_processes";
        assert_eq!(value(&fams, procs, &[("group", "other")]), Some(2.0));
        assert_eq!(fams[0].samples.len(), 6, "3 groups × 2 modes");
    }

    #[test]
    fn reads_the_live_system() {
        let options = CollectorOptions {
            groups: vec![ProcessGroup::parse("me=regex:^exporter").unwrap()],
            top: 10,
        };
        let c = Process::new(FsRoot::live(), options);
        let mut out = Vec::new();
        c.collect(&mut out).unwrap();
        let procs = value(&out, "platscope_process_group_processes", &[("group", "me")]);
        assert!(procs.is_some_and(|n| n >= 1.0), "this test binary is an exporter-… process");
        assert!(value(&out, "platscope_process_group_processes", &[("group", "other")])
            .is_some_and(|n| n >= 1.0));
    }

    #[live("loads pstime's BPF task iterator (root)")]
    fn the_task_iterator_sees_this_process() {
        let options = CollectorOptions {
            groups: vec![ProcessGroup::parse("me=regex:^exporter").unwrap()],
            top: 10,
        };
        let c = Process::with_task_iterator(FsRoot::live(), options);
        assert!(c.uses_task_iterator(), "BPF did not load (see the note above; run as root)");
        // Some user time to see (tick-sampled: many ticks' worth).
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(200) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let mut out = Vec::new();
        c.collect(&mut out).unwrap();
        let procs = value(&out, "platscope_process_group_processes", &[("group", "me")]);
        assert_eq!(procs, Some(1.0), "exactly this test process, however many threads");
        let user = value(
            &out,
            "platscope_process_group_cpu_seconds",
            &[("group", "me"), ("mode", "user")],
        );
        assert!(user.is_some_and(|s| s > 0.0), "{user:?}");
    }
}
