//! Opening and reading an input that is not a regular file (a pipe, a FIFO, a socket) so that
//! Ctrl-C or SIGTERM is seen while it is silent. A blocked `open` or `read` would be restarted
//! after the signal and wait for a writer that may never come, so `timeout` and systemd's stop
//! could not end the run: a FIFO is opened without waiting for its writer, and each read first
//! waits for data in 100 ms slices, checking the stop flag between them.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// How long a read waits for data before it looks at the stop flag again.
const SLICE_MS: libc::c_int = 100;

/// Opens `path` to read without waiting (a FIFO's open would wait for its writer), then sets
/// the file back to blocking: [`Watched`] does the waiting, in `poll`. `O_NONBLOCK` changes
/// nothing else for a regular file.
pub(crate) fn open(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL and F_SETFL on a descriptor this function owns; no pointers.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// The error a [`Watched`] read returns once a stop was asked for (see [`is_stopped`]).
#[derive(Debug)]
struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stopped (Ctrl-C or SIGTERM) while waiting for input")
    }
}

impl std::error::Error for Stopped {}

/// Whether `e` is a [`Watched`] read's answer to a stop request.
pub(crate) fn is_stopped(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Stopped>())
}

/// An input file that, unless it is a regular file, waits for data in `poll` and gives up with
/// an [`is_stopped`] error when `stop` is set. A regular file is read as it is (its reads do
/// not wait on anyone).
pub(crate) struct Watched<'s> {
    file: File,
    stop: &'s AtomicBool,
    regular: bool,
}

impl<'s> Watched<'s> {
    pub(crate) fn new(file: File, stop: &'s AtomicBool) -> io::Result<Self> {
        let regular = file.metadata()?.is_file();
        Ok(Self { file, stop, regular })
    }
}

impl Read for Watched<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.regular {
            let mut fd =
                libc::pollfd { fd: self.file.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            loop {
                // Readable, hung up or failed: the read below says which.
                // SAFETY: one valid pollfd for the duration of the call.
                match unsafe { libc::poll(&mut fd, 1, SLICE_MS) } {
                    n if n > 0 => break,
                    0 => {}
                    _ => {
                        let e = io::Error::last_os_error();
                        if e.kind() != io::ErrorKind::Interrupted {
                            return Err(e);
                        }
                    }
                }
                if self.stop.load(Ordering::Relaxed) {
                    return Err(io::Error::other(Stopped));
                }
            }
        }
        self.file.read(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::{Duration, Instant};

    #[test]
    fn a_silent_pipe_gives_up_when_a_stop_is_asked_and_a_live_one_reads_to_its_end() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        let stop = AtomicBool::new(false);
        let mut input =
            Watched::new(File::from(std::os::fd::OwnedFd::from(reader)), &stop).unwrap();
        writer.write_all(b"abc").unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(input.read(&mut buf).unwrap(), 3);
        let t0 = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(150));
                stop.store(true, Ordering::Relaxed);
            });
            let e = input.read(&mut buf).unwrap_err();
            assert!(is_stopped(&e), "{e}");
        });
        assert!(t0.elapsed() >= Duration::from_millis(150));
        // A writer that goes away is the end of the input, not a stop.
        stop.store(false, Ordering::Relaxed);
        drop(writer);
        assert_eq!(input.read(&mut buf).unwrap(), 0);
    }

    #[test]
    fn a_fifo_opens_before_its_writer_comes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fifo");
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let stop = AtomicBool::new(true);
        let mut input = Watched::new(open(&path).unwrap(), &stop).unwrap();
        assert!(is_stopped(&input.read(&mut [0u8; 4]).unwrap_err()));
        // A writer that comes, writes and goes: its bytes, then the end.
        stop.store(false, Ordering::Relaxed);
        let mut w = OpenOptions::new().write(true).open(&path).unwrap();
        w.write_all(b"hello").unwrap();
        drop(w);
        let mut got = Vec::new();
        input.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"hello");
    }
}
