//! Where the files are read from: `/` on a live system or a captured tree in tests, and which
//! directory holds the network files of the network namespace being watched.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::{Error, ParseError};

/// A filesystem root under which `proc/…` and `sys/…` are read.
///
/// `/proc/net` is the network namespace of the *process*; a thread that entered another
/// namespace with `setns(2)` sees its own in `/proc/thread-self/net` ([`FsRoot::thread_netns`]).
/// `/sys/class/net` shows the namespace sysfs was mounted in (`ip netns exec` remounts it), so a
/// reader for a thread's namespace does not use sysfs and asks the kernel with ioctls instead.
#[derive(Debug, Clone)]
pub struct FsRoot {
    root: PathBuf,
    net_dir: String,
    sysfs: bool,
    live: bool,
}

impl Default for FsRoot {
    fn default() -> Self {
        Self::live()
    }
}

impl FsRoot {
    /// The running system, as this process sees it.
    pub fn live() -> Self {
        Self { root: PathBuf::from("/"), net_dir: "proc/net".into(), sysfs: true, live: true }
    }

    /// The running system, as the calling thread sees it: `/proc/thread-self/net`, and interface
    /// facts from ioctls on a socket of the thread's namespace rather than from sysfs.
    pub fn thread_netns() -> Self {
        Self {
            root: PathBuf::from("/"),
            net_dir: "proc/thread-self/net".into(),
            sysfs: false,
            live: true,
        }
    }

    /// A captured or fabricated tree (a test fixture); never asks the kernel anything.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into(), net_dir: "proc/net".into(), sysfs: true, live: false }
    }

    /// Whether this root is the running system (so ioctls describe the same interfaces).
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// Whether `sys/class/net` belongs to the namespace being read.
    pub fn has_sysfs(&self) -> bool {
        self.sysfs
    }

    /// `relative` (e.g. `proc/uptime`) under this root.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative.trim_start_matches('/'))
    }

    /// The path of a file of the network directory (`dev`, `snmp`, `netstat`, `softnet_stat`).
    pub fn net_path(&self, name: &str) -> PathBuf {
        self.path(&format!("{}/{name}", self.net_dir))
    }

    /// Reads a whole file into `buf` (cleared first), keeping its allocation across samples.
    pub fn read_into(&self, path: &Path, buf: &mut String) -> Result<(), Error> {
        buf.clear();
        std::fs::File::open(path)
            .and_then(|mut f| f.read_to_string(buf))
            .map(|_| ())
            .map_err(|source| Error::Io { path: path.to_path_buf(), source })
    }

    /// Reads and parses one file, attaching its path to any error.
    pub fn parse<T>(
        &self,
        path: &Path,
        buf: &mut String,
        parse: impl FnOnce(&str) -> Result<T, ParseError>,
    ) -> Result<T, Error> {
        self.read_into(path, buf)?;
        parse(buf).map_err(|source| Error::Parse { path: path.to_path_buf(), source })
    }

    /// A sysfs attribute of a network interface, trimmed; `Err` carries the OS error so callers
    /// can tell "absent" from "refused" (sysfs answers EINVAL for the speed of a down link).
    pub fn class_net(&self, interface: &str, attribute: &str) -> std::io::Result<String> {
        let path = self.path(&format!("sys/class/net/{interface}/{attribute}"));
        std::fs::read_to_string(path).map(|s| s.trim().to_string())
    }
}
