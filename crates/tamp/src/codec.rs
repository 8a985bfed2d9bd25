//! Block codecs: what a worker does to one block, and the bytes around the blocks.
//!
//! [`Lz4`] writes the standard LZ4 frame (independent blocks, a checksum per block) around blocks
//! compressed by the C reference library, liblz4 (through `lz4-sys`), as `lz4 -1` compresses them;
//! [`Zstd`] writes one complete zstd frame per block, as pzstd does.
//! [`Sleep`] does no work at all and sleeps per block: it shows what the pipeline can do when the
//! CPUs are not the limit, which is how the scaling logic is tested on a 2-CPU machine.

use std::fmt;
use std::os::raw::c_int;
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

/// LZ4 blocks compressed by liblz4 at `lz4 -1`'s setting (acceleration 1), framed to the LZ4
/// frame format here. (Decompression uses `lz4_flex`: see [`crate::decompress()`].)
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
        Ok(Box::new(Lz4Encoder::new(block_size)?))
    }
}

/// The C reference library's one-shot block compressor, with the state kept by the caller.
/// `lz4-sys` links liblz4 (built from its bundled source) but declares only the simple API; these
/// three are in the same library (lz4.h, lz4 1.10.0 as bundled by lz4-sys 1.11.1).
mod liblz4 {
    use std::os::raw::{c_char, c_int, c_void};

    extern "C" {
        /// Bytes an `LZ4_stream_t` takes (the state for the `extState` functions).
        pub fn LZ4_sizeofState() -> c_int;
        /// Zeroes a state of `size` bytes; NULL when it is too small or misaligned.
        pub fn LZ4_initStream(state: *mut c_void, size: usize) -> *mut c_void;
        /// Compresses `src_size` bytes into `dst` as one independent block with a state that
        /// `LZ4_initStream` has initialised once; returns its length, or 0 when it does not fit.
        pub fn LZ4_compress_fast_extState_fastReset(
            state: *mut c_void,
            src: *const c_char,
            dst: *mut c_char,
            src_size: c_int,
            dst_capacity: c_int,
            acceleration: c_int,
        ) -> c_int;
    }
}

/// `lz4 -1`'s speed: acceleration 1 (liblz4's default).
const LZ4_ACCELERATION: c_int = 1;

/// The worst-case compressed length of `n` input bytes, or `None` above liblz4's input limit
/// (about 2 GiB; blocks are at most 4 MiB).
fn lz4_bound(n: usize) -> Option<usize> {
    let n = c_int::try_from(n).ok()?;
    // SAFETY: a pure function of its argument (liblz4 `LZ4_compressBound`); it returns 0 for
    // sizes it does not accept.
    let bound = unsafe { lz4_sys::LZ4_compressBound(n) };
    usize::try_from(bound).ok().filter(|&b| b > 0)
}

fn lz4_error(detail: String) -> TampError {
    TampError::Codec { format: "lz4", detail }
}

/// One worker's LZ4 compressor: liblz4's compression state, allocated and initialised once.
///
/// Each block is compressed with `LZ4_compress_fast_extState_fastReset`, the call liblz4's own
/// frame code (and so the `lz4` command) makes for every independent block. Unlike
/// `LZ4_compress_fast_extState`, which re-initialises the whole state on every call, it only
/// requires the state to have been initialised once (done in [`Lz4Encoder::new`]) and then
/// clears the hash table only when it must: the same work for blocks of 4 KiB and more, less for
/// smaller ones.
struct Lz4Encoder {
    /// The `LZ4_stream_t`: `u64`s, so 8-byte aligned as liblz4 requires (it holds pointers).
    state: Box<[u64]>,
    /// `LZ4_compressBound` of the block size.
    bound: usize,
}

impl Lz4Encoder {
    fn new(block_size: usize) -> Result<Self, TampError> {
        let bound = lz4_bound(block_size).ok_or_else(|| {
            lz4_error(format!("block size {block_size} is beyond liblz4's limit"))
        })?;
        // SAFETY: takes no arguments and returns a constant.
        let size = unsafe { liblz4::LZ4_sizeofState() };
        let size = usize::try_from(size)
            .map_err(|_| lz4_error(format!("liblz4 gave a state size of {size}")))?;
        let mut state = vec![0u64; size.div_ceil(8)].into_boxed_slice();
        // SAFETY: `state` is a live, writable, 8-byte-aligned allocation of at least `size`
        // bytes, which is what `LZ4_initStream` writes; it checks size and alignment itself and
        // returns NULL when they do not suit.
        let ready = unsafe { liblz4::LZ4_initStream(state.as_mut_ptr().cast(), size) };
        if ready.is_null() {
            return Err(lz4_error("liblz4 refused its compression state (LZ4_initStream)".into()));
        }
        Ok(Self { state, bound })
    }
}

impl BlockEncoder for Lz4Encoder {
    fn encode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, TampError> {
        let too_big =
            || lz4_error(format!("a block of {} bytes is beyond liblz4's limit", input.len()));
        let bound = match lz4_bound(input.len()) {
            Some(b) => self.bound.max(b),
            None => return Err(too_big()),
        };
        let src_len = c_int::try_from(input.len()).map_err(|_| too_big())?;
        let capacity = c_int::try_from(bound).map_err(|_| too_big())?;
        // Grown once per slot, then reused: no per-block allocation or clearing.
        if out.len() < bound + 8 {
            out.resize(bound + 8, 0);
        }
        let dst = &mut out[4..4 + bound];
        // SAFETY: `self.state` was initialised by `LZ4_initStream` in `new` and is only ever
        // passed to liblz4 since (`&mut self`: one block at a time), which is the precondition of
        // the fastReset variant; `input` is readable for `src_len` bytes and `dst` writable for
        // `capacity` bytes (both are those slices' lengths), and the two do not overlap; liblz4
        // reads and writes nothing outside them and keeps no pointer to either after returning.
        let n = unsafe {
            liblz4::LZ4_compress_fast_extState_fastReset(
                self.state.as_mut_ptr().cast(),
                input.as_ptr().cast(),
                dst.as_mut_ptr().cast(),
                src_len,
                capacity,
                LZ4_ACCELERATION,
            )
        };
        // 0 is liblz4's failure (it cannot happen with a capacity of LZ4_compressBound).
        let n = usize::try_from(n).ok().filter(|&n| n > 0 && n <= bound).ok_or_else(|| {
            lz4_error(format!(
                "liblz4 failed to compress a block of {} bytes (returned {n})",
                input.len()
            ))
        })?;
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

/// The codec for a format and level (the level is ignored for LZ4: tamp compresses LZ4 as
/// `lz4 -1` does, liblz4's fast compressor at acceleration 1).
pub fn codec_for(format: Format, level: i32) -> Result<Box<dyn Codec>, TampError> {
    Ok(match format {
        Format::Lz4 => Box::new(Lz4),
        Format::Zstd => Box::new(Zstd::new(level)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_support::fuzz::{self, proptest};

    use proptest::prelude::*;

    /// Decodes one encoded LZ4 block (size word, data, xxh32) as tamp's decompressor does.
    fn decode(encoded: &[u8], max: usize) -> Vec<u8> {
        let size = u32::from_le_bytes(encoded[..4].try_into().unwrap());
        let len = (size & !LZ4_STORED) as usize;
        assert_eq!(encoded.len(), len + 8, "size word {size:#x}");
        let data = &encoded[4..4 + len];
        let sum = u32::from_le_bytes(encoded[4 + len..].try_into().unwrap());
        assert_eq!(sum, xxh32(data, 0), "block checksum");
        if size & LZ4_STORED != 0 {
            return data.to_vec();
        }
        let mut out = vec![0; max];
        let n = lz4_flex::block::decompress_into(data, &mut out).unwrap();
        out.truncate(n);
        out
    }

    fn random(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// One encoder (one liblz4 state) over blocks of every kind and size in turn, small ones
    /// (whose hash table liblz4 keeps between calls) among large ones (for which it clears it).
    #[test]
    fn one_encoder_round_trips_blocks_of_every_kind() {
        let max = 1 << 20;
        let mut enc = Lz4.encoder(max).unwrap();
        let text = b"the quick brown fox jumps over the lazy dog; ".repeat(30_000);
        let blocks: Vec<Vec<u8>> = vec![
            vec![b'x'],
            b"hello hello hello hello hello!".to_vec(),
            random(100, 1),
            vec![0; 3000],
            text[..max].to_vec(),
            random(max, 2),
            vec![0; max],
            text[..5000].to_vec(),
            b"abcdabcdabcdabcdabcd".to_vec(),
            random(65_535, 3),
            text[..65_536].to_vec(),
            text[7..65_537 + 7].to_vec(),
        ];
        let mut out = Vec::new();
        for (i, b) in blocks.iter().enumerate() {
            let n = enc.encode(b, &mut out).unwrap();
            assert_eq!(decode(&out[..n], max), *b, "block {i} ({} bytes)", b.len());
            let size = u32::from_le_bytes(out[..4].try_into().unwrap());
            // Random bytes do not compress and are stored; runs and repeated text must.
            if b.len() >= 100 && i != 2 && i != 5 && i != 9 {
                assert!(size & LZ4_STORED == 0 && (size as usize) < b.len() / 4, "block {i}");
            }
            if i == 5 || i == 9 || i == 0 {
                assert_eq!(size, b.len() as u32 | LZ4_STORED, "block {i}");
            }
        }
    }

    /// The bound comes from liblz4 and the buffer is sized from it once.
    #[test]
    fn the_output_buffer_is_sized_once_for_the_block_size() {
        let block = 256 << 10;
        let bound = lz4_bound(block).unwrap();
        assert_eq!(bound, block + block / 255 + 16, "LZ4_COMPRESSBOUND");
        assert_eq!(lz4_bound(usize::MAX), None);
        let mut enc = Lz4.encoder(block).unwrap();
        let mut out = Vec::new();
        enc.encode(&random(block, 4), &mut out).unwrap();
        let (len, ptr) = (out.len(), out.as_ptr());
        assert_eq!(len, bound + 8);
        for i in 1..5 {
            enc.encode(&vec![i as u8; block / i], &mut out).unwrap();
        }
        assert_eq!((out.len(), out.as_ptr()), (len, ptr), "no per-block allocation");
    }

    /// Any sequence of blocks through one encoder decodes to itself.
    #[test]
    fn arbitrary_blocks_round_trip_through_one_encoder() {
        let block = prop_oneof![
            fuzz::bytes(2_000),
            (any::<u8>(), 1usize..70_000).prop_map(|(b, n)| vec![b; n]),
            // Repeated arbitrary text: compressible, with matches at varied offsets.
            (fuzz::bytes(200), 1usize..300).prop_map(|(b, n)| b.repeat(n)),
        ]
        .prop_filter("blocks are never empty", |b| !b.is_empty());
        let blocks = proptest::collection::vec(block, 1..6);
        fuzz::check(fuzz::PURE / 10, blocks, |blocks| {
            let max = blocks.iter().map(Vec::len).max().unwrap_or(1);
            let mut enc = Lz4.encoder(max).unwrap();
            let mut out = Vec::new();
            for b in &blocks {
                let n = enc.encode(b, &mut out).unwrap();
                prop_assert!(decode(&out[..n], max) == *b, "a block of {} bytes changed", b.len());
            }
            Ok(())
        });
    }
}
