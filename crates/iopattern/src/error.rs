//! What can go wrong tracing file I/O, each with the fix in its message.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Bpf(#[from] bpfkit::Error),
    #[error("no process with PID {0}")]
    NoProcess(u32),
    #[error("--comm {0:?} is longer than the kernel's 15-byte command names")]
    CommTooLong(String),
    #[error("--comm must not be empty")]
    EmptyComm,
    // The fields are named `reason`, not `source`: the message already says it, and a
    // `source` would be printed again by the error chain.
    #[error("--cgroup {path}: {reason}")]
    Cgroup { path: PathBuf, reason: std::io::Error },
    #[error("--fs {path}: {reason}")]
    Filesystem { path: PathBuf, reason: std::io::Error },
    #[error("reading the mount table: {0}")]
    Mounts(std::io::Error),
    #[error(
        "the per-file table takes a power of two from 1 to {max} slots, not {0}",
        max = crate::tracer::FILE_SLOTS
    )]
    FileSlots(u32),
}

impl Error {
    /// Errors in what the user asked for (exit code 2) rather than in running it.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::NoProcess(_)
                | Error::CommTooLong(_)
                | Error::EmptyComm
                | Error::Cgroup { .. }
                | Error::Filesystem { .. }
                | Error::FileSlots(_)
        )
    }

    /// Wraps a libbpf error, naming missing privileges as such.
    pub(crate) fn bpf(what: &'static str, source: libbpf_rs::Error) -> Self {
        Error::Bpf(bpfkit::Error::bpf(what, source))
    }
}

impl measure::Usage for Error {
    fn is_usage(&self) -> bool {
        Error::is_usage(self)
    }
}

pub type Result<T> = std::result::Result<T, Error>;
