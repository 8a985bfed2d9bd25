//! Fuzz-style property tests of allocbench's /proc parsers over mutated files captured on a
//! 2-vCPU x86-64 KVM guest (tests/fixtures: a `cat` process's maps, status and smaps_rollup)
//! and arbitrary text: `parse_maps` (and the address space summed from it) and `parse_memory`.
//! An error or a sane value, never a panic, never an overflow.
//!
//! Pure tier: [`fuzz::PURE`] cases per target; live tier (`--ignored`): [`fuzz::LIVE`].

use std::path::Path;
use test_tier::live;

use allocbench::procfs::{parse_maps, parse_memory, AddressSpace};
use test_support::fuzz::{self, proptest};

use proptest::prelude::*;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn maps(cases: u32) {
    let seeds = vec![
        fixture("maps_cat_linux_6_18_captured.txt"),
        "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n0-ffffffffffffffff r--p 0 00:00 0\n".into(),
    ];
    fuzz::check(cases, fuzz::text_or_mutated(seeds, 400), |text| {
        if let Ok(maps) = parse_maps(&text) {
            let a = AddressSpace::of(&maps);
            prop_assert!(a.prot_none_bytes <= a.total_bytes);
            prop_assert!(a.accessible_bytes() <= a.total_bytes);
        }
        Ok(())
    });
}

fn memory(cases: u32) {
    let status = vec![
        fixture("status_cat_linux_6_18_captured.txt"),
        "VmHWM:\t18014398509481984 kB\nVmRSS:\t1 kB\n".into(),
    ];
    let rollup = vec![
        fixture("smaps_rollup_cat_linux_6_18_captured.txt"),
        "Rss: 18014398509481984 kB\nPss: 18014398509481984 kB\n".into(),
    ];
    let input = (fuzz::text_or_mutated(status, 300), fuzz::text_or_mutated(rollup, 300));
    fuzz::check(cases, input, |(status, rollup)| {
        let m = parse_memory(&status, &rollup);
        for v in [m.hwm_bytes, m.rss_bytes, m.pss_bytes].into_iter().flatten() {
            prop_assert!(v % 1024 == 0, "kB figures are whole KiB: {v}");
        }
        Ok(())
    });
}

#[test]
fn mutated_maps_parse_to_a_consistent_address_space_or_error() {
    maps(fuzz::PURE);
}

#[live("50 000 mutated /proc/PID/maps files")]
fn mutated_maps_parse_to_a_consistent_address_space_or_error_long() {
    maps(fuzz::LIVE);
}

#[test]
fn mutated_status_and_smaps_rollup_give_whole_kib_or_none() {
    memory(fuzz::PURE);
}

#[live("50 000 mutated status and smaps_rollup pairs")]
fn mutated_status_and_smaps_rollup_give_whole_kib_or_none_long() {
    memory(fuzz::LIVE);
}

/// Found by the targets above (shrunk): mappings adding up past 2^64 bytes overflowed the
/// address-space sum, and a kB figure past 2^64 bytes overflowed `kb * 1024` (panics in debug
/// builds). The sum saturates; the figure is unknown.
#[test]
fn sizes_past_u64_saturate_or_are_unknown() {
    let maps = parse_maps(
        "ffffffffff600000-ffffffffff601000 ---p 00000000 00:00 0 [vsyscall]\n\
         0-ffffffffffffffff r--p 0 00:00 0\n",
    )
    .unwrap();
    let a = AddressSpace::of(&maps);
    assert_eq!(a.total_bytes, u64::MAX);
    let m = parse_memory("VmHWM:\t18014398509481984 kB\n", "Pss: 18014398509481984 kB\n");
    assert_eq!((m.hwm_bytes, m.pss_bytes), (None, None));
}
