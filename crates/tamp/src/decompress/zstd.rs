//! The zstd reader: splits a stream of zstd frames at frame boundaries from their headers.

use std::io::Read;

use crate::pipeline::Source;
use crate::TampError;

use super::probe::zstd_header_len;
use super::read::In;
use super::{is_skippable, Piece, ZSTD_BLOCK_MAX, ZSTD_MAGIC, ZSTD_WINDOW_LOG_MAX};

pub(super) struct ZstdSource<R> {
    pub(super) r: In<R>,
}

impl<R: Read + Send> Source for ZstdSource<R> {
    type Meta = Piece;
    fn fill(&mut self, buf: &mut Vec<u8>) -> Result<Option<(Piece, usize)>, TampError> {
        loop {
            let at = self.r.offset();
            let Some(magic) = self.r.magic()? else { return Ok(None) };
            if is_skippable(magic) {
                let n = self.r.u32("a skippable frame's size")?;
                self.r.skip(u64::from(n), "a skippable frame")?;
                continue;
            }
            if magic != ZSTD_MAGIC {
                return Err(self
                    .r
                    .corrupt(at, format!("expected a zstd frame, found magic {magic:#010x}")));
            }
            let mut len = 0;
            if buf.len() < 4 {
                buf.resize(4, 0);
            }
            buf[..4].copy_from_slice(&magic.to_le_bytes());
            len += 4;
            self.r.append(buf, &mut len, 1, "a zstd frame header")?;
            let Some((hlen, fcs, checksum)) = zstd_header_len(&buf[4..5]) else {
                return Err(self.r.corrupt(at, "bad zstd frame header"));
            };
            if buf[4] & 0x08 != 0 {
                return Err(self
                    .r
                    .corrupt(at + 4, "a reserved bit is set in the zstd frame header"));
            }
            self.r.append(buf, &mut len, hlen - 1, "a zstd frame header")?;
            let content_size = fcs.map(|f| f.read(&buf[4 + hlen - f.bytes..4 + hlen]));
            if buf[4] & 0x20 == 0 {
                // Not single-segment: a window descriptor follows the descriptor byte.
                let wd = buf[5];
                let log = 10 + u32::from(wd >> 3);
                if log > ZSTD_WINDOW_LOG_MAX {
                    return Err(TampError::UnknownFormat {
                        path: self.r.path.clone(),
                        detail: format!(
                            "the zstd frame at byte {at} needs a window of 2^{log} bytes, over the 2^{ZSTD_WINDOW_LOG_MAX} (128 MiB) tamp allows; decompress it with zstd -d --memory=2048MB"
                        ),
                    });
                }
            }
            let mut max_out = 0u64;
            loop {
                let bh_at = self.r.offset();
                let start = len;
                self.r.append(buf, &mut len, 3, "a zstd block header")?;
                let h = u32::from(buf[start])
                    | u32::from(buf[start + 1]) << 8
                    | u32::from(buf[start + 2]) << 16;
                let last = h & 1 != 0;
                let size = (h >> 3) as usize;
                let payload = match (h >> 1) & 3 {
                    0 | 2 => size,
                    1 => 1,
                    _ => return Err(self.r.corrupt(bh_at, "a zstd block of the reserved type")),
                };
                if size > ZSTD_BLOCK_MAX {
                    return Err(self.r.corrupt(
                        bh_at,
                        format!("a zstd block of {size} bytes (at most 128 KiB exist)"),
                    ));
                }
                self.r.append(buf, &mut len, payload, "a zstd block")?;
                max_out += if (h >> 1) & 3 == 2 { ZSTD_BLOCK_MAX as u64 } else { size as u64 };
                if last {
                    break;
                }
            }
            if checksum {
                self.r.append(buf, &mut len, 4, "a zstd frame checksum")?;
            }
            if let Some(n) = content_size.filter(|&n| n > max_out) {
                // Checked here, before a worker sizes its output from the claim.
                return Err(self.r.corrupt(
                    at,
                    format!(
                        "the zstd frame header says {n} bytes, its blocks hold at most {max_out}"
                    ),
                ));
            }
            return Ok(Some((Piece::ZstdFrame { offset: at, content_size, max_out }, len)));
        }
    }
    fn bytes_read(&self) -> u64 {
        self.r.offset()
    }
}
