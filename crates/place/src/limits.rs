//! Limits on this process's memory other than what the nodes have free: the address-space limit
//! (`RLIMIT_AS`, `ulimit -v`, common under batch schedulers) and the memory limit of the
//! process's control group (cgroup v2 `memory.max`, or v1 `memory.limit_in_bytes`). An arena
//! that fits the nodes but not these would fail later, on some allocation the run makes after
//! the buffer (and Rust aborts on a failed heap allocation), so [`Arena`](crate::Arena) refuses
//! it up front, naming the limit.
//!
//! The parsers here are I/O-free; [`ProcessLimits::live`] reads the running system.

use std::path::{Path, PathBuf};

use topo::units::format_bytes;

use crate::PlaceError;

/// Address space a run needs besides its buffer and what it has mapped already (which
/// `VmSize` counts): the allocator's next per-thread arenas (glibc reserves 64 MiB of address
/// space for each) and thread stacks.
pub const BASE_HEADROOM: u64 = 128 << 20;

/// What a run needs besides a buffer of `len` bytes: [`BASE_HEADROOM`] plus an eighth of the
/// buffer (pointer-chase permutations, per-page placement queries).
pub fn headroom(len: u64) -> u64 {
    BASE_HEADROOM + len / 8
}

/// One limit and how much of it is still unused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// In words, with where it is set, e.g. "the address-space limit (RLIMIT_AS, `ulimit -v`)".
    pub name: String,
    pub limit: u64,
    pub unused: u64,
    /// What to do about it.
    pub fix: &'static str,
}

/// The limits found for this process (none when unlimited).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessLimits {
    pub limits: Vec<Limit>,
}

impl ProcessLimits {
    /// The live process's limits: `getrlimit(RLIMIT_AS)` against `VmSize`, and its cgroup's
    /// memory limit (every ancestor's; the tightest counts) against its usage. A limit that
    /// cannot be read is left out.
    pub fn live() -> Self {
        let mut limits = Vec::new();
        let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes one rlimit into the struct we own.
        let rc = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut rl) };
        if rc == 0 && rl.rlim_cur != libc::RLIM_INFINITY {
            let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
            let used = status_kib(&status, "VmSize").unwrap_or(0) << 10;
            limits.push(address_space_limit(rl.rlim_cur, used));
        }
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        if let Some(limit) = cgroup_dirs(&cgroup, &mountinfo)
            .into_iter()
            .filter_map(|(dir, v2)| read_cgroup_limit(&dir, v2))
            .min_by_key(|l| l.unused)
        {
            limits.push(limit);
        }
        ProcessLimits { limits }
    }

    /// Refuses `len` bytes (plus [`headroom`]) when a limit has less unused.
    pub fn check(&self, len: u64) -> Result<(), PlaceError> {
        let needed = len.saturating_add(headroom(len));
        match self.limits.iter().filter(|l| l.unused < needed).min_by_key(|l| l.unused) {
            None => Ok(()),
            Some(l) => Err(PlaceError::OverLimit {
                requested: format_bytes(len),
                headroom: format_bytes(needed - len),
                limit: format!(
                    "{} is {} with {} unused",
                    l.name,
                    format_bytes(l.limit),
                    format_bytes(l.unused)
                ),
                fix: l.fix,
            }),
        }
    }
}

fn address_space_limit(limit: u64, used: u64) -> Limit {
    Limit {
        name: "the process's address-space limit (RLIMIT_AS, `ulimit -v`)".into(),
        limit,
        unused: limit.saturating_sub(used),
        fix: "raise it (`ulimit -v unlimited`, or the scheduler's virtual-memory limit)",
    }
}

/// A `Name:   N kB` line of `/proc/PID/status`, in KiB.
pub fn status_kib(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The memory-controller directories of this process's cgroup and all its ancestors up to the
/// mount's root, each with whether it is cgroup v2, from `/proc/self/cgroup` and
/// `/proc/self/mountinfo`. v2 (`0::PATH` on a `cgroup2` mount) and v1 (`N:...memory...:PATH` on
/// a `cgroup` mount with the `memory` option) are both found.
pub fn cgroup_dirs(cgroup: &str, mountinfo: &str) -> Vec<(PathBuf, bool)> {
    let mut dirs = Vec::new();
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let v2 = id == "0" && controllers.is_empty();
        if !v2 && !controllers.split(',').any(|c| c == "memory") {
            continue;
        }
        let Some((root, mount)) = memory_mount(mountinfo, v2) else { continue };
        // Inside a cgroup namespace or a bind mount, the mount shows the cgroup tree from `root`.
        let Some(rel) = Path::new(path).strip_prefix(&root).ok() else { continue };
        let mut dir = Some(rel);
        while let Some(d) = dir {
            dirs.push((mount.join(d), v2));
            dir = d.parent();
        }
    }
    dirs
}

/// (root inside the hierarchy, mount point) of the cgroup2 mount, or of the v1 memory mount.
fn memory_mount(mountinfo: &str, v2: bool) -> Option<(PathBuf, PathBuf)> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let fields: Vec<&str> = left.split_whitespace().collect();
        let mut rfields = right.split_whitespace();
        let fstype = rfields.next()?;
        let _source = rfields.next();
        let options = rfields.next().unwrap_or("");
        let wanted = if v2 {
            fstype == "cgroup2"
        } else {
            fstype == "cgroup" && options.split(',').any(|o| o == "memory")
        };
        if !wanted {
            return None;
        }
        Some((PathBuf::from(fields.get(3)?), PathBuf::from(fields.get(4)?)))
    })
}

/// A cgroup's memory limit and what is unused of it: the limit minus usage, usage counting
/// reclaimable page cache (`inactive_file` in `memory.stat`) as unused.
fn read_cgroup_limit(dir: &Path, v2: bool) -> Option<Limit> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let (max_file, usage_file) = if v2 {
        ("memory.max", "memory.current")
    } else {
        ("memory.limit_in_bytes", "memory.usage_in_bytes")
    };
    let limit = parse_limit(&read(max_file)?)?;
    let usage: u64 = read(usage_file)?.trim().parse().ok()?;
    let reclaimable =
        read("memory.stat").and_then(|s| stat_value(&s, "inactive_file")).unwrap_or(0);
    Some(Limit {
        name: format!("the memory limit of cgroup {} ({max_file})", dir.display()),
        limit,
        unused: limit.saturating_sub(usage.saturating_sub(reclaimable)),
        fix: "raise it (`systemctl set-property UNIT MemoryMax=…`, the container's memory limit) \
              or run outside the cgroup",
    })
}

/// A cgroup memory limit file: `max` (v2) or a v1 value near `i64::MAX` mean no limit.
pub fn parse_limit(text: &str) -> Option<u64> {
    let text = text.trim();
    if text == "max" {
        return None;
    }
    let v: u64 = text.parse().ok()?;
    (v < (1 << 62)).then_some(v)
}

/// One `key value` line of `memory.stat`.
pub fn stat_value(stat: &str, key: &str) -> Option<u64> {
    stat.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/proc/self/mountinfo` lines of a Debian 12 VM with the hybrid hierarchy (v1 memory
    /// controller, cgroup2 at /sys/fs/cgroup/unified), and of a cgroup2-only host.
    const HYBRID: &str =
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                          41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
    const UNIFIED: &str =
        "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";

    #[test]
    fn finds_the_v2_cgroup_and_its_ancestors() {
        let dirs = cgroup_dirs("0::/system.slice/db.service\n", UNIFIED);
        assert_eq!(
            dirs,
            vec![
                (PathBuf::from("/sys/fs/cgroup/system.slice/db.service"), true),
                (PathBuf::from("/sys/fs/cgroup/system.slice"), true),
                (PathBuf::from("/sys/fs/cgroup"), true),
            ]
        );
    }

    #[test]
    fn finds_the_v1_memory_cgroup_in_a_hybrid_hierarchy() {
        let cgroup = "9:name=systemd:/\n4:memory:/batch/job7\n1:cpu:/\n0::/\n";
        let dirs = cgroup_dirs(cgroup, HYBRID);
        assert!(dirs.contains(&(PathBuf::from("/sys/fs/cgroup/memory/batch/job7"), false)));
        assert!(dirs.contains(&(PathBuf::from("/sys/fs/cgroup/unified"), true)));
    }

    #[test]
    fn unlimited_values_are_no_limit() {
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("9223372036854771712\n"), None);
        assert_eq!(parse_limit("1073741824\n"), Some(1 << 30));
    }

    #[test]
    fn reads_status_and_stat_fields() {
        assert_eq!(status_kib("Name:\tx\nVmSize:\t  3892 kB\n", "VmSize"), Some(3892));
        assert_eq!(stat_value("active_file 5\ninactive_file 4096\n", "inactive_file"), Some(4096));
    }

    #[test]
    fn refuses_what_the_address_space_limit_cannot_hold() {
        let limits = ProcessLimits { limits: vec![address_space_limit(1 << 30, 100 << 20)] };
        let err = limits.check(1 << 30).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("RLIMIT_AS, `ulimit -v`"), "{text}");
        assert!(text.contains("1.0 GiB"), "{text}");
        assert!(err.is_usage());
        assert!(limits.check(64 << 20).is_ok());
        assert!(ProcessLimits::default().check(u64::MAX / 2).is_ok());
    }
}
