//! Memory benchmarks: idle load-to-use latency by pointer chasing, and the Silly Little
//! Benchmark (random 8-byte stores, workers released together); what reading the clock costs
//! and which clock to trust ([`timers`]).

pub mod bandwidth;
pub mod kernels;
pub mod kit;
pub mod latency;
pub mod layout;
pub mod loaded;
pub mod rng;
pub mod slb;
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
