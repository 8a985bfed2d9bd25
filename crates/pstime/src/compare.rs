//! [`compare()`]: two snapshots into a [`Report`] — processes matched by PID and start time,
//! threads by TID, exit records brought in for what vanished or came and went in between, and
//! each exact CPU time split into user and system by the tick-sampled ratio.

use std::collections::BTreeMap;

use super::{
    Basis, Counts, CpuSource, ExitedTask, Lifetime, Options, ProcSample, ProcessCpu, Report,
    Snapshot, Split, ThreadCpu, ThreadSample,
};
use crate::task::{Comm, SchedStat};
use measure::counter::CounterDelta;

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
