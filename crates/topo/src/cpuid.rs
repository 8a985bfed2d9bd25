//! CPUID decoded from plain register values: identity, cache geometry and TLB sizes.
//!
//! Every decoder here is a pure function of `u32` registers, so the values captured on one
//! machine (a [`Dump`]) decode the same anywhere. [`decode`] walks the leaves a vendor documents
//! for each fact, reading registers through a function you pass in: the live CPU
//! ([`read_live`]) or a captured dump.
//!
//! Sources, by fact:
//! - identity: leaf 0 (vendor), leaf 1 EAX (family/model/stepping), 0x8000_0002..4 (brand);
//! - caches: leaf 4 (Intel) or 0x8000_001D (AMD, with TOPOEXT), both "deterministic cache
//!   parameters" in the same layout; AMD's legacy 0x8000_0005/6 as a fallback;
//! - TLBs: AMD 0x8000_0005 (L1), 0x8000_0006 (L2), 0x8000_0019 (1G pages); Intel leaf 0x18
//!   (deterministic address translation parameters), else the one-byte descriptors of leaf 2.
//!
//! ```
//! use topo::cpuid::{deterministic_cache, Associativity, CacheType, Regs};
//! // Leaf 0x8000_001D subleaf 3 as captured on an AMD EPYC (Zen 3) guest: a 32 MiB L3.
//! let r = Regs { eax: 0x0000_4163, ebx: 0x03c0_003f, ecx: 0x0000_7fff, edx: 0x1 };
//! let l3 = deterministic_cache(r, "0x8000001D").unwrap();
//! assert_eq!((l3.level, l3.kind, l3.size_bytes), (3, CacheType::Unified, 32 << 20));
//! assert_eq!(l3.associativity, Associativity::Ways(16));
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

/// The four registers one CPUID query returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Regs {
    pub eax: u32,
    pub ebx: u32,
    pub ecx: u32,
    pub edx: u32,
}

/// Bits `lo..=hi` of `value`.
fn bits(value: u32, lo: u32, hi: u32) -> u32 {
    let width = hi - lo + 1;
    if width >= 32 {
        value >> lo
    } else {
        (value >> lo) & ((1 << width) - 1)
    }
}

/// How many places of a set a line (or translation) can go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Associativity {
    /// Anywhere: one set.
    Full,
    /// N-way set associative (1 = direct mapped).
    Ways(u32),
}

impl fmt::Display for Associativity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Associativity::Full => f.write_str("fully associative"),
            Associativity::Ways(1) => f.write_str("direct mapped"),
            Associativity::Ways(n) => write!(f, "{n}-way"),
        }
    }
}

/// What a cache holds, as CPUID types it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheType {
    Data,
    Instruction,
    Unified,
}

/// One cache as CPUID describes it (one instance; CPUID says nothing of how many there are).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuidCache {
    pub level: u8,
    pub kind: CacheType,
    pub size_bytes: u64,
    pub associativity: Associativity,
    pub line_bytes: u32,
    pub sets: u64,
    /// Physical line partitions (1 on every current CPU).
    pub partitions: u32,
    /// The most logical processors that can share this cache (an upper bound from the APIC ID
    /// space, not a count of the CPUs that do); `None` from the legacy AMD leaves.
    pub max_sharing: Option<u32>,
    /// The leaf it was decoded from (`4`, `0x8000001D`, `0x80000005`, `0x80000006`).
    pub leaf: String,
}

/// What a TLB translates for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TlbKind {
    Data,
    /// Intel's load-only data TLB (leaf 0x18 type 4).
    LoadOnly,
    /// Intel's store-only data TLB (leaf 0x18 type 5).
    StoreOnly,
    Instruction,
    Unified,
}

impl TlbKind {
    /// `dTLB`, `iTLB`, … as people write them.
    pub fn short(self) -> &'static str {
        match self {
            TlbKind::Data => "dTLB",
            TlbKind::LoadOnly => "dTLB loads",
            TlbKind::StoreOnly => "dTLB stores",
            TlbKind::Instruction => "iTLB",
            TlbKind::Unified => "TLB",
        }
    }
}

/// One TLB (or one page-size array of a TLB).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tlb {
    pub level: u8,
    pub kind: TlbKind,
    /// The page sizes it holds, ascending, in bytes.
    pub page_bytes: Vec<u64>,
    pub entries: u64,
    /// `None` when the encoding does not say.
    pub associativity: Option<Associativity>,
    /// The leaf it was decoded from (`0x80000005`, `0x18`, `2`, …).
    pub leaf: String,
}

/// Everything [`decode`] reads from CPUID.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuidInfo {
    /// The 12-byte vendor string: `GenuineIntel`, `AuthenticAMD`, `HygonGenuine`, …
    pub vendor: String,
    /// The processor brand string (0x8000_0002..4), trimmed; `None` when empty or absent.
    pub brand: Option<String>,
    /// Display family, model and stepping (leaf 1), extended fields folded in.
    pub family: u32,
    pub model: u32,
    pub stepping: u32,
    /// Data, instruction and unified caches, by level then type.
    pub caches: Vec<CpuidCache>,
    /// TLBs, by level, kind and smallest page size.
    pub tlbs: Vec<Tlb>,
    /// Why `tlbs` is empty, in words (`leaf 2 defers to leaf 0x18, beyond the highest basic
    /// leaf 0xd`); `None` when TLBs were found, and in topologies stored before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlbs_absent: Option<String>,
}

impl CpuidInfo {
    /// AMD or Hygon (Hygon's Dhyana parts are Zen derivatives and use AMD's leaves).
    pub fn is_amd_like(&self) -> bool {
        matches!(self.vendor.as_str(), "AuthenticAMD" | "HygonGenuine")
    }

    /// The cache of this level and type, when CPUID describes one.
    pub fn cache(&self, level: u8, kind: CacheType) -> Option<&CpuidCache> {
        self.caches.iter().find(|c| c.level == level && c.kind == kind)
    }
}

/// The vendor string of leaf 0: EBX, EDX, ECX as ASCII.
pub fn vendor(leaf0: Regs) -> String {
    let bytes: Vec<u8> =
        [leaf0.ebx, leaf0.edx, leaf0.ecx].iter().flat_map(|r| r.to_le_bytes()).collect();
    String::from_utf8_lossy(&bytes).trim_end_matches('\0').trim().to_string()
}

/// Display (family, model, stepping) from leaf 1 EAX, by the rule both vendors document: the
/// extended family is added when the base family is 0xF; the extended model is the high nibble
/// when the base family is 0x6 or 0xF (Intel SDM Vol. 2A, CPUID; AMD APM Vol. 3, Fn0000_0001 —
/// AMD's family-6 parts have a zero extended model, so one rule serves both).
pub fn signature(eax: u32) -> (u32, u32, u32) {
    let stepping = bits(eax, 0, 3);
    let base_model = bits(eax, 4, 7);
    let base_family = bits(eax, 8, 11);
    let ext_model = bits(eax, 16, 19);
    let ext_family = bits(eax, 20, 27);
    let family = if base_family == 0xF { base_family + ext_family } else { base_family };
    let model = if base_family == 0x6 || base_family == 0xF {
        (ext_model << 4) | base_model
    } else {
        base_model
    };
    (family, model, stepping)
}

/// The brand string from leaves 0x8000_0002, 3 and 4 (16 ASCII bytes each, NUL-padded).
pub fn brand(leaves: [Regs; 3]) -> Option<String> {
    let bytes: Vec<u8> = leaves
        .iter()
        .flat_map(|r| [r.eax, r.ebx, r.ecx, r.edx])
        .flat_map(u32::to_le_bytes)
        .take_while(|&b| b != 0)
        .collect();
    let text = String::from_utf8_lossy(&bytes);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some(text)
}

/// One subleaf of the deterministic cache parameters: Intel leaf 4, AMD 0x8000_001D (same
/// layout). EAX: type 4:0 (0 = no more caches), level 7:5, fully associative bit 9, sharing
/// 25:14 (+1); EBX: line size 11:0 (+1), partitions 21:12 (+1), ways 31:22 (+1); ECX: sets − 1.
/// `None` for the terminating null entry or a type this model does not know.
pub fn deterministic_cache(r: Regs, leaf: &str) -> Option<CpuidCache> {
    let kind = match bits(r.eax, 0, 4) {
        1 => CacheType::Data,
        2 => CacheType::Instruction,
        3 => CacheType::Unified,
        _ => return None,
    };
    let level = u8::try_from(bits(r.eax, 5, 7)).ok().filter(|&l| l > 0)?;
    let line_bytes = bits(r.ebx, 0, 11) + 1;
    let partitions = bits(r.ebx, 12, 21) + 1;
    let ways = bits(r.ebx, 22, 31) + 1;
    let sets = u64::from(r.ecx) + 1;
    let fully = bits(r.eax, 9, 9) == 1;
    Some(CpuidCache {
        level,
        kind,
        size_bytes: u64::from(ways) * u64::from(partitions) * u64::from(line_bytes) * sets,
        associativity: if fully { Associativity::Full } else { Associativity::Ways(ways) },
        line_bytes,
        sets,
        partitions,
        max_sharing: Some(bits(r.eax, 14, 25) + 1),
        leaf: leaf.to_string(),
    })
}

/// AMD's 8-bit L1 associativity (0x8000_0005): 0 reserved, 0xFF fully associative, else ways.
pub fn amd_l1_associativity(code: u32) -> Option<Associativity> {
    match code {
        0 => None,
        0xFF => Some(Associativity::Full),
        n => Some(Associativity::Ways(n)),
    }
}

/// AMD's 4-bit L2/L3/TLB associativity code (0x8000_0006, 0x8000_0019), per the AMD CPUID
/// specification (pub. 25481): 1, 2, 4 ways as written, 6 → 8, 8 → 16, A → 32, B → 48, C → 64,
/// D → 96, E → 128, F → fully associative. 0 means disabled; 9 (Zen and later) means "see
/// 0x8000_001D"; the other codes are reserved. `None` for all of those.
pub fn amd_encoded_associativity(code: u32) -> Option<Associativity> {
    let ways = match code {
        0x1 => 1,
        0x2 => 2,
        0x4 => 4,
        0x6 => 8,
        0x8 => 16,
        0xA => 32,
        0xB => 48,
        0xC => 64,
        0xD => 96,
        0xE => 128,
        0xF => return Some(Associativity::Full),
        _ => return None,
    };
    Some(Associativity::Ways(ways))
}

const K4: u64 = 4 << 10;
const M2: u64 = 2 << 20;
const M4: u64 = 4 << 20;
const G1: u64 = 1 << 30;

fn tlb(
    level: u8,
    kind: TlbKind,
    pages: &[u64],
    entries: u64,
    associativity: Option<Associativity>,
    leaf: &str,
) -> Tlb {
    Tlb { level, kind, page_bytes: pages.to_vec(), entries, associativity, leaf: leaf.to_string() }
}

/// An AMD L1 TLB register of 0x8000_0005 (EAX: 2M/4M pages, EBX: 4K pages): data TLB
/// associativity 31:24 and entries 23:16, instruction TLB associativity 15:8 and entries 7:0.
/// An empty half (0 entries) is left out.
pub fn amd_l1_tlbs(reg: u32, pages: &[u64]) -> Vec<Tlb> {
    let half = |kind, assoc_at: u32, entries_at: u32| {
        let entries = bits(reg, entries_at, entries_at + 7);
        (entries > 0).then(|| {
            let assoc = amd_l1_associativity(bits(reg, assoc_at, assoc_at + 7));
            tlb(1, kind, pages, u64::from(entries), assoc, "0x80000005")
        })
    };
    [half(TlbKind::Data, 24, 16), half(TlbKind::Instruction, 8, 0)].into_iter().flatten().collect()
}

/// An AMD TLB register in the 16-bit layout of 0x8000_0006 and 0x8000_0019: data TLB
/// associativity code 31:28 and entries 27:16, instruction TLB code 15:12 and entries 11:0.
/// A half with code 0 (disabled) or no entries is left out.
pub fn amd_tlbs(reg: u32, level: u8, pages: &[u64], leaf: &str) -> Vec<Tlb> {
    let half = |kind, code_at: u32, entries_at: u32| {
        let code = bits(reg, code_at, code_at + 3);
        let entries = bits(reg, entries_at, entries_at + 11);
        (code != 0 && entries > 0).then(|| {
            tlb(level, kind, pages, u64::from(entries), amd_encoded_associativity(code), leaf)
        })
    };
    [half(TlbKind::Data, 28, 16), half(TlbKind::Instruction, 12, 0)].into_iter().flatten().collect()
}

/// AMD's legacy cache leaves, for CPUs without 0x8000_001D: L1d (0x8000_0005 ECX) and L1i (EDX):
/// size KiB 31:24, associativity 23:16, line 7:0; L2 (0x8000_0006 ECX): size KiB 31:16,
/// associativity code 15:12, line 7:0; L3 (EDX): size in 512 KiB units 31:18, code 15:12, line
/// 7:0. A cache whose associativity is not encoded (code 9: "see 0x8000_001D") is left out.
pub fn amd_legacy_caches(l1: Regs, l2: Regs) -> Vec<CpuidCache> {
    let make = |level: u8, kind, size_bytes: u64, assoc: Option<Associativity>, line: u32, leaf| {
        let assoc = assoc?;
        if size_bytes == 0 || line == 0 {
            return None;
        }
        let ways = match assoc {
            Associativity::Full => size_bytes / u64::from(line),
            Associativity::Ways(w) => u64::from(w),
        };
        Some(CpuidCache {
            level,
            kind,
            size_bytes,
            associativity: assoc,
            line_bytes: line,
            sets: size_bytes / u64::from(line) / ways.max(1),
            partitions: 1,
            max_sharing: None,
            leaf: String::from(leaf),
        })
    };
    let l1_cache = |reg: u32, kind| {
        make(
            1,
            kind,
            u64::from(bits(reg, 24, 31)) << 10,
            amd_l1_associativity(bits(reg, 16, 23)),
            bits(reg, 0, 7),
            "0x80000005",
        )
    };
    [
        l1_cache(l1.ecx, CacheType::Data),
        l1_cache(l1.edx, CacheType::Instruction),
        make(
            2,
            CacheType::Unified,
            u64::from(bits(l2.ecx, 16, 31)) << 10,
            amd_encoded_associativity(bits(l2.ecx, 12, 15)),
            bits(l2.ecx, 0, 7),
            "0x80000006",
        ),
        make(
            3,
            CacheType::Unified,
            u64::from(bits(l2.edx, 18, 31)) * (512 << 10),
            amd_encoded_associativity(bits(l2.edx, 12, 15)),
            bits(l2.edx, 0, 7),
            "0x80000006",
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// One subleaf of Intel's leaf 0x18 (deterministic address translation parameters): EBX page
/// sizes in bits 0–3 (4K, 2M, 4M, 1G) and ways 31:16; ECX sets; EDX type 4:0 (0 = invalid
/// subleaf, 1 data, 2 instruction, 3 unified, 4 load-only, 5 store-only), level 7:5, fully
/// associative bit 8. Entries are ways × sets.
pub fn intel_tlb_leaf18(r: Regs) -> Option<Tlb> {
    let kind = match bits(r.edx, 0, 4) {
        1 => TlbKind::Data,
        2 => TlbKind::Instruction,
        3 => TlbKind::Unified,
        4 => TlbKind::LoadOnly,
        5 => TlbKind::StoreOnly,
        _ => return None,
    };
    let level = u8::try_from(bits(r.edx, 5, 7)).ok().filter(|&l| l > 0)?;
    let pages: Vec<u64> = [K4, M2, M4, G1]
        .iter()
        .enumerate()
        .filter(|(i, _)| r.ebx >> i & 1 == 1)
        .map(|(_, &p)| p)
        .collect();
    let ways = bits(r.ebx, 16, 31);
    let entries = u64::from(ways) * u64::from(r.ecx);
    if pages.is_empty() || entries == 0 {
        return None;
    }
    let fully = bits(r.edx, 8, 8) == 1;
    let associativity = if fully { Associativity::Full } else { Associativity::Ways(ways) };
    Some(tlb(level, kind, &pages, entries, Some(associativity), "0x18"))
}

/// What leaf 2's descriptor bytes say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leaf2 {
    /// TLBs named by descriptors this decoder knows.
    pub tlbs: Vec<Tlb>,
    /// Descriptor 0xFF: cache parameters are in leaf 4 only.
    pub caches_in_leaf4: bool,
    /// Descriptor 0xFE: TLB parameters are in leaf 0x18 only.
    pub tlbs_in_leaf18: bool,
    /// Descriptor bytes that are not TLBs this decoder knows (caches, prefetch, unknown).
    pub other: Vec<u8>,
}

/// The TLBs one leaf-2 descriptor byte names, from the table in the Intel SDM Vol. 2A
/// ("Encoding of CPUID Leaf 2 Descriptors"). Only TLB descriptors are decoded; levels follow
/// the SDM's words: "Data TLB0" and plain data/instruction TLBs are first level, "shared
/// 2nd-level TLB"/"STLB" is second level.
pub fn leaf2_descriptor(byte: u8) -> Vec<Tlb> {
    use Associativity::{Full, Ways};
    use TlbKind::{Data, Instruction, Unified};
    let one = |kind, pages: &[u64], entries, assoc| vec![tlb(1, kind, pages, entries, assoc, "2")];
    match byte {
        0x01 => one(Instruction, &[K4], 32, Some(Ways(4))),
        0x02 => one(Instruction, &[M4], 2, Some(Full)),
        0x03 => one(Data, &[K4], 64, Some(Ways(4))),
        0x04 => one(Data, &[M4], 8, Some(Ways(4))),
        0x05 => one(Data, &[M4], 32, Some(Ways(4))),
        0x0B => one(Instruction, &[M4], 4, Some(Ways(4))),
        0x4F => one(Instruction, &[K4], 32, None),
        0x50 => one(Instruction, &[K4, M2, M4], 64, None),
        0x51 => one(Instruction, &[K4, M2, M4], 128, None),
        0x52 => one(Instruction, &[K4, M2, M4], 256, None),
        0x55 => one(Instruction, &[M2, M4], 7, Some(Full)),
        0x56 => one(Data, &[M4], 16, Some(Ways(4))),
        0x57 => one(Data, &[K4], 16, Some(Ways(4))),
        0x59 => one(Data, &[K4], 16, Some(Full)),
        0x5A => one(Data, &[M2, M4], 32, Some(Ways(4))),
        0x5B => one(Data, &[K4, M4], 64, None),
        0x5C => one(Data, &[K4, M4], 128, None),
        0x5D => one(Data, &[K4, M4], 256, None),
        0x61 => one(Instruction, &[K4], 48, Some(Full)),
        // Two arrays: 2M/4M pages 4-way 32 entries, and 1G pages 4-way 4 entries.
        0x63 => vec![
            tlb(1, Data, &[M2, M4], 32, Some(Ways(4)), "2"),
            tlb(1, Data, &[G1], 4, Some(Ways(4)), "2"),
        ],
        0x6B => one(Data, &[K4], 256, Some(Ways(8))),
        0x6C => one(Data, &[M2, M4], 128, Some(Ways(8))),
        0x6D => one(Data, &[G1], 16, Some(Full)),
        0x76 => one(Instruction, &[M2, M4], 8, Some(Full)),
        0xB0 => one(Instruction, &[K4], 128, Some(Ways(4))),
        // 2M pages 4-way 8 entries, or 4M pages 4-way 4 entries: the 2M figure.
        0xB1 => one(Instruction, &[M2], 8, Some(Ways(4))),
        0xB2 => one(Instruction, &[K4], 64, Some(Ways(4))),
        0xB3 => one(Data, &[K4], 128, Some(Ways(4))),
        0xB4 => one(Data, &[K4], 256, Some(Ways(4))),
        0xB5 => one(Instruction, &[K4], 64, Some(Ways(8))),
        0xB6 => one(Instruction, &[K4], 128, Some(Ways(8))),
        0xBA => one(Data, &[K4], 64, Some(Ways(4))),
        0xC0 => one(Data, &[K4, M4], 8, Some(Ways(4))),
        0xC1 => vec![tlb(2, Unified, &[K4, M2], 1024, Some(Ways(8)), "2")],
        // Shared 2nd-level TLB: 4K/2M pages 6-way 1536 entries; also 1G pages 4-way 16 entries.
        0xC3 => vec![
            tlb(2, Unified, &[K4, M2], 1536, Some(Ways(6)), "2"),
            tlb(2, Unified, &[G1], 16, Some(Ways(4)), "2"),
        ],
        0xCA => vec![tlb(2, Unified, &[K4], 512, Some(Ways(4)), "2")],
        _ => Vec::new(),
    }
}

/// Leaf 2's registers: AL is the iteration count (1 on every CPU since the Pentium 4) and is
/// skipped; a register with bit 31 set holds no descriptors; each other byte is a descriptor.
pub fn intel_leaf2(r: Regs) -> Leaf2 {
    let mut out = Leaf2::default();
    for (i, reg) in [r.eax, r.ebx, r.ecx, r.edx].into_iter().enumerate() {
        if reg >> 31 == 1 {
            continue;
        }
        for (j, byte) in reg.to_le_bytes().into_iter().enumerate() {
            if (i == 0 && j == 0) || byte == 0 {
                continue;
            }
            match byte {
                0xFF => out.caches_in_leaf4 = true,
                0xFE => out.tlbs_in_leaf18 = true,
                b => {
                    let tlbs = leaf2_descriptor(b);
                    if tlbs.is_empty() {
                        out.other.push(b);
                    }
                    out.tlbs.extend(tlbs);
                }
            }
        }
    }
    out
}

/// Subleaves read at most per leaf, so a corrupt or hostile register source cannot loop forever.
const MAX_SUBLEAVES: u32 = 32;

/// Decodes everything this module knows from a register source (`read(leaf, subleaf)`).
///
/// Leaf 0 and 0x8000_0000 are read first; no other leaf above the highest basic or extended
/// leaf they give is ever read. Such a leaf is not an error on real CPUs: Intel answers with the
/// highest basic leaf's values, hypervisors often with zeros, and either would decode as
/// nonsense or as "nothing there" (a KVM guest with highest basic leaf 0x16 answers leaf 0x18,
/// Intel's TLB leaf, with zeros while its leaf 2 lists the TLBs).
pub fn decode(read: &dyn Fn(u32, u32) -> Regs) -> CpuidInfo {
    let leaf0 = read(0, 0);
    let max_basic = leaf0.eax;
    let max_ext = read(0x8000_0000, 0).eax;
    let has_ext = |leaf: u32| max_ext & 0x8000_0000 != 0 && (0x8000_0000..=max_ext).contains(&leaf);
    // Every read below goes through this guard, so a missing check cannot read past the range.
    let guarded = |leaf: u32, sub: u32| {
        let within = if leaf >= 0x8000_0000 { has_ext(leaf) } else { leaf <= max_basic };
        if within {
            read(leaf, sub)
        } else {
            Regs::default()
        }
    };
    let read: &dyn Fn(u32, u32) -> Regs = &guarded;
    let vendor = vendor(leaf0);
    let (family, model, stepping) =
        if max_basic >= 1 { signature(read(1, 0).eax) } else { (0, 0, 0) };
    let brand = has_ext(0x8000_0004)
        .then(|| brand([read(0x8000_0002, 0), read(0x8000_0003, 0), read(0x8000_0004, 0)]))
        .flatten();
    let mut info = CpuidInfo {
        vendor,
        brand,
        family,
        model,
        stepping,
        caches: Vec::new(),
        tlbs: Vec::new(),
        tlbs_absent: None,
    };
    let amd = info.is_amd_like();

    // Caches: the deterministic leaf the vendor provides, else AMD's legacy leaves.
    let topoext = has_ext(0x8000_0001) && bits(read(0x8000_0001, 0).ecx, 22, 22) == 1;
    if amd && topoext && has_ext(0x8000_001D) {
        info.caches = walk_caches(read, 0x8000_001D, "0x8000001D");
    }
    if info.caches.is_empty() && !amd && max_basic >= 4 {
        info.caches = walk_caches(read, 4, "4");
    }
    if info.caches.is_empty() && amd && has_ext(0x8000_0006) {
        info.caches = amd_legacy_caches(read(0x8000_0005, 0), read(0x8000_0006, 0));
    }

    let (tlbs, absent) =
        if amd { amd_tlb_leaves(read, max_ext) } else { intel_tlbs(read, max_basic) };
    info.tlbs = tlbs;
    info.tlbs_absent = if info.tlbs.is_empty() { Some(absent) } else { None };
    info.caches.sort_by_key(|c| (c.level, c.kind != CacheType::Data, c.kind as u8));
    info.tlbs.sort_by(|a, b| {
        (a.level, a.kind, a.page_bytes.first()).cmp(&(b.level, b.kind, b.page_bytes.first()))
    });
    info
}

/// AMD's TLB leaves (0x8000_0005, 6 and 0x19), each read only when the highest extended leaf
/// `max_ext` reaches it, and the reason to give when they describe none.
fn amd_tlb_leaves(read: &dyn Fn(u32, u32) -> Regs, max_ext: u32) -> (Vec<Tlb>, String) {
    let has = |leaf: u32| max_ext & 0x8000_0000 != 0 && max_ext >= leaf;
    let mut tlbs = Vec::new();
    if has(0x8000_0005) {
        let l1 = read(0x8000_0005, 0);
        tlbs.extend(amd_l1_tlbs(l1.ebx, &[K4]));
        tlbs.extend(amd_l1_tlbs(l1.eax, &[M2, M4]));
    }
    if has(0x8000_0006) {
        let l2 = read(0x8000_0006, 0);
        tlbs.extend(amd_tlbs(l2.ebx, 2, &[K4], "0x80000006"));
        tlbs.extend(amd_tlbs(l2.eax, 2, &[M2, M4], "0x80000006"));
    }
    if has(0x8000_0019) {
        let g = read(0x8000_0019, 0);
        tlbs.extend(amd_tlbs(g.eax, 1, &[G1], "0x80000019"));
        tlbs.extend(amd_tlbs(g.ebx, 2, &[G1], "0x80000019"));
    }
    let why = if has(0x8000_0005) {
        "leaves 0x80000005/6 describe no TLB (zeros)".to_string()
    } else {
        format!("no TLB leaf 0x80000005 (highest extended leaf {max_ext:#x})")
    };
    (tlbs, why)
}

/// Intel's TLBs: leaf 0x18 when the highest basic leaf `max_basic` reaches it and it describes
/// some, else leaf 2's descriptors; with none, the reason in words.
fn intel_tlbs(read: &dyn Fn(u32, u32) -> Regs, max_basic: u32) -> (Vec<Tlb>, String) {
    let has18 = max_basic >= 0x18;
    if has18 {
        let last = read(0x18, 0).eax.min(MAX_SUBLEAVES);
        let tlbs: Vec<Tlb> =
            (0..=last).filter_map(|sub| intel_tlb_leaf18(read(0x18, sub))).collect();
        if !tlbs.is_empty() {
            return (tlbs, String::new());
        }
    }
    if max_basic < 2 {
        return (Vec::new(), format!("no TLB leaf 2 (highest basic leaf {max_basic:#x})"));
    }
    let leaf2 = intel_leaf2(read(2, 0));
    if !leaf2.tlbs.is_empty() {
        return (leaf2.tlbs, String::new());
    }
    let leaf18 = if has18 {
        "leaf 0x18 describes none (all zeros: a hypervisor that hides them)".to_string()
    } else {
        format!("leaf 0x18 is beyond the highest basic leaf {max_basic:#x}")
    };
    let leaf2_says = if leaf2.tlbs_in_leaf18 {
        "leaf 2 defers to leaf 0x18".to_string()
    } else if leaf2.other.is_empty() {
        "leaf 2 names no TLB".to_string()
    } else {
        let bytes: Vec<String> = leaf2.other.iter().map(|b| format!("{b:#04x}")).collect();
        format!("leaf 2 names no TLB this decoder knows (descriptors {})", bytes.join(" "))
    };
    (Vec::new(), format!("{leaf2_says}; {leaf18}"))
}

fn walk_caches(read: &dyn Fn(u32, u32) -> Regs, leaf: u32, name: &str) -> Vec<CpuidCache> {
    let mut caches = Vec::new();
    for sub in 0..MAX_SUBLEAVES {
        let r = read(leaf, sub);
        if bits(r.eax, 0, 4) == 0 {
            break; // the null entry ends the list
        }
        caches.extend(deterministic_cache(r, name));
    }
    caches
}

/// CPUID of the CPU this runs on; `None` off x86-64.
#[cfg(target_arch = "x86_64")]
pub fn read_live() -> Option<CpuidInfo> {
    Some(decode(&live_regs))
}

/// CPUID of the CPU this runs on; `None` off x86-64.
#[cfg(not(target_arch = "x86_64"))]
pub fn read_live() -> Option<CpuidInfo> {
    None
}

/// One CPUID query, (`leaf`, `subleaf`), on the CPU this thread runs on; `None` off x86-64.
///
/// Every other crate executes CPUID through this function (except `measure`, which `topo`
/// depends on). A leaf above the highest the CPU implements answers with zeros or another
/// leaf's values, not an error: read the highest first (leaf 0 for basic leaves, 0x8000_0000
/// for extended ones, 0x4000_0000 for a hypervisor's), as [`decode`] does.
///
/// ```
/// // Leaf 0's EBX, EDX, ECX spell the vendor, e.g. "GenuineIntel" or "AuthenticAMD".
/// if let Some(leaf0) = topo::cpuid::query(0, 0) {
///     let vendor: Vec<u8> =
///         [leaf0.ebx, leaf0.edx, leaf0.ecx].iter().flat_map(|r| r.to_le_bytes()).collect();
///     println!("{}", String::from_utf8_lossy(&vendor));
/// }
/// ```
#[cfg(target_arch = "x86_64")]
pub fn query(leaf: u32, subleaf: u32) -> Option<Regs> {
    Some(live_regs(leaf, subleaf))
}

/// One CPUID query, (`leaf`, `subleaf`), on the CPU this thread runs on; `None` off x86-64.
#[cfg(not(target_arch = "x86_64"))]
pub fn query(_leaf: u32, _subleaf: u32) -> Option<Regs> {
    None
}

#[cfg(target_arch = "x86_64")]
fn live_regs(leaf: u32, subleaf: u32) -> Regs {
    // The one place CPUID is executed (`measure` aside). It exists on every x86-64 CPU, and
    // the intrinsic is safe: it has no precondition beyond that.
    let r = std::arch::x86_64::__cpuid_count(leaf, subleaf);
    Regs { eax: r.eax, ebx: r.ebx, ecx: r.ecx, edx: r.edx }
}

/// Captured CPUID registers, one query a line:
/// `leaf 0x8000001d sub 3: eax=0x00004163 ebx=0x03c0003f ecx=0x00007fff edx=0x00000001`
/// (`#` starts a comment line). Queries not in the dump read as zeros, as CPUID answers
/// unknown subleaves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dump {
    pub entries: Vec<(u32, u32, Regs)>,
}

impl Dump {
    /// Parses a dump; the error names the first line that is not a query.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut entries = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let query = parse_query(line)
                .ok_or_else(|| format!("line {}: not a CPUID query: {line}", n + 1))?;
            entries.push(query);
        }
        Ok(Self { entries })
    }

    /// The registers captured for (leaf, subleaf), zeros when absent.
    pub fn read(&self, leaf: u32, subleaf: u32) -> Regs {
        self.entries
            .iter()
            .find(|(l, s, _)| *l == leaf && *s == subleaf)
            .map_or_else(Regs::default, |(_, _, r)| *r)
    }

    /// Decodes the dump.
    pub fn decode(&self) -> CpuidInfo {
        decode(&|leaf, sub| self.read(leaf, sub))
    }

    /// The queries [`decode`] makes on this CPU, recorded (to capture a fixture elsewhere).
    #[cfg(target_arch = "x86_64")]
    pub fn capture_live() -> Self {
        let seen = std::cell::RefCell::new(Vec::new());
        decode(&|leaf, sub| {
            let r = live_regs(leaf, sub);
            let mut seen = seen.borrow_mut();
            if !seen.iter().any(|(l, s, _)| *l == leaf && *s == sub) {
                seen.push((leaf, sub, r));
            }
            r
        });
        Self { entries: seen.into_inner() }
    }
}

/// `leaf 0x1 sub 0: eax=0x… ebx=0x… ecx=0x… edx=0x…` → (leaf, subleaf, registers).
fn parse_query(line: &str) -> Option<(u32, u32, Regs)> {
    let hex = |word: &str, key: &str| -> Option<u32> {
        let v = word.strip_prefix(key)?.trim_end_matches(':');
        u32::from_str_radix(v.strip_prefix("0x").unwrap_or(v), 16).ok()
    };
    let words: Vec<&str> = line.split_whitespace().collect();
    let ["leaf", leaf, "sub", sub, a, b, c, d] = words.as_slice() else { return None };
    let sub: u32 = sub.trim_end_matches(':').parse().ok()?;
    let regs = Regs {
        eax: hex(a, "eax=")?,
        ebx: hex(b, "ebx=")?,
        ecx: hex(c, "ecx=")?,
        edx: hex(d, "edx=")?,
    };
    Some((hex(leaf, "")?, sub, regs))
}

impl fmt::Display for Dump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (leaf, sub, r) in &self.entries {
            writeln!(
                f,
                "leaf {leaf:#010x} sub {sub}: eax={:#010x} ebx={:#010x} ecx={:#010x} edx={:#010x}",
                r.eax, r.ebx, r.ecx, r.edx
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPYC_KVM: &str = include_str!("../tests/fixtures/cpuid_amd_epyc_zen3_kvm.txt");

    fn epyc() -> CpuidInfo {
        Dump::parse(EPYC_KVM).expect("fixture parses").decode()
    }

    #[test]
    fn decodes_the_captured_amd_epyc_guest() {
        let info = epyc();
        assert_eq!(info.vendor, "AuthenticAMD");
        assert_eq!(info.brand.as_deref(), Some("AMD EPYC"));
        // /proc/cpuinfo on the same VM: cpu family 25, model 1, stepping 1.
        assert_eq!((info.family, info.model, info.stepping), (25, 1, 1));
        let sizes: Vec<(u8, CacheType, u64, Associativity, u32, u64)> = info
            .caches
            .iter()
            .map(|c| (c.level, c.kind, c.size_bytes, c.associativity, c.line_bytes, c.sets))
            .collect();
        // The same VM's sysfs: index0 L1d 32K 8-way 64 sets, index1 L1i 32K 8-way, index2 L2
        // 512K 8-way 1024 sets, index3 L3 32768K 16-way 32768 sets, all 64-byte lines.
        assert_eq!(
            sizes,
            vec![
                (1, CacheType::Data, 32 << 10, Associativity::Ways(8), 64, 64),
                (1, CacheType::Instruction, 32 << 10, Associativity::Ways(8), 64, 64),
                (2, CacheType::Unified, 512 << 10, Associativity::Ways(8), 64, 1024),
                (3, CacheType::Unified, 32 << 20, Associativity::Ways(16), 64, 32768),
            ]
        );
        assert!(info.caches.iter().all(|c| c.leaf == "0x8000001D"));
        assert_eq!(info.cache(3, CacheType::Unified).and_then(|c| c.max_sharing), Some(2));
    }

    #[test]
    fn decodes_amd_tlbs_of_the_captured_guest() {
        let info = epyc();
        let rows: Vec<(u8, TlbKind, u64, u64, Option<Associativity>)> = info
            .tlbs
            .iter()
            .map(|t| (t.level, t.kind, t.page_bytes[0], t.entries, t.associativity))
            .collect();
        let full = Some(Associativity::Full);
        // 0x80000005 EBX/EAX 0xff40ff40: 64-entry fully associative L1 d/iTLBs for 4K and 2M;
        // 0x80000006 EBX 0x68004200: L2 dTLB 4K 2048 entries code 6 (8-way), iTLB 512 code 4;
        // EAX 0x48002200: L2 dTLB 2M 2048 code 4, iTLB 512 code 2; 0x80000019 EAX 0xf040f040:
        // L1 1G 64 fully associative each; EBX 0xf0400000: L2 dTLB 1G 64, no L2 iTLB for 1G.
        // (/proc/cpuinfo's "TLB size: 2560 4K pages" is the L2 dTLB plus the L2 iTLB.)
        assert_eq!(
            rows,
            vec![
                (1, TlbKind::Data, K4, 64, full),
                (1, TlbKind::Data, M2, 64, full),
                (1, TlbKind::Data, G1, 64, full),
                (1, TlbKind::Instruction, K4, 64, full),
                (1, TlbKind::Instruction, M2, 64, full),
                (1, TlbKind::Instruction, G1, 64, full),
                (2, TlbKind::Data, K4, 2048, Some(Associativity::Ways(8))),
                (2, TlbKind::Data, M2, 2048, Some(Associativity::Ways(4))),
                (2, TlbKind::Data, G1, 64, full),
                (2, TlbKind::Instruction, K4, 512, Some(Associativity::Ways(4))),
                (2, TlbKind::Instruction, M2, 512, Some(Associativity::Ways(2))),
            ]
        );
    }

    #[test]
    fn amd_legacy_l3_of_the_guest_defers_to_0x8000001d() {
        // The guest's 0x80000006 EDX (0x08009140) has associativity code 9 ("see 0x8000001D"),
        // so its size field (512 × 512 KiB = 256 MiB, unlike the real 32 MiB) is not taken.
        let d = Dump::parse(EPYC_KVM).expect("fixture");
        let legacy = amd_legacy_caches(d.read(0x8000_0005, 0), d.read(0x8000_0006, 0));
        let levels: Vec<(u8, CacheType, u64)> =
            legacy.iter().map(|c| (c.level, c.kind, c.size_bytes)).collect();
        assert_eq!(
            levels,
            vec![
                (1, CacheType::Data, 32 << 10),
                (1, CacheType::Instruction, 32 << 10),
                (2, CacheType::Unified, 512 << 10),
            ]
        );
        assert_eq!(legacy[2].associativity, Associativity::Ways(8));
        assert_eq!(legacy[2].sets, 1024);
    }

    /// Leaf 4 registers assembled by hand from the field layout in the Intel SDM Vol. 2A
    /// (CPUID leaf 04H) — not captured from hardware — for caches of the geometry Intel
    /// documents for Skylake-SP: L1d 32 KiB 8-way, L2 1 MiB 16-way, 64-byte lines.
    fn intel_leaf4(kind: u32, level: u32, ways: u32, sets: u32, sharing: u32) -> Regs {
        Regs {
            eax: kind | level << 5 | 1 << 8 | (sharing - 1) << 14,
            ebx: (64 - 1) | (ways - 1) << 22,
            ecx: sets - 1,
            edx: 0,
        }
    }

    #[test]
    fn decodes_intel_leaf4_from_the_documented_layout() {
        let l1d = deterministic_cache(intel_leaf4(1, 1, 8, 64, 2), "4").expect("L1d");
        assert_eq!((l1d.level, l1d.kind, l1d.size_bytes), (1, CacheType::Data, 32 << 10));
        assert_eq!((l1d.associativity, l1d.max_sharing), (Associativity::Ways(8), Some(2)));
        let l2 = deterministic_cache(intel_leaf4(3, 2, 16, 1024, 2), "4").expect("L2");
        assert_eq!((l2.size_bytes, l2.sets, l2.line_bytes), (1 << 20, 1024, 64));
        // Type 0 ends the list.
        assert_eq!(deterministic_cache(Regs::default(), "4"), None);
        // A fully associative cache (EAX bit 9).
        let mut full = intel_leaf4(1, 1, 4, 1, 1);
        full.eax |= 1 << 9;
        assert_eq!(
            deterministic_cache(full, "4").map(|c| c.associativity),
            Some(Associativity::Full)
        );
    }

    #[test]
    fn decodes_an_intel_register_source_end_to_end() {
        // A register source built from the SDM's layouts (not captured): max leaf 0x18,
        // GenuineIntel, family 6 model 0x55 stepping 4 (leaf 1 EAX 0x00050654), leaf 4 L1d and
        // L2 as above, leaf 0x18 with a 64-entry 4-way 4K load TLB (subleaf 1) and a 1536-entry
        // 12-way 4K/2M unified L2 TLB (subleaf 2).
        let read = |leaf: u32, sub: u32| -> Regs {
            match (leaf, sub) {
                (0, 0) => Regs { eax: 0x18, ebx: 0x756e_6547, ecx: 0x6c65_746e, edx: 0x4965_6e69 },
                (1, 0) => Regs { eax: 0x0005_0654, ..Regs::default() },
                (4, 0) => intel_leaf4(1, 1, 8, 64, 2),
                (4, 1) => intel_leaf4(3, 2, 16, 1024, 2),
                (0x18, 0) => Regs { eax: 2, ..Regs::default() },
                (0x18, 1) => Regs { eax: 0, ebx: 1 | 4 << 16, ecx: 16, edx: 4 | 1 << 5 },
                (0x18, 2) => Regs { eax: 0, ebx: 0b11 | 12 << 16, ecx: 128, edx: 3 | 2 << 5 },
                (0x8000_0000, 0) => Regs { eax: 0x8000_0008, ..Regs::default() },
                _ => Regs::default(),
            }
        };
        let info = decode(&read);
        assert_eq!(info.vendor, "GenuineIntel");
        assert_eq!((info.family, info.model, info.stepping), (6, 0x55, 4));
        assert_eq!(info.brand, None); // leaves 0x80000002..4 read as zeros here
        assert_eq!(info.caches.len(), 2);
        let tlbs: Vec<(u8, TlbKind, Vec<u64>, u64)> =
            info.tlbs.iter().map(|t| (t.level, t.kind, t.page_bytes.clone(), t.entries)).collect();
        assert_eq!(
            tlbs,
            vec![(1, TlbKind::LoadOnly, vec![K4], 64), (2, TlbKind::Unified, vec![K4, M2], 1536)]
        );
    }

    /// An Intel register source with highest basic leaf `max_basic`, leaf 2 `leaf2`, and a leaf
    /// 0x18 that would describe a 64-entry TLB were it read; records every query.
    fn intel_source(
        max_basic: u32,
        leaf2: Regs,
        seen: &std::cell::RefCell<Vec<u32>>,
    ) -> impl Fn(u32, u32) -> Regs + '_ {
        move |leaf: u32, sub: u32| {
            seen.borrow_mut().push(leaf);
            match (leaf, sub) {
                (0, 0) => {
                    Regs { eax: max_basic, ebx: 0x756e_6547, ecx: 0x6c65_746e, edx: 0x4965_6e69 }
                }
                (2, 0) => leaf2,
                (0x18, 0) => Regs { eax: 1, ..Regs::default() },
                (0x18, 1) => Regs { eax: 0, ebx: 1 | 4 << 16, ecx: 16, edx: 1 | 1 << 5 },
                (0x8000_0000, 0) => Regs { eax: 0x8000_0008, ..Regs::default() },
                _ => Regs::default(),
            }
        }
    }

    #[test]
    fn reads_no_leaf_beyond_the_highest_and_says_why_tlbs_are_absent() {
        let seen = std::cell::RefCell::new(Vec::new());
        // QEMU's named Intel models: highest basic leaf 0xd, leaf 2 only 0xFF ("see leaf 4").
        let qemu = Regs { eax: 1, edx: 0xff, ..Regs::default() };
        let info = decode(&intel_source(0xd, qemu, &seen));
        assert!(seen.borrow().iter().all(|&l| l <= 0xd || l >= 0x8000_0000), "{:x?}", seen);
        assert!(info.tlbs.is_empty(), "{:?}", info.tlbs);
        assert_eq!(
            info.tlbs_absent.as_deref(),
            Some("leaf 2 names no TLB; leaf 0x18 is beyond the highest basic leaf 0xd")
        );
        // The same source with leaf 0x18 in range: its TLB is found.
        let info = decode(&intel_source(0x18, qemu, &seen));
        assert_eq!(info.tlbs.len(), 1);
        assert_eq!((info.tlbs[0].leaf.as_str(), info.tlbs[0].entries), ("0x18", 64));
        assert_eq!(info.tlbs_absent, None);
        // A hypervisor that points leaf 2 at leaf 0x18 (0xFE) and answers 0x18 with zeros.
        let hidden = |leaf: u32, sub: u32| match leaf {
            0x18 => Regs::default(),
            _ => intel_source(0x1f, Regs { eax: 0x00fe_ff01, ..Regs::default() }, &seen)(leaf, sub),
        };
        assert_eq!(
            decode(&hidden).tlbs_absent.as_deref(),
            Some(
                "leaf 2 defers to leaf 0x18; leaf 0x18 describes none (all zeros: a hypervisor \
                 that hides them)"
            )
        );
        // Unknown descriptors are named; a CPU without leaf 2 says so.
        let odd = decode(&intel_source(0x4, Regs { eax: 0x0000_4401, ..Regs::default() }, &seen));
        assert_eq!(
            odd.tlbs_absent.as_deref(),
            Some(
                "leaf 2 names no TLB this decoder knows (descriptors 0x44); leaf 0x18 is beyond \
                 the highest basic leaf 0x4"
            )
        );
        let old = decode(&intel_source(1, qemu, &seen));
        assert_eq!(old.tlbs_absent.as_deref(), Some("no TLB leaf 2 (highest basic leaf 0x1)"));
        // AMD without 0x8000_0005.
        let amd = |leaf: u32, _: u32| match leaf {
            0 => Regs { eax: 0x10, ebx: 0x6874_7541, edx: 0x6974_6e65, ecx: 0x444d_4163 },
            0x8000_0000 => Regs { eax: 0x8000_0004, ..Regs::default() },
            _ => Regs { eax: 0xff40_ff40, ebx: 0xff40_ff40, ..Regs::default() },
        };
        assert_eq!(
            decode(&amd).tlbs_absent.as_deref(),
            Some("no TLB leaf 0x80000005 (highest extended leaf 0x80000004)")
        );
    }

    #[test]
    fn decodes_leaf2_descriptors() {
        // Registers assembled from the SDM's descriptor table (not captured): AL = 1; EAX
        // bytes 0x63 (dTLB 2M/4M 32 + 1G 4), 0x03 (dTLB 4K 64), 0x76 (iTLB 2M/4M 8);
        // EBX 0xFF (use leaf 4), 0xB5 (iTLB 4K 64 8-way), 0xF0 (prefetch: not a TLB);
        // ECX has bit 31 set (no descriptors); EDX 0xC3 (STLB 4K/2M 1536 6-way, 1G 16 4-way).
        let l2 = intel_leaf2(Regs {
            eax: 0x7603_6301,
            ebx: 0x00f0_b5ff,
            ecx: 0x8000_00c3,
            edx: 0x00c3_0000,
        });
        assert!(l2.caches_in_leaf4);
        assert!(!l2.tlbs_in_leaf18);
        assert_eq!(l2.other, vec![0xF0]);
        let entries: Vec<(u8, TlbKind, u64)> =
            l2.tlbs.iter().map(|t| (t.level, t.kind, t.entries)).collect();
        assert_eq!(
            entries,
            vec![
                (1, TlbKind::Data, 32),
                (1, TlbKind::Data, 4),
                (1, TlbKind::Data, 64),
                (1, TlbKind::Instruction, 8),
                (1, TlbKind::Instruction, 64),
                (2, TlbKind::Unified, 1536),
                (2, TlbKind::Unified, 16),
            ]
        );
        // Modern parts: "use leaf 4" and "use leaf 0x18" only.
        let modern = intel_leaf2(Regs { eax: 0x00fe_ff01, ..Regs::default() });
        assert!(modern.caches_in_leaf4 && modern.tlbs_in_leaf18 && modern.tlbs.is_empty());
    }

    #[test]
    fn signatures_fold_extended_fields() {
        assert_eq!(signature(0x00a0_0f11), (25, 1, 1)); // this VM's AMD EPYC (Zen 3)
        assert_eq!(signature(0x0005_0654), (6, 0x55, 4)); // family 6: extended model used
        assert_eq!(signature(0x0000_0f4a), (15, 4, 10)); // family 15, no extended family
        assert_eq!(signature(0x0000_0563), (5, 6, 3)); // family 5: extended model ignored
    }

    #[test]
    fn dump_round_trips_and_rejects_garbage() {
        let d = Dump::parse(EPYC_KVM).expect("fixture");
        assert_eq!(Dump::parse(&d.to_string()), Ok(d.clone()));
        assert_eq!(d.read(0x4000_0000, 0).ebx, 0x4b4d_564b); // "KVMK"
        assert_eq!(d.read(0x1234, 7), Regs::default());
        let err = Dump::parse("leaf 0x1 sub 0: eax=zz ebx=0 ecx=0 edx=0").expect_err("bad hex");
        assert!(err.starts_with("line 1:"), "{err}");
        assert!(Dump::parse("hello").is_err());
    }

    /// A deterministic stream of 32-bit values for the property tests.
    fn stream(seed: u64) -> impl FnMut() -> u32 {
        let mut rng = measure::rng::SplitMix64::new(seed);
        move || (rng.next_u64() >> 32) as u32
    }

    #[test]
    fn property_any_registers_decode_without_panic_and_consistently() {
        let mut next = stream(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let r = Regs { eax: next(), ebx: next(), ecx: next(), edx: next() };
            if let Some(c) = deterministic_cache(r, "4") {
                let ways = match c.associativity {
                    Associativity::Ways(w) => u64::from(w),
                    Associativity::Full => u64::from(bits(r.ebx, 22, 31) + 1),
                };
                let product = ways * u64::from(c.partitions) * u64::from(c.line_bytes) * c.sets;
                assert_eq!(c.size_bytes, product, "{r:x?}");
                assert!((1..=7).contains(&c.level));
            }
            if let Some(t) = intel_tlb_leaf18(r) {
                assert!(t.entries > 0 && !t.page_bytes.is_empty());
                assert!(t.page_bytes.windows(2).all(|w| w[0] < w[1]));
            }
            for t in amd_l1_tlbs(r.eax, &[K4]).iter().chain(&amd_tlbs(r.ebx, 2, &[M2], "x")) {
                assert!(t.entries > 0 && t.entries < 4096);
            }
            for c in
                amd_legacy_caches(r, Regs { eax: next(), ebx: next(), ecx: next(), edx: next() })
            {
                assert!(c.size_bytes > 0 && c.line_bytes > 0);
            }
            let _ = intel_leaf2(r);
            let _ = brand([r, r, r]);
        }
    }

    #[test]
    fn property_random_register_sources_decode_without_panic() {
        // Whole CPUs of random registers: `decode` must stay within its subleaf bound and never
        // panic, whatever the leaves claim.
        for seed in 1..200u64 {
            let table: Vec<Regs> = {
                let mut next = stream(seed.wrapping_mul(0x9e37_79b9));
                (0..64)
                    .map(|_| Regs { eax: next(), ebx: next(), ecx: next(), edx: next() })
                    .collect()
            };
            let read = |leaf: u32, sub: u32| {
                let i = (leaf.wrapping_mul(31) ^ sub.wrapping_mul(7)) as usize % table.len();
                let mut r = table[i];
                if leaf == 0 && seed % 2 == 0 {
                    r.ebx = 0x6874_7541; // an even RNG seed claims AuthenticAMD
                    r.edx = 0x6974_6e65;
                    r.ecx = 0x444d_4163;
                }
                r
            };
            let seen = std::cell::RefCell::new(Vec::new());
            let info = decode(&|leaf, sub| {
                seen.borrow_mut().push(leaf);
                read(leaf, sub)
            });
            // Nothing above the highest basic or extended leaf is read.
            let (max_basic, max_ext) = (read(0, 0).eax, read(0x8000_0000, 0).eax);
            for &leaf in seen.borrow().iter().filter(|&&l| l != 0 && l != 0x8000_0000) {
                let within = if leaf >= 0x8000_0000 {
                    max_ext & 0x8000_0000 != 0 && leaf <= max_ext
                } else {
                    leaf <= max_basic
                };
                assert!(within, "leaf {leaf:#x} read; highest {max_basic:#x}, {max_ext:#x}");
            }
            assert_eq!(info.tlbs.is_empty(), info.tlbs_absent.is_some());
            assert!(info.caches.len() <= MAX_SUBLEAVES as usize);
            assert!(info.tlbs.len() <= 2 * MAX_SUBLEAVES as usize + 16);
        }
    }
}
