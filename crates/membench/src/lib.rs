//! membench: how fast is memory from here, and from there — and what does locality cost?
//!
//! - [`latency`]: idle load-to-use latency by a prefetch-defeating pointer chase (sizes, sweeps,
//!   node×node matrices); [`loaded`]: latency while other threads load memory.
//! - [`bandwidth`]: read, write, non-temporal, copy and triad kernels ([`kernels`]), per thread
//!   and aggregate, scaling and node×node matrices; [`thread_read`] (seed 001).
//! - [`slb`]: the Silly Little Benchmark and its kit ([`kit`]: create_sem, memhammer, trigger);
//!   [`scenarios`]: the experiments built from it (worker counts, placement policies).
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
pub mod slb_shared;
pub mod thread_read;
pub mod timers;

/// Why a benchmark could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Place(#[from] place::PlaceError),
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Kit(#[from] kit::KitError),
    #[error("{0}")]
    Worker(String),
    #[error("interrupted before anything was measured")]
    Interrupted,
}

impl BenchError {
    /// Whether the request was wrong (exit code 2) rather than the run failing (exit code 1).
    pub fn is_usage(&self) -> bool {
        match self {
            BenchError::Place(e) => e.is_usage(),
            BenchError::Usage(_) => true,
            BenchError::Kit(e) => e.is_usage(),
            BenchError::Worker(_) | BenchError::Interrupted => false,
        }
    }
}
