//! The process facts a run is judged by, parsed without touching the system: mappings
//! (`/proc/PID/maps`), memory (`smaps_rollup`, `status`), and the checks that an allocator's
//! library really is mapped in the measured process and serves its allocation functions.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use measure::ParseError;
use serde::{Deserialize, Serialize};

use crate::allocator::{Allocator, Kind};
use crate::workload::{Resolved, ALLOCATION_SYMBOLS};

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    /// `rwxp` as printed (`---p` is a PROT_NONE reservation).
    pub perms: String,
    pub dev_major: u32,
    pub dev_minor: u32,
    pub inode: u64,
    /// The file, `[heap]`, `[stack]`…, or `None` for anonymous memory.
    pub path: Option<String>,
}

impl Mapping {
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Mapped with no access at all: reserved address space, never backed by memory.
    pub fn is_prot_none(&self) -> bool {
        self.perms.as_bytes().get(..3) == Some(b"---")
    }
}

/// Parses `/proc/PID/maps`.
pub fn parse_maps(text: &str) -> Result<Vec<Mapping>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |what: &str| ParseError::new(i + 1, format!("{what} in '{line}'"));
        let mut words = line.splitn(6, ' ');
        let range = words.next().ok_or_else(|| bad("no address range"))?;
        let perms = words.next().ok_or_else(|| bad("no permissions"))?;
        let _offset = words.next().ok_or_else(|| bad("no offset"))?;
        let dev = words.next().ok_or_else(|| bad("no device"))?;
        let inode = words.next().ok_or_else(|| bad("no inode"))?;
        let path = words.next().map(str::trim).filter(|p| !p.is_empty()).map(String::from);
        let (start, end) = range.split_once('-').ok_or_else(|| bad("malformed range"))?;
        let hex = |s: &str| u64::from_str_radix(s, 16).map_err(|_| bad("malformed hex number"));
        let (major, minor) = dev.split_once(':').ok_or_else(|| bad("malformed device"))?;
        out.push(Mapping {
            start: hex(start)?,
            end: hex(end)?,
            perms: perms.to_string(),
            dev_major: u32::from_str_radix(major, 16).map_err(|_| bad("malformed device"))?,
            dev_minor: u32::from_str_radix(minor, 16).map_err(|_| bad("malformed device"))?,
            inode: inode.parse().map_err(|_| bad("malformed inode"))?,
            path,
        });
    }
    Ok(out)
}

/// A process's address space at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddressSpace {
    /// Every mapping (what `ps` calls VSZ).
    pub total_bytes: u64,
    /// PROT_NONE mappings: reservations (glibc's 64 MiB arena heaps, guard pages, mariadbd's
    /// buffer-pool reservation) that no access can back with memory.
    pub prot_none_bytes: u64,
}

impl AddressSpace {
    pub fn of(maps: &[Mapping]) -> Self {
        let mut a = AddressSpace::default();
        // Saturating: a damaged maps file can list more than 2^64 bytes.
        for m in maps {
            a.total_bytes = a.total_bytes.saturating_add(m.len());
            if m.is_prot_none() {
                a.prot_none_bytes = a.prot_none_bytes.saturating_add(m.len());
            }
        }
        a
    }

    /// Address space that can be accessed (and so backed by memory): all but PROT_NONE.
    pub fn accessible_bytes(&self) -> u64 {
        self.total_bytes.saturating_sub(self.prot_none_bytes)
    }
}

/// Memory figures of a process at one moment, bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    /// Peak resident set (`VmHWM`).
    pub hwm_bytes: Option<u64>,
    /// Resident set now (`VmRSS`, or `Rss` of `smaps_rollup`).
    pub rss_bytes: Option<u64>,
    /// Proportional set size (`Pss` of `smaps_rollup`, since Linux 4.14): shared pages divided
    /// among their sharers.
    pub pss_bytes: Option<u64>,
}

/// The value in kB of a `Name:   123 kB` line, as bytes.
fn kb_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix(':')?;
        let kb: u64 = rest.split_whitespace().next()?.parse().ok()?;
        // More bytes than u64 holds is a damaged file, not a size.
        kb.checked_mul(1024)
    })
}

/// Reads `VmHWM` and `VmRSS` from `/proc/PID/status` and `Rss`/`Pss` from `smaps_rollup`
/// (either text may be empty when unreadable).
pub fn parse_memory(status: &str, smaps_rollup: &str) -> Memory {
    Memory {
        hwm_bytes: kb_field(status, "VmHWM"),
        rss_bytes: kb_field(smaps_rollup, "Rss").or_else(|| kb_field(status, "VmRSS")),
        pss_bytes: kb_field(smaps_rollup, "Pss"),
    }
}

/// The value of `name` in a NUL-separated environment (`/proc/PID/environ`).
pub fn environ_value<'a>(environ: &'a [u8], name: &str) -> Option<&'a [u8]> {
    environ.split(|&b| b == 0).find_map(|entry| {
        let rest = entry.strip_prefix(name.as_bytes())?;
        rest.strip_prefix(b"=")
    })
}

/// The file identity of a library: device and inode, compared with maps' columns (paths in maps
/// are resolved, so a symlink given on the command line would not match by name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    pub dev_major: u32,
    pub dev_minor: u32,
    pub inode: u64,
}

impl FileId {
    pub fn of(path: &Path) -> std::io::Result<Self> {
        let meta = std::fs::metadata(path)?;
        let dev = meta.dev();
        Ok(FileId { dev_major: libc::major(dev), dev_minor: libc::minor(dev), inode: meta.ino() })
    }
}

/// What was found when checking that a process runs under an allocator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// The evidence: the mapping seen, or the tunables in the environment.
    Verified(String),
    /// Why the run is refused.
    Refused(String),
}

/// Checks a process's maps (and environment, for glibc tunables) against the allocator it was
/// started under: a preloaded library must be mapped (matched by device and inode); glibc runs
/// must have no other allocator's library mapped, and tunables must be in the environment
/// (`GLIBC_TUNABLES` is read by the loader at start; it leaves no mapping to see).
pub fn verify(
    allocator: &Allocator,
    library: Option<FileId>,
    maps: &[Mapping],
    environ: &[u8],
    others: &[FileId],
) -> Verdict {
    let mapped = |id: FileId| {
        maps.iter().find(|m| {
            m.inode == id.inode && m.dev_major == id.dev_major && m.dev_minor == id.dev_minor
        })
    };
    match &allocator.kind {
        Kind::Preload { library: path } => {
            let Some(id) = library else {
                return Verdict::Refused(format!("{} cannot be read", path.display()));
            };
            match mapped(id) {
                Some(m) => Verdict::Verified(format!(
                    "{} mapped at {:x}",
                    m.path.as_deref().unwrap_or("?"),
                    m.start
                )),
                None => Verdict::Refused(format!(
                    "{} is not mapped in the measured process: the preload did not take (not \
                     a shared library for this architecture, a statically linked or setuid \
                     program, or a program that clears LD_PRELOAD)",
                    path.display()
                )),
            }
        }
        Kind::Glibc { .. } => {
            if let Some(m) = others.iter().find_map(|&id| mapped(id)) {
                return Verdict::Refused(format!(
                    "another allocator, {}, is mapped in a glibc run (LD_PRELOAD from \
                     /etc/ld.so.preload or the program itself?)",
                    m.path.as_deref().unwrap_or("?")
                ));
            }
            match allocator.tunables() {
                None => Verdict::Verified("no allocator library mapped".to_string()),
                Some(t) => match environ_value(environ, "GLIBC_TUNABLES") {
                    Some(v) if v == t.as_bytes() => {
                        Verdict::Verified(format!("GLIBC_TUNABLES={t} in its environment"))
                    }
                    _ => Verdict::Refused(format!(
                        "GLIBC_TUNABLES={t} is not in the measured process's environment"
                    )),
                },
            }
        }
    }
}

/// Whether a path names glibc's C library (`libc.so.6`, or `libc-2.31.so` before glibc 2.34).
fn is_glibc_libc(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.starts_with("libc.so") || (name.starts_with("libc-") && name.ends_with(".so"))
}

/// Checks where the measured process's allocation functions resolve ([`Resolved`], from the
/// process itself) against the allocator it was started under: for a preload, every one of
/// [`ALLOCATION_SYMBOLS`] must lie in a mapping of the library (by device and inode); for glibc
/// runs, in glibc's libc. A library that is mapped but does not serve `malloc` (libz, libm, a
/// library that lacks one of the functions) is refused, naming where `malloc` resolved.
///
/// [`ALLOCATION_SYMBOLS`]: crate::workload::ALLOCATION_SYMBOLS
pub fn verify_symbols(
    allocator: &Allocator,
    library: Option<FileId>,
    maps: &[Mapping],
    resolved: &[Resolved],
) -> Verdict {
    let mapping =
        |address: u64| maps.iter().find(|m| address != 0 && m.start <= address && address < m.end);
    // Where a symbol went, in words: the loader's name for the object, else the mapping's path.
    let place = |symbol: &str| -> String {
        match resolved.iter().find(|r| r.symbol == symbol) {
            None => "nothing (the process did not say)".to_string(),
            Some(r) if r.address == 0 => "nothing (it is not defined)".to_string(),
            Some(r) => r
                .object
                .clone()
                .or_else(|| mapping(r.address).and_then(|m| m.path.clone()))
                .unwrap_or_else(|| format!("an anonymous mapping at {:x}", r.address)),
        }
    };
    let serves = |symbol: &str, ok: &dyn Fn(&Mapping) -> bool| {
        resolved
            .iter()
            .find(|r| r.symbol == symbol)
            .and_then(|r| mapping(r.address))
            .is_some_and(ok)
    };
    // The library's identity for a preload; `None`: glibc's libc.
    let (wanted, id) = match &allocator.kind {
        Kind::Preload { library: path } => {
            let Some(id) = library else {
                return Verdict::Refused(format!("{} cannot be read", path.display()));
            };
            (path.display().to_string(), Some(id))
        }
        Kind::Glibc { .. } => ("glibc's libc".to_string(), None),
    };
    let ok = |m: &Mapping| match id {
        Some(id) => {
            m.inode == id.inode && m.dev_major == id.dev_major && m.dev_minor == id.dev_minor
        }
        None => m.path.as_deref().is_some_and(is_glibc_libc),
    };
    let missing: Vec<&str> =
        ALLOCATION_SYMBOLS.iter().copied().filter(|s| !serves(s, &ok)).collect();
    if missing.is_empty() {
        return Verdict::Verified(format!(
            "{} resolve to {} in the measured process",
            ALLOCATION_SYMBOLS.join(", "),
            place("malloc")
        ));
    }
    let why = match &allocator.kind {
        Kind::Preload { .. } => "it is not an allocator, or does not replace all of them",
        Kind::Glibc { .. } => "a preload from /etc/ld.so.preload or the program itself?",
    };
    let malloc_ok = !missing.contains(&"malloc");
    Verdict::Refused(if malloc_ok {
        format!(
            "{} resolves to {} in the measured process, not to {wanted} (malloc does): {why}",
            missing[0],
            place(missing[0])
        )
    } else {
        format!(
            "malloc resolves to {} in the measured process, not to {wanted}: {why}",
            place("malloc")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines of /proc/PID/maps of a 4-thread glibc workload on Debian 12 (kernel 6.1), trimmed:
    // one arena heap (132 KiB used, the rest of its 64 MiB PROT_NONE) and the preload.
    const MAPS_DEBIAN_12: &str = "\
55d0c7a00000-55d0c7a21000 rw-p 00000000 00:00 0                          [heap]
7f2a34000000-7f2a34021000 rw-p 00000000 00:00 0 
7f2a34021000-7f2a38000000 ---p 00000000 00:00 0 
7f2a3c000000-7f2a3c02a000 r--p 00000000 fe:01 1311029                    /usr/lib/x86_64-linux-gnu/libjemalloc.so.2
7ffd1c5e1000-7ffd1c602000 rw-p 00000000 00:00 0                          [stack]
";

    #[test]
    fn maps_parse_and_prot_none_is_set_apart() {
        let maps = parse_maps(MAPS_DEBIAN_12).unwrap();
        assert_eq!(maps.len(), 5);
        assert_eq!(maps[1].path, None);
        assert!(maps[2].is_prot_none() && !maps[1].is_prot_none());
        assert_eq!(maps[3].dev_major, 0xfe);
        assert_eq!(maps[3].inode, 1311029);
        let a = AddressSpace::of(&maps);
        assert_eq!(a.prot_none_bytes, 0x7f2a38000000 - 0x7f2a34021000);
        assert_eq!(a.accessible_bytes(), 0x21000 + 0x21000 + 0x2a000 + 0x21000);
        assert!(parse_maps("zz-1 rw-p 0 00:00 0\n").is_err());
    }

    #[test]
    fn memory_from_status_and_smaps_rollup() {
        let status = "Name:\tx\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\n";
        let rollup = "00400000-7ffd1c602000 ---p 00000000 00:00 0 [rollup]\nRss:  900 kB\nPss:  \
                      700 kB\nPss_Anon: 600 kB\n";
        let m = parse_memory(status, rollup);
        assert_eq!(m.hwm_bytes, Some(2048 * 1024));
        assert_eq!(m.rss_bytes, Some(900 * 1024));
        assert_eq!(m.pss_bytes, Some(700 * 1024));
        assert_eq!(parse_memory(status, "").rss_bytes, Some(1024 * 1024));
    }

    #[test]
    fn verdicts() {
        let maps = parse_maps(MAPS_DEBIAN_12).unwrap();
        let je = FileId { dev_major: 0xfe, dev_minor: 1, inode: 1311029 };
        let other = FileId { dev_major: 0xfe, dev_minor: 1, inode: 7 };
        let preload =
            |p: &str| Allocator { name: "x".into(), kind: Kind::Preload { library: p.into() } };
        let je_alloc = preload("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
        assert!(matches!(verify(&je_alloc, Some(je), &maps, b"", &[]), Verdict::Verified(_)));
        assert!(matches!(verify(&je_alloc, Some(other), &maps, b"", &[]), Verdict::Refused(_)));
        assert!(matches!(verify(&je_alloc, None, &maps, b"", &[]), Verdict::Refused(_)));
        // glibc with jemalloc mapped is not a glibc run.
        let glibc = Allocator::glibc();
        assert!(matches!(verify(&glibc, None, &maps, b"", &[je]), Verdict::Refused(_)));
        assert!(matches!(verify(&glibc, None, &maps, b"", &[other]), Verdict::Verified(_)));
        let tuned = crate::allocator::parse_glibc("glibc:arena_max=1").unwrap().unwrap();
        let env = b"A=1\0GLIBC_TUNABLES=glibc.malloc.arena_max=1\0";
        assert!(matches!(verify(&tuned, None, &maps, env, &[other]), Verdict::Verified(_)));
        assert!(matches!(verify(&tuned, None, &maps, b"A=1\0", &[]), Verdict::Refused(_)));
    }

    // Debian 12, x86-64: a worker under LD_PRELOAD=libz.so.1 (libz is mapped, malloc is libc's)
    // and one under libjemalloc.so.2. Trimmed.
    const MAPS_LIBZ_PRELOAD: &str = "\
7f10a0000000-7f10a0003000 r--p 00000000 fe:01 1308001                    /usr/lib/x86_64-linux-gnu/libz.so.1.2.13
7f10a0003000-7f10a0013000 r-xp 00003000 fe:01 1308001                    /usr/lib/x86_64-linux-gnu/libz.so.1.2.13
7f10a1000000-7f10a1026000 r--p 00000000 fe:01 1302301                    /usr/lib/x86_64-linux-gnu/libc.so.6
7f10a1026000-7f10a117b000 r-xp 00026000 fe:01 1302301                    /usr/lib/x86_64-linux-gnu/libc.so.6
7f10a2000000-7f10a2010000 r-xp 00010000 fe:01 1311029                    /usr/lib/x86_64-linux-gnu/libjemalloc.so.2
7f10a3000000-7f10a3001000 rw-p 00000000 00:00 0 
";

    fn at(symbol: &str, address: u64, object: &str) -> Resolved {
        Resolved { symbol: symbol.into(), address, object: Some(object.into()) }
    }

    fn all_at(address: u64, object: &str) -> Vec<Resolved> {
        ALLOCATION_SYMBOLS
            .iter()
            .enumerate()
            .map(|(i, s)| at(s, address + i as u64, object))
            .collect()
    }

    const LIBC: &str = "/lib/x86_64-linux-gnu/libc.so.6";
    const JE: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

    #[test]
    fn a_mapped_library_that_does_not_serve_malloc_is_refused_naming_where_malloc_went() {
        let maps = parse_maps(MAPS_LIBZ_PRELOAD).unwrap();
        let libz = FileId { dev_major: 0xfe, dev_minor: 1, inode: 1308001 };
        let x = Allocator {
            name: "x".into(),
            kind: Kind::Preload { library: "/usr/lib/x86_64-linux-gnu/libz.so.1".into() },
        };
        // The old check passes: libz is mapped.
        assert!(matches!(verify(&x, Some(libz), &maps, b"", &[]), Verdict::Verified(_)));
        let libc_calls = all_at(0x7f10a1030000, LIBC);
        match verify_symbols(&x, Some(libz), &maps, &libc_calls) {
            Verdict::Refused(r) => {
                assert!(r.starts_with(&format!("malloc resolves to {LIBC}")), "{r}");
                assert!(r.contains("libz.so.1"), "{r}");
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn an_allocator_serving_all_five_is_verified_and_one_missing_is_named() {
        let maps = parse_maps(MAPS_LIBZ_PRELOAD).unwrap();
        let je_id = FileId { dev_major: 0xfe, dev_minor: 1, inode: 1311029 };
        let je = Allocator { name: "jemalloc".into(), kind: Kind::Preload { library: JE.into() } };
        let served = all_at(0x7f10a2000100, JE);
        match verify_symbols(&je, Some(je_id), &maps, &served) {
            Verdict::Verified(v) => assert!(v.contains(JE) && v.contains("posix_memalign"), "{v}"),
            v => panic!("{v:?}"),
        }
        // The same addresses judged against another library's identity: refused.
        let other = FileId { inode: 7, ..je_id };
        assert!(matches!(verify_symbols(&je, Some(other), &maps, &served), Verdict::Refused(_)));
        // Each function on its own: one left to libc is named.
        for (i, symbol) in ALLOCATION_SYMBOLS.iter().enumerate() {
            let mut partial = served.clone();
            partial[i] = at(symbol, 0x7f10a1030000, LIBC);
            match verify_symbols(&je, Some(je_id), &maps, &partial) {
                Verdict::Refused(r) => {
                    assert!(r.starts_with(&format!("{symbol} resolves to {LIBC}")), "{r}")
                }
                v => panic!("{symbol}: {v:?}"),
            }
            // Unresolved, or not reported at all.
            partial[i].address = 0;
            assert!(matches!(
                verify_symbols(&je, Some(je_id), &maps, &partial),
                Verdict::Refused(_)
            ));
            partial.remove(i);
            assert!(matches!(
                verify_symbols(&je, Some(je_id), &maps, &partial),
                Verdict::Refused(_)
            ));
        }
        assert!(matches!(verify_symbols(&je, None, &maps, &served), Verdict::Refused(_)));
    }

    #[test]
    fn glibc_runs_need_malloc_in_libc() {
        let maps = parse_maps(MAPS_LIBZ_PRELOAD).unwrap();
        let glibc = Allocator::glibc();
        let in_libc = all_at(0x7f10a1030000, LIBC);
        assert!(matches!(verify_symbols(&glibc, None, &maps, &in_libc), Verdict::Verified(_)));
        let tuned = crate::allocator::parse_glibc("glibc:arena_max=1").unwrap().unwrap();
        assert!(matches!(verify_symbols(&tuned, None, &maps, &in_libc), Verdict::Verified(_)));
        match verify_symbols(&glibc, None, &maps, &all_at(0x7f10a2000100, JE)) {
            Verdict::Refused(r) => {
                assert!(r.starts_with(&format!("malloc resolves to {JE}")), "{r}")
            }
            v => panic!("{v:?}"),
        }
        // An address in no file mapping (JIT, or a lie) is not libc.
        let anon = all_at(0x7f10a3000000, "?");
        assert!(matches!(verify_symbols(&glibc, None, &maps, &anon), Verdict::Refused(_)));
        assert!(is_glibc_libc("/lib/libc-2.31.so") && !is_glibc_libc("/lib/libcrypt.so.1"));
    }
}
