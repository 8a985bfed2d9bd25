//! measure: what every platscope measurement shares, so each domain crate does not grow its own.
//!
//! - [`summary`]: one definition of a figure's distribution ([`Summary`], [`summary::quantile`]).
//! - [`core_clock`]: the core clock rate, measured without performance counters.
//! - [`stop`]: Ctrl-C and SIGTERM as a request to stop that workers poll; what was measured is kept.
//! - [`gate`]: the start gate that releases prepared workers together.
//! - [`counter`]: the one way kernel counters are subtracted ([`CounterDelta`]).
//! - [`time`]: clock ticks, monotonic and boot time, local time for headers.
//! - [`args`]: intervals, counts and PIDs, rejected with the same words everywhere.
//! - [`procstat`]: the one parser of `/proc/PID/stat`, I/O-free.
//! - [`cpustat`]: the one model and parser of `/proc/stat`'s CPU times, and the whole machine's
//!   busy time measured from them ([`cpustat::MachineReading`]).
//! - [`fsroot`]: where `/proc` and `/sys` are read from (the live system or a captured tree).
//! - [`progress`]: the one progress-bar factory, drawn only when stderr is a terminal.
//! - [`say`](mod@say): the one stderr writer ([`say!`]): a closed stderr never panics.
//! - [`metric`]: typed, labelled metrics ([`Metric`], [`ToMetrics`]) that stores, exporters and
//!   comparisons key on — never formatted text.
//! - [`names`]: the stored metric names read outside the crate that measures them (the
//!   exporter's benchmark figures).
//! - [`verdict`]: `faster` / `slower` / `same` between two sides' replicates (rounds or
//!   runs), with the ratio's interval and Holm's adjustment across a page; `untested` when too
//!   few replicates; `placement differs` when the CPUs sat elsewhere.
//! - [`stats`]: Student's t, Holm's adjustment, the Mann–Whitney rank test.
//! - [`placement`]: where a run's CPUs sat, as a cheap hand-off probe saw it: regimes, a
//!   change during a run, a contradiction with the topology, runs that cannot be compared.
//! - [`usage`]: the one exit-code rule ([`Usage`], [`Classified`]).
//! - [`rng`]: the one pseudo-random generator ([`rng::SplitMix64`]), reproducible from a seed.
//! - [`hist`]: power-of-two histograms in DTrace's layout ([`hist::Log2Hist`]).
//! - [`database`]: which database server ([`database::ServerKind`]).
//! - [`nan`]: figures that were not a number, read back from JSON's `null`.
//! - [`UsageError`]: the one marker for "the command line was wrong" (exit code 2).
//!
//! ```
//! use measure::{summarize, Metric, Unit};
//!
//! let s = summarize(&[90.0, 91.0, 92.0]).unwrap();
//! assert_eq!(s.median, 91.0);
//! let m = Metric::new("mem_latency", Unit::Nanoseconds, vec![90.0, 91.0, 92.0]).label("size", "1GiB");
//! assert_eq!(m.key(), "mem_latency{size=1GiB}");
//! ```

pub mod args;
pub mod core_clock;
pub mod counter;
pub mod cpustat;
pub mod database;
pub mod fsroot;
pub mod gate;
pub mod hist;
pub mod metric;
pub mod names;
pub mod nan;
pub mod placement;
pub mod procstat;
pub mod progress;
pub mod rng;
pub mod say;
pub mod stats;
pub mod stop;
pub mod summary;
pub mod time;
pub mod usage;
pub mod verdict;

use std::path::PathBuf;

pub use counter::{CounterDelta, Step};
pub use fsroot::FsRoot;
pub use gate::StartGate;
pub use metric::{Metric, ToMetrics, Unit, WorkerPlacement};
pub use summary::{summarize, Summary};
pub use usage::{Classified, Usage};

/// A parse failure in one of the kernel's text formats: which line and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// 1-based line number in the text that was parsed (0 when the whole text is at fault).
    pub line: usize,
    pub message: String,
}

impl ParseError {
    pub fn new(line: usize, message: impl Into<String>) -> Self {
        Self { line, message: message.into() }
    }
}

/// A request the user can fix: bad flags or operands. The binary exits with status 2 for these.
///
/// This is the one usage marker of the workspace: a domain crate's own error type carries it
/// (or answers `is_usage`) rather than defining another.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    /// Anything else the user can fix, said in words that name the fix.
    #[error("{0}")]
    Message(String),
    #[error("unknown interface '{name}' (this network namespace has: {known})")]
    UnknownInterface { name: String, known: String },
    #[error("malformed -S '{spec}': {reason} (expected IF:SPEED[fd|hd], SPEED in Mbit/s, e.g. eth0:1000fd)")]
    BadSpeed { spec: String, reason: String },
    #[error("malformed interval '{text}': {reason}")]
    BadInterval { text: String, reason: String },
    /// `reason` is a whole sentence about `text` ("\"-5\" is negative; give …").
    #[error("{reason}")]
    BadCount { text: String, reason: String },
    #[error("malformed process ID '{text}': {reason}")]
    BadPid { text: String, reason: String },
    #[error("no such process: {pid}")]
    NoSuchProcess { pid: u32 },
    #[error("{tid} is a thread of process {tgid}, not a process (give {tgid})")]
    NotAProcess { tid: u32, tgid: u32 },
}

/// Reading the system's `/proc` and `/sys` files: what failed, and where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {source}")]
    Parse { path: PathBuf, source: ParseError },
    #[error(transparent)]
    Usage(#[from] UsageError),
}

impl Error {
    /// True when the command line was at fault (exit status 2), false when the system was.
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Usage(_))
    }
}
