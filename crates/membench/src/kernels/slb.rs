//! The Silly Little Benchmark's work loop: 8-byte stores to pseudo-random 4 KiB pages, each
//! within the page's first 64 bytes (one cache line), as memhammer did.

/// The SLB page size: memhammer allocated and addressed 4 KiB pages.
pub const SLB_PAGE: usize = 4096;

/// One step of a 64-bit linear congruential generator (Knuth's MMIX constants): a multiply and
/// an add, cheap enough to hide under a memory miss.
#[inline(always)]
pub fn lcg(x: u64) -> u64 {
    x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407)
}

/// Performs `ops` writes into `pages` 4 KiB pages at `base`, continuing the generator from
/// `*state`. Page choice uses the generator's high 32 bits (multiply-shift, no division); the
/// 8-byte word within the first line uses three more bits.
///
/// # Safety
/// `base` must be valid for writes of `pages * 4096` bytes, `pages` ≥ 1 and < 2^32.
#[inline(never)]
pub unsafe fn slb_writes(base: *mut u8, pages: u64, ops: u64, state: &mut u64) {
    let mut x = *state;
    for _ in 0..ops {
        x = lcg(x);
        let page = ((x >> 32) * pages) >> 32;
        let word = (x >> 29) & 7;
        let offset = page as usize * SLB_PAGE + word as usize * 8;
        // SAFETY: page < pages and word < 8, so the 8-byte store is inside the buffer; the
        // offset is 8-byte aligned and base is page-aligned.
        unsafe { base.add(offset).cast::<u64>().write_volatile(x) };
    }
    *state = x;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_stay_in_first_line_of_pages_and_cover_them() {
        let pages = 37u64;
        let mut buf = vec![0u8; pages as usize * SLB_PAGE];
        let mut state = 12345;
        // SAFETY: buf holds `pages` pages.
        unsafe { slb_writes(buf.as_mut_ptr(), pages, 20_000, &mut state) };
        for (i, page) in buf.chunks(SLB_PAGE).enumerate() {
            assert!(page[64..].iter().all(|&b| b == 0), "page {i} written beyond its first line");
            assert!(page[..64].iter().any(|&b| b != 0), "page {i} never written");
        }
        assert_ne!(state, 12345);
    }
}
