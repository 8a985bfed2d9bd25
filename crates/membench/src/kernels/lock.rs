//! Locks in shared memory and the SLB's locked work loop. Every lock is a few words at a
//! 128-byte aligned address, so it works between threads and between processes sharing the
//! mapping (the futex mutex uses process-shared futexes).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::slb::{lcg, SLB_PAGE};

/// Bytes of the lock's slot: the lock word(s) and the owner word it protects, alone on their
/// lines.
pub const LOCK_SLOT: usize = 128;
/// Offset in the lock slot of the last owner's id, read and written only under the lock.
pub const OWNER_OFFSET: usize = 16;
/// Bytes of each counter's slot: one counter alone on its lines.
pub const COUNTER_SLOT: usize = 128;

/// A lock whose state lives at a given address.
pub trait RawLock {
    /// # Safety
    /// `word` points to a [`LOCK_SLOT`]-byte, 8-byte aligned slot used only as this lock.
    unsafe fn lock(word: *mut u8);
    /// # Safety
    /// As for `lock`, and the caller holds the lock.
    unsafe fn unlock(word: *mut u8);
    /// Whether the lock excludes others (false for [`NoLock`]).
    const EXCLUDES: bool = true;
}

/// Test-and-test-and-set spinlock on one 32-bit word.
#[derive(Debug)]
pub struct Spin;
/// Ticket lock: `next` and `serving` words; strictly first come, first served.
#[derive(Debug)]
pub struct Ticket;
/// Futex mutex (0 free, 1 held, 2 held with sleepers): spins once, then sleeps in the kernel.
#[derive(Debug)]
pub struct FutexMutex;
/// No lock: stores race, counter increments can be lost.
#[derive(Debug)]
pub struct NoLock;

/// # Safety
/// `p` is 4-byte aligned, valid and used only atomically.
unsafe fn word32<'a>(p: *mut u8) -> &'a AtomicU32 {
    // SAFETY: guaranteed by the caller.
    unsafe { &*p.cast::<AtomicU32>() }
}

impl RawLock for Spin {
    #[inline(always)]
    unsafe fn lock(word: *mut u8) {
        // SAFETY: the caller passes the lock slot.
        let w = unsafe { word32(word) };
        while w.swap(1, Ordering::Acquire) != 0 {
            while w.load(Ordering::Relaxed) != 0 {
                std::hint::spin_loop();
            }
        }
    }
    #[inline(always)]
    unsafe fn unlock(word: *mut u8) {
        // SAFETY: the caller passes the lock slot.
        unsafe { word32(word) }.store(0, Ordering::Release);
    }
}

impl RawLock for Ticket {
    #[inline(always)]
    unsafe fn lock(word: *mut u8) {
        // SAFETY: the caller passes the lock slot; both words are inside it.
        let (next, serving) = unsafe { (word32(word), word32(word.add(4))) };
        let mine = next.fetch_add(1, Ordering::Relaxed);
        while serving.load(Ordering::Acquire) != mine {
            std::hint::spin_loop();
        }
    }
    #[inline(always)]
    unsafe fn unlock(word: *mut u8) {
        // SAFETY: the caller holds the lock, so it alone writes `serving`.
        let serving = unsafe { word32(word.add(4)) };
        serving.store(serving.load(Ordering::Relaxed).wrapping_add(1), Ordering::Release);
    }
}

fn futex(word: &AtomicU32, op: libc::c_int, val: u32) {
    // SAFETY: FUTEX_WAIT/FUTEX_WAKE on a valid, aligned 32-bit word; no timeout, no second
    // address. Not FUTEX_PRIVATE_FLAG: the word may be shared between processes.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            val,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
}

impl RawLock for FutexMutex {
    #[inline(always)]
    unsafe fn lock(word: *mut u8) {
        // SAFETY: the caller passes the lock slot.
        let w = unsafe { word32(word) };
        if w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            return;
        }
        // Contended: mark "held with sleepers" and sleep until it is free.
        while w.swap(2, Ordering::Acquire) != 0 {
            futex(w, libc::FUTEX_WAIT, 2);
        }
    }
    #[inline(always)]
    unsafe fn unlock(word: *mut u8) {
        // SAFETY: the caller passes the lock slot and holds the lock.
        let w = unsafe { word32(word) };
        if w.swap(0, Ordering::Release) == 2 {
            futex(w, libc::FUTEX_WAKE, 1);
        }
    }
}

impl RawLock for NoLock {
    #[inline(always)]
    unsafe fn lock(_: *mut u8) {}
    #[inline(always)]
    unsafe fn unlock(_: *mut u8) {}
    const EXCLUDES: bool = false;
}

/// Where the locked loop works: the lock slot, `counters` counter slots after it, and the
/// SLB's `pages` pages.
#[derive(Debug, Clone, Copy)]
pub struct SharedWork {
    pub lock: *mut u8,
    pub counters: *mut u8,
    pub ncounters: u64,
    pub pages: *mut u8,
    pub npages: u64,
}

// SAFETY: the pointers name shared memory whose every concurrent access goes through the
// lock or atomics (the kernel's contract); the struct itself is plain addresses.
unsafe impl Send for SharedWork {}
// SAFETY: as above.
unsafe impl Sync for SharedWork {}

/// `ops` operations of one worker (`me`, counted from 1): take the lock, note a hand-off when
/// the last owner was another worker, add one to a pseudo-random counter (a plain load and
/// store: only the lock makes it exact), make the SLB's store to a pseudo-random page, release.
/// Returns the hand-offs (always 0 for [`NoLock`]).
///
/// # Safety
/// `work`'s pointers are valid for their slots and pages (1 ≤ ncounters, 1 ≤ npages < 2^32,
/// ncounters < 2^32) for the whole call, and every user of the lock slot uses lock `L`.
#[inline(always)]
pub unsafe fn locked_writes<L: RawLock>(
    work: &SharedWork,
    me: u64,
    ops: u64,
    state: &mut u64,
) -> u64 {
    let mut x = *state;
    let mut handoffs = 0u64;
    for _ in 0..ops {
        x = lcg(x);
        let page = ((x >> 32) * work.npages) >> 32;
        let counter = ((x & 0xFFFF_FFFF) * work.ncounters) >> 32;
        let word = (x >> 29) & 7;
        // SAFETY: the caller guarantees the slot, counters and pages; page < npages,
        // counter < ncounters and word < 8 keep every access inside them, 8-byte aligned.
        unsafe {
            L::lock(work.lock);
            if L::EXCLUDES {
                let owner = &*work.lock.add(OWNER_OFFSET).cast::<AtomicU64>();
                if owner.load(Ordering::Relaxed) != me {
                    owner.store(me, Ordering::Relaxed);
                    handoffs += 1;
                }
            }
            let c = work.counters.add(counter as usize * COUNTER_SLOT).cast::<u64>();
            c.write_volatile(c.read_volatile() + 1);
            let offset = page as usize * SLB_PAGE + word as usize * 8;
            work.pages.add(offset).cast::<u64>().write_volatile(x);
            L::unlock(work.lock);
        }
    }
    *state = x;
    handoffs
}

macro_rules! lock_loops {
    ($($name:ident, $lock:ty;)*) => {$(
        /// [`locked_writes`] with this lock, out of line under its own name so its code can be
        /// read in the binary (`objdump -d`).
        ///
        /// # Safety
        /// As for [`locked_writes`].
        #[inline(never)]
        pub unsafe fn $name(work: &SharedWork, me: u64, ops: u64, state: &mut u64) -> u64 {
            // SAFETY: the caller upholds locked_writes' contract.
            unsafe { locked_writes::<$lock>(work, me, ops, state) }
        }
    )*};
}

lock_loops! {
    locked_writes_none, NoLock;
    locked_writes_spin, Spin;
    locked_writes_ticket, Ticket;
    locked_writes_mutex, FutexMutex;
}
