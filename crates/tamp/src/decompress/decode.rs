//! Decoding: the workers that decode LZ4 blocks and zstd frames, the sink that checks frame
//! checksums in order, and the one-thread decoder for inputs that cannot be split.

use std::io::{self, ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use xxhash_rust::xxh32::{xxh32, Xxh32};

use crate::codec::Format;
use crate::output::Target;
use crate::pipeline::{Sink, ThreadTimes, Worker};
use crate::TampError;

use super::read::Input;
use super::{Piece, PARALLEL_FRAME_MAX, ZSTD_WINDOW_LOG_MAX};

pub(super) struct DecodeWorker {
    path: PathBuf,
    zstd: Option<zstd::bulk::Decompressor<'static>>,
}

impl DecodeWorker {
    pub(super) fn new(path: PathBuf) -> Self {
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

pub(super) struct DecodeSink {
    pub(super) target: Target,
    pub(super) hash: Option<Xxh32>,
    pub(super) frame_bytes: u64,
    pub(super) pending_size: Option<u64>,
    pub(super) largest: usize,
    pub(super) pieces: u64,
    pub(super) path: PathBuf,
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
pub(super) fn serial(
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
