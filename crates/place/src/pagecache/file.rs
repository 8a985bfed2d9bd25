//! The file itself: opening and checking it, scanning its residency window by window, and
//! loading, evicting and reading it (the system calls and mappings).

use std::ffi::CString;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::Instant;

use measure::progress::ProgressBar;
use topo::sysfs::SysRoot;

use crate::arena::node_available;
use crate::pagenodes::{merge_node_pages, pages_nodes, tally_nodes};
use crate::{pin, MemPolicy, NodePages, PlaceError};

use super::*;

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
        let gbps = measure::stats::median(&passes.iter().map(|p| p.gbps).collect::<Vec<_>>());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_filesystems() {
        assert_eq!(filesystem_name(0xEF53), ("ext2/ext3/ext4".into(), Backing::PageCache));
        assert_eq!(filesystem_name(0x0102_1994).1, Backing::Shmem);
        assert_eq!(filesystem_name(0x8584_58F6).1, Backing::Ramfs);
        assert_eq!(filesystem_name(0x1234), ("0x1234".into(), Backing::PageCache));
    }

    #[test]
    fn median_of_passes() {
        use measure::stats::median;
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
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
}
