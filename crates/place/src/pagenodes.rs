//! Which node holds the page at an address: `move_pages(2)` used as a query (no target nodes,
//! nothing moves). Shared by [`crate::Arena::placement`] and [`crate::pagecache`].

use std::collections::BTreeMap;
use std::io;

use crate::{NodePages, PlaceError};

/// Addresses per `move_pages` call: bounds the status buffer the kernel fills per call.
const BATCH: usize = 16_384;

/// The node of the page mapped at each address, in order; `None` where the kernel reports no
/// page (never touched, swapped out, or a file page cached but not mapped into this process:
/// `move_pages` follows this process's page tables, it does not look in the page cache).
///
/// Addresses need not be page-aligned; unmapped addresses are answered `None`, not an error.
pub fn pages_nodes(addrs: &[*const libc::c_void]) -> Result<Vec<Option<u32>>, PlaceError> {
    let mut nodes = Vec::with_capacity(addrs.len());
    for batch in addrs.chunks(BATCH) {
        let mut status = vec![0i32; batch.len()];
        // SAFETY: `batch` and `status` hold batch.len() entries each, valid for the call; a
        // NULL node array makes this a query: the kernel only writes `status`.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                0,
                batch.len(),
                batch.as_ptr(),
                std::ptr::null::<i32>(),
                status.as_mut_ptr(),
                0,
            )
        };
        if rc < 0 {
            return Err(PlaceError::Syscall {
                call: "move_pages",
                source: io::Error::last_os_error(),
            });
        }
        // A negative status is -errno for that page (ENOENT: not present, EFAULT: unmapped).
        nodes.extend(status.into_iter().map(|s| u32::try_from(s).ok()));
    }
    Ok(nodes)
}

/// Counts per node (ascending) and the number of `None`s.
pub fn tally_nodes(nodes: impl IntoIterator<Item = Option<u32>>) -> (Vec<NodePages>, u64) {
    let mut per_node: BTreeMap<u32, u64> = BTreeMap::new();
    let mut absent = 0u64;
    for node in nodes {
        match node {
            Some(n) => *per_node.entry(n).or_default() += 1,
            None => absent += 1,
        }
    }
    (per_node.into_iter().map(|(node, pages)| NodePages { node, pages }).collect(), absent)
}

/// Adds `more` into `into`, keeping node order.
pub fn merge_node_pages(into: &mut Vec<NodePages>, more: &[NodePages]) {
    for m in more {
        match into.iter_mut().find(|n| n.node == m.node) {
            Some(n) => n.pages += m.pages,
            None => into.push(*m),
        }
    }
    into.sort_by_key(|n| n.node);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_nodes_and_absent_pages() {
        let (per_node, absent) = tally_nodes([Some(1), None, Some(0), Some(1), None, Some(1)]);
        assert_eq!(
            per_node,
            vec![NodePages { node: 0, pages: 1 }, NodePages { node: 1, pages: 3 }]
        );
        assert_eq!(absent, 2);
        assert_eq!(tally_nodes([]), (vec![], 0));
    }

    #[test]
    fn merges_in_node_order() {
        let mut a = vec![NodePages { node: 2, pages: 5 }];
        merge_node_pages(
            &mut a,
            &[NodePages { node: 0, pages: 1 }, NodePages { node: 2, pages: 1 }],
        );
        assert_eq!(a, vec![NodePages { node: 0, pages: 1 }, NodePages { node: 2, pages: 6 }]);
    }

    #[test]
    fn unmapped_addresses_are_absent_not_errors() {
        let page = vec![1u8; 4096];
        let mapped = page.as_ptr().cast::<libc::c_void>();
        // Page 0 is never mapped in a Linux process.
        let nodes = pages_nodes(&[mapped, std::ptr::null()]).expect("query");
        assert!(nodes[0].is_some(), "{nodes:?}");
        assert_eq!(nodes[1], None);
    }
}
