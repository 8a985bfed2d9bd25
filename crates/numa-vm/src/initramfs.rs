//! The guest's initramfs: a newc cpio archive written directly (no external `cpio` needed)
//! holding busybox, the binary under test with its shared libraries, the commands and `/init`.

use std::collections::BTreeSet;
use std::io::{self, Write};

use crate::protocol::Markers;

const S_IFDIR: u32 = 0o040_000;
const S_IFREG: u32 = 0o100_000;
const S_IFLNK: u32 = 0o120_000;
const S_IFCHR: u32 = 0o020_000;

/// Writes a newc ("070701") cpio archive, creating parent directories on demand.
#[derive(Debug)]
pub(crate) struct CpioWriter<W: Write> {
    out: W,
    next_ino: u32,
    written: u64,
    dirs: BTreeSet<String>,
    names: BTreeSet<String>,
}

impl<W: Write> CpioWriter<W> {
    pub(crate) fn new(out: W) -> Self {
        CpioWriter { out, next_ino: 1, written: 0, dirs: BTreeSet::new(), names: BTreeSet::new() }
    }

    /// Whether an entry with this name (no leading `/`) was already written.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.names.contains(name.trim_start_matches('/'))
    }

    fn raw(
        &mut self,
        name: &str,
        mode: u32,
        nlink: u32,
        rdev: (u32, u32),
        data: &[u8],
    ) -> io::Result<()> {
        let namesize = name.len() + 1;
        let fields = [
            self.next_ino,
            mode,
            0, // uid
            0, // gid
            nlink,
            0, // mtime: fixed, so archives are reproducible
            u32::try_from(data.len()).map_err(|_| io::Error::other("file over 4 GiB"))?,
            0, // devmajor
            0, // devminor
            rdev.0,
            rdev.1,
            u32::try_from(namesize).map_err(|_| io::Error::other("name too long"))?,
            0, // check
        ];
        self.next_ino += 1;
        let mut header = String::with_capacity(110);
        header.push_str("070701");
        for f in fields {
            header.push_str(&format!("{f:08x}"));
        }
        self.put(header.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad()?;
        self.put(data)?;
        self.pad()
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let n = (4 - (self.written % 4) as usize) % 4;
        self.put(&[0; 3][..n])
    }

    /// Creates every missing parent directory of `name`.
    fn parents(&mut self, name: &str) -> io::Result<()> {
        let mut end = 0;
        while let Some(pos) = name[end..].find('/') {
            end += pos;
            let dir = &name[..end];
            if !dir.is_empty() && self.dirs.insert(dir.to_string()) {
                self.names.insert(dir.to_string());
                self.raw(dir, S_IFDIR | 0o755, 2, (0, 0), &[])?;
            }
            end += 1;
        }
        Ok(())
    }

    fn begin(&mut self, name: &str) -> io::Result<String> {
        let name = name.trim_start_matches('/').to_string();
        if name.is_empty() || name.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
            return Err(io::Error::other(format!("bad archive path {name:?}")));
        }
        self.parents(&name)?;
        self.names.insert(name.clone());
        Ok(name)
    }

    pub(crate) fn dir(&mut self, name: &str) -> io::Result<()> {
        let name = self.begin(name)?;
        if self.dirs.insert(name.clone()) {
            self.raw(&name, S_IFDIR | 0o755, 2, (0, 0), &[])?;
        }
        Ok(())
    }

    pub(crate) fn file(&mut self, name: &str, perm: u32, data: &[u8]) -> io::Result<()> {
        let name = self.begin(name)?;
        self.raw(&name, S_IFREG | perm, 1, (0, 0), data)
    }

    pub(crate) fn symlink(&mut self, name: &str, target: &str) -> io::Result<()> {
        let name = self.begin(name)?;
        self.raw(&name, S_IFLNK | 0o777, 1, (0, 0), target.as_bytes())
    }

    pub(crate) fn char_dev(
        &mut self,
        name: &str,
        perm: u32,
        major: u32,
        minor: u32,
    ) -> io::Result<()> {
        let name = self.begin(name)?;
        self.raw(&name, S_IFCHR | perm, 1, (major, minor), &[])
    }

    /// Writes the trailer and returns the writer.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.raw("TRAILER!!!", 0, 1, (0, 0), &[])?;
        let n = (512 - (self.written % 512) as usize) % 512;
        self.put(&vec![0; n])?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// What `ldd` reported for a binary.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LddOutput {
    /// Absolute paths of the shared libraries and the dynamic loader.
    Dynamic(Vec<String>),
    /// Statically linked: nothing to copy.
    Static,
}

/// Parses `ldd` output. `Err` lists the libraries `ldd` could not find.
pub(crate) fn parse_ldd(stdout: &str, stderr: &str, success: bool) -> Result<LddOutput, String> {
    let all = format!("{stdout}\n{stderr}");
    if all.contains("not a dynamic executable") || all.contains("statically linked") {
        return Ok(LddOutput::Static);
    }
    if !success {
        return Err(format!("ldd failed: {}", all.trim()));
    }
    let mut libs = Vec::new();
    let mut missing = Vec::new();
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some((name, rest)) = line.split_once("=>") {
            let rest = rest.trim();
            if rest.starts_with("not found") {
                missing.push(name.trim().to_string());
            } else if let Some(path) = rest.split(" (").next().filter(|p| p.starts_with('/')) {
                libs.push(path.trim().to_string());
            }
            // `name => (0x...)` has no file (the vDSO on some systems): nothing to copy.
        } else if let Some(path) = line.split(" (").next().filter(|p| p.starts_with('/')) {
            libs.push(path.trim().to_string()); // the dynamic loader
        }
        // A bare `linux-vdso.so.1 (0x...)` is provided by the kernel.
    }
    if !missing.is_empty() {
        return Err(format!("ldd could not find: {}", missing.join(", ")));
    }
    libs.sort();
    libs.dedup();
    Ok(LddOutput::Dynamic(libs))
}

/// Parses `busybox --list-full` (paths like `bin/sh`, `usr/bin/awk`) into archive paths.
pub(crate) fn parse_applets(list_full: &str) -> Vec<String> {
    list_full
        .lines()
        .map(|l| l.trim().trim_start_matches('/'))
        .filter(|l| !l.is_empty() && !l.contains(char::is_whitespace) && *l != "bin/busybox")
        .map(str::to_string)
        .collect()
}

/// Applets linked into `/bin` when `busybox --list-full` is unavailable.
pub(crate) const FALLBACK_APPLETS: &[&str] = &[
    "sh", "ash", "mount", "umount", "cat", "ls", "mkdir", "poweroff", "echo", "base64", "grep",
    "awk", "sed", "head", "tail", "wc", "sleep", "true", "false", "test", "[", "env", "dmesg",
    "taskset", "free", "ps", "sort", "cut", "tr", "stty", "sync",
];

/// Path of command `i`'s script inside the guest.
pub(crate) fn command_path(i: usize) -> String {
    format!("numa-vm/cmd/{i}.sh")
}

/// The guest's `/init`: mounts, then runs every command with stdin from /dev/null, stdout and
/// stderr to files, and sends both (base64) and the exit status to the result port (ttyS1)
/// between markers. Progress lines go to the console (ttyS0), then it powers off.
///
/// Each block opens and closes ttyS1 by itself: the last close of a serial tty waits until its
/// output has been sent, so a command that powers the guest off cannot lose earlier results.
pub(crate) fn init_script(markers: &Markers, commands: usize) -> String {
    let mut s = String::from(
        "#!/bin/sh\n\
         # numa-vm guest init (generated)\n\
         export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/tmp TMPDIR=/tmp\n\
         mount -t proc proc /proc\n\
         mount -t sysfs sysfs /sys\n\
         mount -t devtmpfs devtmpfs /dev\n\
         mount -t tmpfs tmpfs /tmp\n\
         R=/dev/ttyS1\n\
         stty -F $R raw -echo 2>/dev/null\n\
         echo \"numa-vm: init running, uptime $(cat /proc/uptime)\"\n",
    );
    s.push_str(&format!("echo '{}' >$R\n", markers.booted()));
    for i in 0..commands {
        s.push_str(&format!(
            "echo 'numa-vm: running command {n} of {commands}'\n\
             cd /\n\
             sh /{path} </dev/null >/tmp/.numa-vm.out 2>/tmp/.numa-vm.err\n\
             rc=$?\n\
             echo \"numa-vm: command {n} exited with $rc\"\n\
             {{\n\
             echo '{out}'\n\
             base64 /tmp/.numa-vm.out\n\
             echo '{err}'\n\
             base64 /tmp/.numa-vm.err\n\
             echo \"{exit}$rc@@\"\n\
             }} >$R\n",
            n = i + 1,
            path = command_path(i),
            out = markers.stdout(i),
            err = markers.stderr(i),
            exit = markers.exit_prefix(i),
        ));
    }
    s.push_str(&format!(
        "echo '{}' >$R\n\
         echo 'numa-vm: all commands done, powering off'\n\
         poweroff -f\n\
         sleep 5\n",
        markers.done()
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (name, mode, rdev, data) of one archive entry.
    type Entry = (String, u32, (u32, u32), Vec<u8>);

    /// Reads back the entries of a newc archive.
    fn read_cpio(mut b: &[u8]) -> Vec<Entry> {
        let mut out = Vec::new();
        let mut pos = 0usize;
        let hex = |s: &[u8]| u32::from_str_radix(std::str::from_utf8(s).unwrap(), 16).unwrap();
        loop {
            assert_eq!(&b[..6], b"070701", "magic at {pos}");
            let field = |i: usize| hex(&b[6 + 8 * i..14 + 8 * i]);
            let (mode, size, rdev) = (field(1), field(6) as usize, (field(9), field(10)));
            let namesize = field(11) as usize;
            let name = String::from_utf8(b[110..110 + namesize - 1].to_vec()).unwrap();
            let data_start = (110 + namesize).div_ceil(4) * 4;
            let data = b[data_start..data_start + size].to_vec();
            let next = (data_start + size).div_ceil(4) * 4;
            pos += next;
            b = &b[next..];
            if name == "TRAILER!!!" {
                assert!(b.iter().all(|&x| x == 0));
                assert_eq!((pos + b.len()) % 512, 0);
                return out;
            }
            out.push((name, mode, rdev, data));
        }
    }

    #[test]
    fn cpio_round_trip() {
        let mut w = CpioWriter::new(Vec::new());
        w.file("/lib/x86_64-linux-gnu/libc.so.6", 0o755, b"libc!").unwrap();
        w.symlink("bin/sh", "/bin/busybox").unwrap();
        w.file("bin/busybox", 0o755, b"bb").unwrap();
        w.dir("proc").unwrap();
        w.char_dev("dev/console", 0o600, 5, 1).unwrap();
        assert!(w.contains("/bin/sh"));
        assert!(!w.contains("bin/ls"));
        assert!(w.file("../etc", 0o644, b"").is_err());
        let archive = w.finish().unwrap();
        let entries = read_cpio(&archive);
        let names: Vec<&str> = entries.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "lib",
                "lib/x86_64-linux-gnu",
                "lib/x86_64-linux-gnu/libc.so.6",
                "bin",
                "bin/sh",
                "bin/busybox",
                "proc",
                "dev",
                "dev/console"
            ]
        );
        assert_eq!(entries[0].1, S_IFDIR | 0o755);
        assert_eq!(entries[2].1, S_IFREG | 0o755);
        assert_eq!(entries[2].3, b"libc!");
        assert_eq!(entries[4].1, S_IFLNK | 0o777);
        assert_eq!(entries[4].3, b"/bin/busybox");
        assert_eq!(entries[8].1, S_IFCHR | 0o600);
        assert_eq!(entries[8].2, (5, 1));
    }

    #[test]
    fn ldd_dynamic() {
        let out = "\tlinux-vdso.so.1 (0x00007ffc1e5f2000)\n\
                   \tlibselinux.so.1 => /lib/x86_64-linux-gnu/libselinux.so.1 (0x00007f9233021000)\n\
                   \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f9232e3f000)\n\
                   \t/lib64/ld-linux-x86-64.so.2 (0x00007f923307e000)\n";
        assert_eq!(
            parse_ldd(out, "", true).unwrap(),
            LddOutput::Dynamic(vec![
                "/lib/x86_64-linux-gnu/libc.so.6".into(),
                "/lib/x86_64-linux-gnu/libselinux.so.1".into(),
                "/lib64/ld-linux-x86-64.so.2".into(),
            ])
        );
    }

    #[test]
    fn ldd_static_and_missing() {
        assert_eq!(
            parse_ldd("", "\tnot a dynamic executable\n", false).unwrap(),
            LddOutput::Static
        );
        assert_eq!(parse_ldd("\tstatically linked\n", "", true).unwrap(), LddOutput::Static);
        let err = parse_ldd(
            "\tlibfoo.so.1 => not found\n\tlibc.so.6 => /lib/libc.so.6 (0x1)\n",
            "",
            true,
        )
        .unwrap_err();
        assert!(err.contains("libfoo.so.1"), "{err}");
        assert!(parse_ldd("", "ldd: ./x: No such file or directory", false).is_err());
    }

    #[test]
    fn applet_list() {
        let applets = parse_applets("usr/bin/[\nbin/sh\nsbin/poweroff\nbin/busybox\n\nlinuxrc\n");
        assert_eq!(applets, ["usr/bin/[", "bin/sh", "sbin/poweroff", "linuxrc"]);
    }

    #[test]
    fn init_script_runs_every_command_between_markers() {
        let m = Markers::new("abc123");
        let s = init_script(&m, 2);
        assert!(s.starts_with("#!/bin/sh\n"));
        for needle in [
            "mount -t proc proc /proc",
            "mount -t sysfs sysfs /sys",
            "mount -t devtmpfs devtmpfs /dev",
            "mount -t tmpfs tmpfs /tmp",
            "sh /numa-vm/cmd/0.sh </dev/null",
            "sh /numa-vm/cmd/1.sh </dev/null",
            "@@NUMAVM:abc123:BOOTED@@",
            "@@NUMAVM:abc123:OUT:1@@",
            "@@NUMAVM:abc123:ERR:1@@",
            "@@NUMAVM:abc123:EXIT:1:$rc@@",
            "@@NUMAVM:abc123:DONE@@",
            "poweroff -f",
        ] {
            assert!(s.contains(needle), "init lacks {needle:?}:\n{s}");
        }
        assert!(!s.contains("cmd/2.sh"));
        let done = s.find("DONE").unwrap();
        assert!(s.find("EXIT:1").unwrap() < done && done < s.find("poweroff").unwrap());
    }
}
