//! `topo --facts` in QEMU guests of several CPU models (crates/numa-vm, TCG): Intel and AMD
//! server CPUs as QEMU describes them, each with CPUID of its own (vendor, family, highest
//! leaves, leaf 2, the cache and TLB leaves). Whatever a model's CPUID holds, every fact is a
//! value or says why there is none, and nothing panics.

use std::time::Instant;
use test_tier::guest;

use crate::common;

use common::{boot, json};
use numa_vm::GuestSpec;

/// QEMU's names for server CPUs of the generations platscope is run on; those the installed
/// QEMU lacks are left out (and named).
const MODELS: [&str; 5] =
    ["Cascadelake-Server", "Skylake-Server", "Icelake-Server", "EPYC-Rome", "EPYC-Milan"];

/// A fact's value says something: a value, or an absence with its reason (`not available:
/// why`, `not reported (why)`, `none (why)`) — never empty, never a bare "not reported".
fn value_or_reason(value: &str) -> bool {
    let value = value.trim();
    let absent = ["not ", "none", "unknown"].iter().any(|p| value.starts_with(p));
    !value.is_empty()
        && (!absent || value.contains(':') || value.contains('(') || value.contains(" by "))
}

#[test]
fn values_and_reasons_are_told_apart() {
    assert!(value_or_reason("32 KiB, 8-way"));
    assert!(value_or_reason("not available: CPUID: leaf 2 names no TLB"));
    assert!(value_or_reason("not reported (no DMI)"));
    assert!(value_or_reason("not reported by the kernel"));
    assert!(value_or_reason("none (no cpufreq driver: frequency set by firmware or hypervisor)"));
    assert!(!value_or_reason("not reported"));
    assert!(!value_or_reason("  "));
    assert!(!value_or_reason("unknown"));
}

#[guest]
fn topo_facts_of_each_qemu_cpu_model_are_values_or_reasons() {
    let available = numa_vm::cpu_models().unwrap_or_else(|e| panic!("QEMU's CPU models: {e}"));
    let (models, missing): (Vec<&str>, Vec<&str>) =
        MODELS.iter().partition(|m| available.iter().any(|a| a == *m));
    println!("QEMU offers {} of {MODELS:?}; not offered: {missing:?}", models.len());
    assert!(models.iter().any(|m| !m.starts_with("EPYC")), "no Intel model in {available:?}");
    assert!(models.iter().any(|m| m.starts_with("EPYC")), "no AMD model in {available:?}");

    let all = Instant::now();
    let mut problems = Vec::new();
    for model in &models {
        let started = Instant::now();
        // Two nodes so the NUMA rows have something to say; one CPU each keeps TCG quick.
        let spec = GuestSpec::two_nodes().with_cpu(*model);
        let run = boot(&spec, &[], &["platscope topo --facts --json --no-store"]);
        let result = &run.results[0];
        assert!(!result.stderr.contains("panicked"), "{model}: {}", result.stderr);
        let facts = json(result);
        let facts = facts.as_array().unwrap_or_else(|| panic!("{model}: not a list"));
        let value = |setting: &str| {
            facts.iter().find(|f| f["setting"] == setting).and_then(|f| f["value"].as_str())
        };
        for f in facts {
            let (setting, text) = (f["setting"].as_str().unwrap_or("?"), f["value"].as_str());
            if !text.is_some_and(value_or_reason) {
                problems.push(format!("{model}: {setting} = {text:?}"));
            }
        }
        let vendor = if model.starts_with("EPYC") { "AuthenticAMD" } else { "GenuineIntel" };
        assert_eq!(value("CPU vendor"), Some(vendor), "{model}");
        let tlb_rows: Vec<&str> = facts
            .iter()
            .filter_map(|f| f["setting"].as_str())
            .filter(|s| s.contains("TLB"))
            .collect();
        // TLB rows from CPUID, or one "TLBs" row saying why there are none.
        match value("TLBs") {
            Some(why) => {
                assert_eq!(tlb_rows, ["TLBs"], "{model}");
                assert!(why.starts_with("not available: CPUID: "), "{model}: {why}");
            }
            None => assert!(tlb_rows.iter().any(|s| s.starts_with("L1 dTLB")), "{model}"),
        }
        println!(
            "{model}: {} facts in {:.1} s; {}; caches vs CPUID: {}; TLBs: {}",
            facts.len(),
            started.elapsed().as_secs_f64(),
            value("Family/model/stepping").unwrap_or("?"),
            value("Caches vs CPUID").unwrap_or("?"),
            value("TLBs").map_or_else(|| tlb_rows.join(", "), str::to_string),
        );
    }
    println!("{} models in {:.1} s", models.len(), all.elapsed().as_secs_f64());
    assert!(problems.is_empty(), "facts without a value or a reason:\n{}", problems.join("\n"));
}
