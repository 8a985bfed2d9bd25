//! Memory policy in numactl's vocabulary, applied with `mbind`/`set_mempolicy`.

use std::fmt;
use std::io;

use serde::{Deserialize, Serialize};

use crate::PlaceError;

// Linux's mempolicy modes (include/uapi/linux/mempolicy.h).
const MPOL_DEFAULT: i32 = 0;
const MPOL_PREFERRED: i32 = 1;
const MPOL_BIND: i32 = 2;
const MPOL_INTERLEAVE: i32 = 3;
const MPOL_LOCAL: i32 = 4;
const MPOL_PREFERRED_MANY: i32 = 5;
const MPOL_WEIGHTED_INTERLEAVE: i32 = 6;

/// Bits in the node masks passed to the kernel: the largest `MAX_NUMNODES` any distribution
/// kernel is built with. `get_mempolicy` refuses masks smaller than the kernel's node count.
const MASK_BITS: usize = 1024;
const WORD_BITS: usize = u64::BITS as usize;

/// Where memory should come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "policy", content = "nodes")]
pub enum MemPolicy {
    /// Leave the policy alone: whatever the thread has (e.g. set by `numactl`) applies.
    Inherit,
    /// Allocate on the node of the CPU that first touches the page (`--localalloc`).
    Local,
    /// Only these nodes (`--membind`).
    Bind(Vec<u32>),
    /// Round-robin page by page across these nodes (`--interleave`).
    Interleave(Vec<u32>),
    /// This node first, others when it is full (`--preferred`).
    Preferred(u32),
}

impl fmt::Display for MemPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemPolicy::Inherit => write!(f, "inherit"),
            MemPolicy::Local => write!(f, "local"),
            MemPolicy::Bind(n) => write!(f, "bind {}", topo::idlist::format(n)),
            MemPolicy::Interleave(n) => write!(f, "interleave {}", topo::idlist::format(n)),
            MemPolicy::Preferred(n) => write!(f, "preferred {n}"),
        }
    }
}

/// The policy the calling thread has now, as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadPolicy {
    /// `default`, `preferred`, `bind`, `interleave`, `local`, `preferred-many`,
    /// `weighted-interleave`.
    pub mode: String,
    pub nodes: Vec<u32>,
}

fn node_mask(nodes: &[u32]) -> Result<Vec<u64>, PlaceError> {
    let mut mask = vec![0u64; MASK_BITS / WORD_BITS];
    for &node in nodes {
        let node = node as usize;
        if node >= MASK_BITS {
            return Err(PlaceError::NoSuchId {
                kind: "node",
                id: node as u32,
                valid: format!("0-{}", MASK_BITS - 1),
            });
        }
        mask[node / WORD_BITS] |= 1 << (node % WORD_BITS);
    }
    Ok(mask)
}

fn mask_nodes(mask: &[u64]) -> Vec<u32> {
    (0..mask.len() * WORD_BITS)
        .filter(|&bit| mask[bit / WORD_BITS] & (1 << (bit % WORD_BITS)) != 0)
        .map(|bit| bit as u32)
        .collect()
}

impl MemPolicy {
    /// The kernel mode and node mask, or `None` for [`MemPolicy::Inherit`].
    fn kernel_form(&self) -> Result<Option<(i32, Vec<u64>)>, PlaceError> {
        Ok(Some(match self {
            MemPolicy::Inherit => return Ok(None),
            MemPolicy::Local => (MPOL_LOCAL, node_mask(&[])?),
            MemPolicy::Bind(nodes) => (MPOL_BIND, node_mask(nodes)?),
            MemPolicy::Interleave(nodes) => (MPOL_INTERLEAVE, node_mask(nodes)?),
            MemPolicy::Preferred(node) => (MPOL_PREFERRED, node_mask(&[*node])?),
        }))
    }

    /// The nodes this policy restricts memory to, if it restricts it.
    pub fn restricted_nodes(&self) -> Option<&[u32]> {
        match self {
            MemPolicy::Bind(nodes) | MemPolicy::Interleave(nodes) => Some(nodes),
            _ => None,
        }
    }

    /// Applies the policy to a mapped range that has not been touched yet (`mbind`).
    /// [`MemPolicy::Inherit`] does nothing.
    ///
    /// # Safety
    /// `addr..addr+len` must be a mapping owned by the caller, page-aligned.
    pub unsafe fn apply_to_range(&self, addr: *mut u8, len: usize) -> Result<(), PlaceError> {
        let Some((mode, mask)) = self.kernel_form()? else { return Ok(()) };
        // SAFETY: the caller guarantees the range is its own mapping; the mask outlives the
        // call and holds MASK_BITS bits, and the kernel reads maxnode - 1 of them.
        let rc = unsafe {
            libc::syscall(libc::SYS_mbind, addr, len, mode, mask.as_ptr(), MASK_BITS + 1, 0u32)
        };
        if rc != 0 {
            return Err(PlaceError::Syscall { call: "mbind", source: io::Error::last_os_error() });
        }
        Ok(())
    }

    /// Sets the policy for the calling thread's future allocations (`set_mempolicy`).
    /// [`MemPolicy::Inherit`] leaves the current one in place.
    pub fn apply_to_thread(&self) -> Result<(), PlaceError> {
        let Some((mode, mask)) = self.kernel_form()? else { return Ok(()) };
        // SAFETY: the mask outlives the call and holds MASK_BITS bits.
        let rc =
            unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, mask.as_ptr(), MASK_BITS + 1) };
        if rc != 0 {
            return Err(PlaceError::Syscall {
                call: "set_mempolicy",
                source: io::Error::last_os_error(),
            });
        }
        Ok(())
    }
}

/// The calling thread's current policy (`get_mempolicy`).
pub fn thread_policy() -> Result<ThreadPolicy, PlaceError> {
    let mut mode: i32 = 0;
    let mut mask = vec![0u64; MASK_BITS / WORD_BITS];
    // SAFETY: mode and mask are valid for writes of the sizes given; addr 0 with flags 0 asks
    // for the thread policy.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut i32,
            mask.as_mut_ptr(),
            MASK_BITS,
            std::ptr::null_mut::<libc::c_void>(),
            0u64,
        )
    };
    if rc != 0 {
        return Err(PlaceError::Syscall {
            call: "get_mempolicy",
            source: io::Error::last_os_error(),
        });
    }
    // Mode flags (MPOL_F_STATIC_NODES, …) live in the high bits.
    let name = match mode & 0xff {
        MPOL_DEFAULT => "default",
        MPOL_PREFERRED => "preferred",
        MPOL_BIND => "bind",
        MPOL_INTERLEAVE => "interleave",
        MPOL_LOCAL => "local",
        MPOL_PREFERRED_MANY => "preferred-many",
        MPOL_WEIGHTED_INTERLEAVE => "weighted-interleave",
        _ => "unknown",
    };
    Ok(ThreadPolicy { mode: name.to_string(), nodes: mask_nodes(&mask) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_round_trip() {
        let nodes = vec![0, 1, 63, 64, 1023];
        assert_eq!(mask_nodes(&node_mask(&nodes).expect("fits")), nodes);
        assert!(node_mask(&[1024]).is_err());
    }

    #[test]
    fn displays_in_numactl_words() {
        assert_eq!(MemPolicy::Bind(vec![0, 1, 2, 5]).to_string(), "bind 0-2,5");
        assert_eq!(MemPolicy::Preferred(1).to_string(), "preferred 1");
        assert_eq!(MemPolicy::Inherit.to_string(), "inherit");
    }
}
