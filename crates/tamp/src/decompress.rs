//! Decompression: the reader splits the stream at LZ4 block or zstd frame boundaries by reading
//! headers only (no decoding); workers decode; the writer checks frame checksums in order.
//!
//! Parallel when the pieces are independent: LZ4 frames with the block-independence flag (what
//! tamp and `lz4` 1.9 write by default), zstd streams whose first frame declares a content size of
//! at most [`PARALLEL_FRAME_MAX`] (tamp) or follows pzstd's 4-byte skippable size marker (pzstd). Anything else valid — linked LZ4 blocks, one big
//! zstd frame as `zstd -T` writes — is decoded on one thread, and the result says so.

use std::io::{self, Chain, Cursor, ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use xxhash_rust::xxh32::{xxh32, Xxh32};

use crate::codec::{lz4_block_max, lz4_header_checksum, Format, LZ4_MAGIC, LZ4_STORED};
use crate::output::{Output, Target};
use crate::pipeline::{self, line_aligned, Sink, Source, ThreadTimes, Worker};
use crate::result::{Facts, Operation, RunResult};
use crate::TampError;

/// zstd frames up to this content size are decoded in parallel, one frame per worker; a stream
/// whose first frame is bigger (or does not say) is decoded on one thread, so memory stays
/// O(workers × frame).
pub const PARALLEL_FRAME_MAX: u64 = 32 << 20;

const ZSTD_MAGIC: u32 = 0xFD2F_B528;
const ZSTD_BLOCK_MAX: usize = 128 << 10;
/// The largest zstd window decoded: 2^27 = 128 MiB, what `zstd -d` accepts without `--memory`
/// and what `zstd -22` writes. A frame header claiming more is refused before anything is
/// allocated for it (the decoder's window buffer is sized from that claim).
pub const ZSTD_WINDOW_LOG_MAX: u32 = 27;

fn is_skippable(magic: u32) -> bool {
    magic & 0xFFFF_FFF0 == 0x184D_2A50
}

/// How to decompress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecompressOptions {
    /// Worker threads for inputs that can be split.
    pub threads: usize,
    /// The format the input must be in; `None` takes it from the magic number.
    pub format: Option<Format>,
}

impl Default for DecompressOptions {
    fn default() -> Self {
        Self { threads: crate::clock::online_cpus(), format: None }
    }
}

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
struct Fcs {
    bytes: usize,
}

impl Fcs {
    fn read(self, b: &[u8]) -> u64 {
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
fn zstd_header_len(fh: &[u8]) -> Option<(usize, Option<Fcs>, bool)> {
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

/// Decompresses the file `input` (LZ4 frame or zstd) to `output`.
pub fn decompress(
    input: &Path,
    output: &Output,
    opts: &DecompressOptions,
    stop: &AtomicBool,
) -> Result<RunResult, TampError> {
    if opts.threads == 0 {
        return Err(TampError::Usage("give at least 1 thread".into()));
    }
    let read_err = |source| TampError::Read { path: input.into(), source };
    let file = crate::input::open(input).map_err(read_err)?;
    let mut file = crate::input::Watched::new(file, stop).map_err(read_err)?;
    let mut prefix = Vec::with_capacity(4096);
    if let Err(e) = (&mut file).take(4096).read_to_end(&mut prefix) {
        if crate::input::is_stopped(&e) {
            return Err(TampError::StoppedBeforeInput { path: input.into() });
        }
        return Err(read_err(e));
    }
    let probed = probe(&prefix);
    let format = match &probed {
        Probe::Lz4 { .. } => Format::Lz4,
        Probe::Zstd { .. } => Format::Zstd,
        Probe::Unknown(detail) => {
            return Err(TampError::UnknownFormat { path: input.into(), detail: detail.clone() })
        }
    };
    if let Some(want) = opts.format {
        if want != format {
            return Err(TampError::UnknownFormat {
                path: input.into(),
                detail: format!("it is {format}, not {want} (drop --format to take it as it is)"),
            });
        }
    }
    let mut serial_reason = match probed {
        Probe::Lz4 { independent: false } => {
            Some("its LZ4 blocks are linked (each depends on the one before)".to_string())
        }
        // pzstd's frames do not record their size but are bounded by its chunk size.
        Probe::Zstd { pzstd: true, .. } => None,
        Probe::Zstd { content_size: None, .. } => {
            Some("its first zstd frame does not record its size".to_string())
        }
        Probe::Zstd { content_size: Some(n), .. } if n > PARALLEL_FRAME_MAX => Some(format!(
            "it is one zstd frame of {n} bytes (as zstd -T writes); frames are the unit of parallel decoding"
        )),
        _ => None,
    };
    // Buffered: the reader parses headers with many small reads (3 bytes per zstd block header).
    let input_r = Counted {
        r: AlignedReader::with_capacity(256 << 10, Cursor::new(prefix).chain(file)),
        n: 0,
    };
    let target = Target::open(output)?;
    let stat0 = crate::procstat::read().ok();
    let cpu0 = crate::clock::process_cpu();
    let t0 = Instant::now();
    let path = input.to_path_buf();
    let (times, blocks, bytes_in, interrupted, mut target, block_size) = match serial_reason {
        Some(_) => serial(format, input_r, &path, target, stop)?,
        None => {
            let sink = DecodeSink {
                target,
                hash: None,
                frame_bytes: 0,
                pending_size: None,
                largest: 0,
                pieces: 0,
                path: path.clone(),
            };
            let r = In { r: input_r, path: path.clone() };
            let out = match format {
                Format::Lz4 => pipeline::run(
                    Lz4Source { r, frame: None },
                    || Ok(DecodeWorker::new(path.clone())),
                    sink,
                    opts.threads,
                    None, // the block size is known only once the frames are read
                    stop,
                )?,
                Format::Zstd => pipeline::run(
                    ZstdSource { r },
                    || Ok(DecodeWorker::new(path.clone())),
                    sink,
                    opts.threads,
                    None,
                    stop,
                )?,
            };
            let largest = out.sink.largest;
            if out.sink.pieces == 1 && out.sink.target.written > crate::DEFAULT_BLOCK as u64 {
                // Splittable in principle, but there was only one piece: one worker did it all.
                serial_reason = Some(format!(
                    "all {} bytes are in one {}: there was nothing to split",
                    out.sink.target.written,
                    if format == Format::Zstd {
                        "zstd frame (as zstd -T writes)"
                    } else {
                        "LZ4 block (lz4's blocks are up to 4 MiB)"
                    }
                ));
            }
            (out.threads, out.units, out.bytes_in, out.interrupted, out.sink.target, largest)
        }
    };
    let bytes_out = target.written;
    let out_name = target.name();
    if !interrupted {
        target.commit()?;
    }
    drop(target);
    let wall = t0.elapsed();
    let cpu1 = crate::clock::process_cpu();
    let machine =
        stat0.zip(crate::procstat::read().ok()).map(|(a, b)| crate::procstat::delta(&a, &b));
    Ok(RunResult::build(Facts {
        operation: Operation::Decompress,
        format: format.name().to_string(),
        level: None,
        input: input.display().to_string(),
        output: if interrupted { None } else { out_name },
        threads: if serial_reason.is_some() { 1 } else { opts.threads },
        block_size,
        blocks,
        bytes_in,
        bytes_out,
        wall,
        cpu: (cpu1.0.saturating_sub(cpu0.0), cpu1.1.saturating_sub(cpu0.1)),
        times,
        parallel: serial_reason.is_none(),
        serial_reason,
        interrupted,
        machine,
    }))
}

/// A reader that counts what it gave.
struct Counted<R> {
    r: R,
    n: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.r.read(buf)?;
        self.n += k as u64;
        Ok(k)
    }
}

type Input<'s> = Counted<AlignedReader<Chain<Cursor<Vec<u8>>, crate::input::Watched<'s>>>>;

/// A buffered reader whose buffer starts on a 64-byte boundary ([`line_aligned`]); `BufReader`'s
/// starts where its heap block does, 16 bytes off one, and the reader of a zstd file spent most
/// of its CPU in the kernel's copy into it.
struct AlignedReader<R> {
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
    fn with_capacity(cap: usize, inner: R) -> Self {
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
struct In<R> {
    r: Counted<R>,
    path: PathBuf,
}

impl<R: Read> In<R> {
    fn offset(&self) -> u64 {
        self.r.n
    }
    fn exact(&mut self, buf: &mut [u8], what: &'static str) -> Result<(), TampError> {
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
    fn append(
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
    fn u32(&mut self, what: &'static str) -> Result<u32, TampError> {
        let mut b = [0u8; 4];
        self.exact(&mut b, what)?;
        Ok(u32::from_le_bytes(b))
    }
    /// The next frame's magic number, or `None` at a clean end of input.
    fn magic(&mut self) -> Result<Option<u32>, TampError> {
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
    fn skip(&mut self, n: u64, what: &'static str) -> Result<(), TampError> {
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
    fn corrupt(&self, offset: u64, detail: impl Into<String>) -> TampError {
        TampError::Corrupt { path: self.path.clone(), offset, detail: detail.into() }
    }
}

/// One unit of decoding work.
#[derive(Debug)]
enum Piece {
    /// An LZ4 frame begins: whether it ends with a content checksum, and its declared size.
    Lz4Start { content_checksum: bool, content_size: Option<u64> },
    /// An LZ4 block at `offset` (of its size field).
    Lz4Block { offset: u64, stored: bool, checksum: Option<u32>, max: usize },
    /// An LZ4 frame ends (its end mark at `offset`), with its content checksum if any.
    Lz4End { offset: u64, checksum: Option<u32> },
    /// A whole zstd frame starting at `offset`; `max_out` is the most its blocks can decode to
    /// (raw and RLE blocks say their size, a compressed block gives at most 128 KiB).
    ZstdFrame { offset: u64, content_size: Option<u64>, max_out: u64 },
}

#[derive(Debug, Clone, Copy)]
struct Lz4Frame {
    max: usize,
    block_checksum: bool,
    content_checksum: bool,
}

struct Lz4Source<R> {
    r: In<R>,
    frame: Option<Lz4Frame>,
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

struct ZstdSource<R> {
    r: In<R>,
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

struct DecodeWorker {
    path: PathBuf,
    zstd: Option<zstd::bulk::Decompressor<'static>>,
}

impl DecodeWorker {
    fn new(path: PathBuf) -> Self {
        Self { path, zstd: None }
    }
    fn corrupt(&self, offset: u64, detail: String) -> TampError {
        TampError::Corrupt { path: self.path.clone(), offset, detail }
    }
}

impl Worker<Piece> for DecodeWorker {
    fn work(&mut self, meta: &Piece, input: &[u8], out: &mut Vec<u8>) -> Result<usize, TampError> {
        match *meta {
            Piece::Lz4Start { .. } | Piece::Lz4End { .. } => Ok(0),
            Piece::Lz4Block { offset, stored, checksum, max } => {
                if let Some(want) = checksum {
                    if xxh32(input, 0) != want {
                        return Err(
                            self.corrupt(offset, "the LZ4 block checksum does not match".into())
                        );
                    }
                }
                if out.len() < max {
                    out.resize(max, 0);
                }
                if stored {
                    out[..input.len()].copy_from_slice(input);
                    return Ok(input.len());
                }
                lz4_flex::block::decompress_into(input, &mut out[..max])
                    .map_err(|e| self.corrupt(offset, format!("bad LZ4 block: {e}")))
            }
            Piece::ZstdFrame { offset, content_size, max_out } => {
                out.clear();
                match content_size {
                    Some(n) if n <= PARALLEL_FRAME_MAX => {
                        if self.zstd.is_none() {
                            let codec = |e: io::Error| TampError::Codec {
                                format: "zstd",
                                detail: e.to_string(),
                            };
                            let mut d = zstd::bulk::Decompressor::new().map_err(codec)?;
                            d.set_parameter(zstd::zstd_safe::DParameter::WindowLogMax(
                                ZSTD_WINDOW_LOG_MAX,
                            ))
                            .map_err(codec)?;
                            self.zstd = Some(d);
                        }
                        out.reserve(n as usize);
                        let d = self.zstd.as_mut().ok_or(TampError::Panicked("worker"))?;
                        let k = d
                            .decompress_to_buffer(input, out)
                            .map_err(|e| self.corrupt(offset, format!("bad zstd frame: {e}")))?;
                        if k as u64 != n {
                            return Err(self.corrupt(
                                offset,
                                format!("a zstd frame gave {k} bytes, its header says {n}"),
                            ));
                        }
                        Ok(k)
                    }
                    // A frame that does not say its size (or is huge) in a splittable stream:
                    // decoded by this worker with a growing buffer.
                    _ => {
                        let bad =
                            |e: io::Error| self.corrupt(offset, format!("bad zstd frame: {e}"));
                        let mut d = zstd::stream::read::Decoder::with_buffer(input).map_err(bad)?;
                        d.window_log_max(ZSTD_WINDOW_LOG_MAX).map_err(bad)?;
                        // No more than the blocks can hold (one byte over proves a lie).
                        (&mut d).take(max_out + 1).read_to_end(out).map_err(bad)?;
                        if out.len() as u64 > max_out {
                            return Err(self.corrupt(
                                offset,
                                format!("a zstd frame decodes to more than its blocks hold ({max_out} bytes)"),
                            ));
                        }
                        Ok(out.len())
                    }
                }
            }
        }
    }
}

struct DecodeSink {
    target: Target,
    hash: Option<Xxh32>,
    frame_bytes: u64,
    pending_size: Option<u64>,
    largest: usize,
    pieces: u64,
    path: PathBuf,
}

impl Sink<Piece> for DecodeSink {
    fn start(&mut self) -> Result<(), TampError> {
        Ok(())
    }
    fn put(&mut self, meta: &Piece, data: &[u8]) -> Result<(), TampError> {
        match *meta {
            Piece::Lz4Start { content_checksum, content_size } => {
                self.hash = content_checksum.then(|| Xxh32::new(0));
                self.frame_bytes = 0;
                self.pending_size = content_size;
            }
            Piece::Lz4End { offset, checksum } => {
                if let (Some(h), Some(want)) = (self.hash.take(), checksum) {
                    if h.digest() != want {
                        return Err(TampError::Corrupt {
                            path: self.path.clone(),
                            offset,
                            detail: "the LZ4 content checksum does not match".into(),
                        });
                    }
                }
                if let Some(want) = self.pending_size.take() {
                    if self.frame_bytes != want {
                        return Err(TampError::Corrupt {
                            path: self.path.clone(),
                            offset,
                            detail: format!(
                                "the LZ4 frame gave {} bytes, its header says {want}",
                                self.frame_bytes
                            ),
                        });
                    }
                }
            }
            Piece::Lz4Block { .. } | Piece::ZstdFrame { .. } => {
                if let Some(h) = self.hash.as_mut() {
                    h.update(data);
                }
                self.frame_bytes = self.frame_bytes.wrapping_add(data.len() as u64);
                self.largest = self.largest.max(data.len());
                self.pieces += 1;
                self.target.write(data)?;
            }
        }
        Ok(())
    }
    fn finish(&mut self) -> Result<(), TampError> {
        Ok(())
    }
}

type SerialOut = (Vec<ThreadTimes>, u64, u64, bool, Target, usize);

/// Decodes the whole input on this thread with the format's streaming decoder.
fn serial(
    format: Format,
    input: Input<'_>,
    path: &Path,
    mut target: Target,
    stop: &AtomicBool,
) -> Result<SerialOut, TampError> {
    let t0 = Instant::now();
    let cpu0 = crate::clock::thread_cpu();
    let counted = std::cell::Cell::new(0u64);
    let mut buf = vec![0u8; 1 << 20];
    let mut chunks = 0u64;
    let mut interrupted = false;
    let mut dec: Box<dyn Read + '_> = match format {
        Format::Lz4 => {
            Box::new(lz4_flex::frame::FrameDecoder::new(Shared { inner: input, n: &counted }))
        }
        Format::Zstd => {
            let codec = |e: io::Error| TampError::Codec { format: "zstd", detail: e.to_string() };
            let mut d = zstd::stream::read::Decoder::new(Shared { inner: input, n: &counted })
                .map_err(codec)?;
            d.window_log_max(ZSTD_WINDOW_LOG_MAX).map_err(codec)?;
            Box::new(d)
        }
    };
    loop {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        match dec.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => {
                chunks += 1;
                target.write(&buf[..k])?;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // A silent input gave up on the stop request.
            Err(e) if crate::input::is_stopped(&e) => {
                interrupted = true;
                break;
            }
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                return Err(TampError::Truncated {
                    path: path.into(),
                    offset: counted.get(),
                    what: "a frame",
                })
            }
            // zstd's refusal of a window over ZSTD_WINDOW_LOG_MAX: not damage, a setting.
            Err(e) if format == Format::Zstd && e.to_string().contains("too much memory") => {
                return Err(TampError::UnknownFormat {
                    path: path.into(),
                    detail: format!(
                        "a zstd frame at or before byte {} needs a window over the 2^{ZSTD_WINDOW_LOG_MAX} (128 MiB) tamp allows; decompress it with zstd -d --memory=2048MB",
                        counted.get()
                    ),
                })
            }
            Err(e) => {
                return Err(TampError::Corrupt {
                    path: path.into(),
                    offset: counted.get(),
                    detail: format!("{e} (found at or before this offset)"),
                })
            }
        }
    }
    drop(dec);
    let times = vec![ThreadTimes {
        role: "serial".into(),
        wall: t0.elapsed(),
        wait: std::time::Duration::ZERO,
        cpu: crate::clock::thread_cpu().saturating_sub(cpu0),
    }];
    Ok((times, chunks, counted.get(), interrupted, target, 0))
}

/// A reader that reports how far it got through a shared cell (the decoder owns the reader).
struct Shared<'a, 's> {
    inner: Input<'s>,
    n: &'a std::cell::Cell<u64>,
}

impl Read for Shared<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n.set(self.inner.n);
        Ok(k)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
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
