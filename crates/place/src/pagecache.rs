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

use std::ffi::CString;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use measure::progress::ProgressBar;
use serde::{Deserialize, Serialize};
use topo::sysfs::SysRoot;
use topo::units::format_bytes;

use crate::arena::node_available;
use crate::pagenodes::{merge_node_pages, pages_nodes, tally_nodes};
use crate::{pin, MemPolicy, NodePages, PlaceError};

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

/// What keeps a file's pages in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backing {
    /// A disk (or network, or block-device) filesystem: the pages are a cache and can be
    /// dropped.
    PageCache,
    /// tmpfs: the pages are the file itself (shared memory); they leave memory only for swap.
    Shmem,
    /// ramfs: the pages are the file itself and never leave memory.
    Ramfs,
}

/// Pages of a file on one node.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NodeShare {
    pub node: u32,
    pub pages: u64,
    /// Share of the cached pages whose node is known, in percent.
    pub percent_of_cached: f64,
    /// Share of all the file's pages, in percent.
    pub percent_of_file: f64,
}

/// How much of a file is in memory, and on which nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Residency {
    pub path: String,
    /// Filesystem type (`statfs` magic, named when known).
    pub filesystem: String,
    pub backing: Backing,
    pub bytes: u64,
    /// Base page size: the unit of every count here.
    pub page_bytes: u64,
    /// Pages the file spans.
    pub pages: u64,
    /// Pages in memory according to `mincore`.
    pub resident: u64,
    /// `resident` as a percentage of `pages` (0 for an empty file).
    pub percent_cached: f64,
    /// Resident pages per node, ascending by node.
    pub nodes: Vec<NodeShare>,
    /// Pages `mincore` reported resident whose node could not be read: dropped or truncated
    /// between the two looks.
    pub unlocated: u64,
}

impl Residency {
    /// Pages on `node`.
    pub fn pages_on(&self, node: u32) -> u64 {
        self.nodes.iter().find(|n| n.node == node).map_or(0, |n| n.pages)
    }

    /// Share of the located cached pages on `node`, 0..=100.
    pub fn percent_on(&self, node: u32) -> f64 {
        self.nodes.iter().find(|n| n.node == node).map_or(0.0, |n| n.percent_of_cached)
    }
}

/// `part` as a percentage of `whole`; 0 when `whole` is 0.
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Per-node counts with their shares of the located pages and of the whole file.
pub fn node_shares(per_node: &[NodePages], file_pages: u64) -> Vec<NodeShare> {
    let located: u64 = per_node.iter().map(|n| n.pages).sum();
    per_node
        .iter()
        .map(|n| NodeShare {
            node: n.node,
            pages: n.pages,
            percent_of_cached: percent(n.pages, located),
            percent_of_file: percent(n.pages, file_pages),
        })
        .collect()
}

/// Runs of set bit 0 in `mincore`'s vector, as (first page, page count).
pub fn resident_runs(vec: &[u8]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut start = None;
    for (i, &v) in vec.iter().enumerate() {
        match (v & 1 == 1, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                runs.push((s, i - s));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push((s, vec.len() - s));
    }
    runs
}

/// Result of [`CacheFile::load`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadResult {
    /// The policy the reading thread had.
    pub policy: MemPolicy,
    pub resident_before: u64,
    pub resident_after: u64,
    /// Bytes read (the whole file, cached or not).
    pub bytes_read: u64,
    /// Wall time of the read-through.
    pub secs: f64,
    /// Why the file may not stay cached under the policy, when its uncached part is larger than
    /// what the policy's nodes have free or reclaimable.
    pub capacity_warning: Option<String>,
}

/// Result of [`CacheFile::evict`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvictResult {
    pub resident_before: u64,
    pub resident_after: u64,
    /// Whether dirty pages were written back first (`fdatasync`), so that they could be dropped.
    pub synced: bool,
    /// Why nothing was dropped, for files whose pages are not a cache (tmpfs, ramfs).
    pub not_a_cache: Option<String>,
}

impl EvictResult {
    pub fn dropped(&self) -> u64 {
        self.resident_before.saturating_sub(self.resident_after)
    }
}

/// One timed read of the whole file.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReadPass {
    pub bytes: u64,
    pub secs: f64,
    /// 10^9 bytes per second.
    pub gbps: f64,
}

/// Result of [`CacheFile::read_from`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResult {
    pub cpu: u32,
    /// Resident pages before the first pass; below the file's pages the first pass read from
    /// disk (and cached what it read on the reader's node).
    pub resident_before: u64,
    pub pages: u64,
    pub passes: Vec<ReadPass>,
    /// Median over the passes, 10^9 bytes per second.
    pub gbps: f64,
}

/// A timed read of the file from a CPU of one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRead {
    pub node: u32,
    /// Share of the file's located cached pages on this node before the reads, in percent.
    pub local_percent: f64,
    /// This node's GB/s over that of the node holding most of the cache, when that node was
    /// read from too (the local/remote ratio).
    pub vs_home: Option<f64>,
    #[serde(flatten)]
    pub read: ReadResult,
}

/// The node holding most of the located cached pages (the lowest on a tie).
pub fn home_node(r: &Residency) -> Option<u32> {
    r.nodes
        .iter()
        .filter(|n| n.pages > 0)
        .max_by(|a, b| a.pages.cmp(&b.pages).then(b.node.cmp(&a.node)))
        .map(|n| n.node)
}

/// Fills in [`NodeRead::vs_home`]: each node's bandwidth over the home node's.
pub fn compare_reads(reads: &mut [NodeRead], home: Option<u32>) {
    let base = home.and_then(|h| reads.iter().find(|r| r.node == h)).map(|r| r.read.gbps);
    for r in reads.iter_mut() {
        r.vs_home = base.filter(|b| *b > 0.0).map(|b| r.read.gbps / b);
    }
}

/// Everything done to and learnt about one file, in the order it was done: evict, load, then
/// the residency, then reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileReport {
    pub path: String,
    pub evict: Option<EvictResult>,
    pub load: Option<LoadResult>,
    pub residency: Residency,
    /// The node [`compare_reads`] compared against.
    pub home_node: Option<u32>,
    pub reads: Vec<NodeRead>,
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

fn special_kind(t: &std::fs::FileType) -> Option<&'static str> {
    if t.is_char_device() {
        Some("character device")
    } else if t.is_block_device() {
        Some("block device")
    } else if t.is_fifo() {
        Some("FIFO (named pipe)")
    } else if t.is_socket() {
        Some("socket")
    } else if !t.is_file() {
        Some("special file")
    } else {
        None
    }
}

fn check_type(path: &Path, meta: &Metadata) -> Result<(), PageCacheError> {
    if meta.is_dir() {
        return Err(PageCacheError::Directory(path.to_path_buf()));
    }
    match special_kind(&meta.file_type()) {
        Some(kind) => Err(PageCacheError::Special { path: path.to_path_buf(), kind }),
        None => Ok(()),
    }
}

fn classify(path: &Path, action: &'static str, call: &'static str, e: io::Error) -> PageCacheError {
    match e.kind() {
        io::ErrorKind::NotFound => PageCacheError::NotFound(path.to_path_buf()),
        io::ErrorKind::PermissionDenied => {
            PageCacheError::PermissionDenied { path: path.to_path_buf(), action }
        }
        _ => PageCacheError::Io { path: path.to_path_buf(), call, source: e },
    }
}

/// `mincore` tells the truth about a file mapping only to its owner, to whoever may write it,
/// and to holders of CAP_FOWNER (Linux 5.2+); to anyone else it reports every page resident.
fn residency_visible(path: &Path, meta: &Metadata) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 || meta.uid() == euid {
        return true;
    }
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
}

fn filesystem_name(magic: u64) -> (String, Backing) {
    let name = match magic {
        0xEF53 => "ext2/ext3/ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => return ("tmpfs".into(), Backing::Shmem),
        0x8584_58F6 => return ("ramfs".into(), Backing::Ramfs),
        0x6969 => "nfs",
        0xFF53_4D42 | 0xFE53_4D42 => "cifs/smb",
        0x794C_7630 => "overlayfs",
        0xF2F5_2010 => "f2fs",
        0x2FC1_2FC1 => "zfs",
        0x6573_5546 => "fuse",
        0x4D44 => "vfat",
        0x7371_7368 => "squashfs",
        0x0102_1997 => "9p",
        0x9584_58F6 => "hugetlbfs",
        _ => return (format!("0x{magic:x}"), Backing::PageCache),
    };
    (name.into(), Backing::PageCache)
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions; -1 (error) falls back to 4 KiB.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).ok().filter(|&s| s > 0).unwrap_or(4096)
}

/// A read-only shared mapping of part of a file, unmapped on drop.
struct Window {
    ptr: *mut u8,
    len: usize,
}

impl Window {
    fn map(file: &File, offset: u64, len: usize) -> io::Result<Self> {
        let offset =
            libc::off_t::try_from(offset).map_err(|_| io::Error::other("offset too large"))?;
        // SAFETY: a new read-only shared mapping of an open file at a kernel-chosen address; no
        // existing memory is affected.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Window { ptr: ptr.cast(), len })
    }

    /// One byte per page; bit 0 is set when the page is in memory.
    fn mincore(&self, page: usize) -> io::Result<Vec<u8>> {
        let mut vec = vec![0u8; self.len.div_ceil(page)];
        // SAFETY: the range is this mapping; `vec` has one byte per page of it.
        let rc = unsafe { libc::mincore(self.ptr.cast(), self.len, vec.as_mut_ptr()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(vec)
    }

    /// Maps already-cached pages of `pages` (first, count) into this process's page tables.
    fn populate(&self, (first, count): (usize, usize), page: usize) -> io::Result<()> {
        let start = first * page;
        let len = (count * page).min(self.len - start);
        // SAFETY: start..start+len lies inside this mapping. MADV_POPULATE_READ (Linux 5.14)
        // only read-faults pages in; for pages past the end of a file truncated meanwhile it
        // fails with EFAULT instead of raising SIGBUS.
        let rc =
            unsafe { libc::madvise(self.ptr.add(start).cast(), len, libc::MADV_POPULATE_READ) };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            // Kernels before 5.14: touch each page instead (a truncation racing with this
            // would raise SIGBUS; accepted on those kernels).
            Some(libc::EINVAL) => {
                for offset in (start..start + len).step_by(page) {
                    // SAFETY: inside the mapping; the page is cached, so this is a minor fault.
                    unsafe { self.ptr.add(offset).read_volatile() };
                }
                Ok(())
            }
            // The file shrank: the pages past its new end stay unlocated.
            Some(libc::EFAULT) => Ok(()),
            _ => Err(err),
        }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping made in `map`; nothing refers to it after drop.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// What one pass over the file's windows found.
#[derive(Debug, Default)]
struct Scan {
    resident: u64,
    per_node: Vec<NodePages>,
    unlocated: u64,
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

impl CacheFile {
    /// Opens a regular file. Directories, devices, FIFOs and sockets are refused from their
    /// metadata before anything is opened (a FIFO would block `open` until a writer came).
    pub fn open(path: &Path) -> Result<Self, PageCacheError> {
        let meta = std::fs::metadata(path).map_err(|e| classify(path, "reach", "stat", e))?;
        check_type(path, &meta)?;
        let file = OpenOptions::new()
            .read(true)
            // Belt and braces: should the path become a FIFO between the two looks, do not wait.
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|e| classify(path, "read", "open", e))?;
        let meta = file.metadata().map_err(|e| classify(path, "read", "fstat", e))?;
        check_type(path, &meta)?;
        if !residency_visible(path, &meta) {
            return Err(PageCacheError::ResidencyHidden(path.to_path_buf()));
        }
        // SAFETY: all-zero is a valid statfs to be filled in.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: the fd is open and `st` is valid for writes.
        let (filesystem, backing) = if unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } == 0 {
            // f_type is a signed word whose width varies by architecture; the magic is 32 bits.
            filesystem_name(st.f_type as u64 & 0xFFFF_FFFF)
        } else {
            ("unknown".into(), Backing::PageCache)
        };
        Ok(CacheFile {
            path: path.to_path_buf(),
            file,
            bytes: meta.len(),
            filesystem,
            backing,
            page: page_size(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Size in bytes when opened.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn backing(&self) -> Backing {
        self.backing
    }

    /// Pages the file spans.
    pub fn pages(&self) -> u64 {
        self.bytes.div_ceil(self.page as u64)
    }

    fn io_err(&self, call: &'static str) -> impl FnOnce(io::Error) -> PageCacheError + '_ {
        move |source| PageCacheError::Io { path: self.path.clone(), call, source }
    }

    fn place_err(&self) -> impl FnOnce(PlaceError) -> PageCacheError + '_ {
        move |source| PageCacheError::Place { path: self.path.clone(), source }
    }

    /// Walks the file `window_bytes` (a multiple of the page size) at a time: counts resident
    /// pages, and with `locate` also asks each resident page's node.
    fn scan(&self, locate: bool, window_bytes: usize) -> Result<Scan, PageCacheError> {
        let mut scan = Scan::default();
        let mut offset = 0u64;
        while offset < self.bytes {
            let len = usize::try_from(self.bytes - offset).unwrap_or(usize::MAX).min(window_bytes);
            let window = Window::map(&self.file, offset, len).map_err(self.io_err("mmap"))?;
            let vec = window.mincore(self.page).map_err(self.io_err("mincore"))?;
            let runs = resident_runs(&vec);
            let resident: usize = runs.iter().map(|r| r.1).sum();
            scan.resident += resident as u64;
            if locate && resident > 0 {
                for &run in &runs {
                    window.populate(run, self.page).map_err(self.io_err("madvise"))?;
                }
                let addrs: Vec<*const libc::c_void> = runs
                    .iter()
                    .flat_map(|&(first, count)| first..first + count)
                    .map(|p| window.ptr.wrapping_add(p * self.page).cast_const().cast())
                    .collect();
                let (per_node, absent) =
                    tally_nodes(pages_nodes(&addrs).map_err(self.place_err())?);
                merge_node_pages(&mut scan.per_node, &per_node);
                scan.unlocated += absent;
            }
            offset += len as u64;
        }
        Ok(scan)
    }

    /// Pages in memory now (`mincore` only: cheap, maps nothing in).
    pub fn resident_pages(&self) -> Result<u64, PageCacheError> {
        Ok(self.scan(false, WINDOW_BYTES)?.resident)
    }

    /// Pages in memory now and the node of each. Reads nothing from disk.
    pub fn residency(&self) -> Result<Residency, PageCacheError> {
        let scan = self.scan(true, WINDOW_BYTES)?;
        let pages = self.pages();
        Ok(Residency {
            path: self.path.to_string_lossy().into_owned(),
            filesystem: self.filesystem.clone(),
            backing: self.backing,
            bytes: self.bytes,
            page_bytes: self.page as u64,
            pages,
            resident: scan.resident,
            percent_cached: percent(scan.resident, pages),
            nodes: node_shares(&scan.per_node, pages),
            unlocated: scan.unlocated,
        })
    }

    /// Reads the whole file with `chunk`-sized reads into `buf`; returns the bytes read.
    fn read_through(&self, buf: &mut [u8], progress: &ProgressBar) -> Result<u64, PageCacheError> {
        let mut offset = 0u64;
        loop {
            // Loading a large file takes seconds from a slow disk: Ctrl-C or SIGTERM stops it.
            measure::stop::check("reading the file into the page cache")?;
            match self.file.read_at(buf, offset) {
                Ok(0) => return Ok(offset),
                Ok(n) => {
                    offset += n as u64;
                    progress.inc(n as u64);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_err("read")(e)),
            }
        }
    }

    /// Brings the file into the page cache by reading it through (1 MiB reads into a discarded
    /// buffer) on a thread whose memory policy is `policy`. Pages already cached stay where
    /// they are: evict first to re-place them. `progress` counts bytes read.
    pub fn load(
        &self,
        policy: &MemPolicy,
        progress: &ProgressBar,
    ) -> Result<LoadResult, PageCacheError> {
        progress.set_length(self.bytes);
        let resident_before = self.resident_pages()?;
        let uncached = self.pages().saturating_sub(resident_before) * self.page as u64;
        let capacity_warning = capacity_warning(policy, uncached);
        let started = Instant::now();
        let bytes_read = std::thread::scope(|s| {
            s.spawn(|| {
                policy.apply_to_thread().map_err(self.place_err())?;
                let mut buf = vec![0u8; READ_CHUNK];
                self.read_through(&mut buf, progress)
            })
            .join()
            .map_err(|_| self.io_err("read")(io::Error::other("the reading thread panicked")))?
        })?;
        let secs = started.elapsed().as_secs_f64();
        Ok(LoadResult {
            policy: policy.clone(),
            resident_before,
            resident_after: self.resident_pages()?,
            bytes_read,
            secs,
            capacity_warning,
        })
    }

    /// Drops the file from the page cache: `fdatasync` first (`POSIX_FADV_DONTNEED` skips
    /// dirty pages, it only starts their writeback), then `posix_fadvise(DONTNEED)`. Pages that
    /// a process maps or locks stay. tmpfs and ramfs files are left alone: their pages are the
    /// file.
    pub fn evict(&self) -> Result<EvictResult, PageCacheError> {
        let resident_before = self.resident_pages()?;
        let not_a_cache = match self.backing {
            Backing::PageCache => None,
            Backing::Shmem => Some(
                "the file is on tmpfs: its pages are the file itself (shared memory), not a cache of a disk; they leave memory only when the file is deleted or swapped out".to_string(),
            ),
            Backing::Ramfs => Some(
                "the file is on ramfs: its pages are the file itself and never leave memory"
                    .to_string(),
            ),
        };
        if not_a_cache.is_some() {
            return Ok(EvictResult {
                resident_before,
                resident_after: resident_before,
                synced: false,
                not_a_cache,
            });
        }
        let fd = self.file.as_raw_fd();
        // SAFETY: the fd is open for the life of self.
        let synced = if unsafe { libc::fdatasync(fd) } == 0 {
            true
        } else {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                // Files that cannot be synced (read-only or special filesystems) have nothing
                // dirty to write back.
                Some(libc::EINVAL) | Some(libc::EROFS) => false,
                _ => return Err(self.io_err("fdatasync")(e)),
            }
        };
        // SAFETY: the fd is open; offset 0, length 0 means the whole file.
        let rc = unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(self.io_err("posix_fadvise")(io::Error::from_raw_os_error(rc)));
        }
        Ok(EvictResult {
            resident_before,
            resident_after: self.resident_pages()?,
            synced,
            not_a_cache: None,
        })
    }

    /// Reads the whole file `passes` times (1 MiB reads into a discarded buffer) on a thread
    /// pinned to `cpu`, and times each pass. Meant for a cached file; if part of it is not
    /// cached, the first pass reads that part from disk (see [`ReadResult::resident_before`]).
    pub fn read_from(&self, cpu: u32, passes: usize) -> Result<ReadResult, PageCacheError> {
        if self.bytes == 0 {
            return Err(PageCacheError::Empty(self.path.clone()));
        }
        let resident_before = self.resident_pages()?;
        let passes = std::thread::scope(|s| {
            s.spawn(|| {
                pin::pin_current_thread(&[cpu]).map_err(self.place_err())?;
                let mut buf = vec![0u8; READ_CHUNK];
                (0..passes.max(1))
                    .map(|_| {
                        let t = Instant::now();
                        let bytes = self.read_through(&mut buf, &measure::progress::hidden())?;
                        let secs = t.elapsed().as_secs_f64();
                        Ok(ReadPass { bytes, secs, gbps: bytes as f64 / secs / 1e9 })
                    })
                    .collect::<Result<Vec<ReadPass>, PageCacheError>>()
            })
            .join()
            .map_err(|_| self.io_err("read")(io::Error::other("the reading thread panicked")))?
        })?;
        let gbps = median(&passes.iter().map(|p| p.gbps).collect::<Vec<_>>());
        Ok(ReadResult { cpu, resident_before, pages: self.pages(), passes, gbps })
    }
}

/// Says so when `bytes` more page cache will not fit in what the policy's nodes can give.
fn capacity_warning(policy: &MemPolicy, bytes: u64) -> Option<String> {
    let root = SysRoot::live();
    let nodes = match policy.restricted_nodes() {
        Some(nodes) => nodes.to_vec(),
        None => root.online_nodes()?,
    };
    let available: Option<u64> = nodes.iter().map(|&n| node_available(&root, n)).sum();
    capacity_message(bytes, available?, &nodes)
}

/// The warning for loading `bytes` into nodes that can give `available`.
pub fn capacity_message(bytes: u64, available: u64, nodes: &[u32]) -> Option<String> {
    (bytes > available).then(|| {
        format!(
            "{} to cache but node(s) {} have only {} free or reclaimable: the load pushes out other cached data, and the file cannot stay fully cached there",
            format_bytes(bytes),
            topo::idlist::format(nodes),
            format_bytes(available)
        )
    })
}

// The name is defined in `measure`, where the exporter reads it without this crate.
pub use measure::names::PAGECACHE_READ;

impl measure::ToMetrics for FileReport {
    fn to_metrics(&self) -> Vec<measure::Metric> {
        self.reads
            .iter()
            .map(|read| {
                let passes = read.read.passes.iter().map(|p| p.gbps).collect();
                measure::Metric::new(PAGECACHE_READ, measure::Unit::GigabytesPerSecond, passes)
                    .label("file", &self.path)
                    .label("node", read.node)
            })
            .collect()
    }

    fn placements(&self) -> Vec<measure::WorkerPlacement> {
        let worker = format!("page cache of {}", self.path);
        vec![measure::WorkerPlacement::new(worker, &self.load, &self.residency)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_resident_pages() {
        assert_eq!(resident_runs(&[]), vec![]);
        assert_eq!(resident_runs(&[0, 0]), vec![]);
        assert_eq!(resident_runs(&[1, 1, 0, 1, 0, 0, 1, 1, 1]), vec![(0, 2), (3, 1), (6, 3)]);
        // Only bit 0 means resident; the other bits are reserved.
        assert_eq!(resident_runs(&[0b10, 0b11, 0b1]), vec![(1, 2)]);
    }

    #[test]
    fn shares_of_cached_and_of_file() {
        let per_node = [NodePages { node: 0, pages: 300 }, NodePages { node: 1, pages: 100 }];
        let s = node_shares(&per_node, 1000);
        assert_eq!(s.len(), 2);
        assert!((s[0].percent_of_cached - 75.0).abs() < 1e-9);
        assert!((s[0].percent_of_file - 30.0).abs() < 1e-9);
        assert!((s[1].percent_of_cached - 25.0).abs() < 1e-9);
        assert!((s[1].percent_of_file - 10.0).abs() < 1e-9);
        assert!(node_shares(&[], 0).is_empty());
        assert_eq!(percent(5, 0), 0.0);
        assert_eq!(percent(1, 8), 12.5);
    }

    #[test]
    fn residency_lookups() {
        let r = Residency {
            path: "f".into(),
            filesystem: "ext2/ext3/ext4".into(),
            backing: Backing::PageCache,
            bytes: 10 * 4096 - 100,
            page_bytes: 4096,
            pages: 10,
            resident: 4,
            percent_cached: percent(4, 10),
            nodes: node_shares(&[NodePages { node: 1, pages: 4 }], 10),
            unlocated: 0,
        };
        assert_eq!(r.pages_on(1), 4);
        assert_eq!(r.pages_on(0), 0);
        assert_eq!(r.percent_on(1), 100.0);
        assert_eq!(r.percent_cached, 40.0);
    }

    #[test]
    fn names_filesystems() {
        assert_eq!(filesystem_name(0xEF53), ("ext2/ext3/ext4".into(), Backing::PageCache));
        assert_eq!(filesystem_name(0x0102_1994).1, Backing::Shmem);
        assert_eq!(filesystem_name(0x8584_58F6).1, Backing::Ramfs);
        assert_eq!(filesystem_name(0x1234), ("0x1234".into(), Backing::PageCache));
    }

    #[test]
    fn median_of_passes() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn capacity_message_only_when_over() {
        assert_eq!(capacity_message(10, 20, &[0]), None);
        let m = capacity_message(3 << 30, 1 << 30, &[1]).expect("over");
        assert!(m.contains("3.0 GiB") && m.contains("node(s) 1") && m.contains("1.0 GiB"), "{m}");
    }

    fn read(node: u32, gbps: f64) -> NodeRead {
        NodeRead {
            node,
            local_percent: 0.0,
            vs_home: None,
            read: ReadResult { cpu: node, resident_before: 1, pages: 1, passes: vec![], gbps },
        }
    }

    #[test]
    fn reads_compare_against_the_node_holding_the_cache() {
        let mut r = Residency {
            path: "f".into(),
            filesystem: "xfs".into(),
            backing: Backing::PageCache,
            bytes: 4096 * 100,
            page_bytes: 4096,
            pages: 100,
            resident: 100,
            percent_cached: 100.0,
            nodes: node_shares(
                &[NodePages { node: 0, pages: 10 }, NodePages { node: 1, pages: 90 }],
                100,
            ),
            unlocated: 0,
        };
        assert_eq!(home_node(&r), Some(1));
        // The Nehalem NUMA-vs-interleaved article's numbers: 6.0 GB/s local, 4.9 GB/s from the
        // other node.
        let mut reads = vec![read(0, 4.9), read(1, 6.0)];
        compare_reads(&mut reads, home_node(&r));
        assert!((reads[0].vs_home.expect("ratio") - 4.9 / 6.0).abs() < 1e-12);
        assert_eq!(reads[1].vs_home, Some(1.0));
        // Home not read from: no ratio rather than a made-up one.
        let mut only_0 = vec![read(0, 4.9)];
        compare_reads(&mut only_0, Some(1));
        assert_eq!(only_0[0].vs_home, None);
        // A tie goes to the lower node; nothing cached, no home.
        r.nodes =
            node_shares(&[NodePages { node: 0, pages: 50 }, NodePages { node: 1, pages: 50 }], 100);
        assert_eq!(home_node(&r), Some(0));
        r.nodes.clear();
        assert_eq!(home_node(&r), None);
    }

    #[test]
    fn windows_add_up_across_boundaries() {
        // 3.5 MiB + 100 bytes scanned in 1 MiB windows: four windows, the last one partial.
        let path = std::env::temp_dir().join(format!("pagecache-windows-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; (7 << 19) + 100]).expect("write");
        let f = CacheFile::open(&path).expect("open");
        let whole = f.scan(true, WINDOW_BYTES).expect("one window");
        let windowed = f.scan(true, 1 << 20).expect("windows");
        let _ = std::fs::remove_file(&path);
        assert_eq!(f.pages(), ((7u64 << 19) + 100).div_ceil(f.page as u64));
        assert_eq!(windowed.resident, whole.resident);
        assert_eq!(windowed.resident, f.pages(), "just written: cached");
        let located = |s: &Scan| s.per_node.iter().map(|n| n.pages).sum::<u64>() + s.unlocated;
        assert_eq!(located(&windowed), windowed.resident);
        assert_eq!(located(&whole), whole.resident);
    }

    #[test]
    fn eviction_arithmetic() {
        let e =
            EvictResult { resident_before: 10, resident_after: 3, synced: true, not_a_cache: None };
        assert_eq!(e.dropped(), 7);
        let e = EvictResult { resident_after: 12, ..e };
        assert_eq!(e.dropped(), 0, "pages read back in meanwhile are not negative drops");
    }
}
