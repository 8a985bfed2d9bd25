//! Fuzz-style property tests of the per-task parsers pstime reads with, over mutated captured
//! files (tests/fixtures) and arbitrary bytes: `/proc/PID/stat` (`measure::procstat`'s parser)
//! and `/proc/PID/schedstat`. An error or a sane value, never a panic, never an overflow.
//!
//! Pure tier: [`fuzz::PURE`] cases per target; live tier (`--ignored`): [`fuzz::LIVE`].

use std::path::Path;
use test_tier::live;

use pstime::task::{parse_schedstat, parse_stat};
use test_support::fuzz::{self, proptest};

use proptest::prelude::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn task_files(cases: u32) {
    let seeds = vec![
        fixture("task_stat_linux_6_18_captured.txt"),
        fixture("task_stat_odd_comm_linux_6_18_captured.txt"),
        fixture("task_schedstat_linux_6_18_captured.txt"),
    ];
    fuzz::check(cases, fuzz::bytes_or_mutated(seeds, 400), |bytes| {
        if let Ok(s) = parse_stat(&bytes) {
            prop_assert!(s.comm.len() < bytes.len());
        }
        let _ = parse_schedstat(&bytes);
        Ok(())
    });
}

#[test]
fn mutated_task_stat_and_schedstat_parse_or_error() {
    task_files(fuzz::PURE);
}

#[live("50 000 mutated /proc/PID/stat and schedstat files")]
fn mutated_task_stat_and_schedstat_parse_or_error_long() {
    task_files(fuzz::LIVE);
}
