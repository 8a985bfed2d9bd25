//! Where a file's page cache is, as text: what was done to it, its pages per node, and the
//! bandwidth of reading it from each node.

use std::fmt::Write as _;

use crate::pagecache::{Backing, EvictResult, FileReport, LoadResult, NodeRead, Residency};
use topo::units::format_bytes;

/// The whole report for one file.
pub fn file_text(f: &FileReport) -> String {
    let r = &f.residency;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} in {} pages of {} on {}",
        f.path,
        format_bytes(r.bytes),
        r.pages,
        format_bytes(r.page_bytes),
        r.filesystem
    );
    if let Some(e) = &f.evict {
        out.push_str(&evict_text(e));
    }
    if let Some(l) = &f.load {
        out.push_str(&load_text(l, r.pages));
    }
    out.push_str(&residency_text(r));
    out.push_str(&reads_text(&f.reads, f.home_node, r));
    out
}

/// The evict step.
pub fn evict_text(e: &EvictResult) -> String {
    let mut out = String::new();
    if let Some(why) = &e.not_a_cache {
        let _ = writeln!(out, "  evict: nothing dropped ({} pages stay): {why}", e.resident_after);
        return out;
    }
    let _ = writeln!(
        out,
        "  evict: {} pages cached before, {} after: {} dropped{}",
        e.resident_before,
        e.resident_after,
        e.dropped(),
        if e.synced { " (dirty pages written back first)" } else { "" }
    );
    if e.resident_after > 0 {
        let _ = writeln!(
            out,
            "  note: the kernel keeps pages that a process has mapped or locked, and pages read or dirtied again meanwhile"
        );
    }
    out
}

/// The load step.
pub fn load_text(l: &LoadResult, pages: u64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  load under policy {}: read {} in {:.2} s; cached pages {} -> {} of {pages}",
        l.policy,
        format_bytes(l.bytes_read),
        l.secs,
        l.resident_before,
        l.resident_after
    );
    if l.resident_before > 0 {
        let _ = writeln!(
            out,
            "  note: the {} pages cached before the load stayed where they were; evict first (--evict --load) to place them all",
            l.resident_before
        );
    }
    if let Some(w) = &l.capacity_warning {
        let _ = writeln!(out, "  warning: {w}");
    }
    out
}

/// Cached pages and their nodes.
pub fn residency_text(r: &Residency) -> String {
    let mut out = String::new();
    let _ =
        writeln!(out, "  cached: {} of {} pages ({:.1}%)", r.resident, r.pages, r.percent_cached);
    if !r.nodes.is_empty() {
        let _ =
            writeln!(out, "    {:<6} {:>12} {:>10} {:>9}", "node", "pages", "of cached", "of file");
        for n in &r.nodes {
            let _ = writeln!(
                out,
                "    {:<6} {:>12} {:>9.1}% {:>8.1}%",
                n.node, n.pages, n.percent_of_cached, n.percent_of_file
            );
        }
    }
    if r.unlocated > 0 {
        let _ = writeln!(
            out,
            "    {} cached pages left the cache before their node could be read",
            r.unlocated
        );
    }
    match r.backing {
        Backing::PageCache => {}
        Backing::Shmem => {
            let _ = writeln!(
                out,
                "  note: tmpfs keeps files in shared memory: each page was placed by the memory policy of whoever wrote it; --load cannot move existing pages and --evict cannot drop them"
            );
        }
        Backing::Ramfs => {
            let _ = writeln!(
                out,
                "  note: ramfs keeps files in memory for good: --load cannot move existing pages and --evict cannot drop them"
            );
        }
    }
    out
}

/// Bandwidth of reading the file from each node.
pub fn reads_text(reads: &[NodeRead], home: Option<u32>, r: &Residency) -> String {
    let mut out = String::new();
    let Some(first) = reads.first() else { return out };
    let ratio_header = home.map_or(String::new(), |h| format!("vs node {h}"));
    let _ = writeln!(
        out,
        "  read with 1 MiB reads, median of {} passes (GB/s = 10^9 bytes/s):",
        first.read.passes.len()
    );
    let _ = writeln!(
        out,
        "    {:<6} {:>5} {:>9} {:>12} {:>10}",
        "node", "cpu", "GB/s", "local cache", ratio_header
    );
    for n in reads {
        let ratio = n.vs_home.map_or(String::new(), |v| format!("{v:.2}x"));
        let _ = writeln!(
            out,
            "    {:<6} {:>5} {:>9.2} {:>11.1}% {:>10}",
            n.node, n.read.cpu, n.read.gbps, n.local_percent, ratio
        );
    }
    for n in reads {
        if n.read.resident_before < n.read.pages {
            let _ = writeln!(
                out,
                "  warning: only {:.1}% of the file was cached before reading from node {}: its first pass read the rest from disk and cached it near node {}",
                crate::pagecache::percent(n.read.resident_before, n.read.pages),
                n.node,
                n.node
            );
        }
    }
    if let Some(h) = home.filter(|_| reads.iter().all(|n| n.vs_home.is_none()) && r.resident > 0) {
        let _ =
            writeln!(out, "  (no ratio: node {h} holds most of the cache but was not read from)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pagecache::{node_shares, percent, ReadPass, ReadResult};
    use crate::{MemPolicy, NodePages};

    fn residency() -> Residency {
        Residency {
            path: "/data/f".into(),
            filesystem: "ext2/ext3/ext4".into(),
            backing: Backing::PageCache,
            bytes: 64 << 20,
            page_bytes: 4096,
            pages: 16384,
            resident: 16384,
            percent_cached: 100.0,
            nodes: node_shares(
                &[NodePages { node: 0, pages: 8200 }, NodePages { node: 1, pages: 8184 }],
                16384,
            ),
            unlocated: 0,
        }
    }

    fn read(node: u32, gbps: f64, vs_home: Option<f64>) -> NodeRead {
        NodeRead {
            node,
            local_percent: percent(if node == 0 { 8200 } else { 8184 }, 16384),
            vs_home,
            read: ReadResult {
                cpu: node,
                resident_before: 16384,
                pages: 16384,
                passes: vec![ReadPass { bytes: 64 << 20, secs: 0.01, gbps }; 3],
                gbps,
            },
        }
    }

    #[test]
    fn interleaved_file_after_evict_and_load() {
        let f = FileReport {
            path: "/data/f".into(),
            evict: Some(EvictResult {
                resident_before: 16384,
                resident_after: 0,
                synced: true,
                not_a_cache: None,
            }),
            load: Some(LoadResult {
                policy: MemPolicy::Interleave(vec![0, 1]),
                resident_before: 0,
                resident_after: 16384,
                bytes_read: 64 << 20,
                secs: 0.41,
                capacity_warning: None,
            }),
            residency: residency(),
            home_node: Some(0),
            reads: vec![read(0, 6.0, Some(1.0)), read(1, 4.9, Some(4.9 / 6.0))],
        };
        let text = file_text(&f);
        println!("{text}");
        let expected = "\
/data/f: 64.0 MiB in 16384 pages of 4.0 KiB on ext2/ext3/ext4
  evict: 16384 pages cached before, 0 after: 16384 dropped (dirty pages written back first)
  load under policy interleave 0-1: read 64.0 MiB in 0.41 s; cached pages 0 -> 16384 of 16384
  cached: 16384 of 16384 pages (100.0%)
    node          pages  of cached   of file
    0              8200      50.0%     50.0%
    1              8184      50.0%     50.0%
  read with 1 MiB reads, median of 3 passes (GB/s = 10^9 bytes/s):
    node     cpu      GB/s  local cache  vs node 0
    0          0      6.00        50.0%      1.00x
    1          1      4.90        50.0%      0.82x
";
        assert_eq!(text, expected);
    }

    #[test]
    fn notes_for_tmpfs_partial_reads_and_kept_pages() {
        let mut r = residency();
        r.backing = Backing::Shmem;
        r.filesystem = "tmpfs".into();
        let text = residency_text(&r);
        assert!(text.contains("tmpfs keeps files in shared memory"), "{text}");

        let e =
            EvictResult { resident_before: 10, resident_after: 2, synced: true, not_a_cache: None };
        assert!(evict_text(&e).contains("mapped or locked"));
        let e = EvictResult { not_a_cache: Some("tmpfs".into()), resident_after: 10, ..e };
        assert!(evict_text(&e).starts_with("  evict: nothing dropped (10 pages stay): tmpfs"));

        let mut partial = read(1, 0.5, None);
        partial.read.resident_before = 4096;
        let text = reads_text(&[partial], Some(0), &r);
        assert!(
            text.contains("only 25.0% of the file was cached before reading from node 1"),
            "{text}"
        );
        assert!(text.contains("node 0 holds most of the cache but was not read from"), "{text}");
    }

    #[test]
    fn load_over_capacity_and_already_cached() {
        let l = LoadResult {
            policy: MemPolicy::Bind(vec![1]),
            resident_before: 100,
            resident_after: 16384,
            bytes_read: 64 << 20,
            secs: 1.0,
            capacity_warning: Some("too big".into()),
        };
        let text = load_text(&l, 16384);
        assert!(text.contains("policy bind 1"), "{text}");
        assert!(text.contains("the 100 pages cached before the load stayed where they were"));
        assert!(text.contains("  warning: too big\n"));
    }
}
