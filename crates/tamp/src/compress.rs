//! Compression: fixed-size blocks, encoded by the workers, framed in order by the writer.
//!
//! A regular file is read by the workers themselves, each block with `pread` into the worker's
//! own buffer just before it encodes it: the bytes land in the cache of the CPU that reads them
//! next. Read by a reader thread into circulating slots (what other inputs get), each block was
//! copied on one CPU and encoded on another, and the copy cost four times what the same copy
//! costs into a buffer that stays on one CPU (profile: the reader's `read` ran at about 1 GB/s,
//! `dd` of the same tmpfs file at 4–5 GB/s).

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use crate::codec::{codec_for, BlockEncoder, Codec, Format};
use crate::output::{Output, Target};
use crate::pipeline::{self, line_aligned, Sink, Source, Worker};
use crate::result::{Facts, Operation, RunResult};
use crate::TampError;

/// The default block size: 256 KiB, as the original Tamp's.
pub const DEFAULT_BLOCK: usize = 256 << 10;

/// The default zstd frame size: 2 MiB, as `pzstd -1` cuts its input (four windows of level 1).
/// zstd picks its parameters for a frame's size: 256 KiB frames came out 1.6% smaller on the
/// bench corpus but compressed 0.84–1.0× as fast as pzstd's, 2 MiB ones as small as pzstd's and
/// 1.01–1.10× as fast (2-vCPU EPYC VM, 512 MiB, 4 interleaved rounds at load 0.0–0.9).
pub const DEFAULT_ZSTD_BLOCK: usize = 2 << 20;

/// The default block size for `format`.
pub fn default_block(format: Format) -> usize {
    match format {
        Format::Lz4 => DEFAULT_BLOCK,
        Format::Zstd => DEFAULT_ZSTD_BLOCK,
    }
}

/// How to compress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressOptions {
    /// lz4 or zstd.
    pub format: Format,
    /// zstd level (ignored for lz4).
    pub level: i32,
    /// Worker threads (the reader and the writer come on top).
    pub threads: usize,
    /// Uncompressed bytes per block.
    pub block_size: usize,
}

impl Default for CompressOptions {
    fn default() -> Self {
        Self {
            format: Format::Lz4,
            level: 1,
            threads: crate::clock::online_cpus(),
            block_size: DEFAULT_BLOCK,
        }
    }
}

/// Compresses the file `input` to `output`.
pub fn compress(
    input: &Path,
    output: &Output,
    opts: &CompressOptions,
    stop: &AtomicBool,
) -> Result<RunResult, TampError> {
    let codec = codec_for(opts.format, opts.level)?;
    let read_error = |source| TampError::Read { path: input.into(), source };
    let file = crate::input::open(input).map_err(read_error)?;
    let metadata = file.metadata().map_err(read_error)?;
    if !metadata.is_file() {
        // A pipe or a device: read in order by the reader thread, which sees a stop while the
        // input is silent.
        return compress_reader(
            crate::input::Watched::new(file, stop).map_err(read_error)?,
            input,
            output,
            codec.as_ref(),
            opts.threads,
            opts.block_size,
            stop,
        );
    }
    check_args(opts.threads, opts.block_size)?;
    let file = Arc::new(file);
    let source = FileBlocks {
        file: Arc::clone(&file),
        path: input.to_path_buf(),
        size: metadata.len(),
        block: opts.block_size,
        offset: 0,
    };
    let job = Job {
        name: input,
        output,
        codec: codec.as_ref(),
        threads: opts.threads,
        block_size: opts.block_size,
        stop,
    };
    compress_source(source, Some((file, input.to_path_buf())), &job)
}

fn check_args(threads: usize, block_size: usize) -> Result<(), TampError> {
    if block_size == 0 {
        return Err(TampError::Usage("the block size must be at least 1 byte".into()));
    }
    if threads == 0 {
        return Err(TampError::Usage("give at least 1 thread".into()));
    }
    Ok(())
}

/// Compresses any reader (`name` is used in errors and the result) with any [`Codec`]: how the
/// scale experiment and the tests drive the pipeline with in-memory input, a throttled reader or
/// the sleeping codec.
pub fn compress_reader<R: Read + Send>(
    input: R,
    name: &Path,
    output: &Output,
    codec: &dyn Codec,
    threads: usize,
    block_size: usize,
    stop: &AtomicBool,
) -> Result<RunResult, TampError> {
    check_args(threads, block_size)?;
    let source = BlockSource { r: input, path: name.to_path_buf(), block: block_size, offset: 0 };
    compress_source(source, None, &Job { name, output, codec, threads, block_size, stop })
}

/// What both entry points ask for.
struct Job<'a> {
    name: &'a Path,
    output: &'a Output,
    codec: &'a dyn Codec,
    threads: usize,
    block_size: usize,
    stop: &'a AtomicBool,
}

/// Runs the pipeline from `source`; `file` is the input the workers read `Block::At` blocks
/// from (with its path, for errors).
fn compress_source<S: Source<Meta = Block>>(
    source: S,
    file: Option<(Arc<File>, PathBuf)>,
    job: &Job<'_>,
) -> Result<RunResult, TampError> {
    let Job { name, output, codec, threads, block_size, stop } = *job;
    let header = codec.header(block_size)?;
    let target = Target::open(output)?;
    let out_name = target.name();
    let sink =
        FrameSink { target, header, trailer: codec.trailer(), empty: Some(codec.empty_body()?) };
    let stat0 = crate::procstat::read().ok();
    let cpu0 = crate::clock::process_cpu();
    let t0 = Instant::now();
    let make_worker = || {
        let encoder = codec.encoder(block_size)?;
        Ok(EncodeWorker { encoder, file: file.clone(), buf: Vec::new() })
    };
    let out = pipeline::run(source, make_worker, sink, threads, Some(block_size), stop)?;
    let mut sink = out.sink;
    let bytes_out = sink.target.written;
    if !out.interrupted {
        sink.target.commit()?;
    }
    let wall = t0.elapsed();
    let cpu1 = crate::clock::process_cpu();
    let machine =
        stat0.zip(crate::procstat::read().ok()).map(|(a, b)| crate::procstat::delta(&a, &b));
    // An interrupted run's temporary file is removed when `sink` drops.
    let bytes_in = out.bytes_in;
    Ok(RunResult::build(Facts {
        operation: Operation::Compress,
        format: codec.name().to_string(),
        level: codec.level(),
        input: name.display().to_string(),
        output: if out.interrupted { None } else { out_name },
        threads,
        block_size,
        blocks: out.units,
        bytes_in,
        bytes_out,
        wall,
        cpu: (cpu1.0.saturating_sub(cpu0.0), cpu1.1.saturating_sub(cpu0.1)),
        times: out.threads,
        parallel: true,
        serial_reason: None,
        interrupted: out.interrupted,
        machine,
    }))
}

struct BlockSource<R> {
    r: R,
    path: PathBuf,
    block: usize,
    offset: u64,
}

/// Where a block's bytes are.
#[derive(Debug, Clone, Copy)]
enum Block {
    /// In the slot: the reader thread read it.
    InSlot,
    /// In the input file, for the worker to read.
    At { offset: u64, len: usize },
}

/// A regular file's blocks by position; the workers read them. The size is taken at the start
/// and again when the blocks run out, so bytes appended meanwhile are compressed, as a reader
/// reading to the end would.
struct FileBlocks {
    file: Arc<File>,
    path: PathBuf,
    size: u64,
    block: usize,
    offset: u64,
}

impl Source for FileBlocks {
    type Meta = Block;
    fn fill(&mut self, _: &mut Vec<u8>) -> Result<Option<(Block, usize)>, TampError> {
        if self.offset >= self.size {
            let metadata = self
                .file
                .metadata()
                .map_err(|source| TampError::Read { path: self.path.clone(), source })?;
            self.size = metadata.len();
            if self.offset >= self.size {
                return Ok(None);
            }
        }
        let len = (self.size - self.offset).min(self.block as u64) as usize;
        let at = Block::At { offset: self.offset, len };
        self.offset += len as u64;
        Ok(Some((at, 0)))
    }
    fn bytes_read(&self) -> u64 {
        self.offset
    }
}

impl<R: Read + Send> Source for BlockSource<R> {
    type Meta = Block;
    fn fill(&mut self, buf: &mut Vec<u8>) -> Result<Option<(Block, usize)>, TampError> {
        if buf.len() < self.block {
            buf.resize(self.block, 0);
        }
        let mut n = 0;
        while n < self.block {
            match self.r.read(&mut buf[n..self.block]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(source) => return Err(TampError::Read { path: self.path.clone(), source }),
            }
        }
        self.offset += n as u64;
        Ok(if n == 0 { None } else { Some((Block::InSlot, n)) })
    }
    fn bytes_read(&self) -> u64 {
        self.offset
    }
}

struct EncodeWorker {
    encoder: Box<dyn BlockEncoder>,
    /// The input file, for blocks the worker reads itself.
    file: Option<(Arc<File>, PathBuf)>,
    /// This worker's read buffer: stays in its CPU's cache between the read and the encode.
    buf: Vec<u8>,
}

impl Worker<Block> for EncodeWorker {
    fn work(&mut self, block: &Block, input: &[u8], out: &mut Vec<u8>) -> Result<usize, TampError> {
        match (*block, &self.file) {
            (Block::InSlot, _) => self.encoder.encode(input, out),
            (Block::At { offset, len }, Some((file, path))) => {
                let block = read_block(file, path, offset, len, &mut self.buf)?;
                self.encoder.encode(block, out)
            }
            (Block::At { .. }, None) => Err(TampError::Codec {
                format: "tamp",
                detail: "a positioned block without an input file (a bug)".into(),
            }),
        }
    }
}

/// Reads `len` bytes at `offset` into `buf` and returns them; a file that ends before them
/// shrank while it was being compressed, which is an error (its blocks would not add up to any
/// one version of it). The bytes go to a line-aligned window of `buf` ([`line_aligned`]).
fn read_block<'b>(
    file: &File,
    path: &Path,
    offset: u64,
    len: usize,
    buf: &'b mut Vec<u8>,
) -> Result<&'b [u8], TampError> {
    let start = line_aligned(buf, len);
    let dest = &mut buf[start..start + len];
    let mut n = 0;
    while n < len {
        match file.read_at(&mut dest[n..], offset + n as u64) {
            Ok(0) => {
                let shrank = std::io::Error::new(
                    ErrorKind::UnexpectedEof,
                    format!(
                        "the file ended at byte {} while it was being compressed (it shrank)",
                        offset + n as u64
                    ),
                );
                return Err(TampError::Read { path: path.to_path_buf(), source: shrank });
            }
            Ok(k) => n += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(source) => return Err(TampError::Read { path: path.to_path_buf(), source }),
        }
    }
    Ok(dest)
}

struct FrameSink {
    target: Target,
    header: Vec<u8>,
    trailer: Vec<u8>,
    /// Written at the end if no block was (taken at the first block).
    empty: Option<Vec<u8>>,
}

impl Sink<Block> for FrameSink {
    fn start(&mut self) -> Result<(), TampError> {
        let h = std::mem::take(&mut self.header);
        self.target.write(&h)
    }
    fn put(&mut self, _: &Block, data: &[u8]) -> Result<(), TampError> {
        self.empty = None;
        self.target.write(data)
    }
    fn finish(&mut self) -> Result<(), TampError> {
        if let Some(e) = self.empty.take() {
            self.target.write(&e)?;
        }
        let t = std::mem::take(&mut self.trailer);
        self.target.write(&t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    static NO_STOP: AtomicBool = AtomicBool::new(false);

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 / 5 % 251) as u8 ^ (i >> 9) as u8).collect()
    }

    /// A file read by the workers gives the same bytes, block for block, as the same file read
    /// in order by the reader thread, for any thread count and block size.
    #[test]
    fn workers_reading_the_file_write_what_the_reader_thread_writes() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in");
        std::fs::write(&input, data(1_000_003)).unwrap();
        for format in [Format::Lz4, Format::Zstd] {
            for (threads, block) in [(1, 65_536), (3, 100_000), (2, 4 << 20)] {
                let opts = CompressOptions { format, level: 1, threads, block_size: block };
                let by_workers = dir.path().join("w");
                let r =
                    compress(&input, &Output::File(by_workers.clone()), &opts, &NO_STOP).unwrap();
                assert_eq!(r.bytes_in, 1_000_003);
                let by_reader = dir.path().join("r");
                let codec = codec_for(format, 1).unwrap();
                let file = File::open(&input).unwrap();
                compress_reader(
                    file,
                    &input,
                    &Output::File(by_reader.clone()),
                    codec.as_ref(),
                    threads,
                    block,
                    &NO_STOP,
                )
                .unwrap();
                assert_eq!(std::fs::read(&by_workers).unwrap(), std::fs::read(&by_reader).unwrap());
            }
        }
    }

    #[test]
    fn a_file_that_grows_is_read_to_its_new_end_and_one_that_shrank_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("grows");
        std::fs::write(&path, data(100)).unwrap();
        let file = Arc::new(File::open(&path).unwrap());
        let mut blocks = FileBlocks {
            file: Arc::clone(&file),
            path: path.clone(),
            size: 100,
            block: 64,
            offset: 0,
        };
        let mut buf = Vec::new();
        let lens = |b: Option<(Block, usize)>| match b {
            Some((Block::At { offset, len }, 0)) => Some((offset, len)),
            _ => None,
        };
        assert_eq!(lens(blocks.fill(&mut buf).unwrap()), Some((0, 64)));
        assert_eq!(lens(blocks.fill(&mut buf).unwrap()), Some((64, 36)));
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(&data(50)).unwrap();
        assert_eq!(lens(blocks.fill(&mut buf).unwrap()), Some((100, 50)));
        assert!(blocks.fill(&mut buf).unwrap().is_none());
        assert_eq!(blocks.bytes_read(), 150);

        let block = read_block(&file, &path, 100, 50, &mut buf).unwrap();
        assert_eq!(block, &data(50)[..]);
        assert_eq!(block.as_ptr() as usize % 64, 0, "read to a line boundary");
        let e = read_block(&file, &path, 120, 64, &mut buf).unwrap_err().to_string();
        assert!(e.contains("shrank") && e.contains("150"), "{e}");
    }
}
