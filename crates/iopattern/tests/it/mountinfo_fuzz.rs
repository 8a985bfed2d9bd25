//! Fuzz-style property tests of the mountinfo parser over a mutated captured file
//! (tests/fixtures) and arbitrary text: lines that parse give a mount table that answers, lines
//! that do not are skipped, never a panic.
//!
//! Pure tier: [`fuzz::PURE`] cases; live tier (`--ignored`): [`fuzz::LIVE`].

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::path::Path;
use test_tier::live;

use iopattern::mounts::{parse_mountinfo, MountTable};
use test_support::fuzz::{self, proptest};

use proptest::prelude::*;

fn mountinfo(cases: u32) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mountinfo_linux_6_18_captured.txt");
    let seeds = vec![
        std::fs::read_to_string(&path).unwrap(),
        "36 35 98:0 /mnt\\0401 /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n".into(),
    ];
    fuzz::check(cases, fuzz::text_or_mutated(seeds, 400), |text| {
        let mounts = parse_mountinfo(&text);
        prop_assert!(mounts.len() <= text.lines().count());
        let table = MountTable::new(mounts.clone());
        for m in &mounts {
            prop_assert!(table.mount_of(m.dev).is_some());
        }
        let _ = table.cgroup2_root();
        let _ = table.prefixes(8, 64);
        Ok(())
    });
}

#[test]
fn arbitrary_and_mutated_mountinfo_gives_a_table_or_skips_lines() {
    mountinfo(fuzz::PURE);
}

#[live("50 000 mutated mountinfo files")]
fn arbitrary_and_mutated_mountinfo_gives_a_table_or_skips_lines_long() {
    mountinfo(fuzz::LIVE);
}
