//! Pointer chasing: every load's address is the value of the previous load, so loads cannot
//! overlap and each costs the full load-to-use latency of wherever the line lives.

/// Follows the chain for `loads` loads (rounded down to a multiple of 16) from `start`, and
/// returns where it stopped (so the caller can continue, and the loads cannot be elided).
///
/// # Safety
/// `start` must point into a chain built by [`crate::layout::build_chase`] whose memory is
/// still alive: every visited slot holds the address of another slot of the chain.
#[inline(never)]
pub unsafe fn chase(start: *const usize, loads: u64) -> *const usize {
    let mut p = start;
    macro_rules! step {
        () => {
            // SAFETY: the caller guarantees every slot of the chain holds a valid slot address.
            p = unsafe { *p } as *const usize
        };
    }
    for _ in 0..loads / 16 {
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
    }
    p
}
