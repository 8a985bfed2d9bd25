//! Reading sysfs and procfs: a rooted reader (so tests can point it at a captured tree) and pure
//! parsers for the files' formats.

use std::path::{Path, PathBuf};

use crate::model::{Cache, CacheKind, HmatAccess, HugePagePool, NodeMemory};

/// A filesystem root under which `sys/…` and `proc/…` are read; `/` on a live system.
#[derive(Debug, Clone)]
pub struct SysRoot {
    root: PathBuf,
}

impl Default for SysRoot {
    fn default() -> Self {
        Self::live()
    }
}

impl SysRoot {
    /// The running system.
    pub fn live() -> Self {
        Self { root: PathBuf::from("/") }
    }

    /// A captured or fabricated tree, e.g. a test fixture directory.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// `relative` (e.g. `sys/devices/system/node`) under this root.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative.trim_start_matches('/'))
    }

    /// The file's contents, trimmed; `None` when it is missing or unreadable — every sysfs fact
    /// is optional because kernels differ in what they expose.
    pub fn read(&self, relative: &str) -> Option<String> {
        std::fs::read_to_string(self.path(relative)).ok().map(|s| s.trim().to_string())
    }

    /// The file parsed as an unsigned number.
    pub fn read_u64(&self, relative: &str) -> Option<u64> {
        self.read(relative)?.parse().ok()
    }

    /// Names in a directory, sorted; empty when it is missing.
    pub fn list_dir(&self, relative: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(relative))
            .map(|entries| entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    fn node_dir(node: u32) -> String {
        format!("sys/devices/system/node/node{node}")
    }

    /// A node's total memory and its split, from its `meminfo`.
    pub fn node_memory(&self, node: u32) -> Option<(u64, NodeMemory)> {
        parse_node_meminfo(&self.read(&format!("{}/meminfo", Self::node_dir(node)))?)
    }

    /// A node's hugetlb pools, one per page size the kernel supports.
    pub fn node_hugepages(&self, node: u32) -> Vec<HugePagePool> {
        self.hugepage_pools(&format!("{}/hugepages", Self::node_dir(node)))
    }

    /// Machine-wide hugetlb pools.
    pub fn global_hugepages(&self) -> Vec<HugePagePool> {
        self.hugepage_pools("sys/kernel/mm/hugepages")
    }

    fn hugepage_pools(&self, dir: &str) -> Vec<HugePagePool> {
        let mut pools: Vec<HugePagePool> = self
            .list_dir(dir)
            .iter()
            .filter_map(|name| {
                let page_bytes = parse_hugepage_dir_name(name)?;
                Some(HugePagePool {
                    page_bytes,
                    total: self.read_u64(&format!("{dir}/{name}/nr_hugepages"))?,
                    free: self.read_u64(&format!("{dir}/{name}/free_hugepages"))?,
                })
            })
            .collect();
        pools.sort_by_key(|p| p.page_bytes);
        pools
    }

    /// Node ids the kernel has online, from `node/online`, or from the `nodeN` directories.
    pub fn online_nodes(&self) -> Option<Vec<u32>> {
        if let Some(list) = self.read("sys/devices/system/node/online") {
            return crate::idlist::parse(&list).ok();
        }
        let nodes: Vec<u32> = self
            .list_dir("sys/devices/system/node")
            .iter()
            .filter_map(|n| n.strip_prefix("node")?.parse().ok())
            .collect();
        (!nodes.is_empty()).then_some(nodes)
    }

    /// One row of the SLIT: distances from `node` to every online node, in ascending node order.
    pub fn node_distance_row(&self, node: u32) -> Option<Vec<u32>> {
        let text = self.read(&format!("{}/distance", Self::node_dir(node)))?;
        text.split_whitespace().map(|d| d.parse().ok()).collect()
    }

    /// HMAT access figures for a memory node (`access0` and `access1`), when exposed.
    pub fn node_hmat(&self, node: u32) -> Vec<HmatAccess> {
        (0..2u8)
            .filter_map(|class| {
                let dir = format!("{}/access{class}/initiators", Self::node_dir(node));
                let names = self.list_dir(&dir);
                if names.is_empty() {
                    return None;
                }
                let initiators =
                    names.iter().filter_map(|n| n.strip_prefix("node")?.parse().ok()).collect();
                let figure = |file: &str| self.read_u64(&format!("{dir}/{file}"));
                Some(HmatAccess {
                    target: node,
                    access_class: class,
                    initiators,
                    read_latency_ns: figure("read_latency"),
                    write_latency_ns: figure("write_latency"),
                    read_bandwidth_mbps: figure("read_bandwidth"),
                    write_bandwidth_mbps: figure("write_bandwidth"),
                })
            })
            .collect()
    }

    /// A `/proc/meminfo` field in bytes (`MemTotal`, `MemAvailable`, …).
    pub fn meminfo_bytes(&self, field: &str) -> Option<u64> {
        let text = self.read("proc/meminfo")?;
        text.lines().find_map(|line| {
            let rest = line.strip_prefix(field)?.strip_prefix(':')?;
            let kib: u64 = rest.split_whitespace().next()?.parse().ok()?;
            Some(kib * 1024)
        })
    }

    /// CPU ids in one of the kernel's CPU masks: `online`, `offline`, `present`, `possible`.
    pub fn cpu_mask(&self, which: &str) -> Option<Vec<u32>> {
        let text = self.read(&format!("sys/devices/system/cpu/{which}"))?;
        if text.is_empty() {
            return Some(Vec::new());
        }
        crate::idlist::parse(&text).ok()
    }

    /// The data and unified caches of these CPUs from `cpuN/cache/indexM/`, one entry per
    /// cache instance (caches shared by several CPUs appear once), by level then first CPU.
    pub fn cpu_caches(&self, cpus: &[u32]) -> Vec<Cache> {
        let mut caches: Vec<Cache> = Vec::new();
        for &cpu in cpus {
            let dir = format!("sys/devices/system/cpu/cpu{cpu}/cache");
            for index in self.list_dir(&dir).iter().filter(|n| n.starts_with("index")) {
                let mut files = CacheIndexFiles::default();
                for name in CacheIndexFiles::FILES {
                    if let Some(value) = self.read(&format!("{dir}/{index}/{name}")) {
                        files.set(name, value);
                    }
                }
                let Some(cache) = parse_cache_index(&files) else { continue };
                if !caches
                    .iter()
                    .any(|c| c.level == cache.level && c.kind == cache.kind && c.cpus == cache.cpus)
                {
                    caches.push(cache);
                }
            }
        }
        caches.sort_by_key(|c| (c.level, c.cpus.first().copied()));
        caches
    }

    /// `/sys/devices/system/cpu/vulnerabilities/*` (since Linux 4.15), by name.
    pub fn vulnerabilities(&self) -> Vec<Vulnerability> {
        let dir = "sys/devices/system/cpu/vulnerabilities";
        self.list_dir(dir)
            .into_iter()
            .filter_map(|name| {
                let status = self.read(&format!("{dir}/{name}"))?;
                Some(Vulnerability { name, status })
            })
            .collect()
    }

    /// Multi-size THP (`transparent_hugepage/hugepages-<size>kB/enabled`, since Linux 6.8): each
    /// size and its policy (`always`, `inherit`, `madvise`, `never`), ascending by size.
    pub fn mthp_sizes(&self) -> Vec<MthpSize> {
        let dir = "sys/kernel/mm/transparent_hugepage";
        let mut sizes: Vec<MthpSize> = self
            .list_dir(dir)
            .iter()
            .filter_map(|name| {
                let page_bytes = parse_hugepage_dir_name(name)?;
                let text = self.read(&format!("{dir}/{name}/enabled"))?;
                Some(MthpSize { page_bytes, enabled: bracketed_choice(&text)?.to_string() })
            })
            .collect();
        sizes.sort_by_key(|s| s.page_bytes);
        sizes
    }
}

/// One file of `/sys/devices/system/cpu/vulnerabilities`: the kernel's word on one hardware
/// vulnerability (`Not affected`, `Mitigation: …`, `Vulnerable…`, `Unknown: …`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Vulnerability {
    pub name: String,
    pub status: String,
}

/// How a vulnerability stands, from the first words of its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum VulnerabilityClass {
    Vulnerable,
    Mitigated,
    NotAffected,
    Unknown,
}

impl Vulnerability {
    /// `Vulnerable…` (also `Vulnerable: … no microcode`) is vulnerable; a status naming a
    /// mitigation (`Mitigation: …`, `KVM: Mitigation: …`) is mitigated; `Not affected` is not
    /// affected; anything else (`Unknown: …`) is unknown.
    pub fn class(&self) -> VulnerabilityClass {
        let s = self.status.trim();
        if s.starts_with("Not affected") {
            VulnerabilityClass::NotAffected
        } else if s.starts_with("Vulnerable") {
            VulnerabilityClass::Vulnerable
        } else if s.contains("Mitigation") {
            VulnerabilityClass::Mitigated
        } else {
            VulnerabilityClass::Unknown
        }
    }
}

/// One multi-size THP size and its policy.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MthpSize {
    pub page_bytes: u64,
    pub enabled: String,
}

/// The files of one `cpuN/cache/indexM/` directory as read (trimmed); `None` when missing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheIndexFiles {
    pub level: Option<String>,
    /// `type`: `Data`, `Instruction` or `Unified`.
    pub kind: Option<String>,
    pub size: Option<String>,
    pub ways: Option<String>,
    pub line: Option<String>,
    pub shared_cpu_list: Option<String>,
    pub sets: Option<String>,
}

impl CacheIndexFiles {
    /// The files of an index directory this struct keeps, by their sysfs names.
    pub const FILES: [&'static str; 7] = [
        "level",
        "type",
        "size",
        "ways_of_associativity",
        "coherency_line_size",
        "shared_cpu_list",
        "number_of_sets",
    ];

    /// Keeps `value` as the contents of the file `name`; false for a file not in [`Self::FILES`].
    pub fn set(&mut self, name: &str, value: String) -> bool {
        let field = match name {
            "level" => &mut self.level,
            "type" => &mut self.kind,
            "size" => &mut self.size,
            "ways_of_associativity" => &mut self.ways,
            "coherency_line_size" => &mut self.line,
            "shared_cpu_list" => &mut self.shared_cpu_list,
            "number_of_sets" => &mut self.sets,
            _ => return false,
        };
        *field = Some(value);
        true
    }
}

/// A cache directory captured as text, one `indexN/file: contents` line per file (how the
/// host captures under `tests/fixtures` keep `cpu0/cache/`): each index directory's files, in
/// the order the directories first appear. `#` lines, unknown files and the contents `-` (the
/// capture's mark for a file it could not read) are skipped.
pub fn parse_cache_listing(text: &str) -> Vec<(String, CacheIndexFiles)> {
    let mut dirs: Vec<(String, CacheIndexFiles)> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((path, value)) = line.split_once(':') else { continue };
        let Some((dir, file)) = path.trim().split_once('/') else { continue };
        let value = value.trim();
        if !CacheIndexFiles::FILES.contains(&file) || value == "-" {
            continue;
        }
        let at = match dirs.iter().position(|(d, _)| d == dir) {
            Some(at) => at,
            None => {
                dirs.push((dir.to_string(), CacheIndexFiles::default()));
                dirs.len() - 1
            }
        };
        dirs[at].1.set(file, value.to_string());
    }
    dirs
}

/// A sysfs cache size: `32K`, `32768K`, `1M` (binary units, as the kernel prints them) or bytes.
pub fn parse_cache_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (number, shift) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 10),
        'M' | 'm' => (&t[..t.len() - 1], 20),
        'G' | 'g' => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let n: u64 = number.trim().parse().ok()?;
    n.checked_mul(1 << shift)
}

/// A cache from its index directory's files; `None` for instruction caches (the model keeps
/// data and unified caches) and for directories missing the level, type, size or sharing list.
/// A zero `ways_of_associativity`, line size or set count reads as unknown.
pub fn parse_cache_index(files: &CacheIndexFiles) -> Option<Cache> {
    let kind = match files.kind.as_deref()? {
        "Data" => CacheKind::Data,
        "Unified" => CacheKind::Unified,
        _ => return None,
    };
    let level: u8 = files.level.as_deref()?.trim().parse().ok().filter(|&l| l > 0)?;
    let size_bytes = parse_cache_size(files.size.as_deref()?)?;
    let cpus = crate::idlist::parse(files.shared_cpu_list.as_deref()?).ok()?;
    let positive = |v: &Option<String>| -> Option<u32> {
        v.as_deref()?.trim().parse().ok().filter(|&n: &u32| n > 0)
    };
    Some(Cache {
        level,
        kind,
        size_bytes,
        line_bytes: positive(&files.line).map(u64::from),
        associativity: positive(&files.ways),
        cpus,
        sets: positive(&files.sets),
    })
}

/// The first processor's block of `/proc/cpuinfo`: the fields that identify an x86 CPU.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuInfo {
    pub vendor_id: Option<String>,
    pub model_name: Option<String>,
    pub family: Option<u32>,
    pub model: Option<u32>,
    pub stepping: Option<u32>,
    pub microcode: Option<String>,
}

/// Parses `/proc/cpuinfo` (`key<TAB>: value` lines, processors separated by blank lines), the
/// first processor only. Fields a kernel does not print (arm64 has none of these but
/// `model name` on some kernels) stay `None`.
pub fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut info = CpuInfo::default();
    for line in text.lines() {
        if line.trim().is_empty() {
            if info != CpuInfo::default() {
                break; // end of the first processor's block
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        let text = (!value.is_empty()).then(|| value.to_string());
        let number = value.parse().ok();
        match key.trim() {
            "vendor_id" => info.vendor_id = text,
            "model name" => info.model_name = text,
            "cpu family" => info.family = number,
            "model" => info.model = number,
            "stepping" => info.stepping = number,
            "microcode" => info.microcode = text,
            _ => {}
        }
    }
    info
}

/// Parses a node `meminfo` file (`Node 0 MemTotal:  5335252 kB` lines) into the total and
/// its split.
pub fn parse_node_meminfo(text: &str) -> Option<(u64, NodeMemory)> {
    let field = |name: &str| -> Option<u64> {
        text.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            // "Node", id, "Name:", value, "kB"
            let (_, _, key, value) = (words.next()?, words.next()?, words.next()?, words.next()?);
            let unit = words.next();
            if key.strip_suffix(':')? != name {
                return None;
            }
            let value: u64 = value.parse().ok()?;
            // A value whose bytes do not fit in u64 is a damaged file, not a size.
            if unit == Some("kB") {
                value.checked_mul(1024)
            } else {
                Some(value)
            }
        })
    };
    let total = field("MemTotal")?;
    Some((
        total,
        NodeMemory {
            free_bytes: field("MemFree")?,
            file_bytes: field("FilePages").unwrap_or(0),
            anon_bytes: field("AnonPages").unwrap_or(0),
            anon_huge_bytes: field("AnonHugePages").unwrap_or(0),
            shmem_bytes: field("Shmem").unwrap_or(0),
        },
    ))
}

/// `hugepages-2048kB` → 2 MiB in bytes.
pub fn parse_hugepage_dir_name(name: &str) -> Option<u64> {
    let kib: u64 = name.strip_prefix("hugepages-")?.strip_suffix("kB")?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The selected word in a sysfs choice file: `always [madvise] never` → `madvise`.
pub fn bracketed_choice(text: &str) -> Option<&str> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(&text[start + 1..end])
}

/// Whether a path exists under the root.
pub fn exists(root: &SysRoot, relative: &str) -> bool {
    Path::new(&root.path(relative)).exists()
}

#[cfg(test)]
mod tests {
    use super::*;
    use measure::rng::SplitMix64;

    // Captured on the platscope development VM (kernel 6.18, one node), trimmed.
    const NODE0_MEMINFO_6_18: &str = "\
Node 0 MemTotal:        5335252 kB
Node 0 MemFree:         3675888 kB
Node 0 MemUsed:         1659364 kB
Node 0 Active(file):     399416 kB
Node 0 FilePages:       1470508 kB
Node 0 Mapped:            10692 kB
Node 0 AnonPages:          6480 kB
Node 0 Shmem:              8856 kB
Node 0 AnonHugePages:         0 kB
Node 0 HugePages_Total:     0
Node 0 HugePages_Free:      0
";

    #[test]
    fn parses_node_meminfo_in_bytes() {
        let (total, m) = parse_node_meminfo(NODE0_MEMINFO_6_18).expect("parses");
        assert_eq!(total, 5_335_252 * 1024);
        assert_eq!(m.free_bytes, 3_675_888 * 1024);
        assert_eq!(m.file_bytes, 1_470_508 * 1024);
        assert_eq!(m.anon_bytes, 6_480 * 1024);
        assert_eq!(m.shmem_bytes, 8_856 * 1024);
        assert_eq!(m.anon_huge_bytes, 0);
    }

    #[test]
    fn meminfo_without_totals_is_none() {
        assert_eq!(parse_node_meminfo("Node 0 FilePages: 12 kB\n"), None);
        assert_eq!(parse_node_meminfo(""), None);
    }

    #[test]
    fn hugepage_dir_names() {
        assert_eq!(parse_hugepage_dir_name("hugepages-2048kB"), Some(2 << 20));
        assert_eq!(parse_hugepage_dir_name("hugepages-1048576kB"), Some(1 << 30));
        assert_eq!(parse_hugepage_dir_name("hugepages-64kB"), Some(64 << 10));
        assert_eq!(parse_hugepage_dir_name("demote"), None);
    }

    #[test]
    fn bracketed_choices() {
        assert_eq!(bracketed_choice("always [madvise] never"), Some("madvise"));
        assert_eq!(bracketed_choice("[always] defer defer+madvise madvise never"), Some("always"));
        assert_eq!(bracketed_choice("tsc"), None);
    }

    const CPUINFO_EPYC_KVM: &str = include_str!("../tests/fixtures/cpuinfo_amd_epyc_kvm_6_18.txt");
    const CACHE_CPU0_EPYC_KVM: &str =
        include_str!("../tests/fixtures/cache_cpu0_amd_epyc_kvm_6_18.txt");
    const VULNERABILITIES_EPYC_KVM: &str =
        include_str!("../tests/fixtures/vulnerabilities_amd_epyc_kvm_6_18.txt");

    /// The fixture's index directories' files.
    fn cache_indexes(text: &str) -> Vec<CacheIndexFiles> {
        parse_cache_listing(text).into_iter().map(|(_, files)| files).collect()
    }

    #[test]
    fn parses_cache_indexes_of_the_epyc_guest() {
        let caches: Vec<Cache> =
            cache_indexes(CACHE_CPU0_EPYC_KVM).iter().filter_map(parse_cache_index).collect();
        // index1 is the L1 instruction cache: left out.
        let cache = |level, kind, size_bytes, ways, sets, cpus| Cache {
            level,
            kind,
            size_bytes,
            line_bytes: Some(64),
            associativity: Some(ways),
            cpus,
            sets: Some(sets),
        };
        assert_eq!(
            caches,
            vec![
                cache(1, CacheKind::Data, 32 << 10, 8, 64, vec![0]),
                cache(2, CacheKind::Unified, 512 << 10, 8, 1024, vec![0]),
                cache(3, CacheKind::Unified, 32 << 20, 16, 32768, vec![0, 1]),
            ]
        );
    }

    #[test]
    fn cache_sizes_and_incomplete_indexes() {
        assert_eq!(parse_cache_size("32K"), Some(32 << 10));
        assert_eq!(parse_cache_size("32768K"), Some(32 << 20));
        assert_eq!(parse_cache_size("1M"), Some(1 << 20));
        assert_eq!(parse_cache_size("4096"), Some(4096));
        assert_eq!(parse_cache_size("K"), None);
        assert_eq!(parse_cache_size(""), None);
        assert_eq!(parse_cache_size("99999999999999999999G"), None);
        let mut files = cache_indexes(CACHE_CPU0_EPYC_KVM).remove(0);
        files.ways = Some("0".into()); // unknown, not "0-way"
        files.sets = None;
        let c = parse_cache_index(&files).expect("still a cache");
        assert_eq!((c.associativity, c.sets), (None, None));
        files.shared_cpu_list = None;
        assert_eq!(parse_cache_index(&files), None);
    }

    #[test]
    fn parses_cpuinfo_of_the_epyc_guest() {
        let info = parse_cpuinfo(CPUINFO_EPYC_KVM);
        assert_eq!(info.vendor_id.as_deref(), Some("AuthenticAMD"));
        assert_eq!(info.model_name.as_deref(), Some("AMD EPYC"));
        assert_eq!((info.family, info.model, info.stepping), (Some(25), Some(1), Some(1)));
        assert_eq!(info.microcode.as_deref(), Some("0x1000065"));
        // Only the first processor counts.
        let two = format!("{CPUINFO_EPYC_KVM}\nprocessor\t: 1\nmicrocode\t: 0xdead\n");
        assert_eq!(parse_cpuinfo(&two).microcode.as_deref(), Some("0x1000065"));
        assert_eq!(parse_cpuinfo(""), CpuInfo::default());
    }

    #[test]
    fn classifies_the_epyc_guest_vulnerabilities() {
        let all: Vec<Vulnerability> = VULNERABILITIES_EPYC_KVM
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (name, status) = l.split_once(": ")?;
                Some(Vulnerability { name: name.into(), status: status.into() })
            })
            .collect();
        assert_eq!(all.len(), 19);
        let mitigated: Vec<&str> = all
            .iter()
            .filter(|v| v.class() == VulnerabilityClass::Mitigated)
            .map(|v| v.name.as_str())
            .collect();
        assert_eq!(
            mitigated,
            ["spec_rstack_overflow", "spec_store_bypass", "spectre_v1", "spectre_v2"]
        );
        assert_eq!(all.iter().filter(|v| v.class() == VulnerabilityClass::NotAffected).count(), 15);
        let class = |s: &str| Vulnerability { name: "x".into(), status: s.into() }.class();
        assert_eq!(
            class("Vulnerable: Clear CPU buffers attempted, no microcode"),
            VulnerabilityClass::Vulnerable
        );
        assert_eq!(class("KVM: Mitigation: VMX disabled"), VulnerabilityClass::Mitigated);
        assert_eq!(
            class("Mitigation: Clear CPU buffers; SMT vulnerable"),
            VulnerabilityClass::Mitigated
        );
        assert_eq!(class("Unknown: Dependent on hypervisor status"), VulnerabilityClass::Unknown);
    }

    /// The fixture with bytes replaced, inserted or cut: what a parser must survive.
    fn mutate(text: &str, s: &mut SplitMix64) -> String {
        let mut bytes = text.as_bytes().to_vec();
        for _ in 0..(s.next_u64() % 8 + 1) {
            if bytes.is_empty() {
                break;
            }
            let at = (s.next_u64() % bytes.len() as u64) as usize;
            let junk = [b':', b'\n', b' ', b'\t', b'9', b'K', b'-', b',', 0xff, b'x'];
            match s.next_u64() % 3 {
                0 => bytes[at] = junk[(s.next_u64() % junk.len() as u64) as usize],
                1 => bytes.insert(at, junk[(s.next_u64() % junk.len() as u64) as usize]),
                _ => {
                    bytes.truncate(at);
                }
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[test]
    fn property_mutated_fixtures_never_panic() {
        let mut s = SplitMix64::new(0x853c_49e6_748f_ea9b);
        for _ in 0..5_000 {
            let info = parse_cpuinfo(&mutate(CPUINFO_EPYC_KVM, &mut s));
            assert!(info.microcode.as_deref().is_none_or(|m| !m.is_empty()));
            for files in cache_indexes(&mutate(CACHE_CPU0_EPYC_KVM, &mut s)) {
                if let Some(c) = parse_cache_index(&files) {
                    assert!(c.level > 0 && !c.cpus.is_empty());
                    assert!(c.associativity != Some(0) && c.sets != Some(0));
                }
            }
            let _ = parse_cache_size(&mutate("32768K", &mut s));
            let _ = bracketed_choice(&mutate("always [madvise] never", &mut s));
        }
    }
}
