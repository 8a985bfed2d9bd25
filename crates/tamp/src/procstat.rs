//! Per-CPU busy time from `/proc/stat` (read by cpuacct's parser) and the delta over a step.
//!
//! `/proc/stat` is tick-sampled (USER_HZ units), so over a short step its resolution is one tick
//! per CPU (10 ms at USER_HZ 100): steps of a second or more give shares good to about 1%.

use serde::{Deserialize, Serialize};

use crate::TampError;

/// One `cpu` line's counters, in ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    /// `None` for the aggregate `cpu` line, else the CPU number.
    pub cpu: Option<usize>,
    /// user + nice + system + irq + softirq + steal (guest time is already inside user).
    pub busy: u64,
    /// busy + idle + iowait.
    pub total: u64,
}

/// The `cpu` lines of `/proc/stat` text (parsed by `cpuacct::cpustat`, the one parser of that
/// file): busy is user + nice + system + irq + softirq + steal, idle is idle + iowait.
pub fn parse(text: &str) -> Result<Vec<CpuTimes>, TampError> {
    let stat = cpuacct::cpustat::parse_proc_stat(text)
        .map_err(|e| TampError::ProcStat(format!("/proc/stat: {e}")))?;
    let times = |cpu: Option<usize>, t: &cpuacct::cpustat::CpuTimes| {
        // Saturating: the counters come from a file (a damaged one can hold 2^64 - 1).
        let sum = |v: &[u64]| v.iter().fold(0u64, |a, &b| a.saturating_add(b));
        let busy = sum(&[t.user, t.nice, t.system, t.irq, t.softirq, t.steal.unwrap_or(0)]);
        CpuTimes { cpu, busy, total: sum(&[busy, t.idle, t.iowait]) }
    };
    Ok(std::iter::once(times(None, &stat.total))
        .chain(stat.cpus.iter().map(|c| times(Some(c.cpu as usize), &c.times)))
        .collect())
}

pub fn read() -> Result<Vec<CpuTimes>, TampError> {
    let text =
        std::fs::read_to_string("/proc/stat").map_err(|e| TampError::ProcStat(e.to_string()))?;
    parse(&text)
}

/// How busy the machine was between two readings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineBusy {
    /// Busy share of each CPU (index = CPU number order in /proc/stat).
    pub per_cpu: Vec<(usize, f64)>,
    /// Busy share of the whole machine — what `vmstat` shows as 100 − id.
    pub machine_share: f64,
    /// CPUs at least 90% busy (the old `mpstat | grep -v ' 100$'` trick, inverted).
    pub cpus_busy: usize,
}

/// A CPU at or above this busy share counts as busy.
pub const CPU_BUSY: f64 = 0.90;

/// The busy shares between `before` and `after` (counters that went backwards count as 0).
pub fn delta(before: &[CpuTimes], after: &[CpuTimes]) -> MachineBusy {
    let share = |a: &CpuTimes, b: &CpuTimes| {
        let total = b.total.saturating_sub(a.total);
        if total == 0 {
            0.0
        } else {
            (b.busy.saturating_sub(a.busy) as f64 / total as f64).clamp(0.0, 1.0)
        }
    };
    let mut per_cpu = Vec::new();
    let mut machine_share = 0.0;
    for b in after {
        let Some(a) = before.iter().find(|a| a.cpu == b.cpu) else { continue };
        match b.cpu {
            None => machine_share = share(a, b),
            Some(c) => per_cpu.push((c, share(a, b))),
        }
    }
    let cpus_busy = per_cpu.iter().filter(|(_, s)| *s >= CPU_BUSY).count();
    MachineBusy { per_cpu, machine_share, cpus_busy }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
mod tests {
    use super::*;

    // Hand-made in the layout of this machine's /proc/stat (kernel 6.18: ten counters per line),
    // two readings 1 s apart with CPU 0 fully busy.
    const A: &str = "cpu  2300 0 700 190000 50 0 20 10 0 0\n\
cpu0 1200 0 400 95000 25 0 10 5 0 0\n\
cpu1 1100 0 300 95000 25 0 10 5 0 0\n\
intr 1 2 3\nctxt 5\n";
    const B: &str = "cpu  2400 0 701 190100 50 0 20 10 0 0\n\
cpu0 1300 0 400 95000 25 0 10 5 0 0\n\
cpu1 1100 0 301 95100 25 0 10 5 0 0\n";

    #[test]
    fn parses_aggregate_and_cpus() {
        let a = parse(A).unwrap();
        assert_eq!(a.len(), 3);
        assert_eq!(a[0].cpu, None);
        assert_eq!(a[1], CpuTimes { cpu: Some(0), busy: 1615, total: 96640 });
    }

    #[test]
    fn one_cpu_of_two_busy() {
        let d = delta(&parse(A).unwrap(), &parse(B).unwrap());
        assert_eq!(d.cpus_busy, 1);
        assert!((d.per_cpu[0].1 - 1.0).abs() < 1e-9);
        assert!((d.machine_share - 101.0 / 201.0).abs() < 1e-9);
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse("intr 1 2\n").is_err());
        assert!(parse("cpu 1 2\n").is_err());
    }
}
