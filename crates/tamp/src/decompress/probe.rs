//! What the first bytes of a file say: the format, and whether its first frame can be split;
//! and the zstd frame header's length and content size field.

use crate::codec::LZ4_MAGIC;

use super::{is_skippable, ZSTD_MAGIC};

/// What the first bytes of a file say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Probe {
    Lz4 {
        independent: bool,
    },
    /// `pzstd`: the frame follows a 4-byte skippable frame (pzstd's compressed-size marker).
    Zstd {
        content_size: Option<u64>,
        pzstd: bool,
    },
    Unknown(String),
}

/// Looks at the start of a file (pure): its format and whether its first frame can be split.
/// Skippable frames (pzstd writes them) are passed over.
pub(crate) fn probe(p: &[u8]) -> Probe {
    let mut at = 0usize;
    let mut pzstd = false;
    loop {
        let Some(m) = p.get(at..at + 4) else {
            return Probe::Unknown(if p.is_empty() {
                "the file is empty".into()
            } else {
                "too short for a frame header".into()
            });
        };
        let magic = u32::from_le_bytes([m[0], m[1], m[2], m[3]]);
        if magic == LZ4_MAGIC {
            return match p.get(at + 4) {
                Some(flg) => Probe::Lz4 { independent: flg & 0x20 != 0 },
                None => Probe::Unknown("too short for an LZ4 frame header".into()),
            };
        }
        if magic == ZSTD_MAGIC {
            let fh = p.get(at + 4..).unwrap_or(&[]);
            return match zstd_header_len(fh) {
                Some((len, fcs, _)) if fh.len() >= len => Probe::Zstd {
                    content_size: fcs.map(|f| f.read(&fh[len - f.bytes..len])),
                    pzstd,
                },
                _ => Probe::Unknown("too short for a zstd frame header".into()),
            };
        }
        if is_skippable(magic) {
            let Some(s) = p.get(at + 4..at + 8) else {
                return Probe::Unknown("a skippable frame is cut short".into());
            };
            let n = u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
            pzstd = magic == 0x184D_2A50 && n == 4;
            at += 8 + n as usize;
            continue;
        }
        let what = match m {
            [0x1f, 0x8b, ..] => "gzip (use pigz -d or gzip -d)",
            [0x02, 0x21, 0x4c, 0x18] => "the legacy LZ4 format (lz4 -l); use lz4 -d",
            [b'B', b'Z', b'h', ..] => "bzip2",
            [0xfd, b'7', b'z', b'X'] => "xz",
            _ => "neither an LZ4 frame nor a zstd frame",
        };
        return Probe::Unknown(what.into());
    }
}

/// The frame content size field of a zstd frame header: its width and how to read it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fcs {
    pub(super) bytes: usize,
}

impl Fcs {
    pub(super) fn read(self, b: &[u8]) -> u64 {
        let mut v = 0u64;
        for (i, x) in b.iter().take(self.bytes).enumerate() {
            v |= u64::from(*x) << (8 * i);
        }
        // The 2-byte form is stored minus 256.
        if self.bytes == 2 {
            v + 256
        } else {
            v
        }
    }
}

/// From a zstd frame header descriptor onwards (`fh[0]` is the descriptor byte): the header
/// length after the magic, the content size field, and whether the frame ends in a checksum.
pub(super) fn zstd_header_len(fh: &[u8]) -> Option<(usize, Option<Fcs>, bool)> {
    let d = *fh.first()?;
    let fcs_flag = d >> 6;
    let single = d & 0x20 != 0;
    let checksum = d & 0x04 != 0;
    let dict = [0usize, 1, 2, 4][usize::from(d & 3)];
    let fcs = match (fcs_flag, single) {
        (0, false) => 0,
        (0, true) => 1,
        (1, _) => 2,
        (2, _) => 4,
        _ => 8,
    };
    let len = 1 + usize::from(!single) + dict + fcs;
    Some((len, (fcs > 0).then_some(Fcs { bytes: fcs }), checksum))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_names_formats() {
        assert_eq!(
            probe(&[0x04, 0x22, 0x4d, 0x18, 0x60, 0x50, 0]),
            Probe::Lz4 { independent: true }
        );
        assert_eq!(
            probe(&[0x04, 0x22, 0x4d, 0x18, 0x40, 0x50, 0]),
            Probe::Lz4 { independent: false }
        );
        assert!(matches!(probe(&[0x1f, 0x8b, 8, 0]), Probe::Unknown(s) if s.contains("gzip")));
        assert!(matches!(probe(&[]), Probe::Unknown(s) if s.contains("empty")));
    }

    #[test]
    fn probe_reads_zstd_content_size_past_skippable_frames() {
        // zstd 1.5.4 `printf '' | zstd -1`: single segment, 1-byte content size 0, checksum.
        let empty = [0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x00, 0x01, 0x00, 0x00];
        assert_eq!(probe(&empty), Probe::Zstd { content_size: Some(0), pzstd: false });
        // FHD 0x60: 2-byte content size (stored minus 256), not single segment → window byte.
        let two = [0x28, 0xb5, 0x2f, 0xfd, 0x40, 0x58, 0x00, 0x01];
        assert_eq!(probe(&two), Probe::Zstd { content_size: Some(256 + 256), pzstd: false });
        let mut skip = vec![0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 9, 9, 9, 9];
        skip.extend_from_slice(&empty);
        assert_eq!(probe(&skip), Probe::Zstd { content_size: Some(0), pzstd: true });
        // FHD 0x00: no content size → serial.
        assert_eq!(
            probe(&[0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58]),
            Probe::Zstd { content_size: None, pzstd: false }
        );
    }
}
