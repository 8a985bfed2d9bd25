//! `Arena`: memory with a policy and a page size, first-touched by the thread that creates it,
//! and able to say where its pages really are.

use std::io;
use std::ptr::NonNull;

use serde::{Deserialize, Serialize};
use topo::sysfs::SysRoot;
use topo::units::format_bytes;
use topo::{idlist, Topology};

use crate::huge::{describe_pages, huge_bytes, thp_mode as thp_mode_now, HugeSource};
use crate::pagenodes::{pages_nodes, tally_nodes};
use crate::policy::{thread_policy, MemPolicy};
use crate::{PageSize, PlaceError};

/// What to allocate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArenaSpec {
    pub bytes: u64,
    pub policy: MemPolicy,
    pub page: PageSize,
}

/// A private anonymous mapping, placed and touched. Unmapped on drop.
#[derive(Debug)]
pub struct Arena {
    ptr: NonNull<u8>,
    len: usize,
    spec: ArenaSpec,
}

// SAFETY: the arena exclusively owns its mapping; moving it to another thread moves that
// ownership. Shared access goes through `&self`/`&mut self` like any buffer.
unsafe impl Send for Arena {}
// SAFETY: `&Arena` only gives read access to the bytes.
unsafe impl Sync for Arena {}

const BASE_PAGE: usize = 4096;
const MAP_HUGE_SHIFT: i32 = 26;
/// How much first touch does between looks at the stop flag (a few milliseconds of faults).
const TOUCH_CHECK: usize = 16 << 20;

impl Arena {
    /// Maps `spec.bytes` (rounded up to whole pages), applies the policy and page size, then
    /// touches every page from the calling thread so the kernel places it now. Refuses, before
    /// mapping anything, to take more than the target nodes can give.
    pub fn new(spec: ArenaSpec, topology: &Topology) -> Result<Self, PlaceError> {
        let page =
            usize::try_from(spec.page.bytes()).map_err(|_| PlaceError::TooLarge(spec.bytes))?;
        let len = usize::try_from(spec.bytes)
            .ok()
            .and_then(|b| b.checked_next_multiple_of(page))
            .ok_or(PlaceError::TooLarge(spec.bytes))?;
        check_capacity(&spec, len as u64, topology)?;
        let ptr = map(len, spec.page)?;
        let arena = Arena { ptr, len, spec };
        // SAFETY: the range is the mapping just made and nothing has touched it yet.
        unsafe { arena.spec.policy.apply_to_range(arena.ptr.as_ptr(), arena.len)? };
        arena.touch()?;
        Ok(arena)
    }

    /// First touch, checking the stop flag every [`TOUCH_CHECK`] bytes so Ctrl-C or SIGTERM
    /// during a large allocation is honoured at once (the arena is unmapped on the way out).
    fn touch(&self) -> Result<(), measure::stop::Interrupted> {
        let stride =
            if self.spec.page.is_hugetlb() { self.spec.page.bytes() as usize } else { BASE_PAGE };
        for chunk in (0..self.len).step_by(TOUCH_CHECK.max(stride)) {
            measure::stop::check("touching the buffer's pages")?;
            let end = (chunk + TOUCH_CHECK.max(stride)).min(self.len);
            for offset in (chunk..end).step_by(stride) {
                // SAFETY: offset < len, inside the mapping; a volatile write so the fault
                // happens here, on this thread, and is not optimized away.
                unsafe { self.ptr.as_ptr().add(offset).write_volatile(0) };
            }
        }
        Ok(())
    }

    /// Checks, without allocating, that an arena of this spec would fit in what its nodes can
    /// give; several workers' arenas can be checked together by summing their bytes.
    pub fn check_fits(spec: &ArenaSpec, topology: &Topology) -> Result<(), PlaceError> {
        let page = spec.page.bytes();
        let len =
            spec.bytes.checked_next_multiple_of(page).ok_or(PlaceError::TooLarge(spec.bytes))?;
        check_capacity(spec, len, topology)
    }

    /// Length in bytes (the request rounded up to whole pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: a zero-byte arena cannot be made.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn spec(&self) -> &ArenaSpec {
        &self.spec
    }

    /// The first byte, for reading only (`&self` is shared).
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr().cast_const()
    }

    /// The first byte, for writing: `&mut self` makes the writer the only user.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the mapping is len bytes, readable, initialized (zero-filled by the kernel),
        // and lives as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in as_slice, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Where the pages are now: asks the kernel (`move_pages` without moving) for each page's
    /// node.
    pub fn placement(&self) -> Result<Placement, PlaceError> {
        let stride =
            if self.spec.page.is_hugetlb() { self.spec.page.bytes() as usize } else { BASE_PAGE };
        let addresses: Vec<*const libc::c_void> = (0..self.len)
            .step_by(stride)
            .map(|o| self.ptr.as_ptr().wrapping_add(o).cast_const().cast())
            .collect();
        let (per_node, not_present) = tally_nodes(pages_nodes(&addresses)?);
        let (mut thp_bytes, mut thp_source, mut thp_mode) = (None, None, None);
        if self.spec.page == PageSize::Thp {
            if let Some((bytes, source)) = huge_bytes(self.ptr.as_ptr() as usize, self.len) {
                (thp_bytes, thp_source) = (Some(bytes), Some(source));
            }
            thp_mode = thp_mode_now();
        }
        Ok(Placement {
            requested: self.spec.policy.clone(),
            page: self.spec.page,
            bytes: self.len as u64,
            page_bytes: stride as u64,
            per_node,
            not_present,
            thp_bytes,
            thp_source,
            thp_mode,
        })
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly the mapping made in `map`; nothing borrows it past drop.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

fn map(len: usize, page: PageSize) -> Result<NonNull<u8>, PlaceError> {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
    let huge_align = 2usize << 20;
    let map_len = match page {
        PageSize::Huge2M => {
            flags = libc::MAP_PRIVATE
                | libc::MAP_ANONYMOUS
                | libc::MAP_HUGETLB
                | (21 << MAP_HUGE_SHIFT);
            len
        }
        PageSize::Huge1G => {
            flags = libc::MAP_PRIVATE
                | libc::MAP_ANONYMOUS
                | libc::MAP_HUGETLB
                | (30 << MAP_HUGE_SHIFT);
            len
        }
        // Over-map so a 2 MiB-aligned range can be cut out: THP only backs aligned ranges.
        PageSize::Thp => len + huge_align,
        PageSize::Base => len,
    };
    // SAFETY: an anonymous mapping at a kernel-chosen address; no existing memory is affected.
    let raw = unsafe { libc::mmap(std::ptr::null_mut(), map_len, prot, flags, -1, 0) };
    if raw == libc::MAP_FAILED {
        let source = io::Error::last_os_error();
        return Err(if page.is_hugetlb() {
            PlaceError::HugePages { page, detail: format!("mmap failed: {source}") }
        } else {
            PlaceError::Syscall { call: "mmap", source }
        });
    }
    let mut start = raw as usize;
    if page == PageSize::Thp {
        let aligned = start.next_multiple_of(huge_align);
        let (head, tail) = (aligned - start, map_len - len - (aligned - start));
        // SAFETY: both trims are inside the mapping just made and outside the range we keep.
        unsafe {
            if head > 0 {
                libc::munmap(raw, head);
            }
            if tail > 0 {
                libc::munmap((aligned + len) as *mut libc::c_void, tail);
            }
        }
        start = aligned;
    }
    let advice = match page {
        PageSize::Base => Some(libc::MADV_NOHUGEPAGE),
        PageSize::Thp => Some(libc::MADV_HUGEPAGE),
        _ => None,
    };
    if let Some(advice) = advice {
        // SAFETY: the range is our mapping.
        if unsafe { libc::madvise(start as *mut libc::c_void, len, advice) } != 0 {
            let source = io::Error::last_os_error();
            // SAFETY: unmapping what we mapped, on the error path.
            unsafe { libc::munmap(start as *mut libc::c_void, len) };
            return Err(PlaceError::Syscall { call: "madvise", source });
        }
    }
    NonNull::new(start as *mut u8).ok_or(PlaceError::Syscall {
        call: "mmap",
        source: io::Error::other("returned a null mapping"),
    })
}

/// The nodes an allocation under `policy` may draw from, among `memory_nodes`.
fn candidate_nodes(policy: &MemPolicy, memory_nodes: &[u32]) -> Vec<u32> {
    let inherited;
    let restricted = match policy {
        MemPolicy::Inherit => {
            inherited = thread_policy().ok().filter(|p| p.mode == "bind" || p.mode == "interleave");
            inherited.as_ref().map(|p| p.nodes.as_slice())
        }
        other => other.restricted_nodes(),
    };
    match restricted {
        Some(nodes) => nodes.iter().copied().filter(|n| memory_nodes.contains(n)).collect(),
        None => memory_nodes.to_vec(),
    }
}

/// Memory the kernel can hand out on a node without swapping: free pages plus page cache it
/// can drop (file pages that are not shmem/tmpfs).
pub(crate) fn node_available(root: &SysRoot, node: u32) -> Option<u64> {
    let (_, m) = root.node_memory(node)?;
    Some(m.free_bytes + m.file_bytes.saturating_sub(m.shmem_bytes))
}

fn check_capacity(spec: &ArenaSpec, len: u64, topology: &Topology) -> Result<(), PlaceError> {
    // Limits other than free memory first: a buffer that fits the nodes but not the process's
    // address-space limit or its cgroup would fail later, on an allocation the run makes.
    crate::limits::ProcessLimits::live().check(len)?;
    let root = SysRoot::live();
    let memory_nodes = topology.nodes_with_memory();
    let nodes = candidate_nodes(&spec.policy, &memory_nodes);
    if spec.page.is_hugetlb() {
        let page_bytes = spec.page.bytes();
        let needed = len / page_bytes;
        let free: u64 = nodes
            .iter()
            .flat_map(|&n| root.node_hugepages(n))
            .filter(|p| p.page_bytes == page_bytes)
            .map(|p| p.free)
            .sum();
        if free < needed {
            return Err(PlaceError::HugePages {
                page: spec.page,
                detail: format!(
                    "{needed} needed on node(s) {}, {free} free",
                    idlist::format(&nodes)
                ),
            });
        }
        return Ok(());
    }
    let per_node: Option<Vec<u64>> = nodes.iter().map(|&n| node_available(&root, n)).collect();
    let Some(per_node) = per_node else { return Ok(()) }; // no per-node figures: nothing to check
    let mut available: u64 = per_node.iter().sum();
    if nodes.len() == memory_nodes.len() {
        // All memory is eligible: the machine-wide figure also counts memory the kernel has not
        // attributed to a node yet (hot-plugged memory in some VMs grows a node on demand).
        if let Some(machine) = root.meminfo_bytes("MemAvailable") {
            available = available.max(machine);
        }
    }
    if len > available {
        return Err(PlaceError::InsufficientMemory {
            requested: format_bytes(len),
            available: format_bytes(available),
            nodes: idlist::format(&nodes),
        });
    }
    Ok(())
}

/// Sums `AnonHugePages` over the `/proc/self/smaps` mappings that overlap `[start, start+len)`.
pub fn anon_huge_bytes_in(smaps: &str, start: u64, len: u64) -> u64 {
    let end = start + len;
    let mut inside = false;
    let mut total = 0;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = first.split_once('-') {
            if let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) {
                inside = lo < end && hi > start;
                continue;
            }
        }
        if inside {
            if let Some(rest) = line.strip_prefix("AnonHugePages:") {
                let kib: u64 =
                    rest.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0);
                total += kib * 1024;
            }
        }
    }
    total
}

/// What several arenas of one run (a thread's buffers, each worker's arena) are, in the words
/// of [`Placement::pages_label`] over their sum; `None` for none.
pub fn pages_label_of(placements: &[Placement]) -> Option<String> {
    let first = placements.first()?;
    let bytes = placements.iter().map(|p| p.bytes).sum();
    let huge = placements.iter().map(|p| p.thp_bytes).sum::<Option<u64>>();
    let mode = placements.iter().find_map(|p| p.thp_mode.as_deref());
    Some(describe_pages(first.page, bytes, huge, mode))
}

/// Pages of an arena on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePages {
    pub node: u32,
    pub pages: u64,
}

/// Requested versus actual placement of an arena.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub requested: MemPolicy,
    pub page: PageSize,
    pub bytes: u64,
    /// Granularity of the counts below: 4 KiB, or the hugetlb page size.
    pub page_bytes: u64,
    pub per_node: Vec<NodePages>,
    /// Pages not resident when asked (never touched, or swapped out).
    pub not_present: u64,
    /// For THP arenas, how much of the range is backed by huge pages (read as
    /// [`Placement::thp_source`] says); `None` for other pages, or when it could not be read.
    pub thp_bytes: Option<u64>,
    /// Where `thp_bytes` was read; absent in placements stored before it was recorded (those
    /// read `AnonHugePages`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thp_source: Option<HugeSource>,
    /// For THP arenas, the system's THP mode (`always`, `madvise`, `never`) when placed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thp_mode: Option<String>,
}

impl Placement {
    /// `bytes` of base pages under the inherited policy, `per_node` as counted, every page
    /// resident: what a run on a machine without THP or a policy records (and what tests and
    /// made-up outcomes build).
    pub fn base_pages(bytes: u64, per_node: Vec<NodePages>) -> Self {
        Placement {
            requested: MemPolicy::Inherit,
            page: PageSize::Base,
            bytes,
            page_bytes: 4096,
            per_node,
            not_present: 0,
            thp_bytes: None,
            thp_source: None,
            thp_mode: None,
        }
    }

    /// Pages counted, resident or not.
    pub fn total_pages(&self) -> u64 {
        self.per_node.iter().map(|n| n.pages).sum::<u64>() + self.not_present
    }

    /// Pages on `node`.
    pub fn pages_on(&self, node: u32) -> u64 {
        self.per_node.iter().find(|n| n.node == node).map_or(0, |n| n.pages)
    }

    /// Share of all pages on `node`, 0..=1.
    pub fn fraction_on(&self, node: u32) -> f64 {
        match self.total_pages() {
            0 => 0.0,
            total => self.pages_on(node) as f64 / total as f64,
        }
    }

    /// What the arena's pages are, as a run says it: `4k pages`, `thp pages: all 64 MiB huge`,
    /// `thp requested: 0 of 512 MiB huge; THP is 'never'` ([`describe_pages`]).
    pub fn pages_label(&self) -> String {
        describe_pages(self.page, self.bytes, self.thp_bytes, self.thp_mode.as_deref())
    }

    /// Whether every page is resident on one of `nodes`.
    pub fn all_on(&self, nodes: &[u32]) -> bool {
        self.not_present == 0 && self.per_node.iter().all(|n| nodes.contains(&n.node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Trimmed from /proc/self/smaps on the development VM (kernel 6.18).
    const SMAPS: &str = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Size:               4096 kB
AnonHugePages:      4096 kB
7f0000400000-7f0000600000 rw-p 00000000 00:00 0
Size:               2048 kB
AnonHugePages:      2048 kB
7f0000600000-7f0000601000 r--p 00000000 08:01 1234    /usr/lib/libc.so.6
AnonHugePages:         0 kB
";

    #[test]
    fn sums_huge_pages_of_overlapping_mappings() {
        assert_eq!(anon_huge_bytes_in(SMAPS, 0x7f00_0000_0000, 4 << 20), 4 << 20);
        assert_eq!(anon_huge_bytes_in(SMAPS, 0x7f00_0000_0000, 6 << 20), 6 << 20);
        assert_eq!(anon_huge_bytes_in(SMAPS, 0x7f00_0060_0000, 4096), 0);
    }

    #[test]
    fn placement_fractions() {
        let p = Placement {
            requested: MemPolicy::Interleave(vec![0, 1]),
            page: PageSize::Base,
            bytes: 4 << 12,
            page_bytes: 4096,
            per_node: vec![NodePages { node: 0, pages: 3 }, NodePages { node: 1, pages: 1 }],
            not_present: 0,
            thp_bytes: None,
            thp_source: None,
            thp_mode: None,
        };
        assert_eq!(p.total_pages(), 4);
        assert_eq!(p.pages_label(), "4k pages");
        assert!((p.fraction_on(0) - 0.75).abs() < 1e-9);
        assert!(p.all_on(&[0, 1]));
        assert!(!p.all_on(&[1]));
    }
}
