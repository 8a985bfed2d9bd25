//! Arenas on this machine's real kernel: placement verified with `move_pages`.
//! (Multi-node placement is checked in the QEMU guest suite, crates/numa-vm.)

use place::{pin, thread_policy, Arena, ArenaSpec, HugeSource, MemPolicy, PageSize, PlaceError};
use test_tier::live;
use topo::Topology;

const MIB: u64 = 1 << 20;

fn topology() -> Topology {
    Topology::detect().expect("topology of this machine")
}

fn arena(bytes: u64, policy: MemPolicy, page: PageSize) -> Result<Arena, PlaceError> {
    Arena::new(ArenaSpec { bytes, policy, page }, &topology())
}

#[live]
fn bound_arena_is_on_its_node() {
    let t = topology();
    let node = t.nodes_with_memory()[0];
    let a = arena(64 * MIB, MemPolicy::Bind(vec![node]), PageSize::Base).expect("arena");
    let p = a.placement().expect("placement");
    println!("bind {node}: {p:?}");
    assert_eq!(p.total_pages(), 16_384);
    assert_eq!(p.pages_on(node), 16_384);
    assert!(p.all_on(&[node]));
}

#[live]
fn base_pages_get_no_thp() {
    let a = arena(16 * MIB, MemPolicy::Local, PageSize::Base).expect("arena");
    assert_eq!(a.len() as u64, 16 * MIB);
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
    let huge = place::anon_huge_bytes_in(&smaps, a.as_ptr() as u64, a.len() as u64);
    println!("4k arena: {huge} bytes in THP");
    assert_eq!(huge, 0, "MADV_NOHUGEPAGE must keep THP out");
}

#[live]
fn thp_arena_is_aligned_and_huge_backed() {
    let t = topology();
    let thp = t.environment.as_ref().and_then(|e| e.thp_enabled.clone());
    let a = arena(32 * MIB, MemPolicy::Inherit, PageSize::Thp).expect("arena");
    assert_eq!(a.as_ptr() as usize % (2 << 20), 0, "THP arenas are 2 MiB aligned");
    let p = a.placement().expect("placement");
    println!("thp ({thp:?}): {p:?}");
    let huge = p.thp_bytes.expect("THP figure read from smaps");
    if thp.as_deref() == Some("never") {
        assert_eq!(huge, 0);
    } else {
        // khugepaged-free first-touch faults should back most of an aligned range.
        assert!(huge >= 16 * MIB, "only {huge} bytes of 32 MiB in huge pages");
    }
}

/// Sets nothing system-wide: whatever THP mode this machine has, a THP arena must say of its
/// pages what `/proc/self/smaps` reports for its range.
#[live]
fn thp_arena_says_the_huge_share_smaps_reports() {
    let a = arena(64 * MIB, MemPolicy::Inherit, PageSize::Thp).expect("arena");
    let (start, len) = (a.as_ptr() as u64, a.len() as u64);
    let smaps = || {
        let text = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        place::anon_huge_bytes_in(&text, start, len)
    };
    // khugepaged may collapse pages meanwhile: the read-back lies between two smaps reads.
    let before = smaps();
    let p = a.placement().expect("placement");
    let after = smaps();
    let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .ok()
        .and_then(|t| topo::sysfs::bracketed_choice(&t).map(str::to_string));
    let label = p.pages_label();
    println!(
        "THP {mode:?}: {label}; {:?} by {:?}; smaps {before} then {after}",
        p.thp_bytes, p.thp_source
    );
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let expected_source = if root { HugeSource::Kpageflags } else { HugeSource::Smaps };
    assert_eq!(p.thp_source, Some(expected_source));
    assert_eq!(p.thp_mode, mode);
    let huge = p.thp_bytes.expect("huge share read back");
    assert!((before..=after).contains(&huge), "{huge} huge, smaps {before} then {after}");
    if huge == len {
        assert_eq!(label, "thp pages: all 64 MiB huge");
    } else {
        assert!(label.starts_with("thp requested: "), "{label}");
        assert!(label.contains(" of 64 MiB huge; THP is '"), "{label}");
    }
    if mode.as_deref() == Some("never") {
        assert_eq!((huge, label.as_str()), (0, "thp requested: 0 of 64 MiB huge; THP is 'never'"));
    }
}

#[live]
fn interleave_and_preferred_over_all_nodes_place_everything() {
    let nodes = topology().nodes_with_memory();
    let a = arena(8 * MIB, MemPolicy::Interleave(nodes.clone()), PageSize::Base).expect("arena");
    let p = a.placement().expect("placement");
    assert!(p.all_on(&nodes), "{p:?}");
    let per_node = p.total_pages() / nodes.len() as u64;
    for n in &nodes {
        let on = p.pages_on(*n);
        assert!(on.abs_diff(per_node) <= per_node / 10 + 1, "node {n}: {on} of {per_node}");
    }
    let b = arena(8 * MIB, MemPolicy::Preferred(nodes[0]), PageSize::Base).expect("arena");
    assert!(b.placement().expect("placement").all_on(&[nodes[0]]));
}

#[live]
fn worker_thread_first_touches_its_own_arena() {
    let t = topology();
    let cpu = *t.online_cpu_ids().last().expect("a CPU");
    let node = t.node_of_cpu(cpu).expect("CPU has a node");
    let placement = std::thread::spawn(move || {
        pin::pin_current_thread(&[cpu]).expect("pin");
        assert_eq!(pin::current_cpu(), Some(cpu));
        assert_eq!(pin::affinity(0).expect("affinity"), vec![cpu]);
        let a = arena(4 * MIB, MemPolicy::Local, PageSize::Base).expect("arena");
        a.placement().expect("placement")
    })
    .join()
    .expect("worker");
    assert!(placement.all_on(&[node]), "{placement:?}");
}

#[live]
fn more_than_the_machine_has_is_refused_before_allocating() {
    let t = topology();
    let total: u64 = t.nodes.iter().map(|n| n.total_bytes).sum();
    let meminfo = std::fs::read_to_string("/proc/meminfo").expect("meminfo");
    let machine_kib: u64 = meminfo
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .expect("MemTotal");
    let too_much = total.max(machine_kib * 1024) * 2;
    let err = arena(too_much, MemPolicy::Bind(vec![0]), PageSize::Base).expect_err("refused");
    println!("{err}");
    assert!(matches!(err, PlaceError::InsufficientMemory { .. }));
    assert!(err.is_usage());
    assert!(err.to_string().contains("use a smaller size"));
}

#[live]
fn empty_1g_pool_names_the_sysctl() {
    let pool = topology().environment.expect("live").hugepages;
    let free_1g = pool.iter().find(|p| p.page_bytes == 1 << 30).map_or(0, |p| p.free);
    let err = arena(1 << 30, MemPolicy::Inherit, PageSize::Huge1G);
    if free_1g > 0 {
        println!("1 GiB pool has {free_1g} free pages: checking the allocation works instead");
        assert!(err.expect("1 GiB arena").placement().expect("placement").not_present == 0);
        return;
    }
    let err = err.expect_err("empty pool refused");
    println!("{err}");
    assert!(matches!(err, PlaceError::HugePages { .. }));
    assert!(err.to_string().contains("nr_hugepages"));
}

/// Reserves 2 MiB pages (needs root), checks an arena uses them, and puts the pool back.
#[live]
fn hugetlb_2m_arena_as_root() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED hugetlb_2m_arena_as_root: needs root to reserve huge pages");
        return;
    }
    let path = "/proc/sys/vm/nr_hugepages";
    let before: u64 = std::fs::read_to_string(path).expect("read").trim().parse().expect("number");
    std::fs::write(path, (before + 8).to_string()).expect("reserve 8 pages");
    let result = arena(16 * MIB, MemPolicy::Inherit, PageSize::Huge2M).and_then(|a| a.placement());
    std::fs::write(path, before.to_string()).expect("restore pool");
    let p = result.expect("2 MiB arena");
    println!("2m: {p:?}");
    assert_eq!(p.page_bytes, 2 * MIB);
    assert_eq!(p.total_pages(), 8);
    assert_eq!(p.not_present, 0);
}

#[live]
fn thread_policy_reads_back_what_was_set() {
    let nodes = topology().nodes_with_memory();
    let seen = std::thread::spawn(move || {
        MemPolicy::Bind(nodes.clone()).apply_to_thread().expect("set_mempolicy");
        (thread_policy().expect("get_mempolicy"), nodes)
    })
    .join()
    .expect("thread");
    assert_eq!(seen.0.mode, "bind");
    assert_eq!(seen.0.nodes, seen.1);
}
