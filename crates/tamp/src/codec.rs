//! Block codecs: what a worker does to one block, and the bytes around the blocks.
//!
//! [`Lz4`] writes the standard LZ4 frame (independent blocks, a checksum per block) from
//! `lz4_flex` block compression; [`Zstd`] writes one complete zstd frame per block, as pzstd does.
//! [`Sleep`] does no work at all and sleeps per block: it shows what the pipeline can do when the
//! CPUs are not the limit, which is how the scaling logic is tested on a 2-CPU machine.

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use xxhash_rust::xxh32::xxh32;

use crate::TampError;

/// The compressed formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// The LZ4 frame format (`lz4 -d` reads it).
    Lz4,
    /// Concatenated zstd frames (`zstd -d` reads it).
    Zstd,
}

impl Format {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Format::Lz4 => "lz4",
            Format::Zstd => "zstd",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = TampError;
    fn from_str(s: &str) -> Result<Self, TampError> {
        match s {
            "lz4" => Ok(Format::Lz4),
            "zstd" | "zst" => Ok(Format::Zstd),
            _ => Err(TampError::Usage(format!("unknown format {s:?}: use lz4 or zstd"))),
        }
    }
}

/// A way to compress a stream block by block. Implement it to plug another codec (or a fake one,
/// for experiments) into the pipeline.
pub trait Codec: Send + Sync + fmt::Debug {
    /// Short name for results ("lz4", "zstd", ...).
    fn name(&self) -> &'static str;
    /// The level recorded in results, if the codec has one.
    fn level(&self) -> Option<i32> {
        None
    }
    /// Bytes written before the first block.
    fn header(&self, block_size: usize) -> Result<Vec<u8>, TampError>;
    /// Bytes written after the last block.
    fn trailer(&self) -> Vec<u8>;
    /// Bytes written instead of blocks when the input is empty (default: none).
    fn empty_body(&self) -> Result<Vec<u8>, TampError> {
        Ok(Vec::new())
    }
    /// A per-worker encoder (holds that worker's context and scratch space).
    fn encoder(&self, block_size: usize) -> Result<Box<dyn BlockEncoder>, TampError>;
}

/// Encodes one block (never empty) into its complete on-disk form.
pub trait BlockEncoder: Send {
    /// Writes the encoded block into `out` (growing it if needed) and returns its length.
    fn encode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, TampError>;
}

// ---- LZ4 frame ------------------------------------------------------------------------------

/// LZ4 frame magic number, little-endian on disk: `04 22 4D 18`.
pub const LZ4_MAGIC: u32 = 0x184D_2204;
/// FLG: version 01, independent blocks, block checksums; no content size, no content checksum.
pub const LZ4_FLG: u8 = 0b0111_0000;
/// The high bit of a block size: the block is stored uncompressed.
pub const LZ4_STORED: u32 = 0x8000_0000;

/// The BD byte's block maximum size codes (4..=7) and their sizes.
pub fn lz4_block_max(code: u8) -> Option<usize> {
    match code {
        4 => Some(64 << 10),
        5 => Some(256 << 10),
        6 => Some(1 << 20),
        7 => Some(4 << 20),
        _ => None,
    }
}

/// The smallest LZ4 block maximum size code that holds `block_size` bytes.
pub fn lz4_code_for(block_size: usize) -> Option<u8> {
    (4..=7).find(|&c| lz4_block_max(c).is_some_and(|m| m >= block_size))
}

/// The LZ4 header checksum byte: the second byte of xxh32 (seed 0) of the descriptor (FLG to the
/// last optional field).
pub fn lz4_header_checksum(descriptor: &[u8]) -> u8 {
    ((xxh32(descriptor, 0) >> 8) & 0xFF) as u8
}

/// LZ4 blocks with `lz4_flex`, framed to the LZ4 frame format.
///
/// Each block carries its own xxh32 (FLG block-checksum bit) rather than the frame carrying one
/// over the whole content: a content checksum must be computed in order over all input on one
/// thread (the reader), block checksums are computed by the workers in parallel and still catch
/// a damaged block, naming its offset. `lz4 -d` checks both kinds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lz4;

impl Codec for Lz4 {
    fn name(&self) -> &'static str {
        "lz4"
    }
    fn header(&self, block_size: usize) -> Result<Vec<u8>, TampError> {
        let code = lz4_code_for(block_size).ok_or_else(|| {
            TampError::Usage(format!(
                "an LZ4 frame's blocks hold at most 4 MiB; --block {block_size} is too big"
            ))
        })?;
        let mut h = LZ4_MAGIC.to_le_bytes().to_vec();
        let descriptor = [LZ4_FLG, code << 4];
        h.extend_from_slice(&descriptor);
        h.push(lz4_header_checksum(&descriptor));
        Ok(h)
    }
    fn trailer(&self) -> Vec<u8> {
        vec![0, 0, 0, 0] // end mark
    }
    fn encoder(&self, block_size: usize) -> Result<Box<dyn BlockEncoder>, TampError> {
        Ok(Box::new(Lz4Encoder { bound: lz4_flex::block::get_maximum_output_size(block_size) }))
    }
}

struct Lz4Encoder {
    bound: usize,
}

impl BlockEncoder for Lz4Encoder {
    fn encode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, TampError> {
        let bound = self.bound.max(lz4_flex::block::get_maximum_output_size(input.len()));
        // Grown once per slot, then reused: no per-block allocation or clearing.
        if out.len() < bound + 8 {
            out.resize(bound + 8, 0);
        }
        let n = lz4_flex::block::compress_into(input, &mut out[4..4 + bound])
            .map_err(|e| TampError::Codec { format: "lz4", detail: e.to_string() })?;
        let (size, len) = if n < input.len() {
            (n as u32, n)
        } else {
            // Compression did not help: store the block as it is.
            out[4..4 + input.len()].copy_from_slice(input);
            (input.len() as u32 | LZ4_STORED, input.len())
        };
        out[..4].copy_from_slice(&size.to_le_bytes());
        let sum = xxh32(&out[4..4 + len], 0);
        out[4 + len..8 + len].copy_from_slice(&sum.to_le_bytes());
        Ok(len + 8)
    }
}

// ---- zstd -----------------------------------------------------------------------------------

/// One zstd frame per block (with its content size and checksum), so `zstd -d` reads the
/// concatenation and the frames can be decompressed in parallel.
///
/// pzstd also writes a skippable frame holding each frame's compressed size, so its decompressor
/// can split the stream without parsing it. Tamp does not: the frame boundaries are found by
/// reading the frame header and each block's 3-byte header (one small read per ≤ 128 KiB block,
/// no decoding), which keeps the output a plain zstd stream of the same size as zstd's own.
#[derive(Debug, Clone, Copy)]
pub struct Zstd {
    level: i32,
}

impl Zstd {
    /// A zstd codec at `level` (1..=22, or negative for zstd's fast levels).
    pub fn new(level: i32) -> Result<Self, TampError> {
        let range = zstd::compression_level_range();
        if level == 0 || !range.contains(&level) {
            return Err(TampError::Usage(format!(
                "zstd level {level} is out of range: use 1 to {} (or a negative fast level down to {})",
                range.end(),
                range.start()
            )));
        }
        Ok(Self { level })
    }
}

impl Codec for Zstd {
    fn name(&self) -> &'static str {
        "zstd"
    }
    fn level(&self) -> Option<i32> {
        Some(self.level)
    }
    fn header(&self, _block_size: usize) -> Result<Vec<u8>, TampError> {
        Ok(Vec::new())
    }
    fn trailer(&self) -> Vec<u8> {
        Vec::new()
    }
    /// zstd -d rejects an empty file: empty input gives one empty frame, as zstd writes.
    fn empty_body(&self) -> Result<Vec<u8>, TampError> {
        let mut out = Vec::new();
        self.encoder(0)?.encode(&[], &mut out)?;
        Ok(out)
    }
    fn encoder(&self, _block_size: usize) -> Result<Box<dyn BlockEncoder>, TampError> {
        use zstd::zstd_safe::CParameter;
        let err = |e: std::io::Error| TampError::Codec { format: "zstd", detail: e.to_string() };
        let mut c = zstd::bulk::Compressor::new(self.level).map_err(err)?;
        c.set_parameter(CParameter::ChecksumFlag(true)).map_err(err)?;
        c.set_parameter(CParameter::ContentSizeFlag(true)).map_err(err)?;
        Ok(Box::new(ZstdEncoder { c }))
    }
}

struct ZstdEncoder {
    c: zstd::bulk::Compressor<'static>,
}

impl BlockEncoder for ZstdEncoder {
    fn encode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, TampError> {
        out.clear();
        out.reserve(zstd::zstd_safe::compress_bound(input.len()));
        self.c
            .compress_to_buffer(input, out)
            .map_err(|e| TampError::Codec { format: "zstd", detail: e.to_string() })
    }
}

// ---- a codec that only sleeps ---------------------------------------------------------------

/// Sleeps `per_block` for each block and writes the block's length (4 bytes): no CPU, so N workers
/// run N blocks at once whatever the number of CPUs. For experiments and tests of the pipeline;
/// its output is not a compressed file.
#[derive(Debug, Clone, Copy)]
pub struct Sleep {
    /// Time per block.
    pub per_block: Duration,
}

impl Codec for Sleep {
    fn name(&self) -> &'static str {
        "sleep"
    }
    fn header(&self, _block_size: usize) -> Result<Vec<u8>, TampError> {
        Ok(Vec::new())
    }
    fn trailer(&self) -> Vec<u8> {
        Vec::new()
    }
    fn encoder(&self, _block_size: usize) -> Result<Box<dyn BlockEncoder>, TampError> {
        Ok(Box::new(SleepEncoder(self.per_block)))
    }
}

struct SleepEncoder(Duration);

impl BlockEncoder for SleepEncoder {
    fn encode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, TampError> {
        std::thread::sleep(self.0);
        out.clear();
        out.extend_from_slice(&(input.len() as u32).to_le_bytes());
        Ok(4)
    }
}

/// The codec for a format and level (the level is ignored for LZ4: `lz4_flex` has one speed,
/// comparable to `lz4 -1`).
pub fn codec_for(format: Format, level: i32) -> Result<Box<dyn Codec>, TampError> {
    Ok(match format {
        Format::Lz4 => Box::new(Lz4),
        Format::Zstd => Box::new(Zstd::new(level)?),
    })
}
