//! Raw reads under `/proc` and `/sys`: one small file with one `read` into a reused buffer,
//! relative to an open `proc` directory; the thread's CPU clock; the online-CPU list.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;

use measure::{Error, FsRoot};

/// A file read: gone (the process or thread exited), refused, or failed.
pub(super) enum ReadError {
    Gone,
    Denied,
    Other(io::Error),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::ESRCH) => ReadError::Gone,
            Some(libc::EACCES) | Some(libc::EPERM) => ReadError::Denied,
            _ => ReadError::Other(e),
        }
    }
}

/// This thread's CPU time, ns (0 if its clock cannot be read).
pub(super) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a live local the kernel (or vDSO) writes one timespec into.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// Reads a small file (`path` relative to `dir`) with (usually) one `read` into `buf`, growing
/// it only for a larger file. With `want_uid`, also the file's owner.
pub(super) fn read_small(
    dir: &OwnedFd,
    path: &mut Vec<u8>,
    buf: &mut Vec<u8>,
    want_uid: bool,
) -> Result<(usize, Option<u32>), ReadError> {
    path.push(0);
    // SAFETY: `path` is NUL-terminated (pushed above) and lives across the call; `dir` is an
    // open directory descriptor. openat(2) only reads the string.
    let fd = unsafe {
        libc::openat(dir.as_raw_fd(), path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC)
    };
    path.pop();
    if fd < 0 {
        return Err(io::Error::last_os_error().into());
    }
    // SAFETY: `fd` was just opened above and is owned by nothing else.
    let mut file = unsafe { File::from_raw_fd(fd) };
    let uid = if want_uid { Some(file.metadata()?.uid()) } else { None };
    if buf.len() < 4096 {
        buf.resize(4096, 0);
    }
    let mut n = 0;
    loop {
        let space = buf.len() - n;
        let got = file.read(&mut buf[n..])?;
        n += got;
        // procfs hands over a whole record per read and regular files read fully: a read that
        // left room is the end.
        if got < space {
            break;
        }
        buf.resize(buf.len() * 2, 0);
    }
    Ok((n, uid))
}

/// Opens `ROOT/proc`.
pub(super) fn open_dir(root: &FsRoot) -> Result<OwnedFd, Error> {
    let dir = root.path("proc");
    File::open(&dir).map(OwnedFd::from).map_err(|source| Error::Io { path: dir, source })
}

/// Parses a list like `0-3,8` (sysfs CPU lists) into its count.
pub(super) fn count_cpu_list(text: &str) -> Option<u32> {
    let mut count = 0u32;
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let v = part.parse::<u32>().ok()?;
                (v, v)
            }
        };
        count += b.checked_sub(a)? + 1;
    }
    (count > 0).then_some(count)
}
