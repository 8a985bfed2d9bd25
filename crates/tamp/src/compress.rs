//! Compression: fixed-size blocks read in order, encoded by the workers, framed by the writer.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::codec::{codec_for, BlockEncoder, Codec, Format};
use crate::output::{Output, Target};
use crate::pipeline::{self, Sink, Source, Worker};
use crate::result::{Facts, Operation, RunResult};
use crate::TampError;

/// The default block size: 256 KiB, as the seed's Tamp.
pub const DEFAULT_BLOCK: usize = 256 << 10;

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
    let file =
        File::open(input).map_err(|source| TampError::Read { path: input.into(), source })?;
    compress_reader(file, input, output, codec.as_ref(), opts.threads, opts.block_size, stop)
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
    if block_size == 0 {
        return Err(TampError::Usage("the block size must be at least 1 byte".into()));
    }
    if threads == 0 {
        return Err(TampError::Usage("give at least 1 thread".into()));
    }
    let header = codec.header(block_size)?;
    let target = Target::open(output)?;
    let out_name = target.path().map(|p| p.display().to_string());
    let source = BlockSource { r: input, path: name.to_path_buf(), block: block_size, offset: 0 };
    let sink =
        FrameSink { target, header, trailer: codec.trailer(), empty: Some(codec.empty_body()?) };
    let stat0 = crate::procstat::read().ok();
    let cpu0 = crate::clock::process_cpu();
    let t0 = Instant::now();
    let out =
        pipeline::run(source, || codec.encoder(block_size).map(EncodeWorker), sink, threads, stop)?;
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

impl<R: Read + Send> Source for BlockSource<R> {
    type Meta = ();
    fn fill(&mut self, buf: &mut Vec<u8>) -> Result<Option<((), usize)>, TampError> {
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
        Ok(if n == 0 { None } else { Some(((), n)) })
    }
    fn bytes_read(&self) -> u64 {
        self.offset
    }
}

struct EncodeWorker(Box<dyn BlockEncoder>);

impl Worker<()> for EncodeWorker {
    fn work(&mut self, _: &(), input: &[u8], out: &mut Vec<u8>) -> Result<usize, TampError> {
        self.0.encode(input, out)
    }
}

struct FrameSink {
    target: Target,
    header: Vec<u8>,
    trailer: Vec<u8>,
    /// Written at the end if no block was (taken at the first block).
    empty: Option<Vec<u8>>,
}

impl Sink<()> for FrameSink {
    fn start(&mut self) -> Result<(), TampError> {
        let h = std::mem::take(&mut self.header);
        self.target.write(&h)
    }
    fn put(&mut self, _: &(), data: &[u8]) -> Result<(), TampError> {
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
