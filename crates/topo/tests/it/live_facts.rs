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
        // Some hypervisors hide the TLBs: leaf 0x18 all zeros and leaf 2 pointing at it (0xFE).
        // Then the facts must say so, not make one up.
        let leaf18 = topo::cpuid::query(0x18, 0).expect("x86-64");
        let hidden = cpuid.vendor == "GenuineIntel"
            && [leaf18.eax, leaf18.ebx, leaf18.ecx, leaf18.edx] == [0; 4];
        if hidden {
            let tlbs = facts.iter().find(|f| f.setting == "TLBs").expect("a TLBs fact");
            assert!(tlbs.value.contains("not available"), "{tlbs:?}");
            println!("this hypervisor hides the TLBs (leaf 0x18 is all zeros): said as such");
        } else {
            assert!(facts.iter().any(|f| f.setting.starts_with("L1 dTLB")), "no TLB from CPUID");
        }
    }
}
