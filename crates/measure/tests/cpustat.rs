//! `/proc/stat`'s parser over a file the kernel printed (tests/fixtures/README.md).

use measure::cpustat::parse_proc_stat;

/// Also read by cpuacct's utilization tests and the `/proc/stat` fuzz tests of cpuacct and tamp.
const PROC_STAT: &str = include_str!("fixtures/proc_stat_linux_6_18_captured.txt");

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
