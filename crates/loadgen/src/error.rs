//! The crate's errors: each says what went wrong and what to do about it.

use std::path::PathBuf;

/// Why a load run could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The SQL file has a mistake.
    #[error("SQL file, line {line}: {message}")]
    SqlFile { line: usize, message: String },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// No connection to the server (wrong address, credentials, server down).
    #[error("cannot connect to {target}: {message}")]
    Connect { target: String, message: String },
    /// The built-in workloads need their tables.
    #[error(
        "no sbtest tables in {target}: run `platscope load prepare --server {server} …` first"
    )]
    NotPrepared { target: String, server: &'static str },
    /// A statement could not be prepared or the schema made.
    #[error("{what}: {message}")]
    Sql { what: String, message: String },
    /// The arguments do not make a run.
    #[error(transparent)]
    Usage(#[from] measure::UsageError),
    /// Reading CPU times failed.
    #[error("measuring CPU time: {0}")]
    Cpu(#[from] measure::Error),
    /// A histogram could not be made (never with the crate's fixed bounds).
    #[error("histogram: {0}")]
    Histogram(String),
}

impl Error {
    /// Whether the command line was wrong (exit code 2) rather than the system.
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Usage(_) | Error::SqlFile { .. })
    }
}

impl measure::Usage for Error {
    fn is_usage(&self) -> bool {
        Error::is_usage(self)
    }
}
