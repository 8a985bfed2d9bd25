//! Where a file's page cache is, and putting it somewhere: residency and the node of every
//! cached page, loading a file under a memory policy, dropping it from the cache, and reading it
//! from a chosen CPU.
//!
//! Residency comes from `mincore(2)` over a read-only shared mapping of the file, one window of
//! [`WINDOW_BYTES`] at a time, so files larger than memory or than the address space stream.
//! Only the pages `mincore` reports resident are then mapped into this process
//! (`MADV_POPULATE_READ`: a page-cache hit, no I/O) so that `move_pages(2)` can name their node —
//! `move_pages` follows this process's page tables, it does not look into the page cache.
//! Pages that are not cached are never touched: inspecting a file reads nothing from disk.
//!
//! Page-cache pages are allocated under the memory policy of the task whose read or write makes
//! them, so [`CacheFile::load`] reads the file on a thread that has the requested policy.
//!
//! ```no_run
//! use place::pagecache::CacheFile;
//! let file = CacheFile::open("/var/lib/db/data.dbf".as_ref())?;
//! let r = file.residency()?;
//! println!("{} of {} pages cached", r.resident, r.pages);
//! for n in &r.nodes {
//!     println!("node {}: {:.1}% of the cached pages", n.node, n.percent_of_cached);
//! }
//! # Ok::<(), place::pagecache::PageCacheError>(())
//! ```

mod file;
mod report;

use std::fs::File;
use std::io;
use std::path::PathBuf;

use crate::PlaceError;

pub use report::{
    capacity_message, compare_reads, home_node, node_shares, percent, resident_runs, Backing,
    EvictResult, FileReport, LoadResult, NodeRead, NodeShare, ReadPass, ReadResult, Residency,
    PAGECACHE_READ,
};

/// Bytes of the file mapped and inspected at a time (a multiple of every page size).
pub const WINDOW_BYTES: usize = 1 << 30;
/// Size of each `read` when loading or timing a file (as `dd bs=1M`).
pub const READ_CHUNK: usize = 1 << 20;

/// Why one file could not be inspected or handled. Every message starts with the path.
#[derive(Debug, thiserror::Error)]
pub enum PageCacheError {
    #[error("{}: no such file", .0.display())]
    NotFound(PathBuf),
    #[error("{}: permission denied: cannot {action} it", path.display())]
    PermissionDenied { path: PathBuf, action: &'static str },
    #[error("{}: is a directory; name the files in it instead (e.g. {}/*)", .0.display(), .0.display())]
    Directory(PathBuf),
    #[error("{}: is a {kind}, not a regular file; only regular files have page cache to inspect", path.display())]
    Special { path: PathBuf, kind: &'static str },
    #[error("{}: the kernel hides the page cache residency of files you neither own nor may write to (mincore, Linux 5.2 and later); run as the file's owner or as root", .0.display())]
    ResidencyHidden(PathBuf),
    #[error("{}: the file is empty: there is nothing to read", .0.display())]
    Empty(PathBuf),
    #[error("{}: {call} failed: {source}", path.display())]
    Io {
        path: PathBuf,
        call: &'static str,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Interrupted(#[from] measure::stop::Interrupted),
    #[error("{}: {source}", path.display())]
    Place {
        path: PathBuf,
        #[source]
        source: PlaceError,
    },
}

/// A regular file opened for inspecting and moving its page cache.
#[derive(Debug)]
pub struct CacheFile {
    path: PathBuf,
    file: File,
    bytes: u64,
    filesystem: String,
    backing: Backing,
    page: usize,
}
