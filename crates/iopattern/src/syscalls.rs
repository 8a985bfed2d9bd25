//! Which system calls `io pattern` counts and where their arguments are, for this
//! architecture. The BPF program looks each call up by number in a table filled from here,
//! so the syscall knowledge is plain Rust (numbers from `libc`, checked by tests).

use crate::skel::iopattern::types::iot_sys_op;

/// What a call is to the tally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
    Meta,
}

/// Right-column classes (bits: a stat by path is a lookup and a getattr).
pub mod meta {
    pub const LOOKUP: u8 = 1 << 0;
    pub const READDIR: u8 = 1 << 1;
    pub const ATTR: u8 = 1 << 2;
    pub const CREATE_REMOVE: u8 = 1 << 3;
    pub const OTHER: u8 = 1 << 4;
    /// Column names, in bit order, as the DTrace script's right column prints them.
    pub const LABELS: [&str; 5] = ["acc/look", "readdir", "geta/seta", "cr/rm", "other"];
}

const CREATE_IF_O_CREAT: u8 = 1 << 0;
const FLAGS_IN_OPEN_HOW: u8 = 1 << 1;
const NULL_PATH_IS_FD: u8 = 1 << 2;
const NONE: i8 = -1;

/// One system call's description, as the BPF program reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SysOp {
    pub name: &'static str,
    pub nr: u32,
    pub kind: Kind,
    pub meta: u8,
    /// The call works on this file descriptor.
    pub fd_arg: i8,
    /// Or on a path (argument `path_arg`), relative to this dirfd (none: the working directory).
    pub dirfd_arg: i8,
    pub path_arg: i8,
    /// Open flags, for O_CREAT.
    pub flags_arg: i8,
    /// The file offset argument (pread/pwrite families).
    pub offset_arg: i8,
    pub flags: u8,
}

impl SysOp {
    const fn io(name: &'static str, nr: i64, kind: Kind, offset_arg: i8) -> Self {
        Self {
            name,
            nr: nr as u32,
            kind,
            meta: 0,
            fd_arg: 0,
            dirfd_arg: NONE,
            path_arg: NONE,
            flags_arg: NONE,
            offset_arg,
            flags: 0,
        }
    }

    /// A metadata call on a file descriptor (argument 0).
    const fn on_fd(name: &'static str, nr: i64, meta: u8) -> Self {
        Self { kind: Kind::Meta, meta, ..Self::io(name, nr, Kind::Meta, NONE) }
    }

    /// A metadata call on a path: `dirfd` is the argument it is relative to, if any.
    const fn on_path(name: &'static str, nr: i64, meta: u8, dirfd: i8, path: i8) -> Self {
        Self {
            kind: Kind::Meta,
            meta,
            fd_arg: NONE,
            dirfd_arg: dirfd,
            path_arg: path,
            ..Self::io(name, nr, Kind::Meta, NONE)
        }
    }

    /// An open: a lookup, and a create when its flags (argument `flags`) hold O_CREAT.
    const fn open(name: &'static str, nr: i64, dirfd: i8, path: i8, flags: i8) -> Self {
        Self {
            flags_arg: flags,
            flags: CREATE_IF_O_CREAT,
            ..Self::on_path(name, nr, meta::LOOKUP, dirfd, path)
        }
    }

    /// `*at` calls where an empty or NULL path means the dirfd itself (AT_EMPTY_PATH).
    const fn empty_path_is_fd(self) -> Self {
        Self { flags: self.flags | NULL_PATH_IS_FD, ..self }
    }

    pub(crate) fn to_bpf(self) -> iot_sys_op {
        iot_sys_op {
            kind: match self.kind {
                Kind::Read => 1,
                Kind::Write => 2,
                Kind::Meta => 3,
            },
            meta: self.meta,
            fd_arg: self.fd_arg,
            dirfd_arg: self.dirfd_arg,
            path_arg: self.path_arg,
            flags_arg: self.flags_arg,
            offset_arg: self.offset_arg,
            flags: self.flags,
        }
    }
}

use libc as s;
use meta::{ATTR, CREATE_REMOVE as CRRM, LOOKUP, OTHER, READDIR};
use Kind::{Read, Write};

const LOOKUP_ATTR: u8 = LOOKUP | ATTR;

/// Calls every architecture has (the generic syscall table).
const COMMON: &[SysOp] = &[
    SysOp::io("read", s::SYS_read, Read, NONE),
    SysOp::io("pread64", s::SYS_pread64, Read, 3),
    SysOp::io("readv", s::SYS_readv, Read, NONE),
    SysOp::io("preadv", s::SYS_preadv, Read, 3),
    SysOp::io("preadv2", s::SYS_preadv2, Read, 3),
    SysOp::io("write", s::SYS_write, Write, NONE),
    SysOp::io("pwrite64", s::SYS_pwrite64, Write, 3),
    SysOp::io("writev", s::SYS_writev, Write, NONE),
    SysOp::io("pwritev", s::SYS_pwritev, Write, 3),
    SysOp::io("pwritev2", s::SYS_pwritev2, Write, 3),
    SysOp::open("openat", s::SYS_openat, 0, 1, 2),
    SysOp {
        flags: CREATE_IF_O_CREAT | FLAGS_IN_OPEN_HOW,
        ..SysOp::open("openat2", s::SYS_openat2, 0, 1, 2)
    },
    SysOp::on_path("faccessat", s::SYS_faccessat, LOOKUP, 0, 1),
    SysOp::on_path("faccessat2", s::SYS_faccessat2, LOOKUP, 0, 1).empty_path_is_fd(),
    SysOp::on_path("readlinkat", s::SYS_readlinkat, LOOKUP, 0, 1),
    SysOp::on_fd("fstat", s::SYS_fstat, ATTR),
    SysOp::on_path("newfstatat", s::SYS_newfstatat, LOOKUP_ATTR, 0, 1).empty_path_is_fd(),
    SysOp::on_path("statx", s::SYS_statx, LOOKUP_ATTR, 0, 1).empty_path_is_fd(),
    SysOp::on_fd("fchmod", s::SYS_fchmod, ATTR),
    SysOp::on_path("fchmodat", s::SYS_fchmodat, ATTR, 0, 1),
    SysOp::on_path("fchmodat2", s::SYS_fchmodat2, ATTR, 0, 1).empty_path_is_fd(),
    SysOp::on_fd("fchown", s::SYS_fchown, ATTR),
    SysOp::on_path("fchownat", s::SYS_fchownat, ATTR, 0, 1).empty_path_is_fd(),
    SysOp::on_path("utimensat", s::SYS_utimensat, ATTR, 0, 1).empty_path_is_fd(),
    SysOp::on_path("setxattr", s::SYS_setxattr, ATTR, NONE, 0),
    SysOp::on_path("lsetxattr", s::SYS_lsetxattr, ATTR, NONE, 0),
    SysOp::on_fd("fsetxattr", s::SYS_fsetxattr, ATTR),
    SysOp::on_path("getxattr", s::SYS_getxattr, ATTR, NONE, 0),
    SysOp::on_path("lgetxattr", s::SYS_lgetxattr, ATTR, NONE, 0),
    SysOp::on_fd("fgetxattr", s::SYS_fgetxattr, ATTR),
    SysOp::on_path("listxattr", s::SYS_listxattr, ATTR, NONE, 0),
    SysOp::on_path("llistxattr", s::SYS_llistxattr, ATTR, NONE, 0),
    SysOp::on_fd("flistxattr", s::SYS_flistxattr, ATTR),
    SysOp::on_path("removexattr", s::SYS_removexattr, ATTR, NONE, 0),
    SysOp::on_path("lremovexattr", s::SYS_lremovexattr, ATTR, NONE, 0),
    SysOp::on_fd("fremovexattr", s::SYS_fremovexattr, ATTR),
    SysOp::on_fd("getdents64", s::SYS_getdents64, READDIR),
    SysOp::on_path("mkdirat", s::SYS_mkdirat, CRRM, 0, 1),
    SysOp::on_path("mknodat", s::SYS_mknodat, CRRM, 0, 1),
    SysOp::on_path("unlinkat", s::SYS_unlinkat, CRRM, 0, 1),
    SysOp::on_path("renameat2", s::SYS_renameat2, CRRM, 0, 1),
    SysOp::on_path("linkat", s::SYS_linkat, CRRM, 2, 3),
    SysOp::on_path("symlinkat", s::SYS_symlinkat, CRRM, 1, 2),
    SysOp::on_fd("fsync", s::SYS_fsync, OTHER),
    SysOp::on_fd("fdatasync", s::SYS_fdatasync, OTHER),
    SysOp::on_fd("sync_file_range", s::SYS_sync_file_range, OTHER),
    SysOp::on_fd("syncfs", s::SYS_syncfs, OTHER),
    SysOp::on_fd("fallocate", s::SYS_fallocate, OTHER),
    SysOp::on_fd("ftruncate", s::SYS_ftruncate, OTHER),
    SysOp::on_path("truncate", s::SYS_truncate, OTHER, NONE, 0),
    SysOp::on_fd("flock", s::SYS_flock, OTHER),
];

/// The older path calls x86-64 still has next to their `*at` forms.
#[cfg(target_arch = "x86_64")]
const LEGACY: &[SysOp] = &[
    SysOp::open("open", s::SYS_open, NONE, 0, 1),
    SysOp { flags: 0, meta: LOOKUP | CRRM, ..SysOp::open("creat", s::SYS_creat, NONE, 0, NONE) },
    SysOp::on_path("access", s::SYS_access, LOOKUP, NONE, 0),
    SysOp::on_path("readlink", s::SYS_readlink, LOOKUP, NONE, 0),
    SysOp::on_path("stat", s::SYS_stat, LOOKUP_ATTR, NONE, 0),
    SysOp::on_path("lstat", s::SYS_lstat, LOOKUP_ATTR, NONE, 0),
    SysOp::on_path("chmod", s::SYS_chmod, ATTR, NONE, 0),
    SysOp::on_path("chown", s::SYS_chown, ATTR, NONE, 0),
    SysOp::on_path("lchown", s::SYS_lchown, ATTR, NONE, 0),
    SysOp::on_path("utime", s::SYS_utime, ATTR, NONE, 0),
    SysOp::on_path("utimes", s::SYS_utimes, ATTR, NONE, 0),
    SysOp::on_path("futimesat", s::SYS_futimesat, ATTR, 0, 1),
    SysOp::on_fd("getdents", s::SYS_getdents, READDIR),
    SysOp::on_path("mkdir", s::SYS_mkdir, CRRM, NONE, 0),
    SysOp::on_path("mknod", s::SYS_mknod, CRRM, NONE, 0),
    SysOp::on_path("rmdir", s::SYS_rmdir, CRRM, NONE, 0),
    SysOp::on_path("unlink", s::SYS_unlink, CRRM, NONE, 0),
    SysOp::on_path("rename", s::SYS_rename, CRRM, NONE, 0),
    SysOp::on_path("renameat", s::SYS_renameat, CRRM, 0, 1),
    SysOp::on_path("link", s::SYS_link, CRRM, NONE, 1),
    SysOp::on_path("symlink", s::SYS_symlink, CRRM, NONE, 1),
    SysOp::on_fd("fadvise64", s::SYS_fadvise64, OTHER),
];

#[cfg(not(target_arch = "x86_64"))]
const LEGACY: &[SysOp] = &[];

/// Every call `io pattern` counts on this architecture.
pub fn table() -> impl Iterator<Item = &'static SysOp> {
    COMMON.iter().chain(LEGACY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_has_one_entry_and_a_target() {
        let mut seen = std::collections::HashSet::new();
        for op in table() {
            assert!(seen.insert(op.nr), "{} listed twice", op.name);
            assert!((op.nr as usize) < 512, "{} beyond the BPF table", op.name);
            match op.kind {
                Kind::Read | Kind::Write => {
                    assert_eq!(op.fd_arg, 0, "{}", op.name);
                    assert_eq!(op.meta, 0, "{}", op.name);
                }
                Kind::Meta => {
                    assert_ne!(op.meta, 0, "{}", op.name);
                    assert!(op.fd_arg >= 0 || op.path_arg >= 0, "{} works on nothing", op.name);
                }
            }
        }
    }

    #[test]
    fn the_ten_read_and_write_calls_are_there() {
        let io: Vec<&str> = table().filter(|o| o.kind != Kind::Meta).map(|o| o.name).collect();
        for name in [
            "read", "pread64", "readv", "preadv", "preadv2", "write", "pwrite64", "writev",
            "pwritev", "pwritev2",
        ] {
            assert!(io.contains(&name), "{name}");
        }
        let pread = table().find(|o| o.name == "pread64").unwrap();
        assert_eq!(pread.nr as i64, libc::SYS_pread64);
        assert_eq!(pread.offset_arg, 3);
    }
}
