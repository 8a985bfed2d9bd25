//! Enough ELF (64-bit, little-endian) to say whether a server binary has the USDT probes
//! or function symbols the tracer attaches to, before libbpf tries and fails less clearly.
//!
//! The `object` crate reads the file: the header, the section table, the symbol tables and
//! the notes, with every offset and size checked against the file. What it does not know is
//! the payload of a SystemTap SDT note (`.note.stapsdt`), which is read here with its
//! bounds-checked byte reader.

use std::path::Path;

use object::elf::{FileHeader64, NoteType, SHN_UNDEF, SHT_DYNSYM, SHT_NOTE, SHT_SYMTAB, STT_FUNC};
use object::read::elf::{FileHeader, SectionHeader, Sym, SymbolTable};
use object::{Bytes, LittleEndian};

/// The note type of a SystemTap SDT probe (name "stapsdt"); `object` does not define it.
const NT_STAPSDT: NoteType = NoteType(3);

/// A binary's defined function names and USDT probes.
#[derive(Debug, Default)]
pub(crate) struct Image {
    functions: Vec<String>,
    /// (provider, name)
    probes: Vec<(String, String)>,
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

    /// Indexes the ELF file `b`: `None` if it is not a 64-bit little-endian ELF file, or if its
    /// section table, a symbol table or a note section does not fit in it.
    pub(crate) fn parse(b: &[u8]) -> Option<Self> {
        let endian = LittleEndian;
        // `parse` checks the magic, the class and the version; `endian` refuses big-endian.
        let header = FileHeader64::<LittleEndian>::parse(b).ok()?;
        header.endian().ok()?;
        let sections = header.sections(endian, b).ok()?;
        let mut image = Image::default();
        for (index, section) in sections.enumerate() {
            match section.sh_type(endian) {
                SHT_SYMTAB | SHT_DYNSYM => {
                    let table = SymbolTable::parse(endian, b, &sections, index, section).ok()?;
                    for sym in table.iter() {
                        if sym.st_type() != STT_FUNC || sym.st_shndx(endian) == SHN_UNDEF {
                            continue;
                        }
                        // A name outside the string table, or not UTF-8, is left out.
                        if let Some(name) = table
                            .symbol_name(endian, sym)
                            .ok()
                            .and_then(|n| std::str::from_utf8(n).ok())
                        {
                            image.functions.push(name.to_string());
                        }
                    }
                }
                SHT_NOTE => {
                    let Some(mut notes) = section.notes(endian, b).ok()? else { continue };
                    // A damaged note ends the section's notes; those before it count.
                    while let Ok(Some(note)) = notes.next() {
                        if note.n_type(endian) == NT_STAPSDT && note.name() == b"stapsdt" {
                            image.probes.extend(sdt_probe(note.desc()));
                        }
                    }
                }
                _ => {}
            }
        }
        image.functions.sort_unstable();
        image.functions.dedup();
        Some(image)
    }

    pub(crate) fn has_function(&self, name: &str) -> bool {
        self.functions.binary_search_by(|f| f.as_str().cmp(name)).is_ok()
    }

    pub(crate) fn has_usdt(&self, provider: &str, name: &str) -> bool {
        self.probes.iter().any(|(p, n)| p == provider && n == name)
    }
}

/// The (provider, probe name) of a SystemTap SDT note's descriptor: pc, base and semaphore
/// addresses (3 × u64 in a 64-bit file), then provider, probe name and argument spec as
/// C strings. `None` if it is cut short or the names are not UTF-8.
fn sdt_probe(desc: &[u8]) -> Option<(String, String)> {
    let mut rest = Bytes(desc);
    rest.skip(3 * 8).ok()?;
    let mut c_str = || std::str::from_utf8(rest.read_string().ok()?).ok().map(str::to_string);
    let provider = c_str()?;
    let probe = c_str()?;
    Some((provider, probe))
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_support::fuzz::{self, proptest};
    use test_tier::live;

    use proptest::prelude::*;

    // The tests edit header fields in place, at their offsets in a 64-bit ELF header.
    fn u16_at(b: &[u8], at: usize) -> Option<u16> {
        Some(u16::from_le_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?))
    }
    fn u64_at(b: &[u8], at: usize) -> Option<u64> {
        Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
    }

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
        // Found by the ELF fuzz target below in the hand-written reader `object` replaced:
        // e_shoff = u64::MAX overflowed `shoff + i * size` (a panic in debug builds); a section
        // at offset u64::MAX overflowed `offset + size`.
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

    #[live("50 000 mutated small ELF files, then 2 000 mutants of the installed postgres")]
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
