//! The machine as a reader compares machines: the table of processor details (caches, TLBs, page
//! sizes, memory bandwidth) once drawn up by hand to compare SPARC processors, measured.
//!
//! [`machine_facts`] turns a [`Topology`] into ordered `setting → value` rows (CPU identity and
//! microcode, sockets/cores/threads, each cache's geometry and sharing, TLB entries from CPUID,
//! page sizes, memory devices and their theoretical peak, kernel settings, mitigations,
//! hypervisor). Every value is text a reader can take as it is, never empty: what was not
//! recorded or cannot be known here says so. [`config_diff`] lists the settings in which two
//! machines differ. Both are pure, so stored topologies re-render the same table.
//!
//! ```
//! use topo::{config_diff, machine_facts, Topology};
//! let a = Topology::from_synthetic("pack:1 [numa(memory=1GB)] core:4 pu:2").unwrap();
//! let b = Topology::from_synthetic("pack:2 [numa(memory=1GB)] core:4 pu:1").unwrap();
//! let facts = machine_facts(&a);
//! assert!(facts.iter().any(|f| f.setting == "Threads per core" && f.value == "2"));
//! let diff = config_diff(&facts, &machine_facts(&b));
//! assert!(diff.iter().any(|d| d.setting == "Sockets" && d.this == "1" && d.baseline == "2"));
//! ```

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::cpuid::{Associativity, CacheType, CpuidInfo, Tlb};
use crate::smbios::{peak_gbs, DmiMemory, MemoryDevice};
use crate::sysfs::VulnerabilityClass;
use crate::units::format_bytes;
use crate::{idlist, Bios, Cache, CacheKind, Environment, Topology};

/// One row of the machine table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    /// What the row is about, as a reader names it: `L3 cache`, `Microcode`, `THP`.
    pub setting: String,
    pub value: String,
}

/// A setting whose value differs between two machines ([`MISSING`] for a side without it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    pub setting: String,
    pub this: String,
    pub baseline: String,
}

/// The value shown for a setting one machine does not have.
pub const MISSING: &str = "—";

fn fact(out: &mut Vec<Fact>, setting: &str, value: impl Into<String>) {
    let value = value.into();
    let value = if value.trim().is_empty() { "not reported".to_string() } else { value };
    // Settings name rows uniquely so two tables line up; a repeated name gets a number.
    let mut name = setting.to_string();
    let mut n = 1;
    while out.iter().any(|f| f.setting == name) {
        n += 1;
        name = format!("{setting} #{n}");
    }
    out.push(Fact { setting: name, value });
}

/// Why a fact is absent from this topology: it was never recorded there.
fn unrecorded(t: &Topology) -> &'static str {
    if t.source == "live" {
        NOT_RECORDED_OLDER
    } else {
        NOT_RECORDED_NOT_LIVE
    }
}

/// A fact's value as a program reads it: the values a fleet classes machines by, typed.
/// [`machine_facts`] writes these from their typed form, and [`FactValue::read`] reads a value
/// back from its text — what a stored table holds, written by this version or an earlier one —
/// so the text stays the one stored form (stored facts and their digests are unchanged).
#[derive(Debug, Clone, PartialEq)]
pub enum FactValue {
    /// Not recorded where the table was drawn.
    Unrecorded(Unrecorded),
    /// The `Memory` fact: the machine's memory.
    Memory(MemoryTotal),
    /// The `Hypervisor` fact when none was detected.
    BareMetal,
    /// Anything else, as written.
    Text(String),
}

/// Why a fact was not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unrecorded {
    /// A live topology stored before platscope recorded the fact.
    OlderVersion,
    /// A synthetic or XML topology: nothing of the running system was read.
    NotLive,
}

/// The machine's memory as the `Memory` fact shows it: one decimal of its unit
/// (`23.5 GiB (MemTotal)`), so `bytes` read back from text is as close as that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryTotal {
    pub bytes: u64,
    pub source: MemorySource,
}

/// Where the machine's memory size came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemorySource {
    /// `MemTotal` of /proc/meminfo.
    MemTotal,
    /// The sum of the nodes' memory (no /proc/meminfo figure recorded).
    SumOfNodes,
}

const NOT_RECORDED_OLDER: &str = "not recorded (stored by an older platscope)";
const NOT_RECORDED_NOT_LIVE: &str = "not recorded (synthetic or XML topology)";
const BARE_METAL: &str = "none detected (bare metal)";

impl MemorySource {
    fn words(self) -> &'static str {
        match self {
            MemorySource::MemTotal => "MemTotal",
            MemorySource::SumOfNodes => "sum of the nodes",
        }
    }
}

impl FactValue {
    /// The value `text` holds, as [`machine_facts`] wrote it (now or in an earlier version);
    /// [`FactValue::Text`] for every other value.
    pub fn read(text: &str) -> FactValue {
        match text {
            NOT_RECORDED_OLDER => return FactValue::Unrecorded(Unrecorded::OlderVersion),
            NOT_RECORDED_NOT_LIVE => return FactValue::Unrecorded(Unrecorded::NotLive),
            BARE_METAL => return FactValue::BareMetal,
            _ => {}
        }
        MemoryTotal::read(text).map_or_else(|| FactValue::Text(text.to_string()), FactValue::Memory)
    }

    /// Whether the value was recorded (an unrecorded one is unknown, never a difference).
    pub fn is_recorded(&self) -> bool {
        !matches!(self, FactValue::Unrecorded(_))
    }
}

impl std::fmt::Display for FactValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FactValue::Unrecorded(Unrecorded::OlderVersion) => f.write_str(NOT_RECORDED_OLDER),
            FactValue::Unrecorded(Unrecorded::NotLive) => f.write_str(NOT_RECORDED_NOT_LIVE),
            FactValue::Memory(m) => {
                write!(f, "{} ({})", format_bytes(m.bytes), m.source.words())
            }
            FactValue::BareMetal => f.write_str(BARE_METAL),
            FactValue::Text(text) => f.write_str(text),
        }
    }
}

impl MemoryTotal {
    /// `23.5 GiB (MemTotal)` or `1.9 TiB (sum of the nodes)`, as [`FactValue`] shows it.
    fn read(text: &str) -> Option<MemoryTotal> {
        let (size, rest) = text.split_once(" (")?;
        let source = [MemorySource::MemTotal, MemorySource::SumOfNodes]
            .into_iter()
            .find(|s| rest.strip_suffix(')') == Some(s.words()))?;
        let (number, unit) = size.split_once(' ')?;
        let number: f64 = number.parse().ok()?;
        let shift = match unit {
            "B" => 0,
            "KiB" => 10,
            "MiB" => 20,
            "GiB" => 30,
            "TiB" => 40,
            "PiB" => 50,
            _ => return None,
        };
        let bytes = number * (1u64 << shift) as f64;
        (bytes.is_finite() && bytes >= 0.0 && bytes < u64::MAX as f64)
            .then(|| MemoryTotal { bytes: bytes.round() as u64, source })
    }
}

/// A size in the largest binary unit that divides it exactly: `32 KiB`, `1280 KiB`, `32 MiB`.
pub fn exact_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024 && value.is_multiple_of(1024) && unit + 1 < UNITS.len() {
        value /= 1024;
        unit += 1;
    }
    format!("{value} {}", UNITS[unit])
}

/// A page size as people write it: `4K`, `2M`, `1G`.
pub fn page_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => format!("{b}B"),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The machine's facts, in the order a reader expects (identity, topology, caches, TLBs, pages,
/// memory, kernel settings, mitigations, virtualization). No value is empty.
pub fn machine_facts(t: &Topology) -> Vec<Fact> {
    let mut out = Vec::new();
    identity(t, &mut out);
    layout(t, &mut out);
    caches(t, &mut out);
    tlbs(t, &mut out);
    match &t.environment {
        Some(env) => environment(t, env, &mut out),
        None => {
            for setting in [
                "Page sizes",
                "Memory",
                "Memory devices",
                "Memory peak",
                "Kernel",
                "THP",
                "Governor",
                "numa_balancing",
                "Mitigations",
                "Hypervisor",
            ] {
                fact(&mut out, setting, unrecorded(t));
            }
        }
    }
    out
}

fn identity(t: &Topology, out: &mut Vec<Fact>) {
    let m = &t.machine;
    let cpuid = m.cpuid.as_ref();
    let model = m.cpu_model.clone().or_else(|| cpuid.and_then(|c| c.brand.clone()));
    fact(out, "CPU model", model.unwrap_or_else(|| "not reported".into()));
    let vendor = m.cpu_vendor.clone().or_else(|| cpuid.map(|c| c.vendor.clone()));
    fact(out, "CPU vendor", vendor.unwrap_or_else(|| "not reported".into()));
    fact(out, "Architecture", m.architecture.clone().unwrap_or_else(|| "not reported".into()));
    let fms = |f: u32, mo: u32, s: u32| {
        format!("family {f} ({f:#x}), model {mo} ({mo:#x}), stepping {s}")
    };
    let kernel = match (m.family, m.model_number, m.stepping) {
        (Some(f), Some(mo), Some(s)) => Some((f, mo, s)),
        _ => None,
    };
    let value = match (cpuid, kernel) {
        (Some(c), Some(k)) if (c.family, c.model, c.stepping) != k => format!(
            "{} (CPUID); /proc/cpuinfo says {}",
            fms(c.family, c.model, c.stepping),
            fms(k.0, k.1, k.2)
        ),
        (Some(c), _) => fms(c.family, c.model, c.stepping),
        (None, Some(k)) => fms(k.0, k.1, k.2),
        (None, None) if recorded_elsewhere(t) => {
            "not reported (x86 family/model/stepping; this is not x86)".to_string()
        }
        (None, None) => unrecorded(t).to_string(),
    };
    fact(out, "Family/model/stepping", value);
    let microcode = match &m.microcode {
        Some(code) => code.clone(),
        None if m.cpuid.is_some() || m.family.is_some() || recorded_elsewhere(t) => {
            "not reported by the kernel".into()
        }
        None => unrecorded(t).into(),
    };
    fact(out, "Microcode", microcode);
}

fn layout(t: &Topology, out: &mut Vec<Fact>) {
    let m = &t.machine;
    fact(
        out,
        "Sockets",
        if m.packages == 0 { "not reported".into() } else { m.packages.to_string() },
    );
    let per_socket = match (m.cores, m.packages) {
        (0, _) | (_, 0) => "not reported".to_string(),
        (c, p) if c % p == 0 => (c / p).to_string(),
        (c, p) => format!("{:.1} on average ({c} cores over {p} sockets)", c as f64 / p as f64),
    };
    fact(out, "Cores per socket", per_socket);
    let threads = t.cpus.iter().filter(|c| c.online).map(|c| c.smt_siblings.len()).max();
    fact(out, "Threads per core", threads.map_or("not reported".into(), |n| n.max(1).to_string()));
    let online = t.online_cpu_ids();
    let offline = t.offline_cpu_ids();
    let mut cpus = format!("{} online ({})", online.len(), idlist::format(&online));
    if !offline.is_empty() {
        let _ = write!(cpus, "; {} offline ({})", offline.len(), idlist::format(&offline));
    }
    fact(out, "Logical CPUs", cpus);
    let memory_only = t.nodes.iter().filter(|n| n.memory_only).count();
    let mut nodes = t.nodes.len().to_string();
    if memory_only > 0 {
        let _ = write!(nodes, " ({memory_only} memory-only)");
    }
    fact(out, "NUMA nodes", nodes);
}

fn cache_setting(c: &Cache) -> String {
    format!("{} cache", c.name())
}

/// One cache instance's geometry: `32 KiB, 8-way, 64 B line, 64 sets`.
fn geometry(c: &Cache) -> String {
    let mut text = exact_bytes(c.size_bytes);
    if let Some(ways) = c.associativity {
        let _ = write!(text, ", {}", Associativity::Ways(ways));
    }
    if let Some(line) = c.line_bytes {
        let _ = write!(text, ", {line} B line");
    }
    if let Some(sets) = c.sets {
        let _ = write!(text, ", {sets} sets");
    }
    text
}

fn caches(t: &Topology, out: &mut Vec<Fact>) {
    if t.caches.is_empty() {
        fact(out, "Caches", "not reported");
    }
    let mut names: Vec<(u8, bool, String)> = Vec::new();
    for c in &t.caches {
        let key = (c.level, c.kind == CacheKind::Unified, cache_setting(c));
        if !names.contains(&key) {
            names.push(key);
        }
    }
    names.sort();
    for (_, _, setting) in names {
        let of_level: Vec<&Cache> =
            t.caches.iter().filter(|c| cache_setting(c) == setting).collect();
        // Group identical instances: (geometry, CPUs sharing each) → count.
        let mut groups: Vec<(String, usize, usize)> = Vec::new();
        for c in &of_level {
            let key = (geometry(c), c.cpus.len());
            match groups.iter_mut().find(|g| (g.0.as_str(), g.1) == (key.0.as_str(), key.1)) {
                Some(g) => g.2 += 1,
                None => groups.push((key.0, key.1, 1)),
            }
        }
        let value: Vec<String> = groups
            .iter()
            .map(|(geometry, sharing, count)| {
                format!(
                    "{geometry}, shared by {} ({})",
                    plural(*sharing, "CPU", "CPUs"),
                    plural(*count, "instance", "instances")
                )
            })
            .collect();
        fact(out, &setting, value.join("; "));
    }
    fact(out, "Caches vs CPUID", cache_check_text(t));
}

/// How the caches the kernel reports (sysfs, via hwloc) compare with CPUID's description.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheCheck {
    /// Cache names compared on both sides (`L1d`, `L2`, `L3`).
    pub compared: Vec<String>,
    /// Each disagreement, in words: `L3 size: 32 MiB (sysfs) vs 16 MiB (CPUID 0x80000006)`.
    pub differences: Vec<String>,
}

fn cpuid_type(kind: CacheKind) -> CacheType {
    match kind {
        CacheKind::Data => CacheType::Data,
        CacheKind::Unified => CacheType::Unified,
    }
}

/// Compares every data and unified cache level in the topology with CPUID's entry of the same
/// level and type: size, ways, line size and (when sysfs gave it) the set count. A level on
/// one side only is a difference too. `None` when no CPUID caches were recorded.
pub fn cache_check(t: &Topology) -> Option<CacheCheck> {
    let cpuid = t.machine.cpuid.as_ref().filter(|c| !c.caches.is_empty())?;
    let mut check = CacheCheck::default();
    let mut seen: Vec<(u8, CacheKind)> = Vec::new();
    for c in &t.caches {
        if seen.contains(&(c.level, c.kind)) {
            continue;
        }
        seen.push((c.level, c.kind));
        let name = c.name();
        let Some(theirs) = cpuid.cache(c.level, cpuid_type(c.kind)) else {
            check.differences.push(format!("{name}: not described by CPUID"));
            continue;
        };
        check.compared.push(name.clone());
        // Hybrid CPUs have several geometries per level: any instance may match.
        let instances: Vec<&Cache> =
            t.caches.iter().filter(|o| o.level == c.level && o.kind == c.kind).collect();
        if instances.iter().any(|o| agrees(o, theirs).is_empty()) {
            continue;
        }
        for problem in agrees(c, theirs) {
            check.differences.push(format!("{name} {problem} (CPUID {})", theirs.leaf));
        }
    }
    for theirs in cpuid.caches.iter().filter(|c| c.kind != CacheType::Instruction) {
        let kind =
            if theirs.kind == CacheType::Data { CacheKind::Data } else { CacheKind::Unified };
        if !seen.contains(&(theirs.level, kind)) {
            let name = if kind == CacheKind::Data {
                format!("L{}d", theirs.level)
            } else {
                format!("L{}", theirs.level)
            };
            check.differences.push(format!(
                "{name}: {} in CPUID {}, not reported by the kernel",
                exact_bytes(theirs.size_bytes),
                theirs.leaf
            ));
        }
    }
    Some(check)
}

/// What differs between a kernel-reported cache and CPUID's, one phrase each.
fn agrees(ours: &Cache, theirs: &crate::cpuid::CpuidCache) -> Vec<String> {
    let mut problems = Vec::new();
    if ours.size_bytes != theirs.size_bytes {
        problems.push(format!(
            "size: {} (sysfs) vs {}",
            exact_bytes(ours.size_bytes),
            exact_bytes(theirs.size_bytes)
        ));
    }
    if let (Some(ways), Associativity::Ways(w)) = (ours.associativity, theirs.associativity) {
        if ways != w {
            problems.push(format!("ways: {ways} (sysfs) vs {w}"));
        }
    }
    if let Some(line) = ours.line_bytes {
        if line != u64::from(theirs.line_bytes) {
            problems.push(format!("line: {line} B (sysfs) vs {} B", theirs.line_bytes));
        }
    }
    if let Some(sets) = ours.sets {
        if u64::from(sets) != theirs.sets {
            problems.push(format!("sets: {sets} (sysfs) vs {}", theirs.sets));
        }
    }
    problems
}

fn cache_check_text(t: &Topology) -> String {
    match cache_check(t) {
        Some(check) if check.differences.is_empty() => {
            format!("agree ({}: size, ways, line, sets)", check.compared.join(", "))
        }
        Some(check) => format!("differ: {}", check.differences.join("; ")),
        None => no_cpuid(t, "no CPUID cache leaves"),
    }
}

fn is_x86(t: &Topology) -> bool {
    matches!(t.machine.architecture.as_deref(), Some("x86_64" | "x86" | "i386" | "i686"))
}

/// A live topology of another architecture: the x86-only facts are absent because they do not
/// exist there, not because an older platscope did not record them.
fn recorded_elsewhere(t: &Topology) -> bool {
    t.source == "live" && t.machine.architecture.is_some() && !is_x86(t)
}

/// Why there is nothing from CPUID: not recorded, or not x86.
fn no_cpuid(t: &Topology, what: &str) -> String {
    match &t.machine.cpuid {
        Some(_) => format!("not available: {what}"),
        None if recorded_elsewhere(t) => "not available: CPUID is x86-only".to_string(),
        None => unrecorded(t).to_string(),
    }
}

fn tlb_setting(tlb: &Tlb) -> String {
    let pages: Vec<String> = tlb.page_bytes.iter().map(|&p| page_label(p)).collect();
    format!("L{} {} ({})", tlb.level, tlb.kind.short(), pages.join("/"))
}

fn tlbs(t: &Topology, out: &mut Vec<Fact>) {
    let Some(cpuid) = t.machine.cpuid.as_ref().filter(|c| !c.tlbs.is_empty()) else {
        let why = t.machine.cpuid.as_ref().and_then(|c| c.tlbs_absent.as_deref());
        let why = why.map_or("CPUID describes no TLBs".to_string(), |w| format!("CPUID: {w}"));
        fact(out, "TLBs", no_cpuid(t, &why));
        return;
    };
    for tlb in &cpuid.tlbs {
        let mut value =
            plural(usize::try_from(tlb.entries).unwrap_or(usize::MAX), "entry", "entries");
        if let Some(a) = tlb.associativity {
            let _ = write!(value, ", {a}");
        }
        fact(out, &tlb_setting(tlb), value);
    }
}

fn governors(env: &Environment) -> String {
    if env.governors.is_empty() {
        return "none (no cpufreq driver: frequency set by firmware or hypervisor)".into();
    }
    let all: Vec<String> = env
        .governors
        .iter()
        .map(|g| format!("{} (CPUs {})", g.name, idlist::format(&g.cpus)))
        .collect();
    all.join("; ")
}

fn page_sizes(env: &Environment) -> String {
    let mut parts = vec![format!("{} base", page_label(env.page_bytes))];
    if let Some(thp) = &env.thp_enabled {
        match env.thp_pmd_bytes {
            Some(pmd) => parts.push(format!("THP {} ({thp})", page_label(pmd))),
            None => parts.push(format!("THP ({thp})")),
        }
    }
    let mthp: Vec<String> = env
        .mthp
        .iter()
        .filter(|m| m.enabled != "never" && Some(m.page_bytes) != env.thp_pmd_bytes)
        .map(|m| format!("{} ({})", page_label(m.page_bytes), m.enabled))
        .collect();
    if !mthp.is_empty() {
        parts.push(format!("mTHP {}", mthp.join(", ")));
    }
    let hugetlb: Vec<String> = env.hugepages.iter().map(|p| page_label(p.page_bytes)).collect();
    if hugetlb.is_empty() {
        parts.push("no hugetlb".into());
    } else {
        parts.push(format!("hugetlb {}", hugetlb.join(", ")));
    }
    parts.join("; ")
}

/// `4 × 16 GiB DDR4 at 2933 MT/s; 4 of 8 slots populated`.
fn memory_devices(devices: &[MemoryDevice]) -> String {
    let populated: Vec<&MemoryDevice> = devices.iter().filter(|d| d.size_mib > 0).collect();
    if populated.is_empty() {
        return format!(
            "no populated memory devices in the DMI tables ({})",
            plural(devices.len(), "slot", "slots")
        );
    }
    let mut groups: Vec<(String, usize)> = Vec::new();
    for d in &populated {
        let mut label = exact_bytes(d.size_mib << 20);
        if let Some(kind) = &d.memory_type {
            let _ = write!(label, " {kind}");
        }
        if d.mts > 0 {
            let _ = write!(label, " at {} MT/s", d.mts);
        } else {
            label.push_str(" (speed not reported)");
        }
        match groups.iter_mut().find(|g| g.0 == label) {
            Some(g) => g.1 += 1,
            None => groups.push((label, 1)),
        }
    }
    let kinds: Vec<String> = groups.iter().map(|(label, n)| format!("{n} × {label}")).collect();
    format!("{}; {} of {} slots populated", kinds.join(" + "), populated.len(), devices.len())
}

fn memory_peak(devices: &[MemoryDevice]) -> String {
    match peak_gbs(devices) {
        Some(peak) => {
            let n = devices.iter().filter(|d| d.size_mib > 0 && d.mts > 0).count();
            format!(
                "{peak:.1} GB/s theoretical (Σ MT/s × 8 bytes over {}; assumes one device per \
                 channel: SMBIOS does not give channels)",
                plural(n, "device", "devices")
            )
        }
        None => "not available: no device speeds in the DMI tables".into(),
    }
}

fn environment(t: &Topology, env: &Environment, out: &mut Vec<Fact>) {
    fact(out, "Page sizes", page_sizes(env));
    let memory = match env.machine_memory_bytes {
        Some(bytes) => MemoryTotal { bytes, source: MemorySource::MemTotal },
        None => MemoryTotal {
            bytes: t.nodes.iter().map(|n| n.total_bytes).sum(),
            source: MemorySource::SumOfNodes,
        },
    };
    fact(out, "Memory", FactValue::Memory(memory).to_string());
    let (devices, peak) = match &env.dmi_memory {
        Some(DmiMemory::Devices(d)) => (memory_devices(d), memory_peak(d)),
        Some(DmiMemory::Unavailable(why)) => {
            (format!("not available: {why}"), format!("not available: {why}"))
        }
        None => (unrecorded(t).to_string(), unrecorded(t).to_string()),
    };
    fact(out, "Memory devices", devices);
    fact(out, "Memory peak", peak);
    let or_not = |v: &Option<String>| v.clone().unwrap_or_else(|| "not reported".into());
    fact(out, "Kernel", or_not(&env.kernel));
    let thp = match (&env.thp_enabled, &env.thp_defrag) {
        (Some(enabled), Some(defrag)) => format!("{enabled} (defrag {defrag})"),
        (Some(enabled), None) => enabled.clone(),
        (None, _) => "not available (no transparent_hugepage in sysfs)".into(),
    };
    fact(out, "THP", thp);
    fact(out, "Governor", governors(env));
    let balancing = match env.numa_balancing.as_deref() {
        Some("0") => "0 (off)".to_string(),
        Some("1") => "1 (on)".to_string(),
        Some("2") => "2 (memory tiering)".to_string(),
        Some(other) => other.to_string(),
        None => "not available (kernel without NUMA balancing)".to_string(),
    };
    fact(out, "numa_balancing", balancing);
    fact(out, "zone_reclaim_mode", or_not(&env.zone_reclaim_mode));
    fact(out, "Clocksource", or_not(&env.clocksource));
    fact(out, "SMT control", or_not(&env.smt_control));
    mitigations(t, env, out);
    fact(
        out,
        "Hypervisor",
        env.hypervisor.clone().unwrap_or_else(|| FactValue::BareMetal.to_string()),
    );
    fact(out, "System", env.system.clone().unwrap_or_else(|| "not reported (no DMI)".into()));
    let bios = match &env.bios {
        Some(Bios { version: Some(version), date: Some(date) }) => format!("{version} ({date})"),
        Some(Bios { version: Some(version), date: None }) => version.clone(),
        Some(Bios { version: None, .. }) => "not reported (no DMI)".into(),
        None => unrecorded(t).into(),
    };
    fact(out, "BIOS", bios);
}

fn mitigations(t: &Topology, env: &Environment, out: &mut Vec<Fact>) {
    if env.vulnerabilities.is_empty() {
        // Every platscope that reads vulnerabilities also records `dmi_memory`.
        let why = if env.dmi_memory.is_none() {
            unrecorded(t)
        } else {
            "not reported (no /sys/devices/system/cpu/vulnerabilities)"
        };
        fact(out, "Mitigations", why);
        return;
    }
    let count = |class| env.vulnerabilities.iter().filter(|v| v.class() == class).count();
    let mut summary = vec![
        format!("{} vulnerable", count(VulnerabilityClass::Vulnerable)),
        format!("{} mitigated", count(VulnerabilityClass::Mitigated)),
        format!("{} not affected", count(VulnerabilityClass::NotAffected)),
    ];
    let unknown = count(VulnerabilityClass::Unknown);
    if unknown > 0 {
        summary.push(format!("{unknown} unknown"));
    }
    fact(out, "Mitigations", summary.join(", "));
    let mut listed: Vec<_> = env
        .vulnerabilities
        .iter()
        .filter(|v| v.class() != VulnerabilityClass::NotAffected)
        .collect();
    listed.sort_by_key(|v| (v.class(), v.name.clone()));
    for v in listed {
        fact(out, &format!("Vulnerability {}", v.name), v.status.clone());
    }
    let not_affected: Vec<&str> = env
        .vulnerabilities
        .iter()
        .filter(|v| v.class() == VulnerabilityClass::NotAffected)
        .map(|v| v.name.as_str())
        .collect();
    if !not_affected.is_empty() {
        fact(out, "Not affected by", not_affected.join(", "));
    }
}

/// Every setting whose value differs between `this` and `baseline`, in `this`'s order and then
/// the baseline's own; a setting present on one side only differs, with [`MISSING`] on the
/// other.
pub fn config_diff(this: &[Fact], baseline: &[Fact]) -> Vec<Difference> {
    let value = |facts: &[Fact], setting: &str| {
        facts.iter().find(|f| f.setting == setting).map(|f| f.value.clone())
    };
    let mut settings: Vec<&str> = this.iter().map(|f| f.setting.as_str()).collect();
    for f in baseline {
        if !settings.contains(&f.setting.as_str()) {
            settings.push(&f.setting);
        }
    }
    settings
        .into_iter()
        .filter_map(|setting| {
            let (a, b) = (value(this, setting), value(baseline, setting));
            (a != b).then(|| Difference {
                setting: setting.to_string(),
                this: a.unwrap_or_else(|| MISSING.to_string()),
                baseline: b.unwrap_or_else(|| MISSING.to_string()),
            })
        })
        .collect()
}

/// The CPUID facts of a topology, when recorded (for callers that want the raw decode).
pub fn cpuid(t: &Topology) -> Option<&CpuidInfo> {
    t.machine.cpuid.as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuid::Dump;
    use crate::sysfs::{MthpSize, Vulnerability};
    use crate::{Governor, HugePagePool};

    const EPYC_CPUID: &str = include_str!("../tests/fixtures/cpuid_amd_epyc_zen3_kvm.txt");
    const EPYC_VULNERABILITIES: &str =
        include_str!("../tests/fixtures/vulnerabilities_amd_epyc_kvm_6_18.txt");

    fn vulnerabilities(text: &str) -> Vec<Vulnerability> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (name, status) = l.split_once(": ")?;
                Some(Vulnerability { name: name.into(), status: status.into() })
            })
            .collect()
    }

    fn environment() -> Environment {
        Environment {
            kernel: Some("6.18.44".into()),
            page_bytes: 4096,
            thp_enabled: Some("madvise".into()),
            thp_defrag: Some("madvise".into()),
            numa_balancing: Some("0".into()),
            zone_reclaim_mode: Some("0".into()),
            clocksource: Some("tsc".into()),
            smt_control: Some("notsupported".into()),
            hypervisor: Some("KVM".into()),
            hugepages: vec![
                HugePagePool { page_bytes: 2 << 20, total: 0, free: 0 },
                HugePagePool { page_bytes: 1 << 30, total: 0, free: 0 },
            ],
            machine_memory_bytes: Some(24 << 30),
            thp_pmd_bytes: Some(2 << 20),
            mthp: vec![
                MthpSize { page_bytes: 64 << 10, enabled: "never".into() },
                MthpSize { page_bytes: 2 << 20, enabled: "inherit".into() },
            ],
            vulnerabilities: vulnerabilities(EPYC_VULNERABILITIES),
            dmi_memory: Some(DmiMemory::Unavailable("no DMI tables".into())),
            ..Environment::default()
        }
    }

    /// Synthetic machine A: one socket, 2 cores, no SMT, this VM's CPUID and vulnerabilities.
    fn machine_a() -> Topology {
        let mut t = Topology::from_synthetic(
            "pack:1 [numa(memory=24GiB)] l3:1(size=32MiB) l2:2(size=512KiB) l1d:1(size=32KiB) core:1 pu:1",
        )
        .expect("synthetic");
        t.source = "live".into();
        t.machine.architecture = Some("x86_64".into());
        t.machine.cpu_model = Some("AMD EPYC".into());
        t.machine.cpu_vendor = Some("AuthenticAMD".into());
        (t.machine.family, t.machine.model_number, t.machine.stepping) =
            (Some(25), Some(1), Some(1));
        t.machine.microcode = Some("0x1000065".into());
        t.machine.cpuid = Some(Dump::parse(EPYC_CPUID).expect("fixture").decode());
        for c in &mut t.caches {
            (c.line_bytes, c.associativity) = (Some(64), Some(if c.level == 3 { 16 } else { 8 }));
            c.sets = Some((c.size_bytes / 64 / u64::from(c.associativity.unwrap_or(1))) as u32);
        }
        t.environment = Some(environment());
        t
    }

    /// Synthetic machine B: two sockets of 4 cores × 2 threads, Intel-like, DMI memory present,
    /// a performance governor, no CPUID recorded.
    fn machine_b() -> Topology {
        let mut t = Topology::from_synthetic(
            "pack:2 [numa(memory=64GiB)] l3:1(size=24MiB) l2:4(size=1280KiB) l1d:1(size=48KiB) core:1 pu:2",
        )
        .expect("synthetic");
        t.source = "live".into();
        t.machine.architecture = Some("x86_64".into());
        t.machine.cpu_model = Some("Intel(R) Xeon(R) Example".into());
        t.machine.microcode = Some("0x2b000603".into());
        let mut env = environment();
        env.governors = vec![Governor { name: "performance".into(), cpus: (0..16).collect() }];
        env.numa_balancing = Some("1".into());
        env.hypervisor = None;
        env.bios = Some(Bios { version: Some("2.1.3".into()), date: Some("03/14/2024".into()) });
        env.dmi_memory = Some(DmiMemory::Devices(
            (0..8)
                .map(|i| MemoryDevice {
                    size_mib: if i % 2 == 0 { 32768 } else { 0 },
                    mts: if i % 2 == 0 { 4800 } else { 0 },
                    memory_type: Some("DDR5".into()),
                    ..MemoryDevice::default()
                })
                .collect(),
        ));
        t.environment = Some(env);
        t
    }

    fn value<'a>(facts: &'a [Fact], setting: &str) -> &'a str {
        facts
            .iter()
            .find(|f| f.setting == setting)
            .map(|f| f.value.as_str())
            .unwrap_or_else(|| panic!("no {setting:?} in {facts:#?}"))
    }

    /// What a stored table holds reads back typed: the texts every version wrote, and any
    /// memory size read back shows as the same text.
    #[test]
    fn fact_values_read_back_from_the_text_stored() {
        let machine = machine_facts(&machine_a());
        assert_eq!(
            FactValue::read(value(&machine, "Memory")),
            FactValue::Memory(MemoryTotal { bytes: 24 << 30, source: MemorySource::MemTotal })
        );
        assert_eq!(FactValue::read(value(&machine, "Hypervisor")), FactValue::Text("KVM".into()));
        let bare = machine_facts(&machine_b());
        assert_eq!(FactValue::read(value(&bare, "Hypervisor")), FactValue::BareMetal);
        assert_eq!(
            FactValue::read(value(&machine, "BIOS")),
            FactValue::Unrecorded(Unrecorded::OlderVersion)
        );
        let synthetic = Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:1 pu:1")
            .expect("a synthetic topology");
        let kernel = FactValue::read(value(&machine_facts(&synthetic), "Kernel"));
        assert_eq!(kernel, FactValue::Unrecorded(Unrecorded::NotLive));
        assert!(!kernel.is_recorded());
        // Every size reads back within the decimal shown, and shows as it was stored.
        for bytes in
            [0, 1000, 1 << 20, 960 << 20, (235 << 30) / 10, 755_200 << 20, 2 << 40, u64::MAX / 2]
        {
            for source in [MemorySource::MemTotal, MemorySource::SumOfNodes] {
                let text = FactValue::Memory(MemoryTotal { bytes, source }).to_string();
                let FactValue::Memory(back) = FactValue::read(&text) else {
                    panic!("{text} does not read as memory")
                };
                assert_eq!(back.source, source);
                assert!(
                    back.bytes.abs_diff(bytes) as f64 <= bytes as f64 * 0.05 / 1024.0 + 1.0,
                    "{text}"
                );
                assert_eq!(FactValue::Memory(back).to_string(), text);
            }
        }
        assert_eq!(FactValue::read("23.5 GiB (MemTotal)").to_string(), "23.5 GiB (MemTotal)");
        for text in ["lots", "23.5 GB (MemTotal)", "23.5 GiB", "x GiB (MemTotal)", "6.1.0-25"] {
            assert_eq!(FactValue::read(text), FactValue::Text(text.into()), "{text}");
        }
    }

    #[test]
    fn facts_of_machine_a_read_as_a_reader_expects() {
        let facts = machine_facts(&machine_a());
        let settings: Vec<&str> = facts.iter().map(|f| f.setting.as_str()).collect();
        let position = |s: &str| settings.iter().position(|x| *x == s).expect(s);
        // Ordered: identity, layout, caches, TLBs, memory, kernel, mitigations, hypervisor.
        let order = [
            "CPU model",
            "Microcode",
            "Sockets",
            "Cores per socket",
            "Threads per core",
            "L1d cache",
            "L2 cache",
            "L3 cache",
            "Caches vs CPUID",
            "L1 dTLB (4K)",
            "L2 dTLB (4K)",
            "Page sizes",
            "Memory",
            "Memory peak",
            "Kernel",
            "THP",
            "Governor",
            "numa_balancing",
            "Mitigations",
            "Hypervisor",
        ];
        assert!(order.windows(2).all(|w| position(w[0]) < position(w[1])), "{settings:#?}");
        assert!(facts.iter().all(|f| !f.value.trim().is_empty()));
        assert_eq!(
            value(&facts, "Family/model/stepping"),
            "family 25 (0x19), model 1 (0x1), stepping 1"
        );
        assert_eq!(value(&facts, "Microcode"), "0x1000065");
        assert_eq!(value(&facts, "Sockets"), "1");
        assert_eq!(value(&facts, "Cores per socket"), "2");
        assert_eq!(value(&facts, "Threads per core"), "1");
        assert_eq!(
            value(&facts, "L3 cache"),
            "32 MiB, 16-way, 64 B line, 32768 sets, shared by 2 CPUs (1 instance)"
        );
        assert_eq!(
            value(&facts, "L1d cache"),
            "32 KiB, 8-way, 64 B line, 64 sets, shared by 1 CPU (2 instances)"
        );
        assert_eq!(value(&facts, "Caches vs CPUID"), "agree (L1d, L2, L3: size, ways, line, sets)");
        assert_eq!(value(&facts, "L1 dTLB (4K)"), "64 entries, fully associative");
        assert_eq!(value(&facts, "L2 dTLB (4K)"), "2048 entries, 8-way");
        assert_eq!(value(&facts, "L1 dTLB (1G)"), "64 entries, fully associative");
        assert_eq!(value(&facts, "L2 iTLB (2M/4M)"), "512 entries, 2-way");
        assert_eq!(value(&facts, "Page sizes"), "4K base; THP 2M (madvise); hugetlb 2M, 1G");
        assert_eq!(value(&facts, "Memory devices"), "not available: no DMI tables");
        assert_eq!(value(&facts, "Memory peak"), "not available: no DMI tables");
        assert_eq!(value(&facts, "Memory"), "24.0 GiB (MemTotal)");
        assert_eq!(value(&facts, "Mitigations"), "0 vulnerable, 4 mitigated, 15 not affected");
        assert_eq!(value(&facts, "Vulnerability spec_rstack_overflow"), "Mitigation: Safe RET");
        assert!(value(&facts, "Not affected by").starts_with("gather_data_sampling, ghostwrite"));
        assert_eq!(value(&facts, "Hypervisor"), "KVM");
        // Its environment predates the firmware's version.
        assert_eq!(value(&facts, "BIOS"), "not recorded (stored by an older platscope)");
        assert_eq!(
            value(&facts, "Governor"),
            "none (no cpufreq driver: frequency set by firmware or hypervisor)"
        );
    }

    #[test]
    fn facts_of_machine_b_show_dmi_memory_and_missing_cpuid() {
        let facts = machine_facts(&machine_b());
        assert!(facts.iter().all(|f| !f.value.trim().is_empty()));
        assert_eq!(value(&facts, "Sockets"), "2");
        assert_eq!(value(&facts, "Cores per socket"), "4");
        assert_eq!(value(&facts, "Threads per core"), "2");
        // hwloc gives synthetic caches 64-byte lines and no associativity.
        assert_eq!(
            value(&facts, "L2 cache"),
            "1280 KiB, 64 B line, shared by 2 CPUs (8 instances)"
        );
        assert_eq!(
            value(&facts, "Memory devices"),
            "4 × 32 GiB DDR5 at 4800 MT/s; 4 of 8 slots populated"
        );
        // 4 × 4800 MT/s × 8 bytes = 153.6 GB/s.
        assert!(value(&facts, "Memory peak").starts_with("153.6 GB/s theoretical"));
        assert_eq!(value(&facts, "Governor"), "performance (CPUs 0-15)");
        assert_eq!(value(&facts, "Hypervisor"), "none detected (bare metal)");
        assert_eq!(value(&facts, "BIOS"), "2.1.3 (03/14/2024)");
        assert_eq!(value(&facts, "TLBs"), "not recorded (stored by an older platscope)");
        assert_eq!(value(&facts, "Caches vs CPUID"), "not recorded (stored by an older platscope)");
    }

    #[test]
    fn config_diff_lists_every_differing_setting() {
        let (a, b) = (machine_facts(&machine_a()), machine_facts(&machine_b()));
        let diff = config_diff(&a, &b);
        let find = |s: &str| diff.iter().find(|d| d.setting == s);
        let sockets = find("Sockets").expect("sockets differ");
        assert_eq!((sockets.this.as_str(), sockets.baseline.as_str()), ("1", "2"));
        assert_eq!(find("numa_balancing").map(|d| d.baseline.as_str()), Some("1 (on)"));
        // Present on one side only: A has CPUID TLB rows, B has a "TLBs" row.
        let tlb = find("L1 dTLB (4K)").expect("only in A");
        assert_eq!(tlb.baseline, MISSING);
        assert_eq!(find("TLBs").map(|d| d.this.as_str()), Some(MISSING));
        // Equal settings are not listed.
        assert!(find("Kernel").is_none() && find("Mitigations").is_none());
        // Every listed setting really differs, and none that differs is missing.
        for d in &diff {
            assert_ne!(d.this, d.baseline);
        }
        let differing =
            a.iter().filter(|f| b.iter().find(|g| g.setting == f.setting) != Some(*f)).count()
                + b.iter().filter(|g| !a.iter().any(|f| f.setting == g.setting)).count();
        assert_eq!(diff.len(), differing);
        // A machine against itself: no differences.
        assert!(config_diff(&a, &a).is_empty());
        // Order: this side's order first, then baseline-only settings.
        let first_baseline_only = diff.iter().position(|d| d.this == MISSING).expect("one");
        assert!(diff[first_baseline_only..].iter().all(|d| d.this == MISSING));
    }

    #[test]
    fn cache_check_names_a_disagreement() {
        let mut t = machine_a();
        let l3 = t.caches.iter_mut().find(|c| c.level == 3).expect("L3");
        l3.size_bytes = 16 << 20;
        l3.sets = Some(16384);
        let check = cache_check(&t).expect("CPUID recorded");
        assert_eq!(check.compared, vec!["L1d", "L2", "L3"]);
        assert_eq!(
            check.differences,
            vec![
                "L3 size: 16 MiB (sysfs) vs 32 MiB (CPUID 0x8000001D)",
                "L3 sets: 16384 (sysfs) vs 32768 (CPUID 0x8000001D)"
            ]
        );
        t.caches.retain(|c| c.level != 3);
        let check = cache_check(&t).expect("CPUID recorded");
        assert_eq!(
            check.differences,
            vec!["L3: 32 MiB in CPUID 0x8000001D, not reported by the kernel"]
        );
    }

    #[test]
    fn synthetic_topologies_say_what_was_not_recorded() {
        let t =
            Topology::from_synthetic("pack:1 [numa(memory=1GB)] core:2 pu:1").expect("synthetic");
        let facts = machine_facts(&t);
        assert!(facts.iter().all(|f| !f.value.trim().is_empty()));
        assert_eq!(value(&facts, "Kernel"), "not recorded (synthetic or XML topology)");
        assert_eq!(value(&facts, "Caches"), "not reported");
        assert_eq!(value(&facts, "Hypervisor"), "not recorded (synthetic or XML topology)");
    }

    #[test]
    fn sizes_and_pages_are_exact() {
        assert_eq!(exact_bytes(1280 << 10), "1280 KiB");
        assert_eq!(exact_bytes(32 << 20), "32 MiB");
        assert_eq!(exact_bytes(1000), "1000 B");
        assert_eq!(exact_bytes(0), "0 B");
        assert_eq!(page_label(4096), "4K");
        assert_eq!(page_label(2 << 20), "2M");
        assert_eq!(page_label(1 << 30), "1G");
        assert_eq!(page_label(3 << 19), "1536K");
    }
}
