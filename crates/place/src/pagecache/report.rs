//! What is learnt about a file's page cache (residency, loads, evictions, reads) and the pure
//! arithmetic over it: shares per node, runs of resident pages, which node's reads compare.

use serde::{Deserialize, Serialize};
use topo::units::format_bytes;

use crate::{MemPolicy, NodePages};

// For the links in the docs to what fills these in.
#[cfg(doc)]
use super::CacheFile;

/// What keeps a file's pages in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backing {
    /// A disk (or network, or block-device) filesystem: the pages are a cache and can be
    /// dropped.
    PageCache,
    /// tmpfs: the pages are the file itself (shared memory); they leave memory only for swap.
    Shmem,
    /// ramfs: the pages are the file itself and never leave memory.
    Ramfs,
}

/// Pages of a file on one node.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NodeShare {
    pub node: u32,
    pub pages: u64,
    /// Share of the cached pages whose node is known, in percent.
    pub percent_of_cached: f64,
    /// Share of all the file's pages, in percent.
    pub percent_of_file: f64,
}

/// How much of a file is in memory, and on which nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Residency {
    pub path: String,
    /// Filesystem type (`statfs` magic, named when known).
    pub filesystem: String,
    pub backing: Backing,
    pub bytes: u64,
    /// Base page size: the unit of every count here.
    pub page_bytes: u64,
    /// Pages the file spans.
    pub pages: u64,
    /// Pages in memory according to `mincore`.
    pub resident: u64,
    /// `resident` as a percentage of `pages` (0 for an empty file).
    pub percent_cached: f64,
    /// Resident pages per node, ascending by node.
    pub nodes: Vec<NodeShare>,
    /// Pages `mincore` reported resident whose node could not be read: dropped or truncated
    /// between the two looks.
    pub unlocated: u64,
}

impl Residency {
    /// Pages on `node`.
    pub fn pages_on(&self, node: u32) -> u64 {
        self.nodes.iter().find(|n| n.node == node).map_or(0, |n| n.pages)
    }

    /// Share of the located cached pages on `node`, 0..=100.
    pub fn percent_on(&self, node: u32) -> f64 {
        self.nodes.iter().find(|n| n.node == node).map_or(0.0, |n| n.percent_of_cached)
    }
}

/// `part` as a percentage of `whole`; 0 when `whole` is 0.
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Per-node counts with their shares of the located pages and of the whole file.
pub fn node_shares(per_node: &[NodePages], file_pages: u64) -> Vec<NodeShare> {
    let located: u64 = per_node.iter().map(|n| n.pages).sum();
    per_node
        .iter()
        .map(|n| NodeShare {
            node: n.node,
            pages: n.pages,
            percent_of_cached: percent(n.pages, located),
            percent_of_file: percent(n.pages, file_pages),
        })
        .collect()
}

/// Runs of set bit 0 in `mincore`'s vector, as (first page, page count).
pub fn resident_runs(vec: &[u8]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut start = None;
    for (i, &v) in vec.iter().enumerate() {
        match (v & 1 == 1, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                runs.push((s, i - s));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push((s, vec.len() - s));
    }
    runs
}

/// Result of [`CacheFile::load`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadResult {
    /// The policy the reading thread had.
    pub policy: MemPolicy,
    pub resident_before: u64,
    pub resident_after: u64,
    /// Bytes read (the whole file, cached or not).
    pub bytes_read: u64,
    /// Wall time of the read-through.
    pub secs: f64,
    /// Why the file may not stay cached under the policy, when its uncached part is larger than
    /// what the policy's nodes have free or reclaimable.
    pub capacity_warning: Option<String>,
}

/// Result of [`CacheFile::evict`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvictResult {
    pub resident_before: u64,
    pub resident_after: u64,
    /// Whether dirty pages were written back first (`fdatasync`), so that they could be dropped.
    pub synced: bool,
    /// Why nothing was dropped, for files whose pages are not a cache (tmpfs, ramfs).
    pub not_a_cache: Option<String>,
}

impl EvictResult {
    pub fn dropped(&self) -> u64 {
        self.resident_before.saturating_sub(self.resident_after)
    }
}

/// One timed read of the whole file.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReadPass {
    pub bytes: u64,
    pub secs: f64,
    /// 10^9 bytes per second.
    pub gbps: f64,
}

/// Result of [`CacheFile::read_from`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResult {
    pub cpu: u32,
    /// Resident pages before the first pass; below the file's pages the first pass read from
    /// disk (and cached what it read on the reader's node).
    pub resident_before: u64,
    pub pages: u64,
    pub passes: Vec<ReadPass>,
    /// Median over the passes, 10^9 bytes per second.
    pub gbps: f64,
}

/// A timed read of the file from a CPU of one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRead {
    pub node: u32,
    /// Share of the file's located cached pages on this node before the reads, in percent.
    pub local_percent: f64,
    /// This node's GB/s over that of the node holding most of the cache, when that node was
    /// read from too (the local/remote ratio).
    pub vs_home: Option<f64>,
    #[serde(flatten)]
    pub read: ReadResult,
}

/// The node holding most of the located cached pages (the lowest on a tie).
pub fn home_node(r: &Residency) -> Option<u32> {
    r.nodes
        .iter()
        .filter(|n| n.pages > 0)
        .max_by(|a, b| a.pages.cmp(&b.pages).then(b.node.cmp(&a.node)))
        .map(|n| n.node)
}

/// Fills in [`NodeRead::vs_home`]: each node's bandwidth over the home node's.
pub fn compare_reads(reads: &mut [NodeRead], home: Option<u32>) {
    let base = home.and_then(|h| reads.iter().find(|r| r.node == h)).map(|r| r.read.gbps);
    for r in reads.iter_mut() {
        r.vs_home = base.filter(|b| *b > 0.0).map(|b| r.read.gbps / b);
    }
}

/// Everything done to and learnt about one file, in the order it was done: evict, load, then
/// the residency, then reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileReport {
    pub path: String,
    pub evict: Option<EvictResult>,
    pub load: Option<LoadResult>,
    pub residency: Residency,
    /// The node [`compare_reads`] compared against.
    pub home_node: Option<u32>,
    pub reads: Vec<NodeRead>,
}

/// The warning for loading `bytes` into nodes that can give `available`.
pub fn capacity_message(bytes: u64, available: u64, nodes: &[u32]) -> Option<String> {
    (bytes > available).then(|| {
        format!(
            "{} to cache but node(s) {} have only {} free or reclaimable: the load pushes out other cached data, and the file cannot stay fully cached there",
            format_bytes(bytes),
            topo::idlist::format(nodes),
            format_bytes(available)
        )
    })
}

// The name is defined in `measure`, where the exporter reads it without this crate.
pub use measure::names::PAGECACHE_READ;

impl measure::ToMetrics for FileReport {
    fn to_metrics(&self) -> Vec<measure::Metric> {
        self.reads
            .iter()
            .map(|read| {
                let passes = read.read.passes.iter().map(|p| p.gbps).collect();
                measure::Metric::new(PAGECACHE_READ, measure::Unit::GigabytesPerSecond, passes)
                    .label("file", &self.path)
                    .label("node", read.node)
            })
            .collect()
    }

    fn placements(&self) -> Vec<measure::WorkerPlacement> {
        let worker = format!("page cache of {}", self.path);
        vec![measure::WorkerPlacement::new(worker, &self.load, &self.residency)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_resident_pages() {
        assert_eq!(resident_runs(&[]), vec![]);
        assert_eq!(resident_runs(&[0, 0]), vec![]);
        assert_eq!(resident_runs(&[1, 1, 0, 1, 0, 0, 1, 1, 1]), vec![(0, 2), (3, 1), (6, 3)]);
        // Only bit 0 means resident; the other bits are reserved.
        assert_eq!(resident_runs(&[0b10, 0b11, 0b1]), vec![(1, 2)]);
    }

    #[test]
    fn shares_of_cached_and_of_file() {
        let per_node = [NodePages { node: 0, pages: 300 }, NodePages { node: 1, pages: 100 }];
        let s = node_shares(&per_node, 1000);
        assert_eq!(s.len(), 2);
        assert!((s[0].percent_of_cached - 75.0).abs() < 1e-9);
        assert!((s[0].percent_of_file - 30.0).abs() < 1e-9);
        assert!((s[1].percent_of_cached - 25.0).abs() < 1e-9);
        assert!((s[1].percent_of_file - 10.0).abs() < 1e-9);
        assert!(node_shares(&[], 0).is_empty());
        assert_eq!(percent(5, 0), 0.0);
        assert_eq!(percent(1, 8), 12.5);
    }

    #[test]
    fn residency_lookups() {
        let r = Residency {
            path: "f".into(),
            filesystem: "ext2/ext3/ext4".into(),
            backing: Backing::PageCache,
            bytes: 10 * 4096 - 100,
            page_bytes: 4096,
            pages: 10,
            resident: 4,
            percent_cached: percent(4, 10),
            nodes: node_shares(&[NodePages { node: 1, pages: 4 }], 10),
            unlocated: 0,
        };
        assert_eq!(r.pages_on(1), 4);
        assert_eq!(r.pages_on(0), 0);
        assert_eq!(r.percent_on(1), 100.0);
        assert_eq!(r.percent_cached, 40.0);
    }

    #[test]
    fn capacity_message_only_when_over() {
        assert_eq!(capacity_message(10, 20, &[0]), None);
        let m = capacity_message(3 << 30, 1 << 30, &[1]).expect("over");
        assert!(m.contains("3.0 GiB") && m.contains("node(s) 1") && m.contains("1.0 GiB"), "{m}");
    }

    fn read(node: u32, gbps: f64) -> NodeRead {
        NodeRead {
            node,
            local_percent: 0.0,
            vs_home: None,
            read: ReadResult { cpu: node, resident_before: 1, pages: 1, passes: vec![], gbps },
        }
    }

    #[test]
    fn reads_compare_against_the_node_holding_the_cache() {
        let mut r = Residency {
            path: "f".into(),
            filesystem: "xfs".into(),
            backing: Backing::PageCache,
            bytes: 4096 * 100,
            page_bytes: 4096,
            pages: 100,
            resident: 100,
            percent_cached: 100.0,
            nodes: node_shares(
                &[NodePages { node: 0, pages: 10 }, NodePages { node: 1, pages: 90 }],
                100,
            ),
            unlocated: 0,
        };
        assert_eq!(home_node(&r), Some(1));
        // The Nehalem NUMA-vs-interleaved article's numbers: 6.0 GB/s local, 4.9 GB/s from the
        // other node.
        let mut reads = vec![read(0, 4.9), read(1, 6.0)];
        compare_reads(&mut reads, home_node(&r));
        assert!((reads[0].vs_home.expect("ratio") - 4.9 / 6.0).abs() < 1e-12);
        assert_eq!(reads[1].vs_home, Some(1.0));
        // Home not read from: no ratio rather than a made-up one.
        let mut only_0 = vec![read(0, 4.9)];
        compare_reads(&mut only_0, Some(1));
        assert_eq!(only_0[0].vs_home, None);
        // A tie goes to the lower node; nothing cached, no home.
        r.nodes =
            node_shares(&[NodePages { node: 0, pages: 50 }, NodePages { node: 1, pages: 50 }], 100);
        assert_eq!(home_node(&r), Some(0));
        r.nodes.clear();
        assert_eq!(home_node(&r), None);
    }

    #[test]
    fn eviction_arithmetic() {
        let e =
            EvictResult { resident_before: 10, resident_after: 3, synced: true, not_a_cache: None };
        assert_eq!(e.dropped(), 7);
        let e = EvictResult { resident_after: 12, ..e };
        assert_eq!(e.dropped(), 0, "pages read back in meanwhile are not negative drops");
    }
}
