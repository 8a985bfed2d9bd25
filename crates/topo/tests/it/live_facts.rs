//! Live tier: the machine facts of this machine, read from its CPUID, sysfs and /proc.
//! Run with `cargo test -p topo --test it live_facts -- --ignored --nocapture`.

use test_tier::live;
use topo::facts::{cache_check, machine_facts};
use topo::Topology;

#[live("reads this machine's CPUID, sysfs, /proc and DMI")]
fn cpuid_and_sysfs_caches_agree_and_every_fact_has_a_value() {
    let t = Topology::detect().expect("topology");
    let facts = machine_facts(&t);
    println!("{}", topo::render::facts_text(&facts, None));
    let empty: Vec<&str> =
        facts.iter().filter(|f| f.value.trim().is_empty()).map(|f| f.setting.as_str()).collect();
    assert!(empty.is_empty(), "facts without a value: {empty:?}");
    for setting in ["CPU model", "Sockets", "Kernel", "THP", "Page sizes", "Hypervisor"] {
        assert!(facts.iter().any(|f| f.setting == setting), "no {setting:?}");
    }
    assert!(!t.caches.is_empty(), "the kernel reports no caches here");

    if cfg!(target_arch = "x86_64") {
        #[cfg(target_arch = "x86_64")]
        println!("CPUID registers read:\n{}", topo::cpuid::Dump::capture_live());
        let cpuid = t.machine.cpuid.as_ref().expect("CPUID is read on x86-64");
        let check = cache_check(&t).expect("CPUID describes the caches");
        assert!(check.differences.is_empty(), "CPUID and sysfs disagree: {:?}", check.differences);
        // Every data/unified level the kernel reports was compared, and sysfs gave set counts.
        let mut levels: Vec<String> = t.caches.iter().map(|c| c.name()).collect();
        levels.dedup();
        assert_eq!(check.compared, levels);
        assert!(t.caches.iter().all(|c| c.sets.is_some()), "{:?}", t.caches);
        // CPUID's signature is the kernel's.
        let kernel = (t.machine.family, t.machine.model_number, t.machine.stepping);
        assert_eq!((Some(cpuid.family), Some(cpuid.model), Some(cpuid.stepping)), kernel);
        // Where this CPU keeps its TLBs, read here without the decoder, each leaf only when the
        // highest basic or extended leaf reaches it: above it, a KVM guest answers with zeros
        // (leaf 0x18 on a guest whose highest basic leaf is 0x16) and Intel with the highest
        // leaf's values, neither of which describes anything.
        use topo::cpuid::{amd_l1_tlbs, intel_leaf2, intel_tlb_leaf18, query};
        let max_basic = query(0, 0).expect("x86-64").eax;
        let max_ext = query(0x8000_0000, 0).expect("x86-64").eax;
        let listed = if cpuid.is_amd_like() {
            max_ext >= 0x8000_0005
                && !amd_l1_tlbs(query(0x8000_0005, 0).expect("x86-64").ebx, &[4096]).is_empty()
        } else {
            let leaf18 = max_basic >= 0x18
                && (0..=query(0x18, 0).expect("x86-64").eax.min(32))
                    .any(|sub| intel_tlb_leaf18(query(0x18, sub).expect("x86-64")).is_some());
            let leaf2 =
                max_basic >= 2 && !intel_leaf2(query(2, 0).expect("x86-64")).tlbs.is_empty();
            leaf18 || leaf2
        };
        println!("highest basic leaf {max_basic:#x}, extended {max_ext:#x}; TLBs listed: {listed}");
        if listed {
            assert!(facts.iter().any(|f| f.setting.starts_with("L1 dTLB")), "no TLB from CPUID");
            assert_eq!(cpuid.tlbs_absent, None);
        } else {
            // Then the facts must say why, not make one up.
            let tlbs = facts.iter().find(|f| f.setting == "TLBs").expect("a TLBs fact");
            let why = cpuid.tlbs_absent.as_deref().expect("a reason for no TLBs");
            assert_eq!(tlbs.value, format!("not available: CPUID: {why}"));
            println!("CPUID lists no TLB here, said as such: {}", tlbs.value);
        }
    }
}
