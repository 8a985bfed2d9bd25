//! A THP request the kernel does not grant, without touching the system's THP setting: this
//! test binary disables THP for its own process (`PR_SET_THP_DISABLE`), as THP `never` would
//! for every process, and checks that a THP arena then says it got no huge page. It is the only
//! test in this file because the setting holds for the whole process.

use place::{Arena, ArenaSpec, HugeSource, MemPolicy, PageSize};
use test_tier::live;

#[live]
fn a_thp_arena_of_a_process_without_thp_says_it_got_none() {
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments only; it changes this process alone.
    let rc = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    assert_eq!(rc, 0, "prctl: {}", std::io::Error::last_os_error());
    let topology = topo::Topology::detect().expect("topology");
    let spec = ArenaSpec { bytes: 64 << 20, policy: MemPolicy::Inherit, page: PageSize::Thp };
    let arena = Arena::new(spec, &topology).expect("arena");
    let p = arena.placement().expect("placement");
    let label = p.pages_label();
    println!("{label} ({:?})", p.thp_source);
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
    let by_smaps = place::anon_huge_bytes_in(&smaps, arena.as_ptr() as u64, arena.len() as u64);
    assert_eq!((p.thp_bytes, by_smaps), (Some(0), 0));
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    assert_eq!(p.thp_source, Some(if root { HugeSource::Kpageflags } else { HugeSource::Smaps }));
    let mode = p.thp_mode.clone().expect("the system's THP mode");
    assert_eq!(label, format!("thp requested: 0 of 64 MiB huge; THP is '{mode}'"));
    assert!(place::placement_text(&p, None).contains(&format!("  got {label} (")));
}
