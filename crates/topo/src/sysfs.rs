//! Reading sysfs and procfs: a rooted reader (so tests can point it at a captured tree) and pure
//! parsers for the files' formats.

use std::path::{Path, PathBuf};

use crate::model::{HmatAccess, HugePagePool, NodeMemory};

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
            Some(if unit == Some("kB") { value * 1024 } else { value })
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
    Some(kib * 1024)
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
}
