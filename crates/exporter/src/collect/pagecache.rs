//! `pagecache`: how much page cache (file-backed pages, `FilePages`) each NUMA node holds,
//! read at each scrape from the nodes' `meminfo` with topo's reader — cheap, a few small sysfs
//! files. Together with `platscope_bench_pagecache_read_bandwidth_bytes_per_second` (what a
//! read from each node costs) it says where cached data sits.
//!
//! Left out on purpose: per-file locality (which node holds each cached file's pages) needs
//! `mincore` and `move_pages` over every page of every file (`platscope pagecache`), far too
//! slow for a scrape.

use measure::UsageError;
use topo::sysfs::SysRoot;

use super::{CollectError, Collector, Config};
use crate::{Family, Kind, Unit};

/// The `pagecache` collector.
#[derive(Debug)]
pub struct Pagecache {
    root: SysRoot,
}

/// Registry entry.
pub(super) fn factory(config: &Config) -> Result<Box<dyn Collector>, UsageError> {
    Ok(Box::new(Pagecache::new(SysRoot::at(config.root.path("")))))
}

impl Pagecache {
    /// Reads `sys/devices/system/node` under `root`.
    pub fn new(root: SysRoot) -> Self {
        Pagecache { root }
    }
}

impl Collector for Pagecache {
    fn name(&self) -> &'static str {
        "pagecache"
    }

    fn collect(&self, out: &mut Vec<Family>) -> Result<(), CollectError> {
        // A kernel without NUMA support has no node directory: nothing to say.
        let Some(nodes) = self.root.online_nodes() else { return Ok(()) };
        let mut cached = Family::new(
            "platscope_pagecache_node_bytes",
            Kind::Gauge,
            Some(Unit::Bytes),
            "Page cache and other file-backed pages (FilePages) held by each NUMA node.",
        );
        let mut share = Family::new(
            "platscope_pagecache_node_share_ratio",
            Kind::Gauge,
            Some(Unit::Ratio),
            "Each node's part of all page cache (0-1).",
        );
        let per_node: Vec<(u32, u64)> = nodes
            .iter()
            .filter_map(|&n| self.root.node_memory(n).map(|(_, m)| (n, m.file_bytes)))
            .collect();
        let total: u64 = per_node.iter().map(|(_, b)| b).sum();
        for (node, bytes) in &per_node {
            let node = node.to_string();
            cached.push(&[("node", &node)], *bytes as f64);
            if total > 0 {
                share.push(&[("node", &node)], *bytes as f64 / total as f64);
            }
        }
        for fam in [cached, share] {
            if !fam.samples.is_empty() {
                out.push(fam);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;

    #[test]
    fn per_node_bytes_and_shares_from_a_fixture_tree() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("sys/devices/system/node");
        std::fs::create_dir_all(base.join("node0")).unwrap();
        std::fs::create_dir_all(base.join("node1")).unwrap();
        std::fs::write(base.join("online"), "0-1\n").unwrap();
        let meminfo = |node: u32, file_kb: u64| {
            format!(
                "Node {node} MemTotal: 1000000 kB\nNode {node} MemFree: 500000 kB\n\
                 Node {node} FilePages: {file_kb} kB\nNode {node} AnonPages: 1000 kB\n\
                 Node {node} Shmem: 0 kB\nNode {node} AnonHugePages: 0 kB\n"
            )
        };
        std::fs::write(base.join("node0/meminfo"), meminfo(0, 3000)).unwrap();
        std::fs::write(base.join("node1/meminfo"), meminfo(1, 1000)).unwrap();
        let mut out = Vec::new();
        Pagecache::new(SysRoot::at(dir.path())).collect(&mut out).unwrap();
        let get = |fam: usize, node: &str| match out[fam]
            .samples
            .iter()
            .find(|s| s.labels == crate::Labels::new(&[("node", node)]))
            .map(|s| &s.value)
        {
            Some(Value::Number(v)) => *v,
            other => panic!("{other:?}"),
        };
        assert_eq!(get(0, "0"), 3000.0 * 1024.0);
        assert_eq!(get(1, "1"), 0.25);
    }
}
