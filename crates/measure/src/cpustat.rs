//! `/proc/stat`'s CPU lines: time per state since boot, for all CPUs (`cpu`) and each online
//! CPU (`cpuN`), in clock ticks (`USER_HZ`, see [`ClockTicks`](crate::time::ClockTicks)).
//!
//! How the kernel fills them (and so what a utilization figure from them means):
//!
//! - `user`, `nice`, `system`, `irq`, `softirq`, `steal`, `guest`, `guest_nice` are
//!   **tick-sampled** on kernels built with `CONFIG_TICK_CPU_ACCOUNTING` (the common case): at
//!   each scheduler tick the whole tick is charged to the state the CPU is in. Work that runs
//!   between ticks is missed, work that straddles them is over-counted. (`irq` and `softirq`
//!   are measured when `CONFIG_IRQ_TIME_ACCOUNTING` is on; everything is measured under
//!   `CONFIG_VIRT_CPU_ACCOUNTING_GEN`.)
//! - `idle` and `iowait` come from the tickless idle code's own clock on `NO_HZ` kernels
//!   (measured, not sampled); they may step back a little (proc(5)), so they are subtracted
//!   with [`CounterDelta::time_between`] ([`CpuTimes::since`]).
//! - `guest` is already inside `user`, and `guest_nice` inside `nice`.
//! - Only online CPUs have a `cpuN` line; the `cpu` line sums every possible CPU, so a CPU going
//!   offline or online moves it.

use serde::Serialize;

use crate::counter::{CounterDelta, Step};
use crate::ParseError;

/// One CPU line, ticks since boot. `steal`, `guest` and `guest_nice` appeared in 2.6.11,
/// 2.6.24 and 2.6.33; older kernels print fewer columns and these read `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: Option<u64>,
    pub guest: Option<u64>,
    pub guest_nice: Option<u64>,
}

impl CpuTimes {
    /// Every state once: `guest` and `guest_nice` are not added again (they are inside `user`
    /// and `nice`).
    pub fn total(&self) -> u64 {
        [
            self.user,
            self.nice,
            self.system,
            self.idle,
            self.iowait,
            self.irq,
            self.softirq,
            self.steal.unwrap_or(0),
        ]
        .iter()
        .fold(0u64, |a, &b| a.saturating_add(b))
    }

    /// Time not idle and not waiting for I/O (an idle CPU with I/O outstanding is idle): user +
    /// nice + system + irq + softirq + steal. Saturating, as [`CpuTimes::total`]: the counters
    /// come from a file, and a damaged one can hold 2^64 - 1.
    pub fn busy(&self) -> u64 {
        [self.user, self.nice, self.system, self.irq, self.softirq, self.steal.unwrap_or(0)]
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b))
    }

    /// Ticks per state from `earlier` to this reading (since boot without `earlier`), and
    /// whether any counter read lower than before. Each state is subtracted with
    /// [`CounterDelta::time_between`]: one that went back (idle and iowait on tickless kernels)
    /// counts as 0. A column this reading lacks stays `None`; one `earlier` lacks counts from 0.
    pub fn since(&self, earlier: Option<&CpuTimes>) -> (CpuTimes, bool) {
        let mut went_back = false;
        let mut d = |f: fn(&CpuTimes) -> u64| {
            let delta = match earlier {
                Some(e) => CounterDelta::time_between(f(e), f(self)),
                None => CounterDelta::from_zero(f(self)),
            };
            went_back |= delta.step == Step::WentBack;
            delta.value
        };
        let (steal, guest, guest_nice) = (
            d(|t| t.steal.unwrap_or(0)),
            d(|t| t.guest.unwrap_or(0)),
            d(|t| t.guest_nice.unwrap_or(0)),
        );
        let times = CpuTimes {
            user: d(|t| t.user),
            nice: d(|t| t.nice),
            system: d(|t| t.system),
            idle: d(|t| t.idle),
            iowait: d(|t| t.iowait),
            irq: d(|t| t.irq),
            softirq: d(|t| t.softirq),
            steal: self.steal.map(|_| steal),
            guest: self.guest.map(|_| guest),
            guest_nice: self.guest_nice.map(|_| guest_nice),
        };
        (times, went_back)
    }

    /// Adds `other`'s ticks state by state (CPUs' intervals into a machine's). Saturating: the
    /// counters come from a file, and a damaged one (or a CPU listed twice with counters near
    /// 2^64) must not overflow. A column is `None` only when it is in neither.
    pub fn saturating_add(&mut self, other: &CpuTimes) {
        let add = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        add(&mut self.user, other.user);
        add(&mut self.nice, other.nice);
        add(&mut self.system, other.system);
        add(&mut self.idle, other.idle);
        add(&mut self.iowait, other.iowait);
        add(&mut self.irq, other.irq);
        add(&mut self.softirq, other.softirq);
        let opt = |a: Option<u64>, b: Option<u64>| {
            (a.is_some() || b.is_some()).then(|| a.unwrap_or(0).saturating_add(b.unwrap_or(0)))
        };
        self.steal = opt(self.steal, other.steal);
        self.guest = opt(self.guest, other.guest);
        self.guest_nice = opt(self.guest_nice, other.guest_nice);
    }
}

/// A per-CPU line: the CPU's number and its times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CpuLine {
    pub cpu: u32,
    pub times: CpuTimes,
}

/// The CPU part of `/proc/stat`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProcStat {
    /// The `cpu` line: all possible CPUs summed.
    pub total: CpuTimes,
    /// One line per online CPU, in the kernel's (ascending) order.
    pub cpus: Vec<CpuLine>,
    /// Context switches since boot (`ctxt`).
    pub context_switches: Option<u64>,
}

impl ProcStat {
    pub fn cpu(&self, cpu: u32) -> Option<&CpuTimes> {
        self.cpus.iter().find(|c| c.cpu == cpu).map(|c| &c.times)
    }
}

fn parse_times(rest: &str, line: usize) -> Result<CpuTimes, ParseError> {
    let mut values = [0u64; 10];
    let mut n = 0;
    for word in rest.split_ascii_whitespace() {
        if n == values.len() {
            break;
        }
        values[n] = word
            .parse()
            .map_err(|_| ParseError::new(line, format!("'{word}' is not a tick count")))?;
        n += 1;
    }
    if n < 7 {
        return Err(ParseError::new(
            line,
            format!("{n} times where at least 7 (user … softirq, Linux 2.6) are expected"),
        ));
    }
    let opt = |i: usize| (i < n).then_some(values[i]);
    Ok(CpuTimes {
        user: values[0],
        nice: values[1],
        system: values[2],
        idle: values[3],
        iowait: values[4],
        irq: values[5],
        softirq: values[6],
        steal: opt(7),
        guest: opt(8),
        guest_nice: opt(9),
    })
}

/// Parses the CPU lines and `ctxt` of `/proc/stat`; other lines are skipped.
pub fn parse_proc_stat(text: &str) -> Result<ProcStat, ParseError> {
    let mut stat = ProcStat::default();
    let mut saw_total = false;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let Some(rest) = raw.strip_prefix("cpu") else {
            if let Some(v) = raw.strip_prefix("ctxt ") {
                stat.context_switches = v.trim().parse().ok();
            }
            continue;
        };
        let (name, times) =
            rest.split_once(|c: char| c.is_ascii_whitespace()).unwrap_or((rest, ""));
        if name.is_empty() {
            stat.total = parse_times(times, line)?;
            saw_total = true;
        } else {
            let cpu = name
                .parse()
                .map_err(|_| ParseError::new(line, format!("'cpu{name}' is not a CPU line")))?;
            stat.cpus.push(CpuLine { cpu, times: parse_times(times, line)? });
        }
    }
    if !saw_total {
        return Err(ParseError::new(0, "no 'cpu' line"));
    }
    Ok(stat)
}

/// The whole machine's busy time between two moments, taken from what the kernel measures
/// rather than what it samples: wall time × online CPUs, less idle, I/O wait and steal.
///
/// The tick-sampled busy columns miss work done in bursts shorter than a tick: a PostgreSQL
/// server answering 200 short transactions a second used 219 ms of CPU by its own clocks over
/// 5 s while `user + system + …` grew by 50 ms (this VM, `CONFIG_TICK_CPU_ACCOUNTING`, HZ 250).
/// Idle and I/O wait come from the tickless idle clock on `NO_HZ` kernels, so their complement
/// is exact to a `USER_HZ` tick per CPU. On a kernel without `NO_HZ` idle is sampled too and
/// this is as good as the busy columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineReading {
    /// `CLOCK_MONOTONIC`, ns, read right after the file was parsed.
    at_ns: u64,
    /// `cpuN` lines: the CPUs whose idle clocks run.
    online: u32,
    times: CpuTimes,
}

impl MachineReading {
    /// Reads `/proc/stat` and the clock.
    pub fn now() -> Result<Self, crate::Error> {
        let root = crate::FsRoot::live();
        let stat = root.parse(&root.path("proc/stat"), &mut String::new(), parse_proc_stat)?;
        Ok(Self::of(&stat, crate::time::monotonic_ns()))
    }

    /// A reading of `stat` taken at `at_ns` (`CLOCK_MONOTONIC`).
    pub fn of(stat: &ProcStat, at_ns: u64) -> Self {
        MachineReading { at_ns, online: stat.cpus.len() as u32, times: stat.total }
    }

    /// Busy ns of all CPUs from `earlier` to this reading. When CPUs went online or offline in
    /// between, the wall-time product has no fixed CPU count, so the sampled busy columns are
    /// used instead.
    pub fn busy_ns_since(&self, earlier: &Self, ticks: crate::time::ClockTicks) -> u64 {
        let grew =
            |f: fn(&CpuTimes) -> u64| ticks.to_ns(f(&self.times).saturating_sub(f(&earlier.times)));
        if self.online != earlier.online || self.online == 0 {
            return grew(CpuTimes::busy);
        }
        let capacity =
            self.at_ns.saturating_sub(earlier.at_ns).saturating_mul(u64::from(self.online));
        let not_running =
            grew(|t| t.idle.saturating_add(t.iowait).saturating_add(t.steal.unwrap_or(0)));
        capacity.saturating_sub(not_running)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(text: &str, at_ns: u64) -> MachineReading {
        MachineReading::of(&parse_proc_stat(text).unwrap(), at_ns)
    }

    #[test]
    fn machine_busy_is_capacity_less_idle_iowait_and_steal() {
        let t = crate::time::ClockTicks::new(100);
        // Two CPUs for 2 s: 400 ticks of capacity; idle +300, iowait +20, steal +10.
        let a = reading(
            "cpu  0 0 0 1000 100 0 0 50\ncpu0 0 0 0 500 50 0 0 25\ncpu1 0 0 0 500 50 0 0 25\n",
            0,
        );
        let b = reading(
            "cpu  5 0 0 1300 120 0 0 60\ncpu0 5 0 0 650 60 0 0 30\ncpu1 0 0 0 650 60 0 0 30\n",
            2_000_000_000,
        );
        // The busy columns grew by 5 ticks (sampled); capacity less the rest is 70 ticks.
        assert_eq!(b.busy_ns_since(&a, t), 700_000_000);
        // A later reading with less idle than before (the idle clock stepping back) is not
        // more than the capacity.
        let c = reading(
            "cpu  5 0 0 900 100 0 0 50\ncpu0 5 0 0 450 50 0 0 25\ncpu1 0 0 0 450 50 0 0 25\n",
            1_000_000_000,
        );
        assert_eq!(c.busy_ns_since(&a, t), 2_000_000_000);
    }

    #[test]
    fn machine_busy_falls_back_to_the_sampled_columns_when_cpus_come_and_go() {
        let t = crate::time::ClockTicks::new(100);
        let a = reading("cpu  10 0 0 1000 0 0 0\ncpu0 10 0 0 1000 0 0 0\n", 0);
        let b = reading(
            "cpu  40 0 0 1100 0 0 0\ncpu0 30 0 0 1050 0 0 0\ncpu1 10 0 0 50 0 0 0\n",
            1_000_000_000,
        );
        assert_eq!(b.busy_ns_since(&a, t), 300_000_000);
    }

    #[test]
    fn guest_time_is_not_counted_twice() {
        let t = parse_proc_stat("cpu  10 2 3 80 1 1 1 2 4 1\n").unwrap().total;
        assert_eq!(t.total(), 100);
        assert_eq!(t.busy(), 19);
        assert_eq!((t.guest, t.guest_nice), (Some(4), Some(1)));
    }

    #[test]
    fn since_subtracts_each_state_and_says_when_one_went_back() {
        let a = parse_proc_stat("cpu  10 0 5 1000 20 0 0 3\n").unwrap().total;
        let b = parse_proc_stat("cpu  15 1 5 990 25 0 0 4\n").unwrap().total;
        let (d, went_back) = b.since(Some(&a));
        assert_eq!((d.user, d.nice, d.idle, d.iowait, d.steal), (5, 1, 0, 5, Some(1)));
        assert!(went_back, "idle read lower");
        assert_eq!((d.guest, d.guest_nice), (None, None));
        let (from_boot, went_back) = b.since(None);
        assert_eq!((from_boot, went_back), (b, false));
    }

    #[test]
    fn saturating_add_sums_states_without_overflow() {
        let mut sum = CpuTimes::default();
        let max = parse_proc_stat("cpu  18446744073709551615 0 0 0 0 0 0 2\n").unwrap().total;
        sum.saturating_add(&max);
        sum.saturating_add(&max);
        assert_eq!((sum.user, sum.steal, sum.guest), (u64::MAX, Some(4), None));
    }

    #[test]
    fn old_kernels_have_fewer_columns() {
        let s = parse_proc_stat("cpu  1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7\n").unwrap();
        assert_eq!((s.total.steal, s.cpus[0].times.guest), (None, None));
        assert!(parse_proc_stat("cpu  1 2 3 4\n").is_err());
        assert!(parse_proc_stat("intr 1 2\n").is_err());
    }

    /// A file the kernel printed (tests/fixtures/README.md); also read by cpuacct's utilization
    /// tests and the `/proc/stat` fuzz tests of cpuacct and tamp.
    const PROC_STAT: &str = include_str!("../tests/fixtures/proc_stat_linux_6_18_captured.txt");

    #[test]
    fn proc_stat_linux_6_18_captured() {
        let stat = parse_proc_stat(PROC_STAT).unwrap();
        assert_eq!(stat.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(), [0, 1]);
        let t = stat.total;
        assert_eq!((t.user, t.nice, t.system, t.idle), (992_842, 1_622, 197_866, 913_559));
        assert_eq!((t.iowait, t.irq, t.softirq), (14_305, 0, 2_450));
        assert_eq!((t.steal, t.guest, t.guest_nice), (Some(51_225), Some(0), Some(0)));
        assert_eq!(stat.context_switches, Some(10_316_376));
        // The all-CPU line is the per-CPU lines summed (to within the ticks between their reads).
        let user_sum: u64 = stat.cpus.iter().map(|c| c.times.user).sum();
        assert!(user_sum.abs_diff(t.user) <= 2, "{user_sum} vs {}", t.user);
    }
}
