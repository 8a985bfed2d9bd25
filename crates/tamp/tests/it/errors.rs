//! Bad input and bad output: clear typed errors naming the file and the offset, and nothing
//! half-written left behind.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use common::{corpus, names, NO_STOP};
use tamp::{
    compress, compress_reader, decompress, CompressOptions, DecompressOptions, Format, Output,
    TampError,
};

fn make(dir: &Path, format: Format) -> (PathBuf, Vec<u8>) {
    let data = corpus(600_000);
    let input = dir.join("in");
    std::fs::write(&input, &data).unwrap();
    let out = dir.join(format!("c.{format}"));
    let opts = CompressOptions { format, level: 1, threads: 2, block_size: 65_536 };
    compress(&input, &Output::File(out.clone()), &opts, &NO_STOP).unwrap();
    std::fs::remove_file(&input).unwrap();
    (out, std::fs::read(dir.join(format!("c.{format}"))).unwrap())
}

fn decompress_to(dir: &Path, input: &Path) -> Result<tamp::RunResult, TampError> {
    let opts = DecompressOptions { threads: 2, format: None };
    decompress(input, &Output::File(dir.join("out")), &opts, &NO_STOP)
}

#[test]
fn truncated_input_names_file_and_offset_and_leaves_nothing() {
    for format in [Format::Lz4, Format::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let (f, bytes) = make(dir.path(), format);
        let cut = bytes.len() / 2;
        std::fs::write(&f, &bytes[..cut]).unwrap();
        let e = decompress_to(dir.path(), &f).unwrap_err();
        match &e {
            TampError::Truncated { path, offset, .. } => {
                assert_eq!(path, &f);
                assert_eq!(*offset, cut as u64, "{format}");
            }
            other => panic!("{format}: expected Truncated, got {other:?}"),
        }
        let msg = e.to_string();
        assert!(msg.contains(&f.display().to_string()) && msg.contains("truncated"), "{msg}");
        assert_eq!(names(dir.path()), vec![format!("c.{format}")], "{format}: nothing left behind");
    }
}

#[test]
fn truncated_lz4_without_end_mark_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (f, bytes) = make(dir.path(), Format::Lz4);
    std::fs::write(&f, &bytes[..bytes.len() - 4]).unwrap();
    let e = decompress_to(dir.path(), &f).unwrap_err();
    assert!(matches!(e, TampError::Truncated { .. }), "{e:?}");
    assert_eq!(names(dir.path()), vec!["c.lz4".to_string()]);
}

#[test]
fn corrupted_block_is_caught_by_its_checksum() {
    for format in [Format::Lz4, Format::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let (f, mut bytes) = make(dir.path(), format);
        let at = bytes.len() / 2;
        bytes[at] ^= 0x55;
        std::fs::write(&f, &bytes).unwrap();
        let e = decompress_to(dir.path(), &f).unwrap_err();
        match &e {
            TampError::Corrupt { path, offset, .. } => {
                assert_eq!(path, &f);
                // The offset is that of the block or frame holding the damaged byte.
                assert!(
                    *offset <= at as u64 && at as u64 - *offset < 70_000,
                    "{format}: {offset} vs {at}"
                );
            }
            other => panic!("{format}: expected Corrupt, got {other:?}"),
        }
        assert!(e.to_string().contains("corrupt at byte"), "{e}");
        assert_eq!(names(dir.path()), vec![format!("c.{format}")], "{format}: nothing left behind");
    }
}

#[test]
fn not_a_compressed_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("plain");
    std::fs::write(&f, b"hello, this is text").unwrap();
    let e = decompress_to(dir.path(), &f).unwrap_err();
    assert!(matches!(e, TampError::UnknownFormat { .. }), "{e:?}");
    std::fs::write(&f, [0x1f, 0x8b, 8, 0, 0, 0]).unwrap();
    let e = decompress_to(dir.path(), &f).unwrap_err();
    assert!(e.to_string().contains("pigz"), "{e}");
    assert_eq!(names(dir.path()), vec!["plain".to_string()]);
}

/// A directory this process cannot create files in. Root ignores mode 0555, so as root this is
/// /sys (sysfs refuses new files to everyone).
fn unwritable_dir(tmp: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let d = tmp.join("ro");
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::write(d.join("probe"), b"x").is_ok() {
        std::fs::remove_file(d.join("probe")).unwrap();
        eprintln!(
            "running as root: mode 0555 does not stop us; using /sys as the unwritable directory"
        );
        return PathBuf::from("/sys");
    }
    d
}

#[test]
fn unwritable_output_directory_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    std::fs::write(&input, corpus(10_000)).unwrap();
    let dir = unwritable_dir(tmp.path());
    let out = dir.join("x.lz4");
    let e = compress(&input, &Output::File(out.clone()), &CompressOptions::default(), &NO_STOP)
        .unwrap_err();
    match &e {
        TampError::CreateOutput { dir: d, .. } => assert_eq!(d, &dir),
        other => panic!("expected CreateOutput, got {other:?}"),
    }
    assert!(e.to_string().contains("writable directory"), "{e}");
    assert!(!out.exists());
}

#[test]
fn missing_input_is_a_clear_error() {
    let e = compress(
        Path::new("/nonexistent/tamp-input"),
        &Output::Discard,
        &CompressOptions::default(),
        &NO_STOP,
    )
    .unwrap_err();
    assert!(
        matches!(e, TampError::Read { .. }) && e.to_string().contains("/nonexistent/tamp-input")
    );
}

/// Sets the stop flag after `after` reads: a Ctrl-C in the middle of a run.
struct StopAfter<'a> {
    data: &'a [u8],
    reads: usize,
    after: usize,
    stop: &'a AtomicBool,
}

impl std::io::Read for StopAfter<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.reads += 1;
        if self.reads == self.after {
            self.stop.store(true, Ordering::SeqCst);
        }
        self.data.read(buf)
    }
}

#[test]
fn a_stop_ends_cleanly_without_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = corpus(2_000_000);
    let stop = AtomicBool::new(false);
    let r = StopAfter { data: &data, reads: 0, after: 3, stop: &stop };
    let out = dir.path().join("x.lz4");
    let res = compress_reader(
        r,
        Path::new("(test)"),
        &Output::File(out),
        &tamp::codec::Lz4,
        2,
        65_536,
        &stop,
    )
    .unwrap();
    assert!(res.interrupted);
    assert_eq!(res.output, None);
    assert!(res.bytes_in >= 3 * 65_536 && res.bytes_in < data.len() as u64, "{}", res.bytes_in);
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
}

#[test]
fn bad_options_are_usage_errors() {
    let e = tamp::codec::Zstd::new(99).unwrap_err();
    assert!(matches!(e, TampError::Usage(_)) && e.to_string().contains("out of range"));
    let opts = CompressOptions { block_size: 8 << 20, ..Default::default() };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::write(&input, b"x").unwrap();
    let e = compress(&input, &Output::Discard, &opts, &NO_STOP).unwrap_err();
    assert!(e.to_string().contains("4 MiB"), "{e}");
}

/// A codec that panics on its third block: the run must end with an error, not hang.
#[derive(Debug)]
struct PanicOnThird;

struct PanicEncoder(usize);

impl tamp::codec::BlockEncoder for PanicEncoder {
    fn encode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, TampError> {
        self.0 += 1;
        assert!(self.0 < 3, "deliberate panic in a test codec");
        out.clear();
        out.extend_from_slice(input);
        Ok(input.len())
    }
}

impl tamp::codec::Codec for PanicOnThird {
    fn name(&self) -> &'static str {
        "panic"
    }
    fn header(&self, _: usize) -> Result<Vec<u8>, TampError> {
        Ok(Vec::new())
    }
    fn trailer(&self) -> Vec<u8> {
        Vec::new()
    }
    fn encoder(&self, _: usize) -> Result<Box<dyn tamp::codec::BlockEncoder>, TampError> {
        Ok(Box::new(PanicEncoder(0)))
    }
}

#[test]
fn a_panicking_codec_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let data = vec![0u8; 64 * 4096];
    let out = dir.path().join("x");
    let e = compress_reader(
        &data[..],
        Path::new("(test)"),
        &Output::File(out),
        &PanicOnThird,
        1,
        4096,
        &NO_STOP,
    )
    .unwrap_err();
    assert!(matches!(e, TampError::Panicked("worker")), "{e:?}");
    assert!(names(dir.path()).is_empty());
}

#[test]
fn a_stop_before_decompressing_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let (f, _) = make(dir.path(), Format::Zstd);
    let stop = AtomicBool::new(true);
    let opts = DecompressOptions { threads: 2, format: None };
    let r = decompress(&f, &Output::File(dir.path().join("out")), &opts, &stop).unwrap();
    assert!(r.interrupted && r.output.is_none());
    assert_eq!(names(dir.path()), vec!["c.zstd".to_string()]);
    // The one-thread path (a streamed frame that does not record its size) stops the same way.
    let data = corpus(600_000);
    let one = dir.path().join("one.zst");
    let mut enc = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
    std::io::Write::write_all(&mut enc, &data).unwrap();
    std::fs::write(&one, enc.finish().unwrap()).unwrap();
    let _ = std::fs::remove_file(&f);
    let opts = DecompressOptions { threads: 2, format: Some(Format::Zstd) };
    let r = decompress(&one, &Output::File(dir.path().join("out")), &opts, &stop).unwrap();
    assert!(r.interrupted && !r.parallel, "{r:?}");
    assert_eq!(names(dir.path()), vec!["one.zst".to_string()]);
}
