//! Round trips through stock lz4/zstd and tamp's own parallel decompressor, and the LZ4 frame
//! bytes checked against the frame spec.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use crate::common;

use std::path::Path;

use common::{corpus, tool, NO_STOP};
use tamp::{compress, decompress, CompressOptions, DecompressOptions, Format, Output};

fn compress_file(
    dir: &Path,
    data: &[u8],
    format: Format,
    threads: usize,
    block: usize,
) -> std::path::PathBuf {
    let input = dir.join("in");
    std::fs::write(&input, data).unwrap();
    let out = dir.join(format!("in.{format}"));
    let opts = CompressOptions { format, level: 1, threads, block_size: block };
    let r = compress(&input, &Output::File(out.clone()), &opts, &NO_STOP).unwrap();
    assert_eq!(r.bytes_in, data.len() as u64);
    assert_eq!(r.bytes_out, std::fs::metadata(&out).unwrap().len());
    assert!(!r.interrupted);
    out
}

fn ours(path: &Path, threads: usize) -> (Vec<u8>, tamp::RunResult) {
    let out = path.with_extension("out");
    let opts = DecompressOptions { threads, format: None };
    let r = decompress(path, &Output::File(out.clone()), &opts, &NO_STOP).unwrap();
    let data = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    (data, r)
}

/// Sizes: empty, one byte, one block exactly, and not a multiple of the block size.
const SIZES: &[usize] = &[0, 1, 65_536, 3 * 65_536 + 12_345];

/// `n` bytes of SplitMix64 output (seeded `seed`): nothing repeats, so LZ4 cannot shorten it.
fn random_from(seed: u64, n: usize) -> Vec<u8> {
    let mut rng = measure::rng::SplitMix64::new(seed);
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(n);
    v
}

fn random(n: usize) -> Vec<u8> {
    random_from(0x9e37_79b9_7f4a_7c15, n)
}

#[test]
fn lz4_round_trips_through_stock_lz4_and_tamp() {
    let b = 65_536;
    let mut cases: Vec<(String, Vec<u8>, usize)> =
        SIZES.iter().map(|&n| (format!("corpus {n}"), corpus(n), b)).collect();
    cases.extend([
        // Shorter than a match can be, and short blocks that do compress (tiny blocks keep
        // liblz4's hash table between blocks: its state is reused without a full reset).
        ("11 bytes".into(), b"hello hello".to_vec(), b),
        ("tiny blocks".into(), b"abcabcabcabcabcabcabcabcabcabcabc".repeat(200), 100),
        ("random".into(), random(3 * b + 77), b),
        ("zeros".into(), vec![0; 3 * b + 77], b),
        // Block-size boundaries: one short, one over, two blocks exactly.
        ("corpus block-1".into(), corpus(b - 1), b),
        ("corpus block+1".into(), corpus(b + 1), b),
        ("corpus 2 blocks".into(), corpus(2 * b), b),
        // Random then compressible within one block, and the other way round.
        ("mixed".into(), [random(b / 2), vec![7; b], random(b / 2)].concat(), b),
        // The largest LZ4 block (4 MiB), full and then partial.
        ("corpus 4 MiB blocks".into(), corpus((4 << 20) + 12_345), 4 << 20),
    ]);
    for (name, data, block) in &cases {
        let dir = tempfile::tempdir().unwrap();
        let f = compress_file(dir.path(), data, Format::Lz4, 3, *block);
        let p = f.to_str().unwrap();
        assert_eq!(tool("lz4", &["-d", "-c", p]), *data, "lz4 -d, {name}");
        let (back, r) = ours(&f, 3);
        assert_eq!(back, *data, "tamp decompress, {name}");
        assert!(r.parallel, "{name}: {:?}", r.serial_reason);
        assert_eq!(r.bytes_out, data.len() as u64);
        // Each kind of input gets the block it should: random bytes are stored as they are,
        // zeros shrink to almost nothing.
        let packed = std::fs::metadata(&f).unwrap().len() as usize;
        let framing = 7 + 8 * data.len().div_ceil(*block) + 4;
        match name.as_str() {
            "random" => assert_eq!(packed, framing + data.len(), "{name}: stored blocks"),
            "zeros" => assert!(packed < framing + data.len() / 100, "{name}: {packed} bytes"),
            _ => assert!(packed <= framing + data.len(), "{name}: {packed} bytes"),
        }
    }
}

#[test]
fn zstd_round_trips_through_stock_zstd_and_tamp() {
    for &n in SIZES {
        let dir = tempfile::tempdir().unwrap();
        let data = corpus(n);
        let f = compress_file(dir.path(), &data, Format::Zstd, 3, 65_536);
        let p = f.to_str().unwrap();
        assert_eq!(tool("zstd", &["-d", "-c", "-q", p]), data, "zstd -d, {n} bytes");
        let (back, r) = ours(&f, 3);
        assert_eq!(back, data, "tamp decompress, {n} bytes");
        assert!(r.parallel, "{n} bytes: {:?}", r.serial_reason);
        // One frame per block (and one empty frame for empty input, which zstd -d needs).
        assert_eq!(r.blocks, (n.div_ceil(65_536)).max(1) as u64, "{n} bytes");
    }
}

#[test]
fn lz4_frame_bytes_follow_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    // Incompressible (no repeat within 64 KiB of SplitMix64 output) then compressible.
    let mut data = random_from(0x1234_5678_9abc_def0, 65_536);
    data.extend(std::iter::repeat_n(b'a', 1000));
    let f = compress_file(dir.path(), &data, Format::Lz4, 2, 65_536);
    let b = std::fs::read(&f).unwrap();
    assert_eq!(&b[..4], &[0x04, 0x22, 0x4D, 0x18], "magic");
    assert_eq!(b[4], 0x70, "FLG: version 01, independent blocks, block checksums");
    assert_eq!(b[5], 0x40, "BD: 64 KiB block maximum");
    // The header checksum byte the reference implementation wrote for FLG 0x64 BD 0x40 (lz4 1.9.4,
    // `printf '' | lz4 -1 | xxd`) is 0xa7: the same function must give it.
    assert_eq!(tamp::codec::lz4_header_checksum(&[0x64, 0x40]), 0xa7);
    assert_eq!(b[6], tamp::codec::lz4_header_checksum(&[0x70, 0x40]));
    // First block: random data does not compress → stored, high bit set, 65536 bytes.
    let size0 = u32::from_le_bytes(b[7..11].try_into().unwrap());
    assert_eq!(size0, 0x8000_0000 | 65_536);
    assert_eq!(&b[11..11 + 65_536], &data[..65_536]);
    let sum0 = u32::from_le_bytes(b[11 + 65_536..15 + 65_536].try_into().unwrap());
    assert_eq!(sum0, xxhash_rust::xxh32::xxh32(&data[..65_536], 0), "block checksum");
    // Second block: 1000 × 'a' compresses; high bit clear.
    let at = 15 + 65_536;
    let size1 = u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert!(size1 < 100, "{size1:#x}");
    // End mark, no content checksum.
    assert_eq!(b.len(), at + 4 + size1 as usize + 4 + 4);
    assert_eq!(&b[b.len() - 4..], &[0, 0, 0, 0]);
    assert_eq!(tool("lz4", &["-d", "-c", f.to_str().unwrap()]), data);
}

#[test]
fn empty_lz4_is_header_and_end_mark() {
    let dir = tempfile::tempdir().unwrap();
    let f = compress_file(dir.path(), &[], Format::Lz4, 1, 256 << 10);
    let b = std::fs::read(&f).unwrap();
    assert_eq!(b.len(), 7 + 4);
    assert_eq!(&b[4..6], &[0x70, 0x50], "256 KiB blocks by default");
    assert_eq!(&b[7..], &[0, 0, 0, 0]);
}

#[test]
fn one_byte_lz4_is_a_stored_block() {
    let dir = tempfile::tempdir().unwrap();
    let f = compress_file(dir.path(), b"x", Format::Lz4, 1, 256 << 10);
    let b = std::fs::read(&f).unwrap();
    assert_eq!(&b[7..11], &(0x8000_0001u32).to_le_bytes());
    assert_eq!(b[11], b'x');
}

#[test]
fn stock_files_decompress_in_parallel_or_say_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let small = corpus(1_500_000);
    // pzstd -1 cuts about 2 MB frames (12 MB gave 6 here): 5 MB gives several.
    let big = corpus(5_000_000);
    let cases: &[(&str, &[&str], &[u8], bool)] = &[
        // lz4 1.9.4's default: independent blocks and a content checksum; its default 4 MiB
        // blocks would hold all of this input in one, so 64 KiB blocks (-B4).
        ("in.lz4", &["lz4", "-1", "-B4", "-q", "-f"], &small, true),
        // ... and with the default block size: one block, nothing to split.
        ("in.4m.lz4", &["lz4", "-1", "-q", "-f"], &small, false),
        // Linked blocks (FLG 0x44; lz4 1.9.4 needs -BD before -B4 to keep it): one thread.
        ("in.linked.lz4", &["lz4", "-1", "-BD", "-B4", "-q", "-f"], &small, false),
        // zstd -T: one frame.
        ("in.T.zst", &["zstd", "-1", "-T2", "-q", "-f"], &big, false),
        // pzstd: a skippable size marker before each frame; frames without a content size.
        ("in.p.zst", &["pzstd", "-1", "-p", "2", "-q", "-f"], &big, true),
    ];
    for (name, cmd, data, parallel) in cases {
        let input = dir.path().join(format!("{name}.in"));
        std::fs::write(&input, data).unwrap();
        let i = input.to_str().unwrap();
        let out = dir.path().join(name);
        let mut args: Vec<&str> = cmd[1..].to_vec();
        // lz4 takes the output as a second name, the others with -o.
        if cmd[0] == "lz4" {
            args.extend([i, out.to_str().unwrap()]);
        } else {
            args.extend([i, "-o", out.to_str().unwrap()]);
        }
        tool(cmd[0], &args);
        let (back, r) = ours(&out, 2);
        assert_eq!(&back[..], &data[..], "{name}");
        assert_eq!(r.parallel, *parallel, "{name}: {:?}", r.serial_reason);
        if *parallel {
            assert!(r.blocks > 1, "{name}");
        } else {
            assert!(r.serial_reason.is_some());
            assert_eq!(r.verdict, tamp::Verdict::SingleThreaded);
        }
    }
}

#[test]
fn results_serialise_and_render() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::write(&input, corpus(300_000)).unwrap();
    let opts = CompressOptions { threads: 2, ..Default::default() };
    let r = compress(&input, &Output::Discard, &opts, &NO_STOP).unwrap();
    assert_eq!(r.output, None);
    assert!(r.bytes_out > 0 && r.bytes_out < r.bytes_in);
    assert_eq!(r.thread_busy.len(), 4, "reader, 2 workers, writer");
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(j["format"], "lz4");
    assert!(j["verdict"].is_string());
    assert!(j["thread_busy"][1]["busy_share"].is_number());
    let text = tamp::render::run(&r);
    assert!(text.contains("worker 1") && text.contains("verdict:"), "{text}");
    assert!(std::fs::read_dir(dir.path()).unwrap().count() == 1, "discard wrote nothing");
}
