//! The input as the reader parses it: counted, line-aligned buffering, and reads that say
//! where the input was cut short.

use std::io::{self, Chain, Cursor, ErrorKind, Read};
use std::path::PathBuf;

use crate::pipeline::line_aligned;
use crate::TampError;

/// A reader that counts what it gave.
pub(super) struct Counted<R> {
    pub(super) r: R,
    pub(super) n: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.r.read(buf)?;
        self.n += k as u64;
        Ok(k)
    }
}

pub(super) type Input<'s> =
    Counted<AlignedReader<Chain<Cursor<Vec<u8>>, crate::input::Watched<'s>>>>;

/// A buffered reader whose buffer starts on a 64-byte boundary ([`line_aligned`]); `BufReader`'s
/// starts where its heap block does, 16 bytes off one, and the reader of a zstd file spent most
/// of its CPU in the kernel's copy into it.
pub(super) struct AlignedReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Where the aligned part of `buf` starts, and its length.
    start: usize,
    cap: usize,
    /// The unread part is `buf[start + pos..start + filled]`.
    pos: usize,
    filled: usize,
}

impl<R: Read> AlignedReader<R> {
    pub(super) fn with_capacity(cap: usize, inner: R) -> Self {
        let mut buf = Vec::new();
        let start = line_aligned(&mut buf, cap);
        AlignedReader { inner, buf, start, cap, pos: 0, filled: 0 }
    }
}

impl<R: Read> Read for AlignedReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.filled {
            // Empty: a read as large as the buffer goes straight to the caller, as BufReader's.
            if out.len() >= self.cap {
                return self.inner.read(out);
            }
            let region = &mut self.buf[self.start..self.start + self.cap];
            self.filled = self.inner.read(region)?;
            self.pos = 0;
        }
        let unread = &self.buf[self.start + self.pos..self.start + self.filled];
        let n = unread.len().min(out.len());
        out[..n].copy_from_slice(&unread[..n]);
        self.pos += n;
        Ok(n)
    }
}

/// The input with its path, for errors that say where.
pub(super) struct In<R> {
    pub(super) r: Counted<R>,
    pub(super) path: PathBuf,
}

impl<R: Read> In<R> {
    pub(super) fn offset(&self) -> u64 {
        self.r.n
    }
    pub(super) fn exact(&mut self, buf: &mut [u8], what: &'static str) -> Result<(), TampError> {
        let mut got = 0;
        while got < buf.len() {
            match self.r.read(&mut buf[got..]) {
                Ok(0) => {
                    return Err(TampError::Truncated {
                        path: self.path.clone(),
                        offset: self.offset(),
                        what,
                    })
                }
                Ok(k) => got += k,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(source) => return Err(TampError::Read { path: self.path.clone(), source }),
            }
        }
        Ok(())
    }
    /// Appends `n` bytes to `buf[..*len]`.
    pub(super) fn append(
        &mut self,
        buf: &mut Vec<u8>,
        len: &mut usize,
        n: usize,
        what: &'static str,
    ) -> Result<(), TampError> {
        if buf.len() < *len + n {
            buf.resize(*len + n, 0);
        }
        self.exact(&mut buf[*len..*len + n], what)?;
        *len += n;
        Ok(())
    }
    pub(super) fn u32(&mut self, what: &'static str) -> Result<u32, TampError> {
        let mut b = [0u8; 4];
        self.exact(&mut b, what)?;
        Ok(u32::from_le_bytes(b))
    }
    /// The next frame's magic number, or `None` at a clean end of input.
    pub(super) fn magic(&mut self) -> Result<Option<u32>, TampError> {
        let mut b = [0u8; 1];
        loop {
            match self.r.read(&mut b) {
                Ok(0) => return Ok(None),
                Ok(_) => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(source) => return Err(TampError::Read { path: self.path.clone(), source }),
            }
        }
        let mut rest = [0u8; 3];
        self.exact(&mut rest, "a frame's magic number")?;
        Ok(Some(u32::from_le_bytes([b[0], rest[0], rest[1], rest[2]])))
    }
    pub(super) fn skip(&mut self, n: u64, what: &'static str) -> Result<(), TampError> {
        let got = io::copy(&mut (&mut self.r).take(n), &mut io::sink())
            .map_err(|source| TampError::Read { path: self.path.clone(), source })?;
        if got < n {
            return Err(TampError::Truncated {
                path: self.path.clone(),
                offset: self.offset(),
                what,
            });
        }
        Ok(())
    }
    pub(super) fn corrupt(&self, offset: u64, detail: impl Into<String>) -> TampError {
        TampError::Corrupt { path: self.path.clone(), offset, detail: detail.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever sizes the reads ask for and the source hands out, the bytes come through in
    /// order and whole, and the buffer the source is read into starts on a line boundary.
    #[test]
    fn the_aligned_reader_passes_every_byte_in_order() {
        use test_support::fuzz::{self, proptest::prelude::*};
        /// Gives at most `piece` bytes per read.
        struct Trickle {
            data: Vec<u8>,
            at: usize,
            piece: usize,
        }
        impl Read for Trickle {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = out.len().min(self.piece).min(self.data.len() - self.at);
                out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
                self.at += n;
                Ok(n)
            }
        }
        let case = (
            prop::collection::vec(any::<u8>(), 0..5000),
            1usize..700,
            1usize..300,
            prop::collection::vec(1usize..900, 1..20),
        );
        fuzz::check(fuzz::PURE, case, |(data, piece, cap, asks)| {
            let source = Trickle { data: data.clone(), at: 0, piece };
            let mut r = AlignedReader::with_capacity(cap, source);
            prop_assert_eq!(r.buf[r.start..].as_ptr() as usize % 64, 0);
            let mut got = Vec::new();
            let mut i = 0;
            loop {
                let mut out = vec![0u8; asks[i % asks.len()]];
                i += 1;
                let n = r.read(&mut out).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&out[..n]);
            }
            prop_assert_eq!(got, data);
            Ok(())
        });
    }
}
