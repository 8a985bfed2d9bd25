//! CPU utilization without the live system: `cpu util`'s arithmetic over captured and hand-made
//! `/proc/stat` pairs (CPUs going offline and online, counters stepping back, event-based busy
//! time beside the sampled one).

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::time::{Duration, Instant};

use cpuacct::cpuutil::{self, CpuBusyNs, EventReading, Snapshot as UtilSnapshot};
use measure::cpustat::parse_proc_stat;
use measure::time::ClockTicks;
use measure::time::Stamp;

fn hz() -> ClockTicks {
    ClockTicks::new(100)
}

/// The captured `/proc/stat` the parser's own tests read (measure's tests/fixtures/README.md).
const PROC_STAT: &str =
    include_str!("../../../measure/tests/fixtures/proc_stat_linux_6_18_captured.txt");

// ----------------------------------------------------------------------------------------------
// Utilization

fn util_snapshot(text: &str, at: Instant, event: Option<Vec<(u32, u64)>>) -> UtilSnapshot {
    UtilSnapshot {
        at,
        epoch_s: 0.0,
        stat: parse_proc_stat(text).unwrap(),
        event: event.map(|cpus| EventReading {
            cpus: cpus.into_iter().map(|(cpu, busy_ns)| CpuBusyNs { cpu, busy_ns }).collect(),
        }),
    }
}

#[test]
fn since_boot_util_linux_6_18_captured_adds_up_to_100() {
    let now = util_snapshot(PROC_STAT, Instant::now(), None);
    let r = cpuutil::compute(None, &now, hz(), &cpuutil::Options::default());
    assert!(r.since_boot);
    for u in std::iter::once(&r.all).chain(&r.cpus) {
        let sum = u.usr + u.nice + u.sys + u.iowait + u.irq + u.soft + u.steal + u.idle;
        assert!((sum - 100.0).abs() < 1e-9, "{u:?}");
        assert!(u.event.is_none());
    }
    // 51225 steal ticks of 2173869: a guest that lost 2.36 % of its CPU to the host.
    assert!((r.all.steal - 2.356).abs() < 0.01, "{}", r.all.steal);
    assert_eq!(r.cpus.len(), 2);
}

const STAT_A: &str = "cpu  400 0 100 1450 50 0 0 0 0 0
cpu0 100 0 50 800 50 0 0 0 0 0
cpu1 300 0 50 400 0 0 0 0 0 0
cpu2 0 0 0 250 0 0 0 0 0 0
ctxt 1000
";
// One second later at 100 ticks/s: cpu0 idle the whole time, cpu1 60 % user (10 of them guest);
// cpu2 went offline, cpu3 came online.
const STAT_B: &str = "cpu  460 0 110 1590 50 0 0 0 10 0
cpu0 100 0 50 900 50 0 0 0 0 0
cpu1 360 0 60 430 0 0 0 0 10 0
cpu3 0 0 0 10 0 0 0 0 0 0
ctxt 3000
";

#[test]
fn interval_util_hides_idle_cpus_and_leaves_out_hotplugged_ones() {
    let t0 = Instant::now();
    let t1 = t0 + Duration::from_secs(1);
    let a = util_snapshot(STAT_A, t0, Some(vec![(0, 1_000), (1, 2_000_000_000)]));
    let b = util_snapshot(STAT_B, t1, Some(vec![(0, 1_000), (1, 2_750_000_000)]));
    let all_cpus = cpuutil::compute(Some(&a), &b, hz(), &cpuutil::Options::default());
    assert_eq!((all_cpus.onlined.as_slice(), all_cpus.offlined.as_slice()), (&[3][..], &[2][..]));
    assert_eq!(all_cpus.cpus.iter().filter_map(|c| c.cpu).collect::<Vec<_>>(), [0, 1]);
    let cpu1 = &all_cpus.cpus[1];
    // 100 ticks: 60 user of which 10 guest, 10 system, 30 idle.
    assert_eq!(cpu1.ticks, 100);
    assert_eq!((cpu1.usr, cpu1.guest, cpu1.sys, cpu1.idle), (50.0, 10.0, 10.0, 30.0));
    assert_eq!(cpu1.busy, 70.0);
    // Event-based: 750 ms busy of 1 s, 5 points under the sampled 70 %.
    let e = cpu1.event.unwrap();
    assert!((e.busy_pct - 75.0).abs() < 1e-9 && (e.sampled_minus_event_pct + 5.0).abs() < 1e-9);
    assert!(!e.differs());
    assert!(all_cpus.cpus[0].is_idle());
    // The all line sums CPUs 0 and 1 only (the kernel's cpu line moved with CPU 2 and 3).
    assert_eq!(all_cpus.all.ticks, 200);
    assert!((all_cpus.all.busy - 35.0).abs() < 1e-9);
    assert_eq!(all_cpus.context_switches_per_s, Some(2000.0));

    let busy = cpuutil::compute(Some(&a), &b, hz(), &cpuutil::Options { busy_only: true });
    assert_eq!(busy.cpus.iter().filter_map(|c| c.cpu).collect::<Vec<_>>(), [1]);
    assert_eq!(busy.hidden_idle, [0]);

    // The text: %idle last, so an idle CPU's line ends in 100.00 (the original script's grep).
    let text = cpuutil::render::render_report(&all_cpus, &Stamp::fixed("10:00:00", "0"));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].ends_with("%idle %busy-tk %busy-ev    diff"), "{text}");
    assert!(lines[2].contains(" 0 ") && lines[2].contains("100.00"), "{text}");
    assert!(lines[3].ends_with("   70.00    75.00   -5.00"), "{text}");
}

#[test]
fn a_counter_stepping_back_counts_zero_and_is_noted() {
    let t0 = Instant::now();
    let a = util_snapshot("cpu  10 0 0 100 50 0 0\ncpu0 10 0 0 100 50 0 0\n", t0, None);
    let b = util_snapshot("cpu  20 0 0 190 49 0 0\ncpu0 20 0 0 190 49 0 0\n", t0, None);
    let r = cpuutil::compute(Some(&a), &b, hz(), &cpuutil::Options::default());
    assert!(r.cpus[0].went_back);
    assert_eq!(r.cpus[0].ticks, 100);
    assert!(cpuutil::render::notes(&r).iter().any(|n| n.contains("went backwards")));
}

#[test]
fn large_disagreement_is_marked() {
    let t0 = Instant::now();
    let t1 = t0 + Duration::from_secs(1);
    let a = util_snapshot("cpu  0 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0\n", t0, Some(vec![(0, 0)]));
    // The ticks saw 1 % busy; events measured 75 %: a task hiding from the clock.
    let b = util_snapshot(
        "cpu  1 0 0 99 0 0 0\ncpu0 1 0 0 99 0 0 0\n",
        t1,
        Some(vec![(0, 750_000_000)]),
    );
    let r = cpuutil::compute(Some(&a), &b, hz(), &cpuutil::Options::default());
    assert!(r.cpus[0].event.unwrap().differs());
    let text = cpuutil::render::render_report(&r, &Stamp::fixed("10:00:00", "0"));
    assert!(text.lines().nth(2).unwrap().ends_with("-74.00 !"), "{text}");
}
