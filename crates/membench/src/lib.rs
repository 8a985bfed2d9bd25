//! membench: how fast is memory from here, and from there — and what does locality cost?
//!
//! - [`latency`]: idle load-to-use latency by a prefetch-defeating pointer chase (sizes, sweeps,
//!   node×node matrices); [`loaded`]: latency while other threads load memory.
//! - [`bandwidth`]: read, write, non-temporal, copy and triad kernels ([`kernels`]), per thread
//!   and aggregate, scaling and node×node matrices; [`thread_read`] (cross-node reads).
//! - [`slb`]: the Silly Little Benchmark and its kit ([`kit`]: create_sem, memhammer, trigger);
//!   [`scenarios`]: the experiments built from it (worker counts, placement policies);
//!   [`slb_rounds`]: their steps in rounds, each judged against the first.
//! - [`timers`]: what reading the clock costs and which clock to trust.
//! - [`metrics`]: every result as labelled metrics; [`render`]: every result as text.
//!
//! Workers are prepared (pinned, memory allocated, touched and verified) before one start gate
//! releases them together ([`measure::gate`]); hot loops run only the kernel.
//!
//! ```
//! let counts = membench::scenarios::scale_counts(6);
//! assert_eq!(counts, vec![1, 2, 4, 6]);
//! ```

pub mod bandwidth;
pub mod c2c;
pub mod chart;
pub mod experiments;
pub mod kernels;
pub mod kit;
pub mod latency;
pub mod layout;
pub mod loaded;
pub mod metrics;
pub mod render;
pub mod rng;
pub mod scenarios;
pub mod shared;
pub mod slb;
pub mod slb_rounds;
pub mod slb_shared;
pub mod thread_read;
pub mod timers;
mod together;

/// 4 KiB, fixed (an arm64 kernel's base page may be larger): the page memhammer allocates in,
/// c2c spreads its lines over, shared segments are rounded to, and the four-page walk
/// interleaves, as glibc's large-copy loop does.
pub(crate) const PAGE: usize = 4096;

/// Why a benchmark could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Place(place::PlaceError),
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Kit(#[from] kit::KitError),
    #[error("{0}")]
    Worker(String),
    #[error("stopped by {} before anything was measured", measure::stop::cause())]
    Interrupted,
    #[error("could not allocate {} for {what}: a memory or address-space limit (`ulimit -v`, the cgroup's memory.max) was reached; use a smaller size or raise the limit", topo::units::format_bytes(*.bytes))]
    OutOfMemory { what: &'static str, bytes: u64 },
}

impl From<place::PlaceError> for BenchError {
    /// A stop during set-up (first touch) is the benchmark's [`BenchError::Interrupted`], which
    /// loops over steps take as "keep what the finished steps measured".
    fn from(e: place::PlaceError) -> Self {
        match e {
            place::PlaceError::Interrupted(_) => BenchError::Interrupted,
            e => BenchError::Place(e),
        }
    }
}

impl From<measure::stop::Interrupted> for BenchError {
    fn from(_: measure::stop::Interrupted) -> Self {
        BenchError::Interrupted
    }
}

/// Writes `value` over `bytes` 8 bytes at a time (real data, from the calling thread), looking
/// at the stop flag every 16 MiB so Ctrl-C or SIGTERM during set-up is honoured at once.
pub(crate) fn fill_words(bytes: &mut [u8], value: u64) -> Result<(), measure::stop::Interrupted> {
    for block in bytes.chunks_mut(16 << 20) {
        measure::stop::check("filling the buffer")?;
        for word in block.chunks_exact_mut(8) {
            word.copy_from_slice(&value.to_ne_bytes());
        }
    }
    Ok(())
}

impl BenchError {
    /// Whether the request was wrong (exit code 2) rather than the run failing (exit code 1).
    pub fn is_usage(&self) -> bool {
        match self {
            BenchError::Place(e) => e.is_usage(),
            BenchError::Usage(_) => true,
            BenchError::Kit(e) => e.is_usage(),
            BenchError::Worker(_) | BenchError::Interrupted | BenchError::OutOfMemory { .. } => {
                false
            }
        }
    }
}

impl measure::Usage for BenchError {
    fn is_usage(&self) -> bool {
        BenchError::is_usage(self)
    }
}
