//! allocbench: the allocator bake-off (after the article "MySQL 5.1 Memory Allocator Bake-Off",
//! which ran one database server under several mallocs), done so that its figures can be trusted.
//!
//! One workload runs under several allocators — glibc's malloc, the preloadable libraries Debian
//! ships (jemalloc, tcmalloc, mimalloc, tbbmalloc), any other library, and glibc tunables as
//! pseudo-allocators — interleaved round-robin for `repeat` rounds at each thread count. Every
//! run is **verified**: the allocator's library must be mapped in the measured process
//! (`/proc/PID/maps`) and serve its `malloc`, `free`, `realloc`, `calloc` and `posix_memalign`
//! (resolved in the built-in worker, or in a probe worker for commands and servers), or the run
//! is refused and said so. Per run it measures throughput, CPU
//! per operation (the process's own CPU clock or rusage, and system-wide `/proc/stat`), peak
//! and final RSS, PSS, address-space growth with PROT_NONE reservations set apart, and minor
//! faults; [`bakeoff::BakeOff`] summarizes them as medians with spread and judges each
//! allocator against glibc on its runs with the engine every comparison uses
//! ([`measure::verdict`]).
//!
//! - [`allocator`]: names, libraries, packages, `LD_PRELOAD` / `GLIBC_TUNABLES`.
//! - [`procfs`]: maps, smaps_rollup and status parsers; the verification.
//! - [`workload`]: the built-in multi-threaded allocation workload (run in a child process).
//! - [`run`]: one measured run of the built-in workload, a command, or a database server.
//! - [`bakeoff`]: the round-robin plan, summaries, verdicts and metrics; [`render`]: the tables;
//!   [`chart`]: the report sections (relative throughput, CPU per operation, memory).
//! - [`scratchdb`]'s throwaway servers for `--server` runs ([`server`]).
//! - [`experiments`]: `alloc` and the hidden `alloc-worker` as the product runs them.
//!
//! ```
//! use allocbench::allocator::{parse_glibc, resolve};
//!
//! let tuned = parse_glibc("glibc:arena_max=1").unwrap().unwrap();
//! assert_eq!(tuned.tunables().as_deref(), Some("glibc.malloc.arena_max=1"));
//! // No linker cache given: jemalloc is reported missing with its package, glibc still runs.
//! let r = resolve(&["glibc".into(), "jemalloc".into()], &[], &[]).unwrap();
//! assert_eq!(r.allocators.len(), 1);
//! assert_eq!(r.missing[0].package, "libjemalloc2");
//! ```

pub mod allocator;
pub mod bakeoff;
pub mod chart;
pub mod experiments;
pub mod procfs;
pub mod render;
pub mod run;
pub mod server;
pub mod workload;

pub use bakeoff::{BakeOff, Plan, Workload};

/// What can go wrong; [`Error::is_usage`] marks what the user can fix on the command line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Usage(#[from] measure::UsageError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The built-in workload's child process misbehaved.
    #[error("the allocation worker failed: {0}")]
    Worker(String),
    /// The measured command exited unsuccessfully.
    #[error("`{command}` under {allocator} {status}{tail}")]
    CommandFailed { command: String, allocator: String, status: String, tail: String },
    /// `--metric` matched nothing in the command's output.
    #[error(
        "`{command}` under {allocator} printed nothing matching --metric '{regex}' (its output \
         ends: {tail}); fix the pattern, or give --ops N"
    )]
    NoMetric { command: String, allocator: String, regex: String, tail: String },
    /// The database server or its load generator.
    #[error("{0}")]
    Server(String),
}

impl Error {
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Error::Usage(measure::UsageError::Message(message.into()))
    }

    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.into();
        move |source| Error::Io { what, source }
    }

    /// Whether the command line was wrong (exit status 2).
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Usage(_))
    }
}

impl measure::Usage for Error {
    fn is_usage(&self) -> bool {
        Error::is_usage(self)
    }
}
