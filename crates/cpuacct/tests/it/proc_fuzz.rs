//! Fuzz-style property tests of the CPU utilization inputs over mutated captured files and
//! arbitrary text: `/proc/stat` (`measure::cpustat`'s parser, and utilization between two
//! damaged snapshots) and `--node-cpus`. An error or a sane value, never a panic, never an
//! overflow. pstime's `/proc/PID/stat` and `schedstat` have theirs in the pstime crate.
//!
//! Pure tier: [`fuzz::PURE`] cases per target; live tier (`--ignored`): [`fuzz::LIVE`].

use std::time::{Duration, Instant};
use test_tier::live;

use cpuacct::cpuutil::{self, replay::NodeCpus, Snapshot};
use measure::cpustat::parse_proc_stat;
use measure::time::ClockTicks;
use test_support::fuzz::{self, proptest};

use proptest::prelude::*;

/// The captured `/proc/stat` the parser's own tests read (measure's tests/fixtures/README.md).
const PROC_STAT: &str =
    include_str!("../../../measure/tests/fixtures/proc_stat_linux_6_18_captured.txt");

fn proc_stat(cases: u32) {
    let seeds = vec![
        PROC_STAT.to_string(),
        "cpu  400 0 100 1450 50 0 0 0 0 0\ncpu0 100 0 50 800 50 0 0 0 0 0\ncpu1 300 0 50 400 0 0 0 0 0 0\nctxt 1000\n".into(),
        "cpu  18446744073709551615 0 0 0 0 0 0\ncpu0 18446744073709551615 0 0 0 0 0 0\n".into(),
    ];
    let snapshot = |text: &str, at: Instant| {
        parse_proc_stat(text).ok().map(|stat| Snapshot { at, epoch_s: 0.0, stat, event: None })
    };
    let input =
        (fuzz::text_or_mutated(seeds.clone(), 800), fuzz::text_or_mutated(seeds, 800), 0u64..3_000);
    fuzz::check(cases, input, |(a, b, ms)| {
        let t0 = Instant::now();
        let (Some(before), Some(after)) =
            (snapshot(&a, t0), snapshot(&b, t0 + Duration::from_millis(ms)))
        else {
            return Ok(());
        };
        for c in std::iter::once(&after.stat.total).chain(after.stat.cpus.iter().map(|l| &l.times))
        {
            prop_assert!(c.busy() <= c.total());
        }
        let opts = cpuutil::Options::default();
        for prev in [None, Some(&before)] {
            let r = cpuutil::compute(prev, &after, ClockTicks::new(100), &opts);
            for u in std::iter::once(&r.all).chain(&r.cpus) {
                for x in [u.usr, u.nice, u.sys, u.iowait, u.irq, u.soft, u.steal, u.idle] {
                    prop_assert!(x.is_finite() && (-1e-9..=100.0 + 1e-9).contains(&x), "{u:?}");
                }
            }
        }
        Ok(())
    });
}

fn node_cpus(cases: u32) {
    let seeds = vec!["0-31,32-63".to_string(), "0-15+32-47,16-31+48-63".into(), "0,1".into()];
    fuzz::check(cases, fuzz::text_or_mutated(seeds, 60), |text| {
        let _ = NodeCpus::parse(&text);
        Ok(())
    });
}

/// Found by `mutated_proc_stat_pairs_…` (shrunk): a CPU listed twice with counters near 2^64
/// overflowed the sum of per-CPU ticks (a panic in debug builds).
#[test]
fn a_cpu_listed_twice_with_counters_near_2_64_does_not_overflow() {
    let damaged = "cpu  18446744073709551615 0 0 0 0 0 0\ncpu0 51615 0 0 0 0 0 0\n\
                   cpu0 18446744073709551615 0 0 0 0 0 0\n";
    let t0 = Instant::now();
    let snap = |text: &str, at| Snapshot {
        at,
        epoch_s: 0.0,
        stat: parse_proc_stat(text).unwrap(),
        event: None,
    };
    let before = snap(PROC_STAT, t0);
    let after = snap(damaged, t0);
    let opts = cpuutil::Options::default();
    for prev in [None, Some(&before)] {
        let r = cpuutil::compute(prev, &after, ClockTicks::new(100), &opts);
        assert!(r.all.usr.is_finite() && r.all.usr <= 100.0, "{:?}", r.all);
    }
}

#[test]
fn mutated_proc_stat_pairs_give_utilization_within_0_to_100_or_errors() {
    proc_stat(fuzz::PURE);
}

#[live("50 000 mutated /proc/stat pairs")]
fn mutated_proc_stat_pairs_give_utilization_within_0_to_100_or_errors_long() {
    proc_stat(fuzz::LIVE);
}

#[test]
fn arbitrary_node_cpus_parse_or_error() {
    node_cpus(fuzz::PURE);
}

#[live("50 000 --node-cpus values")]
fn arbitrary_node_cpus_parse_or_error_long() {
    node_cpus(fuzz::LIVE);
}
