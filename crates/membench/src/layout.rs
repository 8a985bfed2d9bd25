//! Building pointer-chase chains that hardware prefetchers cannot follow.
//!
//! The buffer is cut into slots of `stride` bytes. Slots are visited in a random cyclic order
//! within groups of `group_bytes` (a TLB-locality window: default 64 pages, as multichase), and
//! the groups themselves in random order. Each slot's first word holds the next slot's address.
//! A group as large as the buffer gives a fully random order (every load may miss the TLB);
//! [`Access::Sequential`] links slots in address order, which prefetchers follow easily — the
//! reference for the prefetch self-check.
//!
//! A slot wider than a cache line holds its pointer in one of its lines chosen at random (the
//! same line every time for a given seed and slot). At offset 0 of every slot, a 256-byte stride
//! would put all pointers in lines whose set-index bits 6–7 are zero: a quarter of every cache's
//! sets, so caches would look a quarter of their size (found against multichase, which spreads
//! its slots the same way).

use serde::{Deserialize, Serialize};

use crate::rng::SplitMix64;
use crate::BenchError;

/// Visiting order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    Random,
    Sequential,
}

/// The shape of a chase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChaseLayout {
    pub stride: usize,
    /// Bytes in one TLB-locality group (rounded to whole slots); `usize::MAX` for no grouping.
    pub group_bytes: usize,
    pub access: Access,
    pub seed: u64,
}

impl Default for ChaseLayout {
    fn default() -> Self {
        Self { stride: 64, group_bytes: 64 * 4096, access: Access::Random, seed: 0x5EED }
    }
}

/// The order in which slots `0..slots` are visited. Stops early (`Err`) on Ctrl-C or SIGTERM:
/// shuffling hundreds of millions of slots takes seconds.
pub fn visit_order(slots: usize, layout: &ChaseLayout) -> Result<Vec<u32>, BenchError> {
    const CHECK: usize = 1 << 20;
    let what = "shuffling the pointer chase";
    // Hundreds of MiB for large buffers: a failed allocation is an error, not an abort.
    let mut order: Vec<u32> = try_vec(slots, "the pointer chase's visiting order")?;
    order.extend(0..slots as u32);
    if layout.access == Access::Sequential {
        return Ok(order);
    }
    let mut rng = SplitMix64::new(layout.seed);
    let per_group = (layout.group_bytes / layout.stride).clamp(1, slots.max(1));
    let mut since_check = 0;
    for group in order.chunks_mut(per_group) {
        since_check += group.len();
        if since_check >= CHECK {
            measure::stop::check(what)?;
            since_check = 0;
        }
        rng.shuffle(group);
    }
    measure::stop::check(what)?;
    let mut groups: Vec<&[u32]> = try_vec(slots.div_ceil(per_group), "the chase's groups")?;
    groups.extend(order.chunks(per_group));
    rng.shuffle(&mut groups);
    measure::stop::check(what)?;
    let mut shuffled = try_vec(slots, "the pointer chase's visiting order")?;
    for group in groups {
        shuffled.extend_from_slice(group);
    }
    Ok(shuffled)
}

/// An empty vector with room for `len` items, or [`BenchError::OutOfMemory`].
fn try_vec<T>(len: usize, what: &'static str) -> Result<Vec<T>, BenchError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| BenchError::OutOfMemory {
        what,
        bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })?;
    Ok(v)
}

/// Writes the chain into `buf` and returns its first slot. The buffer must hold at least one
/// slot; slots are `stride` bytes, `stride` ≥ 8 and a multiple of 8. Building over gigabytes
/// takes seconds: Ctrl-C or SIGTERM ([`measure::stop`]) ends it early with `Err`, as does a
/// failed allocation of its visiting order.
pub fn build_chase(buf: &mut [u8], layout: &ChaseLayout) -> Result<*const usize, BenchError> {
    assert!(
        layout.stride >= 8 && layout.stride.is_multiple_of(8),
        "stride must be a multiple of 8"
    );
    let slots = buf.len() / layout.stride;
    assert!(slots >= 1 && slots <= u32::MAX as usize, "buffer must hold 1..2^32 slots");
    let order = visit_order(slots, layout)?;
    let base = buf.as_mut_ptr();
    let at = |slot: u32| slot as usize * layout.stride + line_in_slot(slot, layout);
    for (i, &slot) in order.iter().enumerate() {
        if i % (1 << 20) == 0 {
            measure::stop::check("building the pointer chase")?;
        }
        let next = order[(i + 1) % order.len()];
        // SAFETY: slot and next are < slots and a line offset is < stride - 8, so both
        // addresses are inside buf, 8-aligned (stride is a multiple of 8 and the buffer is
        // page-aligned or at least 8-aligned from its allocator).
        unsafe {
            let here = base.add(at(slot)).cast::<usize>();
            here.write_unaligned(base.add(at(next)) as usize);
        }
    }
    // SAFETY: order[0] < slots.
    Ok(unsafe { base.add(at(order[0])).cast::<usize>() })
}

/// Bytes from a slot's start to the cache line holding its pointer: 0 for slots of one line or
/// less (or not whole lines), else a line picked from the seed and the slot's index.
fn line_in_slot(slot: u32, layout: &ChaseLayout) -> usize {
    const LINE: usize = 64;
    let lines = layout.stride / LINE;
    if lines <= 1 || !layout.stride.is_multiple_of(LINE) {
        return 0;
    }
    let mut rng =
        SplitMix64::new(layout.seed ^ u64::from(slot).wrapping_mul(0xD6E8_FEB8_6659_FD93));
    rng.below(lines as u64) as usize * LINE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn follow(start: *const usize, steps: usize) -> Vec<usize> {
        let mut p = start;
        let mut seen = Vec::with_capacity(steps);
        for _ in 0..steps {
            seen.push(p as usize);
            // SAFETY: the chain was built over a live buffer.
            p = unsafe { p.read_unaligned() } as *const usize;
        }
        seen
    }

    #[test]
    fn chain_is_one_cycle_through_every_slot() {
        let mut buf = vec![0u8; 64 * 1000];
        let start = build_chase(&mut buf, &ChaseLayout { group_bytes: 4096, ..Default::default() })
            .unwrap();
        let visited = follow(start, 1000);
        let mut sorted = visited.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 1000, "each slot exactly once");
        assert_eq!(follow(start, 1001)[1000], start as usize, "and back to the start");
    }

    #[test]
    fn random_order_stays_within_groups_and_is_not_sequential() {
        let layout = ChaseLayout { stride: 64, group_bytes: 64 * 16, ..Default::default() };
        let order = visit_order(160, &layout).unwrap();
        for group in order.chunks(16) {
            let first = group[0] / 16;
            assert!(group.iter().all(|s| s / 16 == first), "group mixed: {group:?}");
        }
        let ascending = order.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(ascending < 40, "{ascending} of 159 steps go to the next slot");
    }

    #[test]
    fn wide_slots_spread_their_pointers_over_every_line_of_the_slot() {
        let layout = ChaseLayout { stride: 256, group_bytes: 256 * 64, ..Default::default() };
        let mut buf = vec![0u8; 256 * 1024];
        let start = build_chase(&mut buf, &layout).unwrap();
        let base = buf.as_ptr() as usize;
        let visited = follow(start, 1024);
        let mut per_line = [0usize; 4];
        for address in &visited {
            let offset = address - base;
            assert_eq!(offset % 64, 0, "pointers start their cache line");
            per_line[(offset % 256) / 64] += 1;
        }
        // 1024 slots over 4 lines: each line gets about 256; a layout stuck at offset 0 gets 1024.
        assert!(per_line.iter().all(|&n| n > 160), "lines used: {per_line:?}");
        let mut slots: Vec<usize> = visited.iter().map(|a| (a - base) / 256).collect();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), 1024, "still one pointer per slot");
        assert_eq!(follow(start, 1025)[1024], start as usize, "and one cycle");
    }

    #[test]
    fn sequential_order_is_ascending() {
        let layout = ChaseLayout { access: Access::Sequential, ..Default::default() };
        assert_eq!(visit_order(5, &layout).unwrap(), vec![0, 1, 2, 3, 4]);
    }
}
