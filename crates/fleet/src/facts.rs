//! Which of a report's machine facts make two hosts' figures comparable (their hardware class),
//! and which changed on a host between two of its runs (what may explain a shift).
//!
//! A class is the hardware a figure depends on and a host cannot change by configuration: the
//! CPU model (core design, caches, clocks), sockets and cores per socket (how many compete for
//! memory, what `cpu scale` and the allocators scale to), NUMA nodes (what local means), the
//! memory size rounded to what was installed, and the hypervisor (a guest's figures pay for
//! virtual memory twice and share its host). Kernel, microcode, THP, governor, mitigations and
//! the rest are left out on purpose: they are what differs between hosts of one class and what
//! a change on one host is explained by.
//!
//! The facts come as the report's machine table stored them (text); what a class needs of them
//! is read typed through `topo::FactValue`, which wrote them.
//!
//! ```
//! use fleet::facts::nominal_memory;
//!
//! // MemTotal is a little below what is installed (the kernel and firmware keep some).
//! assert_eq!(nominal_memory("23.5 GiB (MemTotal)"), "24 GiB");
//! assert_eq!(nominal_memory("251.4 GiB (MemTotal)"), "256 GiB");
//! assert_eq!(nominal_memory("not recorded (stored by an older platscope)"), "not recorded");
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use topo::FactValue;

/// The facts (`topo::machine_facts` settings) that class a host, in the order a class is named.
pub const CLASS_FACTS: [&str; 6] =
    ["CPU model", "Sockets", "Cores per socket", "NUMA nodes", "Memory", "Hypervisor"];

/// The name under which a change of platscope's own version is listed with the facts.
pub const VERSION_FACT: &str = "platscope version";

/// The memory fact, compared by its [`nominal_memory`].
const MEMORY: &str = "Memory";

/// Whether a fact's value says it was not recorded (a run stored by an older platscope, or a
/// topology that was not read live): unknown, so never a difference.
fn unknown(value: &str) -> bool {
    !FactValue::read(value).is_recorded()
}

/// The memory size as installed, from the `Memory` fact: MemTotal rounded *up* to eight steps
/// per power of two (2 GiB steps from 16 to 32 GiB, 16 GiB steps from 128 to 256 GiB). MemTotal
/// is what is installed less what the firmware and kernel keep (1–3 %), and moves a little with
/// the kernel version, so hosts with the same DIMMs land on one value. `not recorded` or the
/// fact as given when it does not read as a size.
pub fn nominal_memory(value: &str) -> String {
    let bytes = match FactValue::read(value) {
        FactValue::Unrecorded(_) => return "not recorded".into(),
        FactValue::Memory(m) if m.bytes > 0 => m.bytes as f64,
        _ => return value.to_string(),
    };
    let step = 2f64.powi(bytes.log2().floor() as i32 - 3).max(1.0);
    let nominal = (bytes / step).ceil() * step;
    topo::facts::exact_bytes(nominal as u64)
}

/// A host's hardware class: the [`CLASS_FACTS`] of its newest run (memory nominal), with a
/// name a reader can take as it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClassKey {
    pub facts: BTreeMap<String, String>,
}

impl ClassKey {
    /// The class of a run with these facts; a fact the run lacks is `not recorded`.
    pub fn of(facts: &BTreeMap<String, String>) -> Self {
        let class = CLASS_FACTS
            .iter()
            .map(|&setting| {
                let value = match facts.get(setting).map(String::as_str) {
                    None => "not recorded".to_string(),
                    Some(v) if unknown(v) => "not recorded".to_string(),
                    Some(v) if setting == MEMORY => nominal_memory(v),
                    Some(v) => v.to_string(),
                };
                (setting.to_string(), value)
            })
            .collect();
        Self { facts: class }
    }

    fn get(&self, setting: &str) -> &str {
        self.facts.get(setting).map_or("not recorded", String::as_str)
    }

    /// `Intel(R) Xeon(R) Gold 6338, 2 × 32 cores, 2 NUMA nodes, 512 GiB, bare metal`.
    pub fn name(&self) -> String {
        let cores = match (self.get("Sockets"), self.get("Cores per socket")) {
            ("not recorded", _) | (_, "not recorded") => "cores not recorded".to_string(),
            (sockets, cores) => format!("{sockets} × {cores} cores"),
        };
        let nodes = match self.get("NUMA nodes") {
            "1" => "1 NUMA node".to_string(),
            "not recorded" => "NUMA nodes not recorded".to_string(),
            n => format!("{n} NUMA nodes"),
        };
        let memory = match self.get(MEMORY) {
            "not recorded" => "memory not recorded".to_string(),
            m => m.to_string(),
        };
        let hypervisor = match self.get("Hypervisor") {
            h if FactValue::read(h) == FactValue::BareMetal => "bare metal".to_string(),
            "not recorded" => "hypervisor not recorded".to_string(),
            h => h.to_string(),
        };
        format!("{}, {cores}, {nodes}, {memory}, {hypervisor}", self.get("CPU model"))
    }
}

/// One fact that differs between the runs on either side of a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactChange {
    /// The machine-facts setting (`Kernel`, `THP`, `Microcode`), or [`VERSION_FACT`].
    pub fact: String,
    pub before: String,
    pub after: String,
}

/// The value shown for a fact one run does not have.
pub const MISSING: &str = "—";

/// Every fact that differs from the run `before` (its facts and platscope version) to the run
/// `after`: configuration and, when a part was swapped, hardware alike — a new DIMM explains a
/// shift as well as a new kernel. Memory is compared as installed ([`nominal_memory`]), since
/// MemTotal moves with the kernel; a value `not recorded` on either side is unknown and no
/// difference. Facts in setting order, platscope's version last.
pub fn diff(
    before: (&BTreeMap<String, String>, &str),
    after: (&BTreeMap<String, String>, &str),
) -> Vec<FactChange> {
    let (facts_before, version_before) = before;
    let (facts_after, version_after) = after;
    let mut settings: Vec<&String> = facts_before.keys().chain(facts_after.keys()).collect();
    settings.sort();
    settings.dedup();
    let mut out = Vec::new();
    for setting in settings {
        let a = facts_before.get(setting).map(String::as_str);
        let b = facts_after.get(setting).map(String::as_str);
        if a.is_some_and(unknown) || b.is_some_and(unknown) {
            continue;
        }
        let same = match (a, b) {
            (Some(a), Some(b)) if setting == MEMORY => nominal_memory(a) == nominal_memory(b),
            (a, b) => a == b,
        };
        if !same {
            out.push(FactChange {
                fact: setting.clone(),
                before: a.unwrap_or(MISSING).to_string(),
                after: b.unwrap_or(MISSING).to_string(),
            });
        }
    }
    if version_before != version_after && !version_before.is_empty() && !version_after.is_empty() {
        out.push(FactChange {
            fact: VERSION_FACT.to_string(),
            before: version_before.to_string(),
            after: version_after.to_string(),
        });
    }
    out
}

/// `Kernel 6.1.0-25 → 6.12.1; THP madvise → always`.
pub fn describe(changes: &[FactChange]) -> String {
    changes
        .iter()
        .map(|c| format!("{} {} → {}", c.fact, c.before, c.after))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn memory_rounds_up_to_what_was_installed() {
        for (memtotal, installed) in [
            ("23.5 GiB (MemTotal)", "24 GiB"),
            ("24.0 GiB (MemTotal)", "24 GiB"),
            ("15.6 GiB (MemTotal)", "16 GiB"),
            ("16.0 GiB (MemTotal)", "16 GiB"),
            ("31.3 GiB (MemTotal)", "32 GiB"),
            ("62.8 GiB (MemTotal)", "64 GiB"),
            ("125.7 GiB (MemTotal)", "128 GiB"),
            ("188.6 GiB (MemTotal)", "192 GiB"),
            ("377.1 GiB (MemTotal)", "384 GiB"),
            ("503.5 GiB (MemTotal)", "512 GiB"),
            ("1007.6 GiB (MemTotal)", "1 TiB"),
            ("1.9 TiB (sum of the nodes)", "2 TiB"),
            ("960.0 MiB (MemTotal)", "960 MiB"),
        ] {
            assert_eq!(nominal_memory(memtotal), installed, "{memtotal}");
        }
        assert_eq!(nominal_memory("lots"), "lots");
        assert_eq!(nominal_memory("not recorded (synthetic or XML topology)"), "not recorded");
    }

    #[test]
    fn a_class_is_named_from_its_hardware_only() {
        let a = facts(&[
            ("CPU model", "AMD EPYC 9454"),
            ("Sockets", "2"),
            ("Cores per socket", "48"),
            ("NUMA nodes", "2"),
            ("Memory", "755.2 GiB (MemTotal)"),
            ("Hypervisor", "none detected (bare metal)"),
            ("Kernel", "6.1.0"),
        ]);
        let mut b = a.clone();
        b.insert("Kernel".into(), "6.12.1".into());
        b.insert("Memory".into(), "755.6 GiB (MemTotal)".into());
        assert_eq!(ClassKey::of(&a), ClassKey::of(&b), "kernel and MemTotal noise do not class");
        assert_eq!(
            ClassKey::of(&a).name(),
            "AMD EPYC 9454, 2 × 48 cores, 2 NUMA nodes, 768 GiB, bare metal"
        );
        let mut c = a.clone();
        c.insert("Cores per socket".into(), "32".into());
        assert_ne!(ClassKey::of(&a), ClassKey::of(&c));
        let old = facts(&[("CPU model", "Intel(R) Xeon(R) Processor")]);
        assert_eq!(
            ClassKey::of(&old).name(),
            "Intel(R) Xeon(R) Processor, cores not recorded, NUMA nodes not recorded, \
             memory not recorded, hypervisor not recorded"
        );
    }

    #[test]
    fn the_diff_names_each_changed_fact_and_the_version() {
        let before = facts(&[
            ("Kernel", "6.1.0-25"),
            ("THP", "madvise (defrag madvise)"),
            ("Memory", "23.5 GiB (MemTotal)"),
            ("Vulnerability retbleed", "Vulnerable"),
            ("Microcode", "not recorded (stored by an older platscope)"),
        ]);
        let after = facts(&[
            ("Kernel", "6.12.1"),
            ("THP", "madvise (defrag madvise)"),
            ("Memory", "23.6 GiB (MemTotal)"),
            ("Microcode", "0x2b000603"),
            ("Governor", "performance (CPUs 0-1)"),
        ]);
        let d = diff((&before, "0.1.0 (abc)"), (&after, "0.2.0 (def)"));
        let names: Vec<&str> = d.iter().map(|c| c.fact.as_str()).collect();
        assert_eq!(names, ["Governor", "Kernel", "Vulnerability retbleed", VERSION_FACT]);
        assert_eq!(d[0].before, MISSING);
        assert_eq!(
            d[1],
            FactChange { fact: "Kernel".into(), before: "6.1.0-25".into(), after: "6.12.1".into() }
        );
        assert_eq!(d[2].after, MISSING);
        assert!(diff((&before, "v"), (&before, "v")).is_empty());
        assert_eq!(describe(&d[1..2]), "Kernel 6.1.0-25 → 6.12.1");
    }
}
