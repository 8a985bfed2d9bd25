//! The LZ4 frame reader: splits a stream of LZ4 frames at block boundaries from their headers.

use std::io::Read;

use crate::codec::{lz4_block_max, lz4_header_checksum, LZ4_MAGIC, LZ4_STORED};
use crate::pipeline::Source;
use crate::TampError;

use super::read::In;
use super::{is_skippable, Piece};

#[derive(Debug, Clone, Copy)]
pub(super) struct Lz4Frame {
    max: usize,
    block_checksum: bool,
    content_checksum: bool,
}

pub(super) struct Lz4Source<R> {
    pub(super) r: In<R>,
    pub(super) frame: Option<Lz4Frame>,
}

impl<R: Read + Send> Source for Lz4Source<R> {
    type Meta = Piece;
    fn fill(&mut self, buf: &mut Vec<u8>) -> Result<Option<(Piece, usize)>, TampError> {
        loop {
            let at = self.r.offset();
            let Some(f) = self.frame else {
                let Some(magic) = self.r.magic()? else { return Ok(None) };
                if is_skippable(magic) {
                    let n = self.r.u32("a skippable frame's size")?;
                    self.r.skip(u64::from(n), "a skippable frame")?;
                    continue;
                }
                if magic != LZ4_MAGIC {
                    return Err(self
                        .r
                        .corrupt(at, format!("expected an LZ4 frame, found magic {magic:#010x}")));
                }
                let mut d = [0u8; 2];
                self.r.exact(&mut d, "the LZ4 frame header")?;
                let (flg, bd) = (d[0], d[1]);
                if flg >> 6 != 1 {
                    return Err(self.r.corrupt(
                        at + 4,
                        format!("LZ4 frame version {} (only 1 exists)", flg >> 6),
                    ));
                }
                if flg & 0x20 == 0 {
                    return Err(self.r.corrupt(
                        at,
                        "this LZ4 frame has linked blocks but the first frame had independent ones; decompress it with lz4 -d",
                    ));
                }
                let max = lz4_block_max((bd >> 4) & 7).ok_or_else(|| {
                    self.r.corrupt(at + 5, format!("bad block size code in BD {bd:#04x}"))
                })?;
                let mut desc = vec![flg, bd];
                let mut extra = [0u8; 12];
                let n_extra =
                    if flg & 0x08 != 0 { 8 } else { 0 } + if flg & 0x01 != 0 { 4 } else { 0 };
                self.r.exact(&mut extra[..n_extra], "the LZ4 frame header")?;
                desc.extend_from_slice(&extra[..n_extra]);
                let mut hc = [0u8; 1];
                self.r.exact(&mut hc, "the LZ4 frame header")?;
                if hc[0] != lz4_header_checksum(&desc) {
                    return Err(self.r.corrupt(at, "the LZ4 frame header checksum does not match"));
                }
                if flg & 0x01 != 0 {
                    return Err(TampError::UnknownFormat {
                        path: self.r.path.clone(),
                        detail: "an LZ4 frame that needs a dictionary".into(),
                    });
                }
                let content_size = (flg & 0x08 != 0).then(|| {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&extra[..8]);
                    u64::from_le_bytes(b)
                });
                let f = Lz4Frame {
                    max,
                    block_checksum: flg & 0x10 != 0,
                    content_checksum: flg & 0x04 != 0,
                };
                self.frame = Some(f);
                return Ok(Some((
                    Piece::Lz4Start { content_checksum: f.content_checksum, content_size },
                    0,
                )));
            };
            let size = self.r.u32("an LZ4 block size")?;
            if size == 0 {
                let checksum = if f.content_checksum {
                    Some(self.r.u32("the LZ4 content checksum")?)
                } else {
                    None
                };
                self.frame = None;
                return Ok(Some((Piece::Lz4End { offset: at, checksum }, 0)));
            }
            let stored = size & LZ4_STORED != 0;
            let n = (size & !LZ4_STORED) as usize;
            if n > f.max {
                return Err(self.r.corrupt(
                    at,
                    format!("an LZ4 block of {n} bytes in a frame of {}-byte blocks", f.max),
                ));
            }
            let mut len = 0;
            self.r.append(buf, &mut len, n, "an LZ4 block")?;
            let checksum =
                if f.block_checksum { Some(self.r.u32("an LZ4 block checksum")?) } else { None };
            return Ok(Some((Piece::Lz4Block { offset: at, stored, checksum, max: f.max }, len)));
        }
    }
    fn bytes_read(&self) -> u64 {
        self.r.offset()
    }
}
