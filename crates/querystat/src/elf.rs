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

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
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
                let h = shoff + i * shentsize;
                Some(Section {
                    kind: u32_at(b, h + 4)?,
                    offset: usize::try_from(u64_at(b, h + 24)?).ok()?,
                    size: usize::try_from(u64_at(b, h + 32)?).ok()?,
                    link: usize::try_from(u32_at(b, h + 40)?).ok()?,
                })
            })
            .collect::<Option<_>>()?;
        let mut image = Image::default();
        for s in &sections {
            match s.kind {
                SHT_SYMTAB | SHT_DYNSYM => {
                    let strings = sections.get(s.link)?;
                    for sym in (s.offset..s.offset + s.size).step_by(24) {
                        let info = *b.get(sym + 4)?;
                        let shndx = u16_at(b, sym + 6)?;
                        if info & 0xf != STT_FUNC || shndx == 0 {
                            continue;
                        }
                        let name = usize::try_from(u32_at(b, sym)?).ok()?;
                        if let Some(n) = c_str(b, strings.offset + name) {
                            image.functions.push(n.to_string());
                        }
                    }
                }
                SHT_NOTE => image.read_notes(b.get(s.offset..s.offset + s.size)?),
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

    #[test]
    fn garbage_is_not_elf() {
        assert!(Image::parse(b"#!/bin/sh\necho hi\n").is_none());
        assert!(Image::parse(b"").is_none());
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
