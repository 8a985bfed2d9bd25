//! How much of an arena the kernel really backs with transparent huge pages, and the words a
//! run uses for the pages it got.
//!
//! Asking for THP (`MADV_HUGEPAGE`) is a request: with THP set to `never`, with memory too
//! fragmented to find 2 MiB, or with defrag off, the kernel gives base pages instead and says
//! nothing. So a THP arena's huge share is read back: per page from `/proc/self/pagemap` and
//! `/proc/kpageflags` when the frames are visible (root), else from `AnonHugePages` in
//! `/proc/self/smaps` for the arena's mappings.

use std::fs::File;
use std::os::unix::fs::FileExt;

use serde::{Deserialize, Serialize};
use topo::facts::exact_bytes;

use crate::PageSize;

/// Where a THP arena's huge-page count was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HugeSource {
    /// Each 2 MiB of the arena: its frames (`/proc/self/pagemap`) and their flags
    /// (`/proc/kpageflags`); needs CAP_SYS_ADMIN.
    Kpageflags,
    /// `AnonHugePages` of the mappings that hold the arena (`/proc/self/smaps`).
    Smaps,
}

const BASE: usize = 4096;
const PMD: usize = 2 << 20;
const PER_PMD: usize = PMD / BASE;
/// pagemap: bit 63 page present, bits 0–54 its frame number (zero without CAP_SYS_ADMIN).
const PM_PRESENT: u64 = 1 << 63;
const PM_PFN: u64 = (1 << 55) - 1;
/// kpageflags bits (Documentation/admin-guide/mm/pagemap.rst): compound head, THP.
const KPF_COMPOUND_HEAD: u64 = 1 << 15;
const KPF_THP: u64 = 1 << 22;

/// Bytes of the 2 MiB-aligned range at `start` that are PMD-size transparent huge pages, and
/// where that was read; `None` when neither source can be read.
pub(crate) fn huge_bytes(start: usize, len: usize) -> Option<(u64, HugeSource)> {
    if let Some(bytes) = kpageflags_huge_bytes(start, len) {
        return Some((bytes, HugeSource::Kpageflags));
    }
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    Some((crate::anon_huge_bytes_in(&smaps, start as u64, len as u64), HugeSource::Smaps))
}

/// The huge share by frames and their flags; `None` when the files cannot be read or hide the
/// frames (not root).
fn kpageflags_huge_bytes(start: usize, len: usize) -> Option<u64> {
    let pagemap = File::open("/proc/self/pagemap").ok()?;
    let flags = File::open("/proc/kpageflags").ok()?;
    let mut entries = vec![0u64; PER_PMD];
    let mut raw = vec![0u8; PER_PMD * 8];
    let mut huge = 0;
    let mut frames_seen = false;
    for chunk in (start..start + len).step_by(PMD) {
        let n = ((start + len - chunk) / BASE).min(PER_PMD);
        pagemap.read_exact_at(&mut raw[..n * 8], (chunk / BASE * 8) as u64).ok()?;
        for (e, b) in entries.iter_mut().zip(raw.chunks_exact(8)).take(n) {
            *e = u64::from_le_bytes(b.try_into().ok()?);
        }
        frames_seen |= entries[..n].iter().any(|e| e & PM_PRESENT != 0 && e & PM_PFN != 0);
        let Some(head) = pmd_head_frame(&entries[..n]) else { continue };
        let mut word = [0u8; 8];
        flags.read_exact_at(&mut word, head * 8).ok()?;
        if is_thp_head(u64::from_le_bytes(word)) {
            huge += PMD as u64;
        }
    }
    if frames_seen {
        Some(huge)
    } else {
        // No frame seen: nothing present, or present pages whose frames the kernel hid.
        nothing_present(start, len, &pagemap)
    }
}

/// A range with no present page at all (never touched) has no huge page either: 0, not unknown.
fn nothing_present(start: usize, len: usize, pagemap: &File) -> Option<u64> {
    let mut word = [0u8; 8];
    for page in (start..start + len).step_by(BASE) {
        pagemap.read_exact_at(&mut word, (page / BASE * 8) as u64).ok()?;
        if u64::from_le_bytes(word) & PM_PRESENT != 0 {
            return None;
        }
    }
    Some(0)
}

/// The frame of a 2 MiB stretch's first page when its 512 pages could be one PMD-size THP: all
/// present, on consecutive frames from a 2 MiB-aligned one. `None` otherwise (or when the
/// frames are hidden, as they read 0).
pub(crate) fn pmd_head_frame(entries: &[u64]) -> Option<u64> {
    let first = *entries.first()? & PM_PFN;
    let aligned = first != 0 && first.is_multiple_of(PER_PMD as u64);
    let contiguous = entries.len() == PER_PMD
        && entries
            .iter()
            .zip(first..)
            .all(|(&e, frame)| e & PM_PRESENT != 0 && e & PM_PFN == frame);
    (aligned && contiguous).then_some(first)
}

/// Whether a frame's kpageflags word marks the head of a transparent huge page.
pub(crate) fn is_thp_head(flags: u64) -> bool {
    flags & KPF_THP != 0 && flags & KPF_COMPOUND_HEAD != 0
}

/// The system's THP mode now (`always`, `madvise`, `never`); `None` without THP support.
pub(crate) fn thp_mode() -> Option<String> {
    let text = topo::sysfs::SysRoot::live().read("sys/kernel/mm/transparent_hugepage/enabled")?;
    topo::sysfs::bracketed_choice(&text).map(str::to_string)
}

/// What a run says of its pages: `4k pages`, `2m pages`, and for THP what it got —
/// `thp pages: all 512 MiB huge`, or `thp requested: 0 of 512 MiB huge; THP is 'never'` —
/// from `bytes` mapped, `huge` of them in huge pages (`None`: could not be read) and the THP
/// mode. hugetlb pages are what the mapping is made of, so they need no reading back.
pub fn describe_pages(page: PageSize, bytes: u64, huge: Option<u64>, mode: Option<&str>) -> String {
    if page != PageSize::Thp {
        return format!("{page} pages");
    }
    let mode = mode.map_or(String::new(), |m| format!("; THP is '{m}'"));
    match huge {
        Some(h) if h >= bytes && bytes > 0 => format!("thp pages: all {} huge", exact_bytes(bytes)),
        Some(h) => {
            let got = if h == 0 { "0".to_string() } else { exact_bytes(h) };
            format!("thp requested: {got} of {} huge{mode}", exact_bytes(bytes))
        }
        None => format!("thp requested: how much is huge unknown (no /proc/self/smaps){mode}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn says_what_the_pages_were() {
        assert_eq!(describe_pages(PageSize::Base, 64 * MIB, None, Some("always")), "4k pages");
        assert_eq!(describe_pages(PageSize::Huge1G, 1 << 30, None, None), "1g pages");
        assert_eq!(
            describe_pages(PageSize::Thp, 512 * MIB, Some(0), Some("never")),
            "thp requested: 0 of 512 MiB huge; THP is 'never'"
        );
        assert_eq!(
            describe_pages(PageSize::Thp, 512 * MIB, Some(510 * MIB), Some("madvise")),
            "thp requested: 510 MiB of 512 MiB huge; THP is 'madvise'"
        );
        assert_eq!(
            describe_pages(PageSize::Thp, 512 * MIB, Some(512 * MIB), Some("madvise")),
            "thp pages: all 512 MiB huge"
        );
        assert_eq!(
            describe_pages(PageSize::Thp, 2 * MIB, None, None),
            "thp requested: how much is huge unknown (no /proc/self/smaps)"
        );
        // "thp pages" only when every byte is huge.
        for huge in [0, 2 * MIB, 30 * MIB] {
            let text = describe_pages(PageSize::Thp, 32 * MIB, Some(huge), Some("always"));
            assert!(text.starts_with("thp requested: "), "{text}");
        }
    }

    fn entry(frame: u64) -> u64 {
        PM_PRESENT | frame
    }

    #[test]
    fn a_pmd_thp_is_512_consecutive_frames_from_an_aligned_one() {
        let run: Vec<u64> = (0..512).map(|i| entry(0x8_0000 + i)).collect();
        assert_eq!(pmd_head_frame(&run), Some(0x8_0000));
        // Unaligned first frame, a gap, a page not present, frames hidden (0), too few pages.
        let unaligned: Vec<u64> = (0..512).map(|i| entry(0x8_0001 + i)).collect();
        assert_eq!(pmd_head_frame(&unaligned), None);
        let mut gap = run.clone();
        gap[300] = entry(0x9_9999);
        assert_eq!(pmd_head_frame(&gap), None);
        let mut absent = run.clone();
        absent[511] = 0;
        assert_eq!(pmd_head_frame(&absent), None);
        assert_eq!(pmd_head_frame(&vec![PM_PRESENT; 512]), None);
        assert_eq!(pmd_head_frame(&run[..256]), None);
        assert_eq!(pmd_head_frame(&[]), None);
        assert!(is_thp_head(KPF_THP | KPF_COMPOUND_HEAD | 1 << 5));
        assert!(!is_thp_head(KPF_THP), "a tail page");
        assert!(!is_thp_head(KPF_COMPOUND_HEAD), "hugetlb or another compound page");
    }
}
