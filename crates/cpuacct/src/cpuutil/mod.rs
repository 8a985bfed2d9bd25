//! CPU utilization per CPU and for all CPUs, as floating-point percentages from `/proc/stat`
//! (mpstat's columns), with room for event-based busy time next to the tick-sampled figures.
//!
//! - [`Monitor`] reads [`Snapshot`]s through an [`FsRoot`]; [`compute`] turns two of them (or one,
//!   since boot) into a [`Report`]. CPUs are matched by number: one that went offline or came
//!   online between the snapshots is listed in [`Report::offlined`] / [`Report::onlined`] and
//!   left out of the figures, including the all-CPU line, which sums the CPUs present in both
//!   (the kernel's `cpu` line also carries offline CPUs' frozen counts).
//! - Definitions (mpstat's): `%usr` is user time without guest time and without niced time;
//!   `%nice` is niced user time without niced guest time; `%guest`/`%gnice` are time running a
//!   virtual CPU; `%idle` excludes `%iowait`. The columns add up to 100. *busy* is everything but
//!   idle and iowait.
//! - Event-based busy time (`--event`) comes from elsewhere (a `sched_switch` BPF program):
//!   pass an [`EventReading`] with each snapshot and the report carries, per CPU, the measured
//!   busy percentage and its difference from the tick-sampled one ([`EventBusy`]).
//!
//! - [`mpstat_log`] reads the same figures from mpstat output someone sent (text, JSON, with a
//!   date before every line); [`replay`] turns each of its intervals into a [`Report`] and prints
//!   it with the same renderer as the live command (`cpu util --from FILE`).
//!
//! See `measure::cpustat` for which figures are sampled and which are measured.

pub mod mpstat_log;
pub mod render;
pub mod replay;

use std::collections::BTreeSet;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use measure::counter::CounterDelta;
use measure::cpustat::{parse_proc_stat, CpuTimes, ProcStat};
use measure::time::ClockTicks;
use measure::Error;
use measure::FsRoot;

/// What to show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Leave out CPUs that were idle for the whole interval (no tick charged to anything but
    /// idle or iowait), as the old `mpstat | grep -v ' 100$'` trick for finding the one busy CPU
    /// among many idle ones. The all-CPU line always stays.
    pub busy_only: bool,
}

/// One CPU's busy time as counted from scheduler events: the ns it spent running anything but
/// its idle task, accumulated since the counting started, up to the moment of reading
/// (including the slice running at that moment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CpuBusyNs {
    pub cpu: u32,
    pub busy_ns: u64,
}

/// Event-based busy time of every CPU, read together with `/proc/stat`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EventReading {
    pub cpus: Vec<CpuBusyNs>,
}

impl EventReading {
    fn busy_ns(&self, cpu: u32) -> Option<u64> {
        self.cpus.iter().find(|c| c.cpu == cpu).map(|c| c.busy_ns)
    }
}

/// One reading.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub at: Instant,
    /// Wall-clock time of the reading, seconds since the Unix epoch (for display).
    pub epoch_s: f64,
    pub stat: ProcStat,
    pub event: Option<EventReading>,
}

/// Event-based busy time of one CPU (or all) over the interval, next to the sampled figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EventBusy {
    pub busy_ns: u64,
    /// The interval's length the percentage is of (ns; for all CPUs, times the CPUs counted).
    pub window_ns: u64,
    pub busy_pct: f64,
    /// Tick-sampled busy % minus event-based busy %: positive when the ticks over-count.
    pub sampled_minus_event_pct: f64,
}

impl EventBusy {
    /// Whether sampling and events disagree enough to point out: by more than a tenth of the
    /// measured figure and more than half a percentage point.
    pub fn differs(&self) -> bool {
        let d = self.sampled_minus_event_pct.abs();
        d > 0.5 && d > self.busy_pct.abs() * 0.1
    }
}

/// One CPU (or all) over one interval: percentages of the ticks counted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuUtil {
    /// The CPU's number; `None` for the all-CPU line (and for a node's line).
    pub cpu: Option<u32>,
    /// Clock ticks counted in all states (the denominator); 0 for a report read from an mpstat
    /// log, which gives percentages only.
    pub ticks: u64,
    pub usr: f64,
    pub nice: f64,
    pub sys: f64,
    pub iowait: f64,
    pub irq: f64,
    pub soft: f64,
    pub steal: f64,
    pub guest: f64,
    pub gnice: f64,
    pub idle: f64,
    /// Everything but idle and iowait (tick-sampled).
    pub busy: f64,
    /// Some counter read lower than before (idle/iowait on tickless kernels): counted as 0.
    pub went_back: bool,
    /// Event-based busy time, when an [`EventReading`] came with both snapshots.
    pub event: Option<EventBusy>,
}

impl CpuUtil {
    /// `%idle` prints as 100.00: what `mpstat | grep -v ' 100$'` filters out, for the live
    /// machine and for logs alike. A CPU that waited for I/O part of the interval is shown.
    pub fn is_idle(&self) -> bool {
        self.idle >= 99.995
    }
}

/// One NUMA node's CPUs together over one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeUtil {
    pub node: u32,
    /// The CPUs whose figures make up the node's; empty when the node's line came as such from
    /// an mpstat log (`-N`), which does not say.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<u32>,
    /// The node's figures (`cpu` is `None`): its CPUs' ticks summed when ticks are known, else
    /// the mean of its CPUs' percentages.
    pub util: CpuUtil,
}

/// When a report read from a log was taken, as the log says it (mpstat's own clock).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoggedAt {
    /// `YYYY-MM-DD`, when the log gives a date (mpstat's first line, or a date before a line).
    pub date: Option<String>,
    /// `HH:MM:SS`, 24-hour, as mpstat printed it (AM/PM converted).
    pub time: String,
    /// The zone a date before the lines named (`UTC`, `+01:00`, `CET`); mpstat does not say.
    pub zone: Option<String>,
}

/// Everything measured over one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Wall-clock end of the interval, seconds since the Unix epoch. `None` only for a report
    /// read from a log that does not say its time zone (see [`Report::logged_at`]).
    pub epoch_s: Option<f64>,
    /// Length of the interval (monotonic clock); for a since-boot report, the ticks counted
    /// per CPU in seconds. From a log: the difference of mpstat's timestamps (whole seconds),
    /// 0 when the log does not say.
    pub elapsed_s: f64,
    pub since_boot: bool,
    /// `USER_HZ`; 0 for a report read from a log.
    pub ticks_per_s: u64,
    pub all: CpuUtil,
    pub cpus: Vec<CpuUtil>,
    /// Per-NUMA-node figures, when asked for or when the log has them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeUtil>,
    /// CPUs left out by `busy_only`.
    pub hidden_idle: Vec<u32>,
    /// CPUs online at the end but not at the start (left out).
    pub onlined: Vec<u32>,
    /// CPUs online at the start but not at the end (left out).
    pub offlined: Vec<u32>,
    pub context_switches_per_s: Option<f64>,
    /// For a report read from an mpstat log: its time as the log gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logged_at: Option<LoggedAt>,
}

/// A node's figures from its CPUs' (`members`, none of them an all-CPU line): each state's
/// ticks summed when every member has ticks (what the kernel's own sums would give), else the
/// mean of their percentages (a log gives percentages only). `None` without members.
pub fn node_util(node: u32, members: &[&CpuUtil]) -> Option<NodeUtil> {
    if members.is_empty() {
        return None;
    }
    let by_ticks = members.iter().all(|c| c.ticks > 0);
    let weight = |c: &CpuUtil| if by_ticks { c.ticks as f64 } else { 1.0 };
    let total: f64 = members.iter().map(|c| weight(c)).sum();
    let mean =
        |f: fn(&CpuUtil) -> f64| members.iter().map(|c| f(c) * weight(c)).sum::<f64>() / total;
    let util = CpuUtil {
        cpu: None,
        ticks: members.iter().map(|c| c.ticks).sum(),
        usr: mean(|c| c.usr),
        nice: mean(|c| c.nice),
        sys: mean(|c| c.sys),
        iowait: mean(|c| c.iowait),
        irq: mean(|c| c.irq),
        soft: mean(|c| c.soft),
        steal: mean(|c| c.steal),
        guest: mean(|c| c.guest),
        gnice: mean(|c| c.gnice),
        idle: mean(|c| c.idle),
        busy: mean(|c| c.busy),
        went_back: members.iter().any(|c| c.went_back),
        event: None,
    };
    Some(NodeUtil { node, cpus: members.iter().filter_map(|c| c.cpu).collect(), util })
}

/// `busy_only`: takes the idle CPUs out of `cpus` and returns their numbers (the one rule for
/// the live command and logs: `%idle` at 100.00, [`CpuUtil::is_idle`]).
pub fn hide_idle(cpus: &mut Vec<CpuUtil>, opts: &Options) -> Vec<u32> {
    let mut hidden = Vec::new();
    if opts.busy_only {
        cpus.retain(|c| {
            let keep = !c.is_idle();
            if !keep {
                hidden.extend(c.cpu);
            }
            keep
        });
    }
    hidden
}

/// One CPU's (or all CPUs') ticks per state over the interval, and whether a counter went back.
#[derive(Debug, Clone, Copy, Default)]
struct Ticks {
    times: CpuTimes,
    went_back: bool,
}

impl Ticks {
    fn between(prev: Option<&CpuTimes>, cur: &CpuTimes) -> Self {
        let (times, went_back) = cur.since(prev);
        Ticks { times, went_back }
    }

    /// Sums saturate ([`CpuTimes::saturating_add`]).
    fn add(&mut self, o: &Ticks) {
        self.times.saturating_add(&o.times);
        self.went_back |= o.went_back;
    }

    fn util(&self, cpu: Option<u32>, event: Option<(u64, u64)>) -> CpuUtil {
        let t = &self.times;
        let total = t.total();
        let pct = |v: u64| if total > 0 { v as f64 / total as f64 * 100.0 } else { 0.0 };
        let busy_ticks = total.saturating_sub(t.idle).saturating_sub(t.iowait);
        let busy = pct(busy_ticks);
        CpuUtil {
            cpu,
            ticks: total,
            usr: pct(t.user.saturating_sub(t.guest.unwrap_or(0))),
            nice: pct(t.nice.saturating_sub(t.guest_nice.unwrap_or(0))),
            sys: pct(t.system),
            iowait: pct(t.iowait),
            irq: pct(t.irq),
            soft: pct(t.softirq),
            steal: pct(t.steal.unwrap_or(0)),
            guest: pct(t.guest.unwrap_or(0)),
            gnice: pct(t.guest_nice.unwrap_or(0)),
            idle: pct(t.idle),
            busy,
            went_back: self.went_back,
            event: event.map(|(busy_ns, window_ns)| {
                let busy_pct =
                    if window_ns > 0 { busy_ns as f64 / window_ns as f64 * 100.0 } else { 0.0 };
                EventBusy { busy_ns, window_ns, busy_pct, sampled_minus_event_pct: busy - busy_pct }
            }),
        }
    }
}

/// Builds a report from two snapshots (`prev` `None`: since boot, no event figures).
pub fn compute(
    prev: Option<&Snapshot>,
    cur: &Snapshot,
    ticks_per_s: ClockTicks,
    opts: &Options,
) -> Report {
    let window_ns = prev.map(|p| {
        u64::try_from(cur.at.saturating_duration_since(p.at).as_nanos()).unwrap_or(u64::MAX)
    });
    let events = match (prev.and_then(|p| p.event.as_ref()), cur.event.as_ref(), window_ns) {
        (Some(a), Some(b), Some(w)) => Some((a, b, w)),
        _ => None,
    };
    let mut cpus = Vec::with_capacity(cur.stat.cpus.len());
    let mut all = Ticks::default();
    let (mut all_busy_ns, mut all_window_ns, mut all_events) = (0u64, 0u64, events.is_some());
    let mut onlined = Vec::new();
    for line in &cur.stat.cpus {
        let before = match prev {
            Some(p) => match p.stat.cpu(line.cpu) {
                Some(t) => Some(t),
                None => {
                    onlined.push(line.cpu);
                    continue;
                }
            },
            None => None,
        };
        let t = Ticks::between(before, &line.times);
        all.add(&t);
        let event = events.and_then(|(a, b, w)| {
            let busy = CounterDelta::time_between(a.busy_ns(line.cpu)?, b.busy_ns(line.cpu)?);
            Some((busy.value, w))
        });
        match event {
            Some((busy, w)) => {
                all_busy_ns = all_busy_ns.saturating_add(busy);
                all_window_ns = all_window_ns.saturating_add(w);
            }
            None => all_events = false,
        }
        cpus.push(t.util(Some(line.cpu), event));
    }
    let offlined: Vec<u32> = match prev {
        Some(p) => {
            let now: BTreeSet<u32> = cur.stat.cpus.iter().map(|c| c.cpu).collect();
            p.stat.cpus.iter().map(|c| c.cpu).filter(|c| !now.contains(c)).collect()
        }
        None => Vec::new(),
    };
    if prev.is_none() || cur.stat.cpus.is_empty() {
        // Since boot (or a kernel without per-CPU lines): the kernel's own all-CPU line.
        all = Ticks::between(prev.map(|p| &p.stat.total), &cur.stat.total);
    }
    let all_event = (all_events && !cpus.is_empty()).then_some((all_busy_ns, all_window_ns));
    let all = all.util(None, all_event);

    let per_cpu_ticks = if cpus.is_empty() { 0 } else { all.ticks / cpus.len() as u64 };
    let elapsed_s = match window_ns {
        Some(w) => w as f64 / 1e9,
        None => ticks_per_s.to_secs(per_cpu_ticks),
    };
    let context_switches_per_s =
        match (prev.and_then(|p| p.stat.context_switches), cur.stat.context_switches) {
            (Some(a), Some(b)) if elapsed_s > 0.0 => {
                Some(CounterDelta::time_between(a, b).value as f64 / elapsed_s)
            }
            (None, Some(b)) if prev.is_none() && elapsed_s > 0.0 => Some(b as f64 / elapsed_s),
            _ => None,
        };
    let hidden_idle = hide_idle(&mut cpus, opts);
    Report {
        epoch_s: Some(cur.epoch_s),
        elapsed_s,
        since_boot: prev.is_none(),
        ticks_per_s: ticks_per_s.per_second(),
        all,
        cpus,
        nodes: Vec::new(),
        hidden_idle,
        onlined,
        offlined,
        context_switches_per_s,
        logged_at: None,
    }
}

/// Reads `/proc/stat` and keeps its buffer between readings.
#[derive(Debug)]
pub struct Monitor {
    root: FsRoot,
    buf: String,
}

impl Monitor {
    pub fn new(root: FsRoot) -> Self {
        Self { root, buf: String::new() }
    }

    /// One reading, with the event-based busy time read just before (if any).
    pub fn snapshot(&mut self, event: Option<EventReading>) -> Result<Snapshot, Error> {
        let path = self.root.path("proc/stat");
        let stat = self.root.parse(&path, &mut self.buf, parse_proc_stat)?;
        let at = Instant::now();
        let epoch_s =
            SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        Ok(Snapshot { at, epoch_s, stat, event })
    }
}
