//! Tamp: a parallel compressor — one reader thread, N worker threads on fixed-size blocks, one
//! writer thread restoring their order — and the CPU-scaling experiment built on it (after the
//! original Tamp and the article "The Seduction of Single-Threaded Performance").
//!
//! - [`compress`] / [`decompress`]: LZ4 frames that stock `lz4 -d` reads, or one zstd frame per
//!   block that stock `zstd -d` reads; both decompress in parallel. Every run reports bytes,
//!   ratio, wall and CPU time, each thread's busy share and a [`Verdict`] on what limited it.
//! - [`corpus::write`]: a seeded, reproducible database-like text file to compress.
//! - [`scale`]: throughput against threads and against units (several pipelines at once), with
//!   per-CPU busy time from /proc/stat, and a summary of where one instance stops scaling and why.
//! - [`render`]: text tables; every result is `serde::Serialize` for JSON.
//! - [`chart`]: the report sections (`cpu scale`'s chart, which `report --full` draws too, and a
//!   compress run's); [`experiments`]: `compress` and `cpu scale` as the product runs them.
//!
//! ```no_run
//! use std::path::Path;
//! use std::sync::atomic::AtomicBool;
//! use tamp::{compress, CompressOptions, Format, Output};
//!
//! let stop = AtomicBool::new(false); // set it from a Ctrl-C handler to stop cleanly
//! let opts = CompressOptions { format: Format::Zstd, level: 1, threads: 4, ..Default::default() };
//! let r = compress(Path::new("db.dump"), &Output::File("db.dump.zst".into()), &opts, &stop)?;
//! print!("{}", tamp::render::run(&r));
//! # Ok::<(), tamp::TampError>(())
//! ```

pub mod chart;
mod clock;
pub mod codec;
mod compress;
pub mod corpus;
mod decompress;
mod error;
pub mod experiments;
mod input;
pub mod metrics;
mod output;
mod pipeline;
pub mod procstat;
mod queue;
pub mod render;
mod result;
pub mod scale;

pub use clock::online_cpus;
pub use codec::Format;
pub use compress::{
    compress, compress_reader, default_block, CompressOptions, DEFAULT_BLOCK, DEFAULT_ZSTD_BLOCK,
};
pub use decompress::{decompress, DecompressOptions, PARALLEL_FRAME_MAX, ZSTD_WINDOW_LOG_MAX};
pub use error::TampError;
pub use output::Output;
pub use result::{
    verdict, Operation, Round, RunResult, ThreadBusy, Verdict, VerdictInputs, BUSY, CPUS_FULL,
    WORKERS_STARVED,
};
