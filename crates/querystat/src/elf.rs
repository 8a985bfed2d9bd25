//! Just enough ELF (64-bit, little-endian) to say whether a server binary has the USDT probes
//! or function symbols the tracer attaches to, before libbpf tries and fails less clearly.

use std::path::Path;

const SHT_SYMTAB: u32 = 2;
const SHT_NOTE: u32 = 7;
const SHT_DYNSYM: u32 = 11;
const STT_FUNC: u8 = 2;
const NT_STAPSDT: u32 = 3;

/// A binary's defined function names and USDT probes.
#[derive(Debug, Default)]
pub(crate) struct Image {
    functions: Vec<String>,
    /// (provider, name)
    probes: Vec<(String, String)>,
}

// Offsets come from the file: every sum is checked (a damaged header is `None`, not an
// overflow).
fn bytes_at<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}
fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes_at(b, at)?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes_at(b, at)?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes_at(b, at)?))
}
fn c_str(b: &[u8], at: usize) -> Option<&str> {
    let tail = b.get(at..)?;
    let end = tail.iter().position(|&c| c == 0)?;
    std::str::from_utf8(&tail[..end]).ok()
}

struct Section {
    kind: u32,
    offset: usize,
    size: usize,
    link: usize,
}

impl Image {
    /// Reads and indexes the binary at `path`.
    pub(crate) fn read(path: &Path) -> std::io::Result<Self> {
        let bytes = std::fs::read(path)?;
        Self::parse(&bytes).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "not a 64-bit little-endian ELF file (or a damaged one)",
            )
        })
    }

    pub(crate) fn parse(b: &[u8]) -> Option<Self> {
        // ELF magic, ELFCLASS64, ELFDATA2LSB.
        if b.get(..6)? != b"\x7fELF\x02\x01" {
            return None;
        }
        let shoff = usize::try_from(u64_at(b, 0x28)?).ok()?;
        let shentsize = usize::from(u16_at(b, 0x3a)?);
        let shnum = usize::from(u16_at(b, 0x3c)?);
        let sections: Vec<Section> = (0..shnum)
            .map(|i| {
                let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
                let field = |at: usize| h.checked_add(at);
                Some(Section {
                    kind: u32_at(b, field(4)?)?,
                    offset: usize::try_from(u64_at(b, field(24)?)?).ok()?,
                    size: usize::try_from(u64_at(b, field(32)?)?).ok()?,
                    link: usize::try_from(u32_at(b, field(40)?)?).ok()?,
                })
            })
            .collect::<Option<_>>()?;
        let mut image = Image::default();
        for s in &sections {
            match s.kind {
                SHT_SYMTAB | SHT_DYNSYM => {
                    let strings = sections.get(s.link)?;
                    // Symbols that do not fit in the file end the table (`?` below).
                    for sym in (s.offset..s.offset.checked_add(s.size)?).step_by(24) {
                        let info = *b.get(sym.checked_add(4)?)?;
                        let shndx = u16_at(b, sym.checked_add(6)?)?;
                        if info & 0xf != STT_FUNC || shndx == 0 {
                            continue;
                        }
                        let name = usize::try_from(u32_at(b, sym)?).ok()?;
                        if let Some(n) =
                            strings.offset.checked_add(name).and_then(|at| c_str(b, at))
                        {
                            image.functions.push(n.to_string());
                        }
                    }
                }
                SHT_NOTE => image.read_notes(b.get(s.offset..s.offset.checked_add(s.size)?)?),
                _ => {}
            }
        }
        image.functions.sort_unstable();
        image.functions.dedup();
        Some(image)
    }

    /// SystemTap SDT notes: name "stapsdt", type 3, desc = pc, base, semaphore (3 × u64),
    /// then provider, probe name and argument spec as C strings.
    fn read_notes(&mut self, notes: &[u8]) {
        // A note's sizes are u32, its position within `notes`: the sums fit in a 64-bit usize.
        let align4 = |n: usize| (n + 3) & !3;
        let mut at = 0;
        while let (Some(namesz), Some(descsz), Some(kind)) =
            (u32_at(notes, at), u32_at(notes, at + 4), u32_at(notes, at + 8))
        {
            let (namesz, descsz) = (namesz as usize, descsz as usize);
            let name_at = at + 12;
            let desc_at = name_at + align4(namesz);
            let next = desc_at + align4(descsz);
            if kind == NT_STAPSDT && c_str(notes, name_at) == Some("stapsdt") {
                if let Some(desc) = notes.get(desc_at..desc_at + descsz) {
                    if let Some(provider) = c_str(desc, 24) {
                        if let Some(probe) = c_str(desc, 24 + provider.len() + 1) {
                            self.probes.push((provider.to_string(), probe.to_string()));
                        }
                    }
                }
            }
            if next <= at {
                break;
            }
            at = next;
        }
    }

    pub(crate) fn has_function(&self, name: &str) -> bool {
        self.functions.binary_search_by(|f| f.as_str().cmp(name)).is_ok()
    }

    pub(crate) fn has_usdt(&self, provider: &str, name: &str) -> bool {
        self.probes.iter().any(|(p, n)| p == provider && n == name)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
mod tests {
    use super::*;
    use test_support::fuzz::{self, proptest};

    use proptest::prelude::*;

    #[test]
    fn garbage_is_not_elf() {
        assert!(Image::parse(b"#!/bin/sh\necho hi\n").is_none());
        assert!(Image::parse(b"").is_none());
    }

    fn fixture(name: &str) -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn reads_the_fixtures() {
        let pg = Image::parse(&fixture("postgres15_debian12_stapsdt_only.elf")).unwrap();
        assert!(pg.has_usdt("postgresql", "query__execute__start"), "{:?}", pg.probes);
        assert_eq!(pg.probes.len(), 71);
        let t = Image::parse(&fixture("libdl_debian12_dynsym_only.elf")).unwrap();
        assert!(t.has_function("__libdl_version_placeholder"), "{:?}", t.functions);
    }

    #[test]
    fn offsets_near_the_top_of_the_address_space_are_a_damaged_file() {
        // Found by the ELF fuzz target below: e_shoff = u64::MAX overflowed `shoff + i * size`
        // (a panic in debug builds); a section at offset u64::MAX overflowed `offset + size`.
        let mut b = fixture("libdl_debian12_dynsym_only.elf");
        b[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(Image::parse(&b).is_none());
        let mut b = fixture("postgres15_debian12_stapsdt_only.elf");
        let shoff = u64_at(&b, 0x28).unwrap() as usize;
        let shentsize = usize::from(u16_at(&b, 0x3a).unwrap());
        for i in 0..usize::from(u16_at(&b, 0x3c).unwrap()) {
            let h = shoff + i * shentsize;
            b[h + 24..h + 32].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
        }
        assert!(Image::parse(&b).is_none());
    }

    /// Edits aimed at the ELF header and the section header table (where offsets and sizes
    /// live), besides the generic ones: random edits of a whole file rarely land there.
    fn elf_mutants(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
        let field = (
            any::<proptest::sample::Index>(),
            prop_oneof![
                Just(u64::MAX),
                Just(u64::MAX - 7),
                Just(1u64 << 63),
                Just(0),
                Just(24),
                Just(0xFFFF),
                any::<u64>(),
            ],
        );
        let aimed = (
            proptest::sample::select(seeds.clone()),
            proptest::collection::vec((any::<bool>(), field), 1..4),
        )
            .prop_map(|(mut b, edits)| {
                let shoff = u64_at(&b, 0x28).and_then(|o| usize::try_from(o).ok()).unwrap_or(0);
                for (header, (at, value)) in edits {
                    // The ELF header, or the section header table, 8-byte aligned.
                    let (from, len) =
                        if header || shoff >= b.len() { (0, 64) } else { (shoff, b.len() - shoff) };
                    let at = from + at.index(len) / 8 * 8;
                    let bytes = value.to_le_bytes();
                    let n = bytes.len().min(b.len().saturating_sub(at));
                    b[at..at + n].copy_from_slice(&bytes[..n]);
                }
                b
            });
        prop_oneof![1 => fuzz::bytes(300).prop_map(|mut b| {
            b.splice(0..0, *b"\x7fELF\x02\x01");
            b
        }), 2 => fuzz::mutated(seeds), 2 => aimed]
    }

    fn elf_target(cases: u32, seeds: Vec<Vec<u8>>) {
        fuzz::check(cases, elf_mutants(seeds), |b| {
            if let Some(image) = Image::parse(&b) {
                prop_assert!(image.functions.windows(2).all(|w| w[0] < w[1]));
                let _ = image.has_usdt("postgresql", "query__execute__start");
            }
            Ok(())
        });
    }

    fn small_seeds() -> Vec<Vec<u8>> {
        vec![
            fixture("postgres15_debian12_stapsdt_only.elf"),
            fixture("libdl_debian12_dynsym_only.elf"),
        ]
    }

    #[test]
    fn arbitrary_and_mutated_elf_files_are_read_or_refused_without_panic() {
        elf_target(fuzz::PURE, small_seeds());
    }

    #[test]
    #[ignore = "live tier: 50 000 mutated small ELF files, then 2 000 mutants of the installed postgres"]
    fn arbitrary_and_mutated_elf_files_are_read_or_refused_without_panic_long() {
        elf_target(fuzz::LIVE, small_seeds());
        let postgres = "/usr/lib/postgresql/15/bin/postgres";
        let whole = std::fs::read(postgres).unwrap_or_else(|e| {
            panic!("{postgres}: {e} (scripts/setup.sh installs PostgreSQL 15)")
        });
        elf_target(fuzz::PURE, vec![whole]);
    }

    #[test]
    fn reads_this_test_binarys_own_symbols() {
        // The running test binary is an ELF with a symbol table (debug builds are not
        // stripped) and no USDT notes.
        let image = Image::read(Path::new("/proc/self/exe")).unwrap();
        assert!(image.has_function("main"));
        assert!(!image.has_usdt("postgresql", "query__execute__start"));
    }
}
