//! The machine's and each CPU's busy share between two readings of `/proc/stat`.
//!
//! The file's model and parser are `measure::cpustat`'s (the workspace's one): busy is user +
//! nice + system + irq + softirq + steal, idle is idle + iowait. `/proc/stat` is tick-sampled
//! (USER_HZ units), so over a short step its resolution is one tick per CPU (10 ms at USER_HZ
//! 100): steps of a second or more give shares good to about 1%.

use measure::cpustat::{parse_proc_stat, CpuTimes, ProcStat};
use serde::{Deserialize, Serialize};

use crate::TampError;

/// Parses `/proc/stat` text.
pub fn parse(text: &str) -> Result<ProcStat, TampError> {
    parse_proc_stat(text).map_err(|e| TampError::ProcStat(format!("/proc/stat: {e}")))
}

pub fn read() -> Result<ProcStat, TampError> {
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

/// The busy shares between `before` and `after` (counters that went backwards count as 0). CPUs
/// are matched by number; one missing from `before` (it came online) is left out.
pub fn delta(before: &ProcStat, after: &ProcStat) -> MachineBusy {
    let share = |a: &CpuTimes, b: &CpuTimes| {
        let total = b.total().saturating_sub(a.total());
        if total == 0 {
            0.0
        } else {
            (b.busy().saturating_sub(a.busy()) as f64 / total as f64).clamp(0.0, 1.0)
        }
    };
    let per_cpu: Vec<(usize, f64)> = after
        .cpus
        .iter()
        .filter_map(|b| Some((b.cpu as usize, share(before.cpu(b.cpu)?, &b.times))))
        .collect();
    let machine_share = share(&before.total, &after.total);
    let cpus_busy = per_cpu.iter().filter(|(_, s)| *s >= CPU_BUSY).count();
    MachineBusy { per_cpu, machine_share, cpus_busy }
}

#[cfg(test)]
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
        assert_eq!(a.cpus.len(), 2);
        assert_eq!(a.total.total(), 193080);
        let cpu0 = &a.cpus[0];
        assert_eq!((cpu0.cpu, cpu0.times.busy(), cpu0.times.total()), (0, 1615, 96640));
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
