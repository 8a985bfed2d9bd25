//! Topologies stored by older platscope versions still read back (stored runs keep their
//! topology JSON), and their facts table says what those versions did not record.

use topo::{machine_facts, Topology};

/// `platscope topo --json` of platscope 0.1.0 (git 60b459d, before machine facts: no CPUID,
/// microcode, cache sets, vulnerabilities, THP sizes or DMI memory in the document), captured
/// on the platscope development VM (AMD EPYC KVM guest, 2 vCPUs, Linux 6.18.44) on 2026-11-25.
const TOPOLOGY_0_1_0_60B459D: &str =
    include_str!("../fixtures/topology_0.1.0_60b459d_amd_epyc_kvm.json");

#[test]
fn topology_stored_before_machine_facts_reads_back() {
    let t: Topology = serde_json::from_str(TOPOLOGY_0_1_0_60B459D).expect("old topology reads");
    assert_eq!(t.machine.cpu_model.as_deref(), Some("AMD EPYC"));
    assert_eq!((t.machine.packages, t.machine.cores), (1, 2));
    // The new fields take their defaults.
    assert_eq!(t.machine.microcode, None);
    assert_eq!(t.machine.cpuid, None);
    assert_eq!(t.machine.family, None);
    assert!(t.caches.iter().all(|c| c.sets.is_none()));
    let env = t.environment.as_ref().expect("live topology has an environment");
    assert!(env.vulnerabilities.is_empty() && env.mthp.is_empty());
    assert_eq!((env.thp_pmd_bytes, &env.dmi_memory), (None, &None));
    // What it did record is still there.
    assert_eq!(env.kernel.as_deref(), Some("6.18.44-fc-v782"));
    assert_eq!(t.caches.iter().find(|c| c.level == 3).map(|c| c.size_bytes), Some(32 << 20));

    // Its facts: no empty value, and the missing ones say they were not recorded.
    let facts = machine_facts(&t);
    assert!(facts.iter().all(|f| !f.value.trim().is_empty()), "{facts:#?}");
    let value = |s: &str| facts.iter().find(|f| f.setting == s).map(|f| f.value.as_str());
    let unrecorded = Some("not recorded (stored by an older platscope)");
    assert_eq!(value("Microcode"), unrecorded);
    assert_eq!(value("TLBs"), unrecorded);
    assert_eq!(value("Memory devices"), unrecorded);
    assert_eq!(value("Mitigations"), unrecorded);
    assert_eq!(value("Kernel"), Some("6.18.44-fc-v782"));
    assert_eq!(value("L3 cache"), Some("32 MiB, 16-way, 64 B line, shared by 2 CPUs (1 instance)"));

    // And a topology written now reads back equal (the new fields round-trip).
    let json = serde_json::to_string(&t).expect("serializes");
    let back: Topology = serde_json::from_str(&json).expect("reads back");
    assert_eq!(back, t);
}
