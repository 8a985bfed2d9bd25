//! The mount table (`/proc/self/mountinfo`): which filesystem a kernel device number is,
//! and the prefixes the BPF program matches absolute paths against.

use std::collections::BTreeMap;

/// A kernel-internal device number (`sb->s_dev`: major << 20 | minor), as BPF sees it.
pub type KernelDev = u32;

/// Encodes major:minor the way the kernel stores `s_dev` (not the userspace `dev_t`).
pub fn kernel_dev(major: u32, minor: u32) -> KernelDev {
    (major << 20) | (minor & 0xf_ffff)
}

/// The kernel encoding of a userspace `st_dev`.
pub fn kernel_dev_of(st_dev: u64) -> KernelDev {
    kernel_dev(libc::major(st_dev), libc::minor(st_dev))
}

/// One line of mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub dev: KernelDev,
    pub major: u32,
    pub minor: u32,
    /// Where the mount's root sits in its filesystem ("/" unless a bind mount of a subtree).
    pub root: String,
    pub mount_point: String,
    pub fstype: String,
    pub source: String,
}

/// Parses mountinfo text; lines that do not parse are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Mount> {
    let (left, right) = line.split_once(" - ")?;
    let fields: Vec<&str> = left.split(' ').collect();
    let (major, minor) = fields.get(2)?.split_once(':')?;
    let (major, minor) = (major.parse().ok()?, minor.parse().ok()?);
    let mut right = right.split(' ');
    Some(Mount {
        dev: kernel_dev(major, minor),
        major,
        minor,
        root: unescape(fields.get(3)?),
        mount_point: unescape(fields.get(4)?),
        fstype: right.next()?.to_string(),
        source: unescape(right.next().unwrap_or("")),
    })
}

/// mountinfo writes space, tab, newline and backslash as octal escapes (`\040`).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits =
            bytes.get(i + 1..i + 4).filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        if let (b'\\', Some(d)) = (bytes[i], digits) {
            let value = d.iter().fold(0u32, |v, b| v * 8 + u32::from(b - b'0'));
            if let Ok(byte) = u8::try_from(value) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount table, by device.
#[derive(Debug, Clone, Default)]
pub struct MountTable {
    mounts: Vec<Mount>,
}

impl MountTable {
    pub fn new(mounts: Vec<Mount>) -> Self {
        Self { mounts }
    }

    /// This process's mount namespace.
    pub fn live() -> std::io::Result<Self> {
        Ok(Self::new(parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo")?)))
    }

    /// How a device is shown: the first mount of its whole filesystem (root "/"), else the
    /// first bind mount of part of it.
    pub fn mount_of(&self, dev: KernelDev) -> Option<&Mount> {
        let mut of_dev = self.mounts.iter().filter(|m| m.dev == dev);
        let first = of_dev.clone().next()?;
        Some(of_dev.find(|m| m.root == "/").unwrap_or(first))
    }

    /// Every mounted filesystem's device, once each, in mount order.
    pub fn devices(&self) -> Vec<KernelDev> {
        let mut seen = std::collections::HashSet::new();
        self.mounts.iter().map(|m| m.dev).filter(|dev| seen.insert(*dev)).collect()
    }

    /// Where the cgroup v2 hierarchy is mounted, if it is.
    pub fn cgroup2_root(&self) -> Option<std::path::PathBuf> {
        self.mounts.iter().find(|m| m.fstype == "cgroup2").map(|m| m.mount_point.clone().into())
    }

    /// Mount points for the BPF program, longest first so the first match is the deepest
    /// mount; at most `max` of them, each shorter than `max_len` bytes. When there are too
    /// many, the deepest ones are left out (the second value counts them): their paths are
    /// then attributed to the mount above them.
    pub fn prefixes(&self, max: usize, max_len: usize) -> (Vec<(KernelDev, String)>, usize) {
        let mut by_point: BTreeMap<&str, KernelDev> = BTreeMap::new();
        // A later mount on the same point hides the earlier one.
        for m in &self.mounts {
            by_point.insert(&m.mount_point, m.dev);
        }
        let mut points: Vec<(KernelDev, String)> =
            by_point.into_iter().map(|(p, d)| (d, p.to_string())).collect();
        let total = points.len();
        points.retain(|(_, p)| p.len() < max_len);
        points.sort_by_key(|(_, p)| p.len());
        points.truncate(max);
        points.reverse();
        let left_out = total - points.len();
        (points, left_out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:5 - proc proc rw
40 22 0:35 / /tmp rw,nosuid,nodev shared:20 - tmpfs tmpfs rw,size=1024k
41 22 7:0 / /mnt/my\\040disk rw,relatime shared:21 - ext4 /dev/loop0 rw
42 22 7:0 /sub /srv/bind rw,relatime shared:21 - ext4 /dev/loop0 rw
";

    #[test]
    fn parses_mountinfo_with_escapes() {
        let m = parse_mountinfo(SAMPLE);
        assert_eq!(m.len(), 5);
        assert_eq!(m[0].dev, 254 << 20 | 1);
        assert_eq!(m[0].fstype, "ext4");
        assert_eq!(m[3].mount_point, "/mnt/my disk");
        assert_eq!(m[3].source, "/dev/loop0");
        assert_eq!(m[4].root, "/sub");
    }

    #[test]
    fn a_device_is_shown_by_its_whole_mount() {
        let table = MountTable::new(parse_mountinfo(SAMPLE));
        assert_eq!(table.mount_of(kernel_dev(7, 0)).unwrap().mount_point, "/mnt/my disk");
        assert_eq!(table.mount_of(kernel_dev(0, 35)).unwrap().fstype, "tmpfs");
        assert!(table.mount_of(kernel_dev(9, 9)).is_none());
        assert_eq!(table.cgroup2_root(), None);
        let hybrid = "30 22 0:26 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        let table = MountTable::new(parse_mountinfo(hybrid));
        assert_eq!(table.cgroup2_root().unwrap(), std::path::Path::new("/sys/fs/cgroup/unified"));
    }

    #[test]
    fn prefixes_are_longest_first_and_capped() {
        let table = MountTable::new(parse_mountinfo(SAMPLE));
        let (p, left_out) = table.prefixes(64, 128);
        let points: Vec<&str> = p.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(points, ["/mnt/my disk", "/srv/bind", "/proc", "/tmp", "/"]);
        assert_eq!(left_out, 0);
        let (p, left_out) = table.prefixes(3, 128);
        assert_eq!(p.last().unwrap().1, "/");
        assert_eq!(p.len(), 3);
        assert_eq!(left_out, 2);
        assert_eq!(table.prefixes(64, 6).1, 2, "names of 6 bytes or more do not fit");
    }

    #[test]
    fn kernel_dev_matches_the_kernel_encoding() {
        // userspace makedev(8, 1) is 0x801; the kernel's s_dev is 8 << 20 | 1.
        assert_eq!(kernel_dev_of(libc::makedev(8, 1)), 0x0080_0001);
        assert_eq!(kernel_dev_of(libc::makedev(259, 70000)), 259 << 20 | 70000);
    }
}
