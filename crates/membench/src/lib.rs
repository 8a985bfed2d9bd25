//! Memory benchmarks: idle load-to-use latency by pointer chasing, and the Silly Little
//! Benchmark (random 8-byte stores, workers released together).

pub mod clock;
pub mod gate;
pub mod interrupt;
pub mod kernels;
pub mod latency;
pub mod layout;
pub mod rng;
pub mod slb;
pub mod stats;

/// Why a benchmark could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Place(#[from] place::PlaceError),
    #[error("{0}")]
    Usage(String),
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
            BenchError::Worker(_) | BenchError::Interrupted => false,
        }
    }
}
