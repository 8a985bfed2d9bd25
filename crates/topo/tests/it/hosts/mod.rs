//! Pure tier: the CPUID, `/proc/cpuinfo` and sysfs caches captured on each kind of host the
//! project has run on (`tests/fixtures/README.md` names them), decoded here. For every capture,
//! the caches CPUID describes are the ones the kernel listed, and the TLBs are found or their
//! absence is said with a reason.

mod capture;

use capture::Capture;
use topo::cpuid::{Associativity, CacheType, TlbKind};
use topo::facts::{cache_check, machine_facts};

const K4: u64 = 4 << 10;
const M2: u64 = 2 << 20;
const M4: u64 = 4 << 20;
const G1: u64 = 1 << 30;

/// A TLB as the tests spell it: level, kind, page sizes, entries, associativity.
type TlbRow = (u8, TlbKind, Vec<u64>, u64, Option<Associativity>);

fn tlb_rows(info: &topo::cpuid::CpuidInfo) -> Vec<TlbRow> {
    info.tlbs
        .iter()
        .map(|t| (t.level, t.kind, t.page_bytes.clone(), t.entries, t.associativity))
        .collect()
}

#[test]
fn cpuid_caches_are_the_captured_sysfs_caches() {
    for capture in Capture::all() {
        let name = capture.name;
        let info = capture.decoded();
        let kernel = (capture.cpuinfo.family, capture.cpuinfo.model, capture.cpuinfo.stepping);
        assert_eq!((Some(info.family), Some(info.model), Some(info.stepping)), kernel, "{name}");
        let sysfs = capture.sysfs_caches();
        for &(level, kind, size, sharing) in &sysfs {
            let theirs = info
                .cache(level, kind)
                .unwrap_or_else(|| panic!("{name}: L{level} {kind:?} not in CPUID"));
            assert_eq!(theirs.size_bytes, size, "{name}: L{level} {kind:?} size");
            // CPUID gives the most CPUs that may share it; sysfs lists those that do.
            let most = theirs.max_sharing.unwrap_or(u32::MAX);
            assert!(sharing <= most as usize, "{name}: L{level} shared by {sharing} > {most}");
        }
        let described: Vec<(u8, CacheType)> =
            info.caches.iter().map(|c| (c.level, c.kind)).collect();
        let listed: Vec<(u8, CacheType)> = sysfs.iter().map(|c| (c.0, c.1)).collect();
        assert_eq!(described, listed, "{name}: the same caches, in the same order");
        // The facts' own comparison (size, ways, line, sets) finds nothing either.
        let t = capture.topology();
        let check = cache_check(&t).unwrap_or_else(|| panic!("{name}: no CPUID caches"));
        assert!(check.differences.is_empty(), "{name}: {:?}", check.differences);
        let data_and_unified: Vec<String> = t.caches.iter().map(|c| c.name()).collect();
        assert_eq!(check.compared, data_and_unified, "{name}");
        println!("{name}: {} caches agree ({})", sysfs.len(), check.compared.join(", "));
    }
}

#[test]
fn tlbs_are_found_within_the_highest_leaves_or_their_absence_is_said() {
    for capture in Capture::all() {
        let name = capture.name;
        let (max_basic, max_ext) = capture.max_leaves();
        // Decoding reads no leaf above the highest basic or extended one.
        let seen = std::cell::RefCell::new(Vec::new());
        let info = topo::cpuid::decode(&|leaf, sub| {
            seen.borrow_mut().push(leaf);
            capture.cpuid.read(leaf, sub)
        });
        for &leaf in seen.borrow().iter().filter(|&&l| l != 0 && l != 0x8000_0000) {
            let limit = if leaf >= 0x8000_0000 { max_ext } else { max_basic };
            assert!(leaf <= limit, "{name}: leaf {leaf:#x} read, highest {limit:#x}");
        }
        let facts = machine_facts(&capture.topology());
        let rows: Vec<&topo::Fact> = facts.iter().filter(|f| f.setting.contains("TLB")).collect();
        if info.tlbs.is_empty() {
            let why = info.tlbs_absent.as_deref().unwrap_or_else(|| panic!("{name}: no reason"));
            assert_eq!(rows.len(), 1, "{name}: {rows:?}");
            assert_eq!(rows[0].value, format!("not available: CPUID: {why}"), "{name}");
            println!("{name}: no TLBs, {why}");
            continue;
        }
        assert_eq!(info.tlbs_absent, None, "{name}");
        assert_eq!(rows.len(), info.tlbs.len(), "{name}: a row per TLB: {rows:?}");
        let mut leaves: Vec<&str> = info.tlbs.iter().map(|t| t.leaf.as_str()).collect();
        leaves.sort_unstable();
        leaves.dedup();
        let expected: &[&str] = if info.is_amd_like() {
            &["0x80000005", "0x80000006", "0x80000019"]
        } else if max_basic >= 0x18 {
            &["0x18", "2"]
        } else {
            &["2"]
        };
        assert!(leaves.iter().all(|l| expected.contains(l)), "{name}: from leaves {leaves:?}");
        println!("{name}: {} TLBs from leaves {leaves:?}", info.tlbs.len());
    }
}

#[test]
fn decoded_facts_are_what_topo_printed_on_each_host() {
    let mut compared = 0;
    for capture in Capture::all() {
        let Some(printed) = &capture.facts else { continue };
        let name = capture.name;
        let here = machine_facts(&capture.topology());
        let value = |facts: &[topo::Fact], setting: &str| {
            facts.iter().find(|f| f.setting == setting).map(|f| f.value.clone())
        };
        // The CPUID rows: identity, the cache comparison, every TLB.
        let settings: Vec<&str> = printed
            .iter()
            .map(|f| f.setting.as_str())
            .filter(|s| {
                s.contains("TLB") || *s == "Family/model/stepping" || *s == "Caches vs CPUID"
            })
            .collect();
        assert!(settings.len() >= 3, "{name}: {settings:?}");
        for setting in &settings {
            assert_eq!(value(&here, setting), value(printed, setting), "{name}: {setting}");
        }
        let tlb_rows =
            |facts: &[topo::Fact]| facts.iter().filter(|f| f.setting.contains("TLB")).count();
        assert_eq!(tlb_rows(&here), tlb_rows(printed), "{name}: TLB rows");
        // Sharing as the host's facts showed it: `shared by N CPUs` per cache level.
        for (level, kind, _, sharing) in capture.sysfs_caches() {
            let setting = match kind {
                CacheType::Data => format!("L{level}d cache"),
                CacheType::Unified => format!("L{level} cache"),
                CacheType::Instruction => continue,
            };
            let shown = value(printed, &setting).unwrap_or_else(|| panic!("{name}: {setting}"));
            let cpus = if sharing == 1 { "1 CPU".to_string() } else { format!("{sharing} CPUs") };
            assert!(shown.contains(&format!("shared by {cpus} ")), "{name}: {setting}: {shown}");
        }
        compared += 1;
    }
    assert!(compared >= 2, "captures with topo facts: {compared}");
}

#[test]
fn cascade_lake_guest_tlbs_come_from_leaf_2_as_its_leaf_0x18_is_beyond_the_highest() {
    let capture = Capture::named("intel-xeon-cascadelake-kvm");
    let info = capture.decoded();
    assert_eq!(
        (info.vendor.as_str(), info.family, info.model, info.stepping),
        ("GenuineIntel", 6, 85, 7)
    );
    // Highest basic leaf 0x16: no leaf 0x18 was captured, none is read.
    assert_eq!(capture.max_leaves().0, 0x16);
    assert!(!capture.cpuid.entries.iter().any(|(leaf, _, _)| *leaf == 0x18));
    // Leaf 2: 0x63 0x03 0x76 0xB5 0xF0 0xC3 (and 0xFF: caches in leaf 4). Per the descriptor
    // table of the Intel SDM Vol. 2A: 0x63 dTLB 2M/4M 32 entries 4-way plus 1G 4 entries 4-way;
    // 0x03 dTLB 4K 64 4-way; 0x76 iTLB 2M/4M 8 fully associative; 0xB5 iTLB 4K 64 8-way;
    // 0xF0 a prefetch size, not a TLB; 0xC3 STLB 4K/2M 1536 6-way plus 1G 16 4-way.
    let leaf2 = topo::cpuid::intel_leaf2(capture.cpuid.read(2, 0));
    assert!(leaf2.caches_in_leaf4 && !leaf2.tlbs_in_leaf18);
    assert_eq!(leaf2.other, [0xF0]);
    let rows = tlb_rows(&info);
    let ways = |n| Some(Associativity::Ways(n));
    assert_eq!(
        rows,
        [
            (1, TlbKind::Data, vec![K4], 64, ways(4)),
            (1, TlbKind::Data, vec![M2, M4], 32, ways(4)),
            (1, TlbKind::Data, vec![G1], 4, ways(4)),
            (1, TlbKind::Instruction, vec![K4], 64, ways(8)),
            (1, TlbKind::Instruction, vec![M2, M4], 8, Some(Associativity::Full)),
            (2, TlbKind::Unified, vec![K4, M2], 1536, ways(6)),
            (2, TlbKind::Unified, vec![G1], 16, ways(4)),
        ]
    );
    assert!(info.tlbs.iter().all(|t| t.leaf == "2"));
    // Leaf 4: L1d 32 KiB, L1i 32 KiB, L2 1 MiB 16-way, L3 36608 KiB 11-way 53248 sets shared
    // by up to 2 (the guest's 2 vCPUs), as its sysfs says.
    let l3 = info.cache(3, CacheType::Unified).expect("L3");
    assert_eq!((l3.size_bytes, l3.sets, l3.max_sharing), (36608 << 10, 53248, Some(2)));
    assert_eq!(l3.associativity, Associativity::Ways(11));
    assert!(info.caches.iter().all(|c| c.leaf == "4"));
}

#[test]
fn rome_guest_caches_come_from_0x8000001d_and_tlbs_from_the_amd_leaves() {
    let capture = Capture::named("amd-epyc-rome-kvm");
    let info = capture.decoded();
    // Family 0xF + extended 8 = 23 (Zen 2), model 0x31 = 49: EPYC "Rome".
    assert_eq!(
        (info.vendor.as_str(), info.family, info.model, info.stepping),
        ("AuthenticAMD", 23, 49, 0)
    );
    // 0x8000001D subleaf 3: a 16 MiB 16-way L3 with 16384 sets, shared by up to 2.
    let l3 = info.cache(3, CacheType::Unified).expect("L3");
    assert_eq!((l3.size_bytes, l3.sets, l3.max_sharing), (16 << 20, 16384, Some(2)));
    assert!(info.caches.iter().all(|c| c.leaf == "0x8000001D"));
    // 0x80000006 EDX 0x08009140 has L3 associativity code 9 ("see 0x8000001D"), so the
    // legacy leaf's L3 size field (512 × 512 KiB = 256 MiB) is not taken.
    let legacy = topo::cpuid::amd_legacy_caches(
        capture.cpuid.read(0x8000_0005, 0),
        capture.cpuid.read(0x8000_0006, 0),
    );
    assert!(legacy.iter().all(|c| c.level < 3), "{legacy:?}");
    let rows = tlb_rows(&info);
    let full = Some(Associativity::Full);
    let ways = |n| Some(Associativity::Ways(n));
    // 0x80000005 EAX/EBX 0xff40ff40: 64-entry fully associative L1 d/iTLBs for 2M and 4K;
    // 0x80000006 EBX 0x68006400: L2 dTLB 4K 2048 code 6 (8-way), iTLB 1024 code 6; EAX
    // 0x48006400: L2 dTLB 2M 2048 code 4 (4-way), iTLB 1024 code 6; 0x80000019 EAX 0xf040f040:
    // L1 1G 64 fully associative each, EBX 0: no L2 TLB for 1G pages. (/proc/cpuinfo's
    // "TLB size: 3072 4K pages" is the L2 dTLB plus the L2 iTLB.)
    assert_eq!(
        rows,
        [
            (1, TlbKind::Data, vec![K4], 64, full),
            (1, TlbKind::Data, vec![M2, M4], 64, full),
            (1, TlbKind::Data, vec![G1], 64, full),
            (1, TlbKind::Instruction, vec![K4], 64, full),
            (1, TlbKind::Instruction, vec![M2, M4], 64, full),
            (1, TlbKind::Instruction, vec![G1], 64, full),
            (2, TlbKind::Data, vec![K4], 2048, ways(8)),
            (2, TlbKind::Data, vec![M2, M4], 2048, ways(4)),
            (2, TlbKind::Instruction, vec![K4], 1024, ways(8)),
            (2, TlbKind::Instruction, vec![M2, M4], 1024, ways(8)),
        ]
    );
}
