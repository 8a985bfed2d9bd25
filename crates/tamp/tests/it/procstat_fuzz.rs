//! Fuzz-style property test of tamp's view of `/proc/stat` (`measure::cpustat`'s parser, and the
//! busy and total ticks of the machine and each CPU around a run) over a mutated captured file
//! and arbitrary text: an error or busy ≤ total, never a panic, never an overflow.
//!
//! Pure tier: [`fuzz::PURE`] cases; live tier (`--ignored`): [`fuzz::LIVE`].

use test_support::fuzz::{self, proptest};
use test_tier::live;

use proptest::prelude::*;

fn proc_stat(cases: u32) {
    let seeds = vec![
        include_str!("../../../measure/tests/fixtures/proc_stat_linux_6_18_captured.txt").to_string(),
        "cpu  18446744073709551615 1 0 0 0 0 0 0 0 0\ncpu0 18446744073709551615 1 0 0 0 0 0 0 0 0\n"
            .into(),
    ];
    fuzz::check(cases, fuzz::text_or_mutated(seeds, 600), |text| {
        if let Ok(stat) = tamp::procstat::parse(&text) {
            for c in std::iter::once(&stat.total).chain(stat.cpus.iter().map(|l| &l.times)) {
                prop_assert!(c.busy() <= c.total(), "{c:?}");
            }
            let _ = tamp::procstat::delta(&stat, &stat);
        }
        Ok(())
    });
}

#[test]
fn mutated_proc_stat_gives_busy_within_total_or_error() {
    proc_stat(fuzz::PURE);
}

#[live("50 000 mutated /proc/stat files")]
fn mutated_proc_stat_gives_busy_within_total_or_error_long() {
    proc_stat(fuzz::LIVE);
}

/// Found by the target above (shrunk): counters near 2^64 overflowed the busy sum (a panic in
/// debug builds). Sums saturate.
#[test]
fn counters_near_2_64_saturate() {
    let stat = tamp::procstat::parse(
        "cpu  18446744073709551615 615 1 0 0 0 0 0 0 0 0\ncpu0 1 1 0 0 0 0 0 0 0 0 0\n",
    )
    .unwrap();
    assert_eq!((stat.total.busy(), stat.total.total()), (u64::MAX, u64::MAX));
}
