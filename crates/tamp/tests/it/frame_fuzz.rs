//! Fuzz-style property tests of the LZ4 and zstd frame readers (`decompress`): any input is an
//! `Ok` or an error — never a panic (nor a pipeline thread's panic turned into
//! [`TampError::Panicked`]) — and no single allocation is larger than the format allows, whatever
//! a header claims. Plus a round trip of arbitrary bytes.
//!
//! The largest allocation is measured by this binary's counting global allocator. It sees what
//! Rust allocates (tamp's buffers, lz4_flex's); the zstd library allocates its window in C, which
//! is bounded instead by [`tamp::ZSTD_WINDOW_LOG_MAX`] (a frame asking for more is refused: see
//! `zstd_window_over_the_limit_is_refused`).
//!
//! Pure tier: [`fuzz::PURE`] cases per target; live tier (`--ignored`): [`fuzz::LIVE`].

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Cursor;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use test_tier::live;

use tamp::codec::{Lz4, Zstd};
use tamp::{compress_reader, decompress, DecompressOptions, Output, TampError};
use test_support::fuzz::{self, proptest};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// Counts the largest single allocation request (alloc, alloc_zeroed, or the new size of a
/// realloc) since [`LARGEST`] was last reset.
struct Counting;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed unchanged to the system allocator; the counter is only read.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout (every allocation goes through it).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: as for `dealloc`; the caller's contract for `realloc` is passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One measuring test at a time: the largest allocation is process-wide.
static MEASURING: Mutex<()> = Mutex::new(());

static NO_STOP: AtomicBool = AtomicBool::new(false);

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;
/// What decompress allocates whatever the input: the serial decoder's 1 MiB buffer, the 256 KiB
/// read buffer, and small change.
const FIXED: usize = MIB + 256 * KIB + 64 * KIB;
/// LZ4: the largest block is 4 MiB; lz4_flex's decoder of linked blocks keeps two blocks and
/// the 64 KiB window in one buffer.
const LZ4_BOUND: usize = 2 * 4 * MIB + 64 * KIB + 64 * KIB;
const ZSTD_BLOCK_MAX: usize = 128 * KIB;

/// The most any zstd frame in `b` can decode to, walking the block headers as the format
/// defines them (raw and RLE blocks say their size; a compressed block gives at most 128 KiB).
/// Independent of tamp's reader: the oracle for the allocation bound. Frames after the first
/// damaged one are never decoded, so the walk stops there.
fn zstd_frame_bound(b: &[u8]) -> usize {
    let mut at = 0;
    let mut largest = 0;
    while let Some(m) = b.get(at..at + 4) {
        let magic = u32::from_le_bytes(m.try_into().unwrap());
        if magic & 0xFFFF_FFF0 == 0x184D_2A50 {
            let Some(s) = b.get(at + 4..at + 8) else { break };
            at += 8 + u32::from_le_bytes(s.try_into().unwrap()) as usize;
            continue;
        }
        if magic != 0xFD2F_B528 {
            break;
        }
        let Some(&d) = b.get(at + 4) else { break };
        let single = d & 0x20 != 0;
        let fcs = match (d >> 6, single) {
            (0, false) => 0,
            (0, true) => 1,
            (1, _) => 2,
            (2, _) => 4,
            _ => 8,
        };
        at += 4 + 1 + usize::from(!single) + [0, 1, 2, 4][usize::from(d & 3)] + fcs;
        let mut frame = 0;
        loop {
            let Some(h) = b.get(at..at + 3) else { return largest.max(frame) };
            let h = u32::from(h[0]) | u32::from(h[1]) << 8 | u32::from(h[2]) << 16;
            let size = (h >> 3) as usize;
            at += 3 + match (h >> 1) & 3 {
                0 => size,
                1 => 1,
                _ => size,
            };
            frame += if (h >> 1) & 3 == 2 { ZSTD_BLOCK_MAX } else { size };
            if h & 1 != 0 {
                break;
            }
        }
        at += if d & 4 != 0 { 4 } else { 0 };
        largest = largest.max(frame);
    }
    largest
}

/// Whether the first frame after any skippable ones is an LZ4 frame.
fn first_frame_is_lz4(b: &[u8]) -> bool {
    let mut at = 0;
    while let Some(m) = b.get(at..at + 4) {
        match u32::from_le_bytes(m.try_into().unwrap()) {
            0x184D_2204 => return true,
            m if m & 0xFFFF_FFF0 == 0x184D_2A50 => {
                let Some(s) = b.get(at + 4..at + 8) else { return false };
                at += 8 + u32::from_le_bytes(s.try_into().unwrap()) as usize;
            }
            _ => return false,
        }
    }
    false
}

/// Decompresses `bytes` (written to `dir`) to nowhere; returns the result and the largest
/// allocation made meanwhile.
fn decode(dir: &Path, bytes: &[u8]) -> (Result<tamp::RunResult, TampError>, usize) {
    let input = dir.join("in");
    std::fs::write(&input, bytes).unwrap();
    let opts = DecompressOptions { threads: 2, format: None };
    LARGEST.store(0, Ordering::Relaxed);
    let r = decompress(&input, &Output::Discard, &opts, &NO_STOP);
    (r, LARGEST.load(Ordering::Relaxed))
}

/// The property: an answer, never a panic, and allocations within what the format allows.
fn decodes_within_bounds(dir: &Path, bytes: &[u8]) -> Result<(), TestCaseError> {
    let (r, largest) = decode(dir, bytes);
    if let Err(TampError::Panicked(what)) = &r {
        return Err(TestCaseError::fail(format!("a {what} thread panicked")));
    }
    let bound = if first_frame_is_lz4(bytes) {
        LZ4_BOUND
    } else {
        // Each frame is read whole, then decoded into a buffer that may grow by doubling.
        FIXED + 2 * bytes.len() + 2 * zstd_frame_bound(bytes)
    };
    prop_assert!(largest <= bound, "allocated {largest} bytes at once (bound {bound}): {r:?}");
    Ok(())
}

/// Frames tamp writes (independent LZ4 blocks with block checksums; zstd frames with content
/// size and checksum, several per file) and stock files that take the serial path.
fn seeds() -> Vec<Vec<u8>> {
    let data = tamp::corpus::generate(3, 12_000);
    let mut out = Vec::new();
    let dir = fuzz::scratch_dir();
    for (codec, block) in [
        (&Lz4 as &dyn tamp::codec::Codec, 4096),
        (&Lz4, 100_000),
        (&Zstd::new(1).unwrap(), 4096),
        (&Zstd::new(19).unwrap(), 100_000),
    ] {
        for input in [&data[..], &data[..1], &[][..]] {
            let f = dir.path().join("seed");
            let _ = std::fs::remove_file(&f);
            compress_reader(
                Cursor::new(input.to_vec()),
                Path::new("seed"),
                &Output::File(f.clone()),
                codec,
                2,
                block,
                &NO_STOP,
            )
            .unwrap();
            out.push(std::fs::read(&f).unwrap());
        }
    }
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for name in ["linked-content-size.lz4", "stdin-no-size.zst"] {
        out.push(std::fs::read(fixtures.join(name)).unwrap());
    }
    out
}

fn frames(cases: u32) {
    let _g = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = fuzz::scratch_dir();
    let seeds = seeds();
    // Arbitrary bytes behind each magic number, so they reach the frame parsers.
    let magic = prop_oneof![
        Just(vec![0x04, 0x22, 0x4d, 0x18]),
        Just(vec![0x28, 0xb5, 0x2f, 0xfd]),
        Just(vec![0x50, 0x2a, 0x4d, 0x18]),
        Just(vec![]),
    ];
    let arbitrary = (magic, fuzz::bytes(512)).prop_map(|(mut m, b)| {
        m.extend(b);
        m
    });
    let input = prop_oneof![1 => arbitrary, 4 => fuzz::mutated(seeds)];
    fuzz::check(cases, input, |bytes| decodes_within_bounds(dir.path(), &bytes));
}

fn round_trip(cases: u32) {
    let dir = fuzz::scratch_dir();
    // Tiny blocks (a frame or block per byte or so) on short inputs, real block sizes on
    // longer ones, incompressible or a single repeated byte.
    let tiny = (fuzz::bytes(300), 1usize..=7);
    let long = (
        prop_oneof![
            fuzz::bytes(20_000),
            (any::<u8>(), 0usize..70_000).prop_map(|(b, n)| vec![b; n])
        ],
        prop_oneof![Just(4096usize), Just(65_536)],
    );
    let input = (prop_oneof![tiny, long], any::<bool>(), 1usize..=3);
    fuzz::check(cases, input, |((data, block), lz4, threads)| {
        let packed = dir.path().join("packed");
        let _ = std::fs::remove_file(&packed);
        let zstd = Zstd::new(3).unwrap();
        let codec: &dyn tamp::codec::Codec = if lz4 { &Lz4 } else { &zstd };
        let name = Path::new("data");
        let output = Output::File(packed.clone());
        compress_reader(Cursor::new(data.clone()), name, &output, codec, threads, block, &NO_STOP)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back = dir.path().join("back");
        let _ = std::fs::remove_file(&back);
        let opts = DecompressOptions { threads, format: None };
        decompress(&packed, &Output::File(back.clone()), &opts, &NO_STOP)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(std::fs::read(&back).unwrap() == data, "round trip changed the data");
        Ok(())
    });
}

#[test]
fn arbitrary_and_mutated_frames_are_an_answer_within_the_format_bounds() {
    frames(fuzz::PURE);
}

#[live("25 000 arbitrary and mutated frames (about a minute)")]
fn arbitrary_and_mutated_frames_are_an_answer_within_the_format_bounds_long() {
    frames(fuzz::LIVE / 2);
}

#[test]
fn arbitrary_bytes_round_trip() {
    round_trip(fuzz::PURE / 4);
}

#[live("10 000 round trips")]
fn arbitrary_bytes_round_trip_long() {
    round_trip(fuzz::LIVE / 5);
}

// ---- header claims, one each ----------------------------------------------------------------

fn lz4_header(flg: u8, bd: u8, extra: &[u8]) -> Vec<u8> {
    let mut desc = vec![flg, bd];
    desc.extend_from_slice(extra);
    let mut out = vec![0x04, 0x22, 0x4d, 0x18];
    out.extend_from_slice(&desc);
    out.push(tamp::codec::lz4_header_checksum(&desc));
    out
}

fn claim(bytes: &[u8]) -> (TampError, usize) {
    let _g = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = fuzz::scratch_dir();
    let (r, largest) = decode(dir.path(), bytes);
    (r.unwrap_err(), largest)
}

#[test]
fn lz4_block_size_field_claiming_2_gib_is_refused_before_allocating() {
    // Independent 64 KiB blocks; one block whose size field says 0x7fff_ffff.
    let mut b = lz4_header(0x60, 0x40, &[]);
    b.extend_from_slice(&0x7fff_ffffu32.to_le_bytes());
    b.extend_from_slice(b"abc");
    let (e, largest) = claim(&b);
    assert!(e.to_string().contains("an LZ4 block of 2147483647 bytes"), "{e}");
    assert!(largest <= FIXED, "{largest}");
}

#[test]
fn lz4_content_size_claiming_16_eib_allocates_nothing_for_it() {
    // Linked blocks (the serial decoder) and independent ones, content size u64::MAX, one
    // stored 3-byte block.
    for flg in [0x48, 0x68] {
        let mut b = lz4_header(flg, 0x40, &u64::MAX.to_le_bytes());
        b.extend_from_slice(&(3u32 | 0x8000_0000).to_le_bytes());
        b.extend_from_slice(b"abc");
        b.extend_from_slice(&[0, 0, 0, 0]);
        let (e, largest) = claim(&b);
        assert!(matches!(e, TampError::Corrupt { .. }), "{e:?}");
        assert!(largest <= FIXED + 2 * 64 * KIB + 64 * KIB, "{flg:#x}: {largest}");
    }
}

#[test]
fn zstd_content_size_claiming_more_than_its_blocks_hold_is_refused() {
    // Single segment, 4-byte content size 32 MiB (the parallel limit), one raw block of 3
    // bytes: the workers used to reserve 32 MiB from the claim alone.
    let mut b = vec![0x28, 0xb5, 0x2f, 0xfd, 0xa0];
    b.extend_from_slice(&(32u32 << 20).to_le_bytes());
    b.extend_from_slice(&[(3 << 3) | 1, 0, 0]);
    b.extend_from_slice(b"abc");
    let (e, largest) = claim(&b);
    assert!(e.to_string().contains("its blocks hold at most 3"), "{e}");
    assert!(largest <= FIXED, "{largest}");
}

#[test]
fn zstd_window_over_the_limit_is_refused() {
    // Window descriptor exponent 21 → 2^31 bytes; no content size (the serial path) and with
    // one (the parallel path), each with one empty raw block.
    for (fhd, fcs) in [(0x00u8, &[][..]), (0x40, &[0u8, 0][..])] {
        let mut b = vec![0x28, 0xb5, 0x2f, 0xfd, fhd, 21 << 3];
        b.extend_from_slice(fcs);
        b.extend_from_slice(&[1, 0, 0]);
        let (e, _) = claim(&b);
        let msg = e.to_string();
        assert!(matches!(e, TampError::UnknownFormat { .. }), "{fhd:#x}: {e:?}");
        assert!(msg.contains("window") && msg.contains("--memory"), "{msg}");
    }
}
