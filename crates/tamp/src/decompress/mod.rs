//! Decompression: the reader splits the stream at LZ4 block or zstd frame boundaries by reading
//! headers only (no decoding); workers decode; the writer checks frame checksums in order.
//!
//! Parallel when the pieces are independent: LZ4 frames with the block-independence flag (what
//! tamp and `lz4` 1.9 write by default), zstd streams whose first frame declares a content size of
//! at most [`PARALLEL_FRAME_MAX`] (tamp) or follows pzstd's 4-byte skippable size marker (pzstd). Anything else valid — linked LZ4 blocks, one big
//! zstd frame as `zstd -T` writes — is decoded on one thread, and the result says so.

mod decode;
mod lz4;
mod probe;
mod read;
mod zstd;

use std::io::{Cursor, Read};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::codec::Format;
use crate::output::{Output, Target};
use crate::pipeline;
use crate::result::{Facts, Operation, RunResult};
use crate::TampError;

use decode::{serial, DecodeSink, DecodeWorker};
use lz4::Lz4Source;
use probe::{probe, Probe};
use read::{AlignedReader, Counted, In};
use zstd::ZstdSource;

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
