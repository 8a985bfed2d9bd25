//! Memory shared between the SLB's workers: a System V shared memory segment, placed under a
//! memory policy (`mbind` on the attached range), first touched by its creator and verified
//! (`move_pages`). Threads share a private segment; `memhammer --shared` processes share one at
//! the SLB's IPC key, which `create_sem` clears between rounds.

use std::io;
use std::ptr::NonNull;

use place::{pages_nodes, tally_nodes, Arena, ArenaSpec, MemPolicy, PageSize, Placement};
use topo::Topology;

use crate::{BenchError, PAGE};

/// An attached System V shared memory segment. Detached on drop; a private one is already
/// marked for removal, so it goes when its last user detaches.
#[derive(Debug)]
pub struct SharedRegion {
    ptr: NonNull<u8>,
    len: usize,
    id: libc::c_int,
    /// Whether this attachment created the segment (and so placed and touched it).
    created: bool,
    policy: MemPolicy,
}

// SAFETY: the region is a plain shared mapping; all concurrent access to it goes through the
// atomics and locks of the code that uses it.
unsafe impl Send for SharedRegion {}
// SAFETY: as above; `&SharedRegion` hands out raw pointers only.
unsafe impl Sync for SharedRegion {}

fn syscall_error(call: &'static str) -> BenchError {
    BenchError::Worker(format!("{call} failed: {}", io::Error::last_os_error()))
}

impl SharedRegion {
    /// A new private segment of `bytes` (rounded up to 4 KiB pages) placed under `policy`.
    /// Refuses, before creating anything, to take more than the nodes can give.
    pub fn private(
        bytes: u64,
        policy: &MemPolicy,
        topology: &Topology,
    ) -> Result<Self, BenchError> {
        let len = Self::check(bytes, policy, topology)?;
        // SAFETY: shmget takes plain integers.
        let id = unsafe { libc::shmget(libc::IPC_PRIVATE, len, libc::IPC_CREAT | 0o600) };
        if id < 0 {
            return Err(syscall_error("shmget"));
        }
        let region = Self::attach(id, len, true, policy)?;
        // Removed once the last attachment goes; nothing else needs to find it.
        // SAFETY: IPC_RMID takes no buffer.
        unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
        region.place_and_touch()?;
        Ok(region)
    }

    /// The segment at `key`: created, placed under `policy` and touched if it does not exist,
    /// else attached as it is (placed by whoever created it). A segment of another size at the
    /// key is refused.
    pub fn keyed(
        key: libc::key_t,
        bytes: u64,
        policy: &MemPolicy,
        topology: &Topology,
    ) -> Result<Self, BenchError> {
        let len = Self::check(bytes, policy, topology)?;
        // SAFETY: shmget takes plain integers.
        let id = unsafe { libc::shmget(key, len, libc::IPC_CREAT | libc::IPC_EXCL | 0o600) };
        if id >= 0 {
            let region = Self::attach(id, len, true, policy)?;
            region.place_and_touch()?;
            return Ok(region);
        }
        if io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
            return Err(syscall_error("shmget"));
        }
        // SAFETY: as above; size 0 opens an existing segment of any size.
        let id = unsafe { libc::shmget(key, 0, 0o600) };
        if id < 0 {
            return Err(syscall_error("shmget"));
        }
        // SAFETY: shmid_ds is plain data, zero is a valid value; IPC_STAT fills it.
        let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: `ds` is a valid shmid_ds for IPC_STAT to write.
        if unsafe { libc::shmctl(id, libc::IPC_STAT, &mut ds) } < 0 {
            return Err(syscall_error("shmctl(IPC_STAT)"));
        }
        if ds.shm_segsz != len {
            return Err(BenchError::Usage(format!(
                "the shared segment at IPC key {key:#x} holds {} bytes, this run needs {len}: \
                 give every memhammer --shared the same PAGES and --counters, or run create_sem \
                 to start a new round",
                ds.shm_segsz
            )));
        }
        Self::attach(id, len, false, policy)
    }

    /// Removes the segment at `key`, if any (create_sem does, so a round starts clean).
    pub fn remove_key(key: libc::key_t) -> Result<bool, BenchError> {
        // SAFETY: shmget takes plain integers.
        let id = unsafe { libc::shmget(key, 0, 0) };
        if id < 0 {
            return Ok(false);
        }
        // SAFETY: IPC_RMID takes no buffer.
        if unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) } < 0 {
            return Err(syscall_error("shmctl(IPC_RMID)"));
        }
        Ok(true)
    }

    /// Marks this segment for removal once every user has detached.
    pub fn mark_removed(&self) {
        // SAFETY: IPC_RMID takes no buffer; failure (already removed) is harmless.
        unsafe { libc::shmctl(self.id, libc::IPC_RMID, std::ptr::null_mut()) };
    }

    fn check(bytes: u64, policy: &MemPolicy, topology: &Topology) -> Result<usize, BenchError> {
        let spec = ArenaSpec { bytes, policy: policy.clone(), page: PageSize::Base };
        Arena::check_fits(&spec, topology)?;
        usize::try_from(bytes)
            .ok()
            .and_then(|b| b.checked_next_multiple_of(PAGE))
            .filter(|&b| b > 0)
            .ok_or_else(|| BenchError::Usage(format!("a shared region of {bytes} bytes")))
    }

    fn attach(
        id: libc::c_int,
        len: usize,
        created: bool,
        policy: &MemPolicy,
    ) -> Result<Self, BenchError> {
        // SAFETY: shmat maps the segment at an address the kernel chooses.
        let p = unsafe { libc::shmat(id, std::ptr::null(), 0) };
        if p as isize == -1 {
            let err = syscall_error("shmat");
            if created {
                // SAFETY: IPC_RMID takes no buffer.
                unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
            }
            return Err(err);
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| syscall_error("shmat"))?;
        Ok(SharedRegion { ptr, len, id, created, policy: policy.clone() })
    }

    fn place_and_touch(&self) -> Result<(), BenchError> {
        // SAFETY: the range is our attachment of a segment nobody has touched yet.
        unsafe { self.policy.apply_to_range(self.ptr.as_ptr(), self.len)? };
        for offset in (0..self.len).step_by(PAGE) {
            // SAFETY: offset < len, inside the attachment; volatile so the fault happens here.
            unsafe { self.ptr.as_ptr().add(offset).write_volatile(0) };
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: an empty region cannot be made.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether this attachment created the segment.
    pub fn created(&self) -> bool {
        self.created
    }

    /// The first byte. Writers share it: use atomics or a lock.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Where the pages are now, as the kernel reports them.
    pub fn placement(&self) -> Result<Placement, BenchError> {
        let addresses: Vec<*const libc::c_void> = (0..self.len)
            .step_by(PAGE)
            .map(|o| self.ptr.as_ptr().wrapping_add(o).cast_const().cast())
            .collect();
        let (per_node, not_present) = tally_nodes(pages_nodes(&addresses)?);
        Ok(Placement {
            requested: self.policy.clone(),
            page: PageSize::Base,
            bytes: self.len as u64,
            page_bytes: PAGE as u64,
            per_node,
            not_present,
            thp_bytes: None,
            thp_source: None,
            thp_mode: None,
        })
    }
}

impl Drop for SharedRegion {
    fn drop(&mut self) {
        // SAFETY: the address is our attachment; nothing uses it after drop.
        unsafe { libc::shmdt(self.ptr.as_ptr().cast()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_region_is_shared_placed_and_zeroed() {
        let t = Topology::detect().expect("topology");
        let r = SharedRegion::private(3 * 4096 + 1, &MemPolicy::Inherit, &t).expect("region");
        assert_eq!(r.len(), 4 * 4096);
        let p = r.placement().expect("placement");
        assert_eq!(p.total_pages(), 4);
        assert_eq!(p.not_present, 0);
        let huge = SharedRegion::private(u64::MAX / 2, &MemPolicy::Inherit, &t);
        assert!(huge.is_err_and(|e| e.is_usage()));
    }

    #[test]
    fn keyed_regions_are_found_again_and_size_checked() {
        let t = Topology::detect().expect("topology");
        let key = 0x5C00_0000 | (std::process::id() as libc::key_t & 0xFFFF);
        SharedRegion::remove_key(key).expect("clean");
        let first = SharedRegion::keyed(key, 8192, &MemPolicy::Inherit, &t).expect("create");
        assert!(first.created());
        // SAFETY: the region is 8192 bytes; a single-threaded test writes then reads it.
        unsafe { first.as_ptr().add(100).write_volatile(42) };
        let second = SharedRegion::keyed(key, 8192, &MemPolicy::Inherit, &t).expect("attach");
        assert!(!second.created());
        // SAFETY: as above; the second attachment is the same segment.
        assert_eq!(unsafe { second.as_ptr().add(100).read_volatile() }, 42);
        let other = SharedRegion::keyed(key, 3 * 8192, &MemPolicy::Inherit, &t);
        assert!(other.is_err_and(|e| e.is_usage() && e.to_string().contains("create_sem")));
        assert!(SharedRegion::remove_key(key).expect("removed"));
        assert!(!SharedRegion::remove_key(key).expect("gone"));
    }
}
